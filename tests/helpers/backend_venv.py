"""A side environment with Keras on another backend (JAX), for the portable core of a converted model.

`python_with(backend)` returns the interpreter of `<cache>/keras-<backend>-venv`, made once with pip
(the same Keras as this project's, the backend's CPU build, no TensorFlow), whole or not at all: a marker
written last says it is complete. `predict_core.py` in this folder is what runs there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import keras

from libraries import IndexUnreachable, _cache_root

PACKAGES = {"jax": ["jax[cpu]"]}


def python_with(backend: str) -> str:
    """The interpreter of a venv holding Keras (this project's version) and `backend`.

    Raises:
        IndexUnreachable: pip could not reach the package index.
    """
    venv = os.path.join(os.path.dirname(_cache_root()), f"keras-{backend}-venv")
    python, marker = os.path.join(venv, "bin", "python"), os.path.join(venv, ".complete")
    if os.path.exists(marker):
        return python
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    result = subprocess.run(
        [python, "-m", "pip", "install", "-q", f"keras=={keras.__version__}", *PACKAGES[backend]],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        shutil.rmtree(venv, ignore_errors=True)
        if any(word in result.stderr for word in ("NewConnectionError", "Max retries", "No matching distribution")):
            raise IndexUnreachable(result.stderr.strip().splitlines()[-1])
        raise RuntimeError(f"pip install keras {backend}: {result.stderr[-2000:]}")
    with open(marker, "w") as file:
        file.write("complete\n")
    return python
