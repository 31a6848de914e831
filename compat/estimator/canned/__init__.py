"""Canned estimators, as model_fns on the graph engine: TF 2.15's models (Keras 2 layers), variable names,
optimizers, defaults and heads (compat.estimator.head).

`__all__` holds tf.estimator's names. The other public names TF 2.15 had are
in the mappings below, for the namespaces they belong to: `V1_CANNED`
(tf.compat.v1.estimator.<Name>: the TF 1.x classes, `<Name>V1` here),
`V1_EXPERIMENTAL` (tf.compat.v1.estimator.experimental) and `EXPERIMENTAL`
(tf.estimator.experimental).
"""

from compat.estimator.canned.baseline import (
    BaselineClassifier,
    BaselineClassifierV1,
    BaselineEstimator,
    BaselineEstimatorV1,
    BaselineRegressor,
    BaselineRegressorV1,
)
from compat.estimator.canned.dnn import (
    DNNClassifier,
    DNNClassifierV1,
    DNNEstimator,
    DNNEstimatorV1,
    DNNRegressor,
    DNNRegressorV1,
    dnn_logit_fn_builder_v1,
)
from compat.estimator.canned.dnn_linear_combined import (
    DNNLinearCombinedClassifier,
    DNNLinearCombinedClassifierV1,
    DNNLinearCombinedEstimator,
    DNNLinearCombinedEstimatorV1,
    DNNLinearCombinedRegressor,
    DNNLinearCombinedRegressorV1,
)
from compat.estimator.canned.kmeans import KMeans
from compat.estimator.canned.linear import (
    LinearClassifier,
    LinearClassifierV1,
    LinearEstimator,
    LinearEstimatorV1,
    LinearRegressor,
    LinearRegressorV1,
    linear_logit_fn_builder_v1,
)
from compat.estimator.canned.linear_sdca import LinearSDCA
from compat.estimator.canned.parsing_utils import classifier_parse_example_spec, regressor_parse_example_spec
from compat.estimator.canned.rnn import RNNClassifier, RNNEstimator

__all__ = [
    "BaselineClassifier",
    "BaselineEstimator",
    "BaselineRegressor",
    "DNNClassifier",
    "DNNEstimator",
    "DNNLinearCombinedClassifier",
    "DNNLinearCombinedEstimator",
    "DNNLinearCombinedRegressor",
    "DNNRegressor",
    "LinearClassifier",
    "LinearEstimator",
    "LinearRegressor",
    "classifier_parse_example_spec",
    "regressor_parse_example_spec",
]

# tf.compat.v1.estimator.<name>: TF 1.x's canned classes (tf.compat.v1.train optimizers, SUM loss reduction, TF 1.x
# feature columns and variable names) under the names TF 2.15 gave them there
V1_CANNED = {
    "BaselineClassifier": BaselineClassifierV1,
    "BaselineEstimator": BaselineEstimatorV1,
    "BaselineRegressor": BaselineRegressorV1,
    "DNNClassifier": DNNClassifierV1,
    "DNNEstimator": DNNEstimatorV1,
    "DNNRegressor": DNNRegressorV1,
    "DNNLinearCombinedClassifier": DNNLinearCombinedClassifierV1,
    "DNNLinearCombinedEstimator": DNNLinearCombinedEstimatorV1,
    "DNNLinearCombinedRegressor": DNNLinearCombinedRegressorV1,
    "LinearClassifier": LinearClassifierV1,
    "LinearEstimator": LinearEstimatorV1,
    "LinearRegressor": LinearRegressorV1,
}
V1_NAMES = tuple(cls.__name__ for cls in V1_CANNED.values())  # ("BaselineClassifierV1", ...), in this package

# tf.compat.v1.estimator.experimental.<name> (beside the names it shares with tf.estimator.experimental); the logit
# fn builders are TF 1.x's (tf.compat.v1.layers, TF 1.x feature columns, partitioners)
V1_EXPERIMENTAL = {
    "KMeans": KMeans,
    "LinearSDCA": LinearSDCA,
    "dnn_logit_fn_builder": dnn_logit_fn_builder_v1,
    "linear_logit_fn_builder": linear_logit_fn_builder_v1,
}

# tf.estimator.experimental.<name>
EXPERIMENTAL = {"LinearSDCA": LinearSDCA, "RNNClassifier": RNNClassifier, "RNNEstimator": RNNEstimator}
