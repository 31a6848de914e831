"""The bad-input catalogue: each kind of bad input gets a message naming it and what to do, and loses nothing.

The "Bad input" table of docs/faults.md lists every kind with what happens; each row
points at the test here (or the one elsewhere) that shows it. Everything runs
in this process except the full disk, which needs a process of its own.
"""

import glob
import io
import json
import os
import resource
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest
import soundfile
import tensorflow as tf
from conftest import REPO, tone, train_in_process, write_class_folders

from compat import data
from compat.core.faults import storage_problem
from compat.data.sources import DataSource, DataSourceError, build_index, list_split

RATE = 16000


def _config(tmp_path, **overrides):
    return data.PipelineConfig(cache_dir=str(tmp_path / "cache"), batch_size=4, cache="none", **overrides)


def _manifest(tmp_path, eval_file: str) -> str:
    """A manifest with one good training clip and `eval_file` (in tmp_path/audio) as the eval split."""
    audio = tmp_path / "audio"
    audio.mkdir(exist_ok=True)
    soundfile.write(str(audio / "good.wav"), tone(500), RATE, subtype="PCM_16")
    manifest = tmp_path / "m.csv"
    manifest.write_text(f"audio/good.wav,x,train\naudio/{eval_file},x,eval\n")
    return str(manifest)


def _eval_features(tmp_path, name: str, **overrides) -> np.ndarray:
    batches = data.build_dataset(_manifest(tmp_path, name), _config(tmp_path, **overrides), "eval")
    return np.concatenate([features["audio"].numpy() for features, _ in batches])


def _good_wav_bytes() -> bytearray:
    buffer = io.BytesIO()
    soundfile.write(buffer, tone(500), RATE, format="WAV", subtype="PCM_16")
    return bytearray(buffer.getvalue())


def _patched_wav(folder, name: str, offset: int, fmt: str, value: int) -> str:
    """A canonical 16-bit WAV with one header field overwritten."""
    contents = _good_wav_bytes()
    contents[offset : offset + struct.calcsize(fmt)] = struct.pack(fmt, value)
    (folder / "audio").mkdir(exist_ok=True)
    (folder / "audio" / name).write_bytes(bytes(contents))
    return name


def _assert_named_audio_error(tmp_path, name: str, reason: str) -> None:
    with pytest.raises(Exception, match=rf"cannot read audio file '.*{name}': .*{reason}.*`skip_bad_files=True`"):
        _eval_features(tmp_path, name)
    # ... and --skip_bad_files drops it (the eval split then has no examples): the run goes on.
    assert _eval_features_or_empty(tmp_path, name) == 0


def _eval_features_or_empty(tmp_path, name: str) -> int:
    batches = data.build_dataset(_manifest(tmp_path, name), _config(tmp_path, skip_bad_files=True), "eval")
    return sum(int(labels.shape[0]) for _, labels in batches)


# -- audio files ------------------------------------------------------------------------------------


def test_a_wav_with_no_samples(tmp_path):
    (tmp_path / "audio").mkdir()
    soundfile.write(str(tmp_path / "audio" / "zero.wav"), np.zeros(0, np.float32), RATE, subtype="PCM_16")
    _assert_named_audio_error(tmp_path, "zero.wav", "no audio frames")


def test_a_float_wav_holding_nan_or_infinity(tmp_path):
    # One NaN sample makes every feature of the clip, then the loss, NaN: refused before training sees it.
    for name, value in (("nan.wav", np.nan), ("inf.wav", np.inf)):
        wave = tone(500).astype(np.float32)
        wave[100] = value
        (tmp_path / "audio").mkdir(exist_ok=True)
        soundfile.write(str(tmp_path / "audio" / name), wave, RATE, subtype="FLOAT")
        _assert_named_audio_error(tmp_path, name, "sample 100 is .*NaN or infinite")


def test_a_header_that_claims_gigabytes(tmp_path):
    # The data chunk's size field says ~2 GB in a 16 kB file: not read past its end, not allocated.
    name = _patched_wav(tmp_path, "huge.wav", 40, "<I", 0x7FFFFF00)
    _assert_named_audio_error(tmp_path, name, "truncated")


def test_an_unsupported_sample_format(tmp_path):
    name = _patched_wav(tmp_path, "format.wav", 20, "<H", 0x1234)  # a format code libsndfile does not know
    _assert_named_audio_error(tmp_path, name, "not a readable audio file")


