"""`--mode=estimator`: the same model, data and steps through `compat.estimator`.

The registry model, compiled as in `--mode=keras`, is wrapped by
`model_to_estimator`; `train_and_evaluate` checkpoints and evaluates after every
evaluation period (throttle_secs=0) and runs a `FinalExporter`; then the test
split is evaluated and `metrics.json` written in the same schema:

  <model_dir>/model.ckpt-<step>.*, checkpoint, events.out.tfevents.*   as tf.estimator
  <model_dir>/eval/, eval_test/                                         evaluation summaries
  <model_dir>/export/final/<timestamp>/                                 the SavedModel
  <model_dir>/export/best/<timestamp>/                                  the lowest validation loss so far
  <model_dir>/examples/                                                 eval examples as TensorBoard images
  <model_dir>/history.csv, metrics.json, confusion_matrix.png           as --mode=keras

Under a strategy (`--distribution_strategy`) the RunConfig carries it as
`train_distribute` (model_to_estimator finds a parameter-server strategy itself);
in a TF_CONFIG cluster every task runs this same command, the chief trains and
saves beside the workers (with ps tasks: sends the steps to them), the evaluator
evaluates each new checkpoint, and only the chief evaluates the test split and
writes `metrics.json`.
"""

from __future__ import annotations

import contextlib
import csv
import io
import logging
import time
from collections.abc import Iterator

import numpy as np
import tensorflow as tf

from compat import estimator
from compat.core import atomic, strategies
from compat.estimator.base import EstimatorBase
from compat.estimator.early_stopping import read_eval_metrics
from compat.modes import distribution, model_folder
from compat.modes.model_folder import last_saved_step
from compat.modes.run import Run


def train_and_evaluate(run: Run) -> dict | None:
    """Trains (or resumes) in the run's folder with compat.estimator; returns the metrics (None on a
    cluster task other than the chief: the chief writes them)."""
    plan = run.plan
    # A ParameterServerStrategy is not a RunConfig's (TF 2.15 refused it there): model_to_estimator finds
    # the one this process connected with (and builds its evaluation copy outside it).
    parameter_server = strategies.plan_of(run.strategy).coordinated
    run_config = estimator.RunConfig(
        save_checkpoints_steps=plan.period,
        keep_checkpoint_max=run.train.keep_checkpoints,
        tf_random_seed=run.train.seed,
        save_summary_steps=run.train.log_every_steps,
        log_step_count_steps=run.train.log_every_steps,
        train_distribute=None if parameter_server else run.strategy,
    )
    # Keras' tags rather than TF 2.15's, so that this run overlays --mode=keras's in TensorBoard
    est = estimator.model_to_estimator(
        keras_model=run.build_model(), model_dir=run.model_dir, config=run_config, training_summaries="keras"
    )  # overlays --mode=keras in TensorBoard
    if parameter_server:  # the workers read the training split from the cache, which is written here first
        run.fill_cache("train")
    start_step = last_saved_step(run.model_dir) or 0
    # The last model, and the one with the lowest validation loss so far (TF 2.15's BestExporter, one kept).
    exporters = (
        [estimator.FinalExporter("final"), estimator.BestExporter("best", exports_to_keep=1)]
        if run.train.export
        else []
    )
    train_started = time.perf_counter()
    with _evaluations_labelled("eval split"):
        estimator.train_and_evaluate(
            est,
            estimator.TrainSpec(run.input_fn("train"), max_steps=plan.max_steps),
            estimator.EvalSpec(run.input_fn("eval"), steps=None, throttle_secs=0, exporters=exporters),
        )
    train_seconds = time.perf_counter() - train_started
    if not distribution.is_chief_task():  # TF_CONFIG's chief (an evaluator's RunConfig says is_chief, as TF 2.15)
        return None
    # After training: a folder whose checkpoint is another model's is refused before anything is written.
    if not start_step:  # once per model folder, at its first run
        run.write_example_images(run.path(model_folder.ESTIMATOR_EXAMPLE_IMAGES))
    with _evaluations_labelled("test split"):
        test = est.evaluate(run.input_fn("test"), name="test")
    _export_at_the_end(run, est, exporters, test)
    evaluations = read_eval_metrics(est.eval_dir())
    _write_history(run.path(model_folder.HISTORY), evaluations)
    extra = {}
    if evaluations:  # the evaluation BestExporter picks: the lowest loss (its checkpoint may be gone by now)
        step, scores = min(evaluations.items(), key=lambda item: item[1].get("loss", float("inf")))
        extra["best"] = {"step": int(step), "val_loss": scores.get("loss"), "val_accuracy": scores.get("accuracy")}
    features, labels = run.test_examples()
    predictions = est.predict(
        lambda: tf.data.Dataset.from_tensor_slices(features).batch(run.pipeline.batch_size), yield_single_examples=False
    )
    predicted = np.concatenate([np.argmax(next(iter(batch.values())), axis=-1) for batch in predictions])
    return run.write_metrics(
        test, int(test["global_step"]), start_step, train_seconds, **run.confusion(labels, predicted), **extra
    )


def _export_at_the_end(run: Run, est: EstimatorBase, exporters: list, test: dict) -> None:
    """The exports the chief makes after training, from the last checkpoint.

    In a cluster with an evaluator, none: the evaluator exports. In one without, every exporter (nobody else
    evaluated). On one machine, a final export that is missing: a rerun of a finished folder trains nothing,
    so nothing exports on the way (TF 2.15's train_and_evaluate), and a stopped run (Ctrl-C, a kill) may have
    left none. `best/` is not made here: it needs the evaluation split's results, not the test split's.
    """
    cluster = est.config.cluster_spec.as_dict()
    if "evaluator" in cluster:
        return
    checkpoint = est.latest_checkpoint()
    assert checkpoint is not None  # just evaluated
    for exporter in exporters:
        folder = run.path(model_folder.ESTIMATOR_EXPORTS, exporter.name)
        if cluster or (isinstance(exporter, estimator.FinalExporter) and not _has_export(folder)):
            exporter.export(est, folder, checkpoint, test, True)


def _has_export(folder: str) -> bool:
    """Whether `folder` holds a whole export (a timestamped folder; a temporary one is a stopped writer's)."""
    return tf.io.gfile.isdir(folder) and any(name.strip("/").isdigit() for name in tf.io.gfile.listdir(folder))


_RESULTS_LINE = "Saving dict for global step"  # the Estimator's line for each evaluation's results (TF 2.15's)


@contextlib.contextmanager
def _evaluations_labelled(split: str) -> Iterator[None]:
    """The Estimator's results line of each evaluation in this block starts with `split`, so that a run's
    validation and test results are told apart: `eval split: Saving dict for global step 60: ...`."""

    def label(record: logging.LogRecord) -> bool:
        if str(record.msg).startswith(_RESULTS_LINE):
            record.msg = f"{split}: {record.msg}"
        return True

    logger = logging.getLogger("tensorflow")  # where tf.compat.v1.logging writes, as the Estimator logs
    logger.addFilter(label)
    try:
        yield
    finally:
        logger.removeFilter(label)


def _write_history(path: str, evaluations: dict) -> None:
    """`history.csv`: one row per evaluation of the eval split (TF 2.15's eval events, read back)."""
    columns = list(dict.fromkeys(name for metrics in evaluations.values() for name in metrics))
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(["step", *columns])
    for step, metrics in evaluations.items():
        writer.writerow([step, *(metrics.get(name, "") for name in columns)])
    atomic.write_text(path, table.getvalue())
