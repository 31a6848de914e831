"""Publishing folders atomically: a reader sees a whole folder or none.

Every folder this package writes for later runs (dataset caches, the synthetic
dataset, downloads) is built under a private temporary name beside its final
name and then renamed into place. A process killed mid-write leaves only its
temporary folder, which nobody reads and a later run removes; two processes
building the same folder both succeed, and the first rename wins.
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import uuid
from typing import Callable

from absl import logging

_TEMP_PREFIX = ".tmp-"


def make_temp_folder(final: str) -> str:
    """Creates a private, empty folder beside `final` that no reader will open.

    Its name records this host and process, so that a later run can tell a
    folder abandoned by a killed writer from one still being written.
    """
    parent, name = os.path.split(final)
    os.makedirs(parent, exist_ok=True)
    remove_abandoned_temporaries(parent)
    owner = f"{socket.gethostname()}@{os.getpid()}"
    temp = os.path.join(parent, f"{_TEMP_PREFIX}{name}@{owner}@{uuid.uuid4().hex[:8]}")
    os.makedirs(temp)
    return temp


def _owner_is_dead(temp_name: str) -> bool:
    """True when the folder's writer was a process of this host that has exited."""
    try:
        _, host, pid, _ = temp_name.rsplit("@", 3)
        if host != socket.gethostname():
            return False
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (ValueError, PermissionError):
        return False
    return False


def remove_abandoned_temporaries(parent: str) -> list[str]:
    """Removes temporary folders left in `parent` by killed writers on this host."""
    removed = []
    if not os.path.isdir(parent):
        return removed
    for entry in os.scandir(parent):
        if entry.name.startswith(_TEMP_PREFIX) and _owner_is_dead(entry.name):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
            logging.info("Removed a folder abandoned by a killed writer: %s", entry.path)
    return removed


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
        os.rename(temp, final)
    except OSError as error:
        shutil.rmtree(temp, ignore_errors=True)
        if error.errno in (errno.ENOTEMPTY, errno.EEXIST) and os.path.isdir(final):
            logging.info("Another process published %s first; using it", final)
            return final
        raise
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return final
