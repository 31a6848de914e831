"""Process start: what a program pays for `compat.estimator` before its first step.

    python bench/startup.py [--rounds 6] [--venv TF215_VENV]

Names load when first used, so each row imports and then reaches the names a program of its
kind uses. Rows, interleaved over rounds (medians of CPU seconds, user + system, and wall seconds):

  TensorFlow alone                 `import tensorflow as tf` here: the floor the others are weighed against
  compat.estimator                 a model_fn program's names (Estimator, EstimatorSpec, RunConfig, the specs)
  ... a canned estimator           the same and DNNClassifier (the canned estimators and heads load Keras 2)
  ... without scikit-learn, scipy  the same with both hidden from the import system (a row only where
                                   they are installed, e.g. after `pip install -e '.[bayesian]'`):
                                   Keras imports scikit-learn on `import tensorflow` whenever it can
  ... with --packages DIR          the same with DIR first on the import path, to weigh one package's
                                   version against the installed one, e.g. ml_dtypes 0.7.0:
                                   `pip install --no-deps --target DIR ml_dtypes==0.7.0`
  TF 2.15 tf.estimator             `import tensorflow as tf; tf.estimator.Estimator` in TF 2.15's environment
                                   (created on first use, bench/tf215.py)

Every multi-process job (a TF_CONFIG cluster, a search's workers, the test suite's CLI tests)
pays the first row once per process.
"""

from __future__ import annotations

import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import time

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.tf215 import tf215_python  # noqa: E402

flags.DEFINE_integer("rounds", 6, "Interleaved rounds (medians are reported).", lower_bound=1)
flags.DEFINE_string("venv", None, "The TensorFlow 2.15 virtual environment (created if missing).")
flags.DEFINE_string("packages", None, "A folder of packages put first on the import path for one more row.")
FLAGS = flags.FLAGS

HIDE_SKLEARN = "import sys; sys.modules['sklearn'] = sys.modules['scipy'] = None; "
MODEL_FN_NAMES = "import compat.estimator as e; e.Estimator, e.EstimatorSpec, e.RunConfig, e.TrainSpec, e.EvalSpec"


def cpu_and_wall(command: list[str], path: str = REPO) -> tuple[float, float]:
    """One child process with `path` as PYTHONPATH: its user + system CPU seconds and its wall seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=REPO,
                   env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": path})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def main(argv) -> None:
    del argv
    rows = {
        "TensorFlow alone": [sys.executable, "-c", "import tensorflow as tf"],
        "compat.estimator": [sys.executable, "-c", MODEL_FN_NAMES],
        "... a canned estimator": [sys.executable, "-c", MODEL_FN_NAMES + "; e.DNNClassifier"],
    }
    if all(importlib.util.find_spec(name) for name in ("sklearn", "scipy")):
        rows["... without scikit-learn, scipy"] = [sys.executable, "-c", HIDE_SKLEARN + MODEL_FN_NAMES]
    paths = dict.fromkeys(rows, REPO)
    if FLAGS.packages:
        name = f"... with {FLAGS.packages} first"
        rows[name], paths[name] = rows["compat.estimator"], os.pathsep.join([FLAGS.packages, REPO])
    rows["TF 2.15 tf.estimator"] = [tf215_python(FLAGS.venv), "-c", "import tensorflow as tf; tf.estimator.Estimator"]
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in rows}
    for _ in range(FLAGS.rounds):
        for name, command in rows.items():
            figures[name].append(cpu_and_wall(command, paths.get(name, REPO)))
    print(f"| start ({FLAGS.rounds} rounds, medians) | CPU s | wall s | CPU vs TensorFlow alone |\n|---|---:|---:|---:|")
    floor = statistics.median(c for c, _ in figures["TensorFlow alone"])
    for name, runs in figures.items():
        cpu, wall = statistics.median(c for c, _ in runs), statistics.median(w for _, w in runs)
        print(f"| {name} | {cpu:.2f} | {wall:.2f} | {cpu / floor:.2f}x |")


if __name__ == "__main__":
    app.run(main)
