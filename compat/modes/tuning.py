"""`--mode=tune`: a keras-tuner search over pipeline and model settings.

`AudioHyperModel.build(hp)` makes a registry model and `fit(hp, model, ...)`
builds the trial's datasets from the shared builder with the trial's pipeline
settings, the packaged answer to "how do I tune batch size and tf.data
settings" (keras-team/keras-tuner issues 122, 274, 613, 1042). Trials whose
pre-cache settings match reuse the persistent cache, so they decode nothing.

Every trial trains the budget the flags give (`--max_steps` or `--epochs`,
validated every `--eval_every_steps`); Hyperband gives its trials its own
schedule of evaluation periods, up to that budget.

Outputs, in `<model_dir>/tuning/`: `best.flags` (a flagfile that
`train.py --flagfile=best.flags` trains as it is), `trials.md` and `trials.csv`
(trials numbered from 1, as keras-tuner's log lines), `pareto.md` and
`pareto.png` (the trials no other trial beats on both the objective and training
examples/s) with `pareto/<trial>.flags`, keras-tuner's state in `search/` (a
rerun resumes it) and TensorBoard HParams logs in `logs/`.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import io
import os
import time
from collections.abc import Callable
from typing import Any

import keras
import keras_tuner
import tensorflow as tf
from absl import logging

import models
from compat import data
from compat.config import PipelineConfig, TrainConfig, TuneConfig, replace_fields
from compat.core import atomic, tf_internals
from compat.core.errors import UserError
from compat.modes import charts, model_folder
from compat.modes.callbacks import NanGuard, StopAtMaxSteps, TrainingClock
from compat.modes.run import Run, plan_steps

# Choices the default space leaves out on a machine without a GPU: there a width-64 2-D CNN at batch 128
# takes ~12 s a step on two cores, and a "short" 2-trial search took 10 minutes.
_GPU_ONLY: dict[str, list[Any]] = {"model": ["cnn"], "width": [64], "batch_size": [128]}


def _space(accelerated: bool) -> dict[str, Callable[[keras_tuner.HyperParameters], Any]]:
    """The default search space: flag name -> how a trial picks its value; sized for the machine
    (`accelerated`: a GPU is visible), so that a few trials on two CPU cores take minutes, not tens."""

    def choices(name: str, values: list) -> list:
        return values if accelerated else [value for value in values if value not in _GPU_ONLY.get(name, [])]

    return {
        # pipeline settings that change what the model learns
        "batch_size": lambda hp: hp.Choice("batch_size", choices("batch_size", [32, 64, 128])),
        "shuffle_buffer": lambda hp: hp.Choice("shuffle_buffer", [256, 1024, 4096]),
        "n_mels": lambda hp: hp.Choice("n_mels", [32, 40, 64]),
        "frame_length_ms": lambda hp: hp.Choice("frame_length_ms", [20.0, 25.0, 32.0]),
        "time_shift_ms": lambda hp: hp.Choice("time_shift_ms", [0.0, 50.0, 100.0]),
        "noise_stddev": lambda hp: hp.Choice("noise_stddev", [0.0, 0.05, 0.1]),
        # model settings
        "model": lambda hp: hp.Choice("model", choices("model", models.names())),
        "width": lambda hp: hp.Choice("width", choices("width", [16, 32, 64])),
        "depth": lambda hp: hp.Int("depth", 1, 4 if accelerated else 3),
        "dropout": lambda hp: hp.Choice("dropout", [0.0, 0.2, 0.4]),
        "learning_rate": lambda hp: hp.Float("learning_rate", 3e-4, 1e-2, sampling="log"),
    }


def has_gpu() -> bool:
    return bool(tf.config.list_logical_devices("GPU"))


class CannotResumeError(UserError, RuntimeError):
    """A search in the model folder cannot be continued; the message says what to do."""


def objective(spec: str) -> keras_tuner.Objective:
    """`name[:min|:max]`; without a direction, names with "loss" are minimised."""
    name, _, direction = spec.partition(":")
    return keras_tuner.Objective(name, direction or ("min" if "loss" in name else "max"))


class AudioHyperModel(keras_tuner.HyperModel):
    """Builds and fits one trial of a run; `fixed` names the settings the user set, which are not searched."""

    def __init__(
        self,
        run: Run,
        fixed: frozenset[str],
        objective_spec: str = TuneConfig.objective,
        max_trials: int | None = None,
        accelerated: bool | None = None,
    ):
        super().__init__()
        self.run = run
        self.objective = objective(objective_spec)
        accelerated = has_gpu() if accelerated is None else accelerated
        if not accelerated:
            logging.info(
                "No GPU: the search space leaves out %s (slow on a CPU); set them as flags to train them",
                ", ".join(f"{name}={'/'.join(map(str, values))}" for name, values in _GPU_ONLY.items()),
            )
        self.searched = {name: pick for name, pick in _space(accelerated).items() if name not in fixed}
        self._max_trials = max_trials
        self._trial_seconds: list[float] = []

    def configs(self, hp: keras_tuner.HyperParameters) -> tuple[PipelineConfig, models.ModelConfig, TrainConfig]:
        """The trial's (pipeline, model, train) configs: the run's configs with the searched values."""
        values = {name: pick(hp) for name, pick in self.searched.items()}
        run = self.run
        pipeline = replace_fields(run.pipeline, values)
        if pipeline.time_shift_ms > pipeline.crop_margin_ms:
            pipeline = dataclasses.replace(pipeline, crop_margin_ms=pipeline.time_shift_ms)
        return pipeline, replace_fields(run.model_config, values, {"model": "name"}), replace_fields(run.train, values)

    def _plan(self, pipeline: PipelineConfig, train: TrainConfig):
        return plan_steps(train, self.run.index.size("train"), pipeline.batch_size)

    def build(self, hp: keras_tuner.HyperParameters) -> keras.Model:
        try:
            pipeline, model_config, train = self.configs(hp)
        except ValueError:
            # Settings that do not fit together. keras-tuner also builds once with the first
            # value of each choice to learn the space, so build the base model here and let
            # fit() fail the trial.
            pipeline, model_config, train = self.run.pipeline, self.run.model_config, self.run.train
        return self.run.build_model(model_config, train, pipeline, self._plan(pipeline, train))

    def fit(self, hp: keras_tuner.HyperParameters, model: keras.Model, *args, **kwargs) -> dict:
        """Trains on the trial's datasets; returns the best value of each metric and the wall time.

        Hyperband's `epochs` and `initial_epoch` are respected. A NaN loss or a
        failing combination raises FailedTrialError: recorded, and the search goes on.
        """
        try:
            pipeline, _, train = self.configs(hp)
        except ValueError as error:  # settings that do not fit together: a failed trial, not a crash
            raise keras_tuner.errors.FailedTrialError(f"invalid combination: {error}") from error
        started = time.perf_counter()
        # Building the datasets decodes the eval split on a cache miss and reads it on a hit:
        # later trials with the same pre-cache settings show the cache's saving here.
        train_data = self.run.dataset("train", pipeline)
        eval_data = self.run.dataset("eval", pipeline)
        data_seconds = time.perf_counter() - started
        epoch_timer, nan_guard, clock = _FirstEpochTimer(), NanGuard(), TrainingClock(pipeline.batch_size)
        plan = self._plan(pipeline, train)
        try:
            # Each trial trains the budget the flags give (--max_steps or --epochs, validated every
            # --eval_every_steps); Hyperband passes its own epochs, each one evaluation period.
            history = model.fit(
                train_data,
                steps_per_epoch=plan.period,
                epochs=kwargs.get("epochs", plan.periods),
                initial_epoch=kwargs.get("initial_epoch", 0),
                validation_data=eval_data,
                shuffle=False,  # the builder shuffles; Keras would only warn that it cannot
                callbacks=[StopAtMaxSteps(plan.max_steps), nan_guard, clock, *kwargs.get("callbacks", []), epoch_timer],
                verbose=kwargs.get("verbose", 2),
            )
        except (ValueError, tf.errors.OpError) as error:  # a combination the data or model rejects
            raise keras_tuner.errors.FailedTrialError(f"trial failed: {error}") from error
        if nan_guard.error is not None:
            raise keras_tuner.errors.FailedTrialError(str(nan_guard.error))
        metrics = {name: (min if "loss" in name else max)(values) for name, values in history.history.items()}
        self._log_estimate(time.perf_counter() - started)
        return {
            **metrics,
            "wall_seconds": time.perf_counter() - started,
            "data_seconds": data_seconds,
            "first_epoch_seconds": epoch_timer.seconds,
            "train_examples_per_second": clock.examples_per_second,
            "seconds_to_best": self._seconds_to_best(history.history, clock.period_ends),
            "steps": float(model.optimizer.iterations.numpy()),
        }

    def _log_estimate(self, seconds: float) -> None:
        """After each trial in this process: how long the rest of the search should take at this pace."""
        self._trial_seconds.append(seconds)
        if self._max_trials is None:
            return
        left = self._max_trials - len(self._trial_seconds)
        if left > 0:
            pace = sum(self._trial_seconds) / len(self._trial_seconds)
            logging.info(
                "Trial took %.0f s; at %.0f s a trial, the %d left of --max_trials=%d take about %.0f min",
                seconds,
                pace,
                left,
                self._max_trials,
                pace * left / 60,
            )

    def _seconds_to_best(self, history: dict, period_ends: list[float]) -> float:
        """Wall seconds from the trial's first period to the end of the period with its best objective."""
        scores = history.get(self.objective.name)
        if not scores or len(scores) != len(period_ends):
            return float("nan")
        best = (min if self.objective.direction == "min" else max)(scores)
        return period_ends[scores.index(best)]


