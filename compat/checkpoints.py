"""Restoring the newest checkpoint that can be read, falling back past damaged ones.

TensorFlow writes a checkpoint's files before it names the checkpoint in the
`checkpoint` state file, so a kill mid-save leaves the previous one in force.
A checkpoint damaged afterwards (a truncated `.data` file, a missing shard)
made TF 2.15 stop with a restore error; here the next older checkpoint is
restored instead, with a warning naming both, and only when none can be read
does the run stop, naming them all.
"""

from __future__ import annotations

from typing import Callable, Sequence

import tensorflow as tf
from absl import logging


class NoReadableCheckpointError(RuntimeError):
    """Every checkpoint in a model folder failed to restore; the message names them and what to do."""


def restore_newest_readable(paths_newest_first: Sequence[str], restore: Callable[[str], object]) -> str | None:
    """Calls `restore(path)` on each path, newest first, until one reads; returns it (None: no paths).

    Only read errors (a truncated or missing file) move on to an older checkpoint;
    any other error (a checkpoint of another model) is raised as it is.
    """
    failures = []
    for path in paths_newest_first:
        try:
            restore(path)
        # TensorFlow reports a truncated file as an OpError or, from its checkpoint reader, an IndexError.
        except (tf.errors.OpError, IndexError) as error:  # a checkpoint of another model is raised as it is
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            failures.append((path, f"{type(error).__name__}: {reason}"))
            continue
        if failures:
            logging.warning("Checkpoint %s cannot be read (%s); restored the previous one, %s, instead",
                            failures[0][0], failures[0][1], path)
        return path
    if failures:
        raise NoReadableCheckpointError(
            "no checkpoint in the model folder can be read: "
            + "; ".join(f"{path} ({reason})" for path, reason in failures)
            + ". Restore the folder from a backup, or start again with a new --model_dir")
    return None
