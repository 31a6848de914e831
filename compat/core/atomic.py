"""Whole-or-nothing writes: a reader sees a complete file or folder, or the previous one, or none.

Every file and folder this package writes for later use (dataset caches, the
synthetic dataset, downloads, exports, metrics, tables) is built under a
private temporary name beside its final name (`.tmp-...`, never read) and then
renamed into place. A process killed mid-write leaves only its temporary, which
a later writer removes; two processes building the same folder both succeed,
and the first rename wins.

A writer of a temporary folder holds an exclusive `flock` on a file inside it
for as long as it lives; the kernel releases it when the process ends, even by
`kill -9`, so a later run tells a folder abandoned by a dead writer from one
still being written, across hosts and process-id namespaces that share it.

`folder_lock` gives one process a folder (a model folder): a second one is
refused at once with the first one named.

Model folders may also be on TensorFlow's other file systems (`gs://`, `s3://`,
`ram://`: `is_remote`), written through `tf.io.gfile`. Those have no rename of
a folder and no locks, so there a folder is built in a local temporary folder,
checked, and then copied file by file (each file is whole, since an object
store writes an object at once), and a model folder is not locked: the README
says what that leaves open.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging as python_logging
import os
import shutil
import socket
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from compat.core.errors import UserError

# TensorFlow's logger (`tf.get_logger()`), as TF 2.15's Estimator logged (docs/estimator.md), without importing it.
logging = python_logging.getLogger("tensorflow")


_TEMP_PREFIX = ".tmp-"
_ASIDE_PREFIX = ".tmp-old-"  # a previous version moved aside while its replacement is swapped in
_WRITER_LOCK = ".writer.lock"
_FOLDER_LOCK = ".lock"
_held_locks: dict[str, Any] = {}  # temporary folder -> its lock file, held while this process lives
# A temporary folder with no lock file is left alone this long: its writer may be creating it.
_UNLOCKED_GRACE_SECONDS = 300


class FolderInUseError(UserError, RuntimeError):
    """Another live process holds the folder; the message names it."""


class FolderNotCreatedError(UserError, RuntimeError):
    """A model folder could not be made (a read-only or virtual file system, a missing parent that cannot
    be made); the message names it and the system's reason."""


def is_remote(path: str) -> bool:
    """A path on one of TensorFlow's file systems other than the local one (`gs://bucket/run`, `ram://x`)."""
    return "://" in path  # flags.py turns file:// into a local path before a path gets here


def _gfile():
    import tensorflow as tf  # only for remote paths: the rest of this module works without TensorFlow

    return tf.io.gfile


def _put(local: str, remote: str) -> None:
    """Copies a local file to `remote`, replacing what is there. The old file is removed first: writing
    over it keeps its extra bytes on some of TensorFlow's file systems (ram:// appends)."""
    gfile = _gfile()
    if gfile.exists(remote):
        gfile.remove(remote)
    with open(local, "rb") as source, gfile.GFile(remote, "wb") as target:
        shutil.copyfileobj(source, target, 16 << 20)


# Files that make a folder readable: copied last, so a copy cut short leaves a folder nothing loads (a
# SavedModel without saved_model.pb, a checkpoint without its index, a best model without its score).
_COMPLETES_A_FOLDER = ("saved_model.pb", "fingerprint.pb", "score.json", "checkpoint")


def _copy_order(name: str) -> bool:
    return name in _COMPLETES_A_FOLDER or name.endswith(".index")


def _upload(final: str, build: Callable[[str], None], replace: bool) -> str:
    """`build` in a local temporary folder, then copied to the remote `final` (replacing it if `replace`).

    Not whole-or-nothing (no folder rename there): the old folder goes first and
    the files that make the new one readable come last, so a kill leaves a
    folder that fails to load, never one that loads half old, half new.
    """
    import tempfile

    gfile = _gfile()
    with tempfile.TemporaryDirectory(prefix=_TEMP_PREFIX) as local:
        staged = os.path.join(local, os.path.basename(final.rstrip("/")))
        os.makedirs(staged)
        build(staged)
        if gfile.exists(final):
            if not replace:
                return final
            gfile.rmtree(final)
        files = [(folder, name) for folder, _, names in os.walk(staged) for name in names]
        for folder, name in sorted(files, key=lambda entry: _copy_order(entry[1])):
            target = final + folder[len(staged) :]
            gfile.makedirs(target)
            _put(os.path.join(folder, name), f"{target}/{name}")
    return final


def _owner() -> str:
    return f"{socket.gethostname()}@{os.getpid()}"


