"""The Estimator engines keep what a legacy input_fn decodes between its calls (compat/estimator/input_cache.py)."""

import glob
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import soundfile
import tensorflow as tf

import compat.estimator as estimator
from compat.estimator import input_cache
from conftest import HELPERS, REPO, tone, write_class_folders


@pytest.fixture
def clips(tmp_path):
    return write_class_folders(tmp_path / "data", per_class=5)


def wav_pipeline(data_dir: str, train: bool = True) -> tf.data.Dataset:
    """A legacy WAV input_fn's shape: file list, decode, shuffle, repeat, features, batch; seeded."""
    tf.random.set_seed(3)
    paths = sorted(glob.glob(os.path.join(data_dir, "*", "*.wav")))
    classes = sorted(os.listdir(data_dir))
    labels = [classes.index(os.path.basename(os.path.dirname(p))) for p in paths]

    def decode(path, label):
        audio, _ = tf.audio.decode_wav(tf.io.read_file(path))
        return audio[:4000, 0], label

    def features(wave, label):
        return {"energy": tf.math.log1p(tf.reduce_mean(tf.abs(tf.signal.stft(wave, 256, 128)), axis=0))}, label

    dataset = tf.data.Dataset.from_tensor_slices((paths, labels)).map(decode)
    if train:
        dataset = dataset.shuffle(len(paths)).repeat(3)
    return dataset.map(features).batch(4)


def elements(dataset: tf.data.Dataset) -> list:
    return [(x["energy"].numpy(), y.numpy()) for x, y in dataset]


def assert_same(first: list, second: list) -> None:
    assert len(first) == len(second)
    for (x1, y1), (x2, y2) in zip(first, second):
        np.testing.assert_array_equal(y1, y2)
        np.testing.assert_array_equal(x1, x2)


def test_every_element_and_its_order_are_the_input_fns_own_when_written_and_replayed(clips, tmp_path):
    cache = input_cache.InputCache(input_cache.InputCacheSettings(folder=str(tmp_path / "cache")))
    for train in (True, False):
        uncached = elements(wav_pipeline(clips, train))
        written = elements(cache.wrap(wav_pipeline(clips, train), "wav_pipeline", "train"))
        cache.publish()
        replayed = elements(cache.wrap(wav_pipeline(clips, train), "wav_pipeline", "train"))
        assert_same(uncached, written)
        assert_same(uncached, replayed)
    # one published entry per pipeline: the decode map, and the features map moved before shuffle and repeat
    assert len([name for name in os.listdir(tmp_path / "cache") if not name.startswith(".")]) == 2


def test_the_plan_caches_the_decoding_and_moves_stateless_maps_before_shuffle_and_repeat(clips):
    where = input_cache.plan(input_cache.dataset_graph(wav_pipeline(clips)))
    ops = {node.name: node.op for node in input_cache.dataset_graph(wav_pipeline(clips)).node}
    assert [ops[name] for name in where.prefix] == ["TensorSliceDataset", "MapDataset"]
    assert [ops[name] for name in where.hoisted] == ["MapDataset"]
    assert [ops[name] for name in where.reordering] == ["ShuffleDatasetV3", "RepeatDataset"]


def test_pipelines_without_a_deterministic_prefix_are_left_alone(clips, tmp_path):
    paths = sorted(glob.glob(os.path.join(clips, "*", "*.wav")))
    noisy = tf.data.Dataset.from_tensor_slices(paths).map(lambda p: tf.random.uniform([]) + tf.cast(tf.strings.length(p), tf.float32))
    generated = tf.data.Dataset.from_generator(lambda: iter(range(3)), output_types=tf.int64).map(lambda x: x * 2)
    file_names_only = tf.data.Dataset.from_tensor_slices(paths).batch(2)
    cache = input_cache.InputCache(input_cache.InputCacheSettings(folder=str(tmp_path / "cache")))
    table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(["high", "low"], [0, 1]), -1)
    looked_up = tf.data.Dataset.from_tensor_slices(paths).map(lambda p: table.lookup(tf.strings.split(p, "/")[-2]))
    for dataset in (noisy, generated, file_names_only, looked_up):
        assert cache.wrap(dataset, "f", "train") is dataset


def test_an_edited_file_is_read_again(clips, tmp_path):
    cache = input_cache.InputCache(input_cache.InputCacheSettings(folder=str(tmp_path / "cache")))
    elements(cache.wrap(wav_pipeline(clips, False), "f", "eval"))
    cache.publish()
    edited = sorted(glob.glob(os.path.join(clips, "*", "*.wav")))[0]
    soundfile.write(edited, 0.1 * tone(300, seconds=0.3, seed=9), 16000, subtype="PCM_16")
    assert_same(elements(wav_pipeline(clips, False)), elements(cache.wrap(wav_pipeline(clips, False), "f", "eval")))


def test_a_pass_cut_short_publishes_nothing(clips, tmp_path):
    folder = tmp_path / "cache"
    cache = input_cache.InputCache(input_cache.InputCacheSettings(folder=str(folder)))
    list(cache.wrap(wav_pipeline(clips, False), "f", "eval").take(1))
    cache.publish()
    assert [name for name in os.listdir(folder) if not name.startswith(".")] == []
    assert_same(elements(wav_pipeline(clips, False)), elements(cache.wrap(wav_pipeline(clips, False), "f", "eval")))


