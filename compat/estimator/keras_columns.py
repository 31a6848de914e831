"""Feature columns as Keras 3 layers, for `to_keras`: each column's part of a model's input, in the order
of the rows of the weights TensorFlow trained for it.

A column becomes a Keras tensor plus `rows`: for each of its dimensions, the row of TF's weights for that
column (the first hidden layer's kernel block, a linear model's weights, an embedding table) that it
stands for, or None for a dimension TF never fed (a zero row). Keras' lookups number out-of-vocabulary
ids first and the vocabulary after; TF numbered the vocabulary first: the rows carry the mapping, so the
layers stay Keras' own and the weights are reordered once, when the model is built.

What converts: numeric columns (without `normalizer_fn`); bucketized columns (Discretization);
single-valued categorical columns by vocabulary list or file (StringLookup or IntegerLookup, unknown
values hashed or dropped as TF did), identity and hash bucket columns (Hashing); crossed columns
(HashedCrossing, TF's own hash) over raw features (strings, or numbers cast to int64 as TF did), bucketized
columns of one value, identity and vocabulary columns (their ids renumbered to TF's before the cross), in
any key order, nested crosses flattened. Categorical and crossed columns go into a linear model directly
and into a DNN as indicator or embedding columns. Not: weighted, sequence and shared-embedding columns,
multi-valued categorical features, a crossed column with its own `hash_key`, an integer vocabulary with
more than one out-of-vocabulary bucket, an identity column with a `default_value`, an embedding with
`max_norm`.

A cross hashes its keys in TF's order: the columns' ids first (TF made them sparse tensors), then the raw
features (dense, as an input_fn gives them and as `Estimator.predict` hashed them). A model trained on raw
features given as sparse tensors (parsed from tf.Examples as VarLenFeature) crossed them in the keys' order
instead: its twin's crossed buckets differ from what it learned; convert it through its export.

A raw feature only a cross reads has no column to say its dtype: its Input is a string unless
`feature_dtypes` (to_keras' argument) names another, e.g. {"hour": "int64"}.

One value per example: the twin reads each categorical feature as one value, and takes an empty string
or -1 as a value where TF dropped it as missing; a model trained on such data is converted as if it
had none (to_keras cannot see the data).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from compat.estimator.keras_twin import CrossedHashing

_VOCABULARY = ("VocabularyListCategoricalColumn", "VocabularyFileCategoricalColumn")
_CATEGORICAL = (*_VOCABULARY, "IdentityCategoricalColumn", "HashedCategoricalColumn", "CrossedColumn")
# The dtype `inputs_of` gives a raw feature a cross reads: the feature's other columns', or `feature_dtypes`'.
_CROSSED_RAW = "crossed raw feature"


def kind(column: Any) -> str:
    """The column's class name, without the leading '_' of TF 1.x's classes: what decides its Keras layers."""
    return type(column).__name__.lstrip("_")


def _leaf_keys(column: Any) -> list:
    """A crossed column's keys with nested crossed columns flattened, as TF crossed them."""
    keys: list = []
    for key in column.keys:
        keys += _leaf_keys(key) if not isinstance(key, str) and kind(key) == "CrossedColumn" else [key]
    return keys


def _crossed_key_converts(key: Any) -> bool:
    """Whether a crossed column's key gives HashedCrossing the values TF's cross hashed: a raw feature, or
    ids Keras computes equally or renumbers to TF's (identity, vocabulary; one bucket per example). TF
    refuses hash buckets in a cross."""
    if isinstance(key, str):
        return True
    if kind(key) == "BucketizedColumn":
        return int(np.prod(key.source_column.shape)) == 1 and converts(key.source_column, linear=True)
    return kind(key) in ("IdentityCategoricalColumn", *_VOCABULARY) and _keras_ids_match(key)


def _keras_ids_match(column: Any) -> bool:
    """Whether Keras' lookups give a categorical column TF's ids: TF hashed an integer vocabulary's unknown
    values into several buckets by FarmHash (IntegerLookup by a modulo), mapped an identity column's out of
    range values to its default (Keras' encoders drop them), and read a vocabulary file in its format."""
    name = kind(column)
    if name in _VOCABULARY and column.dtype.name != "string" and column.num_oov_buckets > 1:
        return False
    if name == "VocabularyFileCategoricalColumn" and getattr(column, "file_format", None) not in (None, "text"):
        return False
    return not (name == "IdentityCategoricalColumn" and column.default_value is not None)


def _crossed_converts(column: Any) -> bool:
    """Whether every key of a crossed column (hashed with TF's default key) converts."""
    return column.hash_key is None and all(_crossed_key_converts(key) for key in _leaf_keys(column))


