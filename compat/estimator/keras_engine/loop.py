"""Training on tf.estimator's schedule: steps run many per compiled call between the boundaries the
RunConfig sets (checkpoints, summaries, logs), and the observers (saving listeners, Keras callbacks,
SessionRunHooks) told at each.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import keras
import tensorflow as tf

from compat.core import strategies, summaries
from compat.core.divergence import TrainingDiverged, is_finite
from compat.estimator.base import (
    check_train_steps,
)
from compat.estimator.input_fns import (
    call_input_fn,
    input_fn_kwargs,
    input_fn_name,
    split_features_labels,
    with_input_options,
)
from compat.estimator.keras_engine.compile_arguments import tf215_metrics
from compat.estimator.keras_engine.core import KerasEngine
from compat.estimator.keras_engine.input_reading import split_hooks
from compat.estimator.keras_engine.session_hooks import HookRunner
from compat.estimator.model_fn import ModeKeys
from compat.estimator.run_config import TaskType

MAX_STEPS_PER_CALL = 1000  # bounds the time between two looks at a stop request
STEPS_PER_CALL_WITH_TIMED_SAVES = 100


class Training(KerasEngine):
    """`train`: Keras' own train_step, many steps per compiled call, between the RunConfig's boundaries."""

    # -- train --------------------------------------------------------------
    def train(
        self,
        input_fn: Callable,
        hooks=None,
        steps: int | None = None,
        max_steps: int | None = None,
        saving_listeners=None,
    ) -> Training:
        """Trains from the latest checkpoint: `steps` more, or up to the absolute `max_steps`."""
        check_train_steps(steps, max_steps)
        callbacks, session_hooks = split_hooks(hooks)
        if self._config.tf_random_seed is not None:
            tf.random.set_seed(self._config.tf_random_seed)  # as TF 2.15's graph seed; Python and NumPy untouched
        start = self._restore(model=self._state.keras_model)
        if max_steps is not None and start >= max_steps:
            tf.compat.v1.logging.info("Skipping training since max_steps has already saved.")
            return self
        last = start + steps if steps is not None else max_steps
        observers = Observers(
            list(saving_listeners or ()), callbacks, HookRunner(session_hooks) if session_hooks else None
        )
        batches = self._training_batches(input_fn)
        try:
            self._loop(batches, start, last, observers)
        except (
            tf.errors.UnavailableError,
            tf.errors.DeadlineExceededError,
            tf.errors.AbortedError,
            tf.errors.CancelledError,
        ) as error:
            if not strategies.plan_of(self._state.strategy).spans_tasks:
                raise
            try:
                stopped = f"training stopped after step {int(self._state.global_step.numpy())}"
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
            self._build_metrics(made.element_spec, self._state.keras_model)
            return made

        if self._state.strategy is None:
            return iter(strategies.prefetch_to_accelerator(dataset()))
        if self._state.coordinator is not None:
            return self._per_worker_batches(input_fn)
        if "input_context" in input_fn_kwargs(input_fn, input_context=None):  # it shards and sizes its batch
            return iter(self._state.strategy.distribute_datasets_from_function(dataset))
        return iter(self._state.strategy.experimental_distribute_dataset(dataset()))

    def _per_worker_batches(self, input_fn: Callable):
        """One iterator per worker over the input_fn's dataset, made on each worker from its traced graph.

        The input cache is left out: it publishes what a pass wrote from this process, and the passes run on
        the workers. Python inside the pipeline (`py_function`) cannot run there either.
        """

        # The input_fn runs as plain Python building a graph, as in TF 2.15: AutoGraph would convert its code.
        @tf.autograph.experimental.do_not_convert
        def per_worker() -> tf.data.Dataset:
            return with_input_options(call_input_fn(input_fn, ModeKeys.TRAIN, self._config, self._params))

        self._build_metrics(per_worker().element_spec, self._state.keras_model)  # here, not in the traced function
        assert self._state.coordinator is not None
        return iter(self._state.coordinator.create_per_worker_dataset(per_worker))

    def _run_steps(self, train_loop: Callable, batches, step: int, steps: int) -> None:
        """`steps` training steps after `step`: one call of the compiled loop, or under a
        ParameterServerStrategy as closures shared among the workers (two per worker, so that none waits
        on the slowest), all done when this returns."""
        if self._state.coordinator is None:
            train_loop(batches, tf.constant(steps, tf.int64))
            return
        last = tf.constant(step + steps, tf.int64)
        workers = len(self._config.cluster_spec.as_dict().get(TaskType.WORKER, ()))
        closures = min(steps, 2 * max(1, workers))
        for index in range(closures):
            share = steps // closures + (1 if index < steps % closures else 0)
            self._state.coordinator.schedule(train_loop, args=(batches, tf.constant(share, tf.int64), last))
        self._state.coordinator.join()

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
        strategy = self._state.strategy
        if self._state.coordinator is not None:
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
                self._state.last_loss.assign(loss)
                self._state.examples.assign_add(examples)
                self._state.global_step.assign_add(1)

        return train_loop

    def _train_one_step(self, element) -> tuple[tf.Tensor, tf.Tensor]:
        """One step of Keras' own `train_step`: (its loss, the examples it trained on)."""
        model = self._state.keras_model
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
        strategy = self._state.strategy

        @tf.function
        def train_loop(iterator, n, last):
            for _ in tf.range(n):
                element = next(iterator)
                if self._state.global_step.assign_add(1) > last:
                    self._state.global_step.assign_sub(1)
                    break
                loss, examples = strategy.run(one_step, args=(element,))  # one replica per worker
                self._state.last_loss.assign(loss)
                self._state.examples.assign_add(examples)

        return train_loop

    def _write_training_summaries(self, writer: tf.summary.SummaryWriter, step: int, loss: float) -> None:
        """TF 2.15's one training tag (`loss_1`: its Keras graph had a `loss` op already); or, asked for
        "keras" summaries, `loss`, the compiled metrics of the same step (not across workers) and the
        learning rate, the tags a Keras `fit` writes, so that the two overlay in TensorBoard."""
        if self._training_summaries == "tf215":
            summaries.write_training_scalars(writer, step, {"loss_1": loss})
            return
        model = self._state.keras_model
        # Reading a metric under MultiWorkerMirroredStrategy is a collective that only this (the chief's)
        # loop would join: the other tasks' metrics are left out of the summaries there.
        local_metrics = not strategies.plan_of(self._state.strategy).in_sync_across_workers
        compiled = tf215_metrics(model, self.output_names) if local_metrics else []
        metrics = {"loss": loss, **{name: metric.result() for name, metric in compiled}}
        summaries.write_training_scalars(writer, step, metrics, summaries.learning_rate_value(model.optimizer))

    def _summary_origin(self, start: int) -> int:
        """The step summaries and rates count from: TF 2.15's hooks wrote at a train() call's first step and
        every N steps after it; Keras at multiples of N."""
        return start + 1 if self._training_summaries == "tf215" else 0

    def _steps_to_next_boundary(self, step: int, last: int | None, per_step: bool, origin: int) -> int:
        """Steps until the next checkpoint, summary, log or the last step: one call of the loop."""
        if per_step:
            return 1
        config = self._config
        limit = MAX_STEPS_PER_CALL
        if config.save_checkpoints_secs:
            limit = STEPS_PER_CALL_WITH_TIMED_SAVES  # a timed save is checked between calls
        if config.save_checkpoints_steps:
            limit = min(limit, config.save_checkpoints_steps - step % config.save_checkpoints_steps)
        for every in (config.save_summary_steps, config.log_step_count_steps):
            if every:
                limit = min(limit, origin - step if step < origin else every - (step - origin) % every)
        if last is not None:
            limit = min(limit, last - step)
        return max(limit, 1)

    def _loop(self, batches, start: int, last: int | None, observers: Observers) -> None:
        config = self._config
        writer = self._writer(self.model_dir) if config.is_chief else None  # only the chief writes summaries
        train_loop = self._state.train_loop = self._state.train_loop or self._make_train_loop()
        observers.begin(self._state.keras_model, start, last)
        # The step-0 (or restored-step) save, as TF 2.15; none when checkpoints are off.
        stop = self._save(observers.listeners) if config.saves_checkpoints else False
        observers.after_create_session(start)
        saves = SaveSchedule(config.save_checkpoints_steps, config.save_checkpoints_secs, start)
        origin = self._summary_origin(start)
        progress = ProgressLog(
            config.log_step_count_steps,
            last,
            start,
            lambda: int(self._state.examples.numpy()),
            writer if config.is_chief else None,
            origin,
            self._training_summaries == "keras",
        )
        step, loss, diverged = start, float("nan"), None
        while not stop and (last is None or step < last):
            wanted = self._steps_to_next_boundary(step, last, observers.per_step, origin)
            observers.before_steps(step)
            ended = False
            try:
                self._run_steps(train_loop, batches, step, wanted)
            except tf.errors.OutOfRangeError:
                ended = True
            done = int(self._state.global_step.numpy()) - step
            if done == 0:
                break  # the input ended
            step += done
            loss = float(self._state.last_loss.numpy())
            stop = observers.after_steps(self._state.keras_model, step, loss) or stop
            if not is_finite(loss):
                diverged = TrainingDiverged(step, loss, self.latest_checkpoint())
                break
            if config.is_chief and due(step, config.save_summary_steps, origin):
                self._write_training_summaries(writer, step, loss)
            progress.after(step, loss)
            if saves.due(step):
                stop = self._save(observers.listeners) or stop
                saves.saved(step)
            if ended:
                break  # the input ended within this call
        if diverged is None and step != saves.saved_step and self._config.saves_checkpoints:
            self._save(observers.listeners)  # the final checkpoint, before the listeners' end
        if writer is not None:
            writer.flush()
        observers.end(start, step, loss, diverged)


