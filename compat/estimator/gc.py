"""Which exports to keep: filters over the version folders of an export directory, as TF 2.15's `gc` had them.

A filter takes a sorted list of `Path`s (a folder and its export version, or None for a folder that is not
an export) and returns the sorted list of those it keeps. The exporters keep the newest `exports_to_keep`
with them; libraries that clean their own export folders (TensorFlow Model Analysis) import them by
TF 2.15's module path.
"""

from __future__ import annotations

import collections
import math
import os
from collections.abc import Callable

import tensorflow as tf

Path = collections.namedtuple("Path", "path export_version")
Filter = Callable[[list], list]


def largest_export_versions(n: int) -> Filter:
    """Keeps the `n` paths of the largest export versions."""

    def keep(paths: list) -> list:
        versioned = [path for path in paths if path.export_version is not None]
        return sorted(sorted(versioned, key=lambda path: path.export_version)[-n:] if n > 0 else [])

    return keep


def one_of_every_n_export_versions(n: int) -> Filter:
    """Keeps, of each interval of `n` versions ([0, n], (n, 2n], ...), the path of the largest."""

    def keep(paths: list) -> list:
        largest: dict[int, Path] = {}
        for path in paths:
            if path.export_version is None:
                continue
            interval = math.floor((path.export_version - 1) / n) if path.export_version else 0
            if interval not in largest or largest[interval].export_version < path.export_version:
                largest[interval] = path
        return sorted(largest.values())

    return keep


def mod_export_version(n: int) -> Filter:
    """Keeps the paths whose export version is a multiple of `n`."""

    def keep(paths: list) -> list:
        return sorted(path for path in paths if path.export_version % n == 0)

    return keep


def union(lf: Filter, rf: Filter) -> Filter:
    """Keeps what either filter keeps."""

    def keep(paths: list) -> list:
        return sorted(set(lf(paths)) | set(rf(paths)))

    return keep


def negation(f: Filter) -> Filter:
    """Keeps what `f` does not: the paths to delete."""

    def keep(paths: list) -> list:
        return sorted(set(paths) - set(f(paths)))

    return keep


def get_paths(base_dir: str, parser: Callable[[Path], Path | None]) -> list:
    """The sorted `Path`s of `base_dir`'s entries that `parser` (given a Path without a version) accepts."""
    paths = []
    for entry in tf.io.gfile.listdir(base_dir):
        entry = tf.compat.as_str_any(entry).rstrip("/")  # a cloud file system lists folders with a slash
        parsed = parser(Path(os.path.join(tf.compat.as_str_any(base_dir), entry), None))
        if parsed:
            paths.append(parsed)
    return sorted(paths)


def export_version(path: Path) -> Path | None:
    """`path` with its export version, when its folder is named by a 10-digit timestamp; else None."""
    name = os.path.basename(path.path)
    return path._replace(export_version=int(name)) if len(name) == 10 and name.isdigit() else None
