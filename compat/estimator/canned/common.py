"""What the canned estimators share: the classification head they pick, their argument checks and summaries."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tensorflow as tf

from compat.core import tf_internals
from compat.estimator.canned import optimizers
from compat.estimator.head import BinaryClassHead, MultiClassHead
from compat.estimator.head.base_head import Reduction

SUM_OVER_BATCH_SIZE = Reduction.SUM_OVER_BATCH_SIZE

_V1_COLUMNS_MESSAGE = (
    "Received a feature column from TensorFlow v1, but this is a TensorFlow v2 Estimator. Please either use v2 "
    "feature columns (accessible via tf.feature_column.* in TF 2.x) with this Estimator, or switch to a v1 "
    "Estimator for use with v1 feature columns (accessible via tf.compat.v1.estimator.* and "
    "tf.compat.v1.feature_column.*, respectively."
)


def classifier_head(
    n_classes: int, weight_column: Any, label_vocabulary: Sequence[str] | None, loss_reduction: str
) -> Any:
    """The head of a canned classifier: sigmoid for 2 classes, softmax for more (MultiClassHead refuses fewer)."""
    if n_classes == 2:
        return BinaryClassHead(
            weight_column=weight_column, label_vocabulary=label_vocabulary, loss_reduction=loss_reduction
        )
    return MultiClassHead(
        n_classes, weight_column=weight_column, label_vocabulary=label_vocabulary, loss_reduction=loss_reduction
    )


@dataclasses.dataclass(frozen=True)
class Api:
    """Which of a family's two class sets a canned class is: TF2's or the TF 1.x twins (tf.compat.v1.estimator),
    whose model_fns build TF 1.x's variables and take tf.compat.v1.train optimizers.

    Attributes:
      v1: whether it is the TF 1.x twins'.
    """

    v1: bool

    def checked_optimizer(self, optimizer: Any) -> Any:
        """An `optimizer` argument as a constructor keeps it: as given, checked where the model_fn trains with it,
        as TF 2.15 checked it (a class made with one that cannot train still predicts and evaluates). A Keras
        optimizer object of a TF2 class is converted to its Keras 2 twin now, while its settings can be read
        (eagerly); one without a twin is refused now."""
        return optimizer if self.v1 else optimizers.converted_while_eager(optimizer)


TF2 = Api(False)
TF1 = Api(True)


def estimator_arguments(
    model_fn_for: Callable[..., Callable], api: Api, head: Any, arguments: Mapping[str, Any]
) -> dict:
    """`Estimator.__init__`'s arguments for a canned class, from its constructor's `locals()`: the model_fn that
    its family's `model_fn_for(api, head, ...)` makes of the constructor arguments it names, and the folder,
    config and warm start (those the class takes: TF 2.15's Baseline classes took no warm start)."""
    named = list(inspect.signature(model_fn_for).parameters)[2:]
    model_fn = model_fn_for(api, head, **{name: arguments[name] for name in named if name in arguments})
    passed = {name: arguments[name] for name in ("model_dir", "config", "warm_start_from") if name in arguments}
    return {"model_fn": model_fn, **passed}


def model_fn_calling(family_model_fn: Callable, head: Any, *args: Any, **kwargs: Any) -> Callable:
    """A model_fn of TF 2.15's signature (features, labels, mode, config) that builds a canned family's model:
    `family_model_fn(features, labels, mode, head, *args, config=config, **kwargs)`."""

    def model_fn(features, labels, mode, config):
        return family_model_fn(features, labels, mode, head, *args, config=config, **kwargs)

    return model_fn


def check_features(features: Any) -> None:
    """The canned models read their inputs by column key: features must be a dict."""
    if not isinstance(features, dict):
        raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: {type(features)}")


def check_v2_columns(feature_columns: Sequence) -> None:
    """The TF2 estimators take TF2 feature columns (tf.feature_column.*) only, as TF 2.15's did."""
    if not tf_internals.is_feature_column_v2(feature_columns):
        raise ValueError(_V1_COLUMNS_MESSAGE)


def add_layer_summary(value: tf.Tensor, tag: str) -> None:
    """A layer's output as TF 2.15 summarised it: `<tag>/fraction_of_zero_values` and `<tag>/activation`."""
    tf.compat.v1.summary.scalar(f"{tag}/fraction_of_zero_values", _zero_fraction(value))
    tf.compat.v1.summary.histogram(f"{tag}/activation", value)


def _zero_fraction(value: tf.Tensor) -> tf.Tensor:
    """`tf.math.zero_fraction(value)` without its `tf.cond`: the cond's two branches count in int32 and int64,
    and a session's type inference printed a 27-line C++ "Type inference failed" dump for it at every
    canned DNN program's start. Counted in int64 (the larger branch), the value is the same."""
    with tf.name_scope("zero_fraction"):
        size = tf.size(value, out_type=tf.int64)
        zeros = size - tf.math.count_nonzero(value, dtype=tf.int64)
        return tf.cast(zeros, tf.float32) / tf.cast(size, tf.float32)


def start_counting_with_global_step(optimizer: Any) -> None:
    """The optimizer's step counter becomes the global step, so that each update advances it (hooks, checkpoints
    and `max_steps` count it): TF 2.15's canned estimators did so for one optimizer per graph."""
    optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()


# -- the TF 1.x (v1) canned estimators ----------------------------------------------------------------------------

# TF 1.x's input layers were cut in slices of at least 64 MB, one per parameter server at most
_INPUT_LAYER_MIN_SLICE_SIZE = 64 << 20


def v1_model_partitioner(config: Any) -> Any:
    """TF 1.x's partitioner of a canned model's variables: one slice per parameter server (one without any), so
    that a variable `dnn/logits/kernel` is the partitioned variable of `dnn/logits/kernel/part_0`, ... and its
    checkpoint key is the whole's name."""
    return tf.compat.v1.min_max_variable_partitioner(max_partitions=config.num_ps_replicas if config else 0)


def v1_input_layer_partitioner(config: Any) -> Any:
    """TF 1.x's partitioner of the input layer's (and a linear model's) variables: slices of at least 64 MB."""
    return tf.compat.v1.min_max_variable_partitioner(
        max_partitions=config.num_ps_replicas if config else 0, min_slice_size=_INPUT_LAYER_MIN_SLICE_SIZE
    )