def test_a_wav_with_zero_channels(tmp_path):
    name = _patched_wav(tmp_path, "nochannels.wav", 22, "<H", 0)
    _assert_named_audio_error(tmp_path, name, "[Cc]hannel")


def test_a_wav_ending_in_a_partial_frame_reads_as_its_whole_frames(tmp_path):
    # TensorFlow's decode_wav refuses the odd byte without naming the file: such a file goes to soundfile.
    contents = _good_wav_bytes()
    data_bytes = struct.unpack("<I", contents[40:44])[0]
    contents += b"\x01"
    contents[40:44] = struct.pack("<I", data_bytes + 1)
    contents[4:8] = struct.pack("<I", len(contents) - 8)
    (tmp_path / "audio").mkdir()
    (tmp_path / "audio" / "partial.wav").write_bytes(bytes(contents))
    (tmp_path / "audio" / "whole.wav").write_bytes(bytes(_good_wav_bytes()))
    np.testing.assert_allclose(_eval_features(tmp_path, "partial.wav"), _eval_features(tmp_path, "whole.wav"))


def test_eight_channels_are_mixed_down_to_the_mono_clip(tmp_path):
    (tmp_path / "audio").mkdir()
    soundfile.write(str(tmp_path / "audio" / "eight.wav"), tone(500, channels=8), RATE, subtype="PCM_16")
    soundfile.write(str(tmp_path / "audio" / "mono.wav"), tone(500), RATE, subtype="PCM_16")
    np.testing.assert_allclose(_eval_features(tmp_path, "eight.wav"), _eval_features(tmp_path, "mono.wav"), atol=1e-3)


def test_a_file_whose_extension_lies_is_read_by_its_content(tmp_path):
    (tmp_path / "audio").mkdir()
    soundfile.write(str(tmp_path / "audio" / "real.flac"), tone(500), RATE, format="FLAC")
    shutil.copy(tmp_path / "audio" / "real.flac", tmp_path / "audio" / "flac-named.wav")
    np.testing.assert_allclose(_eval_features(tmp_path, "flac-named.wav"), _eval_features(tmp_path, "real.flac"))


# -- folders and manifests ----------------------------------------------------------------------------


def test_a_class_folder_without_audio_is_left_out_with_a_warning(tmp_path, caplog):
    root = write_class_folders(tmp_path / "data", classes=("high", "low"), per_class=4)
    (tmp_path / "data" / "silence").mkdir()
    (tmp_path / "data" / "silence" / "README.txt").write_text("to do: record these")
    with caplog.at_level("WARNING"):
        index = build_index(DataSource.parse(root), str(tmp_path / "cache"))
    assert index.class_names == ("high", "low")
    assert any("silence" in r.getMessage() and "no audio files" in r.getMessage() for r in caplog.records)


def test_labels_with_spaces_and_non_ascii_letters_are_kept_as_written(tmp_path):
    root = write_class_folders(tmp_path / "data", classes=("grüne Wiese", "東京", "low"), per_class=6)
    table = list_split(DataSource.parse(root), "train", str(tmp_path / "cache"))
    assert table.class_names == tuple(sorted(("grüne Wiese", "東京", "low")))
    features, labels = next(iter(data.build_dataset(root, _config(tmp_path, test_fraction=0.0), "train")))
    assert features["audio"].shape[0] == 4


def test_a_manifest_listing_a_file_twice(tmp_path, caplog):
    root = write_class_folders(tmp_path / "data", classes=("a",), per_class=2)
    manifest = tmp_path / "m.csv"
    manifest.write_text(f"{root}/a/a_0.wav,a,train\n{root}/a/a_1.wav,a,train\n{root}/a/a_0.wav,a,train\n")
    with caplog.at_level("WARNING"):  # the same label and split: a way to weight a file, kept with a warning
        assert len(build_index(DataSource.parse(str(manifest)), "unused").paths) == 3
    assert any("lists 1 file(s) again" in r.getMessage() for r in caplog.records)
    # Spelled two ways without a split column: hashed once, so the file cannot land in two splits.
    manifest.write_text(f"data/a/a_0.wav,a\n{root}/a/a_0.wav,a\n" + "".join(f"{root}/a/a_1.wav,a\n" for _ in range(2)))
    index = build_index(DataSource.parse(str(manifest)), "unused", eval_fraction=0.5, test_fraction=0.5)
    assert index.splits[0] == index.splits[1] and index.splits[2] == index.splits[3]
    manifest.write_text(f"{root}/a/a_0.wav,a,train\n{root}/a/a_1.wav,a,train\n{root}/a/../a/a_0.wav,a,test\n")
    with pytest.raises(DataSourceError, match=r"line 3: .*a_0.wav' was listed at line 1 .*Keep one row"):
        build_index(DataSource.parse(str(manifest)), "unused")


