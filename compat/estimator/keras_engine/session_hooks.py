"""SessionRunHooks on the Keras engine, which trains eagerly and has no Session.

A hook's methods are called as a MonitoredSession calls them: `begin` (in a
small graph that holds the `global_step` and a `loss` tensor, so the hook can
look them up), `after_create_session`, `before_run` / `after_run` around each
training step, `end`. What a hook asks for in `before_run` (`SessionRunArgs`)
or through `session.run` may be the global step (in `SessionRunArgs` the value
before the step, as TF 2.15 fetched it; `session.run` reads it now) or the
loss of the step, by tensor or by name; anything else gets an error naming
it, since there is no graph to run it in. `request_stop()` ends training
after the step. Hooks that need a real Session (checkpoint,
summary and profiler hooks) are refused with their replacement named.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

_REPLACEMENTS = {
    "CheckpointSaverHook": "RunConfig(save_checkpoints_steps=...) (checkpoints are saved for you)",
    "SummarySaverHook": "RunConfig(save_summary_steps=...) (summaries are written for you)",
    "ProfilerHook": "keras.callbacks.TensorBoard(profile_batch=...)",
}


def refuse_unsupported(hooks: Sequence) -> None:
    for hook in hooks:
        name = type(hook).__name__
        if name in _REPLACEMENTS:
            raise TypeError(
                f"{name} needs a tf.compat.v1 Session, which a model_to_estimator Estimator does not "
                f"have. Use {_REPLACEMENTS[name]} instead"
            )


class _StepSession:
    """Stands in for the Session a hook may call `run` on: it knows the global step and the loss."""

    def __init__(self, runner: HookRunner):
        self._runner = runner

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        return self._runner.resolve(fetches, step=self._runner.current_step)


class HookRunner:
    """Runs SessionRunHooks around the Keras engine's steps: training steps (each advances the global step)
    or, with `training=False`, evaluation batches (the global step stays the checkpoint's)."""

    def __init__(self, hooks: Sequence, training: bool = True):
        refuse_unsupported(hooks)
        self.hooks = list(hooks)
        self.training = training
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.global_step = tf.compat.v1.train.get_or_create_global_step()
            self.loss = tf.compat.v1.placeholder(tf.float32, [], name="loss")
            for hook in self.hooks:
                hook.begin()
        self.session = _StepSession(self)
        self.step, self.current_step, self.loss_value = 0, 0, float("nan")
        self._pending: list = []

    def _value(self, fetch: Any, step: int) -> Any:
        if fetch is None or isinstance(fetch, tf.Operation):
            return None
        name = fetch if isinstance(fetch, str) else getattr(fetch, "name", None)
        if name is not None and (
            name == "global_step" or name.startswith("global_step:") or name.startswith("global_step/")
        ):  # the variable, or a read of it
            return step
        if name in (self.loss.name, "loss"):
            return self.loss_value
        raise ValueError(
            f"A SessionRunHook asked for {fetch!r}; on a model_to_estimator Estimator hooks can read "
            "only the global step and the loss (there is no graph to run anything else in)"
        )

    def resolve(self, fetches: Any, step: int | None = None) -> Any:
        """The values of `fetches`; the global step as it was when the step ran, unless `step` is given."""
        step = self.step if step is None else step
        return tf.nest.map_structure(lambda fetch: self._value(fetch, step), fetches)

    def after_create_session(self, step: int) -> None:
        self.step = self.current_step = step
        with self.graph.as_default():
            for hook in self.hooks:
                hook.after_create_session(self.session, None)

    def before_step(self, step: int) -> None:
        self.step = self.current_step = step
        self._pending = []
        with self.graph.as_default():
            for hook in self.hooks:
                context = tf.compat.v1.train.SessionRunContext(
                    original_args=tf.compat.v1.train.SessionRunArgs([self.loss]), session=self.session
                )
                self._pending.append((hook, context, hook.before_run(context)))

    def after_step(self, loss: float) -> bool:
        """Calls after_run with what each hook asked for; True when one requested a stop."""
        self.loss_value, self.current_step = loss, self.step + int(self.training)
        stop = False
        with self.graph.as_default():
            for hook, context, args in self._pending:
                results = self.resolve(args.fetches) if args is not None else None
                hook.after_run(
                    context,
                    tf.compat.v1.train.SessionRunValues(
                        results=results, options=tf.compat.v1.RunOptions(), run_metadata=tf.compat.v1.RunMetadata()
                    ),
                )
                stop = stop or context.stop_requested
        return stop

    def end(self) -> None:
        with self.graph.as_default():
            for hook in self.hooks:
                hook.end(self.session)
