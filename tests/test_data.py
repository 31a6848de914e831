"""The builder end to end: shapes, order, augmentation, bad files, input_fn."""

import inspect
import os
import shutil

import numpy as np
import pytest
import soundfile
import tensorflow as tf

from compat import data
from compat.data import audio
from compat.data.audio import BadAudioFileError
from conftest import fsdd_dir, tone, write_class_folders


def _config(cache_dir, **overrides):
    return data.PipelineConfig(cache_dir=cache_dir, **{"batch_size": 4, **overrides})


def _take(dataset, batches):
    return [(f["audio"].numpy(), l.numpy()) for f, l in dataset.take(batches)]


@pytest.mark.parametrize("cache", data.CACHE_MODES)
def test_splits_yield_feature_dicts_and_labels(class_folders, cache_dir, cache):
    config = _config(cache_dir, cache=cache)
    train = data.build_dataset(class_folders, config, "train")
    features, labels = next(iter(train))
    assert set(features) == {"audio"}
    assert features["audio"].shape == (4, *data.feature_shape(config)) and features["audio"].dtype == tf.float32
    assert labels.dtype == tf.int32 and set(labels.numpy()) <= {0, 1, 2}
    assert train.cardinality() == tf.data.INFINITE_CARDINALITY  # train repeats
    test = list(data.build_dataset(class_folders, config, "test"))
    assert sum(int(l.shape[0]) for _, l in test) == data.split_size(class_folders, config, "test")
    predict = next(iter(data.build_dataset(class_folders, config, "predict")))
    assert isinstance(predict, dict) and set(predict) == {"audio"}


def test_eval_is_deterministic_and_unaugmented(class_folders, cache_dir):
    config = _config(cache_dir, cache="none")
    first = _take(data.build_dataset(class_folders, config, "eval"), 10)
    second = _take(data.build_dataset(class_folders, config, "eval"), 10)
    for (a, la), (b, lb) in zip(first, second):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(la, lb)
    # in file order, whatever `deterministic` says (a loaded machine reordered the parallel stages before)
    assert not config.deterministic
    labels = np.concatenate([batch_labels for _, batch_labels in first])
    assert labels.tolist() == list(data.index(class_folders, config).table("eval").labels)[: len(labels)]