def test_manifest_rows_with_missing_columns_and_unknown_splits(tmp_path):
    root = write_class_folders(tmp_path / "data", classes=("a",), per_class=1)
    manifest = tmp_path / "m.csv"
    manifest.write_text(f"path,label,split\n{root}/a/a_0.wav,a,train\n{root}/a/a_0.wav\n")  # a header row is fine
    with pytest.raises(DataSourceError, match=r"line 3: expected 'path,label\[,split\]'"):
        build_index(DataSource.parse(str(manifest)), "unused")
    manifest.write_text(f"{root}/a/a_0.wav,a,training\n")
    with pytest.raises(DataSourceError, match=r"line 1: split 'training' must be train, eval or test"):
        build_index(DataSource.parse(str(manifest)), "unused")


def test_a_manifest_that_is_empty_or_not_utf8(tmp_path):
    manifest = tmp_path / "m.csv"
    manifest.write_text("path,label\n\n")
    with pytest.raises(DataSourceError, match=r"m.csv' lists no files"):
        build_index(DataSource.parse(str(manifest)), "unused")
    manifest.write_bytes("caf\xe9.wav,a\n".encode("latin-1"))
    with pytest.raises(DataSourceError, match=r"m.csv' is not UTF-8 text .*save it as UTF-8"):
        build_index(DataSource.parse(str(manifest)), "unused")


def test_relative_manifest_paths_are_resolved_against_the_manifests_folder(tmp_path, monkeypatch):
    write_class_folders(tmp_path / "lists" / "audio", classes=("a",), per_class=1)
    (tmp_path / "lists" / "m.csv").write_text("audio/a/a_0.wav,a,train\n")
    monkeypatch.chdir(tmp_path)  # not the manifest's folder
    index = build_index(DataSource.parse("lists/m.csv"), "unused")
    assert index.paths == (str(tmp_path / "lists" / "audio" / "a" / "a_0.wav"),)


def test_symlink_loops_in_a_data_folder(tmp_path):
    root = write_class_folders(tmp_path / "data", classes=("a", "b"), per_class=2)
    os.symlink("..", tmp_path / "data" / "a" / "up")  # a loop below a class: not followed
    os.symlink("loop2.wav", tmp_path / "data" / "b" / "loop1.wav")  # a file link loop
    os.symlink("loop1.wav", tmp_path / "data" / "b" / "loop2.wav")
    with pytest.raises(DataSourceError, match=r"cannot read '.*loop1.wav': Too many levels of symbolic links"):
        build_index(DataSource.parse(root), "unused")
    os.remove(tmp_path / "data" / "b" / "loop1.wav")
    os.remove(tmp_path / "data" / "b" / "loop2.wav")
    assert len(build_index(DataSource.parse(root), "unused").paths) == 4
    os.symlink(tmp_path / "data", tmp_path / "data" / "everything")  # a class folder that is the data folder
    with pytest.raises(DataSourceError, match=r"class folder '.*everything' is a link back to .*a loop"):
        build_index(DataSource.parse(root), "unused")


