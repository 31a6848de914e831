"""A trained Keras model's exports: `model.keras` and a checked SavedModel, each whole or not at all.

`--mode=estimator` exports through `compat.estimator`'s exporters instead
(`export/<name>/<timestamp>`, as tf.estimator did).
"""

from __future__ import annotations

import os

import keras
import numpy as np
import tensorflow as tf

from compat import atomic


class ExportMismatchError(RuntimeError):
    """The SavedModel does not answer like the model it was exported from."""


def export_keras_model(model: keras.Model, model_dir: str, sample: dict, tolerance: float = 1e-4) -> float:
    """Writes `model.keras` and `saved_model/`; returns the SavedModel's max |output difference|.

    The SavedModel is loaded back and run on `sample` before it replaces the
    previous one, so a run never ends with an export that disagrees with it.
    """
    atomic.write_file(os.path.join(model_dir, "model.keras"), model.save)
    expected = np.asarray(model(sample, training=False))
    difference = float("nan")

    def export_and_check(folder: str) -> None:
        nonlocal difference
        model.export(folder, format="tf_saved_model", verbose=False)
        loaded = tf.saved_model.load(folder)  # keep a reference: its variables die with it
        served = loaded.serve(sample)
        difference = float(np.max(np.abs(np.asarray(served) - expected)))
        if not difference <= tolerance:
            raise ExportMismatchError(f"the SavedModel exported from {model_dir} disagrees with the model by "
                                      f"{difference} (> {tolerance}); the previous export was kept")

    atomic.replace_folder(os.path.join(model_dir, "saved_model"), export_and_check)
    return difference
