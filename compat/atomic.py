"""Publishing folders atomically: a reader sees a whole folder or none.

Every folder this package writes for later runs (dataset caches, the synthetic
dataset, downloads) is built under a private temporary name beside its final
name and then renamed into place. A process killed mid-write leaves only its
temporary folder, which nobody reads and a later run removes; two processes
building the same folder both succeed, and the first rename wins.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import socket
import time
import uuid
from typing import Callable

from absl import logging

_TEMP_PREFIX = ".tmp-"


_WRITER_LOCK = ".writer.lock"
_held_locks: dict[str, object] = {}  # temporary folder -> its lock file, held while this process lives
# A temporary folder with no lock file is left alone this long: its writer may be creating it.
_UNLOCKED_GRACE_SECONDS = 300


def _temp_name(final: str) -> str:
    parent, name = os.path.split(final)
    owner = f"{socket.gethostname()}@{os.getpid()}"
    return os.path.join(parent, f"{_TEMP_PREFIX}{name}@{owner}@{uuid.uuid4().hex[:8]}")


def make_temp_folder(final: str) -> str:
    """Creates a private, empty folder beside `final` that no reader will open.

    The writer holds an exclusive `flock` on a file inside it for as long as it
    lives; the kernel releases it when the process ends, even by `kill -9`. So a
    later run can tell a folder abandoned by a dead writer from one still being
    written, across hosts and process-id namespaces that share the folder.
    """
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


def _writer_is_gone(folder: str) -> bool:
    try:
        lock = open(os.path.join(folder, _WRITER_LOCK))
    except FileNotFoundError:  # being created, or left by a remover: judge by age
        with contextlib.suppress(FileNotFoundError):
            return time.time() - os.path.getmtime(folder) > _UNLOCKED_GRACE_SECONDS
        return False
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def remove_abandoned_temporaries(parent: str) -> list[str]:
    """Removes temporary folders in `parent` whose writers have ended."""
    removed = []
    if not os.path.isdir(parent):
        return removed
    for entry in os.scandir(parent):
        if entry.name.startswith(_TEMP_PREFIX) and entry.path not in _held_locks and _writer_is_gone(entry.path):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
            logging.info("Removed a folder abandoned by an ended writer: %s", entry.path)
    return removed


def discard(folder: str) -> None:
    """Removes a published folder: renamed aside first, so no reader opens half of it."""
    doomed = _temp_name(folder)
    os.rename(folder, doomed)
    shutil.rmtree(doomed, ignore_errors=True)


def remove_own(temp: str) -> None:
    """Removes one of this process's temporary folders."""
    _release(temp)
    shutil.rmtree(temp, ignore_errors=True)


def is_temporary(name: str) -> bool:
    return name.startswith(_TEMP_PREFIX)


def publish_folder(final: str, build: Callable[[str], None]) -> str:
    """Returns `final`, building it first with `build(temp_folder)` if it does not exist.

    `build` fills an empty temporary folder; it is renamed to `final` only when
    `build` returns. If another process published `final` meanwhile, its folder
    is kept and ours discarded: both hold the same content by construction.
    """
    if os.path.isdir(final):
        return final
    temp = make_temp_folder(final)
    try:
        build(temp)
        _release(temp)  # the lock file is no part of the result
        os.rename(temp, final)
    except OSError as error:
        remove_own(temp)
        if error.errno in (errno.ENOTEMPTY, errno.EEXIST) and os.path.isdir(final):
            logging.info("Another process published %s first; using it", final)
            return final
        raise
    except BaseException:
        remove_own(temp)
        raise
    return final


def write_text(path: str, text: str) -> None:
    """Writes `path` whole or not at all: a temporary file, then an atomic replace."""
    temp = f"{path}.tmp-{os.getpid()}"
    with open(temp, "w") as stream:
        stream.write(text)
    os.replace(temp, path)


def write_json(path: str, payload: dict) -> None:
    write_text(path, json.dumps(payload, indent=1, sort_keys=True))
