"""model_to_estimator and its engine: a compiled Keras 3 model trained eagerly, on tf.estimator's schedule.

TensorFlow 2.15's Estimator is the reference. The engine runs Keras' own
`train_step` many steps per compiled call, between the checkpoint, summary and
logging boundaries the RunConfig sets, so that those happen exactly on the
Estimator's schedule with no host sync in between:

  <model_dir>/model.ckpt-<step>.{index,data-*}, checkpoint   at most keep_checkpoint_max
  <model_dir>/events.out.tfevents.*                           loss, global_step/sec
  <model_dir>/eval[_<name>]/events.out.tfevents.*             metrics, checkpoint_path
  <model_dir>/keras/keras_model.ckpt.*                        the warm-start weights

Checkpoint keys are TF 2.15's (`layer_with_weights-<i>/<weight>/...`, see
keras_checkpoint.py), so folders written by TF 2.15's model_to_estimator
restore and train on. Hooks may be Keras callbacks or SessionRunHooks that read
the global step and the loss (session_hooks.py).
"""

from __future__ import annotations

import contextlib
import copy as copy_lib
import dataclasses
import os
import random
import re
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from compat.core import atomic, strategies, summaries
from compat.core.checkpoints import restore_newest_readable
from compat.core.divergence import TrainingDiverged, is_finite
from compat.estimator import keras_checkpoint, keras_export, keras_legacy
from compat.estimator.base import (
    EstimatorBase,
    check_checkpoint_exists,
    check_train_steps,
    extract_keys,
    per_example,
    timestamped_dir,
    write_checkpoint_path_to_summary,
    write_dict_to_summary,
)
from compat.estimator.estimator import Estimator
from compat.estimator.export import export as export_lib
from compat.estimator.input_fns import (
    call_input_fn,
    input_fn_kwargs,
    input_fn_name,
    split_features_labels,
    with_input_options,
)
from compat.estimator.model_fn import ModeKeys
from compat.estimator.run_config import RunConfig, TaskType
from compat.estimator.session_hooks import HookRunner

_MAX_STEPS_PER_CALL = 1000  # bounds the time between two looks at a stop request
_STEPS_PER_CALL_WITH_TIMED_SAVES = 100
_FEATURES_AND_WEIGHTS = {"features", "sample_weights"}


