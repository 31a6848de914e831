"""Classifying audio files with a run's export: `python train.py --mode=predict --model_dir=DIR FILE...`.

The SavedModel's `classify_waveform` signature (compat/modes/keras_exports.py) fits each clip and computes its
features in the graph, as training did; the files are read here with the training decoder
(`compat.data.audio`: any format libsndfile reads, mixed to mono, resampled to the run's rate).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterator, Sequence

import tensorflow as tf

from compat.core.errors import UserError
from compat.data import audio
from compat.data.sources import is_audio_file
from compat.modes.keras_exports import CLASSIFIER_INFO
from compat.modes.model_folder import SAVED_MODEL


class NoClassifierError(UserError, FileNotFoundError):
    """The folder holds no export that classifies audio."""


@dataclasses.dataclass(frozen=True)
class Prediction:
    path: str
    class_name: str | None  # None when the file could not be read
    probability: float | None
    error: str | None = None


class Classifier:
    """A run's exported classifier: `classify(paths)` yields one Prediction per file."""

    def __init__(self, export_dir: str) -> None:
        info_path = os.path.join(export_dir, CLASSIFIER_INFO)
        if not tf.io.gfile.exists(info_path):
            raise NoClassifierError(
                f"{export_dir} holds no audio classifier ({CLASSIFIER_INFO} is missing): train with "
                "`mode=keras` and `export` on, whose saved_model/ classifies audio; an Estimator run's "
                "exports (export/<name>/<timestamp>) take features"
            )
        with tf.io.gfile.GFile(info_path) as stream:
            self.info = json.load(stream)
        self._loaded = tf.saved_model.load(export_dir)
        self.class_names: list[str] = self.info["class_names"]
        self.sample_rate: int = self.info["sample_rate"]

    def classify(self, paths: Sequence[str]) -> Iterator[Prediction]:
        """One Prediction per file; a folder stands for the audio files in it (and its sub-folders), in order."""
        for path in _files_of(paths):
            if not tf.io.gfile.exists(path):
                yield Prediction(path, None, None, "no such file")
                continue
            if tf.io.gfile.isdir(path):
                yield Prediction(path, None, None, "a folder without audio files (.wav, .flac, .ogg)")
                continue
            try:
                wave, _ = audio.decode_audio(tf.constant(path), self.sample_rate)
            except audio.BadAudioFileError as error:
                yield Prediction(path, None, None, f"cannot read audio file: {error.reason}")
                continue
            except tf.errors.OpError as error:  # a file without read permission
                yield Prediction(path, None, None, f"cannot read audio file: {_reason(error)}")
                continue
            result = self._loaded.classify_waveform(wave[tf.newaxis])
            yield Prediction(path, result["class_name"][0].numpy().decode(), float(result["probability"][0]))


def export_dir_of(model_dir: str) -> str:
    """The export a run folder (or a `best/` folder) classifies with: its `saved_model/`."""
    folder = os.path.join(model_dir, SAVED_MODEL)
    if not tf.io.gfile.isdir(folder):
        raise NoClassifierError(
            f"{model_dir} holds no saved_model/: give the `model_dir` of a finished `mode=keras` run (or its "
            "best/ folder)"
        )
    return folder


def _files_of(paths: Sequence[str]) -> Iterator[str]:
    """The paths as given, each folder replaced by its audio files, sorted (the folder itself if it has none)."""
    for path in paths:
        if not tf.io.gfile.isdir(path):
            yield path
            continue
        found = sorted(
            os.path.join(folder, name)
            for folder, _, names in tf.io.gfile.walk(path)
            for name in names
            if is_audio_file(name)
        )
        yield from found or [path]


def _reason(error: tf.errors.OpError) -> str:
    """An op's message without TensorFlow's op suffix (`[Op:ReadFile] name:`), which says nothing to a user."""
    return re.sub(r"\s*\[Op:[^\]]*\].*$", "", error.message.split(";")[-1]).strip()
