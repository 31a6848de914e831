"""Exporters run after evaluations: LatestExporter, BestExporter, FinalExporter.

Each writes SavedModels under `<model_dir>/export/<name>/<timestamp>` through
`Estimator.export_saved_model` (a temporary name, then a rename), with its
`assets_extra` and `as_text`, and keeps the newest `exports_to_keep` of them.
`BestExporter` exports when an evaluation beats the best so far by
`compare_fn` (default: a smaller loss); at its first export in a process it
first reads the best result recorded in the evaluation event files, and that
first export always happens, as in TF 2.15.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from compat.core import tf_internals
from compat.estimator import gc
from compat.estimator.early_stopping import eval_results_in


class Exporter(abc.ABC):
    """Base class of exporters (tf.estimator.Exporter): `export(...)` returns the export path, or None."""

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The export folder's name under `<model_dir>/export/`."""

    @abc.abstractmethod
    def export(
        self, estimator, export_path: str, checkpoint_path: str, eval_result: dict, is_the_final_export: bool
    ) -> Any:
        """Exports `checkpoint_path` of `estimator` under `export_path`, or decides not to."""


class _SavedModelWriter:
    """What every exporter here does to export: `estimator.export_saved_model` with its own arguments."""

    def __init__(
        self, name: str, serving_input_receiver_fn: Callable | None, assets_extra: dict | None, as_text: bool
    ) -> None:
        self.name = name
        self.serving_input_receiver_fn, self.assets_extra, self.as_text = (
            serving_input_receiver_fn,
            assets_extra,
            as_text,
        )

    def write(self, estimator, export_path: str, checkpoint_path: str) -> Any:
        return estimator.export_saved_model(
            export_path,
            self.serving_input_receiver_fn,
            assets_extra=self.assets_extra,
            as_text=self.as_text,
            checkpoint_path=checkpoint_path,
        )


def _keep_newest(export_path: str, keep: int | None) -> None:
    """Deletes all but the newest `keep` exports (folders named by a 10-digit timestamp)."""
    if keep is None or not tf.io.gfile.isdir(export_path):
        return
    delete = gc.negation(gc.largest_export_versions(keep))
    for path in delete(gc.get_paths(export_path, parser=gc.export_version)):
        try:
            tf.io.gfile.rmtree(path.path)
        except tf.errors.NotFoundError as error:
            tf.compat.v1.logging.warn("Can not delete %s recursively: %s", path.path, error)


def _check_exports_to_keep(exports_to_keep: int | None, message: str) -> None:
    if exports_to_keep is not None and exports_to_keep <= 0:
        raise ValueError(message.format(exports_to_keep))


def _loss_smaller(best_eval_result: dict, current_eval_result: dict) -> bool:
    if not best_eval_result or "loss" not in best_eval_result:
        raise ValueError("best_eval_result cannot be empty or no loss is found in it.")
    if not current_eval_result or "loss" not in current_eval_result:
        raise ValueError("current_eval_result cannot be empty or no loss is found in it.")
    return best_eval_result["loss"] > current_eval_result["loss"]


def _check_compare_fn(compare_fn: Callable | None) -> None:
    if compare_fn is None:
        raise ValueError("`compare_fn` must not be None.")
    args = set(tf_internals.fn_args(compare_fn))
    for needed in ("best_eval_result", "current_eval_result"):
        if needed not in args:
            raise ValueError(f"compare_fn ({compare_fn}) must include {needed} argument.")
    unexpected = sorted(args - {"best_eval_result", "current_eval_result"})
    if unexpected:
        raise ValueError(f"compare_fn ({compare_fn}) has following not expected args: {unexpected}")


class LatestExporter(Exporter):
    """Exports after every evaluation, keeping the last `exports_to_keep` (None: all)."""

    def __init__(
        self,
        name: str,
        serving_input_receiver_fn: Callable | None = None,
        assets_extra: dict | None = None,
        as_text: bool = False,
        exports_to_keep: int | None = 5,
    ):
        self._writer = _SavedModelWriter(name, serving_input_receiver_fn, assets_extra, as_text)
        _check_exports_to_keep(exports_to_keep, "`exports_to_keep`, if provided, must be positive number")
        self._exports_to_keep = exports_to_keep

    @property
    def name(self) -> str:
        return self._writer.name

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        path = self._writer.write(estimator, export_path, checkpoint_path)
        _keep_newest(export_path, self._exports_to_keep)
        return path


class FinalExporter(Exporter):
    """Exports only at the final evaluation (the one at or after `max_steps`)."""

    def __init__(
        self,
        name: str,
        serving_input_receiver_fn: Callable | None = None,
        assets_extra: dict | None = None,
        as_text: bool = False,
    ):
        self._writer = _SavedModelWriter(name, serving_input_receiver_fn, assets_extra, as_text)

    @property
    def name(self) -> str:
        return self._writer.name

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        if not is_the_final_export:
            return None
        tf.compat.v1.logging.info("Performing the final export in the end of training.")
        return self._writer.write(estimator, export_path, checkpoint_path)


class BestExporter(Exporter):
    """Exports when an evaluation beats the best so far by `compare_fn` (default: a smaller loss).

    Its first export in a process reads the best result recorded in the event
    files that `event_file_pattern` names (relative to the model folder), and
    exports whatever it finds; later evaluations compete with that best. Only
    exports are written into `export/<name>/`.
    """

    def __init__(
        self,
        name: str = "best_exporter",
        serving_input_receiver_fn: Callable | None = None,
        event_file_pattern: str = "eval/*.tfevents.*",
        compare_fn: Callable = _loss_smaller,
        assets_extra: dict | None = None,
        as_text: bool = False,
        exports_to_keep: int | None = 5,
    ):
        _check_compare_fn(compare_fn)
        self._compare_fn = compare_fn
        self._writer = _SavedModelWriter(name, serving_input_receiver_fn, assets_extra, as_text)
        self._event_file_pattern = event_file_pattern
        self._model_dir: str | None = None
        self._best_eval_result: dict | None = None
        self._has_exported = False
        _check_exports_to_keep(exports_to_keep, "`exports_to_keep`, if provided, must be a positive number. Got {}")
        self._exports_to_keep = exports_to_keep

    @property
    def name(self) -> str:
        return self._writer.name

    def _best_in_event_files(self, model_dir: str) -> dict | None:
        best = None
        paths = sorted(tf.io.gfile.glob(os.path.join(model_dir, self._event_file_pattern)))
        for result in eval_results_in(paths).values():
            if best is None or self._compare_fn(best_eval_result=best, current_eval_result=result):
                best = result
        return best

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        if self._model_dir != estimator.model_dir and self._event_file_pattern:
            tf.compat.v1.logging.info("Loading best metric from event files.")
            self._model_dir = estimator.model_dir
            self._best_eval_result = self._best_in_event_files(estimator.model_dir)
        if (
            self._best_eval_result is not None
            and self._has_exported
            and not self._compare_fn(best_eval_result=self._best_eval_result, current_eval_result=eval_result)
        ):
            return None
        tf.compat.v1.logging.info("Performing best model export.")
        self._best_eval_result = eval_result
        path = self._writer.write(estimator, export_path, checkpoint_path)
        _keep_newest(export_path, self._exports_to_keep)
        self._has_exported = True
        return path
