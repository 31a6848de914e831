"""Where the audio files come from, and which split each file belongs to.

A source is a `DataSource`, or a string parsed by `DataSource.parse`:
  "synthetic"        the built-in default, generated once into the cache folder;
  "fsdd"             the Free Spoken Digit Dataset, downloaded once into the cache folder;
  "fsdd:DIR"         FSDD recordings already on disk (`DIR` or `DIR/recordings`);
  "DIR"              a folder with one sub-folder per class (`DIR/<label>/*.wav`);
  "FILE.csv"         a manifest with rows `path,label[,split]`.

Listing is cheap (names and one `stat` per file): no audio file is opened
here. `build_index` lists a source once per run; everything else (class names,
split tables, cache keys) reads that index.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import os
import re
from collections.abc import Sequence

from absl import logging

from compat.core.errors import UserError

SPLITS = ("train", "eval", "test", "predict")
KINDS = ("synthetic", "fsdd", "folder", "manifest")
AUDIO_EXTENSIONS = (".wav", ".flac", ".ogg")

# FSDD's file names: {digit}_{speaker}_{take}.wav; takes 0-4 are its official test set.
_FSDD_NAME = re.compile(r"^(\d)_([A-Za-z]+)_(\d+)\.wav$")
_FSDD_TEST_TAKES = range(0, 5)
# FSDD has no validation split. Takes 5-9 keep every speaker and digit in it, as in
# the test set; a speaker-hash split would hold out one of only six speakers.
_FSDD_EVAL_TAKES = range(5, 10)


class DataSourceError(UserError, ValueError):
    """A source, folder, manifest, label or split is unusable; the message says how to fix it."""


@dataclasses.dataclass(frozen=True)
class DataSource:
    """A named set of labelled audio files."""

    kind: str = "synthetic"
    path: str | None = None  # folder, manifest, or FSDD recordings; None: FSDD is downloaded
    url: str | None = None  # FSDD download address; None: its public source

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise DataSourceError(f"unknown source kind '{self.kind}'; use one of {', '.join(KINDS)}")
        if self.kind in ("folder", "manifest") and not self.path:
            raise DataSourceError(f"a '{self.kind}' source needs a path")

    @classmethod
    def parse(cls, spec: str | os.PathLike | DataSource) -> DataSource:
        if isinstance(spec, DataSource):
            return spec
        text = os.fspath(spec)
        if text in ("synthetic", "fsdd"):
            return cls(text)
        if text.startswith("fsdd:"):
            return cls("fsdd", path=text[len("fsdd:") :])
        if text.lower().endswith(".csv"):
            return cls("manifest", path=text)
        return cls("folder", path=text)

    def describe(self) -> str:
        return self.kind if self.path is None else f"{self.kind}:{self.path}"


@dataclasses.dataclass(frozen=True)
class LabelledFile:
    path: str
    label: str
    group: str  # files of one group never land in two splits
    split: str | None  # None: drawn per class by `stratified_splits`


@dataclasses.dataclass(frozen=True)
class FileTable:
    """The files of one split, with integer labels indexing `class_names`."""

    paths: tuple[str, ...]
    labels: tuple[int, ...]
    class_names: tuple[str, ...]
    stats: tuple[tuple[int, int], ...]  # (size, mtime_ns) per file, from the listing

    def __len__(self) -> int:
        return len(self.paths)

    def shard(self, num_shards: int, index: int) -> FileTable:
        """Every `num_shards`-th file from the `index`-th: one input pipeline's share."""
        part = slice(index, None, num_shards)
        return FileTable(self.paths[part], self.labels[part], self.class_names, self.stats[part])


def _require_dir(path: str, what: str) -> str:
    if not os.path.exists(path):
        raise DataSourceError(f"{what} '{path}' does not exist; check the path (`data_dir`)")
    if not os.path.isdir(path):
        raise DataSourceError(
            f"{what} '{path}' is a file, not a folder: point `data_dir` at a folder with one sub-folder of audio "
            "files per class"
        )
    return path


def _require_file(manifest: str) -> None:
    if os.path.isdir(manifest):
        raise DataSourceError(f"manifest '{manifest}' is a folder: give the CSV file itself (`manifest`)")
    if not os.path.isfile(manifest):
        raise DataSourceError(f"manifest '{manifest}' does not exist; check the path (`manifest`)")


