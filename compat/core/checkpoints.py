"""Restoring the newest checkpoint that can be read, falling back past damaged ones.

TensorFlow writes a checkpoint's files before it names the checkpoint in the
`checkpoint` state file, so a kill mid-save leaves the previous one in force.
A checkpoint damaged afterwards (a truncated `.data` file, a missing shard)
made TF 2.15 stop with a restore error; here the next older checkpoint is
restored instead, with a warning naming both, and only when none can be read
does the run stop, naming them all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import tensorflow as tf

from compat.core.errors import UserError

logging = tf.get_logger()  # TensorFlow's logger, as TF 2.15's Estimator logged (docs/estimator.md)


class NoReadableCheckpointError(UserError, RuntimeError):
    """Every checkpoint in a model folder failed to restore; the message names them and what to do."""


class CheckpointMismatchError(UserError, ValueError):
    """A checkpoint was written by a different model (other layers or sizes); the message names it."""


def restore_newest_readable(paths_newest_first: Sequence[str], restore: Callable[[str], object]) -> str | None:
    """Calls `restore(path)` on each path, newest first, until one reads; returns it (None: no paths).

    Only read errors (a truncated or missing file) move on to an older checkpoint;
    a checkpoint of another model (a shape that differs, an object it lacks) is a
    `CheckpointMismatchError`, since an older one of the same folder is no better.
    """
    failures = []
    for path in paths_newest_first:
        try:
            restore(path)
        except (ValueError, AssertionError) as error:  # Keras/TF report a mismatch as these
            if "Couldn't find" in str(error):  # ... and a checkpoint whose files are gone as this ValueError
                failures.append((path, str(error).strip().splitlines()[0]))
                continue
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise CheckpointMismatchError(
                f"the checkpoint {path} was written by a different model ({reason}); build the model it was "
                "trained with, or start in a new model folder"
            ) from error
        # TensorFlow reports a truncated file as an OpError or, from its checkpoint reader, an IndexError.
        except (tf.errors.OpError, IndexError) as error:  # a checkpoint of another model is raised as it is
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            failures.append((path, f"{type(error).__name__}: {reason}"))
            continue
        if failures:
            logging.warning(
                "Checkpoint %s cannot be read (%s); restored the previous one, %s, instead",
                failures[0][0],
                failures[0][1],
                path,
            )
        return path
    if failures:
        raise NoReadableCheckpointError(
            "no checkpoint in the model folder can be read: "
            + "; ".join(f"{path} ({reason})" for path, reason in failures)
            + ". Restore the folder from a backup, or start again with a new `model_dir`"
        )
    return None


def _read_every_tensor(path: str) -> None:
    reader = tf.compat.v1.train.NewCheckpointReader(path)  # this prefix, never "the latest in a folder"
    for name in reader.get_variable_to_dtype_map():
        reader.get_tensor(name)


def newest_readable_in(model_dir: str) -> str | None:
    """The newest checkpoint of `model_dir` whose every tensor reads (None: no checkpoint), named in
    the folder's `checkpoint` state file so that a session restoring "the latest" restores it.

    For engines that restore by folder (`MonitoredTrainingSession`): each tensor
    is read once more than a restore does, only for the checkpoints tried. The
    damaged checkpoint's files stay until training saves its step again.
    """
    state = tf.train.get_checkpoint_state(model_dir)
    if state is None or not state.model_checkpoint_path:
        return None
    saved = list(state.all_model_checkpoint_paths) or [state.model_checkpoint_path]
    newest = state.model_checkpoint_path
    candidates = [newest, *(path for path in reversed(saved) if path != newest)]
    readable = restore_newest_readable(candidates, _read_every_tensor)
    if readable != newest:
        kept = saved[: saved.index(readable) + 1] if readable in saved else [readable]
        tf.compat.v1.train.update_checkpoint_state(model_dir, readable, all_model_checkpoint_paths=kept)
    return readable
