"""LinearClassifier, LinearRegressor and LinearEstimator: linear models over feature columns, as TF 2.15's.

The model is a Keras 2 (tf_keras) layer, `LinearModel`, as TF 2.15's: one
weight matrix per column, `[num_buckets or width, units]`, named
`linear/linear_model/<column>/weights`, and a bias
`linear/linear_model/bias_weights`, all zero-initialised and made with
`tf.compat.v1.get_variable`, so that TF 2.15's checkpoints restore and warm
starts (vocabulary remapping included) find them. A categorical column's ids
pick rows of its weights, combined by `sparse_combiner` ('sum', 'mean' or
'sqrtn'); a dense column's values multiply them. The training summaries are
`bias` and `fraction_of_zero_weights`. The default optimizer is FTRL at 0.2
(`training/Ftrl/...`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf
import tf_keras

from compat.core import tf_internals
from compat.estimator.canned import common, optimizers, v1_heads
from compat.estimator.canned.linear_sdca import LinearSDCA, UpdateWeightsHook
from compat.estimator.canned.recipe import CannedRecipe
from compat.estimator.estimator import Estimator
from compat.estimator.head import BinaryClassHead, RegressionHead
from compat.estimator.model_fn import ModeKeys

# TF 2.15's learning rate for an optimizer named by a string
_LEARNING_RATE = 0.2


class LinearModel(tf_keras.layers.Layer):
    """`[batch_size, units]` weighted sums of feature columns plus a bias: TF 2.15's linear model layer.

    Every variable is made under the variable scope `name` (no name scope of
    its own), so a layer named `linear/linear_model` holds
    `linear/linear_model/<column>/weights` and `linear/linear_model/bias_weights`.
    """

    def __init__(
        self,
        feature_columns: Sequence,
        units: int = 1,
        sparse_combiner: str = "sum",
        trainable: bool = True,
        name: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(name=name, trainable=trainable, **kwargs)
        self._feature_columns = tf_internals.normalize_feature_columns(feature_columns)
        for column in self._feature_columns:
            if not (tf_internals.is_dense_column(column) or tf_internals.is_categorical_column(column)):
                raise ValueError(
                    f"Items of feature_columns must be either a DenseColumn or CategoricalColumn. Given: {column}"
                )
        self._units = units
        self._sparse_combiner = sparse_combiner
        self._state_manager = tf_internals.feature_state_manager(self, self.trainable)
        self.bias = None

    @property
    def state_manager(self) -> Any:
        """The state manager holding the columns' weights (`state_manager.get_variable(column, 'weights')`) and
        their state (lookup tables, embeddings): what LinearSDCA trains."""
        return self._state_manager

    def _column_rows(self, column: Any) -> int:
        if tf_internals.is_categorical_column(column):
            return column.num_buckets
        return column.variable_shape.num_elements()

    def build(self, input_shape: Any) -> None:
        with tf.compat.v1.variable_scope(self.name, auxiliary_name_scope=False):
            for column in self._feature_columns:
                with tf.compat.v1.variable_scope(
                    tf_internals.column_variable_scope_name(column.name), auxiliary_name_scope=False
                ):
                    column.create_state(self._state_manager)
                    self._state_manager.create_variable(
                        column,
                        name="weights",
                        dtype=tf.float32,
                        shape=(self._column_rows(column), self._units),
                        initializer=tf_keras.initializers.zeros(),
                        trainable=self.trainable,
                    )
            self.bias = self.add_weight(
                name="bias_weights",
                dtype=tf.float32,
                shape=[self._units],
                initializer=tf_keras.initializers.zeros(),
                trainable=self.trainable,
                use_resource=True,
                getter=tf.compat.v1.get_variable,
            )
        super().build(None)

    def call(self, features: dict) -> tf.Tensor:
        if not isinstance(features, dict):
            raise ValueError(f"We expected a dictionary here. Instead we got: {features}")
        cache = tf_internals.feature_transformation_cache(features)
        sums = []
        for column in self._feature_columns:
            with tf.name_scope(tf_internals.column_variable_scope_name(column.name)):
                sums.append(
                    tf_internals.linear_weighted_sum(
                        column,
                        cache,
                        self._state_manager,
                        self._sparse_combiner,
                        self._state_manager.get_variable(column, "weights"),
                    )
                )
        tf_internals.check_same_batch_size(sums, self._feature_columns)
        return tf.nn.bias_add(tf.math.add_n(sums, name="weighted_sum_no_bias"), self.bias, name="weighted_sum")


def _fraction_of_zero(variables: Sequence[tf.Variable]) -> tf.Tensor:
    """The share of zero entries over all `variables` (NaN when they hold none): the model's sparsity."""
    with tf.name_scope("zero_fraction"):
        sizes = [tf.cast(tf.size(v, out_type=tf.int64), tf.float32) for v in variables]
        zeros = [size - tf.cast(tf.math.count_nonzero(v), tf.float32) for v, size in zip(variables, sizes)]
        return tf.math.add_n(zeros) / tf.math.add_n(sizes)