def converts(column: Any, linear: bool) -> bool:
    """Whether `column` has a native Keras form here, in a linear model (`linear`) or a DNN."""
    name = kind(column)
    if name == "NumericColumn":
        return column.normalizer_fn is None
    if name == "BucketizedColumn":
        return converts(column.source_column, linear)
    if name == "CrossedColumn":
        return linear and _crossed_converts(column)
    if name in _CATEGORICAL:
        return linear and _keras_ids_match(column)
    if name in ("IndicatorColumn", "EmbeddingColumn"):
        inner = column.categorical_column
        if name == "EmbeddingColumn" and (column.ckpt_to_load_from is not None or column.max_norm is not None):
            return False  # TF clipped the looked-up vectors to max_norm; Keras' Embedding does not
        return not linear and kind(inner) in _CATEGORICAL and converts(inner, linear=True)
    return False


def inputs_of(column: Any) -> dict[str, tuple[tuple[int, ...], str]]:
    """The Keras Inputs a column reads: {feature key: (shape, dtype)}. Categorical features hold one value
    per example; a crossed column's raw keys have the dtype _CROSSED_RAW (see `input_specs`)."""
    name = kind(column)
    if name == "NumericColumn":
        return {column.key: (tuple(column.shape), column.dtype.name)}
    if name == "BucketizedColumn":
        return inputs_of(column.source_column)
    if name in ("IndicatorColumn", "EmbeddingColumn"):
        return inputs_of(column.categorical_column)
    if name == "CrossedColumn":
        specs: dict[str, tuple[tuple[int, ...], str]] = {}
        for key in _leaf_keys(column):
            specs.update({key: ((1,), _CROSSED_RAW)} if isinstance(key, str) else inputs_of(key))
        return specs
    dtype = "int64" if name == "IdentityCategoricalColumn" else column.dtype.name
    return {column.key: ((1,), dtype)}


def input_specs(columns: Any, feature_dtypes: Mapping[str, str] | None = None) -> dict[str, set]:
    """Every specification the columns give each feature key: {key: {(shape, dtype), ...}}, one when the
    key can be one Keras Input. A raw feature a cross reads takes its other columns' specification when
    they read one value per example, else `feature_dtypes[key]` (default a string)."""
    specs: dict[str, set] = {}
    for column in columns:
        for key, spec in inputs_of(column).items():
            specs.setdefault(key, set()).add(spec)
    for key, seen in specs.items():
        if ((1,), _CROSSED_RAW) not in seen:
            continue
        seen.discard(((1,), _CROSSED_RAW))
        if not seen:
            seen.add(((1,), (feature_dtypes or {}).get(key, "string")))
        elif {shape for shape, _ in seen} != {(1,)}:
            seen.add(((1,), _CROSSED_RAW))  # a cross of a multi-valued feature: refused as two kinds
    return specs


def tf_width(column: Any) -> int:
    """How many rows of the first DNN kernel a column's output fills in TF's DenseFeatures."""
    name = kind(column)
    if name == "NumericColumn":
        return int(np.prod(column.shape))
    if name == "BucketizedColumn":
        return int(np.prod(column.source_column.shape)) * (len(column.boundaries) + 1)
    if name == "EmbeddingColumn":
        return int(column.dimension)
    return int(column.categorical_column.num_buckets)  # an indicator column


@dataclasses.dataclass
class Part:
    """A column's contribution to a model's input: a tensor `[batch, len(rows)]`, and for each of its
    dimensions the row of the column's TF weights it stands for (None: a zero row)."""

    tensor: Any
    rows: list[int | None]


def _vocabulary(column: Any) -> list:
    """A vocabulary column's vocabulary, in TF's id order (a file's first `vocabulary_size` lines)."""
    if kind(column) == "VocabularyListCategoricalColumn":
        return list(column.vocabulary_list)
    with tf.io.gfile.GFile(column.vocabulary_file) as file:
        # TF's text reader splits on "\n" only (str.splitlines would also split on "\x0b", "\x1c", ...)
        lines = [line.removesuffix("\r") for line in file.read().split("\n")][: column.vocabulary_size]
    return lines if column.dtype.name == "string" else [int(line) for line in lines]


def _bucket_ids(column: Any, inputs: dict, name: str) -> Any:
    """A bucketized column's ids `[batch, width]`: each value's bucket, offset by its position times the
    number of buckets (TF's numbering of a multi-valued source's buckets)."""
    values = keras.layers.Flatten()(keras.ops.cast(inputs[column.source_column.key], "float32"))
    ids = keras.layers.Discretization(bin_boundaries=list(column.boundaries), name=f"{name}_buckets")(values)
    width = int(values.shape[-1])
    return keras.ops.add(ids, keras.ops.arange(width, dtype=ids.dtype) * (len(column.boundaries) + 1))


