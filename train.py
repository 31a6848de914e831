"""Train or use an audio classifier: `python train.py --mode=keras|estimator|tune|predict [flags] [FILES]`.

`predict` classifies the audio FILES with a trained run's export. With no data flags it trains on the built-in
synthetic dataset. Every flag is defined in flags.py; `python train.py --help` lists them, grouped by concern.
Rerunning a command with the same --model_dir resumes it. What concerns the process (its imports, logs,
Ctrl-C, errors said in one line, its exit) is compat/modes/process.py's.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import traceback
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # noqa: E402
from absl import flags as absl_flags  # noqa: E402

import flags  # noqa: E402  (defines the flags; imports no TensorFlow)
from compat.modes import process  # noqa: E402  (imports no TensorFlow: it imports it, quietly)

absl_flags.adopt_module_key_flags(flags)  # --help lists them


def _open_run(configs: flags.Configs, **options: Any) -> Any:
    """The run of `configs` in its model folder (compat.modes.run.open_run), held while the block runs."""
    from compat.modes import run

    return run.open_run(configs.source, configs.pipeline, configs.model, configs.train, configs.model_dir, **options)


def train_model(configs: flags.Configs) -> None:
    """--mode=keras or --mode=estimator: train, evaluate the test split, print the result."""
    from compat.modes import distribution, model_folder

    distribution.check_cluster(configs.mode, configs.distribution.distribution_strategy)
    # First: MultiWorkerMirrored sets up collectives at startup, and ParameterServerStrategy connects this
    # process to the cluster, after which TensorFlow objects made before can no longer be used.
    strategy = distribution.strategy_for(configs.distribution)
    chief = distribution.is_chief_task()
    # Only the mode's own module: compat.estimator (and tf_keras, for its heads) take about 1 s to import.
    mode = importlib.import_module(f"compat.modes.{configs.mode}_mode")
    with _open_run(
        configs, shared=not chief, strategy=strategy, mode=configs.mode, distribution=configs.distribution
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
    from compat.modes import distribution, model_folder, tuning

    distribution.check_cluster("tune")
    if configs.tune_target == "model":
        tuning.check_tuner_installed(configs.tune)  # refused before the run's folder is written
    worker = tuning.is_tuning_worker()  # works in its chief's folder, which the chief holds
    with _open_run(configs, shared=worker, mode=None if worker else "tune") as this:
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
            flags.save_front_flagfiles(
                this.path(model_folder.PARETO_FLAGS), found.pareto, this.path(model_folder.PARETO_MODELS)
            )
            summary += f"; {len(found.pareto)} on the accuracy/speed front (tuning/pareto.md)"
            best = {"values": found.values}
        flags.save_best_flagfile(best_flags, best["values"], this.path(model_folder.BEST))
    print(f"{summary}; train it with: python train.py --flagfile={best_flags} --mode=keras")


def in_flag_terms(message: str) -> str:
    """A library message in train.py's words: the library names a setting `name` or `name=value`, which here
    is the flag --name (or --name=value); other backticked words are left as they are."""

    def flag(match: re.Match) -> str:
        name, value = match.group(1), match.group(2) or ""
        return f"--{name}{value}" if name in absl_flags.FLAGS else match.group(0)

    return re.sub(r"`(\w+)(=[^`]*)?`", flag, message)


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
    process.import_tensorflow()  # first: what follows loads TensorFlow
    try:
        configs = flags.configs_from_flags()
    except ValueError as error:  # a config's own check: names the field, said here as its flag
        fail(flags.in_flag_words(str(error)))
    process.quiet_tensorflow_logs(configs.mode)
    if configs.mode == "predict":
        predict(configs.model_dir, argv[1:])
        return
    process.use_dtype_policy(configs.train.dtype)
    with process.RunGuard(configs.model_dir) as guard:
        try:
            tune(configs) if configs.mode == "tune" else train_model(configs)
        except Exception as error:  # bad input, a refused setting, a full disk: one line, not a traceback
            said = guard.said(error)
            if said is None:
                raise
            fail(*said)


if __name__ == "__main__":
    if {"--help", "-h", "-?", "--helpshort"} & set(sys.argv[1:]):
        print(flags.grouped_help())  # grouped by concern; absl's own help is alphabetical
        sys.exit(0)
    try:
        app.run(main, flags_parser=parse_flags)
    except SystemExit as done:
        process.exit_skipping_teardown(done.code)
    except BaseException:  # a bug: its traceback, then the same exit without teardown (which could hang)
        traceback.print_exc()
        process.exit_skipping_teardown(1)
