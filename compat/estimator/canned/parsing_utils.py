"""Parse specs for training from tf.Examples: the feature columns' spec plus the label (and weight)."""

from __future__ import annotations

from typing import Any, Sequence

import tensorflow as tf


def _with_label(feature_columns: Sequence, label_key: str, label_spec: Any, weight_column: Any) -> dict:
    spec = dict(tf.feature_column.make_parse_example_spec(list(feature_columns)))
    if label_key in spec:
        raise ValueError(f"label should not be used as feature: '{label_key}' is also a feature column")
    spec[label_key] = label_spec
    if weight_column is not None:
        key = weight_column if isinstance(weight_column, str) else weight_column.key
        if key not in spec:
            spec[key] = tf.io.FixedLenFeature((1,), tf.float32)
    return spec


def classifier_parse_example_spec(feature_columns: Sequence, label_key: str, label_dtype: tf.DType = tf.int64,
                                  label_default: Any = None, weight_column: Any = None) -> dict:
    """tf.estimator.classifier_parse_example_spec."""
    return _with_label(feature_columns, label_key, tf.io.FixedLenFeature((1,), label_dtype, label_default),
                       weight_column)


def regressor_parse_example_spec(feature_columns: Sequence, label_key: str, label_dtype: tf.DType = tf.float32,
                                 label_default: Any = None, label_dimension: int = 1,
                                 weight_column: Any = None) -> dict:
    """tf.estimator.regressor_parse_example_spec."""
    return _with_label(feature_columns, label_key,
                       tf.io.FixedLenFeature((label_dimension,), label_dtype, label_default), weight_column)