def is_audio_file(name: str) -> bool:
    """Whether a file name has an audio extension this toolkit reads (AUDIO_EXTENSIONS, any case)."""
    return name.lower().endswith(AUDIO_EXTENSIONS)


def _no_audio_error(folder: str) -> DataSourceError:
    loose = os.path.isdir(folder) and any(is_audio_file(name) for name in os.listdir(folder))
    if loose:  # the files are there, but not in class folders
        return DataSourceError(
            f"'{folder}' holds audio files but no class sub-folders: put each class's files in a sub-folder "
            "named after the class (`data_dir` is the folder above them)"
        )
    return DataSourceError(
        f"no audio files in '{folder}' (looked for {', '.join(AUDIO_EXTENSIONS)}); "
        "point `data_dir` at a folder with one sub-folder of audio files per class"
    )


def list_class_folders(root: str) -> list[LabelledFile]:
    """`root/<label>/**/<file>` -> files labelled by their top sub-folder.

    Links to folders below a class folder are not followed (`os.walk`'s default),
    so a link loop there cannot recurse; a class folder that is itself a link back
    to the data folder (or above it) is refused, since it would list every file
    again under its own name.
    """
    _require_dir(root, "data folder")
    real_root = os.path.realpath(root)
    files: list[LabelledFile] = []
    for label in sorted(entry.name for entry in os.scandir(root) if entry.is_dir()):
        folder_of_label = os.path.join(root, label)
        target = os.path.realpath(folder_of_label)
        if os.path.commonpath([real_root, target]) == target:  # the data folder itself, or above it
            raise DataSourceError(
                f"class folder '{folder_of_label}' is a link back to '{target}', which holds the "
                "data folder (a loop); remove the link or point it at a folder of audio files"
            )
        found = len(files)
        for folder, _, names in sorted(os.walk(folder_of_label)):
            for name in sorted(filter(is_audio_file, names)):
                path = os.path.join(folder, name)
                files.append(LabelledFile(path, label, os.path.relpath(path, root), None))
        if len(files) == found:
            logging.warning(
                "Class folder %s holds no audio files (%s): the class '%s' is left out",
                folder_of_label,
                ", ".join(AUDIO_EXTENSIONS),
                label,
            )
    if not files:
        raise _no_audio_error(root)
    return files


def list_fsdd(root: str) -> list[LabelledFile]:
    """FSDD recordings, with its official test split and takes 5-9 as eval."""
    _require_dir(root, "FSDD folder")
    if os.path.isdir(os.path.join(root, "recordings")):
        root = os.path.join(root, "recordings")
    files = []
    for name in sorted(os.listdir(root)):
        match = _FSDD_NAME.match(name)
        if not match:
            continue
        digit, speaker, take = match.group(1), match.group(2), int(match.group(3))
        split = "test" if take in _FSDD_TEST_TAKES else "eval" if take in _FSDD_EVAL_TAKES else "train"
        files.append(LabelledFile(os.path.join(root, name), digit, speaker, split))
    if not files:
        raise DataSourceError(
            f"no FSDD recordings named {{digit}}_{{speaker}}_{{take}}.wav in '{root}'; "
            "point `data_dir` at FSDD's 'recordings' folder"
        )
    return files


