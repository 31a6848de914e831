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
(HashedCrossing, TF's own hash) over raw string features, bucketized columns of one value and identity
columns. Categorical and crossed columns go into a linear model directly and into a DNN as
indicator or embedding columns. Not: weighted, sequence and shared-embedding columns, multi-valued
categorical features, a crossed column over a vocabulary column (its ids are numbered differently in
Keras), with its own `hash_key` or with a raw feature before a column among its keys (TF crossed those in
one order for dense raw features and in another for sparse ones), an integer vocabulary with more than
one out-of-vocabulary bucket, an identity column with a `default_value`, an embedding with `max_norm`.

One value per example: the twin reads each categorical feature as one value, and takes an empty string
or -1 as a value where TF dropped it as missing; a model trained on such data is converted as if it
had none (to_keras cannot see the data).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import keras
import numpy as np
import tensorflow as tf

_VOCABULARY = ("VocabularyListCategoricalColumn", "VocabularyFileCategoricalColumn")
_CATEGORICAL = (*_VOCABULARY, "IdentityCategoricalColumn", "HashedCategoricalColumn", "CrossedColumn")


def kind(column: Any) -> str:
    """The column's class name, without the leading '_' of TF 1.x's classes: what decides its Keras layers."""
    return type(column).__name__.lstrip("_")


def _crossed_key_converts(key: Any) -> bool:
    """Whether a crossed column's key feeds HashedCrossing the values TF's cross hashed: a raw feature, or
    ids Keras computes equally (identity, one bucket per example). TF refuses hash buckets in a cross."""
    if isinstance(key, str):
        return True
    if kind(key) == "BucketizedColumn":
        return int(np.prod(key.source_column.shape)) == 1 and converts(key.source_column, linear=True)
    return kind(key) == "IdentityCategoricalColumn" and _keras_ids_match(key)


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
    """A crossed column's keys feed HashedCrossing TF's values in TF's order: TF crossed the columns' ids
    (sparse) before raw features given dense, but in the keys' order where raw features came sparse (a
    parsing serving export); the two agree when no raw key comes before a column key."""
    raw = [isinstance(key, str) for key in column.keys]
    ordered = raw == sorted(raw)  # the columns first, then the raw features
    return column.hash_key is None and ordered and all(_crossed_key_converts(key) for key in column.keys)


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
    per example; a crossed column's raw keys are string features."""
    name = kind(column)
    if name == "NumericColumn":
        return {column.key: (tuple(column.shape), column.dtype.name)}
    if name == "BucketizedColumn":
        return inputs_of(column.source_column)
    if name in ("IndicatorColumn", "EmbeddingColumn"):
        return inputs_of(column.categorical_column)
    if name == "CrossedColumn":
        specs: dict[str, tuple[tuple[int, ...], str]] = {}
        for key in column.keys:
            specs.update({key: ((1,), "string")} if isinstance(key, str) else inputs_of(key))
        return specs
    dtype = "int64" if name == "IdentityCategoricalColumn" else column.dtype.name
    return {column.key: ((1,), dtype)}


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
        # in the keys' order, which `_crossed_converts` made TF's order (the columns' ids, then raw features)
        crossed = []
        for index, key in enumerate(column.keys):
            if isinstance(key, str):
                crossed.append(inputs[key])
            elif kind(key) == "BucketizedColumn":
                crossed.append(_bucket_ids(key, inputs, f"{name}_{index}"))
            else:
                crossed.append(_ids(key, inputs, f"{name}_{index}")[0])
        layer = keras.layers.HashedCrossing(num_bins=column.hash_bucket_size, name=f"{name}_crossing")
        return layer(crossed), list(range(column.hash_bucket_size))
    # identity: the ids are the values
    return keras.ops.cast(feature, "int64"), list(range(column.num_buckets))


def part(column: Any, inputs: dict, embedding_table: Any = None, prefix: str = "") -> Part:
    """The column's part of the input. `embedding_table`: an embedding column's TF table `[buckets, dim]`;
    `prefix`: before its layers' names (a column read by both parts of a wide and deep model)."""
    name, label = kind(column), prefix + column.name
    if name == "NumericColumn":
        values = keras.layers.Flatten()(keras.ops.cast(inputs[column.key], "float32"))
        return Part(values, list(range(int(np.prod(column.shape)))))
    if name == "BucketizedColumn":
        ids = _bucket_ids(column, inputs, label)
        size = tf_width(column)
        multi_hot = keras.layers.CategoryEncoding(num_tokens=size, output_mode="multi_hot", name=f"{label}_ids")
        return Part(multi_hot(ids), list(range(size)))
    categorical = column.categorical_column if name in ("IndicatorColumn", "EmbeddingColumn") else column
    ids, tf_of_keras = _ids(categorical, inputs, label)
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
