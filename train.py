"""Train or use an audio classifier: `python train.py --mode=keras|estimator|tune|predict [flags] [FILES]`.

`predict` classifies the audio FILES with a trained run's export. With no data flags
it trains on the built-in synthetic dataset. Every flag is
defined in flags.py; `python train.py --help` lists them, grouped by concern.
Rerunning a command with the same --model_dir resumes it.
"""

from __future__ import annotations

import atexit
import gc
import os
import signal
import sys
from typing import NoReturn

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # noqa: E402
from absl import flags as absl_flags  # noqa: E402

import flags  # noqa: E402  (defines the flags; imports no TensorFlow)

absl_flags.adopt_module_key_flags(flags)  # --help lists them


def train_model(configs: flags.Configs) -> None:
    """--mode=keras or --mode=estimator: train, evaluate the test split, print the result."""
    import importlib

    from compat.modes import distribution, model_folder, run

    distribution.check_cluster(configs.mode, configs.distribution.distribution_strategy)
    # First: MultiWorkerMirrored sets up collectives at startup, and ParameterServerStrategy connects this
    # process to the cluster, after which TensorFlow objects made before can no longer be used.
    strategy = distribution.strategy_for(configs.distribution)
    chief = distribution.is_chief_task()
    # Only the mode's own module: compat.estimator (and tf_keras, for its heads) take about 1 s to import.
    mode = importlib.import_module(f"compat.modes.{configs.mode}_mode")
    with run.open_run(
        configs.source,
        configs.pipeline,
        configs.model,
        configs.train,
        configs.model_dir,
        shared=not chief,
        strategy=strategy,
        mode=configs.mode,
        distribution=configs.distribution,
    ) as this:
        # A resumed run keeps the flags.txt it was started with until it ends: a run refused for
        # restoring another model's checkpoint must not lose the flags that model was trained with.
        resuming = model_folder.last_saved_step(configs.model_dir) is not None
        if chief and not resuming:
            flags.save_flagfile(this.path(model_folder.FLAGS_FILE))
        metrics = mode.train_and_evaluate(this)
        # A rerun that trained on records its flags; the ones that trained the steps before it are kept
        # beside them. A rerun of a finished folder trained nothing: flags.txt stays the model's.
        if chief and resuming and metrics is not None and metrics["steps"] > metrics["resumed_from_step"]:
            flags.save_flagfile(
                this.path(model_folder.FLAGS_FILE), keep_previous_as=f"until-step-{metrics['resumed_from_step']}"
            )
    if metrics is None:
        print(f"{distribution.task_name()} finished; the chief writes the results in {configs.model_dir}")
        return
    print(
        f"test accuracy {metrics['test_accuracy']:.4f} (loss {metrics['test_loss']:.4f}) after "
        f"{metrics['steps']} steps in {metrics['wall_seconds']:.0f} s; outputs in {configs.model_dir}"
    )


def tune(configs: flags.Configs) -> None:
    """--mode=tune: a keras-tuner search, or the pipeline's speed settings; writes best.flags."""
    from compat.modes import distribution, model_folder, run, tuning

    distribution.check_cluster("tune")
    if configs.tune_target == "model":
        tuning.check_tuner_installed(configs.tune)  # refused before the run's folder is written
    worker = tuning.is_tuning_worker()  # works in its chief's folder, which the chief holds
    with run.open_run(
        configs.source,
        configs.pipeline,
        configs.model,
        configs.train,
        configs.model_dir,
        shared=worker,
        mode=None if worker else "tune",
    ) as this:
        if not worker:
            flags.save_flagfile(this.path(model_folder.FLAGS_FILE))
        best_flags = this.path(model_folder.BEST_FLAGS)
        if configs.tune_target == "pipeline":
            best = tuning.tune_pipeline(this, configs.explicit)
            summary = (
                f"fastest pipeline {best['values']}: {best['examples_per_second']:,.0f} examples/s "
                f"against {best['autotune_examples_per_second']:,.0f} with AUTOTUNE defaults "
                f"(report: {this.path(model_folder.TUNING, 'pipeline.md')})"
            )
        else:
            try:
                found = tuning.search(this, configs.tune, configs.explicit)
            except tuning.CannotResumeError as error:
                fail(str(error))
            if found is None:
                print(f"tuning worker {os.environ['KERASTUNER_TUNER_ID']} finished; the chief writes the results")
                return
            summary = (
                f"best {configs.tune.objective} {found.score:.4f} over {found.completed} completed "
                f"of {found.trials} trials"
            )
            pareto = this.path(model_folder.PARETO_FLAGS)
            os.makedirs(pareto, exist_ok=True)
            for stale in os.listdir(pareto):  # a resumed search's front replaces the last one
                os.remove(os.path.join(pareto, stale))
            for trial, values in found.pareto.items():
                flags.save_best_flagfile(
                    this.path(model_folder.PARETO_FLAGS, f"{trial}.flags"),
                    values,
                    this.path(model_folder.PARETO_MODELS, trial),
                )
            summary += f"; {len(found.pareto)} on the accuracy/speed front (tuning/pareto.md)"
            best = {"values": found.values}
        flags.save_best_flagfile(best_flags, best["values"], this.path(model_folder.BEST))
    print(f"{summary}; train it with: python train.py --flagfile={best_flags} --mode=keras")