def _add_summaries(bias: tf.Variable, weights: Sequence[tf.Variable], units: int) -> None:
    if units > 1:
        tf.compat.v1.summary.histogram("bias", bias)
    else:
        tf.compat.v1.summary.scalar("bias", bias[0])
    if weights:
        tf.compat.v1.summary.scalar("fraction_of_zero_weights", _fraction_of_zero(weights))


def _linear_logits(
    units: int, feature_columns: Sequence, sparse_combiner: str, features: dict, name: str
) -> tuple[tf.Tensor, list]:
    common.check_v2_columns(feature_columns)
    model = LinearModel(feature_columns=feature_columns, units=units, sparse_combiner=sparse_combiner, name=name)
    logits = model(features)
    variables = list(model.variables)
    _add_summaries(model.bias, [v for v in variables if v is not model.bias], units)
    return logits, variables


def linear_logit_fn_builder(units: int, feature_columns: Sequence, sparse_combiner: str = "sum") -> Callable:
    """A `logit_fn(features)` -> `[batch_size, units]` logits of a linear model whose variables are
    `linear_model/<column>/weights` and `linear_model/bias_weights` under the caller's variable scope
    (tf.compat.v1.estimator.experimental.linear_logit_fn_builder)."""

    def linear_logit_fn(features: dict) -> tf.Tensor:
        return _linear_logits(units, feature_columns, sparse_combiner, features, "linear_model")[0]

    return linear_logit_fn


def linear_logits_and_variables(
    units: int, feature_columns: Sequence, sparse_combiner: str, features: dict
) -> tuple[tf.Tensor, list]:
    """The linear estimators' logits and trainable variables, under `linear/linear_model`."""
    return _linear_logits(units, feature_columns, sparse_combiner, features, "linear/linear_model")


def default_linear_learning_rate(feature_columns: Sequence, cap: float = _LEARNING_RATE) -> float:
    """TF 2.15's rate for a linear model given no optimizer: 1/sqrt(number of columns), at most `cap`."""
    return min(cap, 1.0 / math.sqrt(len(feature_columns)))


def linear_model_fn(
    features: dict,
    labels: Any,
    mode: str,
    head: Any,
    feature_columns: Sequence,
    optimizer: Any = "Ftrl",
    config: Any = None,
    sparse_combiner: str = "sum",
) -> Any:
    """The model_fn of the linear estimators: the linear logits through `head`, trained by `optimizer` (a name
    at 0.2, an optimizer or a callable; None: FTRL at `default_linear_learning_rate`)."""
    del config
    common.check_features(features)
    if _is_sdca(optimizer):
        return _sdca_estimator_spec(features, labels, mode, head, feature_columns, optimizer, "linear/linear_model")
    logits, trainable_variables = linear_logits_and_variables(
        head.logits_dimension, feature_columns, sparse_combiner, features
    )
    if mode == ModeKeys.TRAIN:
        if optimizer is None:
            optimizer = tf_keras.optimizers.legacy.Ftrl(learning_rate=default_linear_learning_rate(feature_columns))
        optimizer = optimizers.optimizer_for_graph(optimizer, _LEARNING_RATE)
        common.start_counting_with_global_step(optimizer)
    return head.create_estimator_spec(
        features=features,
        mode=mode,
        labels=labels,
        optimizer=optimizer,
        trainable_variables=trainable_variables,
        logits=logits,
    )


# -- LinearSDCA (tf.estimator.experimental.LinearSDCA: linear_sdca.py) ----------------------------------------------


def _is_sdca(optimizer: Any) -> bool:
    return isinstance(optimizer, LinearSDCA)


def _check_sdca_columns(optimizer: Any, feature_columns: Sequence, sparse_combiner: str) -> None:
    if sparse_combiner != "sum":
        raise ValueError('sparse_combiner must be "sum" when optimizer is a LinearSDCA object.')
    if not tf_internals.is_feature_column_v2(list(feature_columns or ())):
        raise ValueError("V2 feature columns required when optimizer is a LinearSDCA object (tf.feature_column.*).")


