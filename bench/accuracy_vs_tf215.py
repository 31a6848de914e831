"""Does the example Estimator program train as well here as on TF 2.15? Accuracy over repeated runs.

    python bench/accuracy_vs_tf215.py --data_dir ../shared/data/fsdd/recordings [--runs 5] [--venv DIR]

Runs bench/programs/iterator_estimator.py (make_one_shot_iterator input_fn,
model_to_estimator, tf_random_seed=7, 300 steps) `--runs` times under TF 2.15's
tf.estimator and under compat.estimator, alternating which goes first, and
prints each run's test accuracy with the mean and standard deviation per side.
Its Keras model starts from Keras' own random weights, which tf_random_seed
does not seed (TF 2.15's either), so runs differ; then it runs the program
twice more per side with --seed_keras, where every source of randomness is
seeded, and says whether the two runs agree exactly.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.tf215 import INSTALL_THEN_RUN, PROGRAMS, run, tf215_python  # noqa: E402

flags.DEFINE_string("data_dir", None, "FSDD recordings folder.", required=True)
flags.DEFINE_integer("runs", 5, "Unseeded runs per side.", lower_bound=2)
flags.DEFINE_integer("steps", 300, "Training steps per run.", lower_bound=100)
flags.DEFINE_string("venv", None, "The TensorFlow 2.15 virtual environment (created if missing).")
FLAGS = flags.FLAGS


def main(argv) -> None:
    del argv
    sides = {"TF 2.15": [tf215_python(FLAGS.venv)], "compat": [sys.executable, "-c", INSTALL_THEN_RUN]}
    program = [os.path.join(PROGRAMS, "iterator_estimator.py"), f"--data_dir={FLAGS.data_dir}"]

    def accuracy(prefix: list, *extra: str) -> float:
        model_dir = tempfile.mkdtemp(prefix="iterator-estimator-")
        return run([*prefix, *program, f"--model_dir={model_dir}", f"--steps={FLAGS.steps}", *extra])[0]["accuracy"]

    accuracies: dict[str, list[float]] = {name: [] for name in sides}
    for index in range(FLAGS.runs):
        for name, prefix in (list(sides.items()) if index % 2 == 0 else list(reversed(sides.items()))):
            accuracies[name].append(accuracy(prefix))
        print(f"run {index + 1}/{FLAGS.runs} done", flush=True)
    print(f"\n| {FLAGS.steps} steps | accuracy per run | mean | sd | seeded twice |\n|---|---|---:|---:|---|")
    for name, prefix in sides.items():
        seeded = [accuracy(prefix, "--seed_keras") for _ in range(2)]
        values = accuracies[name]
        agree = "identical" if seeded[0] == seeded[1] else f"differ: {seeded[0]:.4f}, {seeded[1]:.4f}"
        print(f"| {name} | {', '.join(f'{v:.3f}' for v in values)} | {statistics.mean(values):.3f} | "
              f"{statistics.stdev(values):.3f} | {agree} ({seeded[0]:.4f}) |")
    gap = statistics.mean(accuracies["compat"]) - statistics.mean(accuracies["TF 2.15"])
    spread = max(statistics.stdev(values) for values in accuracies.values())
    print(f"\ncompat - TF 2.15, mean accuracy: {gap:+.3f} (run-to-run sd up to {spread:.3f})")


if __name__ == "__main__":
    app.run(main)
