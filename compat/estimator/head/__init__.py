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

from compat.estimator.head.base_head import Head
from compat.estimator.head.binary_class_head import BinaryClassHead
from compat.estimator.head.multi_class_head import MultiClassHead
from compat.estimator.head.multi_head import MultiHead
from compat.estimator.head.multi_label_head import MultiLabelHead
from compat.estimator.head.regression_head import LogisticRegressionHead, PoissonRegressionHead, RegressionHead

__all__ = [
    "BinaryClassHead",
    "Head",
    "LogisticRegressionHead",
    "MultiClassHead",
    "MultiHead",
    "MultiLabelHead",
    "PoissonRegressionHead",
    "RegressionHead",
]
