"""The one writer of training scalars, for `--mode=keras` (keras_mode's callback) and the Keras engine of
`--mode=estimator` (compat/estimator/keras_engine/): the same tags on the global-step axis, so runs of both
modes overlay in TensorBoard.

Tags: `loss` and the compiled metrics (Keras' running means), `learning_rate`, and, when a rate is given,
`global_step/sec` (TF 2.15's tag) and `examples_per_second`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import tensorflow as tf


def learning_rate_value(optimizer: Any) -> float:
    """The optimizer's current rate: a constant rate is a variable (mirrored under a strategy); a schedule a tensor."""
    rate = optimizer.learning_rate
    return float(tf.convert_to_tensor(getattr(rate, "value", rate)))


def write_training_scalars(
    writer: tf.summary.SummaryWriter,
    step: int,
    metrics: Mapping[str, Any] | None = None,
    learning_rate: float | None = None,
    steps_per_second: float | None = None,
    examples_per_second: float | None = None,
) -> None:
    """Writes one step's training scalars; a metric that is not a scalar (a per-class array) is left out."""
    with writer.as_default(step=step):
        for name, value in (metrics or {}).items():
            if np.ndim(value) == 0:
                tf.summary.scalar(name, float(value))
        if learning_rate is not None:
            tf.summary.scalar("learning_rate", learning_rate)
        if steps_per_second is not None:
            tf.summary.scalar("global_step/sec", steps_per_second)
        if examples_per_second is not None:
            tf.summary.scalar("examples_per_second", examples_per_second)
