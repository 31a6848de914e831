"""SessionRunHooks: TensorFlow's own (tf.compat.v1.train), under the names tf.estimator gave them.

tf.estimator.experimental's own hooks are in hooks/hooks.py.

A hook's `begin`, `after_create_session`, `before_run` (returning
`SessionRunArgs`), `after_run` and `end` are called by the graph engine's
MonitoredSession exactly as in TF 2.15; `run_context.request_stop()` ends
training after the current step. These are TensorFlow's classes, not copies.
"""

from __future__ import annotations

from typing import Any

# tf.estimator's hook names, all TensorFlow's (tf.compat.v1.train): declared here once; compat.estimator's
# table takes them from here. Each is looked up when first used, so listing them loads no TensorFlow.
__all__ = [
    "CheckpointSaverHook",
    "CheckpointSaverListener",
    "FeedFnHook",
    "FinalOpsHook",
    "GlobalStepWaiterHook",
    "LoggingTensorHook",
    "NanLossDuringTrainingError",
    "NanTensorHook",
    "ProfilerHook",
    "SecondOrStepTimer",
    "SessionRunArgs",
    "SessionRunContext",
    "SessionRunHook",
    "SessionRunValues",
    "StepCounterHook",
    "StopAtStepHook",
    "SummarySaverHook",
]


def __getattr__(name: str) -> Any:
    """TensorFlow's class of that name, kept as an attribute of this package once looked up."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import tensorflow as tf

    value = getattr(tf.compat.v1.train, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
