"""Time to accuracy: `train.py`'s defaults against TF 2.15 running the example Estimator program.

    python bench/time_to_accuracy.py --data_dir ../shared/data/fsdd/recordings [--rounds 2] [--venv DIR]

Rows, interleaved over rounds (medians), each a whole process from a cold start:

  tf215 seed program   bench/programs/wav_estimator.py under TensorFlow 2.15 (the yardstick)
  train.py synthetic   `python train.py`, a fresh cache folder (the dataset is generated)
  train.py fsdd        `python train.py --dataset=fsdd --data_dir=DIR`, a fresh cache folder

Targets: FSDD >= 99.3 % test accuracy (at most 2 errors in 300) and the
synthetic set >= 95 %, each within 1x the yardstick's time.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.tf215 import run as run_program  # noqa: E402
from bench.tf215 import tf215_python

flags.DEFINE_string("data_dir", None, "FSDD recordings folder.", required=True)
flags.DEFINE_integer("rounds", 2, "Interleaved rounds (medians are reported).", lower_bound=1)
flags.DEFINE_string("venv", None, "The TensorFlow 2.15 virtual environment (created if missing).")
flags.DEFINE_string("json", None, "Write the figures to this JSON file.")
flags.DEFINE_string("plot", None, "Write a PNG chart of the table to this file.")
FLAGS = flags.FLAGS


def train_py(*extra: str) -> dict:
    """`python train.py` with a fresh cache and model folder; returns test accuracy and wall seconds."""
    work = tempfile.mkdtemp(prefix="bench-tta-")
    command = [sys.executable, os.path.join(REPO, "train.py"), f"--model_dir={work}/run", *extra]
    env = {**os.environ, "ESTIMATOR_COMPAT_CACHE_DIR": f"{work}/cache"}
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    accuracy = float(re.search(r"test accuracy ([0-9.]+)", result.stdout).group(1))
    return {"accuracy": accuracy, "wall_seconds": wall}


def main(argv) -> None:
    del argv
    old = tf215_python(FLAGS.venv)
    seed = [old, os.path.join(REPO, "bench", "programs", "wav_estimator.py"), f"--data_dir={FLAGS.data_dir}"]
    rows = {
        "tf215 seed program": lambda: (lambda out: {"accuracy": out[0]["accuracy"], "wall_seconds": out[1]})(
            run_program([*seed, f"--model_dir={tempfile.mkdtemp(prefix='bench-tta-seed-')}"])),
        "train.py synthetic": lambda: train_py(),
        "train.py fsdd": lambda: train_py("--dataset=fsdd", f"--data_dir={FLAGS.data_dir}"),
    }
    samples = {name: [] for name in rows}
    for round_ in range(FLAGS.rounds):
        for name in (rows if round_ % 2 == 0 else reversed(list(rows))):
            samples[name].append(rows[name]())
        print(f"round {round_ + 1}/{FLAGS.rounds} done", flush=True)
    medians = {name: {key: statistics.median(s[key] for s in runs) for key in ("accuracy", "wall_seconds")}
               for name, runs in samples.items()}
    yardstick = medians["tf215 seed program"]["wall_seconds"]
    print(f"\nmedians of {FLAGS.rounds} interleaved rounds, cold starts\n")
    print("| run | test accuracy | whole process s | / TF 2.15 seed program |\n|---|---:|---:|---:|")
    for name, row in medians.items():
        print(f"| {name} | {100 * row['accuracy']:.2f} % | {row['wall_seconds']:.1f} | "
              f"{row['wall_seconds'] / yardstick:.2f}x |")
    fsdd, synthetic = medians["train.py fsdd"], medians["train.py synthetic"]
    print(f"\ntargets: fsdd >= 99.3 % in <= 1x: {fsdd['accuracy'] >= 0.993 and fsdd['wall_seconds'] <= yardstick}; "
          f"synthetic >= 95 % in <= 1x: {synthetic['accuracy'] >= 0.95 and synthetic['wall_seconds'] <= yardstick}")
    if FLAGS.json:
        with open(FLAGS.json, "w") as stream:
            json.dump({"medians": medians, "samples": samples}, stream, indent=1)
    if FLAGS.plot:
        import charts  # bench/charts.py: this script's folder is on the path

        charts.grouped_bars(FLAGS.plot, "Whole process, relative to the TF 2.15 seed program (lower is faster)",
                            list(medians), {"time / TF 2.15": [row["wall_seconds"] / yardstick
                                                              for row in medians.values()],
                                            "test accuracy": [row["accuracy"] for row in medians.values()]},
                            ideal=1.0)


if __name__ == "__main__":
    app.run(main)