def check_sdca_classifier(feature_columns: Sequence, n_classes: int, optimizer: Any, sparse_combiner: str) -> None:
    """SDCA trains a binary classifier over TF2 columns with sparse_combiner 'sum' (TF 2.15's checks, in the
    argument order of TF 2.15's `_validate_linear_sdca_optimizer_for_linear_classifier`)."""
    if _is_sdca(optimizer):
        _check_sdca_columns(optimizer, feature_columns, sparse_combiner)
        if n_classes > 2:
            raise ValueError(
                "LinearSDCA cannot be used in a multi-class setting: give n_classes=2 or a gradient optimizer."
            )


def _check_sdca_regressor(
    optimizer: Any, feature_columns: Sequence, label_dimension: int, sparse_combiner: str
) -> None:
    """SDCA trains a regressor of one value over TF2 columns with sparse_combiner 'sum' (TF 2.15's checks)."""
    if _is_sdca(optimizer):
        _check_sdca_columns(optimizer, feature_columns, sparse_combiner)
        if label_dimension > 1:
            raise ValueError("LinearSDCA can only be used with one-dimensional label.")


def _sdca_loss_type(head: Any) -> str:
    """The SDCA kernel's loss for `head`: logistic for a binary head, squared for a regression head of one value."""
    if isinstance(head, BinaryClassHead):
        return "logistic_loss"
    if isinstance(head, RegressionHead) and head.logits_dimension == 1:
        return "squared_loss"
    raise ValueError(
        f"Unsupported head type: {head}. LinearSDCA trains a BinaryClassHead or a RegressionHead of "
        "one label dimension."
    )


def _weight_key(head: Any) -> str | None:
    """The feature holding the example weights: the head's weight column (a name or a numeric column), which TF
    2.15 read from the head too (the TF2 heads keep it as `_weight_column`)."""
    column = getattr(head, "_weight_column", None)
    return column if column is None or isinstance(column, str) else column.key


def _sdca_estimator_spec(
    features: dict, labels: Any, mode: str, head: Any, feature_columns: Sequence, sdca: LinearSDCA, model_name: str
) -> Any:
    """The EstimatorSpec of a linear model named `model_name` trained by SDCA: the kernel's step is the train op,
    the weight update a chief hook, as TF 2.15 ran them; the summaries are TF 1.x's (`bias` and
    `fraction_of_zero_weights`, then the solver's)."""
    loss_type = _sdca_loss_type(head)
    model = LinearModel(feature_columns=feature_columns, units=1, sparse_combiner="sum", name=model_name)
    logits = model(features)
    _add_v1_summaries(model.bias, [v for v in model.variables if v is not model.bias], 1)
    if mode != ModeKeys.TRAIN:
        return head.create_estimator_spec(features=features, mode=mode, labels=labels, logits=logits)
    sdca_model, train_op = sdca.get_train_step(
        model.state_manager,
        _weight_key(head),
        loss_type,
        feature_columns,
        features,
        labels,
        model.bias,
        tf.compat.v1.train.get_global_step(),
    )
    spec = head.create_estimator_spec(
        features=features, mode=mode, labels=labels, logits=logits, train_op_fn=lambda _: train_op
    )
    return spec._replace(training_chief_hooks=[*spec.training_chief_hooks, UpdateWeightsHook(sdca_model, train_op)])


def _model_fn(
    api: common.Api,
    head: Any,
    feature_columns: Sequence,
    optimizer: Any,
    sparse_combiner: str,
    partitioner: Any = None,
) -> Callable:
    """The model_fn of a linear class of `api` (TF 1.x's take a `partitioner`)."""
    # sparse_combiner and the optimizer are checked where the model uses them (a categorical column, training), as
    # TF 2.15 checked them
    if not _is_sdca(optimizer):
        optimizer = api.checked_optimizer(optimizer)
    feature_columns = tuple(feature_columns or ())
    if api.v1:
        return common.model_fn_calling(
            linear_model_fn_v1,
            head,
            feature_columns,
            optimizer=optimizer,
            partitioner=partitioner,
            sparse_combiner=sparse_combiner,
        )
    return common.model_fn_calling(
        linear_model_fn, head, feature_columns, optimizer=optimizer, sparse_combiner=sparse_combiner
    )