class Observers:
    """Everyone a train() call tells of its progress, told in TF 2.15's order: the saving listeners
    (around checkpoints), the Keras callbacks (one "epoch" per call, batches between boundaries) and the
    SessionRunHooks (through a HookRunner, which gives them the step and the loss)."""

    def __init__(self, listeners: list, callbacks: Sequence, runner: HookRunner | None) -> None:
        self.listeners, self._callbacks, self._runner = listeners, callbacks, runner

    @property
    def per_step(self) -> bool:
        """Whether someone needs to hear of every step (else steps run many per compiled call)."""
        return bool(self._callbacks) or self._runner is not None

    def begin(self, model: keras.Model, start: int, last: int | None) -> None:
        for listener in self.listeners:
            listener.begin()
        model.stop_training = False
        for callback in self._callbacks:
            callback.set_model(model)
            callback.set_params({"epochs": 1, "steps": None if last is None else last - start, "verbose": 0})
            callback.on_train_begin()
            callback.on_epoch_begin(0)

    def after_create_session(self, start: int) -> None:
        if self._runner is not None:
            self._runner.after_create_session(start)

    def before_steps(self, step: int) -> None:
        for callback in self._callbacks:
            callback.on_train_batch_begin(step)
        if self._runner is not None:
            self._runner.before_step(step)

    def after_steps(self, model: keras.Model, step: int, loss: float) -> bool:
        """Tells the callbacks and hooks that the steps up to `step` ran; whether one of them asks to stop."""
        for callback in self._callbacks:
            callback.on_train_batch_end(step, {"loss": loss})
        stop = self._runner.after_step(loss) if self._runner is not None else False
        return bool(stop) or bool(model.stop_training)

    def end(self, start: int, step: int, loss: float, diverged: TrainingDiverged | None) -> None:
        """Ends the call; raises `diverged` before the hooks' and listeners' end, so that nothing of the
        diverged steps is saved or evaluated."""
        for callback in self._callbacks:
            callback.on_epoch_end(0, {"loss": loss} if step != start else {})
            callback.on_train_end()
        if diverged is not None:
            raise diverged
        if self._runner is not None:
            self._runner.end()
        for listener in self.listeners:
            listener.end(None, step)


