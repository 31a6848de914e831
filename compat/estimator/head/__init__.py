"""Heads: from logits to predictions, loss, metrics and an EstimatorSpec (tf.estimator.*Head), as TF 2.15's.

  BinaryClassHead          sigmoid cross-entropy, labels in [0, 1] or a 2-word vocabulary
  MultiClassHead           softmax cross-entropy over n_classes > 2
  MultiLabelHead           a sigmoid per class, multi-hot or sparse labels
  RegressionHead           squared error over label_dimension values
  PoissonRegressionHead    log-Poisson loss, predictions exp(logits)
  LogisticRegressionHead   sigmoid cross-entropy, predictions sigmoid(logits)
  MultiHead                named heads trained together on the sum of their losses

`Head` is the interface a custom head implements. A model_fn returns
`head.create_estimator_spec(features, mode, logits, labels, optimizer=..., trainable_variables=...)`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import lazy_loader

# Each head loads with its module when first used (heads build on Keras 2's losses and metrics, tf_keras).
_lazy_getattr, _, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "base_head": ["Head"],
        "binary_class_head": ["BinaryClassHead"],
        "multi_class_head": ["MultiClassHead"],
        "multi_head": ["MultiHead"],
        "multi_label_head": ["MultiLabelHead"],
        "regression_head": ["LogisticRegressionHead", "PoissonRegressionHead", "RegressionHead"],
    },
)

if TYPE_CHECKING:  # the same names for type checkers and editors (tests/test_architecture.py compares)
    from compat.estimator.head.base_head import Head
    from compat.estimator.head.binary_class_head import BinaryClassHead
    from compat.estimator.head.multi_class_head import MultiClassHead
    from compat.estimator.head.multi_head import MultiHead
    from compat.estimator.head.multi_label_head import MultiLabelHead
    from compat.estimator.head.regression_head import LogisticRegressionHead, PoissonRegressionHead, RegressionHead


def __getattr__(name: str) -> Any:
    value = _lazy_getattr(name)
    globals()[name] = value
    return value