def list_manifest(manifest: str) -> list[LabelledFile]:
    """A CSV of `path,label[,split]` rows; relative paths are relative to the manifest.

    A file listed twice with the same label and split is kept twice (each row is
    an example: a way to weight files) with a warning; listed with another label
    or split, it is refused, since a file in two splits is tested on what the
    model trained on.
    """
    _require_file(manifest)
    base = os.path.dirname(os.path.abspath(manifest))
    try:
        with open(manifest, newline="", encoding="utf-8-sig") as stream:  # -sig: a spreadsheet's byte-order mark
            rows = list(csv.reader(stream))
    except UnicodeDecodeError as error:
        raise DataSourceError(
            f"manifest '{manifest}' is not UTF-8 text (byte {error.start} cannot be read); save it as UTF-8 CSV"
        ) from error
    except csv.Error as error:
        raise DataSourceError(f"manifest '{manifest}' is not a readable CSV file ({error})") from error
    files: list[LabelledFile] = []
    first_seen: dict[str, tuple[int, LabelledFile]] = {}  # normalised path -> (line, row)
    repeated = []
    for line, row in enumerate(rows, start=1):
        cells = [cell.strip() for cell in row]
        if not cells or not any(cells) or (line == 1 and cells[0].lower() == "path"):
            continue
        where = f"manifest '{manifest}' line {line}"
        if len(cells) < 2 or not cells[0] or not cells[1]:
            raise DataSourceError(f"{where}: expected 'path,label[,split]', got {row}")
        path = os.path.normpath(os.path.join(base, cells[0]))
        if not os.path.isfile(path):
            raise DataSourceError(f"{where}: audio file '{path}' does not exist")
        split = cells[2] if len(cells) > 2 and cells[2] else None
        if split is not None and split not in ("train", "eval", "test"):
            raise DataSourceError(f"{where}: split '{split}' must be train, eval or test (or empty)")
        labelled = LabelledFile(path, cells[1], cells[0], split)
        if path in first_seen:
            earlier_line, earlier = first_seen[path]
            if (earlier.label, earlier.split) != (labelled.label, labelled.split):
                raise DataSourceError(
                    f"{where}: '{cells[0]}' was listed at line {earlier_line} with label '{earlier.label}' and split "
                    f"'{earlier.split or '(hashed)'}'; a file belongs to one label and one split. Keep one row"
                )
            repeated.append(cells[0])
            labelled = earlier  # however it is spelled, a hashed split puts the file where its first row went
        else:
            first_seen[path] = (line, labelled)
        files.append(labelled)
    if repeated:
        logging.warning(
            "Manifest %s lists %d file(s) again with the same label and split (first: %s); each row is an "
            "example, so those files weigh more in training",
            manifest,
            len(repeated),
            repeated[0],
        )
    if not files:
        raise DataSourceError(f"manifest '{manifest}' lists no files; add rows 'path,label[,split]'")
    return files


def split_position(group: str) -> float:
    """Where `group` falls in [0, 1): a hash, the same on every machine and run."""
    return int.from_bytes(hashlib.sha256(group.encode()).digest()[:8], "big") / 2**64


def _share(count: int, fraction: float) -> int:
    """Groups of a class of `count` for a split of `fraction`: at least one once the class has three."""
    return max(1, round(count * fraction)) if fraction > 0 and count >= 3 else round(count * fraction)


def stratified_splits(files: Sequence[LabelledFile], eval_fraction: float, test_fraction: float) -> tuple[str, ...]:
    """Each file's split: its own, or one drawn so that every class is split in the given fractions.

    Within a class, the groups without a split of their own are ordered by
    `split_position`: the first `eval_fraction` of them go to eval, the next
    `test_fraction` to test, the rest to train. A class of three or more such
    groups gets at least one in each split whose fraction is above zero (a hash
    alone left classes of 30 files out of the test split), and the files of one
    group always share a split.
    """
    groups_of_label: dict[str, set[str]] = {}
    for file in files:
        if file.split is None:
            groups_of_label.setdefault(file.label, set()).add(file.group)
    split_of_group: dict[tuple[str, str], str] = {}
    for label, groups in groups_of_label.items():
        ordered = sorted(groups, key=lambda group: (split_position(group), group))
        count = len(ordered)
        evals = _share(count, eval_fraction)
        tests = min(_share(count, test_fraction), count - evals)
        for rank, group in enumerate(ordered):
            split_of_group[label, group] = "eval" if rank < evals else "test" if rank < evals + tests else "train"
    return tuple(file.split or split_of_group[file.label, file.group] for file in files)


def list_source(source: DataSource, cache_dir: str) -> list[LabelledFile]:
    """Every file of `source`, downloading or generating it into `cache_dir` first if needed."""
    if source.kind == "synthetic":
        from compat.data import synthetic

        return list_class_folders(synthetic.ensure_dataset(cache_dir))
    if source.kind == "fsdd":
        if source.path is None:
            from compat.data import fetch

            return list_fsdd(fetch.fetch_fsdd(cache_dir, url=source.url))
        return list_fsdd(source.path)
    assert source.path is not None  # DataSource refuses a folder or manifest without one
    if source.kind == "manifest":
        return list_manifest(source.path)
    return list_class_folders(source.path)


