"""The process `train.py` runs in: one owner for what concerns the process as a whole, not a run's model.

import_tensorflow()      TensorFlow and Keras imported quietly, with the garbage collector paused, then frozen
quiet_tensorflow_logs()  TensorFlow's own INFO lines dropped (and the Estimator's, in --mode=estimator)
RunGuard                 while a run trains: Ctrl-C ends it at once with one line naming the last checkpoint,
                         an error a user can act on becomes one line (and the folders a refused run made
                         are removed); leaving it puts the previous SIGINT handler back
exit_skipping_teardown() the end of the process, without the interpreter's teardown (which can hang)
"""

from __future__ import annotations

import atexit
import gc
import logging
import os
import signal
import subprocess
import sys
from typing import Any, NoReturn

from absl import logging as absl_logging

from compat.core.errors import UserError

# The rest of compat is imported where it is used: importing it loads TensorFlow, which `import_tensorflow`
# must be the first to import (train.py imports this module before TensorFlow).

# What --mode=estimator still logs at INFO from the Estimator's own files: each evaluation's results,
# the progress line (`step N of M, ... left`) and the input cache's one line. The rest (each hook made,
# each graph finalised, every --log_every_steps step's loss and rate) is what TF 2.15 printed, and
# already in TensorBoard.
_ESTIMATOR_LINES_KEPT = ("Saving dict for global step", "input_fn ", "step ")
# What TensorFlow's C++ libraries print while they load, before any Python logging exists: each of its
# two libraries says its log is not initialised yet, that oneDNN is on and that no CUDA driver was found.
# None of it is for a user to act on; on a machine without a GPU, "failed call to cuInit" stays as the one
# line saying so. (TF_CPP_MIN_LOG_LEVEL=2, which train.py sets, already drops TensorFlow's INFO lines.)
_LOAD_NOISE = (
    "All log messages before absl::InitializeLog()",
    "oneDNN custom operations are on",
    "Could not find cuda drivers",
)
# The filter runs in a process of its own, so that what the import printed before a crash (a fatal
# CPU-feature check, a segfault in a driver) still reaches the terminal: it reads until the pipe closes.
_FORWARD_ALL_BUT_NOISE = (
    "import sys\n"
    "noise = [word.encode() for word in sys.argv[1:]]\n"
    "for line in sys.stdin.buffer:\n"
    "    if not any(word in line for word in noise):\n"
    "        sys.stdout.buffer.write(line)\n"
    "        sys.stdout.buffer.flush()\n"
)


