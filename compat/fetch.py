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
import tempfile
import urllib.error
import urllib.request

from absl import logging

from compat import atomic

FSDD_COMMIT = "26eb9aaf76e81b692f806f9140c2d2777410d7a1"
FSDD_URL = f"https://github.com/Jakobovski/free-spoken-digit-dataset/archive/{FSDD_COMMIT}.zip"
FSDD_RECORDINGS_SHA256 = "a2e8a660492f28d9eed6270b290d26cbc5c81d6077ce87d3c0ad5adf4d4ee696"
_CHUNK = 1 << 20


class FetchError(RuntimeError):
    """The dataset could not be downloaded or failed its check; nothing was published."""


def recordings_digest(folder: str) -> str:
    """SHA-256 over the sorted `.wav` names of `folder` and each file's SHA-256."""
    digest = hashlib.sha256()
    for name in sorted(n for n in os.listdir(folder) if n.endswith(".wav")):
        with open(os.path.join(folder, name), "rb") as stream:
            digest.update(name.encode() + b"\0" + hashlib.sha256(stream.read()).digest())
    return digest.hexdigest()


def _download(url: str, target: str, timeout: float) -> None:
    logging.info("Downloading %s", url)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(target, "wb") as out:
            shutil.copyfileobj(response, out, _CHUNK)
    except (urllib.error.URLError, OSError) as error:
        raise FetchError(
            f"could not download FSDD from {url}: {error}. Download it yourself and pass "
            "--dataset=fsdd --data_dir=<its recordings folder>"
        ) from error


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
) -> str:
    """The path of FSDD's recordings in `cache_dir`, downloading them on first use."""
    url = url or FSDD_URL
    final = os.path.join(cache_dir, f"fsdd-{FSDD_COMMIT[:12]}")

    def build(folder: str) -> None:
        with tempfile.TemporaryDirectory(dir=folder) as work:
            archive = os.path.join(work, "archive" + (".zip" if url.endswith(".zip") else ".tar.gz"))
            _download(url, archive, timeout)
            unpacked = os.path.join(work, "unpacked")
            try:
                shutil.unpack_archive(archive, unpacked)
            except (shutil.ReadError, ValueError, OSError) as error:
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