class SaveSchedule:
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


def due(step: int, every: int | None, origin: int) -> bool:
    """Whether `step` is one of origin, origin + every, ... (never when `every` is 0 or None)."""
    return every is not None and every > 0 and step >= origin and (step - origin) % every == 0


class ProgressLog:
    """Every `every` steps from `origin`: TF 2.15's `loss = ..., step = ...` line, a progress line a terminal
    user can read (where, how fast, how long), and the rates in TensorBoard (`writer`, the chief's), as TF
    2.15's step counter from the second time on (the first only starts its clock) unless `keras_tags`."""

    def __init__(
        self,
        every: int | None,
        last: int | None,
        step: int,
        examples: Callable[[], int],
        writer: tf.summary.SummaryWriter | None,
        origin: int = 0,
        keras_tags: bool = True,
    ) -> None:
        self._every, self._last, self._examples, self._writer = every, last, examples, writer
        self._origin, self._keras_tags = origin, keras_tags
        self._time, self._step, self._examples_then = time.monotonic(), step, examples()

    def after(self, step: int, loss: float) -> None:
        if not due(step, self._every, self._origin):
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
                duration((self._last - step) / max(rate, 1e-9)),
            )
        if self._writer is not None and (self._keras_tags or step > self._origin):
            summaries.write_training_scalars(
                self._writer,
                step,
                steps_per_second=rate,
                examples_per_second=examples_rate if self._keras_tags else None,
            )
        self._time, self._step, self._examples_then = now, step, examples


def duration(seconds: float) -> str:
    """ "42 s", "3:05" or "1:02:09"."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes}:{seconds:02d}" if minutes < 60 else f"{minutes // 60}:{minutes % 60:02d}:{seconds:02d}"