# What --mode=estimator still logs at INFO from the Estimator's own files: each evaluation's results,
# the progress line (`step N of M, ... left`) and the input cache's one line. The rest (each hook made,
# each graph finalised, every --log_every_steps step's loss and rate) is what TF 2.15 printed, and
# already in TensorBoard.
_ESTIMATOR_LINES_KEPT = ("Saving dict for global step", "input_fn ", "step ")


def _quiet_tensorflow_logs(mode: str) -> None:
    """Drops TensorFlow's own INFO lines (each checkpoint shard's timing, SavedModel internals, "input
    names with unsupported characters"): nothing in them is for a user to act on. TensorFlow logs
    them through absl, as this toolkit does, so they are told apart by the file that logs them;
    warnings and errors still show. In --mode=estimator the Estimator's own INFO lines go too, but
    for the evaluations' results, so that it is as quiet as --mode=keras; --verbosity=1 shows them."""
    import logging

    from absl import logging as absl_logging

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


# What TensorFlow's C++ libraries print while they load, before any Python logging exists: each of its
# two libraries says its log is not initialised yet, that oneDNN is on and that no CUDA driver was found.
# None of it is for a user to act on; on a machine without a GPU, "failed call to cuInit" stays as the one
# line saying so. (TF_CPP_MIN_LOG_LEVEL=2, set above, already drops TensorFlow's own INFO lines.)
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


def _import_tensorflow_uncollected() -> None:
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
    import subprocess

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


def _interrupted(model_dir: str):
    """Ctrl-C: one line naming the last checkpoint's step, then exit 130 at once.

    A KeyboardInterrupt raised wherever Python happens to be (a finalizer, a
    tf.data callback) can be swallowed there, and training goes on; ending the
    process is as safe as a kill -9, which every write here survives (the
    checkpoint in force, caches and exports whole or absent, the folder lock freed).
    """

    def handler(signum, frame) -> None:
        from compat.modes.model_folder import last_saved_step

        step = last_saved_step(model_dir)
        saved = f"its last checkpoint is at step {step}" if step is not None else "no checkpoint was saved yet"
        print(
            f"train.py: interrupted; {model_dir}: {saved}. The same command resumes from there",
            file=sys.stderr,
            flush=True,
        )
        os._exit(130)

    return handler


def in_flag_terms(message: str) -> str:
    """A library message in train.py's words: the library names a setting `name` or `name=value`, which here
    is the flag --name (or --name=value); other backticked words are left as they are."""
    import re

    def flag(match: re.Match) -> str:
        name, value = match.group(1), match.group(2) or ""
        return f"--{name}{value}" if name in absl_flags.FLAGS else match.group(0)

    return re.sub(r"`(\w+)(=[^`]*)?`", flag, message)


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


def _remove_if_still_empty(folders: list[str]) -> None:
    """Removes the folders this run made (innermost first) while they hold nothing but the flags this run
    wrote into the model folder: a run refused before it trained leaves no folder behind."""
    from compat.modes.model_folder import FLAGS_FILE

    if folders and os.path.isdir(folders[0]) and os.listdir(folders[0]) == [FLAGS_FILE]:
        os.remove(os.path.join(folders[0], FLAGS_FILE))
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:  # not empty, or already gone: leave it and whatever holds it
            return


def fail(message: str, exit_code: int = 2) -> None:
    """One line that names the flag, file or folder and says what to do: no traceback, no help dump."""
    print(f"train.py: error: {in_flag_terms(message)}", file=sys.stderr)
    sys.exit(exit_code)


def parse_flags(argv: list[str]) -> list[str]:
    """absl's flag parsing, with a bad flag given as one line and exit code 2, as for every other bad input
    (absl's own parser exits 1 after a FATAL line)."""
    try:
        return absl_flags.FLAGS(argv)
    except absl_flags.Error as error:
        text = str(error)
        if "Unable to open flagfile" in text:  # absl's "ERROR:: Unable to open flagfile: [Errno 2] ..."
            fail(f"--flagfile: {text.split('Unable to open flagfile:', 1)[1].strip()}; check the path")
        fail(f"{text} (python train.py --help lists every flag with its range)")
        raise  # not reached: fail exits