class _FirstEpochTimer(keras.callbacks.Callback):
    """The first epoch's wall time: on a cold cache it includes decoding the training split."""

    seconds = float("nan")

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter() if not hasattr(self, "_start") else self._start

    def on_epoch_end(self, epoch, logs=None):
        if self.seconds != self.seconds:  # NaN: not measured yet
            self.seconds = time.perf_counter() - self._start


class TunerNotInstalledError(UserError, RuntimeError):
    """The tuner a search names needs packages this installation left out."""


def check_tuner_installed(config: TuneConfig) -> None:
    """Raises TunerNotInstalledError, before a search starts, where `config.tuner` cannot run here.

    BayesianOptimization needs scikit-learn and scipy, keras-tuner's `bayesian` extra, which this package
    leaves out of its default install: Keras imports scikit-learn on every `import tensorflow` when it is
    installed, a cost every process would pay (docs/performance.md, "Process start").
    """
    if config.tuner == "bayesian" and not all(importlib.util.find_spec(name) for name in ("sklearn", "scipy")):
        raise TunerNotInstalledError(
            "`tuner=bayesian` needs scikit-learn and scipy (keras-tuner's BayesianOptimization uses them): "
            "install the `bayesian` extra (pip install -e '.[bayesian]' in the toolkit's checkout), "
            "or choose `tuner=random`"
        )


