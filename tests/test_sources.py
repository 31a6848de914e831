"""Listing sources and assigning splits: folders, FSDD, manifests, synthetic."""

import os
import shutil

import pytest

from compat.data import synthetic
from compat.data.sources import DataSource, DataSourceError, LabelledFile, list_split, stratified_splits
from conftest import REPO, fsdd_dir, write_class_folders


def _all_splits(source, cache_dir, **kwargs):
    return {split: list_split(source, split, cache_dir, **kwargs) for split in ("train", "eval", "test")}


def test_folder_source_labels_by_subfolder_and_splits_are_disjoint(tmp_path):
    root = write_class_folders(tmp_path / "data", per_class=20)
    splits = _all_splits(DataSource.parse(root), str(tmp_path / "cache"), eval_fraction=0.2, test_fraction=0.2)
    paths = [set(table.paths) for table in splits.values()]
    assert sum(map(len, paths)) == 60 and len(set.union(*paths)) == 60
    assert all(len(table) > 0 for table in splits.values())
    train = splits["train"]
    assert train.class_names == ("high", "low", "mid")
    for path, label in zip(train.paths, train.labels):
        assert os.path.basename(os.path.dirname(path)) == train.class_names[label]


def test_splits_are_stratified_stable_and_keep_groups_together():
    files = [LabelledFile(f"{label}/{i}.wav", label, f"{label}/speaker{i // 2}", None)
             for label in ("a", "b", "c") for i in range(60)]
    files.append(LabelledFile("c/fixed.wav", "c", "c/fixed", "test"))
    splits = stratified_splits(files, 0.1, 0.2)
    assert splits == stratified_splits(list(files), 0.1, 0.2)
    assert splits[-1] == "test"  # a split of its own is kept
    for label in ("a", "b", "c"):  # 30 groups per class: 3 eval, 6 test, 21 train
        mine = [split for file, split in zip(files, splits) if file.label == label and file.split is None]
        assert (mine.count("eval"), mine.count("test"), mine.count("train")) == (6, 12, 42)
    for first, second in zip(splits[0:180:2], splits[1:180:2]):  # the two files of a speaker
        assert first == second
    few = [LabelledFile(f"x/{i}.wav", "x", f"x/{i}", None) for i in range(3)]
    assert sorted(stratified_splits(few, 0.1, 0.1)) == ["eval", "test", "train"]


def test_manifest_with_and_without_split_column(tmp_path):
    root = write_class_folders(tmp_path / "data", per_class=4)
    manifest = tmp_path / "list.csv"
    rows = ["path,label,split"]
    for i, name in enumerate(sorted(os.listdir(root))):
        for n, file in enumerate(sorted(os.listdir(os.path.join(root, name)))):
            split = {0: "test", 1: "eval"}.get(n, "train")
            rows.append(f"data/{name}/{file},{name},{split}")
    shutil.copy(os.path.join(root, "high", "high_3.wav"), os.path.join(root, "high", "unsplit.wav"))
    rows.append("data/high/unsplit.wav,high,")  # no split: hashed (to train)
    manifest.write_text("\n".join(rows) + "\n")
    source = DataSource.parse(str(manifest))
    assert source.kind == "manifest"
    splits = _all_splits(source, str(tmp_path / "cache"))
    assert len(splits["test"]) == 3 and len(splits["eval"]) == 3
    assert all(os.path.isabs(p) and os.path.exists(p) for p in splits["train"].paths)


def test_manifest_errors_name_the_line_and_the_fix(tmp_path):
    manifest = tmp_path / "list.csv"
    manifest.write_text("missing.wav,dog\n")
    with pytest.raises(DataSourceError, match=r"line 1: audio file .*missing.wav' does not exist"):
        list_split(DataSource.parse(str(manifest)), "train", str(tmp_path))
    root = write_class_folders(tmp_path / "data", classes=("a",), per_class=1)
    manifest.write_text(f"{root}/a/a_0.wav,a,validation\n")
    with pytest.raises(DataSourceError, match="split 'validation' must be train, eval or test"):
        list_split(DataSource.parse(str(manifest)), "train", str(tmp_path))


