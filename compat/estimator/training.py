"""train_and_evaluate on one machine, with TensorFlow 2.15's local schedule.

The train input_fn is called once; training runs to `max_steps` and, after
each checkpoint save except the first (the step-0 or restored one), evaluates,
unless less than `throttle_secs` has passed since the previous evaluation
began. A last evaluation follows the final checkpoint if it was not evaluated.
Exporters run after each evaluation.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Callable, Sequence

import tensorflow as tf
from absl import logging

from compat.estimator.estimator import Estimator


@dataclasses.dataclass(frozen=True)
class TrainSpec:
    """What `train_and_evaluate` trains: tf.estimator.TrainSpec."""

    input_fn: Callable
    max_steps: int | None = None
    hooks: Sequence = ()
    saving_listeners: Sequence = ()

    def __post_init__(self) -> None:
        if not callable(self.input_fn):
            raise TypeError(f"`input_fn` must be callable, given: {self.input_fn!r}")
        if self.max_steps is not None and self.max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {self.max_steps}")


@dataclasses.dataclass(frozen=True)
class EvalSpec:
    """How `train_and_evaluate` evaluates: tf.estimator.EvalSpec.

    `start_delay_secs` only delays a separate evaluator task; on one machine it is unused.
    """

    input_fn: Callable
    steps: int | None = 100
    name: str | None = None
    hooks: Sequence = ()
    exporters: Sequence = ()
    start_delay_secs: float = 120
    throttle_secs: float = 600

    def __post_init__(self) -> None:
        if not callable(self.input_fn):
            raise TypeError(f"`input_fn` must be callable, given: {self.input_fn!r}")
        if self.steps is not None and self.steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {self.steps}")
        if self.throttle_secs < 0:
            raise ValueError(f"Must specify throttle_secs >= 0, given: {self.throttle_secs}")
        exporters = self.exporters if isinstance(self.exporters, (list, tuple)) else [self.exporters]
        names = [e.name for e in exporters]
        if len(set(names)) != len(names):
            raise ValueError(f"`exporters` must have unique names, given: {names}")
        object.__setattr__(self, "exporters", tuple(exporters))


# Called around checkpoint saves; `after_save` returning True stops training. TensorFlow's own class.
CheckpointSaverListener = tf.compat.v1.train.CheckpointSaverListener


class _EvaluateAfterSaves(CheckpointSaverListener):
    def __init__(self, estimator: Estimator, eval_spec: EvalSpec, max_steps: int | None):
        self.estimator, self.eval_spec, self.max_steps = estimator, eval_spec, max_steps
        self.eval_result, self.export_results = None, []
        self.saves, self._last_start, self._evaluated_step = 0, None, None

    def after_save(self, session, global_step_value):
        self.saves += 1
        if self.saves == 1:  # the save of the step training starts from
            return False
        if self._last_start is not None and time.monotonic() - self._last_start < self.eval_spec.throttle_secs:
            logging.info("Skip the current checkpoint eval due to throttle secs (%s secs).",
                         self.eval_spec.throttle_secs)
            return False
        self._evaluate(global_step_value)
        return False

    def end(self, session, global_step_value):
        if self._evaluated_step != global_step_value and self.saves > 0:
            self._evaluate(global_step_value)  # the last checkpoint was not evaluated

    def _evaluate(self, step: int) -> None:
        self._last_start = time.monotonic()
        spec = self.eval_spec
        self.eval_result = self.estimator.evaluate(spec.input_fn, steps=spec.steps, hooks=spec.hooks,
                                                   name=spec.name)
        self._evaluated_step = step
        checkpoint = self.estimator.latest_checkpoint()
        final = self.max_steps is not None and step >= self.max_steps
        self.export_results = []
        for exporter in spec.exporters:
            path = os.path.join(self.estimator.model_dir, "export", exporter.name)
            self.export_results.append(exporter.export(self.estimator, path, checkpoint, self.eval_result, final))


def train_and_evaluate(estimator: Estimator, train_spec: TrainSpec, eval_spec: EvalSpec):
    """Trains and evaluates on one machine; returns (eval_metrics, export_results).

    Returns (None, None) when `max_steps` was already reached: nothing is trained
    or evaluated (TF 2.15 with the object-based format trained one extra step).
    """
    if not isinstance(train_spec, TrainSpec) or not isinstance(eval_spec, EvalSpec):
        raise TypeError("train_spec must be a TrainSpec and eval_spec an EvalSpec")
    config = estimator.config
    if not config.saves_checkpoints:
        raise ValueError("train_and_evaluate needs checkpoints: set save_checkpoints_steps or _secs in "
                         "the RunConfig (both are None)")
    listener = _EvaluateAfterSaves(estimator, eval_spec, train_spec.max_steps)
    estimator.train(train_spec.input_fn, hooks=train_spec.hooks, max_steps=train_spec.max_steps,
                    saving_listeners=[*train_spec.saving_listeners, listener])
    if listener.saves == 0:  # train() skipped: max_steps was already reached
        return None, None
    return listener.eval_result, listener.export_results
