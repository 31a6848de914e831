"""Exporters run after evaluations: LatestExporter, BestExporter, FinalExporter.

Each writes SavedModels under `<model_dir>/export/<name>/<timestamp>` through
`Estimator.export_saved_model` (a temporary name, then a rename).
"""

from __future__ import annotations

import os
from typing import Callable

import tensorflow as tf
from absl import logging

from compat.estimator.early_stopping import eval_results_in


def _loss_smaller(best_eval_result: dict, current_eval_result: dict) -> bool:
    for result in (best_eval_result, current_eval_result):
        if "loss" not in result:
            raise ValueError("best_eval_result and current_eval_result need a 'loss' to compare")
    return current_eval_result["loss"] < best_eval_result["loss"]


class Exporter:
    """Base class: `export(...)` returns the export path, or None when it exported nothing."""

    def __init__(self, name: str, serving_input_receiver_fn: Callable | None = None,
                 exports_to_keep: int | None = None):
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError("`exports_to_keep`, if provided, must be a positive number.")
        self._name = name
        self._serving_input_receiver_fn = serving_input_receiver_fn
        self._exports_to_keep = exports_to_keep

    @property
    def name(self) -> str:
        return self._name

    def export(self, estimator, export_path: str, checkpoint_path: str, eval_result: dict,
               is_the_final_export: bool):
        raise NotImplementedError

    def _write(self, estimator, export_path: str, checkpoint_path: str) -> bytes:
        return estimator.export_saved_model(export_path, self._serving_input_receiver_fn,
                                            checkpoint_path=checkpoint_path)


def _prune(export_path: str, keep: int | None) -> None:
    """Keeps the newest `keep` exports (timestamp-named folders)."""
    if keep is None:
        return
    exports = sorted((int(name.rstrip("/")) for name in tf.io.gfile.listdir(export_path) if name.rstrip("/").isdigit()))
    for stamp in exports[:-keep] if keep else exports:
        tf.io.gfile.rmtree(os.path.join(export_path, str(stamp)))


class LatestExporter(Exporter):
    """Exports after every evaluation, keeping the last `exports_to_keep`."""

    def __init__(self, name: str, serving_input_receiver_fn: Callable | None = None,
                 assets_extra=None, as_text: bool = False, exports_to_keep: int | None = 5):
        super().__init__(name, serving_input_receiver_fn, exports_to_keep)

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        path = self._write(estimator, export_path, checkpoint_path)
        _prune(export_path, self._exports_to_keep)
        return path


class FinalExporter(Exporter):
    """Exports only at the final evaluation."""

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        if not is_the_final_export:
            return None
        return self._write(estimator, export_path, checkpoint_path)


class BestExporter(Exporter):
    """Exports when an evaluation beats the best so far (default: a smaller loss), as TF 2.15.

    At its first export in a process it reads the evaluation results recorded
    in the event files that `event_file_pattern` names (relative to the model
    folder), keeping the best by `compare_fn`, then exports: after a restart,
    the first evaluation is exported, and later ones compete with it. Only
    exports are written into `export/<name>/`.
    """

    def __init__(self, name: str = "best_exporter", serving_input_receiver_fn: Callable | None = None,
                 event_file_pattern: str = "eval/*.tfevents.*", compare_fn: Callable = _loss_smaller,
                 assets_extra=None, as_text: bool = False, exports_to_keep: int | None = 5):
        super().__init__(name, serving_input_receiver_fn, exports_to_keep)
        self._compare_fn = compare_fn
        self._event_file_pattern = event_file_pattern
        self._model_dir: str | None = None
        self._best_eval_result: dict | None = None

    def _best_in_event_files(self, model_dir: str) -> dict | None:
        best = None
        paths = sorted(tf.io.gfile.glob(os.path.join(model_dir, self._event_file_pattern)))
        for result in eval_results_in(paths).values():
            if best is None or self._compare_fn(best_eval_result=best, current_eval_result=result):
                best = result
        return best

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        first_in_this_process = self._model_dir != estimator.model_dir
        if first_in_this_process and self._event_file_pattern:
            logging.info("Loading best metric from event files.")
            self._model_dir = estimator.model_dir
            self._best_eval_result = self._best_in_event_files(estimator.model_dir)
        if not first_in_this_process and not self._compare_fn(best_eval_result=self._best_eval_result,
                                                              current_eval_result=eval_result):
            return None
        logging.info("Performing best model export.")
        self._best_eval_result = eval_result
        path = self._write(estimator, export_path, checkpoint_path)
        _prune(export_path, self._exports_to_keep)
        return path