def import_tensorflow() -> None:
    """Imports TensorFlow and Keras (quietly) with the cyclic garbage collector paused, then freezes
    what the import made.

    The import makes about 400,000 objects that live as long as the process. The collector scanned
    them all at each full collection: five times during the import, collecting nothing (0.37 s of a
    2 s import on 2 cores, 2026-12-04), and again at each full collection after (0.16-0.21 s each).
    Frozen (`gc.freeze`), they are left out of every collection; what the run makes later is collected
    as before.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        _import_tensorflow_quietly()
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def _import_tensorflow_quietly() -> None:
    """Imports TensorFlow and Keras with file descriptor 2 sent through a filter that passes on every line
    but `_LOAD_NOISE`. Those lines come from C++ before Python can filter them, so only the descriptor can
    catch them; whatever else the import prints (an error, a warning) still shows, as it is printed."""
    if sys.stderr is None:  # no descriptor 2 (a daemon's closed stderr): nothing to filter
        import keras  # noqa: F401

        return
    sys.stderr.flush()
    try:
        terminal = os.dup(2)
        forward = subprocess.Popen(
            [sys.executable, "-c", _FORWARD_ALL_BUT_NOISE, *_LOAD_NOISE], stdin=subprocess.PIPE, stdout=terminal
        )
    except OSError:  # no process to spare: the lines show, nothing is lost
        import keras  # noqa: F401

        return
    pipe = forward.stdin
    assert pipe is not None  # stdin=PIPE
    os.dup2(pipe.fileno(), 2)
    try:
        import keras  # noqa: F401
        import tensorflow  # noqa: F401
    finally:
        sys.stderr.flush()
        os.dup2(terminal, 2)
        os.close(terminal)
        pipe.close()
        forward.wait()  # every line passed on before what follows is printed


def quiet_tensorflow_logs(mode: str) -> None:
    """Drops TensorFlow's own INFO lines (each checkpoint shard's timing, SavedModel internals, "input
    names with unsupported characters"): nothing in them is for a user to act on. TensorFlow logs
    them through absl, as this toolkit does, so they are told apart by the file that logs them;
    warnings and errors still show. In --mode=estimator the Estimator's own INFO lines go too, but
    for the evaluations' results, so that it is as quiet as --mode=keras; --verbosity=1 shows them."""
    tensorflow_package = os.sep + "tensorflow" + os.sep
    estimator_package = os.sep + os.path.join("compat", "estimator") + os.sep
    quiet_estimator = mode == "estimator" and absl_logging.get_verbosity() < absl_logging.DEBUG

    def keep(record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        if tensorflow_package in record.pathname:
            return False
        if quiet_estimator and estimator_package in record.pathname:
            return str(record.msg).startswith(_ESTIMATOR_LINES_KEPT)
        return True

    for logger in (absl_logging.get_absl_logger(), logging.getLogger("tensorflow")):
        logger.addFilter(keep)


def use_dtype_policy(name: str) -> None:
    """The process's one Keras dtype policy (`float32`, `mixed_float16`, ...), chosen at start as Model
    Garden does: every layer built after this computes in it (the logits stay float32)."""
    import keras

    keras.config.set_dtype_policy(name)


class RunGuard:
    """What the process does while a run in `model_dir` trains, undone on leaving (`with RunGuard(...)`).

    Ctrl-C: one line naming the last checkpoint's step, then exit 130 at once. A KeyboardInterrupt raised
    wherever Python happens to be (a finalizer, a tf.data callback) can be swallowed there, and training
    goes on; ending the process is as safe as a kill -9, which every write here survives (the checkpoint
    in force, caches and exports whole or absent, the folder lock freed).
    """

    def __init__(self, model_dir: str) -> None:
        self.model_dir = model_dir
        self._made = _folders_to_make(model_dir)
        self._previous: Any = None

    def __enter__(self) -> RunGuard:
        self._previous = signal.signal(signal.SIGINT, self._interrupted)
        return self

    def __exit__(self, *exc_info: object) -> None:
        signal.signal(signal.SIGINT, self._previous)

    def _interrupted(self, signum: int, frame: object) -> None:
        from compat.modes.model_folder import last_saved_step

        step = last_saved_step(self.model_dir)
        saved = f"its last checkpoint is at step {step}" if step is not None else "no checkpoint was saved yet"
        print(
            f"train.py: interrupted; {self.model_dir}: {saved}. The same command resumes from there",
            file=sys.stderr,
            flush=True,
        )
        os._exit(130)

    def said(self, error: Exception) -> tuple[str, int] | None:
        """`error` as one line and an exit status, or None for a bug (its traceback shows): bad input, a
        refused setting, a loss gone NaN (exit status of the error), a bad audio file (1; the folders the
        refused run made are removed), a full disk or a file gone (1, saying where the rerun resumes)."""
        import tensorflow as tf

        from compat.core.checkpoints import CheckpointMismatchError
        from compat.core.faults import storage_problem
        from compat.data.audio import bad_audio_file_message
        from compat.modes.model_folder import FLAGS_FILE, last_saved_step

        if isinstance(error, UserError):
            self._remove_folders_made()
            message = str(error)
            saved = os.path.join(self.model_dir, FLAGS_FILE)
            if isinstance(error, CheckpointMismatchError) and tf.io.gfile.exists(saved):
                message += f"; the flags it was trained with are in {saved} (--flagfile={saved})"
            return message, error.exit_code
        bad_audio = bad_audio_file_message(error)
        if bad_audio is not None:
            self._remove_folders_made()
            return bad_audio, 1
        problem = storage_problem(error)
        if problem is None:
            return None
        step = last_saved_step(self.model_dir)
        resumes = f"its last checkpoint (step {step})" if step is not None else "the start"
        return f"{problem}. Free space or fix the file, then run the same command again: it resumes from {resumes}", 1

    def _remove_folders_made(self) -> None:
        """Removes the folders this run made (innermost first) while they hold nothing but the flags this
        run wrote into the model folder: a run refused before it trained leaves no folder behind."""
        from compat.modes.model_folder import FLAGS_FILE

        folders = self._made
        if folders and os.path.isdir(folders[0]) and os.listdir(folders[0]) == [FLAGS_FILE]:
            os.remove(os.path.join(folders[0], FLAGS_FILE))
        for folder in folders:
            try:
                os.rmdir(folder)
            except OSError:  # not empty, or already gone: leave it and whatever holds it
                return


def _folders_to_make(folder: str) -> list[str]:
    """The local folders a run in `folder` will create, innermost first (none for a remote model_dir)."""
    if "://" in folder:
        return []
    missing = []
    path = os.path.abspath(folder)
    while not os.path.exists(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return missing


def exit_skipping_teardown(code: object) -> NoReturn:
    """Ends the process as `sys.exit(code)` would, but without the interpreter's teardown.

    Python's teardown deletes the tf.data iterators still alive; one whose pipeline has a Python step
    (the cache's publish, a soundfile decode) in flight waits for that step, which teardown stops from
    running: the process hung for good after a failed cache write (seen about once in 60 runs of a
    full-disk test under load). Everything a run keeps is written atomically before this point, so only
    the exit handlers (the cache's temporary folders, absl's and logging's flushes) are run, then the
    process ends.
    """
    if code is not None and not isinstance(code, int):  # as sys.exit: any other object is printed, status 1
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)
