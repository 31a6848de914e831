"""Canned estimators, as model_fns on the graph engine: TF 2.15's models (Keras 2 layers), variable names,
optimizers, defaults and heads (compat.estimator.head)."""

from compat.estimator.canned.baseline import BaselineClassifier, BaselineEstimator, BaselineRegressor
from compat.estimator.canned.dnn import DNNClassifier, DNNEstimator, DNNRegressor
from compat.estimator.canned.dnn_linear_combined import (DNNLinearCombinedClassifier, DNNLinearCombinedEstimator,
                                                         DNNLinearCombinedRegressor)
from compat.estimator.canned.linear import LinearClassifier, LinearEstimator, LinearRegressor
from compat.estimator.canned.parsing_utils import classifier_parse_example_spec, regressor_parse_example_spec

__all__ = [
    "BaselineClassifier", "BaselineEstimator", "BaselineRegressor",
    "DNNClassifier", "DNNEstimator", "DNNLinearCombinedClassifier", "DNNLinearCombinedEstimator",
    "DNNLinearCombinedRegressor", "DNNRegressor", "LinearClassifier", "LinearEstimator", "LinearRegressor",
    "classifier_parse_example_spec", "regressor_parse_example_spec",
]
