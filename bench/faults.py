"""kill -9 at random moments, then the same command again: does every run resume and end as planned?

    python bench/faults.py [--kills 10] [--modes keras,estimator,model_fn,tune] [--seed 0]

For each mode a run first goes to the end unkilled, to time it; then, `--kills`
times, a fresh run is killed (SIGKILL) at a moment drawn uniformly over that
time and the same command runs again to the end. Per mode it reports:

  finished     reruns that exited 0
  exact        reruns whose final step is the planned one
  resumed      reruns that started from the newest checkpoint on disk at the kill
               (so at most one checkpoint interval was trained twice)
  metrics      reruns that left a metrics.json that parses (train.py modes)
  trials_rerun finished tuning trials that ran again (tune; target 0)
  left         temporary files, locks or partial exports left in the folder
               after the rerun (target 0)

Modes: `keras` and `estimator` are `train.py` on the built-in synthetic set,
128 steps with a checkpoint and evaluation every 16, exports on; `model_fn` is a
custom model_fn Estimator on the graph engine (bench/programs/model_fn_steps.py,
400 steps, a checkpoint every 20); `tune` is a 3-trial random search of 32
steps each. The kills land anywhere: imports, cache writes, training,
checkpoints, evaluation, exports.
"""

from __future__ import annotations

import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from absl import app, flags

flags.DEFINE_integer("kills", 10, "Kills per mode.", lower_bound=1)
flags.DEFINE_list("modes", ["keras", "estimator", "model_fn", "tune"], "Modes to kill.")
flags.DEFINE_integer("seed", 0, "Seed of the kill moments.")
flags.DEFINE_string("json", None, "Write the table's rows to this JSON file.")
flags.DEFINE_string("plot", None, "Write a PNG chart of the table to this file.")
FLAGS = flags.FLAGS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS = {"keras": 128, "estimator": 128, "model_fn": 400, "tune": 32}
_TEMPORARY_MARKS = (".tmp-", ".lock", ".writer.lock")


def command(mode: str, model_dir: str, cache_dir: str) -> list[str]:
    train = [sys.executable, os.path.join(REPO, "train.py"), f"--model_dir={model_dir}", f"--cache_dir={cache_dir}"]
    if mode in ("keras", "estimator"):
        return [*train, f"--mode={mode}", f"--max_steps={STEPS[mode]}", "--eval_every_steps=16"]
    if mode == "tune":
        return [*train, "--mode=tune", "--max_trials=3", f"--max_steps={STEPS[mode]}", "--eval_every_steps=16",
                "--model=conv1d"]
    return [sys.executable, os.path.join(REPO, "bench", "programs", "model_fn_steps.py"), f"--model_dir={model_dir}",
            f"--max_steps={STEPS[mode]}"]


def newest_checkpoint_step(model_dir: str) -> int | None:
    from compat.modes.model_folder import last_saved_step  # either mode's layout

    return last_saved_step(model_dir)


def completed_trials(model_dir: str) -> dict[str, str]:
    """trial folder -> its trial.json, for the trials keras-tuner finished."""
    done = {}
    for path in glob.glob(os.path.join(model_dir, "tuning", "search", "trial_*", "trial.json")):
        with open(path) as stream:
            text = stream.read()
        if '"COMPLETED"' in text:
            done[os.path.basename(os.path.dirname(path))] = text
    return done


def leftovers(model_dir: str) -> list[str]:
    found = []
    for folder, names, files in os.walk(model_dir):
        found += [os.path.join(folder, name) for name in names + files
                  if name.startswith(_TEMPORARY_MARKS) or name.endswith(_TEMPORARY_MARKS)]
    return found


def final_step(mode: str, model_dir: str, stdout: str) -> tuple[int | None, int | None, bool]:
    """(the final step, the step the rerun started from, whether a metrics.json parsed).

    tune: the completed trials instead of a step, and no start step.
    """
    if mode == "model_fn":
        report = json.loads(stdout.strip().splitlines()[-1])
        return report["global_step"], report["started_from"], True
    if mode == "tune":
        return len(completed_trials(model_dir)), None, os.path.exists(os.path.join(model_dir, "tuning", "best.flags"))
    try:
        with open(os.path.join(model_dir, "metrics.json")) as stream:
            metrics = json.load(stream)
        return metrics["steps"], metrics["resumed_from_step"], True
    except (OSError, ValueError, KeyError):
        return None, None, False