def _temp_name(final: str, prefix: str = _TEMP_PREFIX) -> str:
    """A private name beside `final` that ends with `final`'s own name (so its suffix is kept)."""
    parent, name = os.path.split(final)
    return os.path.join(parent, f"{prefix}{_owner()}@{uuid.uuid4().hex[:8]}-{name}")


def is_temporary(name: str) -> bool:
    return os.path.basename(name).startswith(_TEMP_PREFIX)


def make_temp_folder(final: str) -> str:
    """Creates a private, empty folder beside `final` that no reader will open, and locks it."""
    os.makedirs(os.path.dirname(final), exist_ok=True)
    remove_abandoned_temporaries(os.path.dirname(final))
    temp = _temp_name(final)
    os.makedirs(temp)
    lock = open(os.path.join(temp, _WRITER_LOCK), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    _held_locks[temp] = lock
    return temp


def _release(temp: str) -> None:
    lock = _held_locks.pop(temp, None)
    if lock is not None:
        lock.close()
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(temp, _WRITER_LOCK))


def _writer_is_gone(path: str) -> bool:
    if not os.path.isdir(path) or os.path.basename(path).startswith(_ASIDE_PREFIX):
        # A temporary file, or a folder moved aside: no lock inside; judge by age.
        with contextlib.suppress(FileNotFoundError):
            return time.time() - os.path.getmtime(path) > _UNLOCKED_GRACE_SECONDS
        return False
    try:
        lock = open(os.path.join(path, _WRITER_LOCK))
    except FileNotFoundError:  # being created, or left by a remover: judge by age
        with contextlib.suppress(FileNotFoundError):
            return time.time() - os.path.getmtime(path) > _UNLOCKED_GRACE_SECONDS
        return False
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def remove_abandoned_temporaries(parent: str, *, all_dead: bool = False) -> list[str]:
    """Removes temporaries in `parent` whose writers have ended.

    `all_dead`: the caller holds `parent`'s `folder_lock`, so every temporary
    not of this process is abandoned, whatever its age.
    """
    removed: list[str] = []
    if not os.path.isdir(parent):
        return removed
    for entry in os.scandir(parent):
        if not entry.name.startswith(_TEMP_PREFIX) or entry.path in _held_locks:
            continue
        if all_dead or _writer_is_gone(entry.path):
            _remove(entry.path)
            removed.append(entry.path)
            logging.info("Removed %s, left by a writer that ended", entry.path)
    return removed


def link_or_copy(source: str, target: str) -> None:
    """`target` as a hard link to `source` (no second copy of the bytes; a writer may go on reading
    `source`), or a copy on a file system without hard links."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def probe_writable(folder: str) -> None:
    """Writes and removes one empty file of a name no other process has in `folder`.

    Raises:
        OSError: the folder cannot be written (read-only, no permission, immutable, not a folder).
    """
    handle, probe = tempfile.mkstemp(prefix=".write-check-", dir=folder)
    os.close(handle)
    os.remove(probe)


def discard(folder: str) -> None:
    """Removes a published folder: renamed aside first, so no reader opens half of it."""
    doomed = _temp_name(folder, _ASIDE_PREFIX)
    os.rename(folder, doomed)
    shutil.rmtree(doomed, ignore_errors=True)


def remove_own(temp: str) -> None:
    """Removes one of this process's temporary folders."""
    _release(temp)
    shutil.rmtree(temp, ignore_errors=True)


def _build(final: str, build: Callable[[str], None]) -> str:
    """Runs `build` in a new locked temporary folder beside `final`; returns it, unlocked."""
    temp = make_temp_folder(final)
    try:
        build(temp)
        _release(temp)  # the lock file is no part of the result
    except BaseException:
        remove_own(temp)
        raise
    return temp


def publish_folder(final: str, build: Callable[[str], None]) -> str:
    """Returns `final`, building it first with `build(temp_folder)` if it does not exist.

    `build` fills an empty temporary folder; it is renamed to `final` only when
    `build` returns. If another process published `final` meanwhile, its folder
    is kept and ours discarded: both hold the same content by construction.
    """
    if is_remote(final):
        return _upload(final, build, replace=False)
    if os.path.isdir(final):
        return final
    temp = _build(final, build)
    try:
        os.rename(temp, final)
    except OSError as error:
        shutil.rmtree(temp, ignore_errors=True)
        if error.errno in (errno.ENOTEMPTY, errno.EEXIST) and os.path.isdir(final):
            logging.info("Another process published %s first; using it", final)
            return final
        raise
    return final


