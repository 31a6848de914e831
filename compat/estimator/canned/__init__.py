"""Canned estimators, as model_fns on the graph engine: TF 2.15's models (Keras 2 layers), variable names,
optimizers, defaults and heads (compat.estimator.head).

`__all__` holds tf.estimator's names. The other public names TF 2.15 had are
in the mappings below, for the namespaces they belong to: `V1_CANNED`
(tf.compat.v1.estimator.<Name>: the TF 1.x classes, `<Name>V1` here),
`V1_EXPERIMENTAL` (tf.compat.v1.estimator.experimental) and `EXPERIMENTAL`
(tf.estimator.experimental).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import lazy_loader

# The canned classes by module: {module: tf.estimator's class names}. Each module also defines each class's
# TF 1.x twin, `<Name>V1` (tf.compat.v1.estimator.<Name>). A canned estimator is added by writing its module
# and one entry here (docs/architecture.md); the lazy table, `__all__` and `V1_CLASSES` follow.
CANNED = {
    "baseline": ("BaselineClassifier", "BaselineEstimator", "BaselineRegressor"),
    "dnn": ("DNNClassifier", "DNNEstimator", "DNNRegressor"),
    "dnn_linear_combined": ("DNNLinearCombinedClassifier", "DNNLinearCombinedEstimator", "DNNLinearCombinedRegressor"),
    "linear": ("LinearClassifier", "LinearEstimator", "LinearRegressor"),
}
V1_CLASSES = tuple(name for names in CANNED.values() for name in names)
# Each class loads with its own module when first used: a program pays for the estimators it uses.
_lazy_getattr, _, _ = lazy_loader.attach(
    __name__,
    submod_attrs={
        **{module: [*names, *(f"{name}V1" for name in names)] for module, names in CANNED.items()},
        "kmeans": ["KMeans"],
        "linear_sdca": ["LinearSDCA"],
        "parsing_utils": ["classifier_parse_example_spec", "regressor_parse_example_spec"],
        "rnn": ["RNNClassifier", "RNNEstimator"],
    },
)

__all__ = sorted([*V1_CLASSES, "classifier_parse_example_spec", "regressor_parse_example_spec"])

if TYPE_CHECKING:  # tf.estimator's names for type checkers and editors (tests/test_architecture.py compares)
    from compat.estimator.canned.baseline import BaselineClassifier, BaselineEstimator, BaselineRegressor
    from compat.estimator.canned.dnn import DNNClassifier, DNNEstimator, DNNRegressor
    from compat.estimator.canned.dnn_linear_combined import (
        DNNLinearCombinedClassifier,
        DNNLinearCombinedEstimator,
        DNNLinearCombinedRegressor,
    )
    from compat.estimator.canned.linear import LinearClassifier, LinearEstimator, LinearRegressor
    from compat.estimator.canned.parsing_utils import classifier_parse_example_spec, regressor_parse_example_spec


def _mapping(name: str) -> dict:
    """The namespaces' tables, built from the classes when first asked for."""
    if name == "V1_CANNED":
        # tf.compat.v1.estimator.<name>: TF 1.x's canned classes (tf.compat.v1.train optimizers, SUM loss
        # reduction, TF 1.x feature columns and variable names) under the names TF 2.15 gave them there
        return {base: _lazy_getattr(f"{base}V1") for base in V1_CLASSES}
    if name == "V1_EXPERIMENTAL":
        # tf.compat.v1.estimator.experimental.<name> (beside the names it shares with tf.estimator.experimental);
        # the logit fn builders are TF 1.x's (tf.compat.v1.layers, TF 1.x feature columns, partitioners)
        from compat.estimator.canned.dnn import dnn_logit_fn_builder_v1
        from compat.estimator.canned.linear import linear_logit_fn_builder_v1

        return {
            "KMeans": _lazy_getattr("KMeans"),
            "LinearSDCA": _lazy_getattr("LinearSDCA"),
            "dnn_logit_fn_builder": dnn_logit_fn_builder_v1,
            "linear_logit_fn_builder": linear_logit_fn_builder_v1,
        }
    # tf.estimator.experimental.<name>
    return {name: _lazy_getattr(name) for name in ("LinearSDCA", "RNNClassifier", "RNNEstimator")}


def __getattr__(name: str) -> Any:
    value = _mapping(name) if name in ("V1_CANNED", "V1_EXPERIMENTAL", "EXPERIMENTAL") else _lazy_getattr(name)
    globals()[name] = value
    return value
