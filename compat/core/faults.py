"""Telling a storage fault (a full disk, a file gone or unreadable) from a bug, for a one-line error."""

from __future__ import annotations

import errno
import re

import tensorflow as tf

# An operating system's words for a storage fault, as TensorFlow's errors quote them.
_STORAGE_FAULTS = (
    "No space left on device",
    "File too large",
    "Disk quota exceeded",
    "Read-only file system",
    "Input/output error",
    "Permission denied",
    "No such file or directory",
    "was not written whole",
)
_STORAGE_ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EACCES, errno.EPERM)


def storage_problem(error: BaseException) -> str | None:
    """The line of an error that names a file and what the system said of it (a full disk, a file that
    vanished or cannot be read), from TensorFlow or Python; None when the error is not a storage fault."""
    if isinstance(error, OSError) and error.errno in _STORAGE_ERRNOS:  # Python's own writes (metrics.json, ...)
        return f"{error.filename}: {error.strerror}" if error.filename else str(error)
    if not isinstance(error, tf.errors.OpError):
        return None
    for line in str(error.message).splitlines():
        fault = next((words for words in _STORAGE_FAULTS if words in line), None)
        if fault is not None:
            detail = line.split("Original message: ")[-1]
            detail = re.sub(r"\{\{function_node [^}]*\}\}|\[\[.*?\]\]|\[Op:[^\]]*\]", "", detail).strip()
            return detail
    return None
