"""Heads: from logits to predictions, loss, metrics and an EstimatorSpec (tf.estimator.*Head).

(Being rebuilt as TF 2.15's Head API; until then, the canned estimators' heads.)
"""

from compat.estimator.canned.head import BinaryClassHead, MultiClassHead, RegressionHead

__all__ = ["BinaryClassHead", "MultiClassHead", "RegressionHead"]
