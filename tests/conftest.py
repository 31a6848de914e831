"""Shared fixtures: real audio files written with soundfile into temporary folders."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Two pytest workers share two cores, and many tests start more TensorFlow processes beside them: each process's
# ops run on one thread (its subprocesses inherit this), as OMP_NUM_THREADS=1 is set for BLAS under a parallel
# test runner, so that thread pools sized to every core do not spin against each other. Two concurrent runs of
# the tuning CLI test took 40 s each with it, 45 s without (2026-12-03).
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")

# Every process of a run writes its temporary files (TensorFlow's autograph modules, the input cache's folder of a
# process a test kills on purpose) into one folder of the run, which goes when the run ends (pytest_unconfigure);
# pytest's own tmp_path folders stay in the system's, where it keeps failed tests' folders for a look.
_RUN_TEMP = None
if "PYTEST_XDIST_WORKER" not in os.environ:  # the controller; its workers inherit TMPDIR
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())
    _RUN_TEMP = tempfile.mkdtemp(prefix="estimator-compat-tests-")
    os.environ["TMPDIR"] = tempfile.tempdir = _RUN_TEMP

import numpy as np
import pytest
import soundfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HELPERS = os.path.join(REPO, "tests", "helpers")

# .ci/run runs the files that touch Keras a second time with TF_USE_LEGACY_KERAS=1 (tf.keras is then Keras 2, as
# TensorFlow tells Keras 2 teams to set it). A test of what only Keras 3 has, or lacks, says so with this mark.
LEGACY_KERAS = os.environ.get("TF_USE_LEGACY_KERAS", "").lower() in ("1", "true")
keras_3_only = pytest.mark.skipif(
    LEGACY_KERAS, reason="Keras 3's behaviour; under TF_USE_LEGACY_KERAS=1 tf.keras is Keras 2, which has its own"
)
# A test whose parameters set TF_USE_LEGACY_KERAS for the programs it starts runs both Keras setups already.
sets_its_keras = pytest.mark.skipif(
    LEGACY_KERAS, reason="its programs run under each Keras setting it sets itself; the first pass ran them all"
)


# Test tiers and order come from recorded durations (tests/durations.json: seconds per test id, setup and call,
# on 2 cores), rewritten by `python -m pytest --record-durations` after a whole run:
# - a test recorded at SLOW_SECONDS or more is marked `slow` (they start processes, clusters or whole training
#   runs); `python -m pytest -m "not slow"` is the fast tier. A new test counts as fast until it is recorded.
# - files run longest first: with `--dist loadfile` (pyproject) a file runs whole on one worker, so a long file
#   that starts last would leave the other worker idle until it ends.
DURATIONS = os.path.join(os.path.dirname(__file__), "durations.json")
SLOW_SECONDS = 2.0


def pytest_addoption(parser) -> None:
    parser.addoption("--record-durations", action="store_true",
                     help=f"write each test's setup + call seconds to {DURATIONS} (after a whole run)")


def _recorded() -> dict[str, float]:
    try:
        with open(DURATIONS) as stream:
            return json.load(stream)
    except FileNotFoundError:
        return {}


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", f"slow: recorded at {SLOW_SECONDS} s or more (tests/durations.json)")


def pytest_unconfigure(config) -> None:
    if _RUN_TEMP is not None:
        shutil.rmtree(_RUN_TEMP, ignore_errors=True)


def pytest_collection_modifyitems(config, items: list) -> None:
    recorded = _recorded()
    per_file: dict[str, float] = {}
    for item in items:
        seconds = recorded.get(item.nodeid, 0.0)
        per_file[item.path.name] = per_file.get(item.path.name, 0.0) + seconds
        if seconds >= SLOW_SECONDS:
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: -per_file[item.path.name])  # stable: each file keeps its own order


_SEEN: dict[str, float] = {}  # this run's setup + call seconds per test (the controller's, under xdist)


def pytest_runtest_logreport(report) -> None:
    if report.when in ("setup", "call"):
        _SEEN[report.nodeid] = _SEEN.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus) -> None:
    if session.config.getoption("--record-durations") and not hasattr(session.config, "workerinput"):
        with open(DURATIONS, "w") as stream:
            json.dump({name: round(seconds, 2) for name, seconds in sorted(_SEEN.items())}, stream, indent=0)
            stream.write("\n")


def fsdd_dir() -> str | None:
    """FSDD recordings for tests: $FSDD_DIR, else the shared copy beside the checkout."""
    path = os.environ.get("FSDD_DIR") or os.path.join(REPO, "..", "shared", "data", "fsdd", "recordings")
    return path if os.path.isdir(path) else None


def tone(freq: float, seconds: float = 0.5, rate: int = 16000, channels: int = 1, seed: int = 0) -> np.ndarray:
    """A sine tone with a little noise, float in [-1, 1], shape [samples] or [samples, channels]."""
    t = np.arange(int(seconds * rate)) / rate
    wave = 0.5 * np.sin(2 * np.pi * freq * t) + 0.01 * np.random.default_rng(seed).standard_normal(t.size)
    return wave if channels == 1 else np.stack([wave] * channels, axis=1)


def write_class_folders(root, classes=("high", "low", "mid"), per_class: int = 6, rate: int = 16000,
                        subtype: str = "PCM_16", ext: str = "wav") -> str:
    """`root/<class>/<n>.<ext>`: tones whose pitch depends on the class."""
    freqs = {name: 300 * (i + 1) for i, name in enumerate(classes)}
    for name in classes:
        os.makedirs(os.path.join(root, name), exist_ok=True)
        for n in range(per_class):
            path = os.path.join(root, name, f"{name}_{n}.{ext}")
            soundfile.write(path, tone(freqs[name] + 5 * n, rate=rate, seed=n), rate, subtype=subtype)
    return str(root)


@pytest.fixture
def class_folders(tmp_path):
    return write_class_folders(tmp_path / "data")


@pytest.fixture
def cache_dir(tmp_path):
    return str(tmp_path / "cache")


def run_helper(name: str, *args: str, **kwargs):
    import subprocess

    return subprocess.run([sys.executable, os.path.join(HELPERS, name), *args],
                          capture_output=True, text=True, **kwargs)


INSTALL_THEN_RUN = (
    "import compat.estimator, runpy, sys; compat.estimator.install(); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


def run_installed(name: str, *args: str, env: dict | None = None, timeout: int = 300):
    """tests/helpers/`name` (a program written for TF 2.15's tf.estimator) in a subprocess, after
    `compat.estimator.install()`, as a legacy program gains the one line; `env` is added to this process's."""
    import subprocess

    return subprocess.run([sys.executable, "-c", INSTALL_THEN_RUN, os.path.join(HELPERS, name), *args],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})})


