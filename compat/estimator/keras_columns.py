"""Feature columns as Keras 3 layers, for `to_keras`: each column's part of a model's input, in the order
of the rows of the weights TensorFlow trained for it.

A column becomes a Keras tensor plus `rows`: for each of its dimensions, the row of TF's weights for that
column (the first hidden layer's kernel block, a linear model's weights, an embedding table) that it
stands for, or None for a dimension TF never fed (a zero row). Keras' lookups number out-of-vocabulary
ids first and the vocabulary after; TF numbered the vocabulary first: the rows carry the mapping, so the
layers stay Keras' own and the weights are reordered once, when the model is built.

What converts: numeric columns (without `normalizer_fn`), bucketized columns (Discretization), and
single-valued categorical columns by vocabulary list (StringLookup or IntegerLookup; out-of-vocabulary
buckets hashed as TF hashed them), identity and hash bucket (Hashing) columns, as indicator or
embedding columns in a DNN and directly in a linear model. Not: vocabulary files, crossed, weighted and
sequence columns, shared embeddings, multi-valued categorical features.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import keras
import numpy as np

_CATEGORICAL = ("VocabularyListCategoricalColumn", "IdentityCategoricalColumn", "HashedCategoricalColumn")


def kind(column: Any) -> str:
    """The column's class name: what decides its Keras layers."""
    return type(column).__name__


def source(column: Any) -> Any:
    """The column that names the feature a column reads (a numeric or categorical column)."""
    if kind(column) == "BucketizedColumn":
        return column.source_column
    if kind(column) in ("IndicatorColumn", "EmbeddingColumn"):
        return column.categorical_column
    return column


def converts(column: Any, linear: bool) -> bool:
    """Whether `column` has a native Keras form here, in a linear model (`linear`) or a DNN."""
    name = kind(column)
    if name == "NumericColumn":
        return column.normalizer_fn is None
    if name == "BucketizedColumn":
        return linear and converts(column.source_column, linear)
    if name in _CATEGORICAL:
        return linear
    if name == "IndicatorColumn":
        return not linear and kind(column.categorical_column) in _CATEGORICAL
    if name == "EmbeddingColumn":
        return not linear and kind(column.categorical_column) in _CATEGORICAL and column.ckpt_to_load_from is None
    return False


def input_spec(column: Any) -> tuple[tuple[int, ...], str]:
    """The Keras Input (shape, dtype) of the feature a column reads."""
    read = source(column)
    if kind(read) == "NumericColumn":
        return tuple(read.shape), read.dtype.name
    dtype = "int64" if kind(read) == "IdentityCategoricalColumn" else read.dtype.name
    return (1,), dtype  # one category per example


def tf_width(column: Any) -> int:
    """How many rows of the first DNN kernel a column's output fills in TF's DenseFeatures."""
    name = kind(column)
    if name == "NumericColumn":
        return int(np.prod(column.shape))
    if name == "EmbeddingColumn":
        return int(column.dimension)
    return int(column.categorical_column.num_buckets)  # an indicator column


@dataclasses.dataclass
class Part:
    """A column's contribution to a model's input: a tensor `[batch, len(rows)]`, and for each of its
    dimensions the row of the column's TF weights it stands for (None: a zero row)."""

    tensor: Any
    rows: list[int | None]


def _ids(column: Any, feature: Any, name: str) -> tuple[Any, list[int | None]]:
    """A categorical column's ids as Keras numbers them `[batch, 1]`, and for each Keras id the TF id
    (`name`: the layers' name, the reading column's, which may share its categorical column)."""
    if kind(column) == "VocabularyListCategoricalColumn":
        vocabulary = list(column.vocabulary_list)
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
    # identity: the ids are the values
    return keras.ops.cast(feature, "int64"), list(range(column.num_buckets))


def _one_hot(ids: Any, size: int, name: str) -> Any:
    return keras.layers.CategoryEncoding(num_tokens=size, output_mode="one_hot", name=f"{name}_one_hot")(ids)


def part(column: Any, inputs: dict, embedding_table: Any = None) -> Part:
    """The column's part of the input. `embedding_table`: an embedding column's TF table `[buckets, dim]`."""
    feature = inputs[source(column).key]
    name = kind(column)
    if name == "NumericColumn":
        values = keras.layers.Flatten()(keras.ops.cast(feature, "float32"))
        return Part(values, list(range(int(np.prod(column.shape)))))
    if name == "BucketizedColumn":
        values = keras.layers.Flatten()(keras.ops.cast(feature, "float32"))
        buckets = len(column.boundaries) + 1
        width = int(values.shape[-1])
        ids = keras.layers.Discretization(bin_boundaries=list(column.boundaries), name=f"{column.name}_buckets")(values)
        ids = keras.ops.add(ids, keras.ops.arange(width, dtype=ids.dtype) * buckets)
        multi_hot = keras.layers.CategoryEncoding(
            num_tokens=width * buckets, output_mode="multi_hot", name=f"{column.name}_ids"
        )(ids)
        return Part(multi_hot, list(range(width * buckets)))
    categorical = column.categorical_column if name in ("IndicatorColumn", "EmbeddingColumn") else column
    ids, tf_of_keras = _ids(categorical, feature, column.name)
    if name == "EmbeddingColumn":
        table = np.asarray(embedding_table)
        rows = np.stack(
            [table[row] if row is not None else np.zeros(table.shape[1], table.dtype) for row in tf_of_keras]
        )
        layer = keras.layers.Embedding(len(tf_of_keras), table.shape[1], name=f"{column.name}_table")
        vectors = keras.layers.Flatten()(layer(ids))
        layer.set_weights([rows])
        return Part(vectors, list(range(table.shape[1])))
    return Part(_one_hot(ids, len(tf_of_keras), column.name), tf_of_keras)


def weights_for(rows: list[int | None], weights: np.ndarray, offset: int = 0) -> np.ndarray:
    """The rows of TF's `weights` a part's dimensions stand for (`offset`: where its block starts)."""
    zero = np.zeros(weights.shape[1:], weights.dtype)
    return np.stack([weights[offset + row] if row is not None else zero for row in rows])
