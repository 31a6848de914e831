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
    """Writes `model.keras` and `saved_model/`; returns the SavedModel's max |output difference|
    (`tolerance` is relative to the largest output, at least 1).

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
        # Relative to the outputs' size: the served graph fuses ops differently, and float32 logits of
        # magnitude 10-20 differ in the fifth significant digit (1.4e-4 seen after a resumed run).
        limit = tolerance * max(1.0, float(np.max(np.abs(expected))))
        if not difference <= limit:
            raise ExportMismatchError(
                f"the SavedModel exported from {model_dir} disagrees with the model by "
                f"{difference} (> {limit:.2g}); the previous export was kept"
            )

    atomic.replace_folder(os.path.join(model_dir, "saved_model"), export_and_check)
    return difference
