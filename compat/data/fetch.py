"""Fetching the Free Spoken Digit Dataset (CC BY-SA 4.0) into the cache folder.

The archive is downloaded once, unpacked, checked, and published atomically as
`<cache_dir>/fsdd-<commit>/recordings`. The check is a digest of the 3,000
recordings themselves (names and contents), not of the archive's bytes: a
hosting service may re-pack an archive, but the recordings of one commit never
change.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request

from absl import logging

from compat.core import atomic
from compat.core.errors import UserError

FSDD_COMMIT = "26eb9aaf76e81b692f806f9140c2d2777410d7a1"
FSDD_URL = f"https://github.com/Jakobovski/free-spoken-digit-dataset/archive/{FSDD_COMMIT}.zip"
FSDD_RECORDINGS_SHA256 = "a2e8a660492f28d9eed6270b290d26cbc5c81d6077ce87d3c0ad5adf4d4ee696"
_CHUNK = 1 << 20
# FSDD's archive is about 17 MB: a download past this is not the archive, and is stopped.
MAX_DOWNLOAD_BYTES = 200 * 1024 * 1024


class FetchError(UserError, RuntimeError):
    """The dataset could not be downloaded or failed its check; nothing was published."""


def recordings_digest(folder: str) -> str:
    """SHA-256 over the sorted `.wav` names of `folder` and each file's SHA-256."""
    digest = hashlib.sha256()
    for name in sorted(n for n in os.listdir(folder) if n.endswith(".wav")):
        with open(os.path.join(folder, name), "rb") as stream:
            digest.update(name.encode() + b"\0" + hashlib.sha256(stream.read()).digest())
    return digest.hexdigest()


def _download(url: str, target: str, timeout: float, max_bytes: int) -> None:
    logging.info("Downloading %s", url)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(target, "wb") as out:
            received = 0
            while chunk := response.read(_CHUNK):
                received += len(chunk)
                if received > max_bytes:
                    raise FetchError(
                        f"the download from {url} passed {max_bytes:,} bytes, more than the archive "
                        "it should be; stopped, nothing was kept. Check the address"
                    )
                out.write(chunk)
    except (urllib.error.URLError, OSError) as error:
        raise FetchError(
            f"could not download FSDD from {url}: {error}. Download it yourself and pass "
            "`dataset=fsdd` with `data_dir=<its recordings folder>`"
        ) from error


def _unpack(archive: str, folder: str) -> None:
    """Unpacks into `folder` only: tar members with an absolute path are refused, and tarfile's
    "data" filter refuses "..", links out of the folder and device files; zipfile itself strips
    ".." and leading slashes from its members."""
    if not tarfile.is_tarfile(archive):
        shutil.unpack_archive(archive, folder)
        return
    with tarfile.open(archive) as tar:
        absolute = [member for member in tar.getmembers() if os.path.isabs(member.name)]
        if absolute:
            raise tarfile.AbsolutePathError(absolute[0])
        tar.extractall(folder, filter="data")


def _find_recordings(root: str) -> str:
    for folder, subfolders, _ in os.walk(root):
        if "recordings" in subfolders:
            return os.path.join(folder, "recordings")
    raise FetchError("the downloaded archive has no 'recordings' folder")


def fetch_fsdd(
    cache_dir: str,
    url: str | None = None,
    expected_sha256: str = FSDD_RECORDINGS_SHA256,
    timeout: float = 60.0,
    max_bytes: int = MAX_DOWNLOAD_BYTES,
) -> str:
    """The path of FSDD's recordings in `cache_dir`, downloading them on first use."""
    url = url or FSDD_URL
    final = os.path.join(cache_dir, f"fsdd-{FSDD_COMMIT[:12]}")

    def build(folder: str) -> None:
        with tempfile.TemporaryDirectory(dir=folder) as work:
            archive = os.path.join(work, "archive" + (".zip" if url.endswith(".zip") else ".tar.gz"))
            _download(url, archive, timeout, max_bytes)
            unpacked = os.path.join(work, "unpacked")
            try:
                _unpack(archive, unpacked)
            except tarfile.FilterError as error:
                raise FetchError(
                    f"the archive from {url} has an unsafe member ({error}); nothing was unpacked "
                    "outside its folder and nothing was kept"
                ) from error
            except (shutil.ReadError, tarfile.TarError, EOFError, ValueError, OSError) as error:
                raise FetchError(f"the archive from {url} cannot be unpacked: {error}") from error
            recordings = _find_recordings(unpacked)
            actual = recordings_digest(recordings)
            if actual != expected_sha256:
                raise FetchError(
                    f"FSDD from {url} failed its checksum: recordings digest {actual}, "
                    f"expected {expected_sha256}. Nothing was kept; check the address"
                )
            shutil.move(recordings, os.path.join(folder, "recordings"))

    return os.path.join(atomic.publish_folder(final, build), "recordings")