def _ids(column: Any, inputs: dict, name: str) -> tuple[Any, list[int | None]]:
    """A categorical column's ids as Keras numbers them `[batch, 1]`, and for each Keras id the TF id
    (`name`: the layers' name, the reading column's, which may share its categorical column)."""
    feature = inputs.get(getattr(column, "key", None))
    if kind(column) in _VOCABULARY:
        vocabulary = _vocabulary(column)
        hashed = column.num_oov_buckets
        oov = max(hashed, 1)  # Keras needs at least one out-of-vocabulary index
        lookup_class = keras.layers.StringLookup if column.dtype.name == "string" else keras.layers.IntegerLookup
        lookup = lookup_class(vocabulary=vocabulary, num_oov_indices=oov, name=f"{name}_lookup")
        default = column.default_value if column.default_value is not None and column.default_value >= 0 else None
        tf_of_oov: list[int | None] = [len(vocabulary) + index for index in range(hashed)] if hashed else [default]
        return lookup(feature), tf_of_oov + list(range(len(vocabulary)))
    if kind(column) == "HashedCategoricalColumn":
        hashing = keras.layers.Hashing(num_bins=column.hash_bucket_size, name=f"{name}_hashing")
        return hashing(feature), list(range(column.hash_bucket_size))
    if kind(column) == "CrossedColumn":
        layer = CrossedHashing(num_bins=column.hash_bucket_size, name=f"{name}_crossing")
        return layer(_crossed_values(column, inputs, name)), list(range(column.hash_bucket_size))
    # identity: the ids are the values
    return keras.ops.cast(feature, "int64"), list(range(column.num_buckets))


def _crossed_values(column: Any, inputs: dict, name: str) -> list:
    """What TF's cross hashed, in its order: the key columns' ids as TF numbered them (sparse tensors, first),
    then the raw features (dense, after), numbers cast to int64 as TF did."""
    ids, raw = [], []
    for index, key in enumerate(_leaf_keys(column)):
        if isinstance(key, str):
            value = inputs[key]
            raw.append(value if value.dtype == "string" else keras.ops.cast(value, "int64"))
        elif kind(key) == "BucketizedColumn":
            ids.append(_bucket_ids(key, inputs, f"{name}_{index}"))
        elif kind(key) == "IdentityCategoricalColumn":
            ids.append(_ids(key, inputs, f"{name}_{index}")[0])  # the values are TF's ids
        else:  # a vocabulary column
            keras_ids, tf_of_keras = _ids(key, inputs, f"{name}_{index}")
            # TF's id for each Keras id (-1 where TF's lookup gave its default: crossed as a value too)
            tf_ids = np.array([-1 if row is None else row for row in tf_of_keras], "int64")
            ids.append(keras.ops.take(tf_ids, keras.ops.cast(keras_ids, "int32")))
    return ids + raw


def part(column: Any, inputs: dict, embedding_table: Any = None, prefix: str = "", cut: dict | None = None) -> Part:
    """The column's part of the input. `embedding_table`: an embedding column's TF table `[buckets, dim]`;
    `prefix`: before its layers' names (a column read by both parts of a wide and deep model); `cut`: where
    the tensors between preprocessing and the network are recorded (the raw numbers a numeric column reads,
    the ids of the others, by name), for `to_keras(..., portable=True)`."""
    name, label = kind(column), prefix + column.name
    cut = {} if cut is None else cut
    if name == "NumericColumn":
        cut[column.key] = inputs[column.key]
        values = keras.layers.Flatten()(keras.ops.cast(inputs[column.key], "float32"))
        return Part(values, list(range(int(np.prod(column.shape)))))
    if name == "BucketizedColumn":
        ids = cut[f"{label}_ids"] = _bucket_ids(column, inputs, label)
        size = tf_width(column)
        multi_hot = keras.layers.CategoryEncoding(num_tokens=size, output_mode="multi_hot", name=f"{label}_ids")
        return Part(multi_hot(ids), list(range(size)))
    categorical = column.categorical_column if name in ("IndicatorColumn", "EmbeddingColumn") else column
    ids, tf_of_keras = _ids(categorical, inputs, label)
    cut[f"{label}_ids"] = ids
    if name == "EmbeddingColumn":
        table = np.asarray(embedding_table)
        rows = np.stack(
            [table[row] if row is not None else np.zeros(table.shape[1], table.dtype) for row in tf_of_keras]
        )
        layer = keras.layers.Embedding(len(tf_of_keras), table.shape[1], name=f"{label}_table")
        vectors = keras.layers.Flatten()(layer(ids))
        layer.set_weights([rows])
        return Part(vectors, list(range(table.shape[1])))
    one_hot = keras.layers.CategoryEncoding(num_tokens=len(tf_of_keras), output_mode="one_hot", name=f"{label}_one_hot")
    return Part(one_hot(ids), tf_of_keras)


def weights_for(rows: list[int | None], weights: np.ndarray) -> np.ndarray:
    """The rows of TF's `weights` a part's dimensions stand for (None: a zero row)."""
    zero = np.zeros(weights.shape[1:], weights.dtype)
    return np.stack([weights[row] if row is not None else zero for row in rows])
