"""The names of the evaluation metrics heads and canned estimators report (TF 2.15's strings).

`estimator.evaluate()` returns a dict keyed by these, exporters and early
stopping hooks select on them, and TensorBoard shows them as tags: they are
TF 2.15's exactly. A head with a `name` appends `/<name>` to each.
"""

from __future__ import annotations

from compat.estimator.model_fn import AVERAGE_LOSS_METRIC_KEY, LOSS_METRIC_KEY


class MetricKeys:
    """Metric names; the `%`-templates take a threshold (`%g`), a class id (`%d`) or a class name (`%s`)."""

    LOSS = LOSS_METRIC_KEY
    LOSS_MEAN = AVERAGE_LOSS_METRIC_KEY
    LOSS_REGULARIZATION = "regularization_loss"

    ACCURACY = "accuracy"
    PRECISION = "precision"
    RECALL = "recall"
    # the accuracy of always predicting the more frequent class: what a model has to beat
    ACCURACY_BASELINE = "accuracy_baseline"
    AUC = "auc"
    AUC_PR = "auc_precision_recall"
    LABEL_MEAN = "label/mean"
    PREDICTION_MEAN = "prediction/mean"

    # a probability threshold in (0, 1)
    ACCURACY_AT_THRESHOLD = "accuracy/positive_threshold_%g"
    PRECISION_AT_THRESHOLD = "precision/positive_threshold_%g"
    RECALL_AT_THRESHOLD = "recall/positive_threshold_%g"

    # a bound in (0, 1) on the competing metric
    PRECISION_AT_RECALL = "precision_at_recall_%g"
    RECALL_AT_PRECISION = "recall_at_precision_%g"
    SENSITIVITY_AT_SPECIFICITY = "sensitivity_at_specificity_%g"
    SPECIFICITY_AT_SENSITIVITY = "specificity_at_sensitivity_%g"

    # one class, by id
    PROBABILITY_MEAN_AT_CLASS = "probability_mean/class%d"
    AUC_AT_CLASS = "auc/class%d"
    AUC_PR_AT_CLASS = "auc_precision_recall/class%d"

    # one class, by its name in the label vocabulary
    PROBABILITY_MEAN_AT_NAME = "probability_mean/%s"
    AUC_AT_NAME = "auc/%s"
    AUC_PR_AT_NAME = "auc_precision_recall/%s"


__all__ = ["MetricKeys"]
