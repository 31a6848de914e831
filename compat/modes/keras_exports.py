"""A trained Keras model's exports: `model.keras` and a checked SavedModel, each whole or not at all.

The SavedModel serves three signatures:
  - `serve`: features `{"audio": [batch, frames, bins]}` -> logits (what `model.export` writes);
  - `classify_waveform`: mono float32 waveforms `[batch, samples]` at the run's sample rate;
  - `classify_wav`: WAV files' bytes `[batch]` (PCM at the run's sample rate, any channels);
the last two fit each clip and compute its features in the graph with the training code
(`compat.data.audio`), so serving cannot drift from training, and return `class_name`,
`class_index`, `probability` and `probabilities`. `classifier.json` beside `saved_model.pb`
holds the class names and the feature settings (sample rate, clip length, STFT and mel
settings). `python train.py --mode=predict` reads it.

`--mode=estimator` exports through `compat.estimator`'s exporters instead
(`export/<name>/<timestamp>`, as tf.estimator did).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from compat.config import PipelineConfig
from compat.core import atomic
from compat.data import audio
from compat.modes.model_folder import SAVED_MODEL

CLASSIFIER_INFO = "classifier.json"
KERAS_MODEL = "model.keras"


class ExportMismatchError(RuntimeError):
    """The SavedModel does not answer like the model it was exported from."""


def _classifier_endpoints(model: keras.Model, pipeline: PipelineConfig, class_names: Sequence[str]) -> dict:
    """name -> (function, input signature) of the signatures that take audio (see the module docstring)."""
    spec, key = pipeline.feature_spec, pipeline.feature_key
    names = tf.constant(list(class_names))

    def classify(features: tf.Tensor) -> dict:
        logits = tf.cast(model({key: features}, training=False), tf.float32)
        probabilities = tf.nn.softmax(logits)
        index = tf.argmax(probabilities, axis=-1)
        return {
            "class_name": tf.gather(names, index),
            "class_index": index,
            "probability": tf.reduce_max(probabilities, axis=-1),
            "probabilities": probabilities,
        }

    def classify_waveform(waveform: tf.Tensor) -> dict:
        clips = tf.map_fn(lambda wave: audio.fit_waveform(wave, spec.clip_samples), waveform)
        return classify(audio.compute_features(clips, spec))

    def one_wav(contents: tf.Tensor) -> tf.Tensor:
        wave, rate = tf.audio.decode_wav(contents)
        check = tf.debugging.assert_equal(
            rate, spec.sample_rate, message=f"classify_wav takes WAV files sampled at {spec.sample_rate} Hz"
        )
        with tf.control_dependencies([check]):
            return audio.fit_waveform(tf.reduce_mean(wave, axis=1), spec.clip_samples)

    def classify_wav(contents: tf.Tensor) -> dict:
        clips = tf.map_fn(one_wav, contents, fn_output_signature=tf.TensorSpec([spec.clip_samples], tf.float32))
        return classify(audio.compute_features(clips, spec))

    return {
        "classify_waveform": (classify_waveform, [tf.TensorSpec([None, None], tf.float32, name="waveform")]),
        "classify_wav": (classify_wav, [tf.TensorSpec([None], tf.string, name="wav")]),
    }


class KerasExports:
    """A trained model's exports, traced once: `model.keras` and a checked SavedModel, written by `write`.

    Writing a SavedModel traces its signatures, most of an export's time (about 1.1 of 1.7 s for the
    default model here); a second `write` (the best period's weights, `best/`) reuses the traced
    signatures and saves the variables' values at that moment.
    """

    def __init__(
        self, model: keras.Model, pipeline: PipelineConfig | None = None, class_names: Sequence[str] | None = None
    ) -> None:
        self._model, self._pipeline, self._class_names = model, pipeline, class_names
        self._archive: keras.export.ExportArchive | None = None

    def _write_saved_model(self, folder: str) -> None:
        """`model.export`'s `serve`, and with a pipeline the audio signatures and classifier.json."""
        model, pipeline, class_names = self._model, self._pipeline, self._class_names
        if pipeline is None or class_names is None:
            model.export(folder, format="tf_saved_model", verbose=False)
            return
        if self._archive is None:
            archive = keras.export.ExportArchive()
            archive.track(model)
            frames, bins = pipeline.feature_spec.shape
            archive.add_endpoint(
                "serve",
                lambda inputs: model(inputs, training=False),
                input_signature=[
                    {pipeline.feature_key: tf.TensorSpec([None, frames, bins], tf.float32, name=pipeline.feature_key)}
                ],
            )
            for name, (function, signature) in _classifier_endpoints(model, pipeline, class_names).items():
                archive.add_endpoint(name, function, input_signature=signature)
            self._archive = archive
        self._archive.write_out(folder, verbose=False)
        # the settings the audio signatures compute with; nothing of the machine (no cache or data paths)
        features = dataclasses.asdict(pipeline.feature_spec)
        info = {"class_names": list(class_names), **features, "feature_key": pipeline.feature_key}
        with open(os.path.join(folder, CLASSIFIER_INFO), "w") as stream:
            json.dump(info, stream, indent=1)

    def write(self, model_dir: str, sample: dict, tolerance: float = 1e-4) -> float:
        """Writes `model.keras` and `saved_model/` into `model_dir`; returns the SavedModel's max |output
        difference| (`tolerance` is relative to the largest output, at least 1). With a pipeline and class
        names the SavedModel also classifies audio (see the module docstring).

        The SavedModel is loaded back and run on `sample` before it replaces the previous one, so a run
        never ends with an export that disagrees with it.

        Raises:
          ExportMismatchError: the SavedModel disagrees with the model (the previous export is kept).
        """
        model = self._model
        # Tracing the three signatures and loading the result back takes seconds: say so.
        logging.info("Exporting to %s (model.keras, saved_model/ with its audio signatures, checked)", model_dir)
        started = time.monotonic()
        atomic.write_file(os.path.join(model_dir, KERAS_MODEL), model.save)
        expected = np.asarray(model(sample, training=False))
        difference = float("nan")

        def export_and_check(folder: str) -> None:
            nonlocal difference
            self._write_saved_model(folder)
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

        atomic.replace_folder(os.path.join(model_dir, SAVED_MODEL), export_and_check)
        logging.info("Exported %s in %.0f s", os.path.join(model_dir, SAVED_MODEL), time.monotonic() - started)
        return difference


def copy_exports(source_dir: str, model_dir: str) -> None:
    """Copies the exports `KerasExports.write` wrote in `source_dir` (`model.keras`, `saved_model/`) to
    `model_dir`, each whole or not at all: the exports of the same weights, without tracing them again."""
    started = time.monotonic()
    atomic.write_file(
        os.path.join(model_dir, KERAS_MODEL),
        lambda path: tf.io.gfile.copy(os.path.join(source_dir, KERAS_MODEL), path, overwrite=True),
    )
    source = os.path.join(source_dir, SAVED_MODEL)

    def copy_tree(folder: str) -> None:
        for parent, _, names in tf.io.gfile.walk(source):
            target = os.path.join(folder, parent[len(source) :].lstrip("/"))
            tf.io.gfile.makedirs(target)
            for name in names:
                tf.io.gfile.copy(os.path.join(parent, name), os.path.join(target, name), overwrite=True)

    atomic.replace_folder(os.path.join(model_dir, SAVED_MODEL), copy_tree)
    logging.info("Copied the exports of %s to %s in %.1f s", source_dir, model_dir, time.monotonic() - started)