def make_tuner(hypermodel: AudioHyperModel, config: TuneConfig, seed: int, directory: str):
    """The keras-tuner tuner `config.tuner` names, resuming the search state in `directory`."""
    check_tuner_installed(config)
    common = dict(
        objective=objective(config.objective),
        directory=directory,
        project_name=model_folder.TUNING_SEARCH,
        overwrite=False,
        seed=seed,
        max_consecutive_failed_trials=config.max_failed_trials,
        max_retries_per_trial=0,
    )
    if config.tuner == "random":
        return keras_tuner.RandomSearch(hypermodel, max_trials=config.max_trials, **common)
    if config.tuner == "bayesian":
        return keras_tuner.BayesianOptimization(hypermodel, max_trials=config.max_trials, **common)
    if config.tuner == "hyperband":
        periods = hypermodel.run.plan.periods
        logging.info(
            "Hyperband trains its trials on its own schedule of up to %d evaluation periods of %d "
            "steps each (the `max_steps`/`epochs` budget), not all of them",
            periods,
            hypermodel.run.plan.period,
        )
        return keras_tuner.Hyperband(hypermodel, max_epochs=max(periods, 2), **common)
    if os.path.exists(os.path.join(directory, model_folder.TUNING_SEARCH, "oracle.json")):
        raise CannotResumeError(
            f"`tuner=grid` cannot resume the search in {directory}: keras-tuner's GridSearch fails on "
            "resume (keras-team/keras-tuner#1055). Use a new `model_dir`, or `tuner=random`, `tuner=bayesian` or "
            "`tuner=hyperband`"
        )
    return keras_tuner.GridSearch(hypermodel, max_trials=config.max_trials, **common)


def resume_whole(tuner) -> None:
    """A resumed search keeps every trial that ended and reruns only those that did not.

    Two windows in keras-tuner 1.4 lose finished work when a search is killed
    in them. A tuner reloads its oracle only when its own `<tuner_id>.json`
    exists, which is first written after the first trial ended: a kill before
    that started the search afresh and overwrote trial 0. And `Oracle.end_trial`
    saves oracle.json while the ended trial is still listed as ongoing, so a
    kill right after it made the reload queue that finished trial for a retry.
    Here the oracle is reloaded whenever oracle.json exists, and trials that
    trial.json records as ended are taken off the retry queue.
    """
    oracle = tuner.oracle
    tuner_state = os.path.join(tuner.project_dir, f"{tuner.tuner_id}.json")
    if not os.path.exists(tuner_state) and os.path.exists(os.path.join(tuner.project_dir, "oracle.json")):
        oracle.reload()
    ended = {
        trial_id
        for trial_id, trial in oracle.trials.items()
        if trial.status in (keras_tuner.engine.trial.TrialStatus.COMPLETED, keras_tuner.engine.trial.TrialStatus.FAILED)
    }
    tf_internals.forget_retries(oracle, ended)


