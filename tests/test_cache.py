"""The persistent cache across calls and processes: hits, invalidation, crashes, races."""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import soundfile

from compat import data
from compat.data import cache
from compat.data.sources import DataSource, list_split, split_position
from conftest import HELPERS, run_helper, write_class_folders


def _digest(source, cache_dir, split="eval", **overrides):
    result = run_helper("digest_split.py", source, cache_dir, split, json.dumps(overrides), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1]), result.stderr


def _keep_stat_but_scramble(path):
    """Overwrites a file with noise of the same size and modification time."""
    stat = os.stat(path)
    with open(path, "r+b") as stream:
        stream.seek(44)
        stream.write(np.random.default_rng(0).integers(0, 255, stat.st_size - 44, dtype=np.uint8).tobytes())
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_a_second_process_hits_the_cache_and_decodes_nothing(tmp_path):
    root = write_class_folders(tmp_path / "data", per_class=10)
    cache_dir = str(tmp_path / "cache")
    first, log = _digest(root, cache_dir, eval_fraction=0.5)
    assert "Dataset cache miss" in log and "Dataset cache written" in log
    # If the second process decoded anything, the scrambled audio would change its digest.
    for path in list_split(DataSource.parse(root), "eval", cache_dir, 0.5, 0.1).paths:
        _keep_stat_but_scramble(path)
    second, log = _digest(root, cache_dir, eval_fraction=0.5)
    assert "Dataset cache hit" in log and "Dataset cache miss" not in log
    assert second == first and first["examples"] > 0


def test_a_touched_file_or_a_changed_setting_gives_a_new_key(tmp_path):
    root = write_class_folders(tmp_path / "data", per_class=10)
    cache_dir = str(tmp_path / "cache")
    config = data.PipelineConfig(cache_dir=cache_dir, eval_fraction=0.5, deterministic=True)

    def eval_features(config):
        return np.concatenate([f["audio"].numpy() for f, _ in data.build_dataset(root, config, "eval")])

    before = eval_features(config)
    assert len(cache.list_entries(cache_dir)) == 1
    path = list_split(DataSource.parse(root), "eval", cache_dir, 0.5, 0.1).paths[0]
    soundfile.write(path, np.zeros(8000), 16000, subtype="PCM_16")  # new content, new mtime and size
    after = eval_features(config)
    assert len(cache.list_entries(cache_dir)) == 2 and not np.array_equal(before, after)
    os.utime(path)  # same content, new modification time: rebuilt, never trusted stale
    eval_features(config)
    assert len(cache.list_entries(cache_dir)) == 3
    eval_features(data.PipelineConfig(**{**config.__dict__, "n_mels": 20}))
    assert len(cache.list_entries(cache_dir)) == 4
    eval_features(data.PipelineConfig(**{**config.__dict__, "batch_size": 3, "noise_stddev": 0.2}))
    assert len(cache.list_entries(cache_dir)) == 4  # after-cache settings share the entry