def run_to_end(argv: list[str], timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=REPO)


def one_mode(mode: str, kills: int, rng: random.Random, cache_dir: str) -> dict:
    root = tempfile.mkdtemp(prefix=f"faults-{mode}-")
    try:
        clean_dir = os.path.join(root, "clean")
        started = time.perf_counter()
        clean = run_to_end(command(mode, clean_dir, cache_dir))
        seconds = time.perf_counter() - started
        if clean.returncode != 0:
            raise SystemExit(f"{mode}: the unkilled run failed:\n{clean.stderr[-3000:]}")
        planned, _, _ = final_step(mode, clean_dir, clean.stdout)
        row = {"mode": mode, "kills": kills, "seconds": round(seconds, 1), "finished": 0, "exact": 0,
               "resumed": 0, "metrics": 0, "trials_rerun": 0, "left": 0, "failures": []}
        for kill in range(kills):
            model_dir = os.path.join(root, f"kill{kill}")
            argv = command(mode, model_dir, cache_dir)
            process = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0, seconds))
            newest = newest_checkpoint_step(model_dir) if mode != "tune" else None
            finished_before = completed_trials(model_dir) if mode == "tune" else {}
            process.send_signal(signal.SIGKILL)
            process.wait()
            rerun = run_to_end(argv)
            if rerun.returncode != 0:
                row["failures"].append(f"kill {kill}: exit {rerun.returncode}: {rerun.stderr.strip()[-300:]}")
                continue
            row["finished"] += 1
            step, resumed_from, metrics_ok = final_step(mode, model_dir, rerun.stdout)
            row["exact"] += step == planned
            row["metrics"] += metrics_ok
            # The rerun's own account of where it started, against the newest checkpoint at the kill
            # (tune: resuming is counted by the trials that did not run again).
            row["resumed"] += mode == "tune" or newest is None or (resumed_from is not None and resumed_from >= newest)
            after = completed_trials(model_dir)
            row["trials_rerun"] += sum(after.get(name) != text for name, text in finished_before.items())
            left = leftovers(model_dir)
            row["left"] += len(left)
            if left:
                row["failures"].append(f"kill {kill}: left {left}")
        return row
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str]) -> None:
    rng = random.Random(FLAGS.seed)
    rows = []
    with tempfile.TemporaryDirectory(prefix="faults-cache-") as cache_dir:
        for mode in FLAGS.modes:
            rows.append(one_mode(mode, FLAGS.kills, rng, cache_dir))
            row = rows[-1]
            print(f"{mode}: {row['finished']}/{row['kills']} finished", flush=True)
    print(f"\nkill -9 at random moments, {FLAGS.kills} per mode ({os.cpu_count()} cores):\n")
    print("| mode | unkilled run (s) | resumes finished | exact final step | resumed from the newest "
          "checkpoint | valid metrics.json | finished trials rerun | left behind |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        kills = row["kills"]
        print(f"| {row['mode']} | {row['seconds']} | {row['finished']}/{kills} | {row['exact']}/{kills} | "
              f"{row['resumed']}/{kills} | {row['metrics']}/{kills} | {row['trials_rerun']} | {row['left']} |")
    for row in rows:
        for failure in row["failures"]:
            print(f"{row['mode']}: {failure}")
    if FLAGS.json:
        with open(FLAGS.json, "w") as out:
            json.dump(rows, out, indent=1)
    if FLAGS.plot:
        import charts  # bench/charts.py: this script's folder is on the path

        checks = {"finished": "finished", "exact": "exact final step", "resumed": "resumed from the newest",
                  "metrics": "valid metrics.json"}
        charts.grouped_bars(FLAGS.plot, f"kill -9 at random moments: share of {FLAGS.kills} kills per mode",
                            [row["mode"] for row in rows],
                            {label: [row[key] / row["kills"] for row in rows] for key, label in checks.items()},
                            ideal=1.0)


if __name__ == "__main__":
    app.run(main)
