"""Runs a program and holds it still at a point the test names, so that the test kills it there.

    python pause.py [--install] checkpoint:STEP PROGRAM [ARGS...]
    python pause.py [--install] trial:N PROGRAM [ARGS...]
    python pause.py [--install] run:N PROGRAM [ARGS...]
    python pause.py [--install] export:N PROGRAM [ARGS...]

`checkpoint:STEP`: once a checkpoint at step STEP or later has been written
whole (`tf.train.CheckpointManager.save`, as --mode=keras and the Keras engine
save; `tf.compat.v1.train.Saver.save`, as the graph engine saves), the process
prints `paused after <checkpoint path>` and sleeps until it is killed or
interrupted (or, with `PAUSE_RELEASE=FILE`, until FILE exists). `trial:N`: the same once keras-tuner has recorded its N-th trial
as ended. `run:N`: the same once this process's training session
(`MonitoredSession.run`, as the graph engine trains) has run N steps, for a
task that saves no checkpoint (a worker of a cluster). `export:N`: once the process's N-th SavedModel
(`tf.saved_model.save`, as every export writes one) is on disk in its temporary folder, before it is
published under its final name. `--install` calls `compat.estimator.install()` first, as a legacy
program's one added line would.

A test that polls a model folder and then kills the process races the
process: it may have trained on, or finished, in between. Here the process
cannot move past the named point, so where the kill lands is known. The
wrapped methods are TensorFlow's and keras-tuner's own, called unchanged;
only a wait is added after them, in this helper's process alone.
"""

import os
import runpy
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


# With PAUSE_RELEASE=FILE the process goes on once FILE exists (once only: later points do not hold),
# so that a test can change the world around a held process (kill a server) and then let it meet that.
RELEASE = os.environ.get("PAUSE_RELEASE")
_released = []


def _hold(what: str) -> None:
    if _released:
        return
    print(f"paused after {what}", flush=True)
    while True:  # time.sleep lets Python's signal handlers (train.py's Ctrl-C) run
        if RELEASE and os.path.exists(RELEASE):
            _released.append(what)
            return
        time.sleep(0.2 if RELEASE else 60)


def _step_of(path) -> int:
    if isinstance(path, bytes):
        path = path.decode()
    return int(str(path).rsplit("-", 1)[1])


def _pause_at_checkpoint(step: int) -> None:
    import tensorflow as tf

    def after(save):
        def wrapped(*args, **kwargs):
            path = save(*args, **kwargs)
            if path is not None and _step_of(path) >= step:
                _hold(path)
            return path
        return wrapped

    tf.train.CheckpointManager.save = after(tf.train.CheckpointManager.save)
    tf.compat.v1.train.Saver.save = after(tf.compat.v1.train.Saver.save)


def _pause_at_run(count: int) -> None:
    import tensorflow as tf

    runs = []
    run = tf.compat.v1.train.MonitoredSession.run

    def wrapped(self, *args, **kwargs):
        result = run(self, *args, **kwargs)
        runs.append(None)
        if len(runs) >= count:
            _hold(f"run {len(runs)}")
        return result

    tf.compat.v1.train.MonitoredSession.run = wrapped


def _pause_at_export(count: int) -> None:
    import tensorflow as tf

    saved = []
    save = tf.saved_model.save

    def wrapped(obj, export_dir, *args, **kwargs):
        result = save(obj, export_dir, *args, **kwargs)
        saved.append(export_dir)
        if len(saved) >= count:
            _hold(str(export_dir))
        return result

    tf.saved_model.save = wrapped


def _pause_at_trial(count: int) -> None:
    import keras_tuner

    ended = []
    end_trial = keras_tuner.Oracle.end_trial

    def wrapped(self, trial, *args, **kwargs):
        result = end_trial(self, trial, *args, **kwargs)  # the oracle has saved the trial's record
        ended.append(trial.trial_id)
        if len(ended) >= count:
            _hold(f"trial {trial.trial_id}")
        return result

    keras_tuner.Oracle.end_trial = wrapped


def main() -> None:
    args = sys.argv[1:]
    install = args[0] == "--install"
    if install:
        args = args[1:]
    point, program, *rest = args
    kind, _, value = point.partition(":")
    points = {"checkpoint": _pause_at_checkpoint, "trial": _pause_at_trial, "run": _pause_at_run,
              "export": _pause_at_export}
    points[kind](int(value))
    if install:
        import compat.estimator

        compat.estimator.install()
    sys.argv = [program, *rest]
    sys.path.insert(0, os.path.dirname(os.path.abspath(program)))
    runpy.run_path(program, run_name="__main__")


if __name__ == "__main__":
    main()
