"""TensorFlow 2.15's Estimator against compat.estimator, on the same programs, side by side.

    python bench/vs_tf215.py --data_dir ../shared/data/fsdd/recordings [--rounds 3] [--venv DIR]

On first use it creates a virtual environment with `tensorflow-cpu==2.15.1`
(in --venv; default `<cache dir>/tf215-venv`). Each program in bench/programs/
then runs under both: TensorFlow 2.15 runs it as written; this project runs it
after `compat.estimator.install()`, the one line a legacy program gains.
Rounds alternate which side goes first; figures are medians, ratios are of
medians from the same rounds.

  tiny_steps.py       engine cost per step: model_to_estimator's train() on a
                      tiny model (steps/s), and Keras 3 `fit` on the same model
  wav_estimator.py   the example Estimator program: un-prefetched WAV
                      input_fn, model_to_estimator, train_and_evaluate, 600
                      steps, 3 evaluations (whole-process seconds, accuracy)
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.tf215 import INSTALL_THEN_RUN, PROGRAMS, run, tf215_python  # noqa: E402

flags.DEFINE_string("data_dir", None, "FSDD recordings folder.", required=True)
flags.DEFINE_integer("rounds", 3, "Interleaved rounds (medians are reported).", lower_bound=1)
flags.DEFINE_integer("tiny_steps", 3000, "Steps timed in tiny_steps.py.", lower_bound=100)
flags.DEFINE_integer("seed_steps", 600, "Training steps of wav_estimator.py.", lower_bound=200)
flags.DEFINE_string("venv", None, "The TensorFlow 2.15 virtual environment (created if missing).")
flags.DEFINE_string("json", None, "Write the figures to this JSON file.")
flags.DEFINE_string("plot", None, "Write a PNG chart of the table to this file.")
FLAGS = flags.FLAGS

def main(argv) -> None:
    del argv
    old = tf215_python(FLAGS.venv)
    sides = {"tf215": [old], "compat": [sys.executable, "-c", INSTALL_THEN_RUN]}
    samples: dict[str, list] = {key: [] for key in ("tiny_tf215", "tiny_compat", "tiny_keras", "seed_tf215",
                                                    "seed_compat")}
    tiny = [os.path.join(PROGRAMS, "tiny_steps.py")]
    seed = [os.path.join(PROGRAMS, "wav_estimator.py"), f"--data_dir={FLAGS.data_dir}"]
    for round_ in range(FLAGS.rounds):
        order = list(sides.items()) if round_ % 2 == 0 else list(reversed(sides.items()))
        for name, prefix in order:
            samples[f"tiny_{name}"].append(run([*prefix, *tiny, "estimator", str(FLAGS.tiny_steps)])[0])
            model_dir = tempfile.mkdtemp(prefix=f"seed-{name}-")
            output, wall = run([*prefix, *seed, f"--model_dir={model_dir}", f"--steps={FLAGS.seed_steps}"])
            samples[f"seed_{name}"].append({**output, "wall_seconds": wall})
        samples["tiny_keras"].append(run([sys.executable, *tiny, "keras", str(FLAGS.tiny_steps)])[0])
        print(f"round {round_ + 1}/{FLAGS.rounds} done", flush=True)

    median = lambda key, field: statistics.median(s[field] for s in samples[key])
    tiny_rates = {key: median(f"tiny_{key}", "steps_per_second") for key in ("tf215", "compat", "keras")}
    seed_rows = {key: {field: median(f"seed_{key}", field) for field in ("wall_seconds", "train_seconds", "accuracy")}
                 for key in ("tf215", "compat")}
    print(f"\nmedians of {FLAGS.rounds} interleaved rounds\n")
    print("| engine (tiny model, Dense 32 -> 10, batch 32) | steps/s |\n|---|---:|")
    print(f"| TF 2.15 tf.estimator (model_to_estimator) | {tiny_rates['tf215']:,.0f} |")
    print(f"| compat.estimator (model_to_estimator) | {tiny_rates['compat']:,.0f} |")
    print(f"| Keras 3 fit | {tiny_rates['keras']:,.0f} |")
    print(f"\ncompat / TF 2.15: {tiny_rates['compat'] / tiny_rates['tf215']:.2f}x (target >= 1); "
          f"compat / Keras fit: {tiny_rates['compat'] / tiny_rates['keras']:.2f}x (target >= 1)\n")
    print(f"| seed program ({FLAGS.seed_steps} steps, 3 evaluations) | whole process s | training s | accuracy |")
    print("|---|---:|---:|---:|")
    for key, label in (("tf215", "TF 2.15 tf.estimator"), ("compat", "compat.estimator")):
        row = seed_rows[key]
        print(f"| {label} | {row['wall_seconds']:.1f} | {row['train_seconds']:.1f} | {100 * row['accuracy']:.1f} % |")
    speedup = seed_rows["tf215"]["wall_seconds"] / seed_rows["compat"]["wall_seconds"]
    print(f"\nTF 2.15 / compat, whole process: {speedup:.2f}x; training only: "
          f"{seed_rows['tf215']['train_seconds'] / seed_rows['compat']['train_seconds']:.2f}x (target >= 2 for both)")
    if FLAGS.json:
        with open(FLAGS.json, "w") as stream:
            json.dump({"tiny_steps_per_second": tiny_rates, "seed": seed_rows, "samples": samples}, stream, indent=1)
    if FLAGS.plot:
        import charts  # bench/charts.py: this script's folder is on the path

        charts.grouped_bars(FLAGS.plot, "compat.estimator relative to TF 2.15's tf.estimator (higher is faster)",
                            ["tiny model, steps/s", "seed program, whole process", "seed program, training"],
                            {"compat / TF 2.15": [tiny_rates["compat"] / tiny_rates["tf215"], speedup,
                                                  seed_rows["tf215"]["train_seconds"]
                                                  / seed_rows["compat"]["train_seconds"]]}, ideal=1.0)


if __name__ == "__main__":
    app.run(main)
