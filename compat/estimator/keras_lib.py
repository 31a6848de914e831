"""The Estimator engine over a compiled Keras model, with tf.estimator's semantics.

TensorFlow 2.15's Estimator is the reference (see the package docstring for
the differences, each an improvement). The engine is a step loop of its own
around Keras' compiled train step, so that checkpoints, summaries, logging and
evaluation happen exactly on the Estimator's schedule:

  <model_dir>/model.ckpt-<step>.{index,data-*}, checkpoint   at most keep_checkpoint_max
  <model_dir>/events.out.tfevents.*                           loss, global_step/sec
  <model_dir>/eval[_<name>]/events.out.tfevents.*             evaluation metrics
  <model_dir>/keras/keras_model.ckpt.*                        the warm-start weights
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Iterable, Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from compat import atomic
from compat.divergence import TrainingDiverged, is_finite
from compat.estimator.estimator import Estimator
from compat.estimator.input_fns import call_input_fn, split_features_labels, with_input_options
from compat.estimator.model_fn import ModeKeys
from compat.estimator.run_config import RunConfig


# -- hooks ------------------------------------------------------------------


def check_hooks(hooks: Iterable | None) -> list[keras.callbacks.Callback]:
    """Keras callbacks are accepted; SessionRunHooks are refused with their replacement named."""
    callbacks = []
    for hook in hooks or ():
        if isinstance(hook, keras.callbacks.Callback):
            callbacks.append(hook)
            continue
        if isinstance(hook, tf.compat.v1.train.SessionRunHook):
            name = type(hook).__name__
            replacement = {
                "CheckpointSaverHook": "RunConfig(save_checkpoints_steps=...) (checkpoints are saved for you)",
                "StopAtStepHook": "train(max_steps=...)",
                "LoggingTensorHook": "a keras.callbacks.Callback that logs in on_train_batch_end",
                "SummarySaverHook": "RunConfig(save_summary_steps=...) (summaries are written for you)",
                "NanTensorHook": "keras.callbacks.TerminateOnNaN",
                "ProfilerHook": "keras.callbacks.TensorBoard(profile_batch=...)",
            }.get(name, "a keras.callbacks.Callback")
            raise TypeError(
                f"{name} is a tf.compat.v1 SessionRunHook, which needs a Session; compat.estimator has "
                f"none. Use {replacement} instead (hooks accept Keras callbacks)"
            )
        raise TypeError(f"hooks must be Keras callbacks, got {hook!r}")
    return callbacks


# -- model folders written by TF 2.15 ------------------------------------------

_KERAS2_GLOBAL_STEP = "estimator_global_step/.ATTRIBUTES/VARIABLE_VALUE"
_KERAS2_LAYER = "layer_with_weights-{index}/{name}/.ATTRIBUTES/VARIABLE_VALUE"
_KERAS2_SLOT = "layer_with_weights-{index}/{name}/.OPTIMIZER_SLOT/optimizer/{slot}/.ATTRIBUTES/VARIABLE_VALUE"
# A Keras 2 optimizer slot and the Keras 3 optimizer variable that holds the same state.
_SLOTS_KERAS2_TO_KERAS3 = {"m": "momentum", "v": "velocity", "momentum": "momentum", "rms": "velocity",
                           "accumulator": "accumulator"}


def _restore_keras2_checkpoint(model: keras.Model, global_step: tf.Variable, path: str, stored: dict) -> None:
    """Loads a TF 2.15 model_to_estimator checkpoint (Keras 2's object names) into a Keras 3 model.

    Keras 2 named a model's weights by the order of the layers that have
    weights (`layer_with_weights-<i>/<weight>`), which is the order of
    `model.layers` in Keras 3 too; each weight is matched by its name, each
    optimizer slot (Adam's m and v, ...) to Keras 3's variable for it, and the
    global step carries on. A weight that does not line up is an error naming it.
    """
    layers = [layer for layer in model.layers if layer.weights]
    optimizer_variables = {variable.path.split("/")[-1]: variable for variable in model.optimizer.variables}
    slot_count = 0
    for index, layer in enumerate(layers):
        for weight in layer.weights:
            name = weight.path.split("/")[-1]
            key = _KERAS2_LAYER.format(index=index, name=name)
            if key not in stored:
                raise ValueError(f"{path} was written for another model: it has no '{key}' for the weight "
                                 f"'{weight.path}' of layer {index} ('{layer.name}'); build the same architecture "
                                 "as the program that wrote it")
            value = tf.train.load_variable(path, key)
            if tuple(value.shape) != tuple(weight.shape):
                raise ValueError(f"{path}: '{key}' has shape {value.shape} but the model's '{weight.path}' has "
                                 f"{tuple(weight.shape)}; build the same architecture as the program that wrote it")
            weight.assign(value)
            for slot, suffix in _SLOTS_KERAS2_TO_KERAS3.items():
                slot_key = _KERAS2_SLOT.format(index=index, name=name, slot=slot)
                target = optimizer_variables.get(f"{weight.path.replace('/', '_')}_{suffix}")
                if slot_key in stored and target is not None:
                    target.assign(tf.train.load_variable(path, slot_key))
                    slot_count += 1
    step = tf.train.load_variable(path, _KERAS2_GLOBAL_STEP)
    global_step.assign(step)
    model.optimizer.iterations.assign(step)
    logging.info("Restored %s, written by TensorFlow 2.15's model_to_estimator: %d layers' weights by layer order, "
                 "%d optimizer slots, global step %d", path, len(layers), slot_count, step)


# -- the engine -------------------------------------------------------------

_MAX_STEPS_PER_CALL = 1000  # bounds the time between two looks at a stop request
_STEPS_PER_CALL_WITH_TIMED_SAVES = 100


class KerasEstimator(Estimator):
    """A tf.estimator.Estimator backed by a compiled Keras model; made by `model_to_estimator`."""

    def __init__(self, keras_model: keras.Model, model_dir: str | None = None, config: RunConfig | None = None,
                 metric_names_map: dict | None = None):
        self._init_common(model_dir, config, params=None)
        self._model = keras_model
        self._metric_names_map = dict(metric_names_map or {})
        self._global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
        self._checkpoint = tf.train.Checkpoint(
            model=self._model, optimizer=self._model.optimizer, global_step=self._global_step
        )
        self._manager = tf.train.CheckpointManager(
            self._checkpoint, self.model_dir, max_to_keep=self._config.keep_checkpoint_max,
            keep_checkpoint_every_n_hours=self._config.keep_checkpoint_every_n_hours,
            checkpoint_name="model.ckpt",
        )
        self._restored_from: str | None = None
        self._evaluation_loop = tf.function(self._evaluate_all, reduce_retracing=True)
        self._metrics_built = False
        self._writers: dict[str, tf.summary.SummaryWriter] = {}
        if self.latest_checkpoint() is None:
            self._write_warm_start()

    # -- state --------------------------------------------------------------
    def _write_warm_start(self) -> None:
        """Saves the Keras model's current weights, all of them, as the warm-start copy.

        TF 2.15 warm-started trainable variables only, so batch-norm moving
        statistics restarted from zero; here the in-memory model keeps all.
        """
        keras_dir = os.path.join(self.model_dir, "keras")
        os.makedirs(keras_dir, exist_ok=True)
        tf.train.Checkpoint(model=self._model).write(os.path.join(keras_dir, "keras_model.ckpt"))

    def _restore(self, checkpoint_path: str | None = None) -> int:
        """Loads `checkpoint_path` (default: the latest) into the model; returns its step."""
        path = checkpoint_path or self.latest_checkpoint()
        if path is None:
            return int(self._global_step.numpy())
        if path != self._restored_from:
            stored = dict(tf.train.list_variables(path))
            if _KERAS2_GLOBAL_STEP in stored:
                _restore_keras2_checkpoint(self._model, self._global_step, path, stored)
            else:
                self._checkpoint.restore(path).assert_existing_objects_matched()
            self._restored_from = path
        return int(self._global_step.numpy())

    def _save(self, listeners: Sequence) -> bool:
        """Writes model.ckpt-<step>; returns True if a listener asks training to stop."""
        step = int(self._global_step.numpy())
        for listener in listeners:
            listener.before_save(None, step)
        path = self._manager.save(checkpoint_number=step)
        self._restored_from = path
        logging.info("Saving checkpoints for %d into %s.", step, path)
        # Every listener hears every save, even after one of them asked to stop.
        stops = [bool(listener.after_save(None, step)) for listener in listeners]
        return any(stops)

    # -- train --------------------------------------------------------------
    def train(self, input_fn: Callable, hooks=None, steps: int | None = None, max_steps: int | None = None,
              saving_listeners=None) -> "Estimator":
        """Trains from the latest checkpoint: `steps` more, or up to the absolute `max_steps`."""
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        callbacks = check_hooks(hooks)
        if self._config.tf_random_seed is not None:
            keras.utils.set_random_seed(self._config.tf_random_seed)
        start = self._restore()
        if max_steps is not None and start >= max_steps:
            logging.info("Skipping training since max_steps has already saved.")
            return self
        last = start + steps if steps is not None else max_steps
        listeners = list(saving_listeners or ())
        dataset = with_input_options(call_input_fn(input_fn, ModeKeys.TRAIN, self._config, self._params))
        self._build_metrics(dataset.element_spec)
        self._loop(iter(dataset), start, last, listeners, callbacks)
        return self

    def _writer(self, folder: str) -> tf.summary.SummaryWriter:
        """One summary writer (one events file) per folder for this Estimator, as TF 2.15's writer cache."""
        if folder not in self._writers:
            self._writers[folder] = tf.summary.create_file_writer(folder)
        return self._writers[folder]

    def _build_metrics(self, element_spec) -> None:
        """Checks the feature names and builds the compiled metrics' state on one batch of zeros.

        Keras builds metrics at their first update; inside a tf.function that
        creates variables, which makes TensorFlow trace the function twice.
        """
        if self._metrics_built:
            return
        features, labels = split_features_labels(element_spec)
        self.model_inputs(features)  # a missing input is named here, before any tracing
        zeros = lambda shape, dtype: tf.zeros([1 if d is None else d for d in shape], dtype)
        model = self._model
        inputs = {tensor.name: zeros(tensor.shape, tensor.dtype) for tensor in model.inputs}
        inputs = inputs if isinstance(features, dict) else [inputs[t.name] for t in model.inputs]
        if not isinstance(inputs, dict) and len(inputs) == 1:
            inputs = inputs[0]
        predictions = model(inputs, training=False)
        labels = tf.nest.map_structure(
            lambda label, prediction: zeros([1, *label.shape[1:]], label.dtype), labels,
            predictions if tf.nest.is_nested(labels) else labels)
        model.compute_metrics(inputs, labels, predictions, sample_weight=None)
        self._model.reset_metrics()
        self._metrics_built = True

    def _make_train_loop(self) -> Callable:
        """A compiled function: up to `n` training steps from `iterator`, with no host sync inside.

        Returns (steps done, the last step's loss). Fewer than `n` steps are done
        only when the input ends. As Keras' `steps_per_execution` and Orbit's
        `steps_per_loop`, many steps per call make the per-step cost that of the
        step itself: the Python loop runs once per checkpoint, summary or log
        boundary, not once per step.
        """
        model = self._model

        # As Keras' own fit: the step is traced as plain TF, without AutoGraph converting Keras'
        # code (which costs seconds of tracing); only this loop's control flow is converted.
        @tf.autograph.experimental.do_not_convert
        def one_step(element) -> tf.Tensor:
            features, labels = split_features_labels(element)
            model.reset_metrics()  # the loss of this step, not a running mean
            logs = model.train_step((self.model_inputs(features), labels))
            return tf.cast(logs["loss"], tf.float32)

        @tf.function
        def train_loop(iterator, n):
            done, loss = tf.constant(0, tf.int64), tf.constant(float("nan"))
            for _ in tf.range(n):
                element = iterator.get_next_as_optional()
                if not element.has_value():
                    break
                loss = one_step(element.get_value())
                done += 1
            self._global_step.assign_add(done)
            return done, loss

        return train_loop

    def _steps_to_next_boundary(self, step: int, last: int | None, per_step: bool) -> int:
        """Steps until the next checkpoint, summary, log or the last step: one call of the loop."""
        if per_step:
            return 1
        config = self._config
        limit = _MAX_STEPS_PER_CALL
        if config.save_checkpoints_secs:
            limit = _STEPS_PER_CALL_WITH_TIMED_SAVES  # a timed save is checked between calls
        for every in (config.save_checkpoints_steps, config.save_summary_steps, config.log_step_count_steps):
            if every:
                limit = min(limit, every - step % every)
        if last is not None:
            limit = min(limit, last - step)
        return max(limit, 1)

    def _loop(self, batches, start: int, last: int | None, listeners: Sequence, callbacks: Sequence) -> None:
        config = self._config
        writer = self._writer(self.model_dir)
        train_loop = self._train_loop = getattr(self, "_train_loop", None) or self._make_train_loop()
        for listener in listeners:
            listener.begin()
        # One train() call is one Keras "epoch": callbacks see begin/end, batches, and may stop it.
        self._model.stop_training = False
        for callback in callbacks:
            callback.set_model(self._model)
            callback.set_params({"epochs": 1, "steps": None if last is None else last - start, "verbose": 0})
            callback.on_train_begin()
            callback.on_epoch_begin(0)
        # The step-0 (or restored-step) save, as TF 2.15; none when checkpoints are off.
        stop = self._save(listeners) if config.saves_checkpoints else False
        saved_step, saved_time = start, time.monotonic()
        log_time, log_step = time.monotonic(), start
        step, loss, diverged = start, float("nan"), None
        while not stop and (last is None or step < last):
            wanted = self._steps_to_next_boundary(step, last, per_step=bool(callbacks))
            for callback in callbacks:
                callback.on_train_batch_begin(step)
            done, loss = (value.numpy() for value in train_loop(batches, tf.constant(wanted, tf.int64)))
            if done == 0:
                break  # the input ended
            step += int(done)
            loss = float(loss)
            for callback in callbacks:
                callback.on_train_batch_end(step, {"loss": loss})
            stop = stop or bool(self._model.stop_training)
            if not is_finite(loss):
                diverged = TrainingDiverged(step, loss, self.latest_checkpoint())
                break
            if config.save_summary_steps and step % config.save_summary_steps == 0:
                with writer.as_default(step=step):
                    tf.summary.scalar("loss", loss)
            if config.log_step_count_steps and step % config.log_step_count_steps == 0:
                now = time.monotonic()
                rate = (step - log_step) / max(now - log_time, 1e-9)
                logging.info("loss = %g, step = %d (global_step/sec: %g)", loss, step, rate)
                with writer.as_default(step=step):
                    tf.summary.scalar("global_step/sec", rate)
                log_time, log_step = now, step
            due = (config.save_checkpoints_steps and step - saved_step >= config.save_checkpoints_steps) or (
                config.save_checkpoints_secs and time.monotonic() - saved_time >= config.save_checkpoints_secs)
            if due:
                stop = self._save(listeners) or stop
                saved_step, saved_time = step, time.monotonic()
            if done < wanted:
                break  # the input ended within this call
        if diverged is None and step != saved_step and self._config.saves_checkpoints:
            self._save(listeners)  # the final checkpoint, before the listeners' end
        writer.flush()
        for callback in callbacks:
            callback.on_epoch_end(0, {"loss": loss} if step != start else {})
            callback.on_train_end()
        if diverged is not None:  # nothing of the diverged steps is saved, and nothing evaluated
            raise diverged
        for listener in listeners:
            listener.end(None, step)

    # -- evaluate, predict, export ------------------------------------------
    def evaluate(self, input_fn: Callable, steps: int | None = None, hooks=None,
                 checkpoint_path: str | None = None, name: str | None = None) -> dict:
        """Metrics of a checkpoint (default: the latest): the compiled metrics, `loss`, `global_step`."""
        check_hooks(hooks)
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if checkpoint_path is None and self.latest_checkpoint() is None:
            logging.info("Could not find trained model in model_dir: %s, running initialization to "
                         "evaluate.", self.model_dir)
        step = self._restore(checkpoint_path)
        dataset = call_input_fn(input_fn, ModeKeys.EVAL, self._config, self._params)
        if steps is not None:
            dataset = dataset.take(steps)
        self._build_metrics(dataset.element_spec)
        results = self._evaluate_batches(with_input_options(dataset))
        renames = self._metric_names_map
        metrics = {renames.get(key, key): float(value) for key, value in results.items()}
        metrics["global_step"] = step
        folder = os.path.join(self.model_dir, "eval" if not name else f"eval_{name}")
        writer = self._writer(folder)
        with writer.as_default(step=step):
            for key, value in metrics.items():
                if key != "global_step":
                    tf.summary.scalar(key, value)
        writer.flush()
        logging.info("Saving dict for global step %d: %s", step, metrics)
        return metrics

    def _evaluate_batches(self, dataset: tf.data.Dataset) -> dict:
        """The compiled metrics over all batches, and `loss` as the mean of per-batch losses.

        Keras' own evaluation loss is weighted by batch size; the Estimator's is the
        plain mean over batches, so each batch's loss is taken with Keras'
        `compute_loss`, while `compute_metrics` accumulates the compiled metrics.
        One compiled loop over the whole dataset: no host sync per batch.
        """
        self._model.reset_metrics()
        total, batches = (value.numpy() for value in self._evaluation_loop(dataset))
        if batches == 0:
            raise ValueError("the evaluation input_fn gave no batches")
        results = {k: float(v) for k, v in self._model.get_metrics_result().items()}
        return {**results, "loss": float(total / batches)}

    def _evaluate_all(self, dataset: tf.data.Dataset) -> tuple[tf.Tensor, tf.Tensor]:
        model = self._model

        @tf.autograph.experimental.do_not_convert  # plain TF: Keras' code is not converted
        def one_batch(element) -> tf.Tensor:
            features, labels = split_features_labels(element)
            inputs = self.model_inputs(features)
            predictions = model(inputs, training=False)
            loss = model.compute_loss(x=inputs, y=labels, y_pred=predictions, training=False)
            model.compute_metrics(inputs, labels, predictions, sample_weight=None)
            return tf.cast(loss, tf.float32)

        total, batches = tf.constant(0.0), tf.constant(0, tf.int64)
        for element in dataset:
            total += one_batch(element)
            batches += 1
        return total, batches

    def model_inputs(self, features: Any) -> Any:
        """The model's inputs, matched by name; extra feature keys are ignored, as tf.estimator did."""
        if not isinstance(features, dict):
            return features
        names = [tensor.name for tensor in self._model.inputs]
        missing = [name for name in names if name not in features]
        if missing:
            raise KeyError(f"the input_fn's features lack the model's input(s) {missing}; "
                           f"it gave {sorted(features)}. Name the feature keys after the model's inputs")
        return {name: features[name] for name in names}

    def predict(self, input_fn: Callable, predict_keys: Sequence[str] | None = None, hooks=None,
                checkpoint_path: str | None = None, yield_single_examples: bool = True):
        """Yields `{output_name: value}` per example (or per batch)."""
        check_hooks(hooks)
        self._restore(checkpoint_path)
        dataset = call_input_fn(input_fn, ModeKeys.PREDICT, self._config, self._params)
        names = self.output_names
        for element in dataset:
            features, _ = split_features_labels(element)
            outputs = self._model(self.model_inputs(features), training=False)
            outputs = dict(zip(names, tf.nest.flatten(outputs)))
            if predict_keys:
                outputs = {key: outputs[key] for key in predict_keys}
            outputs = {key: np.asarray(value) for key, value in outputs.items()}
            if not yield_single_examples:
                yield outputs
                continue
            for index in range(len(next(iter(outputs.values())))):
                yield {key: value[index] for key, value in outputs.items()}

    @property
    def output_names(self) -> list[str]:
        """A Keras model's outputs are named after their last layers."""
        return list(self._model.output_names)

    def export_saved_model(self, export_dir_base: str, serving_input_receiver_fn: Callable | None = None,
                           assets_extra: dict | None = None, as_text: bool = False,
                           checkpoint_path: str | None = None) -> bytes:
        """Writes `<export_dir_base>/<timestamp>` (built under a temporary name); returns that path."""
        if assets_extra or as_text:
            raise NotImplementedError("assets_extra and as_text are not supported")
        if serving_input_receiver_fn is not None:
            logging.info("serving_input_receiver_fn is not needed for a Keras model; the model's own "
                         "input signature is exported")
        self._restore(checkpoint_path)
        os.makedirs(export_dir_base, exist_ok=True)
        timestamp = int(time.time())
        while os.path.exists(os.path.join(export_dir_base, str(timestamp))):
            timestamp += 1
        final = os.path.join(export_dir_base, str(timestamp))
        atomic.publish_folder(final, lambda temp: self._model.export(temp, format="tf_saved_model", verbose=False))
        return final.encode()

    export_savedmodel = export_saved_model


def _compile_like(copy: keras.Model, original: keras.Model) -> None:
    """Compiles `copy` as `original` was, with an optimizer of its own.

    The serialized compile config covers registered losses and metrics; a lambda
    or unregistered function cannot be deserialized, so then the original
    objects are reused, as TF 2.15 did.
    """
    config = original.get_compile_config()
    try:
        copy.compile_from_config(config)
    except (TypeError, ValueError):
        # `model.loss` is the compile() argument itself; the rest of the config deserializes.
        arguments = {name: keras.saving.deserialize_keras_object(value) for name, value in config.items()
                     if name not in ("optimizer", "loss")}
        optimizer = original.optimizer
        copy.compile(optimizer=type(optimizer).from_config(optimizer.get_config()), loss=original.loss,
                     **arguments)


def model_to_estimator(keras_model: keras.Model | None = None, keras_model_path: str | None = None,
                       custom_objects: dict | None = None, model_dir: str | None = None,
                       config: RunConfig | None = None, checkpoint_format: str = "checkpoint",
                       metric_names_map: dict | None = None, export_outputs: dict | None = None) -> Estimator:
    """An Estimator that trains a copy of a compiled Keras model, as tf.keras.estimator did.

    With no checkpoint in `model_dir`, training starts from the Keras model's
    current weights (all of them); otherwise from the latest checkpoint.
    """
    if (keras_model is None) == (keras_model_path is None):
        raise ValueError("Exactly one of keras_model and keras_model_path must be given.")
    if keras_model_path is not None:
        keras_model = keras.models.load_model(keras_model_path, custom_objects=custom_objects)
    if getattr(keras_model, "optimizer", None) is None or not keras_model.compiled:
        raise ValueError("The given keras model has not been compiled yet. Please compile the model with "
                         "`model.compile()` before calling `model_to_estimator()`.")
    if checkpoint_format == "saver":
        raise NotImplementedError("checkpoint_format='saver' (name-based, graph-mode checkpoints) is not "
                                  "supported: use the default 'checkpoint' (object-based) format")
    if checkpoint_format != "checkpoint":
        raise ValueError(f"checkpoint_format must be 'checkpoint' or 'saver', got {checkpoint_format!r}")
    if export_outputs:
        raise NotImplementedError("export_outputs is not supported: the model's outputs are exported")
    # The architecture alone: clone_model would also rebuild the compile config, which fails
    # for a lambda loss; compilation is copied below.
    with keras.saving.custom_object_scope(custom_objects or {}):
        copy = type(keras_model).from_config(keras_model.get_config())
    copy.set_weights(keras_model.get_weights())  # all weights: batch-norm statistics included
    _compile_like(copy, keras_model)
    copy.optimizer.build(copy.trainable_variables)
    return KerasEstimator(copy, model_dir=model_dir, config=config, metric_names_map=metric_names_map)