class LinearEstimator(Estimator):
    """tf.estimator.LinearEstimator: a linear model over feature columns with any head."""

    def __init__(
        self,
        head: Any,
        feature_columns: Sequence,
        model_dir: str | None = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        sparse_combiner: str = "sum",
        warm_start_from: Any = None,
    ):
        super().__init__(**common.estimator_arguments(_model_fn, common.TF2, head, locals()))


class LinearClassifier(Estimator):
    """tf.estimator.LinearClassifier: logistic (2 classes) or softmax (more) regression."""

    def __init__(
        self,
        feature_columns: Sequence,
        model_dir: str | None = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Sequence[str] | None = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = common.SUM_OVER_BATCH_SIZE,
        sparse_combiner: str = "sum",
    ):
        check_sdca_classifier(feature_columns, n_classes, optimizer, sparse_combiner)
        head = common.classifier_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(**common.estimator_arguments(_model_fn, common.TF2, head, locals()))
        self.keras_recipe = CannedRecipe.from_arguments("LinearClassifier", locals(), network="linear")


class LinearRegressor(Estimator):
    """tf.estimator.LinearRegressor: least squares over `label_dimension` values."""

    def __init__(
        self,
        feature_columns: Sequence,
        model_dir: str | None = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = common.SUM_OVER_BATCH_SIZE,
        sparse_combiner: str = "sum",
    ):
        _check_sdca_regressor(optimizer, feature_columns, label_dimension, sparse_combiner)
        head = RegressionHead(
            label_dimension=label_dimension, weight_column=weight_column, loss_reduction=loss_reduction
        )
        super().__init__(**common.estimator_arguments(_model_fn, common.TF2, head, locals()))
        self.keras_recipe = CannedRecipe.from_arguments("LinearRegressor", locals(), network="linear")


# -- the TF 1.x classes (tf.compat.v1.estimator.LinearClassifier, ...) ---------------------------------------------
# The same model under the variable scope `linear` with TF 1.x's partitioner (slices of at least 64 MB, one per
# parameter server at most): `linear/linear_model/<column>/weights` is the partitioned variable of `.../part_0`, as
# TF 1.x model folders hold it, and the Ftrl slots `.../weights/part_0/Ftrl`. TF 1.x feature columns go through
# tf.compat.v1.feature_column.linear_model, TF2 ones through LinearModel; a tf.compat.v1.train optimizer trains them.


def _add_v1_summaries(bias: Any, weights: Sequence[Any], units: int) -> None:
    """TF 1.x's `bias` (a scalar, or a histogram for more units) and `fraction_of_zero_weights` over every slice."""
    bias_parts = tf_internals.variable_partitions(bias)
    if units > 1:
        tf.compat.v1.summary.histogram("bias", bias_parts)
    else:
        tf.compat.v1.summary.scalar("bias", bias_parts[0][0])
    slices = [part for variable in weights for part in tf_internals.variable_partitions(variable)]
    if slices:
        tf.compat.v1.summary.scalar("fraction_of_zero_weights", _fraction_of_zero(slices))


def _v1_linear_model(
    units: int, feature_columns: Sequence, sparse_combiner: str, features: dict
) -> tuple[tf.Tensor, Any, list, Any]:
    """(logits, the bias, the columns' weights, the LinearModel or None) of a model named `linear_model` under the
    caller's variable scope: TF2 columns through LinearModel, TF 1.x ones through TensorFlow's v1 linear_model."""
    if tf_internals.is_feature_column_v2(feature_columns):
        model = LinearModel(
            feature_columns=feature_columns, units=units, sparse_combiner=sparse_combiner, name="linear_model"
        )
        logits = model(features)
        return logits, model.bias, [v for v in model.variables if v is not model.bias], model
    columns_to_variables: dict = {}
    logits = tf.compat.v1.feature_column.linear_model(
        features, feature_columns, units=units, sparse_combiner=sparse_combiner, cols_to_vars=columns_to_variables
    )
    bias = columns_to_variables.pop("bias")
    return logits, bias, [part for parts in columns_to_variables.values() for part in parts], None


def linear_logit_fn_builder_v1(units: int, feature_columns: Sequence, sparse_combiner: str = "sum") -> Callable:
    """TF 1.x's `logit_fn(features)` -> `[batch_size, units]` logits of a linear model whose variables are
    `linear_model/<column>/weights` and `linear_model/bias_weights` under the caller's variable scope; TF 1.x and TF2
    feature columns are both accepted."""

    def linear_logit_fn(features: dict) -> tf.Tensor:
        logits, bias, weights, _ = _v1_linear_model(units, feature_columns, sparse_combiner, features)
        _add_v1_summaries(bias, weights, units)
        return logits

    return linear_logit_fn