class FormattedKeyError(KeyError):
    """A KeyError whose message keeps its line breaks (Python's KeyError shows its argument's repr)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def _check_covers(tensors: dict, names: list[str], what: str, kind: str) -> None:
    """TF 2.15's error, its lines as they were, when the dict `tensors` lacks one of the model's `names`."""
    missing = set(names) - set(tensors)
    if missing:
        raise FormattedKeyError(
            f"The dictionary passed into {what} does not cover requested {kind} keys defined in the keras model."
            f"\n\tExpected keys: {set(names)}\n\t{what} keys: {set(tensors)}\n\tMissed keys: {missing}"
            f"\n\tName the input_fn's {what} keys after the model's {kind} layers."
        )


_KERAS_3_INPUT_NAME = re.compile(r"input_layer(?:_(\d+))?")
_KERAS_2_INPUT_NAME = re.compile(r"input_\d+")


def _keras_2_input_names(model: keras.Model, name: str) -> list[str]:
    """The names Keras 2 gave the input Keras 3 named `name`, when Keras named it: a TF 2.15 input_fn keys
    its features by them. A functional model's `Input()` was `input_1`, `input_2`, ... (Keras 3:
    `input_layer`, `input_layer_1`, ...); a Sequential model's input made from its first layer's
    `input_shape` was `<first layer>_input`. Both counted per process, so the number is a guess."""
    match = _KERAS_3_INPUT_NAME.fullmatch(name)
    if match is None:
        return []
    names = [f"input_{int(match.group(1) or 0) + 1}"]
    if isinstance(model, keras.Sequential) and model.layers:
        names.insert(0, f"{model.layers[0].name}_input")
    return names


def _feature_key(model: keras.Model, name: str, features: dict) -> str:
    """The key of `features` that feeds the model's input `name`: the name, else its Keras 2 name; for a model
    of one unnamed input, any one key Keras 2 could have named it (its number depended on the process)."""
    if name in features:
        return name
    for old_name in _keras_2_input_names(model, name):
        if old_name in features:
            return old_name
    guesses = [key for key in features if _KERAS_2_INPUT_NAME.fullmatch(str(key))]
    if len(model.inputs) == 1 and _keras_2_input_names(model, name) and len(guesses) == 1:
        return guesses[0]
    return name


def _input_structure(model: keras.Model) -> Any:
    """What the model is called with: a dict, list or one tensor (a Sequential model's one input)."""
    try:
        return model.input
    except AttributeError:  # Keras 3's Sequential model, built from its Input, has `inputs` but no `input`
        return model.inputs[0]


def split_hooks(hooks: Iterable | None) -> tuple[list[keras.callbacks.Callback], list]:
    """(Keras callbacks, SessionRunHooks); anything else is refused, naming it."""
    callbacks, session_hooks = [], []
    for hook in hooks or ():
        if isinstance(hook, keras.callbacks.Callback):
            callbacks.append(hook)
        elif isinstance(hook, tf.compat.v1.train.SessionRunHook):
            session_hooks.append(hook)
        else:
            raise TypeError(f"hooks must be Keras callbacks or SessionRunHooks, given: {hook!r}")
    return callbacks, session_hooks


@contextlib.contextmanager
def _seeded_python_random(seed: int | None):
    """Python's `random` seeded for a moment (Keras draws layers' default seeds from it), then put back."""
    if seed is None:
        yield
        return
    state = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(state)


class KerasEstimator(EstimatorBase):
    """A tf.estimator.Estimator backed by a compiled Keras model; made by `model_to_estimator`.

    The graph engine's sibling (base.py), registered as an `Estimator` below.
    """

    def __init__(
        self,
        keras_model: keras.Model,
        model_dir: str | None = None,
        config: RunConfig | None = None,
        metric_names_map: dict | None = None,
        export_outputs: dict | None = None,
        evaluation_model: keras.Model | None = None,
        strategy: tf.distribute.Strategy | None = None,
    ):
        self._init_base(model_dir, config, params=None)
        # `strategy`: one RunConfig does not carry, as TF 2.15's refused ParameterServerStrategy there.
        self._strategy = strategy or self._config.train_distribute
        # Under a ParameterServerStrategy this process coordinates: the steps run on the workers, sent
        # there as closures, and the variables (the step counters too) live on the ps tasks.
        parameter_server = strategies.is_parameter_server(self._strategy)
        self._coordinator = (
            tf.distribute.experimental.coordinator.ClusterCoordinator(self._strategy) if parameter_server else None
        )
        # Training steps the strategy's copy. Evaluation, prediction and export read a copy of its
        # own when the strategy spans workers: the metrics of a multi-worker copy are summed
        # across the workers at every read, which needs every worker alive and evaluating too
        # (TF 2.15 evaluated without the training strategy as well).
        self._keras_model = keras_model
        self._model = evaluation_model or keras_model
        self._metric_names_map = dict(metric_names_map or {})
        self._export_outputs = dict(export_outputs or {})
        with self._strategy.scope() if parameter_server else contextlib.nullcontext():
            self._global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
            self._last_loss = tf.Variable(float("nan"), trainable=False, name="last_loss")
            self._examples = tf.Variable(0, dtype=tf.int64, trainable=False, name="examples")  # all replicas
        # The chief writes the model folder; another worker of a cluster saves where TF 2.15 put it,
        # <model_dir>/tmp_worker_<i>, since saving takes part in its replicas' synchronisation.
        # (an evaluator's RunConfig says is_chief under a strategy, as TF 2.15's did; it writes no checkpoint)
        writes = self._config.is_chief and self._config.task_type != TaskType.EVALUATOR
        checkpoint_dir = (
            self.model_dir if writes else os.path.join(self.model_dir, f"tmp_worker_{self._config.task_id}")
        )
        self._manager = tf.train.CheckpointManager(
            keras_checkpoint.checkpoint_root(self._keras_model, self._global_step),
            checkpoint_dir,
            max_to_keep=self._config.keep_checkpoint_max if writes else 1,
            keep_checkpoint_every_n_hours=self._config.keep_checkpoint_every_n_hours,
            checkpoint_name="model.ckpt",
        )
        self._restored_from: dict[int, str] = {}  # id(model) -> the checkpoint it holds
        self._evaluation_loop = tf.function(self._evaluate_all, reduce_retracing=True)
        self._train_loop: Callable | None = None
        self._metrics_built: set[int] = set()  # id(model)s
        self._writers: dict[str, tf.summary.SummaryWriter] = {}
        if self.latest_checkpoint() is None and writes:
            self._write_warm_start()

    @property
    def strategy(self) -> tf.distribute.Strategy | None:
        """The strategy training runs under (a ParameterServerStrategy's chief coordinates the workers)."""
        return self._strategy

    @property
    def model_fn(self) -> Callable:
        def model_fn(features, labels, mode, config):
            raise NotImplementedError(
                "model_to_estimator's Estimator trains the Keras model eagerly: it has no "
                "graph model_fn to call. Call the Keras model, or train/evaluate/predict"
            )

        return model_fn

    # -- state --------------------------------------------------------------
    def _write_warm_start(self) -> None:
        """Saves the Keras model's current weights, all of them, as the warm-start copy.

        TF 2.15 warm-started trainable variables only, so batch-norm moving
        statistics restarted from zero; here the in-memory model keeps all.
        """
        keras_dir = os.path.join(self.model_dir, "keras")
        tf.io.gfile.makedirs(keras_dir)
        keras_checkpoint.write_weights(
            self._keras_model, self._global_step, os.path.join(keras_dir, "keras_model.ckpt")
        )

    def _restore(self, checkpoint_path: str | None = None, model: keras.Model | None = None) -> int:
        """Loads `checkpoint_path` (default: the latest) into `model` (default: the evaluation copy);
        returns its step."""
        model = model or self._model
        path = checkpoint_path or self.latest_checkpoint()
        if path is None:
            if model is not self._keras_model and self._restored_from.get(id(model)) is None:
                model.set_weights(self._keras_model.get_weights())  # the starting weights
                self._restored_from[id(model)] = ""
            return int(self._global_step.numpy())
        if path != self._restored_from.get(id(model)):
            # The newest checkpoint may be unreadable (truncated, a shard missing): fall back past it.
            state = tf.train.get_checkpoint_state(self.model_dir)  # the chief's, on every task
            saved = list(reversed(state.all_model_checkpoint_paths)) if state else []
            candidates = saved if saved and path == saved[0] else [path]
            path = restore_newest_readable(candidates, lambda p: keras_checkpoint.restore(model, self._global_step, p))
            assert path is not None  # candidates is never empty
            self._restored_from[id(model)] = path
        return int(self._global_step.numpy())

    def _save(self, listeners: Sequence) -> bool:
        """Writes model.ckpt-<step>; returns True if a listener asks training to stop."""
        step = int(self._global_step.numpy())
        for listener in listeners:
            listener.before_save(None, step)
        path = self._manager.save(checkpoint_number=step)
        self._restored_from[id(self._keras_model)] = path
        tf.compat.v1.logging.info("Saving checkpoints for %d into %s.", step, path)
        # Every listener hears every save, even after one of them asked to stop.
        stops = [bool(listener.after_save(None, step)) for listener in listeners]
        return any(stops)

    def _writer(self, folder: str) -> tf.summary.SummaryWriter:
        """One summary writer (one events file) per folder for this Estimator, as TF 2.15's writer cache."""
        if folder not in self._writers:
            self._writers[folder] = tf.summary.create_file_writer(folder)
        return self._writers[folder]

    # -- features --------------------------------------------------------------
    def model_inputs(self, features: Any) -> Any:
        """The model's inputs, matched by name; extra feature keys are ignored, as tf.estimator did."""
        if not isinstance(features, dict):
            return features
        names = [tensor.name for tensor in self._model.inputs]
        keys = [_feature_key(self._model, name, features) for name in names]
        _check_covers(features, keys, "features", "input")
        if len(names) == 1 and not isinstance(_input_structure(self._model), dict):
            return features[keys[0]]  # the model takes one tensor, not a dict
        return {name: features[key] for name, key in zip(names, keys)}

    def model_targets(self, labels: Any) -> Any:
        """Labels as Keras takes them: a dict keyed by output name becomes the outputs' list, in order."""
        if not isinstance(labels, dict):
            return labels
        names = self.output_names
        _check_covers(labels, names, "labels", "output")
        return labels[names[0]] if len(names) == 1 else [labels[name] for name in names]

    def _inputs_and_weights(self, features: Any) -> tuple[Any, Any]:
        """(model inputs, sample weights): `{'features': ..., 'sample_weights': ...}` carries weights."""
        if isinstance(features, dict) and set(features) == _FEATURES_AND_WEIGHTS:
            return self.model_inputs(features["features"]), features["sample_weights"]
        return self.model_inputs(features), None

    def _build_metrics(self, element_spec, model: keras.Model | None = None) -> None:
        """Checks the feature names and builds `model`'s (default: the evaluation copy's) compiled
        metrics' state on one batch of zeros.

        Keras builds metrics at their first update; inside a tf.function that
        creates variables, which makes TensorFlow trace the function twice.
        """
        model = model or self._model
        features, labels = split_features_labels(element_spec)
        self._inputs_and_weights(features)  # a missing input or output key is named before any tracing
        self.model_targets(labels)
        if id(model) in self._metrics_built:
            return
        distributed = self._strategy is not None and model is self._keras_model
        with self._strategy.scope() if distributed else contextlib.nullcontext():
            self._build_metrics_now(element_spec, model)
        self._metrics_built.add(id(model))

    def _build_metrics_now(self, element_spec, model: keras.Model) -> None:
        features, labels = split_features_labels(element_spec)

        def zeros(shape, dtype):
            return tf.zeros([1 if d is None else d for d in shape], dtype)

        inputs = {tensor.name: zeros(tensor.shape, tensor.dtype) for tensor in model.inputs}
        if len(model.inputs) == 1 and not isinstance(_input_structure(model), dict):
            inputs = next(iter(inputs.values()))
        predictions = model(inputs, training=False)
        labels = self.model_targets(tf.nest.map_structure(lambda spec: zeros([1, *spec.shape[1:]], spec.dtype), labels))
        model.compute_metrics(inputs, labels, predictions, sample_weight=None)
        model.reset_metrics()

    # -- train --------------------------------------------------------------
    def train(
        self,
        input_fn: Callable,
        hooks=None,
        steps: int | None = None,
        max_steps: int | None = None,
        saving_listeners=None,
    ) -> KerasEstimator:
        """Trains from the latest checkpoint: `steps` more, or up to the absolute `max_steps`."""
        check_train_steps(steps, max_steps)
        callbacks, session_hooks = split_hooks(hooks)
        if self._config.tf_random_seed is not None:
            tf.random.set_seed(self._config.tf_random_seed)  # as TF 2.15's graph seed; Python and NumPy untouched
        start = self._restore(model=self._keras_model)
        if max_steps is not None and start >= max_steps:
            tf.compat.v1.logging.info("Skipping training since max_steps has already saved.")
            return self
        last = start + steps if steps is not None else max_steps
        listeners = list(saving_listeners or ())
        runner = HookRunner(session_hooks) if session_hooks else None
        batches = self._training_batches(input_fn)
        try:
            self._loop(batches, start, last, listeners, callbacks, runner)
        except (
            tf.errors.UnavailableError,
            tf.errors.DeadlineExceededError,
            tf.errors.AbortedError,
            tf.errors.CancelledError,
        ) as error:
            if not (strategies.is_multi_worker(self._strategy) or self._coordinator is not None):
                raise
            try:
                stopped = f"training stopped after step {int(self._global_step.numpy())}"
            except tf.errors.OpError:  # the step lives on the lost ps task
                stopped = "training stopped"
            raise RuntimeError(
                f"A task of the cluster stopped or cannot be reached ({type(error).__name__}); {stopped}. The "
                f"chief's last checkpoint is {self.latest_checkpoint()}: start every task again with the same "
                "command to resume from it"
            ) from error
        finally:
            self._input_cache.publish()
        return self

    def _training_batches(self, input_fn: Callable):
        """An iterator over the training input; under a strategy, one per-replica batch per replica."""

        def dataset(input_context=None) -> tf.data.Dataset:
            made = call_input_fn(input_fn, ModeKeys.TRAIN, self._config, self._params, input_context=input_context)
            made = with_input_options(self._input_cache.wrap(made, input_fn_name(input_fn), ModeKeys.TRAIN))
            self._build_metrics(made.element_spec, self._keras_model)
            return made

        if self._strategy is None:
            return iter(strategies.prefetch_to_accelerator(dataset()))
        if self._coordinator is not None:
            return self._per_worker_batches(input_fn)
        if "input_context" in input_fn_kwargs(input_fn, input_context=None):  # it shards and sizes its batch
            return iter(self._strategy.distribute_datasets_from_function(dataset))
        return iter(self._strategy.experimental_distribute_dataset(dataset()))

    def _per_worker_batches(self, input_fn: Callable):
        """One iterator per worker over the input_fn's dataset, made on each worker from its traced graph.

        The input cache is left out: it publishes what a pass wrote from this process, and the passes run on
        the workers. Python inside the pipeline (`py_function`) cannot run there either.
        """

        # The input_fn runs as plain Python building a graph, as in TF 2.15: AutoGraph would convert its code.
        @tf.autograph.experimental.do_not_convert
        def per_worker() -> tf.data.Dataset:
            return with_input_options(call_input_fn(input_fn, ModeKeys.TRAIN, self._config, self._params))

        self._build_metrics(per_worker().element_spec, self._keras_model)  # here, not in the traced function
        assert self._coordinator is not None
        return iter(self._coordinator.create_per_worker_dataset(per_worker))

    def _run_steps(self, train_loop: Callable, batches, step: int, steps: int) -> None:
        """`steps` training steps after `step`: one call of the compiled loop, or under a
        ParameterServerStrategy as closures shared among the workers (two per worker, so that none waits
        on the slowest), all done when this returns."""
        if self._coordinator is None:
            train_loop(batches, tf.constant(steps, tf.int64))
            return
        last = tf.constant(step + steps, tf.int64)
        workers = len(self._config.cluster_spec.as_dict().get(TaskType.WORKER, ()))
        closures = min(steps, 2 * max(1, workers))
        for index in range(closures):
            share = steps // closures + (1 if index < steps % closures else 0)
            self._coordinator.schedule(train_loop, args=(batches, tf.constant(share, tf.int64), last))
        self._coordinator.join()

    def _make_train_loop(self) -> Callable:
        """A compiled function: up to `n` training steps from `iterator`, with no host sync inside.

        Advances the global step and records the last step's loss; an input that
        ends raises OutOfRangeError after the steps it fed. As Keras' `steps_per_execution` and Orbit's
        `steps_per_loop`, many steps per call make the per-step cost that of the
        step itself: the Python loop runs once per checkpoint, summary or log
        boundary, not once per step.
        """
        # As Keras' own fit: the step is traced as plain TF, without AutoGraph converting Keras'
        # code (which costs seconds of tracing); only this loop's control flow is converted.
        one_step = tf.autograph.experimental.do_not_convert(self._train_one_step)
        strategy = self._strategy
        if self._coordinator is not None:
            return self._make_coordinated_train_loop(one_step)

        @tf.function
        def train_loop(iterator, n):
            # The step count and loss live in variables, so that steps done before the input
            # ends (an OutOfRangeError out of this call) are counted.
            for _ in tf.range(n):
                element = next(iterator)
                if strategy is None:
                    loss, examples = one_step(element)
                else:
                    loss, examples = strategy.run(one_step, args=(element,))
                    loss = strategy.reduce("MEAN", loss, axis=None)
                    examples = strategy.reduce("SUM", examples, axis=None)
                self._last_loss.assign(loss)
                self._examples.assign_add(examples)
                self._global_step.assign_add(1)

        return train_loop

    def _train_one_step(self, element) -> tuple[tf.Tensor, tf.Tensor]:
        """One step of Keras' own `train_step`: (its loss, the examples it trained on)."""
        model = self._keras_model
        features, labels = split_features_labels(element)
        inputs, weights = self._inputs_and_weights(features)
        labels = self.model_targets(labels)
        model.reset_metrics()  # the loss and metrics of this step, not running means
        logs = model.train_step((inputs, labels) if weights is None else (inputs, labels, weights))
        return tf.cast(logs["loss"], tf.float32), tf.shape(tf.nest.flatten(labels)[0], out_type=tf.int64)[0]

    def _make_coordinated_train_loop(self, one_step: Callable) -> Callable:
        """The closure a ParameterServerStrategy's worker runs: up to `n` steps, none past step `last`.

        The coordinator runs a closure again, whole, when its worker fails, so each step first claims
        its number on the shared step: a rerun goes on from where the step count is, and every step is
        counted once, whichever worker ran it.
        """
        strategy = self._strategy

        @tf.function
        def train_loop(iterator, n, last):
            for _ in tf.range(n):
                element = next(iterator)
                if self._global_step.assign_add(1) > last:
                    self._global_step.assign_sub(1)
                    break
                loss, examples = strategy.run(one_step, args=(element,))  # one replica per worker
                self._last_loss.assign(loss)
                self._examples.assign_add(examples)

        return train_loop

    def _write_training_summaries(self, writer: tf.summary.SummaryWriter, step: int, loss: float) -> None:
        """`loss` (TF 2.15's one training tag), then the compiled metrics of the same step (not across
        workers) and the learning rate: the tags `--mode=keras` writes, so the two overlay in TensorBoard."""
        model = self._keras_model
        # Reading a metric under MultiWorkerMirroredStrategy is a collective that only this (the chief's)
        # loop would join: the other tasks' metrics are left out of the summaries there.
        local_metrics = not isinstance(self._strategy, tf.distribute.MultiWorkerMirroredStrategy)
        compiled = model.get_metrics_result() if local_metrics else {}
        metrics = {"loss": loss, **{name: value for name, value in compiled.items() if name != "loss"}}
        summaries.write_training_scalars(writer, step, metrics, summaries.learning_rate_value(model.optimizer))

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

    def _loop(
        self, batches, start: int, last: int | None, listeners: Sequence, callbacks: Sequence, runner: HookRunner | None
    ) -> None:
        config = self._config
        writer = self._writer(self.model_dir) if config.is_chief else None  # only the chief writes summaries
        train_loop = self._train_loop = self._train_loop or self._make_train_loop()
        self._begin(listeners, callbacks, start, last)
        # The step-0 (or restored-step) save, as TF 2.15; none when checkpoints are off.
        stop = self._save(listeners) if config.saves_checkpoints else False
        if runner is not None:
            runner.after_create_session(start)
        saves = _SaveSchedule(config.save_checkpoints_steps, config.save_checkpoints_secs, start)
        progress = _ProgressLog(
            config.log_step_count_steps, last, start, lambda: int(self._examples.numpy()), writer, config.is_chief
        )
        step, loss, diverged = start, float("nan"), None
        while not stop and (last is None or step < last):
            wanted = self._steps_to_next_boundary(step, last, per_step=bool(callbacks) or runner is not None)
            for callback in callbacks:
                callback.on_train_batch_begin(step)
            if runner is not None:
                runner.before_step(step)
            ended = False
            try:
                self._run_steps(train_loop, batches, step, wanted)
            except tf.errors.OutOfRangeError:
                ended = True
            done = int(self._global_step.numpy()) - step
            if done == 0:
                break  # the input ended
            step += done
            loss = float(self._last_loss.numpy())
            stop = self._observe_steps(step, loss, callbacks, runner) or stop
            if not is_finite(loss):
                diverged = TrainingDiverged(step, loss, self.latest_checkpoint())
                break
            if config.is_chief and config.save_summary_steps and step % config.save_summary_steps == 0:
                self._write_training_summaries(writer, step, loss)
            progress.after(step, loss)
            if saves.due(step):
                stop = self._save(listeners) or stop
                saves.saved(step)
            if ended:
                break  # the input ended within this call
        if diverged is None and step != saves.saved_step and self._config.saves_checkpoints:
            self._save(listeners)  # the final checkpoint, before the listeners' end
        if writer is not None:
            writer.flush()
        self._end(listeners, callbacks, runner, start, step, loss, diverged)

    def _begin(self, listeners: Sequence, callbacks: Sequence, start: int, last: int | None) -> None:
        """Starts the observers of one train() call: listeners begin; Keras callbacks see one "epoch"."""
        for listener in listeners:
            listener.begin()
        self._keras_model.stop_training = False
        for callback in callbacks:
            callback.set_model(self._keras_model)
            callback.set_params({"epochs": 1, "steps": None if last is None else last - start, "verbose": 0})
            callback.on_train_begin()
            callback.on_epoch_begin(0)

    def _observe_steps(self, step: int, loss: float, callbacks: Sequence, runner: HookRunner | None) -> bool:
        """Tells the callbacks and hooks that the steps up to `step` ran; whether one of them asks to stop."""
        for callback in callbacks:
            callback.on_train_batch_end(step, {"loss": loss})
        stop = runner.after_step(loss) if runner is not None else False
        return bool(stop) or bool(self._keras_model.stop_training)

    def _end(
        self,
        listeners: Sequence,
        callbacks: Sequence,
        runner: HookRunner | None,
        start: int,
        step: int,
        loss: float,
        diverged: TrainingDiverged | None,
    ) -> None:
        """Ends the observers of one train() call, in TF 2.15's order; raises `diverged` before the hooks' and
        listeners' end, so that nothing of the diverged steps is saved or evaluated."""
        for callback in callbacks:
            callback.on_epoch_end(0, {"loss": loss} if step != start else {})
            callback.on_train_end()
        if diverged is not None:
            raise diverged
        if runner is not None:
            runner.end()
        for listener in listeners:
            listener.end(None, step)

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
        renames = self._metric_names_map
        metrics: dict[str, Any] = {renames.get(key, key): np.float32(value) for key, value in results.items()}
        metrics["global_step"] = np.int64(step)
        # the graph engine's writer: the same events as TF 2.15's (simple values, checkpoint_path)
        write_dict_to_summary(self.eval_dir(name), metrics, step)
        if checkpoint_path is not None:
            write_checkpoint_path_to_summary(self.eval_dir(name), checkpoint_path, step)
        return metrics

    def _metric_results(self, loss: float) -> dict:
        """The compiled metrics' results and `loss`; per-output losses left out, as TF 2.15."""
        per_output_losses = {f"{output}_loss" for output in self.output_names}
        results = {
            key: float(value) for key, value in self._model.get_metrics_result().items() if key not in per_output_losses
        }
        return {**results, "loss": loss}

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
        return self._metric_results(float(total / batches))

    def _evaluate_one_batch(self, element) -> tf.Tensor:
        model = self._model
        features, labels = split_features_labels(element)
        inputs, weights = self._inputs_and_weights(features)
        labels = self.model_targets(labels)
        predictions = model(inputs, training=False)
        loss = model.compute_loss(x=inputs, y=labels, y_pred=predictions, sample_weight=weights, training=False)
        model.compute_metrics(inputs, labels, predictions, sample_weight=weights)
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
        runner = HookRunner(session_hooks) if session_hooks else None
        self._model.reset_metrics()
        for callback in callbacks:
            callback.set_model(self._model)
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

    # -- predict, export ----------------------------------------------------
    def trained_keras_model(self, checkpoint_path: str | None = None) -> keras.Model:
        """A new copy of the Keras model, compiled as it was, with the weights of `checkpoint_path` (default:
        the newest checkpoint): the model this Estimator trained, for Keras from here on (`to_keras`)."""
        self._restore(checkpoint_path)
        return _ModelRecipe.of(self._model).build(contextlib.nullcontext())

    def predict(
        self,
        input_fn: Callable,
        predict_keys: Sequence[str] | None = None,
        hooks=None,
        checkpoint_path: str | None = None,
        yield_single_examples: bool = True,
    ):
        """Yields `{output_name: value}` per example (or per batch).

        `predict_keys` keeps the outputs it names that exist, as TF 2.15 (an
        error when none does). Keras callbacks get their predict calls.
        """
        callbacks, session_hooks = split_hooks(hooks)
        if session_hooks:
            raise TypeError(
                "SessionRunHooks are not run by a model_to_estimator Estimator's predict(); use a Keras "
                "callback (on_predict_batch_end) instead"
            )
        if checkpoint_path:
            check_checkpoint_exists(checkpoint_path)
        self._restore(checkpoint_path)
        names = self.output_names
        kept = list(extract_keys(dict.fromkeys(names), predict_keys))  # refuses keys that name no output
        dataset = call_input_fn(input_fn, ModeKeys.PREDICT, self._config, self._params)
        for callback in callbacks:
            callback.set_model(self._model)
            callback.on_predict_begin()
        for batch, element in enumerate(dataset):
            for callback in callbacks:
                callback.on_predict_batch_begin(batch)
            features, _ = split_features_labels(element)
            inputs, _ = self._inputs_and_weights(features)
            outputs = dict(zip(names, tf.nest.flatten(self._model(inputs, training=False))))
            outputs = {key: np.asarray(outputs[key]) for key in kept}
            for callback in callbacks:
                callback.on_predict_batch_end(batch, {"outputs": outputs})
            if not yield_single_examples:
                yield outputs
                continue
            yield from per_example(outputs)
        for callback in callbacks:
            callback.on_predict_end()

    @property
    def output_names(self) -> list[str]:
        """A Keras model's outputs are named after their last layers (a Sequential model's, after its last)."""
        names = getattr(self._model, "output_names", None)  # Keras 3's Sequential model has none
        return list(names) if names else [self._model.layers[-1].name]

    def export_saved_model(
        self,
        export_dir_base: str,
        serving_input_receiver_fn: Callable | None = None,
        assets_extra: dict | None = None,
        as_text: bool = False,
        checkpoint_path: str | None = None,
    ) -> bytes:
        """Writes `<export_dir_base>/<timestamp>` (built under a temporary name); returns that path.

        The SavedModel takes what the receiver describes (see keras_export.py);
        with no receiver, the model's own inputs.
        """
        self._restore(checkpoint_path)
        final = timestamped_dir(export_dir_base)

        def build(folder: str) -> None:
            keras_export.save_with_receiver(
                self._model,
                folder,
                serving_input_receiver_fn,
                self.model_inputs,
                self.output_names,
                self._export_outputs,
            )
            export_lib.write_assets_extra(folder, assets_extra)
            if as_text:
                export_lib.rewrite_as_text(folder)

        atomic.publish_folder(final, build)
        tf.compat.v1.logging.info("SavedModel written to: %s", final)
        return final.encode()

    export_savedmodel = export_saved_model

    def experimental_export_all_saved_models(self, export_dir_base: str, input_receiver_fn_map: dict, **_) -> bytes:
        """Refused: the Keras engine has no training or evaluation graph to export."""
        raise ValueError(
            "model_to_estimator's Estimator exports its Keras model for serving only: use "
            "export_saved_model(export_dir_base, serving_input_receiver_fn); the train and eval graphs of "
            "experimental_export_all_saved_models need a model_fn Estimator"
        )


class _SaveSchedule:
    """When the training loop saves: every `steps` steps or `secs` seconds since the last save."""

    def __init__(self, steps: int | None, secs: float | None, step: int) -> None:
        self._steps, self._secs = steps, secs
        self.saved(step)

    def saved(self, step: int) -> None:
        self.saved_step, self._saved_time = step, time.monotonic()

    def due(self, step: int) -> bool:
        return bool(
            (self._steps and step - self.saved_step >= self._steps)
            or (self._secs and time.monotonic() - self._saved_time >= self._secs)
        )


class _ProgressLog:
    """Every `every` steps: TF 2.15's `loss = ..., step = ...` line, a progress line a terminal user can
    read (where, how fast, how long), and, on the chief, the rates in TensorBoard."""

    def __init__(
        self,
        every: int | None,
        last: int | None,
        step: int,
        examples: Callable[[], int],
        writer: tf.summary.SummaryWriter | None,
        is_chief: bool,
    ) -> None:
        self._every, self._last, self._examples, self._writer, self._is_chief = every, last, examples, writer, is_chief
        self._time, self._step, self._examples_then = time.monotonic(), step, examples()

    def after(self, step: int, loss: float) -> None:
        if not self._every or step % self._every:
            return
        now = time.monotonic()
        rate = (step - self._step) / max(now - self._time, 1e-9)
        examples = self._examples()
        examples_rate = (examples - self._examples_then) / max(now - self._time, 1e-9)
        tf.compat.v1.logging.info("loss = %g, step = %d (global_step/sec: %g)", loss, step, rate)
        if self._last is not None:
            tf.compat.v1.logging.info(
                "step %d of %d (%.0f%%), %.0f examples/s, about %s left",
                step,
                self._last,
                100 * step / max(self._last, 1),
                examples_rate,
                _duration((self._last - step) / max(rate, 1e-9)),
            )
        if self._is_chief:
            summaries.write_training_scalars(
                self._writer, step, steps_per_second=rate, examples_per_second=examples_rate
            )
        self._time, self._step, self._examples_then = now, step, examples


@dataclasses.dataclass(frozen=True)
class _ModelRecipe:
    """A compiled Keras model as plain Python and NumPy, from which model_to_estimator builds its copies.

    Nothing in it is a TensorFlow object, so it outlives this process's connection to a
    parameter-server cluster, after which the given model's own variables cannot be read.
    """

    model_class: type[keras.Model]
    config: dict
    weights: list  # all of them: batch-norm statistics included
    compile_config: dict
    loss: Any  # the compile() argument itself: a lambda or an unregistered function does not deserialize
    optimizer_class: type[keras.optimizers.Optimizer]
    optimizer_config: dict

    @classmethod
    def of(cls, model: keras.Model) -> _ModelRecipe:
        optimizer = model.optimizer
        return cls(
            type(model),
            model.get_config(),
            model.get_weights(),
            model.get_compile_config(),
            model.loss,
            type(optimizer),
            optimizer.get_config(),
        )

    def build(self, scope: contextlib.AbstractContextManager) -> keras.Model:
        """A copy made in `scope` (a strategy's, where its variables go), compiled as the model was, with an
        optimizer of its own."""
        with scope:
            # Deserializing empties or changes the configs given: each copy gets its own.
            copy = self.model_class.from_config(copy_lib.deepcopy(self.config))
            copy.set_weights(self.weights)
            self._compile(copy)
            copy.optimizer.build(copy.trainable_variables)
        return copy

    def _compile(self, copy: keras.Model) -> None:
        # The serialized compile config covers registered losses and metrics; otherwise the loss
        # object itself is reused, as TF 2.15 did, and the rest of the config deserializes.
        compile_config = copy_lib.deepcopy(self.compile_config)
        try:
            copy.compile_from_config(compile_config)
        except (TypeError, ValueError):
            arguments = {
                name: keras.saving.deserialize_keras_object(value)
                for name, value in compile_config.items()
                if name not in ("optimizer", "loss")
            }
            optimizer = self.optimizer_class.from_config(copy_lib.deepcopy(self.optimizer_config))
            copy.compile(optimizer=optimizer, loss=self.loss, **arguments)


def _coordinating_strategy(config: RunConfig | None) -> tf.distribute.Strategy | None:
    """On the chief of a TF_CONFIG cluster with ps tasks, the ParameterServerStrategy to train under: the
    one whose scope model_to_estimator is called in, else the one this process connected with, else a new
    one (TF 2.15 replicated between graphs there, which Keras 3 cannot: see training.py). None on every
    other task and without ps tasks."""
    config = config if config is not None else RunConfig()
    if TaskType.PS not in config.cluster_spec.as_dict() or not config.is_chief:
        return None
    current = tf.distribute.get_strategy()
    if strategies.is_parameter_server(current):
        return current
    if strategies.is_connected(config):
        return strategies.parameter_server_strategy(config)
    tf.compat.v1.logging.warning(
        "model_to_estimator connects this process to the parameter-server cluster of TF_CONFIG. TensorFlow "
        "objects made before (the Keras model given among them) cannot be used after it: the Estimator trains a "
        "copy of its own. To keep using them, create tf.distribute.experimental.ParameterServerStrategy first "
        "and build the model and call model_to_estimator in its scope"
    )
    return strategies.parameter_server_strategy(config)


def _duration(seconds: float) -> str:
    """ "42 s", "3:05" or "1:02:09"."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes}:{seconds:02d}" if minutes < 60 else f"{minutes // 60}:{minutes % 60:02d}:{seconds:02d}"


def _load_model(path: str, custom_objects: dict | None) -> keras.Model:
    if os.path.isdir(path):
        raise ValueError(
            f"keras_model_path '{path}' is a folder: a TensorFlow SavedModel (Keras 2's default format), which "
            "Keras 3 cannot load as a trainable model. Save the model as .h5 or .keras with the TensorFlow that made "
            "it (model.save('model.h5')), or rebuild it in code and load its weights"
        )
    if not os.path.exists(path):
        raise ValueError(f"keras_model_path '{path}' does not exist")
    try:
        return keras.models.load_model(path, custom_objects=custom_objects)  # safe_mode: Keras' default, True
    except (TypeError, ValueError) as error:
        if "safe_mode" in str(error):
            raise ValueError(
                f"keras_model_path '{path}' holds Python code (a Lambda layer) that Keras runs only when told the file "
                "is trusted. If it is, load it yourself and pass the model: model_to_estimator(keras_model="
                f"keras.models.load_model({path!r}, safe_mode=False), ...)"
            ) from error
        if not path.endswith((".h5", ".hdf5")):
            raise
    # A Keras 2 H5 file whose compile config Keras 3 cannot read: the model, then its training config.
    model = keras.models.load_model(path, custom_objects=custom_objects, compile=False)
    keras_legacy.compile_from_keras2_h5(model, path)
    return model


def model_to_estimator(
    keras_model: keras.Model | None = None,
    keras_model_path: str | None = None,
    custom_objects: dict | None = None,
    model_dir: str | None = None,
    config: RunConfig | None = None,
    checkpoint_format: str = "checkpoint",
    metric_names_map: dict | None = None,
    export_outputs: dict | None = None,
) -> KerasEstimator:
    """An Estimator that trains a copy of a compiled Keras model, as tf.keras.estimator did.

    With no checkpoint in `model_dir`, training starts from the Keras model's
    current weights (all of them); otherwise from the latest checkpoint. A
    `.h5` file from TF 2.15's Keras loads through `keras_model_path`.
    """
    keras_model = _compiled_model(keras_model, keras_model_path, custom_objects, checkpoint_format)
    seed = config.tf_random_seed if config is not None else None
    strategy = strategies.checked_strategy(config.train_distribute if config is not None else None)
    # Read before a parameter-server strategy connects this process to its cluster (which ends the model's
    # variables); clone_model would also rebuild the compile config, which fails for a lambda loss.
    recipe = _ModelRecipe.of(keras_model)
    strategy = strategy or _coordinating_strategy(config)

    # Its layers' random seeds follow tf_random_seed; under a strategy its variables are the strategy's.
    def clone(scope) -> keras.Model:
        with keras.saving.custom_object_scope(custom_objects or {}), _seeded_python_random(seed):
            return recipe.build(scope)

    copy = clone(strategy.scope() if strategy is not None else contextlib.nullcontext())
    # Evaluation, prediction and export of a multi-worker or parameter-server Estimator read a copy of no
    # strategy (see KerasEstimator).
    spans_tasks = strategies.is_multi_worker(strategy) or strategies.is_parameter_server(strategy)
    evaluation_model = clone(contextlib.nullcontext()) if spans_tasks else None
    return KerasEstimator(
        copy,
        model_dir=model_dir,
        config=config,
        metric_names_map=metric_names_map,
        export_outputs=export_outputs,
        evaluation_model=evaluation_model,
        strategy=strategy,
    )


def _compiled_model(
    keras_model: keras.Model | None, keras_model_path: str | None, custom_objects: dict | None, checkpoint_format: str
) -> keras.Model:
    """model_to_estimator's model, given or loaded, checked as TF 2.15 checked it (its messages)."""
    if keras_model is None and keras_model_path is None:
        raise ValueError("Either `keras_model` or `keras_model_path` needs to be provided.")
    if keras_model is not None and keras_model_path is not None:
        raise ValueError("Please specify either `keras_model` or `keras_model_path`, but not both.")
    if keras_model_path is not None:
        keras_model = _load_model(keras_model_path, custom_objects)
    assert keras_model is not None  # one of the two was given
    if getattr(keras_model, "optimizer", None) is None or not keras_model.compiled:
        raise ValueError(
            "The given keras model has not been compiled yet. Please compile the model with "
            "`model.compile()` before calling `model_to_estimator()`."
        )
    if checkpoint_format == "saver":
        raise NotImplementedError(
            "checkpoint_format='saver' (name-based, graph-mode checkpoints) is not "
            "supported: use the default 'checkpoint' (object-based) format"
        )
    if checkpoint_format != "checkpoint":
        raise ValueError(f"checkpoint_format must be 'checkpoint' or 'saver', got {checkpoint_format!r}")
    return keras_model


Estimator.register(KerasEstimator)  # isinstance(model_to_estimator(...), tf.estimator.Estimator), as in TF 2.15
