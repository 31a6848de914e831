"""The persistent dataset cache: decoded features kept between calls and processes.

An entry holds one split's examples after the deterministic transforms (decode,
mono, resample, length fit, features) and before augmentation, in TensorFlow's
own `Dataset.cache(filename)` files. Its key fingerprints everything that
determines those examples: each file's path, size, modification time and
label, the settings used before the cache, and `FORMAT_VERSION`. A touched file
or a changed setting gives a new key, so an entry is never stale; old entries
are listed and removed with `list_entries`/`remove_entries` or
`python -m compat.data.cache`.

`Dataset.cache(filename)` alone serves partial or stale files and fails on a
second concurrent writer (TensorFlow's `CacheDatasetV2` lock file). Here the files are written
into a private temporary folder while the first pass streams to the consumer;
the writer holds an `flock` on a lock file inside that folder for as long as it
lives (`compat.core.atomic`), and the entry is published by an atomic rename only
after the pass completes. Readers open published entries only, so a kill
mid-write leaves a folder nobody reads and the next writer removes, and two
concurrent builders both succeed.

An entry is one file per element (a chunk of examples) of the first pass, its
tensors serialized as TensorFlow's `TensorProto`s. The first pass writes each
chunk from a parallel stage beside the one that made it, so the write costs the
consumer no thread of its own; training reads the files back in a new order each
epoch, several at a time, with memory that does not grow with the split.

Damage after publishing (a flipped byte, a truncated or missing file) is caught
before any of an entry's data is read: `meta.json` records each file's size and
CRC-32, checked at every hit (about 50 ms for 70 MB); a damaged entry is
discarded with a warning and rebuilt. A cache folder that cannot be written is
reported (`CacheUnavailableError`) and the builder goes on without the cache.

Layout: `<cache_dir>/datasets/<key>/{chunk-NNNNNNN.tensors, meta.json}`.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import dataclasses
import hashlib
import json
import os
import re
import time
import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import lazy_loader
from absl import logging

from compat.config import default_cache_dir
from compat.core import atomic
from compat.core.errors import UserError
from compat.data.sources import FileTable

# TensorFlow loads when a dataset is first made here, not on import: `python -m compat.data.cache list` and
# `remove` manage folders and need none of it.
if TYPE_CHECKING:
    import tensorflow as tf
else:
    tf = lazy_loader.load("tensorflow")

FORMAT_VERSION = 5  # 2: elements are chunks of examples; 3: in segment files; 4: with checksums; 5: a file each


class CacheUnavailableError(UserError, OSError):
    """The cache folder cannot be written (read-only, no permission): the caller goes on without it."""


class CacheFolderError(UserError, OSError):
    """The cache folder a run needs is a file, or cannot be made or written: refused before the run starts."""


def _missing_parts(folder: str) -> list[str]:
    """The folders `os.makedirs(folder)` would make, innermost first."""
    missing = []
    path = os.path.abspath(folder)
    while not os.path.exists(path) and path != os.path.dirname(path):
        missing.append(path)
        path = os.path.dirname(path)
    return missing


_PROBE_ATTEMPTS = 8  # more than the tasks that share one cache folder as they start


def check_writable_folder(cache_dir: str) -> None:
    """Refuses `cache_dir` before anything is written when it names a file or a folder that cannot be written.

    Makes the folder if it is missing (as the run would), writes and removes one empty file in it, and removes
    again what it made.

    Raises:
        CacheFolderError: naming the folder, why, and what to do.
    """
    if atomic.is_remote(cache_dir):
        return  # a bucket: its writes fail where they happen, with the storage's own message
    advice = "name a writable folder with `cache_dir` (it is made if missing)"
    if os.path.exists(cache_dir) and not os.path.isdir(cache_dir):
        raise CacheFolderError(f"the cache folder {cache_dir} (`cache_dir`) is a file, not a folder: {advice}")
    try:
        for attempt in range(_PROBE_ATTEMPTS):
            made = _missing_parts(cache_dir)  # made for the probe, removed after it: a refusal leaves no folder
            os.makedirs(cache_dir, exist_ok=True)
            try:
                atomic.probe_writable(cache_dir)
            except FileNotFoundError:
                # A cluster's tasks start together: another one, having made the folder for its own probe,
                # removed it under this one's. Each removes at most once, so a few attempts settle it.
                if attempt == _PROBE_ATTEMPTS - 1:
                    raise
                continue
            for folder in made:
                try:
                    os.rmdir(folder)
                except OSError:  # another task writes there already (or removed it): it stays
                    pass
            break
    except OSError as error:
        raise CacheFolderError(
            f"the cache folder {cache_dir} (`cache_dir`) cannot be written ({error.strerror or error}): {advice}"
        ) from error


def fingerprint(table: FileTable, settings: dict) -> str:
    """The cache key of the examples made from these files (path, size, mtime, label) with these settings.

    The sizes and times are the listing's (`SourceIndex`): no file is stat'ed again here.
    """
    digest = hashlib.sha256()
    digest.update(json.dumps({"format": FORMAT_VERSION, **settings}, sort_keys=True).encode())
    for path, label, (size, mtime_ns) in zip(table.paths, table.labels, table.stats):
        digest.update(f"{os.path.abspath(path)}\0{size}\0{mtime_ns}\0{label}\n".encode())
    return digest.hexdigest()[:32]


@dataclasses.dataclass(frozen=True)
class CacheEntry:
    key: str
    path: str
    examples: int
    size_bytes: int
    created: float
    last_used: float
    description: dict


def _entries_dir(cache_dir: str) -> str:
    return os.path.join(cache_dir, "datasets")


def _read_entry(folder: str) -> CacheEntry:
    meta_path = os.path.join(folder, "meta.json")
    with open(meta_path) as stream:
        meta = json.load(stream)
    return CacheEntry(
        key=os.path.basename(folder),
        path=folder,
        examples=meta["examples"],
        size_bytes=meta["size_bytes"],
        created=meta["created"],
        last_used=os.path.getmtime(meta_path),
        description={k: v for k, v in meta.items() if k not in ("examples", "size_bytes", "created")},
    )


_CHUNK_PREFIX = "chunk-"
_CHUNK_SUFFIX = ".tensors"
_CHUNK_FILE = re.compile(r"^chunk-(\d{7})\.tensors$")
# Chunk files a replay's shuffle can hold: a split of more chunks is shuffled within windows this wide.
_SHUFFLE_CHUNKS = 1 << 16


def _publish(temp: str, final: str, meta: dict) -> None:
    """Publishes the finished chunk files in `temp` as the entry `final`.

    The files are hard-linked, not moved: the writing pipeline goes on reading
    them from `temp` in later epochs.
    """

    def link_files(folder: str) -> None:
        for name in os.listdir(temp):
            if name.startswith(_CHUNK_PREFIX):
                atomic.link_or_copy(os.path.join(temp, name), os.path.join(folder, name))
        meta["files"] = {
            name: _size_and_crc(os.path.join(folder, name))
            for name in sorted(os.listdir(folder))
            if name.startswith(_CHUNK_PREFIX)
        }
        meta["size_bytes"] = sum(size for size, _ in meta["files"].values())
        with open(os.path.join(folder, "meta.json"), "w") as stream:
            json.dump(meta, stream, indent=1, sort_keys=True)

    atomic.publish_folder(final, link_files)
    logging.info(
        "Dataset cache written: %s (%s split, %d examples, %.1f MB)",
        os.path.basename(final),
        meta.get("split", "?"),
        meta["examples"],
        meta["size_bytes"] / 1e6,
    )


def _incomplete(folder: str, elements: int) -> str | None:
    """What keeps the chunk files in `folder` from being a whole entry of `elements` chunks; None if whole:
    exactly chunks 0 .. elements-1 (each written whole before the pass handed its chunk on), nothing else."""
    found, expected = set(), set(range(elements))
    for name in os.listdir(folder):
        if name.startswith(_CHUNK_PREFIX):
            match = _CHUNK_FILE.match(name)
            if match is None:
                return f"{name} is not a chunk file"
            found.add(int(match.group(1)))
    if found != expected:
        return f"{len(found & expected)} chunk file(s) of {elements} were written"
    return None


def _size_and_crc(path: str) -> tuple[int, int]:
    crc, size = 0, 0
    with open(path, "rb") as stream:
        while block := stream.read(1 << 20):
            crc, size = zlib.crc32(block, crc), size + len(block)
    return size, crc


def damage(folder: str) -> str | None:
    """What is wrong with the published entry in `folder` (a file missing, resized or changed); None if whole."""
    try:
        with open(os.path.join(folder, "meta.json")) as stream:
            files = json.load(stream)["files"]
    except (OSError, ValueError, KeyError) as error:
        return f"meta.json unreadable: {error}"
    for name, (size, crc) in files.items():
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            return f"{name} is missing"
        actual_size, actual_crc = _size_and_crc(path)
        if actual_size != size:
            return f"{name} has {actual_size} bytes, {size} were written"
        if actual_crc != crc:
            return f"{name} does not match its checksum"
    return None


def _then_call(dataset: tf.data.Dataset, callback: Callable[[], None]) -> tf.data.Dataset:
    """`dataset`, calling `callback()` in Python each time its last element has been read."""
    spec = dataset.element_spec

    @_plain
    def run(_: tf.Tensor):
        def call() -> bool:
            callback()
            return False

        done = tf.py_function(call, [], tf.bool)
        with tf.control_dependencies([done]):  # an element of the right structure, never kept
            return _zeros(spec, tf.constant(0)), done

    marker = tf.data.Dataset.from_tensors(0).map(run).filter(_plain(lambda element, keep: keep))
    return dataset.concatenate(marker.map(_plain(lambda element, keep: element)))


def _plain(function: Callable) -> Callable:
    """Dataset functions here are plain TF ops: traced without AutoGraph, which halves their tracing time."""
    return tf.autograph.experimental.do_not_convert(function)


def _zeros(element_spec, rows: int | tf.Tensor = 0):
    """An element of `element_spec` with `rows` for each unknown dimension, for structure only."""
    return tf.nest.map_structure(
        lambda spec: tf.zeros([rows if d is None else d for d in spec.shape.as_list()], spec.dtype), element_spec
    )


def _chunk_path(prefix: str, index: tf.Tensor) -> tf.Tensor:
    return tf.strings.join([prefix, tf.strings.as_string(index, width=7, fill="0"), _CHUNK_SUFFIX])


def _serialized(element) -> tf.Tensor:
    """One string holding every tensor of `element`, each a serialized TensorProto."""
    return tf.io.serialize_tensor(tf.stack([tf.io.serialize_tensor(part) for part in tf.nest.flatten(element)]))


def _parsed(contents: tf.Tensor, element_spec):
    """The element `_serialized` made `contents` of."""
    specs = tf.nest.flatten(element_spec)
    parts = tf.unstack(tf.ensure_shape(tf.io.parse_tensor(contents, tf.string), [len(specs)]), num=len(specs))
    tensors = [tf.ensure_shape(tf.io.parse_tensor(part, spec.dtype), spec.shape) for part, spec in zip(parts, specs)]
    return tf.nest.pack_sequence_as(element_spec, tensors)


def _write_chunks(elements: tf.data.Dataset, folder: str) -> tf.data.Dataset:
    """`elements` as they stream, each also written to its own chunk file by a parallel stage (in order).

    A chunk's file is whole once the chunk has passed: the write runs before the element is handed on.
    """
    prefix = os.path.join(folder, _CHUNK_PREFIX)

    @_plain
    def write(index: tf.Tensor, element):
        written = tf.io.write_file(_chunk_path(prefix, index), _serialized(element))
        with tf.control_dependencies([written]):
            return tf.nest.map_structure(tf.identity, element)

    return elements.enumerate().map(write, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def read_chunks(
    folder: str, element_spec, seed: int | None = None, before: Callable[[], None] | None = None
) -> tf.data.Dataset:
    """The elements of the chunk files in `folder`, listed when the dataset is iterated.

    `seed=None` reads the chunks in order. With a seed, each iteration reads them in a new order: a cached
    split comes back in a new order each epoch. Several files are read at once, in order. `before()` is
    called in Python at the start of each iteration, before the files are listed.
    """
    prefix = os.path.join(folder, _CHUNK_PREFIX)

    @_plain
    def indices(pattern: tf.Tensor) -> tf.data.Dataset:
        if before is not None:
            called = tf.py_function(lambda: before() or True, [], tf.bool)
            with tf.control_dependencies([called]):
                pattern = tf.identity(pattern)
        # Chunks are numbered from 0 without gaps; counted when iterated, not when built.
        return tf.data.Dataset.range(tf.size(tf.io.matching_files(pattern), out_type=tf.int64))

    chunks = tf.data.Dataset.from_tensors(f"{prefix}*{_CHUNK_SUFFIX}").flat_map(indices)
    if seed is not None:
        chunks = chunks.shuffle(_SHUFFLE_CHUNKS, seed=seed, reshuffle_each_iteration=True)
    read = _plain(lambda index: _parsed(tf.io.read_file(_chunk_path(prefix, index)), element_spec))
    return chunks.map(read, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


@dataclasses.dataclass(frozen=True)
class CachedSplit:
    """What `through_disk_cache` found or started.

    `first_pass` (a miss): the elements as they are decoded and written; read
    it once, to its end, before `replay`. `folder` holds the chunk files
    after that pass (or already, on a hit). `examples` is known on a hit.
    `publish` (a miss read as training reads it): what the replay calls as it
    starts, which publishes the entry the first pass wrote (once).
    """

    first_pass: tf.data.Dataset | None
    folder: str
    examples: int | None
    publish: Callable[[], None] | None = None

    def replay(self, element_spec, seed: int | None = None) -> tf.data.Dataset:
        return read_chunks(self.folder, element_spec, seed, before=self.publish)


def through_disk_cache(
    cache_dir: str,
    key: str,
    build: Callable[[], tf.data.Dataset],
    elements: int,
    describe: Callable[[], dict],
    complete_now: bool,
    split: str = "?",
) -> CachedSplit:
    """The cached split under `key`: read on a hit, written through on a miss.

    On a miss, `build()`'s dataset (about `elements` elements) is cached into a
    private temporary folder, a file per element, as its first pass streams to
    the consumer (the first epoch costs no extra pass), and the entry is
    published atomically when that pass completes. A pass that stops early
    publishes nothing. `complete_now` runs the first pass here, for splits that
    callers may read only in part (evaluation with `steps`). `describe()` gives
    the entry's description once the pass is done, with `examples` and
    `elements`, the number of elements the pass handed on: an entry is
    published only if each of those elements was written whole;
    otherwise the pass stops with an error (an evaluation split written now
    goes on without the cache instead, `CacheUnavailableError`).
    """
    final = os.path.join(_entries_dir(cache_dir), key)
    if _usable_entry(final):
        return _open_entry(final, key)
    try:
        temp = atomic.make_temp_folder(final)
    except OSError as error:
        raise CacheUnavailableError(
            f"the cache folder {cache_dir} cannot be written ({error.strerror or error}); set `cache_dir` to a "
            "writable folder, or `cache=memory` or `cache=none`"
        ) from error
    atexit.register(atomic.remove_own, temp)
    publish = _publisher(temp, final, key, split, describe)
    if not complete_now:
        logging.info("Dataset cache miss (%s split): writing %s while reading", split, key)
        # Published as the replay starts, the first pass being whole then: a stage of its own at the pass's end
        # would cost its functions' set-up at the epoch boundary (tens of milliseconds, bench/stages.py).
        return CachedSplit(_write_chunks(build(), temp).prefetch(tf.data.AUTOTUNE), temp, None, publish)
    logging.info("Dataset cache miss (%s split): writing %s now", split, key)
    written = _then_call(_write_chunks(build(), temp), publish).prefetch(tf.data.AUTOTUNE)
    return _write_now(written, temp, final, key, cache_dir, split)


def _usable_entry(final: str) -> bool:
    """Whether `final` holds a whole entry; a damaged one is discarded (CacheUnavailableError when it
    cannot be: the caller goes on without the cache)."""
    if not os.path.isdir(final):
        return False
    problem = damage(final)
    if problem is None:
        return True
    logging.warning("Dataset cache entry %s is damaged (%s): discarding it and building it again", final, problem)
    try:
        atomic.discard(final)
    except FileNotFoundError:  # another process discarded it first
        pass
    except OSError as error:  # a read-only cache: the caller goes on without it
        raise CacheUnavailableError(
            f"the damaged cache entry {final} cannot be removed ({error}); remove it, "
            "or set `cache_dir` to a writable folder"
        ) from error
    return False


def _publisher(temp: str, final: str, key: str, split: str, describe: Callable[[], dict]) -> Callable[[], None]:
    """What runs when the first pass ends: publish `temp` as `final` if every element was written whole. It
    acts once: a training entry's replay calls it at each epoch's start, and an entry removed since (by the
    user, or discarded as damaged) must not come back from the temporary files it was linked from."""
    started = time.monotonic()
    attempted = False

    def publish_once() -> None:
        nonlocal attempted
        if attempted or os.path.isdir(final):
            return
        attempted = True
        meta = {
            "format": FORMAT_VERSION,
            "created": time.time(),
            "build_seconds": round(time.monotonic() - started, 3),
            **describe(),
        }
        problem = _incomplete(temp, meta["elements"])
        if problem:  # the pass ended before its last element (a failed read upstream, a stop)
            logging.warning("Dataset cache entry %s not published: %s", key, problem)
            # Stops the pass: its later epochs would replay the chunks that were written, a part of the split.
            raise OSError(
                f"the dataset cache entry {key} ({split} split) was not written whole ({problem}); a "
                "write failed, e.g. on a full disk. Free space, or use `cache=none`"
            )
        _publish(temp, final, meta)

    return publish_once


def _write_now(written: tf.data.Dataset, temp: str, final: str, key: str, cache_dir: str, split: str) -> CachedSplit:
    """Runs the first pass of `written` here, then opens the entry it published."""
    try:
        written.reduce(0, lambda count, _: count)
    except tf.errors.OpError as error:  # a write failed (a full disk): this split goes on without the cache
        atomic.remove_own(temp)
        raise CacheUnavailableError(
            f"the {split} split could not be cached in {cache_dir}: {str(error).strip().splitlines()[0]}"
        ) from error
    atomic.remove_own(temp)  # published as hard links (or copies): the temporary files are spare
    problem = damage(final)
    if problem is not None:
        raise OSError(
            f"the cache entry {final} was damaged as soon as it was written ({problem}): check the "
            "disk, or use `cache=memory` or `cache=none`"
        )
    return _open_entry(final, key)


# Keys whose hit was logged: a split is read several times in a run (validation, test, the export's check),
# and one line says what the later ones would.
_logged_hits: set[str] = set()


def _open_entry(final: str, key: str) -> CachedSplit:
    """The published, undamaged entry in `final`, its last use stamped (for pruning)."""
    entry = _read_entry(final)
    with contextlib.suppress(OSError):  # a read-only cache is still read
        os.utime(os.path.join(final, "meta.json"))
    log = logging.info if key not in _logged_hits else logging.debug
    _logged_hits.add(key)
    log(
        "Dataset cache hit: %s (%s split, %d examples, %.1f MB)",
        key,
        entry.description.get("split", "?"),
        entry.examples,
        entry.size_bytes / 1e6,
    )
    return CachedSplit(None, final, entry.examples)


def is_published(cache_dir: str, key: str) -> bool:
    """Whether an entry is published under `key`: a run will read it rather than the files (a damaged
    one is found and rebuilt when it is opened)."""
    return os.path.isdir(os.path.join(_entries_dir(cache_dir), key))


def list_entries(cache_dir: str) -> list[CacheEntry]:
    """Complete entries, least recently used first (temporary folders are never listed)."""
    folder = _entries_dir(cache_dir)
    if not os.path.isdir(folder):
        return []
    entries = []
    for item in os.scandir(folder):
        if item.is_dir() and not atomic.is_temporary(item.name):
            try:
                entries.append(_read_entry(item.path))
            except (OSError, ValueError, KeyError):
                logging.warning("Ignoring unreadable cache entry %s", item.path)
    return sorted(entries, key=lambda entry: entry.last_used)


def remove_entries(
    cache_dir: str, keys: Sequence[str] = (), unused_for_seconds: float | None = None
) -> list[CacheEntry]:
    """Removes the entries named in `keys`, or unused for `unused_for_seconds`, or all.

    Also clears temporary folders left by killed writers. Returns what was removed.
    """
    now = time.time()
    chosen = [
        entry
        for entry in list_entries(cache_dir)
        if (not keys or entry.key in keys)
        and (unused_for_seconds is None or now - entry.last_used >= unused_for_seconds)
    ]
    for entry in chosen:
        atomic.discard(entry.path)
    atomic.remove_abandoned_temporaries(_entries_dir(cache_dir))
    return chosen


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m compat.data.cache", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("list", "remove"))
    parser.add_argument("--cache_dir", default=default_cache_dir())
    parser.add_argument("--key", action="append", default=[], help="entry to remove (repeatable)")
    parser.add_argument("--unused_days", type=float, help="remove entries unused for this many days")
    args = parser.parse_args(argv)
    if args.command == "list":
        entries = list_entries(args.cache_dir)
    else:
        seconds = None if args.unused_days is None else args.unused_days * 86400
        entries = remove_entries(args.cache_dir, args.key, seconds)
    for entry in entries:
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.last_used))
        print(
            f"{entry.key}  {entry.examples:7d} ex  {entry.size_bytes / 1e6:8.1f} MB  used {used}  "
            f"{json.dumps(entry.description, sort_keys=True)}"
        )
    print(
        f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'} {'listed' if args.command == 'list' else 'removed'}"
        f" in {_entries_dir(args.cache_dir)}"
    )


if __name__ == "__main__":
    main()
