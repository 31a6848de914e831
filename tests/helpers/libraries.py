"""Third-party libraries built on tf.estimator, installed and run as their users run them.

Each library is installed with `pip install --no-deps --target <cache>/libraries/<tag>/<name>` (once per
interpreter), and driven by a program of ours in tests/helpers (`library_<name>.py`) that prints one JSON
line. tests/test_libraries.py runs each driver here after `compat.estimator.install()` and compares it with
TensorFlow 2.15's run of the same driver, which tests/helpers/tf215_libraries.py records into
tests/data/tf215_libraries.json.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

HELPERS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HELPERS))

# name -> the driver, the library's pinned packages (installed without their dependencies: TensorFlow is
# ours), and what else the TF 2.15 side environment needs that this project's environment already has.
LIBRARIES = {
    "deepctr": {
        "driver": "library_deepctr.py",
        "packages": ["deepctr==0.9.4"],
        "tf215_only": ["pandas==2.2.3", "python-dateutil==2.9.0.post0", "pytz==2025.2", "tzdata==2025.2"],
    },
    "tf_ranking": {"driver": "library_tf_ranking.py", "packages": ["tensorflow-ranking==0.5.5"], "tf215_only": []},
    # TF Privacy subclasses TF 2.15's heads and calls its private model_fns (tensorflow_estimator paths).
    # (its DP optimizers' accounting: dp-accounting, with scipy, attrs and mpmath)
    "tf_privacy": {
        "driver": "library_tf_privacy.py",
        "packages": ["tensorflow-privacy==0.9.0", "dp-accounting==0.4.4", "scipy==1.14.1", "attrs==26.1.0"]
        + ["mpmath==1.4.1"],
        "tf215_only": [],
    },
    # Spleeter with the pure-Python packages its command line imports (typer, click, httpx for its model
    # provider, which downloads nothing here); its pandas, numpy and soundfile pins are older than this
    # project's, whose own are used here (the TF 2.15 environment gets the pinned ones).
    "spleeter": {
        "driver": "library_spleeter.py",
        "packages": [
            "spleeter==2.4.2",
            "typer==0.3.2",
            "click==7.1.2",
            "httpx==0.19.0",
            "httpcore==0.13.7",
            "h11==0.12.0",
            "anyio==3.7.1",
            "sniffio==1.3.1",
            "rfc3986==1.5.0",
        ],
        "tf215_only": [
            "pandas==1.5.3",
            "python-dateutil==2.9.0.post0",
            "pytz==2024.2",
            "soundfile==0.13.1",
            "cffi==1.17.1",
            "pycparser==2.22",
        ],
    },
}
INSTALL_THEN_RUN = (
    "import compat.estimator, runpy, sys; compat.estimator.install(); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


class IndexUnreachable(RuntimeError):
    """pip could not reach the package index."""


def _cache_root() -> str:
    base = os.environ.get("ESTIMATOR_COMPAT_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "estimator-compat"
    )
    return os.path.join(base, "libraries")


def install(packages: list[str], python: str = sys.executable) -> str:
    """The folder holding `packages` for `python`, installed there once, whole or not at all.

    Raises:
        IndexUnreachable: pip failed to reach the package index.
    """
    tag = subprocess.run(
        [python, "-c", "import sys; print(f'py{sys.version_info[0]}{sys.version_info[1]}')"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    folder = os.path.join(_cache_root(), tag, "+".join(sorted(packages)).replace("==", "-"))
    if os.path.isdir(folder):
        return folder
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".installing-", dir=os.path.dirname(folder))
    result = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--target", staging, *packages],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        message = result.stderr.strip().splitlines()[-1:] or ["pip failed"]
        if any(word in result.stderr for word in ("NewConnectionError", "Max retries", "No matching distribution")):
            raise IndexUnreachable(message[0])
        raise RuntimeError(f"pip install {' '.join(packages)}: {message[0]}")
    os.replace(staging, folder)
    return folder


def run_driver(
    name: str,
    python: str,
    workdir: str,
    with_compat: bool,
    extra_sites: tuple[str, ...] = (),
    extra_env: dict | None = None,
) -> dict:
    """Runs library `name`'s driver under `python` (with `extra_env` set, e.g. TF_USE_LEGACY_KERAS); returns its
    JSON (status "ok" or "error" with the reason)."""
    library = LIBRARIES[name]
    sites = [install(library["packages"], python), *extra_sites]
    driver = os.path.join(HELPERS, library["driver"])
    path = [*sites, HELPERS, REPO] if with_compat else [*sites, HELPERS]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "TF_CPP_MIN_LOG_LEVEL": "2", **(extra_env or {})}
    command = [python, "-c", INSTALL_THEN_RUN] if with_compat else [python]
    result = subprocess.run(
        [*command, driver, "--workdir", workdir], capture_output=True, text=True, env=env, cwd=workdir
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        return {"status": "error", "error": result.stderr[-3000:]}
    return json.loads(lines[-1])


# google-research/bert as released on PyPI, and tf-slim, TF 1.x's tf.contrib.layers, which TF 2.15's side of the
# BERT comparison imports in place of tensorflow.contrib (its hand edit; see tf215_bert.py)
BERT = ["bert-tensorflow==1.0.4"]
TF_SLIM = ["tf-slim==1.1.0"]


def copy_of_bert(destination: str, python: str = sys.executable) -> str:
    """`destination`, holding a fresh copy of bert-tensorflow's `bert` package (installed for `python` once),
    as a user's checkout of google-research/bert would: ready to be rewritten in place."""
    return copy_of_package(BERT, "bert", destination, python)


# google-research/albert as released on PyPI, with the SentencePiece its tokenization module imports
ALBERT = ["albert-tensorflow==1.1", "sentencepiece==0.2.0"]


def copy_of_package(packages: list[str], package: str, destination: str, python: str = sys.executable) -> str:
    """`destination`, holding a fresh copy of the package `package` of `packages` (installed for `python` once),
    as a user's checkout would: ready to be rewritten in place."""
    source = os.path.join(install(packages, python), package)
    shutil.copytree(source, os.path.join(destination, package), ignore=shutil.ignore_patterns("__pycache__"))
    return destination