def default_v1_optimizer(feature_columns: Sequence) -> tf.compat.v1.train.Optimizer:
    """TF 1.x's optimizer for a linear model given none: FTRL at `default_linear_learning_rate`."""
    return tf.compat.v1.train.FtrlOptimizer(learning_rate=default_linear_learning_rate(feature_columns))


def linear_model_fn_v1(
    features: dict,
    labels: Any,
    mode: str,
    head: Any,
    feature_columns: Sequence,
    optimizer: Any = "Ftrl",
    partitioner: Any = None,
    config: Any = None,
    sparse_combiner: str = "sum",
) -> Any:
    """The model_fn of the v1 linear estimators: the model under the variable scope `linear` (`partitioner`, else
    TF 1.x's), its logits through `head`, trained by a tf.compat.v1.train `optimizer` (a name at 0.2, an optimizer, a
    callable, or None: FTRL at `default_linear_learning_rate`) or by SDCA (a LinearSDCA)."""
    common.check_features(features)
    partitioner = partitioner or common.v1_input_layer_partitioner(config)
    with tf.compat.v1.variable_scope("linear", values=tuple(features.values()), partitioner=partitioner):
        if _is_sdca(optimizer):
            return _sdca_estimator_spec(features, labels, mode, head, feature_columns, optimizer, "linear_model")
        logits = linear_logit_fn_builder_v1(head.logits_dimension, feature_columns, sparse_combiner)(features)
        optimizer = optimizers.get_v1_optimizer_instance(
            optimizer or default_v1_optimizer(feature_columns), _LEARNING_RATE
        )
        return v1_heads.v1_estimator_spec(head, features, mode, labels, logits, optimizer=optimizer)


class LinearEstimatorV1(Estimator):
    """tf.compat.v1.estimator.LinearEstimator: TF 1.x's linear model with any head. A TF2 head
    (tf.estimator.*Head) trains with the v1 optimizer through its `train_op_fn` (TF 2.15 refused it there)."""

    def __init__(
        self,
        head: Any,
        feature_columns: Sequence,
        model_dir: str | None = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        partitioner: Any = None,
        sparse_combiner: str = "sum",
        warm_start_from: Any = None,
    ):
        super().__init__(**common.estimator_arguments(_model_fn, common.TF1, head, locals()))


class LinearClassifierV1(Estimator):
    """tf.compat.v1.estimator.LinearClassifier: TF 1.x's logistic or softmax regression, the loss summed over the
    batch (`loss_reduction`, a tf.compat.v1.losses.Reduction); `optimizer` may be a LinearSDCA (2 classes)."""

    def __init__(
        self,
        feature_columns: Sequence,
        model_dir: str | None = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Sequence[str] | None = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        partitioner: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = v1_heads.V1Reduction.SUM,
        sparse_combiner: str = "sum",
    ):
        check_sdca_classifier(feature_columns, n_classes, optimizer, sparse_combiner)
        head = v1_heads.classifier_head_v1(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(**common.estimator_arguments(_model_fn, common.TF1, head, locals()))
        self.keras_recipe = CannedRecipe.from_arguments("LinearClassifierV1", locals(), network="linear")


class LinearRegressorV1(Estimator):
    """tf.compat.v1.estimator.LinearRegressor: TF 1.x's least squares, summed over the batch; `optimizer` may be a
    LinearSDCA (one label dimension)."""

    def __init__(
        self,
        feature_columns: Sequence,
        model_dir: str | None = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        partitioner: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = v1_heads.V1Reduction.SUM,
        sparse_combiner: str = "sum",
    ):
        _check_sdca_regressor(optimizer, feature_columns, label_dimension, sparse_combiner)
        head = v1_heads.regression_head(
            label_dimension=label_dimension, weight_column=weight_column, loss_reduction=loss_reduction
        )
        super().__init__(**common.estimator_arguments(_model_fn, common.TF1, head, locals()))
        self.keras_recipe = CannedRecipe.from_arguments("LinearRegressorV1", locals(), network="linear")


__all__ = [
    "LinearClassifier",
    "LinearClassifierV1",
    "LinearEstimator",
    "LinearEstimatorV1",
    "LinearModel",
    "LinearRegressor",
    "LinearRegressorV1",
    "default_linear_learning_rate",
    "linear_logit_fn_builder",
    "linear_logit_fn_builder_v1",
    "linear_logits_and_variables",
    "linear_model_fn",
    "linear_model_fn_v1",
    "LinearSDCA",
]