@dataclasses.dataclass(frozen=True)
class SourceIndex:
    """Every file of a source, listed and stat'ed once: its split, label index and (size, mtime).

    Built once per run (`build_index`) and passed down: the class names, every
    split's table and the cache keys all come from this one listing.
    """

    source: DataSource
    paths: tuple[str, ...]
    labels: tuple[str, ...]
    splits: tuple[str, ...]
    stats: tuple[tuple[int, int], ...]  # (size in bytes, modification time in ns) per file
    class_names: tuple[str, ...]  # the sorted labels of the training split

    def __len__(self) -> int:
        return len(self.paths)

    def table(self, split: str) -> FileTable:
        """The files of `split` ("predict" reads the test files), labelled as integers."""
        if split not in SPLITS:
            raise DataSourceError(f"unknown split '{split}'; use one of {', '.join(SPLITS)}")
        wanted = "test" if split == "predict" else split
        index = {name: i for i, name in enumerate(self.class_names)}
        chosen = [i for i, s in enumerate(self.splits) if s == wanted]
        for i in chosen:
            if self.labels[i] not in index:
                raise DataSourceError(
                    f"unknown label '{self.labels[i]}' for '{self.paths[i]}' in the {wanted} split of "
                    f"{self.source.describe()}: the model knows {list(self.class_names)}. Add training files "
                    "for it, or remove the file"
                )
        if not chosen:
            raise DataSourceError(
                f"the {wanted} split of {self.source.describe()} is empty ({len(self)} files in all); "
                "add files, give them an explicit split in a manifest, or change "
                "eval_fraction/test_fraction"
            )
        return FileTable(
            tuple(self.paths[i] for i in chosen),
            tuple(index[self.labels[i]] for i in chosen),
            self.class_names,
            tuple(self.stats[i] for i in chosen),
        )

    def log_summary(self) -> None:
        """One line with the class count and the split sizes; a warning per split that lacks a class, whose
        metrics there are then null."""
        sizes = {split: self.splits.count(split) for split in ("train", "eval", "test")}
        logging.info(
            "%s: %d files in %d classes; train %d, eval %d, test %d",
            self.source.describe(),
            len(self),
            len(self.class_names),
            sizes["train"],
            sizes["eval"],
            sizes["test"],
        )
        for split in ("eval", "test"):
            present = {label for label, s in zip(self.labels, self.splits) if s == split}
            missing = [name for name in self.class_names if name not in present]
            if missing and sizes[split]:
                logging.warning(
                    "The %s split has no clips of %d class(es): %s; their %s metrics are null. Add files of "
                    "them, or give files that split in a manifest",
                    split,
                    len(missing),
                    ", ".join(missing[:10]) + (", ..." if len(missing) > 10 else ""),
                    split,
                )

    def size(self, split: str) -> int:
        """Files in `split` (before any unreadable ones are skipped)."""
        wanted = "test" if split == "predict" else split
        return sum(1 for s in self.splits if s == wanted)


def _stat(path: str) -> tuple[int, int]:
    try:
        stat = os.stat(path)
    except OSError as error:
        raise DataSourceError(
            f"cannot read '{path}': {error.strerror}; check that the file exists and is readable"
        ) from error
    return stat.st_size, stat.st_mtime_ns


def build_index(
    source: DataSource,
    cache_dir: str,
    eval_fraction: float = 0.1,
    test_fraction: float = 0.1,
    class_names: tuple[str, ...] | None = None,
) -> SourceIndex:
    """Lists `source` once (downloading or generating it into `cache_dir` first if needed).

    Files without a split of their own are split per class (`stratified_splits`).
    Class names are the sorted labels of the training split (or `class_names`
    when given), so every split of a source shares one label index.
    """
    files = list_source(source, cache_dir)
    splits = stratified_splits(files, eval_fraction, test_fraction)
    labels = tuple(f.label for f in files)
    names = class_names or tuple(sorted({label for label, s in zip(labels, splits) if s == "train"}))
    return SourceIndex(
        source,
        tuple(os.path.abspath(f.path) for f in files),
        labels,
        splits,
        tuple(_stat(f.path) for f in files),
        tuple(names),
    )


def list_split(
    source: DataSource,
    split: str,
    cache_dir: str,
    eval_fraction: float = 0.1,
    test_fraction: float = 0.1,
    class_names: tuple[str, ...] | None = None,
) -> FileTable:
    """The files of one split: `build_index(...).table(split)` for a single lookup."""
    if split not in SPLITS:
        raise DataSourceError(f"unknown split '{split}'; use one of {', '.join(SPLITS)}")
    return build_index(source, cache_dir, eval_fraction, test_fraction, class_names).table(split)