@pytest.mark.parametrize("cache", data.CACHE_MODES)
def test_training_is_reproducible_from_the_seed_and_reshuffles_each_epoch(tmp_path, cache):
    root = write_class_folders(tmp_path / "data", per_class=8)
    config = _config(str(tmp_path / "cache"), cache=cache, deterministic=True, seed=7)
    train_files = data.split_size(root, config, "train")
    epoch = -(-train_files // 4)
    run_a = _take(data.build_dataset(root, config, "train"), 2 * epoch)
    run_b = _take(data.build_dataset(root, config, "train"), 2 * epoch)
    for (a, la), (b, lb) in zip(run_a, run_b):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(la, lb)
    labels = lambda batches: np.concatenate([l for _, l in batches])
    assert not np.array_equal(labels(run_a[:epoch]), labels(run_a[epoch:]))  # a new order each epoch
    other = _take(data.build_dataset(root, data.PipelineConfig(**{**config.__dict__, "seed": 8}), "train"), epoch)
    assert not all(np.array_equal(a, b) for (a, _), (b, _) in zip(run_a, other))


def test_augmentation_changes_training_examples_between_epochs(tmp_path):
    root = write_class_folders(tmp_path / "data", classes=("only",), per_class=1)
    manifest = tmp_path / "one.csv"
    for split in ("eval", "test"):  # the same clip in each split: a file itself belongs to one split
        shutil.copy(f"{root}/only/only_0.wav", f"{root}/only/{split}.wav")
    manifest.write_text(f"{root}/only/only_0.wav,only,train\n{root}/only/eval.wav,only,eval\n"
                        f"{root}/only/test.wav,only,test\n")
    config = data.PipelineConfig(cache_dir=str(tmp_path / "c"), batch_size=1, deterministic=True)
    views = [f["audio"].numpy() for f, _ in data.build_dataset(str(manifest), config, "train").take(3)]
    assert not np.array_equal(views[0], views[1]) and not np.array_equal(views[1], views[2])
    plain = next(iter(data.build_dataset(str(manifest), config, "eval")))[0]["audio"].numpy()
    assert np.abs(views[0] - plain).mean() < np.abs(plain).mean()  # still the same clip underneath


def _write_bad_files(folder):
    os.makedirs(folder / "bad", exist_ok=True)
    good = folder / "bad" / "good.wav"
    soundfile.write(str(good), tone(500), 16000, subtype="PCM_16")
    (folder / "bad" / "empty.wav").write_bytes(b"")
    (folder / "bad" / "text.wav").write_text("this is not audio")
    (folder / "bad" / "truncated.wav").write_bytes(good.read_bytes()[:3000])
    soundfile.write(str(folder / "bad" / "broken.flac"), tone(500), 16000)
    flac = (folder / "bad" / "broken.flac").read_bytes()
    (folder / "bad" / "broken.flac").write_bytes(flac[:100] + b"\0" * 50 + flac[150:400])
    return ["broken.flac", "empty.wav", "text.wav", "truncated.wav"]


@pytest.mark.parametrize("bad", ["broken.flac", "empty.wav", "text.wav", "truncated.wav"])
def test_each_bad_file_gives_an_error_naming_it(tmp_path, bad):
    _write_bad_files(tmp_path / "data")
    manifest = tmp_path / "m.csv"
    manifest.write_text(f"data/bad/good.wav,x,train\ndata/bad/{bad},x,eval\n")
    with pytest.raises(Exception, match=rf"cannot read audio file '.*{bad}'.*`skip_bad_files=True`"):
        list(data.build_dataset(str(manifest), _config(str(tmp_path / "c"), cache="none"), "eval"))


def test_skip_bad_files_skips_counts_and_logs_them(tmp_path, caplog):
    bad_names = _write_bad_files(tmp_path / "data")
    manifest = tmp_path / "m.csv"
    shutil.copy(tmp_path / "data" / "bad" / "good.wav", tmp_path / "data" / "bad" / "train.wav")
    manifest.write_text("".join(f"data/bad/{n},x,eval\n" for n in ["good.wav", *bad_names]) + "data/bad/train.wav,x,train\n")
    config = _config(str(tmp_path / "c"), skip_bad_files=True)
    with caplog.at_level("WARNING"):
        batches = list(data.build_dataset(str(manifest), config, "eval"))
    assert sum(int(l.shape[0]) for _, l in batches) == 1
    summary = [r.getMessage() for r in caplog.records if "unreadable file(s) skipped" in r.getMessage()]
    assert summary and "4 unreadable file(s) skipped" in summary[0]
    assert all(name in summary[0] for name in bad_names)


def test_bad_audio_error_type_is_raised_outside_tf_data(tmp_path):
    (tmp_path / "x.wav").write_text("nope")
    with pytest.raises(BadAudioFileError, match="x.wav"):
        data.audio._read_with_soundfile(str(tmp_path / "x.wav"), 16000)


def test_every_cache_mode_gives_each_files_own_features_in_file_order(tmp_path):
    """Features are computed on chunks of clips and cached in chunks; what a split yields must still be
    each file's features computed alone, in the split's file order, whether the cache is cold or warm."""
    root = write_class_folders(tmp_path / "data", per_class=25)
    config = data.PipelineConfig(cache_dir=str(tmp_path / "cache"), batch_size=5, eval_fraction=0.5)
    table = data.index(root, config).table("eval")
    assert len(table) > 32  # more than one chunk of clips, and a last chunk that is not full
    spec = config.feature_spec
    alone = np.stack([
        audio.compute_features(audio.fit_waveform(audio.decode_wav_file(tf.constant(path)), spec.clip_samples)[None],
                               spec)[0].numpy()
        for path in table.paths
    ])
    for cache in data.CACHE_MODES:
        settings = data.PipelineConfig(**{**config.__dict__, "cache": cache})
        dataset = data.build_dataset(root, settings, "eval")
        # the first pass, a second pass of the same dataset (memory: replayed), a dataset built again (disk: a hit)
        for passes in (dataset, dataset, data.build_dataset(root, settings, "eval")):
            batches = list(passes)
            features = np.concatenate([batch["audio"].numpy() for batch, _ in batches])
            labels = np.concatenate([batch_labels.numpy() for _, batch_labels in batches])
            np.testing.assert_allclose(features, alone, rtol=1e-5, atol=1e-5, err_msg=cache)
            assert labels.tolist() == list(table.labels), cache


def test_a_split_of_wavs_decode_wav_reads_decodes_without_per_file_checks_to_the_same_features(tmp_path):
    root = write_class_folders(tmp_path / "data", per_class=4)
    config = data.PipelineConfig(cache="none", deterministic=True)
    table = data.index(root, config).table("train")
    assert audio.all_decode_in_graph(table.paths, config.sample_rate)  # what the builder checks before decoding

    def features(in_graph_only: bool) -> np.ndarray:
        files = data.list_files(table, config, shuffle=False)
        decoded = data.decode(files, config, True, None, in_graph_only=in_graph_only)
        return np.concatenate([chunk.numpy() for chunk, _ in data.transform(decoded, config, True)])

    np.testing.assert_array_equal(features(in_graph_only=True), features(in_graph_only=False))
    soundfile.write(table.paths[0], tone(440), 16000, subtype="PCM_24")  # one file decode_wav cannot read
    assert not audio.all_decode_in_graph(table.paths, config.sample_rate)


def test_input_fn_takes_estimator_arguments_by_signature(class_folders, cache_dir):
    input_fn = data.make_input_fn(class_folders, _config(cache_dir, cache="memory"), "train")
    assert set(inspect.signature(input_fn).parameters) == {"params", "mode", "config", "input_context"}
    features, labels = next(iter(input_fn()))
    assert labels.shape[0] == 4
    features, labels = next(iter(input_fn(params={"batch_size": 2}, mode="train", config=object())))
    assert labels.shape[0] == 2
    predicted = next(iter(input_fn(mode="infer")))
    assert isinstance(predicted, dict)


def test_input_context_shards_the_data_and_splits_the_batch(tmp_path):
    root = write_class_folders(tmp_path / "data", per_class=12)
    for cache in ("none", "disk"):
        config = _config(str(tmp_path / "c"), cache=cache, deterministic=True, batch_size=8, test_fraction=0.5)
        input_fn = data.make_input_fn(root, config, "test")
        shards = []
        for index in range(2):
            context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=index, num_replicas_in_sync=2)
            batches = list(input_fn(input_context=context))
            assert max(int(l.shape[0]) for _, l in batches) == 4  # per-replica batch
            shards.append(np.concatenate([features["audio"].numpy() for features, _ in batches]))
        whole = np.concatenate([features["audio"].numpy() for features, _ in data.build_dataset(root, config, "test")])
        # Each shard example is one of the whole split's (features of a chunk of clips may differ from
        # those of another chunk by float rounding: matched within a tolerance, not by bytes).
        matches = []
        for shard in shards:
            distances = np.abs(shard[:, None] - whole[None]).max(axis=(2, 3))
            assert distances.min(axis=1).max() < 1e-3
            matches.append(set(distances.argmin(axis=1).tolist()))
        assert matches[0].isdisjoint(matches[1]) and matches[0] | matches[1] == set(range(len(whole)))


