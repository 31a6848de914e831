"""Evaluation of the Keras engine: a checkpoint's loss and metrics over an input_fn, traced once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from compat.estimator.base import (
    check_checkpoint_exists,
    write_checkpoint_path_to_summary,
    write_dict_to_summary,
)
from compat.estimator.input_fns import (
    call_input_fn,
    input_fn_name,
    split_features_labels,
    with_input_options,
)
from compat.estimator.keras_engine.compile_arguments import tf215_metrics
from compat.estimator.keras_engine.core import KerasEngine
from compat.estimator.keras_engine.input_reading import split_hooks
from compat.estimator.keras_engine.session_hooks import HookRunner
from compat.estimator.model_fn import ModeKeys


class Evaluation(KerasEngine):
    """`evaluate`: the metrics of a checkpoint over an input_fn, written as TF 2.15 wrote them."""

    # -- evaluate -----------------------------------------------------------
    def evaluate(
        self,
        input_fn: Callable,
        steps: int | None = None,
        hooks=None,
        checkpoint_path: str | None = None,
        name: str | None = None,
    ) -> dict:
        """Metrics of a checkpoint (default: the latest): the compiled metrics, `loss`, `global_step`.

        As TF 2.15: metrics are float32 NumPy scalars and `global_step` an int64
        one; a multi-output model reports `loss` and its compiled metrics, not
        each output's loss. Keras callbacks get their test calls; SessionRunHooks
        run around each batch.
        """
        callbacks, session_hooks = split_hooks(hooks)
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if checkpoint_path:
            check_checkpoint_exists(checkpoint_path)
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if checkpoint_path is None:
            tf.compat.v1.logging.info(
                "Could not find trained model in model_dir: %s, running initialization to evaluate.", self.model_dir
            )
        step = self._restore(checkpoint_path)
        dataset = call_input_fn(input_fn, ModeKeys.EVAL, self._config, self._params)
        dataset = self._input_cache.wrap(dataset, input_fn_name(input_fn), ModeKeys.EVAL)
        if steps is not None:
            dataset = dataset.take(steps)
        self._build_metrics(dataset.element_spec)
        # No copy ahead to the GPU here: the compiled evaluation loop reads the dataset through tf.data's own
        # reduce, which would run after a device copy, and evaluation is off the training step's path.
        dataset = with_input_options(dataset)
        try:
            if callbacks or session_hooks:
                results = self._evaluate_with_hooks(dataset, step, callbacks, session_hooks)
            else:
                results = self._evaluate_batches(dataset)
        finally:
            self._input_cache.publish()
        renames = self._state.metric_names_map
        metrics: dict[str, Any] = {renames.get(key, key): np.float32(value) for key, value in results.items()}
        metrics["global_step"] = np.int64(step)
        # the graph engine's writer: the same events as TF 2.15's (simple values, checkpoint_path)
        write_dict_to_summary(self.eval_dir(name), metrics, step)
        if checkpoint_path is not None:
            write_checkpoint_path_to_summary(self.eval_dir(name), checkpoint_path, step)
        return metrics

    def _metric_results(self, loss: float) -> dict:
        """The compiled metrics' results under TF 2.15's names, and `loss`; per-output losses left out, as TF 2.15."""
        named = tf215_metrics(self._state.model, self.output_names)
        return {**{name: float(metric.result()) for name, metric in named}, "loss": loss}

    def _evaluate_batches(self, dataset: tf.data.Dataset) -> dict:
        """The compiled metrics over all batches, and `loss` as the mean of per-batch losses.

        Keras' own evaluation loss is weighted by batch size; the Estimator's is the
        plain mean over batches, so each batch's loss is taken with Keras'
        `compute_loss`, while `compute_metrics` accumulates the compiled metrics.
        One compiled loop over the whole dataset: no host sync per batch.
        """
        self._state.model.reset_metrics()
        if self._state.evaluation_loop is None:  # traced once per Estimator, its shapes relaxed as inputs vary
            self._state.evaluation_loop = tf.function(self._evaluate_all, reduce_retracing=True)
        total, batches = (value.numpy() for value in self._state.evaluation_loop(dataset))
        if batches == 0:
            raise ValueError("the evaluation input_fn gave no batches")
        return self._metric_results(float(total / batches))

    def _evaluate_one_batch(self, element) -> tf.Tensor:
        model = self._state.model
        features, labels = split_features_labels(element)
        inputs, weights = self._inputs_and_weights(features)
        labels = self.model_targets(labels)
        predictions = model(inputs, training=False)
        loss = model.compute_loss(x=inputs, y=labels, y_pred=predictions, sample_weight=weights, training=False)
        # TF 2.15's model_to_estimator weighed the loss by the sample weights, but none of the metrics
        model.compute_metrics(inputs, labels, predictions, sample_weight=None)
        return tf.cast(loss, tf.float32)

    def _evaluate_all(self, dataset: tf.data.Dataset) -> tuple[tf.Tensor, tf.Tensor]:
        one_batch = tf.autograph.experimental.do_not_convert(self._evaluate_one_batch)  # Keras' code stays plain TF
        total, batches = tf.constant(0.0), tf.constant(0, tf.int64)
        for element in dataset:
            total += one_batch(element)
            batches += 1
        return total, batches

    def _evaluate_with_hooks(
        self, dataset: tf.data.Dataset, step: int, callbacks: Sequence, session_hooks: Sequence
    ) -> dict:
        """Evaluation batch by batch, calling Keras callbacks' test methods and SessionRunHooks."""
        one_batch = tf.function(self._evaluate_one_batch, reduce_retracing=True)
        runner = HookRunner(session_hooks, training=False) if session_hooks else None
        self._state.model.reset_metrics()
        for callback in callbacks:
            callback.set_model(self._state.model)
            callback.on_test_begin()
        if runner is not None:
            runner.after_create_session(step)
        losses = []
        for batch, element in enumerate(dataset):
            for callback in callbacks:
                callback.on_test_batch_begin(batch)
            if runner is not None:
                runner.before_step(step)
            losses.append(float(one_batch(element)))
            for callback in callbacks:
                callback.on_test_batch_end(batch, {"loss": losses[-1]})
            if runner is not None and runner.after_step(losses[-1]):
                break
        if not losses:
            raise ValueError("the evaluation input_fn gave no batches")
        results = self._metric_results(float(np.mean(losses)))
        for callback in callbacks:
            callback.on_test_end(results)
        if runner is not None:
            runner.end()
        return results