def test_a_file_deleted_between_listing_and_reading(tmp_path):
    root = write_class_folders(tmp_path / "data", classes=("a",), per_class=2)
    dataset = data.build_dataset(root, _config(tmp_path, eval_fraction=0.0, test_fraction=0.0), "train")
    os.remove(tmp_path / "data" / "a" / "a_1.wav")
    with pytest.raises(tf.errors.NotFoundError) as raised:
        next(iter(dataset))
    # train.py prints this line (and how to resume) instead of a traceback.
    assert "a_1.wav" in storage_problem(raised.value) and "No such file" in storage_problem(raised.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_an_unreadable_file(tmp_path):
    root = write_class_folders(tmp_path / "data", classes=("a",), per_class=2)
    os.chmod(tmp_path / "data" / "a" / "a_1.wav", 0)
    dataset = data.build_dataset(root, _config(tmp_path, eval_fraction=0.0, test_fraction=0.0), "train")
    with pytest.raises(tf.errors.PermissionDeniedError) as raised:
        next(iter(dataset))
    assert "a_1.wav" in storage_problem(raised.value)


def test_a_cache_dir_that_is_a_file_runs_uncached_with_a_warning(tmp_path, caplog):
    root = write_class_folders(tmp_path / "data", classes=("a",), per_class=2)
    (tmp_path / "cache-file").write_text("")
    config = data.PipelineConfig(cache_dir=str(tmp_path / "cache-file"), batch_size=4, cache="disk",
                                 eval_fraction=0.0, test_fraction=0.0)
    with caplog.at_level("WARNING"):
        features, labels = next(iter(data.build_dataset(root, config, "train")))
    assert labels.shape[0] == 4  # a whole batch: training repeats its two files
    assert any("Going on without the disk cache" in r.getMessage() and "cache-file" in r.getMessage()
               for r in caplog.records)


# -- the command line ---------------------------------------------------------------------------------


def test_a_flagfile_that_does_not_exist(tmp_path):
    result = train_in_process(f"--flagfile={tmp_path / 'nope.txt'}")
    assert result.returncode == 2 and "--flagfile: [Errno 2] No such file or directory" in result.stderr
    assert "nope.txt" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_model_dir_inside_a_file(tmp_path):
    (tmp_path / "a-file").write_text("")
    result = train_in_process(f"--model_dir={tmp_path / 'a-file' / 'run'}")
    assert result.returncode == 2 and "--model_dir" in result.stderr and "inside one" in result.stderr


TINY = ["--clip_seconds=0.5", "--batch_size=8", "--model=cnn", "--depth=1", "--crop_margin_ms=50",
        "--time_shift_ms=50", "--eval_every_steps=3", "--noexport"]


def _files_and_times(folder) -> dict:
    return {path: (os.path.getsize(path), os.path.getmtime(path))
            for path in glob.glob(str(folder / "**"), recursive=True) if os.path.isfile(path)}


def test_a_model_folder_of_another_model(tiny_data, tmp_path):
    common = ["--dataset=folder", f"--data_dir={tiny_data}", f"--cache_dir={tmp_path / 'cache'}", *TINY]
    for mode in ("keras", "estimator"):
        model_dir = tmp_path / mode
        assert train_in_process(*common, f"--mode={mode}", "--width=4", "--max_steps=3",
                                f"--model_dir={model_dir}").returncode == 0
        before = _files_and_times(model_dir)
        result = train_in_process(*common, f"--mode={mode}", "--width=8", "--max_steps=6", f"--model_dir={model_dir}")
        assert result.returncode == 2, result.stderr[-2000:]
        message = result.stderr.strip().splitlines()[0]
        assert "was written by a different model" in message and f"{model_dir}/flags.txt" in message
        assert "--width=4" in (model_dir / "flags.txt").read_text()  # the flags it was trained with, kept
        after = _files_and_times(model_dir)
        assert after == before  # nothing written, nothing lost


def test_a_full_disk_while_the_cache_is_written(tiny_data, tmp_path):
    """RLIMIT_FSIZE makes the operating system refuse writes past 40 kB, as a full disk does: the
    cache's first segment fails (checkpoints and logs of this tiny model fit)."""
    common = [sys.executable, os.path.join(REPO, "train.py"), "--dataset=folder", f"--data_dir={tiny_data}",
              f"--cache_dir={tmp_path / 'cache'}", *TINY, "--max_steps=6", f"--model_dir={tmp_path / 'run'}"]

    def small_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (40_000, 40_000))

    result = subprocess.run(common, preexec_fn=small_disk, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert result.returncode == 1, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("train.py: error:") and "run the same command again" in last
    # Which write meets the limit first decides the words: TensorFlow's file writer reports EFBIG itself
    # ("File too large"), or a pass found incomplete before publishing ("was not written whole"). Both are
    # the same fault; what holds either way is checked below.
    assert "File too large" in last or "was not written whole" in last
    from compat.data import cache

    entries = cache.list_entries(str(tmp_path / "cache"))
    assert {entry.description["split"] for entry in entries} <= {"eval", "test"}  # the training split's: never
    for entry in entries:  # what was published is whole
        assert cache.damage(entry.path) is None and entry.examples > 0
        assert glob.glob(os.path.join(entry.path, "chunk-*.tensors"))
    assert not glob.glob(str(tmp_path / "cache" / "datasets" / ".tmp-*"))

    # With room again, the same command trains to its planned step.
    result = subprocess.run(common, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["steps"] == 6


@pytest.mark.parametrize("split,mode", [("train", "keras"), ("eval", "estimator"), ("test", "keras")])
def test_a_non_audio_file_named_wav_stops_train_py_before_it_trains_with_one_line_naming_it(tmp_path, split, mode):
    """Whichever split holds it, the run stops before its first step, and leaves no folder it made."""
    data_dir = write_class_folders(tmp_path / "data", per_class=3)
    bad = os.path.join(data_dir, "high", "notes.wav")
    with open(bad, "w") as stream:
        stream.write("not audio at all")
    rows = [f"{bad},high,{split}"]
    for label in ("high", "low", "mid"):
        for n, good_split in enumerate(("train", "eval", "test")):
            rows.append(f"{os.path.join(data_dir, label, f'{label}_{n}.wav')},{label},{good_split}")
    manifest = tmp_path / "manifest.csv"
    manifest.write_text("\n".join(rows) + "\n")
    result = train_in_process("--dataset=manifest", f"--manifest={manifest}", f"--model_dir={tmp_path / 'run'}",
                              f"--cache_dir={tmp_path / 'cache'}", "--max_steps=4", f"--mode={mode}")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(f"train.py: error: cannot read audio file '{bad}'")
    assert "--skip_bad_files" in result.stderr
    assert "Epoch 1" not in result.stdout and "loss = " not in result.stderr  # found before training
    assert not (tmp_path / "run").exists()


def test_a_model_folder_that_cannot_be_made_is_one_line_naming_it(tmp_path):
    result = train_in_process("--model_dir=/proc/no-such-run", "--max_steps=4")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "train.py: error: '/proc/no-such-run' cannot be made (No such file or directory): give a --model_dir in "
        "a place this user can write")


def test_an_existing_model_folder_that_cannot_be_written_is_one_line_naming_the_flag(tmp_path):
    # The tests run as root, whom permission bits do not stop: the folder is made immutable instead, which
    # stops root too ("Operation not permitted"), as a read-only mount or another user's folder would.
    import shutil
    import subprocess

    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "notes.txt").write_text("kept")
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)]).returncode != 0:
        pytest.skip("no chattr here to make a folder unwritable")
    try:
        result = train_in_process(f"--model_dir={folder}", f"--cache_dir={tmp_path / 'cache'}", "--max_steps=4")
    finally:
        subprocess.run(["chattr", "-i", str(folder)])
    assert result.returncode == 2
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith(f"train.py: error: '{folder}' cannot be written (Operation not permitted)"), line
    assert "--model_dir" in line and "Traceback" not in result.stderr
    assert sorted(os.listdir(folder)) == ["notes.txt"]  # nothing written, nothing lost