def test_kill_during_the_cache_write_leaves_nothing_that_blocks_the_next_run(tmp_path):
    root = write_class_folders(tmp_path / "data", per_class=20)
    # a name past the middle of the hash order: a training file (the first tenths of a class go to eval and test)
    name = next(f"pipe{i}.wav" for i in range(100) if split_position(f"high/pipe{i}.wav") > 0.5)
    blocking = os.path.join(root, "high", name)
    os.mkfifo(blocking)  # reading it blocks: the first epoch's write cannot finish before the kill
    cache_dir = str(tmp_path / "cache")
    writer = subprocess.Popen([sys.executable, os.path.join(HELPERS, "slow_train.py"), root, cache_dir],
                              stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "ready"
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=60)
    entries = os.path.join(cache_dir, "datasets")
    leftovers = os.listdir(entries)
    assert leftovers and all(name.startswith(".tmp-") for name in leftovers)
    assert cache.list_entries(cache_dir) == []  # a partial write is never an entry
    os.remove(blocking)

    config = data.PipelineConfig(cache_dir=cache_dir, batch_size=8)
    train_files = len(list_split(DataSource.parse(root), "train", cache_dir))
    for _ in data.build_dataset(root, config, "train").take(-(-train_files // 8) + 1):
        pass  # one whole epoch, then one more batch: the entry is published
    (entry,) = cache.list_entries(cache_dir)
    assert entry.examples == train_files
    assert not any(name in os.listdir(entries) for name in leftovers)  # the dead writer's folder is gone


def test_two_processes_building_one_key_both_succeed(tmp_path):
    root = write_class_folders(tmp_path / "data", per_class=15)
    cache_dir = str(tmp_path / "cache")
    command = [sys.executable, os.path.join(HELPERS, "digest_split.py"), root, cache_dir, "eval",
               json.dumps({"eval_fraction": 0.5})]
    both = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [process.communicate(timeout=300) for process in both]
    assert [process.returncode for process in both] == [0, 0], outputs[0][1][-2000:] + outputs[1][1][-2000:]
    digests = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    assert digests[0] == digests[1]
    assert len(cache.list_entries(cache_dir)) == 1
    assert os.listdir(os.path.join(cache_dir, "datasets")) == [cache.list_entries(cache_dir)[0].key]
    third, _ = _digest(root, cache_dir, eval_fraction=0.5)
    assert third == digests[0]


def test_two_processes_with_different_settings_on_one_cache_folder_both_get_their_own_examples(tmp_path):
    root = write_class_folders(tmp_path / "data", per_class=15)
    cache_dir = str(tmp_path / "cache")
    settings = [{"eval_fraction": 0.5, "n_mels": 40}, {"eval_fraction": 0.5, "n_mels": 20}]
    both = [subprocess.Popen([sys.executable, os.path.join(HELPERS, "digest_split.py"), root, cache_dir, "eval",
                              json.dumps(overrides)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for overrides in settings]
    outputs = [process.communicate(timeout=300) for process in both]
    assert [process.returncode for process in both] == [0, 0], outputs[0][1][-2000:] + outputs[1][1][-2000:]
    together = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    assert len(cache.list_entries(cache_dir)) == 2
    # Each equals what that setting gives alone, from its own (uncached) decode.
    alone = [_digest(root, str(tmp_path / f"alone{i}"), **overrides)[0] for i, overrides in enumerate(settings)]
    assert together == alone and together[0] != together[1]


def test_entries_can_be_listed_and_removed(tmp_path):
    root = write_class_folders(tmp_path / "data", per_class=10)
    cache_dir = str(tmp_path / "cache")
    for split in ("eval", "test"):
        list(data.build_dataset(root, data.PipelineConfig(cache_dir=cache_dir, test_fraction=0.3), split))
    entries = cache.list_entries(cache_dir)
    assert sorted(e.description["split"] for e in entries) == ["eval", "test"]
    assert all(e.size_bytes > 0 and e.examples > 0 for e in entries)
    assert cache.remove_entries(cache_dir, unused_for_seconds=3600) == []
    removed = cache.remove_entries(cache_dir, keys=[entries[0].key])
    assert [e.key for e in removed] == [entries[0].key]
    # `compat.cache`: the command's name before 0.2, kept for scripts that call it
    listed = subprocess.run([sys.executable, "-m", "compat.cache", "list", f"--cache_dir={cache_dir}"],
                            capture_output=True, text=True, check=True).stdout
    assert entries[1].key in listed and entries[0].key not in listed and "1 entry listed" in listed
    removed = subprocess.run([sys.executable, "-m", "compat.data.cache", "remove", f"--cache_dir={cache_dir}"],
                             capture_output=True, text=True, check=True).stdout
    assert "1 entry removed" in removed and cache.list_entries(cache_dir) == []


def test_scripts_written_before_0_2_find_the_cache_under_its_old_name():
    from compat import cache as old_name

    assert old_name.fingerprint is cache.fingerprint and old_name.list_entries is cache.list_entries
    assert old_name.CacheUnavailableError is cache.CacheUnavailableError
    with pytest.raises(AttributeError):
        old_name.no_such_name  # noqa: B018


def test_a_training_entry_removed_during_the_run_is_not_published_again(tmp_path):
    """A training entry is published as its first replay starts; each later epoch's start must not publish it
    again from the run's temporary files once it is removed (by `remove`, or discarded as damaged): those
    are hard links to the removed files, damage included."""
    root = write_class_folders(tmp_path / "data", per_class=10)
    cache_dir = str(tmp_path / "cache")
    config = data.PipelineConfig(cache_dir=cache_dir, batch_size=4, deterministic=True)
    examples = len(list_split(DataSource.parse(root), "train", cache_dir, config.eval_fraction,
                              config.test_fraction))
    batches = iter(data.build_dataset(root, config, "train"))
    per_epoch = -(-examples // 4)
    for _ in range(per_epoch + 1):  # into the first replay: published
        next(batches)
    (entry,) = cache.list_entries(cache_dir)
    cache.remove_entries(cache_dir, keys=[entry.key])
    for _ in range(2 * per_epoch):  # two more epochs' starts
        next(batches)
    assert cache.list_entries(cache_dir) == []


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "delete"])
def test_a_damaged_entry_is_found_before_its_data_is_read_and_rebuilt(tmp_path, caplog, damage):
    root = write_class_folders(tmp_path / "data", per_class=10)
    cache_dir = str(tmp_path / "cache")
    config = data.PipelineConfig(cache_dir=cache_dir, eval_fraction=0.5, deterministic=True)

    def eval_features():
        return np.concatenate([f["audio"].numpy() for f, _ in data.build_dataset(root, config, "eval")])

    before = eval_features()
    (entry,) = cache.list_entries(cache_dir)
    segment = sorted(name for name in os.listdir(entry.path) if name.startswith("chunk-"))[0]
    path = os.path.join(entry.path, segment)
    if damage == "flip a byte":
        with open(path, "r+b") as stream:
            stream.seek(os.path.getsize(path) // 2)
            byte = stream.read(1)
            stream.seek(-1, os.SEEK_CUR)
            stream.write(bytes([byte[0] ^ 0xFF]))
    elif damage == "truncate":
        os.truncate(path, os.path.getsize(path) // 2)
    else:
        os.remove(path)
    with caplog.at_level("WARNING"):
        after = eval_features()
    assert "is damaged" in caplog.text and segment in caplog.text
    np.testing.assert_array_equal(before, after)  # rebuilt from the files, never the damaged bytes
    assert cache.damage(cache.list_entries(cache_dir)[0].path) is None


def test_an_unwritable_cache_folder_falls_back_to_no_cache_with_a_warning(tmp_path, caplog):
    root = write_class_folders(tmp_path / "data", per_class=6)
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # a cache folder inside a file cannot be created, even by root
    config = data.PipelineConfig(cache_dir=str(blocked / "cache"), eval_fraction=0.5)
    with caplog.at_level("WARNING"):
        train = next(iter(data.build_dataset(root, config, "train")))
        evaluated = sum(int(labels.shape[0]) for _, labels in data.build_dataset(root, config, "eval"))
    assert "Going on without the disk cache" in caplog.text and str(blocked) in caplog.text
    assert int(train[1].shape[0]) > 0 and evaluated == data.split_size(root, config, "eval")
