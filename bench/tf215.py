"""TensorFlow 2.15 beside this project: its environment, and running a program under either.

bench/vs_tf215.py and bench/time_to_accuracy.py run the same programs under
TF 2.15's real tf.estimator and under compat.estimator, side by side.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(REPO, "bench", "programs")
# How this project runs a legacy program: compat.estimator.install(), then the program unchanged.
INSTALL_THEN_RUN = ("import compat.estimator, runpy, sys; compat.estimator.install(); "
                    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")


def tf215_python(venv: str | None) -> str:
    """The TF 2.15 interpreter in `venv` (default `<cache dir>/tf215-venv`), created on first use."""
    if venv is None:
        from compat.config import default_cache_dir

        venv = os.path.join(default_cache_dir(), "tf215-venv")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        print(f"creating {venv} with tensorflow-cpu==2.15.1 (once)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "tensorflow-cpu==2.15.1"], check=True)
    return python


def run(command: list[str]) -> tuple[dict, float]:
    """Runs a program; returns the JSON line it printed last and the whole process's wall seconds."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": REPO}
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1]), wall