def is_tuning_worker() -> bool:
    """True in a worker of keras-tuner's distributed search (KERASTUNER_TUNER_ID=tuner0, ...).

    Every process runs the same command; keras-tuner reads KERASTUNER_TUNER_ID,
    KERASTUNER_ORACLE_IP and KERASTUNER_ORACLE_PORT. The chief serves the oracle
    and writes the results; workers run trials.
    """
    return os.environ.get("KERASTUNER_TUNER_ID", "chief") != "chief"


_MEASURES = (
    "steps",
    "train_examples_per_second",
    "seconds_to_best",
    "wall_seconds",
    "data_seconds",
    "first_epoch_seconds",
)


def trial_number(trial_id: str) -> str:
    """keras-tuner's trial ids count from 0 ("00", "01"); its log lines say "Trial 1": the number users see."""
    return str(int(trial_id) + 1) if trial_id.isdigit() else trial_id


def trial_rows(tuner) -> list[dict]:
    rows = []
    for trial in sorted(tuner.oracle.trials.values(), key=lambda t: t.trial_id):
        measured = {
            name: round(trial.metrics.get_best_value(name), 2) if trial.metrics.exists(name) else None
            for name in _MEASURES
        }
        if measured["steps"] is not None:
            measured["steps"] = int(measured["steps"])
        rows.append(
            {
                "trial": trial_number(trial.trial_id),
                "status": trial.status,
                "objective": trial.score,
                **measured,
                "values": dict(trial.hyperparameters.values),
            }
        )
    return rows


def pareto_front(rows: list[dict], direction: str) -> list[dict]:
    """The completed trials that no other trial beats on both the objective and training examples/s.

    One trial beats another when it is at least as good on both and better on one.
    Sorted from the fastest.
    """
    sign = -1 if direction == "min" else 1
    scored = [
        row
        for row in rows
        if row["status"] == "COMPLETED"
        and row["objective"] is not None
        and row["train_examples_per_second"] is not None
    ]

    def beats(a: dict, b: dict) -> bool:
        score_a, score_b = sign * a["objective"], sign * b["objective"]
        speed_a, speed_b = a["train_examples_per_second"], b["train_examples_per_second"]
        return score_a >= score_b and speed_a >= speed_b and (score_a > score_b or speed_a > speed_b)

    front = [row for row in scored if not any(beats(other, row) for other in scored)]
    return sorted(front, key=lambda row: -row["train_examples_per_second"])


def _flat(row: dict) -> dict:
    return {**{key: value for key, value in row.items() if key != "values"}, **row["values"]}


def _markdown(rows: list[dict]) -> str:
    columns = list(dict.fromkeys(key for row in rows for key in row))
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join("" if row.get(c) is None else str(row.get(c)) for c in columns) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def write_tables(rows: list[dict], folder: str) -> None:
    """`trials.csv` and `trials.md`, each written whole."""
    flat = [_flat(row) for row in rows]
    columns = list(dict.fromkeys(key for row in flat for key in row))
    table = io.StringIO()
    writer = csv.DictWriter(table, columns)
    writer.writeheader()
    writer.writerows(flat)
    atomic.write_text(os.path.join(folder, "trials.csv"), table.getvalue())
    atomic.write_text(os.path.join(folder, "trials.md"), _markdown(flat))


def write_pareto(rows: list[dict], front: list[dict], objective_name: str, folder: str) -> None:
    """`pareto.md` (the front's trials) and `pareto.png` (every completed trial, the front marked)."""
    text = (
        f"Trials that no other trial beats on both {objective_name} and training examples/s, "
        f"fastest first ({len(front)} of {sum(row['status'] == 'COMPLETED' for row in rows)} completed):\n\n"
        + _markdown([_flat(row) for row in front])
    )
    atomic.write_text(os.path.join(folder, "pareto.md"), text)
    done = [row for row in rows if row["status"] == "COMPLETED" and row["train_examples_per_second"] is not None]
    on_front = {row["trial"] for row in front}
    charts.pareto_png(
        os.path.join(folder, "pareto.png"),
        [row["train_examples_per_second"] for row in done],
        [row["objective"] for row in done],
        [row["trial"] for row in done],
        sorted(
            (i for i, row in enumerate(done) if row["trial"] in on_front),
            key=lambda i: -done[i]["train_examples_per_second"],
        ),
        objective_name,
    )


