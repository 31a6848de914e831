"""Batches copied ahead to the GPU against copied at the start of each step, in both paths.

    python bench/device_prefetch.py --data_dir ../shared/data/fsdd/recordings [--rounds 3] [--steps 600]

`compat.modes.distribution.prefetch_to_accelerator` is the last stage of the builder
(`train.py --mode=keras|estimator`) and of the Estimator engine's reading of a
user's own input_fn; `COMPAT_PREFETCH_TO_DEVICE=0` turns it off. Two programs
run with it on and off, in alternating rounds:

  wav_estimator.py   the example legacy Estimator program (its own
                      un-prefetched WAV input_fn, model_to_estimator)
  train.py            --mode=keras on FSDD, the builder's pipeline

Figures are medians of training seconds; the ratio is off / on (above 1: the
copy-ahead saves time). Where TensorFlow sees no GPU the copy-ahead is never
applied, so both sides would run the same code: the script says so and
measures nothing.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.tf215 import INSTALL_THEN_RUN, PROGRAMS, run  # noqa: E402
from compat.core.strategies import DEVICE_PREFETCH_VARIABLE  # noqa: E402

flags.DEFINE_string("data_dir", None, "FSDD recordings folder.", required=True)
flags.DEFINE_integer("rounds", 3, "Interleaved rounds (medians are reported).", lower_bound=1)
flags.DEFINE_integer("steps", 600, "Training steps of each run.", lower_bound=50)
FLAGS = flags.FLAGS
SIDES = {"on": "1", "off": "0"}


def visible_gpus() -> list[str]:
    """The GPUs a fresh TensorFlow process sees (asked in a child, so this process never holds one)."""
    probe = "import json, tensorflow as tf; print(json.dumps([d.name for d in tf.config.list_logical_devices('GPU')]))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def seed_program_seconds(prefetch: str) -> float:
    os.environ[DEVICE_PREFETCH_VARIABLE] = prefetch
    seed = os.path.join(PROGRAMS, "wav_estimator.py")
    model_dir = tempfile.mkdtemp(prefix=f"device-prefetch-{prefetch}-")
    output, _ = run([sys.executable, "-c", INSTALL_THEN_RUN, seed, f"--data_dir={FLAGS.data_dir}",
                     f"--model_dir={model_dir}", f"--steps={FLAGS.steps}"])
    return output["train_seconds"]


def keras_mode_seconds(prefetch: str, cache_dir: str) -> float:
    model_dir = tempfile.mkdtemp(prefix=f"device-prefetch-keras-{prefetch}-")
    command = [sys.executable, os.path.join(REPO, "train.py"), "--mode=keras", "--dataset=fsdd",
               f"--data_dir={FLAGS.data_dir}", f"--cache_dir={cache_dir}", f"--max_steps={FLAGS.steps}",
               "--noexport", f"--model_dir={model_dir}"]
    subprocess.run(command, check=True, capture_output=True, env={**os.environ, DEVICE_PREFETCH_VARIABLE: prefetch})
    with open(os.path.join(model_dir, "metrics.json")) as stream:
        return json.load(stream)["train_seconds"]


def main(argv) -> None:
    del argv
    gpus = visible_gpus()
    if not gpus:
        print("device prefetch: TensorFlow sees no GPU on this machine, so batches are never copied ahead and "
              "both sides would run the same code: measured nothing. Run this script on a GPU machine.")
        return
    cache_dir = tempfile.mkdtemp(prefix="device-prefetch-cache-")
    keras_mode_seconds("1", cache_dir)  # fills the builder's cache: neither side pays for decoding
    samples: dict[str, list[float]] = {f"{program}_{side}": [] for program in ("seed", "keras") for side in SIDES}
    for round_ in range(FLAGS.rounds):
        for side, value in SIDES.items() if round_ % 2 == 0 else reversed(SIDES.items()):
            samples[f"seed_{side}"].append(seed_program_seconds(value))
            samples[f"keras_{side}"].append(keras_mode_seconds(value, cache_dir))
        print(f"round {round_ + 1}/{FLAGS.rounds} done", flush=True)
    median = {key: statistics.median(values) for key, values in samples.items()}
    print(f"\n{', '.join(gpus)}; medians of {FLAGS.rounds} interleaved rounds, {FLAGS.steps} steps\n")
    print("| program | copied ahead s | copied at each step s | off / on |\n|---|---:|---:|---:|")
    for program, label in (("seed", "wav_estimator.py (Estimator engine)"), ("keras", "train.py --mode=keras")):
        on, off = median[f"{program}_on"], median[f"{program}_off"]
        print(f"| {label} | {on:.1f} | {off:.1f} | {off / on:.2f}x |")


if __name__ == "__main__":
    app.run(main)