def test_a_run_refused_before_it_trains_leaves_no_folder_it_made(tmp_path, class_folders):
    """Bad input costs nothing: the model folder (and the parents) a refused run made are gone again, while a
    folder that was there before is kept with what it held."""
    one_class = tmp_path / "one_class" / "a"
    one_class.mkdir(parents=True)
    shutil.copy(os.path.join(class_folders, "high", "high_0.wav"), one_class)
    for data_dir, code in ((tmp_path / "missing", 2), (tmp_path / "one_class", 2)):
        model_dir = tmp_path / "runs" / "new" / "run"
        result = train_in_process("--dataset=folder", f"--data_dir={data_dir}", f"--model_dir={model_dir}",
                                  f"--cache_dir={tmp_path / 'cache'}", "--max_steps=4")
        assert result.returncode == code, result.stderr[-2000:]
        assert not (tmp_path / "runs").exists(), (data_dir, os.listdir(tmp_path / "runs"))
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    result = train_in_process("--dataset=folder", f"--data_dir={tmp_path / 'missing'}", f"--model_dir={kept}",
                              "--max_steps=4")
    assert result.returncode == 2 and sorted(os.listdir(kept)) == ["notes.txt"]


def test_a_cache_dir_that_is_a_file_stops_train_py_before_it_runs_leaving_no_folder(tmp_path):
    cache_file = tmp_path / "cache"
    cache_file.write_text("not a folder")
    model_dir = tmp_path / "run"
    result = train_in_process(f"--cache_dir={cache_file}", f"--model_dir={model_dir}", "--max_steps=4")
    assert result.returncode == 2, result.stderr[-2000:]
    line = result.stderr.strip().splitlines()[-1]
    assert line == (f"train.py: error: the cache folder {cache_file} (--cache_dir) is a file, not a folder: name a "
                    "writable folder with --cache_dir (it is made if missing)"), line
    assert "Traceback" not in result.stderr and not model_dir.exists()
    assert cache_file.read_text() == "not a folder"