def run_train(*flags: str, timeout: int = 600, env: dict | None = None):
    """`python train.py FLAGS...` in a subprocess, from the repository root: the real CLI."""
    import subprocess

    return subprocess.run([sys.executable, os.path.join(REPO, "train.py"), *flags],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env)


def start_paused(point: str, program: str, *args: str, install: bool = False, stderr_to=None, **popen):
    """Starts `program` under tests/helpers/pause.py and returns it once it holds still at `point`
    (`checkpoint:STEP` or `trial:N`): a kill or a Ctrl-C sent then lands there, not wherever a
    polling loop happened to notice progress. Its stderr goes to the file `stderr_to` (else nowhere)."""
    import subprocess

    command = [sys.executable, os.path.join(HELPERS, "pause.py"), *(["--install"] if install else []), point,
               program, *args]
    popen.setdefault("cwd", REPO)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True,
                               stderr=open(stderr_to, "w") if stderr_to else subprocess.DEVNULL, **popen)
    for line in process.stdout:
        if line.startswith("paused after "):
            return process
    process.wait()
    error = open(stderr_to).read()[-3000:] if stderr_to else ""
    raise AssertionError(f"{program} ended (exit {process.returncode}) before it reached {point}\n{error}")


@dataclasses.dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def train_in_process(*flags: str) -> Result:
    """train.py's flag parsing and main() in this process, with the flags restored afterwards.

    The same code path as the CLI without paying a TensorFlow import per call;
    a flag that fails parsing or validation exits as the CLI does.
    """
    import contextlib
    import io

    from absl import flags as absl_flags
    from absl.testing import flagsaver

    import train

    import logging

    stdout, stderr = io.StringIO(), io.StringIO()
    code = 0
    # Parsing flags sets absl's logger level from --verbosity: put it back, so that later tests
    # that capture log records see them.
    absl_level, root_handlers = logging.getLogger("absl").level, list(logging.getLogger().handlers)
    # train.py filters TensorFlow's INFO lines for its run: not for later tests.
    filters = {name: list(logging.getLogger(name).filters) for name in ("absl", "tensorflow")}
    with flagsaver.flagsaver(), contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        absl_flags.FLAGS.unparse_flags()
        try:
            argv = train.parse_flags(["train.py", *flags])
            train.main(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        finally:
            import keras

            keras.config.set_dtype_policy("float32")  # --dtype sets the process's policy
            logging.getLogger("absl").setLevel(absl_level)
            for name, kept in filters.items():
                logging.getLogger(name).filters[:] = kept
            logging.getLogger().handlers[:] = root_handlers
    return Result(code, stdout.getvalue(), stderr.getvalue())


@pytest.fixture
def installed():
    """tf.estimator (and the other names install() sets) resolve to compat.estimator during the test; after it,
    the process is as importing compat.estimator left it."""
    import compat.estimator as estimator
    from compat.core import tf_internals

    estimator.install()
    yield
    estimator.uninstall()
    tf_internals.install()


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    """Three classes of eight short tones: enough for a few training steps."""
    return write_class_folders(tmp_path_factory.mktemp("tiny") / "data", per_class=8)
