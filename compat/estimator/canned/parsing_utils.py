"""Parse specs for reading training tf.Examples: the feature columns' spec plus the label (and the weight).

`tf.io.parse_example(serialized, classifier_parse_example_spec(columns, 'label'))`
gives the features and, under its key, the label (`[batch_size, 1]` for a
classifier, `[batch_size, label_dimension]` for a regressor); the weight
column, a name or a `tf.feature_column.numeric_column`, is parsed as that
column parses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from compat.core import tf_internals


def _weight_spec(weight_column: Any) -> tuple[str, dict]:
    """The weight column's key and parse spec (a name stands for a scalar float numeric column)."""
    if isinstance(weight_column, str):
        weight_column = tf.feature_column.numeric_column(weight_column)
    numeric_types = (type(tf.feature_column.numeric_column("w")), type(tf.compat.v1.feature_column.numeric_column("w")))
    if not isinstance(weight_column, numeric_types):
        raise ValueError(
            "weight_column should be an instance of tf.feature_column.numeric_column. "
            f"Given type: {type(weight_column)} value: {weight_column}"
        )
    return weight_column.key, dict(weight_column.parse_example_spec)


def _columns_spec(feature_columns: Sequence) -> dict:
    """The columns' parse spec: TF2's for TF2 columns (sequence columns included), TF1's for TF1 columns."""
    feature_columns = list(feature_columns)
    if tf_internals.is_feature_column_v2(feature_columns):
        return dict(tf.feature_column.make_parse_example_spec(feature_columns))
    return dict(tf.compat.v1.feature_column.make_parse_example_spec(feature_columns))


def _with_label_and_weight(spec: dict, label_key: str, label_spec: tf.io.FixedLenFeature, weight_column: Any) -> dict:
    if label_key in spec:
        raise ValueError(f"label should not be used as feature. label_key: {label_key}, features: {spec.keys()}")
    spec[label_key] = label_spec
    if weight_column is None:
        return spec
    weight_key, weight_spec = _weight_spec(weight_column)
    if weight_key in spec:
        raise ValueError(
            f"weight_column should not be used as feature. weight_column: {weight_key}, features: {spec.keys()}"
        )
    spec.update(weight_spec)
    return spec


def classifier_parse_example_spec(
    feature_columns: Sequence,
    label_key: str,
    label_dtype: tf.DType = tf.int64,
    label_default: Any = None,
    weight_column: Any = None,
) -> dict:
    """tf.estimator.classifier_parse_example_spec: the columns' spec, the label `FixedLenFeature((1,),
    label_dtype, label_default)` (tf.string with a label vocabulary) and the weight column's."""
    return _with_label_and_weight(
        _columns_spec(feature_columns),
        label_key,
        tf.io.FixedLenFeature((1,), label_dtype, label_default),
        weight_column,
    )


def regressor_parse_example_spec(
    feature_columns: Sequence,
    label_key: str,
    label_dtype: tf.DType = tf.float32,
    label_default: Any = None,
    label_dimension: int = 1,
    weight_column: Any = None,
) -> dict:
    """tf.estimator.regressor_parse_example_spec: the columns' spec, the label
    `FixedLenFeature((label_dimension,), label_dtype, label_default)` and the weight column's."""
    return _with_label_and_weight(
        _columns_spec(feature_columns),
        label_key,
        tf.io.FixedLenFeature((label_dimension,), label_dtype, label_default),
        weight_column,
    )


__all__ = ["classifier_parse_example_spec", "regressor_parse_example_spec"]