def predict(model_dir: str, paths: list[str]) -> None:
    """--mode=predict: one line per file, `path<TAB>class<TAB>probability`; exit 1 if a file is unreadable."""
    from compat.modes.predict import Classifier, NoClassifierError, export_dir_of

    if not paths:
        fail(
            "--mode=predict classifies the audio files named after the flags: python train.py --mode=predict "
            "--model_dir=DIR FILE..."
        )
    try:
        classifier = Classifier(export_dir_of(model_dir))
    except NoClassifierError as error:
        fail(str(error))
    unreadable = 0
    for prediction in classifier.classify(paths):
        if prediction.error is not None:
            print(f"{prediction.path}: {prediction.error}", file=sys.stderr)
            unreadable += 1
        else:
            print(f"{prediction.path}\t{prediction.class_name}\t{prediction.probability:.3f}")
    if unreadable:
        sys.exit(1)


def main(argv: list[str]) -> None:
    if len(argv) > 1 and flags.FLAGS.mode != "predict":
        fail(f"unexpected arguments: {' '.join(argv[1:])} (flags are --name=value)")
    _import_tensorflow_uncollected()  # first: the imports below load TensorFlow
    from compat.core.checkpoints import CheckpointMismatchError
    from compat.core.errors import UserError

    try:
        configs = flags.configs_from_flags()
    except ValueError as error:  # a config's own check: names the field, said here as its flag
        fail(flags.in_flag_words(str(error)))
    _quiet_tensorflow_logs(configs.mode)
    if configs.mode == "predict":
        predict(configs.model_dir, argv[1:])
        return
    import keras

    # The process's one dtype policy, chosen at start as Model Garden does: every layer built after
    # this computes in it (the logits stay float32).
    keras.config.set_dtype_policy(configs.train.dtype)
    previous_handler = signal.signal(signal.SIGINT, _interrupted(configs.model_dir))
    made = _folders_to_make(configs.model_dir)
    try:
        if configs.mode == "tune":
            tune(configs)
        else:
            train_model(configs)
    except UserError as error:  # bad input, a refused setting, a file found bad, a loss gone NaN: one line
        _remove_if_still_empty(made)  # a refused run leaves no folder it made
        message = str(error)
        if isinstance(error, CheckpointMismatchError):
            import tensorflow as tf

            from compat.modes.model_folder import FLAGS_FILE

            saved = os.path.join(configs.model_dir, FLAGS_FILE)
            if tf.io.gfile.exists(saved):
                message += f"; the flags it was trained with are in {saved} (--flagfile={saved})"
        fail(message, exit_code=error.exit_code)
    except Exception as error:  # a full disk, a file gone or unreadable: one line, not a traceback
        from compat.core.faults import storage_problem
        from compat.data.audio import bad_audio_file_message
        from compat.modes.model_folder import last_saved_step

        bad_audio = bad_audio_file_message(error)
        if bad_audio is not None:
            _remove_if_still_empty(made)
            fail(bad_audio, exit_code=1)
        problem = storage_problem(error)
        if problem is None:
            raise
        step = last_saved_step(configs.model_dir)
        fail(
            f"{problem}. Free space or fix the file, then run the same command again: it resumes from "
            + (f"its last checkpoint (step {step})" if step is not None else "the start"),
            exit_code=1,
        )
    finally:
        signal.signal(signal.SIGINT, previous_handler)


def exit_skipping_teardown(code: object) -> NoReturn:
    """Ends the process as `sys.exit(code)` would, but without the interpreter's teardown.

    Python's teardown deletes the tf.data iterators still alive; one whose
    pipeline has a Python step (the cache's publish, a soundfile decode) in
    flight waits for that step, which teardown stops from running: the process
    hung for good after a failed cache write (seen about once in 60 runs of a
    full-disk test under load). Everything a run keeps is written atomically
    before this point, so only the exit handlers (the cache's temporary
    folders, absl's and logging's flushes) are run, then the process ends.
    """
    if code is not None and not isinstance(code, int):  # as sys.exit: any other object is printed, status 1
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)


if __name__ == "__main__":
    if {"--help", "-h", "-?", "--helpshort"} & set(sys.argv[1:]):
        print(flags.grouped_help())  # grouped by concern; absl's own help is alphabetical
        sys.exit(0)
    try:
        app.run(main, flags_parser=parse_flags)
    except SystemExit as done:
        exit_skipping_teardown(done.code)
    except BaseException:  # a bug: its traceback, then the same exit without teardown (which could hang)
        import traceback

        traceback.print_exc()
        exit_skipping_teardown(1)
