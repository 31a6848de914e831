"""Parity of `train.py --mode=keras` and `--mode=estimator`: same data, model, steps and seed.

    python bench/modes.py [--rounds N] [-- extra train.py flags, e.g. --dataset=fsdd --data_dir=DIR]

Each mode runs as its own `train.py` process, in alternating rounds, on one
shared, already warm dataset cache (a first untimed run fills it), so neither
mode pays for decoding. Prints test accuracy and wall time per mode (medians
over the rounds) and the parity targets: accuracy within 1 point, wall time
within 5 %.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ("keras", "estimator")


def run(mode: str, model_dir: str, flags: list[str]) -> dict:
    command = [sys.executable, os.path.join(REPO, "train.py"), f"--mode={mode}", f"--model_dir={model_dir}", *flags]
    subprocess.run(command, check=True, capture_output=True, text=True)
    with open(os.path.join(model_dir, "metrics.json")) as stream:
        return json.load(stream)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    args, extra = parser.parse_known_args()
    extra = [flag for flag in extra if flag != "--"]
    work = tempfile.mkdtemp(prefix="bench-modes-")
    flags = [f"--cache_dir={os.path.join(work, 'cache')}", *extra]
    run("keras", os.path.join(work, "warmup"), [*flags, "--epochs=1", "--noexport"])  # fills the cache

    results = {mode: [] for mode in MODES}
    for round_ in range(args.rounds):
        for mode in MODES if round_ % 2 == 0 else reversed(MODES):
            results[mode].append(run(mode, os.path.join(work, f"{mode}-{round_}"), flags))

    print(f"\ntrain.py {' '.join(extra) or '(defaults: synthetic dataset)'}; {args.rounds} round(s), warm cache\n")
    print("| mode | test accuracy | wall s | train s | steps |")
    print("|---|---:|---:|---:|---:|")
    summary = {}
    for mode, runs in results.items():
        summary[mode] = {key: statistics.median(r[key] for r in runs)
                         for key in ("test_accuracy", "wall_seconds", "train_seconds", "steps")}
        s = summary[mode]
        print(f"| {mode} | {100 * s['test_accuracy']:.2f} % | {s['wall_seconds']:.1f} | "
              f"{s['train_seconds']:.1f} | {s['steps']:.0f} |")
    keras_, est = summary["keras"], summary["estimator"]
    accuracy_gap = 100 * abs(keras_["test_accuracy"] - est["test_accuracy"])
    wall_ratio = est["wall_seconds"] / keras_["wall_seconds"]
    print(f"\nparity: accuracy within 1 point: {accuracy_gap <= 1} ({accuracy_gap:.2f} points); "
          f"wall time within 5 %: {abs(wall_ratio - 1) <= 0.05} (estimator/keras {wall_ratio:.3f})")


if __name__ == "__main__":
    main()
