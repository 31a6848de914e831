"""SessionRunHooks: TensorFlow's own (tf.compat.v1.train), under the names tf.estimator gave them.

tf.estimator.experimental's own hooks are in hooks/hooks.py.

A hook's `begin`, `after_create_session`, `before_run` (returning
`SessionRunArgs`), `after_run` and `end` are called by the graph engine's
MonitoredSession exactly as in TF 2.15; `run_context.request_stop()` ends
training after the current step. These are TensorFlow's classes, not copies.
"""

from __future__ import annotations

import tensorflow as tf

_train = tf.compat.v1.train

SessionRunHook = _train.SessionRunHook
SessionRunArgs = _train.SessionRunArgs
SessionRunContext = _train.SessionRunContext
SessionRunValues = _train.SessionRunValues
CheckpointSaverHook = _train.CheckpointSaverHook
CheckpointSaverListener = _train.CheckpointSaverListener
FeedFnHook = _train.FeedFnHook
FinalOpsHook = _train.FinalOpsHook
GlobalStepWaiterHook = _train.GlobalStepWaiterHook
LoggingTensorHook = _train.LoggingTensorHook
NanLossDuringTrainingError = _train.NanLossDuringTrainingError
NanTensorHook = _train.NanTensorHook
ProfilerHook = _train.ProfilerHook
SecondOrStepTimer = _train.SecondOrStepTimer
StepCounterHook = _train.StepCounterHook
StopAtStepHook = _train.StopAtStepHook
SummarySaverHook = _train.SummarySaverHook

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