@dataclasses.dataclass(frozen=True)
class SearchResult:
    """What a finished search found (its tables and charts are in the run's `tuning/` folder)."""

    values: dict  # the best trial's hyperparameter values, by name
    score: float  # its objective
    trials: int  # trials run, whatever their status
    completed: int
    pareto: dict  # trial number -> values, for the trials on the accuracy/speed front


def search(run: Run, config: TuneConfig, fixed: frozenset[str]) -> SearchResult | None:
    """Runs (or resumes) the search; returns what it found, or None on a tuning worker (its chief reports)."""
    folder = run.path(model_folder.TUNING)
    os.makedirs(folder, exist_ok=True)
    hypermodel = AudioHyperModel(run, fixed, config.objective, max_trials=config.max_trials)
    tuner = make_tuner(hypermodel, config, run.train.seed, folder)
    if not is_tuning_worker():
        resume_whole(tuner)
    tuner.search(callbacks=[keras.callbacks.TensorBoard(os.path.join(folder, "logs"))])
    if is_tuning_worker():
        return None
    rows = trial_rows(tuner)
    write_tables(rows, folder)
    completed = [row for row in rows if row["status"] == "COMPLETED"]
    if not completed:
        raise RuntimeError(f"no trial completed; see {folder}/trials.md")
    front = pareto_front(rows, hypermodel.objective.direction)
    write_pareto(rows, front, hypermodel.objective.name, folder)
    best = tuner.oracle.get_best_trials(1)[0]
    logging.info("Best trial %s: %s = %s", trial_number(best.trial_id), config.objective, best.score)
    return SearchResult(
        values=dict(best.hyperparameters.values),
        score=best.score,
        trials=len(rows),
        completed=len(completed),
        pareto={row["trial"]: row["values"] for row in front},
    )


# -- --tune_target=pipeline ---------------------------------------------------

_SPEED_SETTINGS: dict[str, list[Any]] = {  # settings that change only speed, never what the model learns
    "num_parallel_calls": [data.AUTOTUNE, 1, 2, 4, 8],
    "prefetch": [data.AUTOTUNE, 1, 2, 8],
    "private_threadpool_size": [0, 2, 4],
    "cache": ["disk", "memory"],
}


def measure_pipeline(run: Run, pipeline: PipelineConfig) -> float:
    """Training examples/s of the builder: one epoch after a first one (which fills caches)."""
    batches = iter(run.dataset("train", pipeline))
    epoch = plan_steps(run.train, run.index.size("train"), pipeline.batch_size).steps_per_epoch
    for _ in range(epoch):
        next(batches)
    started, seen = time.perf_counter(), 0
    for _ in range(epoch):
        seen += int(next(batches)[1].shape[0])
    return seen / (time.perf_counter() - started)


def tune_pipeline(run: Run, fixed: frozenset[str]) -> dict:
    """Picks the fastest speed-only settings, one at a time from the current best, on the user's data.

    Writes `<model_dir>/tuning/pipeline.md` (every candidate's examples/s and the
    best against all-AUTOTUNE defaults); returns the chosen values.
    """
    folder = run.path(model_folder.TUNING)
    os.makedirs(folder, exist_ok=True)
    best = dataclasses.replace(
        run.pipeline, **{name: getattr(PipelineConfig(), name) for name in _SPEED_SETTINGS if name not in fixed}
    )
    baseline = best_rate = measure_pipeline(run, best)
    rows = [("defaults (AUTOTUNE)", "", baseline)]
    for name, values in _SPEED_SETTINGS.items():
        if name in fixed:
            continue
        for value in values:
            if value == getattr(best, name):
                continue
            candidate = dataclasses.replace(best, **{name: value})
            rate = measure_pipeline(run, candidate)
            rows.append((name, "AUTOTUNE" if value == data.AUTOTUNE else value, rate))
            if rate > best_rate:
                best, best_rate = candidate, rate
    chosen = {name: getattr(best, name) for name in _SPEED_SETTINGS if name not in fixed}
    lines = ["| setting | value | examples/s |", "|---|---|---:|"]
    lines += [f"| {name} | {value} | {rate:,.0f} |" for name, value, rate in rows]
    lines += [
        "",
        f"Chosen: {chosen}: {best_rate:,.0f} examples/s, {best_rate / baseline:.2f}x the "
        f"AUTOTUNE defaults' {baseline:,.0f}.",
    ]
    atomic.write_text(os.path.join(folder, "pipeline.md"), "\n".join(lines) + "\n")
    return {"values": chosen, "examples_per_second": best_rate, "autotune_examples_per_second": baseline}
