"""Generated Estimator programs on TensorFlow 2.15 and here, compared seed by seed.

    python bench/differential.py --seeds 0:1000 [--legacy_keras] [--workers 2] [--venv DIR]
    python bench/differential.py --seeds 0:1000 --record tests/data/differential/tf215.jsonl --record_seeds 100

Each seed of tests/differential/generator.py is one small program (a canned, custom, Keras,
TPU or experimental Estimator, its inputs, hooks and operations). TF 2.15 runs it first
twice (tensorflow-cpu==2.15.1 and pandas in a side environment, created on first use; its results kept
in --out and reused): where its two runs differ, TF 2.15 does not repeat itself, and those places are
left out of the comparison (and recorded). Then this project under Keras 3 (or with TF_USE_LEGACY_KERAS=1), training on
from the model folders TF 2.15 wrote where a program does. It prints each seed that differs in a way
docs/estimator.md does not list, the counts, and the coverage table: per dimension of the
generator, how many of its values the seeds drew.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.tf215 import tf215_python  # noqa: E402
from tests.differential import compare, generator  # noqa: E402

FLAGS = flags.FLAGS
HANG_SECONDS = 300
flags.DEFINE_string("seeds", "0:100", "first:last seed (last excluded)")
flags.DEFINE_integer("workers", 2, "processes per side (TensorFlow starts once in each)")
flags.DEFINE_bool("legacy_keras", False, "run this project's side with TF_USE_LEGACY_KERAS=1 (Keras 2 as tf.keras)")
flags.DEFINE_string("out", os.path.join("/tmp", "estimator-compat-differential"), "results and TF 2.15's folders")
flags.DEFINE_string("venv", None, "TF 2.15's environment (default <cache dir>/tf215-venv)")
flags.DEFINE_string("record", None, "also write TF 2.15's results (the first --record_seeds) to this JSON-lines file")
flags.DEFINE_integer("record_seeds", 100, "how many of --seeds --record writes")
flags.DEFINE_string("open_differences", None, "write the recorded seeds' undocumented differences here (JSON)")
flags.DEFINE_string("summary", None, "write the counts and coverage table as JSON here")


def _python_with_pandas(venv: str | None) -> str:
    python = tf215_python(venv)
    if subprocess.run([python, "-c", "import pandas"], capture_output=True).returncode != 0:
        subprocess.run([python, "-m", "pip", "install", "-q", "pandas"], check=True)
    return python


class _Worker:
    """One worker process over its share of seeds; restarted past a program that hangs (TF 2.15 can deadlock)."""

    def __init__(self, python: str, seeds: list[int], stem: str, ours: bool, env: dict, from_folders: str | None):
        self.seeds, self.stem, self.env = seeds, stem, env
        self.command = [python, "-m", "tests.differential.worker", "--out", stem + ".jsonl", "--workdir", stem + "_work"]
        self.command += ["--ours"] if ours else ["--keep-folders", os.path.join(FLAGS.out, "tf215_folders")]
        self.command += ["--from-folders", from_folders] if from_folders else []
        self.process = self._start()

    def _start(self) -> subprocess.Popen:
        log = open(self.stem + ".log", "a")
        command = self.command + ["--seeds", ",".join(map(str, self.seeds))]
        return subprocess.Popen(command, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT)

    def poll(self) -> bool:
        """True while the worker runs. A program that hangs or kills its process is recorded as such, and the
        worker restarts past it (TF 2.15 can deadlock)."""
        current = self.stem + ".jsonl.current"
        returncode = self.process.poll()
        if returncode == 0 or (returncode is not None and not os.path.exists(current)):
            return False
        if returncode is None:
            if not os.path.exists(current) or time.time() - os.path.getmtime(current) < HANG_SECONDS:
                return True
            self.process.kill()
            self.process.wait()
        with open(current) as f:
            seed = int(f.read())
        kind = "Hang" if returncode is None else "Crash"
        message = f"no end after {HANG_SECONDS} s" if returncode is None else f"the process ended with {returncode}"
        record = {"seed": seed, "spec": generator.digest(generator.program(seed)), "seconds": 0,
                  "result": {"ops": [], "error": {"at": "worker", "type": kind, "bases": [], "message": message}}}  # fmt: skip
        with open(self.stem + ".jsonl", "a") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
        os.remove(current)
        self.process = self._start()
        return True


def run_side(python: str, seeds: list[int], name: str, ours: bool, env: dict, from_folders: str | None) -> dict:
    """Runs `seeds` in --workers processes of `python`; returns {seed: result}, reusing what is on disk."""
    out_dir = os.path.join(FLAGS.out, name)
    if ours:  # this project's side always runs afresh: its code is what changes between runs
        shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir, exist_ok=True)
    shares = [seeds[i :: FLAGS.workers] for i in range(FLAGS.workers)]
    workers = [_Worker(python, share, os.path.join(out_dir, f"worker{i}"), ours, env, from_folders)
               for i, share in enumerate(shares) if share]  # fmt: skip
    while any([worker.poll() for worker in workers]):
        time.sleep(2)
    results = {}
    for i in range(FLAGS.workers):
        path = os.path.join(out_dir, f"worker{i}.jsonl")
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    record = json.loads(line)
                    if record.get("spec") == generator.digest(generator.program(record["seed"])):
                        results[record["seed"]] = record
    missing = sorted(set(seeds) - set(results))
    if missing:
        raise SystemExit(f"{name}: no result for seeds {missing[:10]} (a worker died: see {out_dir}/worker*.log)")
    return results


def main(argv: list[str]) -> None:
    first, last = (int(part) for part in FLAGS.seeds.split(":"))
    seeds = list(range(first, last))
    base_env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": REPO}
    base_env.pop("TF_USE_LEGACY_KERAS", None)
    python215 = _python_with_pandas(FLAGS.venv)
    started = time.perf_counter()
    reference = run_side(python215, seeds, "tf215", False, base_env, None)
    again = run_side(python215, seeds, "tf215_again", False, base_env, None)
    reference_seconds = (time.perf_counter() - started) / 2
    unstable = {seed: compare.differing_paths(reference[seed]["result"], again[seed]["result"]) for seed in seeds}
    if FLAGS.record:
        os.makedirs(os.path.dirname(os.path.abspath(FLAGS.record)), exist_ok=True)
        with open(FLAGS.record, "w") as f:
            for seed in seeds[: FLAGS.record_seeds]:
                record = {**{k: reference[seed][k] for k in ("seed", "spec", "result")}, "unstable": unstable[seed]}
                f.write(json.dumps(record, sort_keys=True) + "\n")
    started = time.perf_counter()
    env = {**base_env, **({"TF_USE_LEGACY_KERAS": "1"} if FLAGS.legacy_keras else {})}
    name = "ours_legacy_keras" if FLAGS.legacy_keras else "ours_keras3"
    ours = run_side(sys.executable, seeds, name, True, env, os.path.join(FLAGS.out, "tf215_folders"))
    label = "here, " + ("TF_USE_LEGACY_KERAS=1" if FLAGS.legacy_keras else "Keras 3")
    ours_seconds = time.perf_counter() - started
    matched, documented_only, differing = 0, 0, []
    still_open: dict[str, list[str]] = {}
    for seed in seeds:
        undocumented, documented = compare.compare(
            generator.program(seed), reference[seed]["result"], ours[seed]["result"], unstable[seed],
            "2" if FLAGS.legacy_keras else "3",
        )
        if undocumented:
            differing.append(seed)
            if seed in seeds[: FLAGS.record_seeds]:
                still_open[str(seed)] = sorted({line.split(": ")[0] for line in undocumented})
            print(f"seed {seed} ({generator.program(seed)['family']}): {len(undocumented)} differences")
            for line in undocumented[:8]:
                print("   ", line)
        elif documented:
            documented_only += 1
        else:
            matched += 1
    repeatable = sum(not paths for paths in unstable.values())
    print(f"\nTF 2.15 run twice: {repeatable} of {len(seeds)} seeds gave the same result (the others' differing "
          "places are left out of the comparison)")
    print(f"{len(seeds)} seeds, {label} against TF 2.15: {matched} match, {documented_only} differ only as "
          f"documented, {len(differing)} differ otherwise; TF 2.15 {reference_seconds:.0f} s, "
          f"this side {ours_seconds:.0f} s ({FLAGS.workers} processes each)")  # fmt: skip
    table = compare.coverage(seeds)
    print("\ncoverage: dimension, values drawn / values it has, never drawn")
    for dimension, seen, total, never in table:
        print(f"  {dimension:24} {seen:3}/{total:<3} {', '.join(never)}")
    if FLAGS.open_differences:
        with open(FLAGS.open_differences, "w") as f:
            json.dump(still_open, f, indent=1, sort_keys=True)
    if FLAGS.summary:
        with open(FLAGS.summary, "w") as f:
            json.dump({"seeds": FLAGS.seeds, "side": label, "match": matched, "documented": documented_only,
                       "differ": differing, "coverage": table}, f, indent=1)  # fmt: skip


if __name__ == "__main__":
    app.run(main)
