"""Canned estimators, as model_fns on the graph engine: TF 2.15's variable names, keys and defaults."""

from compat.estimator.canned.dnn import DNNClassifier, DNNEstimator, DNNRegressor
from compat.estimator.canned.dnn_linear_combined import (DNNLinearCombinedClassifier, DNNLinearCombinedEstimator,
                                                         DNNLinearCombinedRegressor)
from compat.estimator.canned.linear import LinearClassifier, LinearEstimator, LinearRegressor
from compat.estimator.canned.parsing_utils import classifier_parse_example_spec, regressor_parse_example_spec

__all__ = [
    "DNNClassifier", "DNNEstimator", "DNNLinearCombinedClassifier", "DNNLinearCombinedEstimator",
    "DNNLinearCombinedRegressor", "DNNRegressor", "LinearClassifier", "LinearEstimator", "LinearRegressor",
    "classifier_parse_example_spec", "regressor_parse_example_spec",
]
