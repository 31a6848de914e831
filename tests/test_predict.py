"""After training: the export classifies audio files as the trained model does, from the command line too."""

import dataclasses
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO, train_in_process

TINY = [
    "--clip_seconds=0.5",
    "--batch_size=8",
    "--model=cnn",
    "--width=4",
    "--depth=1",
    "--crop_margin_ms=50",
    "--time_shift_ms=50",
]


@pytest.fixture(scope="module")
def trained(tiny_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("predict")
    model_dir = root / "run"
    result = train_in_process(
        "--dataset=folder",
        f"--data_dir={tiny_data}",
        f"--cache_dir={root / 'cache'}",
        *TINY,
        "--epochs=3",
        f"--model_dir={model_dir}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return model_dir


def _files(tiny_data):
    return [os.path.join(tiny_data, label, f"{label}_{n}.wav") for label in ("high", "low", "mid") for n in (0, 5)]


def _in_process_answers(model_dir, files):
    """The trained model.keras on the features the training pipeline computes for each file."""
    import keras
    import tensorflow as tf

    from compat.data import audio
    from compat.config import PipelineConfig

    info = json.loads((model_dir / "saved_model" / "classifier.json").read_text())
    spec = dataclasses.replace(PipelineConfig(), clip_seconds=0.5).feature_spec
    assert spec.sample_rate == info["sample_rate"] and spec.clip_samples == info["clip_samples"]
    model = keras.models.load_model(model_dir / "model.keras")
    answers = []
    for path in files:
        wave, _ = audio.decode_audio(tf.constant(path), spec.sample_rate)
        features = audio.compute_features(audio.fit_waveform(wave, spec.clip_samples)[tf.newaxis], spec)
        probabilities = tf.nn.softmax(model({"audio": features})).numpy()[0]
        answers.append((info["class_names"][int(np.argmax(probabilities))], float(np.max(probabilities))))
    return answers


def test_the_export_classifies_waveforms_and_wav_bytes_as_the_trained_model(trained, tiny_data):
    import tensorflow as tf

    files = _files(tiny_data)
    expected = _in_process_answers(trained, files)
    served = tf.saved_model.load(str(trained / "saved_model"))
    wav_bytes = tf.constant([open(path, "rb").read() for path in files])
    by_bytes = served.classify_wav(wav_bytes)
    names = [name.decode() for name in by_bytes["class_name"].numpy()]
    assert names == [name for name, _ in expected]
    np.testing.assert_allclose(by_bytes["probability"].numpy(), [p for _, p in expected], atol=1e-5)
    np.testing.assert_allclose(by_bytes["probabilities"].numpy().sum(axis=1), 1.0, atol=1e-5)
    # the features signature is still there, for programs that compute features themselves
    assert served.serve is not None


def test_predict_mode_prints_one_line_per_file_and_names_unreadable_ones(trained, tiny_data, tmp_path):
    files = _files(tiny_data)
    expected = _in_process_answers(trained, files)
    broken = tmp_path / "broken.wav"
    broken.write_text("not audio")
    folder = tmp_path / "a_folder.wav"
    folder.mkdir()
    command = [sys.executable, "train.py", "--mode=predict", f"--model_dir={trained}", *files, str(broken), str(folder)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 1, result.stderr[-2000:]  # one file could not be read; the others are answered
    lines = [line.split("\t") for line in result.stdout.splitlines()]
    assert [(path, name) for path, name, _ in lines] == [(path, name) for path, (name, _) in zip(files, expected)]
    np.testing.assert_allclose([float(p) for _, _, p in lines], [p for _, p in expected], atol=2e-3)
    assert f"{broken}: cannot read audio file" in result.stderr and "Traceback" not in result.stderr
    assert f"{folder}: a folder without audio files (.wav, .flac, .ogg)" in result.stderr
    assert "[Op:" not in result.stderr  # TensorFlow's op names say nothing to a user

    # a folder stands for the audio files below it, in order
    clips = tmp_path / "clips" / "more"
    clips.mkdir(parents=True)
    for index, path in enumerate(files[:2]):
        shutil.copy(path, clips / f"clip_{index}.wav")
    result = subprocess.run([*command[:4], str(tmp_path / "clips")], capture_output=True, text=True, cwd=REPO,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [line.split("\t") for line in result.stdout.splitlines()]
    assert [(path, name) for path, name, _ in lines] == [
        (str(clips / f"clip_{index}.wav"), name) for index, (name, _) in enumerate(expected[:2])]

    empty = train_in_process("--mode=predict", f"--model_dir={tmp_path}", *files)  # the same main(), in process
    assert empty.returncode == 2 and "holds no saved_model/" in empty.stderr and "--mode=keras" in empty.stderr


def test_a_folder_without_an_export_is_refused_naming_it_and_what_to_give(tmp_path):
    """Fast: no training. A folder without saved_model/, and an export that is not the audio classifier."""
    from compat.modes.predict import Classifier, NoClassifierError, export_dir_of

    with pytest.raises(NoClassifierError, match=f"{tmp_path} holds no saved_model/.*finished `mode=keras` run"):
        export_dir_of(str(tmp_path))
    (tmp_path / "saved_model").mkdir()
    assert export_dir_of(str(tmp_path)) == str(tmp_path / "saved_model")
    with pytest.raises(NoClassifierError, match="holds no audio classifier.*an Estimator run's"):
        Classifier(str(tmp_path / "saved_model"))
