"""Downloading FSDD: against a local HTTP server on 127.0.0.1, never the internet."""

import functools
import http.server
import os
import sys
import threading
import zipfile

import pytest

from compat.data import fetch
from compat.data.sources import DataSource, list_split
from conftest import fsdd_dir


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A client that stops reading (fetch's download cap) resets the connection: expected, not an error.
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


@pytest.fixture
def http_folder(tmp_path):
    """Serves tmp_path/www on 127.0.0.1; yields (folder, base URL)."""
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(www))
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield www, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _zip_recordings(recordings, archive, edit=None):
    """An archive laid out like GitHub's: <repo>-<commit>/recordings/*.wav."""
    prefix = f"free-spoken-digit-dataset-{fetch.FSDD_COMMIT}/recordings/"
    with zipfile.ZipFile(archive, "w") as out:
        for name in sorted(os.listdir(recordings)):
            payload = open(os.path.join(recordings, name), "rb").read()
            out.writestr(prefix + name, edit(name, payload) if edit else payload)


@pytest.mark.skipif(fsdd_dir() is None, reason="FSDD not found: set FSDD_DIR to its recordings folder")
def test_fsdd_is_downloaded_checked_and_published_once(http_folder, tmp_path):
    www, base = http_folder
    _zip_recordings(fsdd_dir(), www / "fsdd.zip")
    cache_dir = str(tmp_path / "cache")
    recordings = fetch.fetch_fsdd(cache_dir, url=f"{base}/fsdd.zip")
    assert len(os.listdir(recordings)) == 3000
    assert fetch.recordings_digest(recordings) == fetch.FSDD_RECORDINGS_SHA256
    (www / "fsdd.zip").unlink()  # a second call must not download again
    assert fetch.fetch_fsdd(cache_dir, url=f"{base}/fsdd.zip") == recordings
    source = DataSource("fsdd", url=f"{base}/fsdd.zip")
    assert len(list_split(source, "test", cache_dir)) == 300


def test_a_checksum_mismatch_publishes_nothing(http_folder, tmp_path):
    www, base = http_folder
    recordings = tmp_path / "fake"
    recordings.mkdir()
    (recordings / "0_alice_0.wav").write_bytes(b"RIFF")
    _zip_recordings(recordings, www / "fsdd.zip")
    cache_dir = tmp_path / "cache"
    with pytest.raises(fetch.FetchError, match="failed its checksum.*Nothing was kept"):
        fetch.fetch_fsdd(str(cache_dir), url=f"{base}/fsdd.zip")
    assert os.listdir(cache_dir) == []


def test_an_unreachable_address_says_how_to_use_a_local_copy(tmp_path):
    with pytest.raises(fetch.FetchError, match="`dataset=fsdd` with `data_dir="):
        fetch.fetch_fsdd(str(tmp_path), url="http://127.0.0.1:9/fsdd.zip", timeout=5)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("member", ["../escaped.wav", "/tmp/absolute.wav", "link"])
def test_an_archive_member_that_leaves_its_folder_is_refused(http_folder, tmp_path, member):
    import io
    import tarfile

    www, base = http_folder
    with tarfile.open(www / "fsdd.tar.gz", "w:gz") as archive:
        info = tarfile.TarInfo(member)
        if member == "link":  # a symlink out of the target, then a file written through it
            info.type, info.linkname = tarfile.SYMTYPE, str(tmp_path / "outside")
            archive.addfile(info)
        else:
            info.size = 4
            archive.addfile(info, io.BytesIO(b"RIFF"))
    cache_dir = tmp_path / "cache"
    with pytest.raises(fetch.FetchError, match="unsafe member"):
        fetch.fetch_fsdd(str(cache_dir), url=f"{base}/fsdd.tar.gz")
    assert not (tmp_path / "escaped.wav").exists() and not os.path.exists("/tmp/absolute.wav")
    assert not os.path.exists(tmp_path / "outside")
    assert not [name for name in os.listdir(cache_dir) if not name.startswith(".")]  # nothing published


def test_a_download_past_the_size_limit_is_stopped(http_folder, tmp_path):
    www, base = http_folder
    (www / "fsdd.zip").write_bytes(b"\0" * 3_000_000)
    cache_dir = tmp_path / "cache"
    with pytest.raises(fetch.FetchError, match="passed 1,000,000 bytes"):
        fetch.fetch_fsdd(str(cache_dir), url=f"{base}/fsdd.zip", max_bytes=1_000_000)
    assert not [name for name in os.listdir(cache_dir) if not name.startswith(".")]