def test_a_cache_dir_that_cannot_be_written_stops_train_py_before_it_runs_leaving_no_folder(tmp_path):
    # Made immutable, which stops root too, as a read-only mount would (see the model folder's test above).
    import subprocess

    cache = tmp_path / "cache"
    cache.mkdir()
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(cache)]).returncode != 0:
        pytest.skip("no chattr here to make a folder unwritable")
    model_dir = tmp_path / "run"
    try:
        result = train_in_process(f"--cache_dir={cache}", f"--model_dir={model_dir}", "--max_steps=4")
    finally:
        subprocess.run(["chattr", "-i", str(cache)])
    assert result.returncode == 2, result.stderr[-2000:]
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith(f"train.py: error: the cache folder {cache} (--cache_dir) cannot be written (Operation "
                           "not permitted)"), line
    assert "Traceback" not in result.stderr and not model_dir.exists() and os.listdir(cache) == []


@pytest.mark.parametrize("model_dir, expected", [
    ("", "train.py: error: flag --model_dir=: --model_dir is empty: give a folder, or leave the flag out for "
         "runs/<mode>"),
    ("s3://bucket/run", "train.py: error: --model_dir=s3://bucket/run: this TensorFlow has no s3:// file system"),
])
def test_an_empty_model_dir_or_one_of_a_missing_file_system_is_one_line(tmp_path, model_dir, expected):
    result = train_in_process(f"--model_dir={model_dir}", f"--cache_dir={tmp_path / 'cache'}", "--max_steps=4")
    assert result.returncode == 2, result.stderr[-2000:]
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith(expected), line
    assert "Traceback" not in result.stderr


def test_a_refused_run_leaves_no_cache_folder_it_made(tmp_path):
    cache = tmp_path / "new" / "cache"
    result = train_in_process("--dataset=folder", f"--data_dir={tmp_path / 'missing'}", f"--cache_dir={cache}",
                              f"--model_dir={tmp_path / 'run'}", "--max_steps=2")
    assert result.returncode == 2, result.stderr[-2000:]
    assert not (tmp_path / "new").exists() and not (tmp_path / "run").exists()


def test_a_folder_of_loose_audio_files_is_told_to_make_class_folders(tmp_path, class_folders):
    flat = tmp_path / "flat"
    flat.mkdir()
    for path in glob.glob(os.path.join(class_folders, "*", "*.wav"))[:4]:
        shutil.copy(path, flat)
    result = train_in_process("--dataset=folder", f"--data_dir={flat}", f"--cache_dir={tmp_path / 'cache'}",
                              f"--model_dir={tmp_path / 'run'}", "--max_steps=2")
    assert result.returncode == 2
    assert "holds audio files but no class sub-folders" in result.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("flag, expected", [
    ("--learning_rate=0", "train.py: error: --learning_rate must be > 0, got 0.0"),
    ("--tf_data_service=localhost:5000", "train.py: error: --tf_data_service 'localhost:5000' must be grpc://"),
    ("--flagfile=/no/such/flags.txt", "train.py: error: --flagfile: [Errno 2] No such file or directory"),
])
def test_a_settings_refusal_names_the_flag_not_the_configuration(tmp_path, flag, expected):
    result = train_in_process(flag, f"--model_dir={tmp_path / 'run'}", f"--cache_dir={tmp_path / 'cache'}")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith(expected), result.stderr[-1000:]
    assert "Config:" not in result.stderr