def _recover_aside(final: str) -> None:
    """After a kill between the two renames of `replace_folder`: the previous version is put back."""
    parent, name = os.path.split(final)
    if not os.path.isdir(parent):
        return
    aside = sorted(
        (
            entry.path
            for entry in os.scandir(parent)
            if entry.name.startswith(_ASIDE_PREFIX) and entry.name.endswith(f"-{name}")
        ),
        key=os.path.getmtime,
    )
    if aside and not os.path.exists(final):
        os.rename(aside.pop(), final)
        logging.warning("Restored %s, which a killed run had moved aside while replacing it", final)
    for path in aside:
        shutil.rmtree(path, ignore_errors=True)


def replace_folder(final: str, build: Callable[[str], None]) -> str:
    """Builds `final` anew with `build(temp_folder)` and swaps it in: a reader finds the old or the new.

    Two renames swap the folders; a kill between them leaves the previous
    version under an aside name, which the next call puts back (or discards once
    the new one is in place). Nothing temporary outlives the next call.
    """
    if is_remote(final):
        return _upload(final, build, replace=True)
    _recover_aside(final)
    temp = _build(final, build)
    if os.path.exists(final):
        aside = _temp_name(final, _ASIDE_PREFIX)
        os.rename(final, aside)
        os.rename(temp, final)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.rename(temp, final)
    return final


def write_file(path: str, write: Callable[[str], None]) -> None:
    """Writes `path` whole or not at all: `write(temporary_path)`, then an atomic replace.

    The temporary path ends with `path`'s name, so writers that go by the
    suffix (`model.save("x.keras")`) accept it.
    """
    if is_remote(path):
        import tempfile

        with tempfile.TemporaryDirectory(prefix=_TEMP_PREFIX) as local:
            staged = os.path.join(local, os.path.basename(path))
            write(staged)
            _put(staged, path)
        return
    temp = _temp_name(path)
    try:
        write(temp)
        os.replace(temp, path)
    except BaseException:
        _remove(temp)
        raise


def write_text(path: str, text: str) -> None:
    def write(temp: str) -> None:
        with open(temp, "w") as stream:
            stream.write(text)

    write_file(path, write)


def write_json(path: str, payload: dict) -> None:
    write_text(path, json.dumps(payload, indent=1, sort_keys=True))


@contextlib.contextmanager
def folder_lock(folder: str) -> Iterator[None]:
    """Holds `folder` for this process: a second process is refused at once, naming the first.

    The lock is an `flock`, which a dead process does not hold; it is taken on a
    file in the folder that is removed on release (a kill leaves it, unheld).
    Temporaries that earlier, killed processes left in the folder are removed.
    """
    if is_remote(folder):
        _gfile().makedirs(folder)
        logging.warning(
            "%s is not on a local disk: it cannot be locked, so a second run on it is not refused; "
            "start one run per folder",
            folder,
        )
        yield
        return
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as error:
        raise FolderNotCreatedError(
            f"'{folder}' cannot be made ({error.strerror}): give a `model_dir` in a place this user can write"
        ) from error
    path = os.path.join(folder, _FOLDER_LOCK)
    stream = _locked_lock_file(folder, path)
    stream.seek(0)
    stream.truncate()
    stream.write(f"process {os.getpid()} on {socket.gethostname()}")
    stream.flush()
    remove_abandoned_temporaries(folder, all_dead=True)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
        stream.close()


def _locked_lock_file(folder: str, path: str) -> TextIO:
    """The lock file `path` of `folder`, opened and `flock`ed by this process; FolderInUseError naming the
    holder, or FolderNotCreatedError for a folder this user cannot write."""
    while True:
        try:
            stream = open(path, "a+")
        except OSError as error:  # an existing folder this user cannot write (permissions, immutable, read-only)
            if error.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise  # a full disk and the like: a storage fault, reported as one
            raise FolderNotCreatedError(
                f"'{folder}' cannot be written ({error.strerror}): give a `model_dir` in a place this user can "
                "write, or make that folder writable"
            ) from error
        try:
            fcntl.flock(stream, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            stream.seek(0)
            holder = stream.read().strip() or "another process"
            stream.close()
            raise FolderInUseError(
                f"'{folder}' is in use by {holder}; wait for that run to end, or give this one another "
                "folder (`model_dir`)"
            ) from None
        try:  # the file we locked may have been removed by the previous holder's release
            same = os.fstat(stream.fileno()).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return stream
        stream.close()