def test_config_rejects_bad_values_by_name():
    with pytest.raises(ValueError, match="feature 'mel' must be one of"):
        data.PipelineConfig(feature="mel")
    with pytest.raises(ValueError, match="cache 'ram' must be one of"):
        data.PipelineConfig(cache="ram")
    with pytest.raises(ValueError, match="num_parallel_calls must be > 0 or AUTOTUNE"):
        data.PipelineConfig(num_parallel_calls=0)
    with pytest.raises(ValueError, match="time_shift_ms 300.0 must be between 0 and crop_margin_ms"):
        data.PipelineConfig(time_shift_ms=300.0)


@pytest.mark.skipif(fsdd_dir() is None, reason="FSDD not found: set FSDD_DIR to its recordings folder")
def test_fsdd_test_split_through_the_builder(cache_dir):
    config = data.PipelineConfig(cache_dir=cache_dir, sample_rate=8000, batch_size=100)
    batches = list(data.build_dataset("fsdd:" + fsdd_dir(), config, "test"))
    labels = np.concatenate([l.numpy() for _, l in batches])
    assert labels.size == 300 and np.bincount(labels).tolist() == [30] * 10
    assert batches[0][0]["audio"].shape[1:] == (98, 40)


@pytest.mark.parametrize("cache", data.CACHE_MODES)
def test_keras_reads_every_example_of_a_cached_split(tmp_path, cache):
    """Keras sizes a pass by the dataset's cardinality, so it must be the true one."""
    import keras

    root = write_class_folders(tmp_path / "data", per_class=10)
    config = data.PipelineConfig(cache_dir=str(tmp_path / "c"), cache=cache, batch_size=4, test_fraction=0.4)
    expected = data.split_size(root, config, "test")
    inputs = keras.Input(data.feature_shape(config), name="audio")
    model = keras.Model(inputs, keras.layers.GlobalAveragePooling1D()(inputs))
    for _ in range(2):  # the miss, then the hit
        predictions = model.predict(data.build_dataset(root, config, "predict"), verbose=0)
        assert predictions.shape[0] == expected > 4
