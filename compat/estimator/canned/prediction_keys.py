"""The keys of the prediction dicts heads and canned estimators return (TF 2.15's strings).

Programs index `estimator.predict(...)` results and export signatures with
these strings, so they are TF 2.15's exactly.
"""

from __future__ import annotations


class PredictionKeys:
    """Names of the tensors in a head's predictions dict."""

    CLASSES = "classes"  # string class names (the vocabulary's, else the ids as strings)
    CLASS_IDS = "class_ids"  # int64 id of the most likely class, shape [D0, ... DN, 1]
    ALL_CLASSES = "all_classes"  # every class name, one row per example
    ALL_CLASS_IDS = "all_class_ids"  # every class id (int32), one row per example
    LOGISTIC = "logistic"  # sigmoid of the binary logit
    LOGITS = "logits"
    PREDICTIONS = "predictions"  # a regression head's predicted values
    PROBABILITIES = "probabilities"
    TOP_K = "top_k"


__all__ = ["PredictionKeys"]