def test_missing_and_empty_folders_are_named(tmp_path):
    with pytest.raises(DataSourceError, match=r"'.*nowhere' does not exist"):
        list_split(DataSource.parse(str(tmp_path / "nowhere")), "train", str(tmp_path))
    (tmp_path / "empty" / "cat").mkdir(parents=True)
    (tmp_path / "empty" / "cat" / "notes.txt").write_text("not audio")
    with pytest.raises(DataSourceError, match=r"no audio files in '.*empty' \(looked for .wav, .flac, .ogg\)"):
        list_split(DataSource.parse(str(tmp_path / "empty")), "train", str(tmp_path))


def test_unknown_label_and_empty_split_say_what_to_do(tmp_path):
    root = write_class_folders(tmp_path / "data", per_class=2)
    manifest = tmp_path / "list.csv"
    manifest.write_text(f"{root}/high/high_0.wav,high,train\n{root}/low/low_0.wav,low,test\n")
    with pytest.raises(DataSourceError, match=r"unknown label 'low' .* Add training files"):
        list_split(DataSource.parse(str(manifest)), "test", str(tmp_path))
    with pytest.raises(DataSourceError, match="the eval split of manifest.* is empty"):
        list_split(DataSource.parse(str(manifest)), "eval", str(tmp_path))
    with pytest.raises(DataSourceError, match="unknown split 'validation'"):
        list_split(DataSource.parse(root), "validation", str(tmp_path))


def test_predict_split_lists_the_test_files(tmp_path):
    root = write_class_folders(tmp_path / "data", per_class=10)
    source = DataSource.parse(root)
    assert list_split(source, "predict", str(tmp_path)) == list_split(source, "test", str(tmp_path))


@pytest.mark.skipif(fsdd_dir() is None, reason="FSDD not found: set FSDD_DIR to its recordings folder")
def test_fsdd_official_split():
    source = DataSource.parse("fsdd:" + fsdd_dir())
    splits = _all_splits(source, "/nonexistent-cache-unused")
    assert {name: len(table) for name, table in splits.items()} == {"train": 2400, "eval": 300, "test": 300}
    takes = {int(os.path.basename(p).split("_")[2][:-4]) for p in splits["test"].paths}
    assert takes == {0, 1, 2, 3, 4}
    assert splits["train"].class_names == tuple(str(d) for d in range(10))


def test_synthetic_dataset_is_generated_once_with_distinct_classes(tmp_path):
    folder = synthetic.ensure_dataset(str(tmp_path))
    assert len(synthetic.CLASS_NAMES) >= 10
    assert sorted(os.listdir(folder)) == list(synthetic.CLASS_NAMES)
    first = os.path.getmtime(os.path.join(folder, "sine", "sine_0000.wav"))
    assert synthetic.ensure_dataset(str(tmp_path)) == folder
    assert os.path.getmtime(os.path.join(folder, "sine", "sine_0000.wav")) == first
    table = list_split(DataSource.parse("synthetic"), "train", str(tmp_path))
    assert len(table.class_names) == len(synthetic.CLASS_NAMES) and len(table) > 800


def test_the_readmes_predict_example_names_test_clips_of_the_built_in_set(tmp_path):
    """The README's first screen predicts on files the quick start wrote: they exist, in its test split."""
    import re

    readme = open(os.path.join(REPO, "README.md")).read()
    named = re.findall(r"~/\.cache/estimator-compat/(synthetic-v\d+/\w+/\w+\.wav)", readme)
    assert len(named) >= 2
    folder = synthetic.ensure_dataset(str(tmp_path))
    test = {os.path.relpath(path, tmp_path) for path in list_split(DataSource.parse("synthetic"), "test", str(tmp_path)).paths}
    for name in named:
        assert name.startswith(os.path.basename(folder) + "/") and name in test, name


def test_synthetic_generation_is_deterministic(tmp_path):
    synthetic.write_dataset(str(tmp_path / "a"), clips_per_class=2)
    synthetic.write_dataset(str(tmp_path / "b"), clips_per_class=2)
    for kind in synthetic.CLASS_NAMES:
        for name in os.listdir(tmp_path / "a" / kind):
            assert (tmp_path / "a" / kind / name).read_bytes() == (tmp_path / "b" / kind / name).read_bytes()