def test_a_kill_mid_write_leaves_nothing_taken_as_whole_and_a_later_process_replays(clips, tmp_path):
    folder = str(tmp_path / "cache")
    program = [sys.executable, os.path.join(HELPERS, "input_cache_program.py"), clips, folder]
    env = {**os.environ, "PYTHONPATH": REPO}
    slow = subprocess.Popen([*program, "30"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert slow.stdout.readline().strip().isdigit()  # the first element has passed: the cache is being written
    slow.send_signal(signal.SIGKILL)
    slow.wait(timeout=60)
    assert [name for name in os.listdir(folder) if not name.startswith(".")] == []
    writer = subprocess.run(program, capture_output=True, text=True, env=env, timeout=300)
    assert writer.returncode == 0, writer.stderr[-2000:]
    assert "caches its deterministic stages" in writer.stderr
    replay = subprocess.run(program, capture_output=True, text=True, env=env, timeout=300)
    assert replay.returncode == 0, replay.stderr[-2000:]
    assert "replays its deterministic stages" in replay.stderr
    assert writer.stdout == replay.stdout and writer.stdout.endswith("done\n")


def test_settings_from_run_config_and_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(input_cache.ENVIRONMENT_VARIABLE, raising=False)
    assert input_cache.settings_from(None) == input_cache.InputCacheSettings()
    assert not input_cache.settings_from(False).enabled
    assert input_cache.settings_from(str(tmp_path)).folder == str(tmp_path)
    # the environment decides for programs whose RunConfig says nothing; a RunConfig that says wins
    monkeypatch.setenv(input_cache.ENVIRONMENT_VARIABLE, "0")
    assert not input_cache.settings_from(None).enabled
    assert input_cache.settings_from(True).enabled
    monkeypatch.setenv(input_cache.ENVIRONMENT_VARIABLE, str(tmp_path / "kept"))
    assert input_cache.settings_from(None).folder == str(tmp_path / "kept")
    assert not input_cache.settings_from(False).enabled
    assert estimator.RunConfig(input_cache=False).replace(input_cache=str(tmp_path)).input_cache == str(tmp_path)


def _model_fn(features, labels, mode):
    logits = tf.compat.v1.layers.dense(features["energy"], 3, kernel_initializer=tf.compat.v1.zeros_initializer())
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _keras_model() -> tf.keras.Model:
    tf.keras.utils.set_random_seed(0)  # the same initial weights with and without the cache
    inputs = tf.keras.Input((129,), name="energy")
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(3)(inputs))
    model.compile("sgd", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


@pytest.mark.parametrize("engine", ["graph", "keras"])
def test_both_engines_replay_an_input_fn_and_evaluate_as_without_the_cache(engine, clips, tmp_path, installed):
    def input_fn(mode):
        return wav_pipeline(clips, train=mode == estimator.ModeKeys.TRAIN)

    folder = tmp_path / "cache"
    results, entries = {}, []
    for setting in (False, str(folder)):
        config = estimator.RunConfig(model_dir=str(tmp_path / f"model-{bool(setting)}"), tf_random_seed=1,
                                     input_cache=setting)
        if engine == "graph":
            made = estimator.Estimator(_model_fn, config=config)
        else:
            made = estimator.model_to_estimator(keras_model=_keras_model(), config=config)
        made.train(input_fn, steps=4)
        first = made.evaluate(input_fn)
        entries.append(sorted(os.listdir(folder)) if setting else [])
        second = made.evaluate(input_fn)
        entries.append(sorted(os.listdir(folder)) if setting else [])
        results[setting] = (first, second)
    (first_off, _), (first_on, second_on) = results[False], results[str(folder)]
    assert first_on["loss"] > 0.01  # a model still learning: equal losses mean equal inputs
    assert first_off["loss"] == pytest.approx(first_on["loss"], rel=1e-5)
    assert second_on["loss"] == pytest.approx(first_on["loss"], rel=1e-5)
    # The first evaluation published its cache; the second replayed it, writing nothing new.
    assert [name for name in entries[2] if not name.startswith(".")]
    assert entries[3] == entries[2]


def test_the_cache_holds_its_data_on_disk_not_in_memory(tmp_path):
    """A cache of 240 MB, written then replayed, raises the process's resident memory by less than a
    quarter of that more than the same two passes without it, where an in-memory `dataset.cache()` (the
    measurement's own check) raises it by more than half."""
    program = [sys.executable, os.path.join(HELPERS, "input_cache_memory.py")]
    env = {**os.environ, "PYTHONPATH": REPO}
    runs = {}
    for name, folder in (("off", "off"), ("memory", "memory"), ("cached", str(tmp_path / "cache"))):
        result = subprocess.run([*program, folder, "240"], capture_output=True, text=True, env=env, timeout=300)
        assert result.returncode == 0, result.stderr[-2000:]
        runs[name] = json.loads(result.stdout.strip().splitlines()[-1])
    assert runs["cached"]["checksum"] == runs["memory"]["checksum"] == runs["off"]["checksum"]
    cache_bytes = runs["cached"]["cached_bytes"]
    assert cache_bytes >= 240 << 20  # the whole pass was written, and published
    assert runs["memory"]["rise_bytes"] - runs["off"]["rise_bytes"] > cache_bytes / 2
    assert runs["cached"]["rise_bytes"] - runs["off"]["rise_bytes"] < cache_bytes / 4
