"""Runs tensorflow/estimator v2.15.0's own unit tests against compat.estimator, and on TF 2.15 for the baseline.

    git clone --branch v2.15.0 --depth 1 https://github.com/tensorflow/estimator ESTIMATOR
    python bench/conformance_run.py --upstream ESTIMATOR [--out DIR] [--venv TF215_VENV] [FILE ...]

Each test file (default: the 25 of `FILES`, paths below tensorflow_estimator/python/estimator) is
copied into a fresh working folder and run by pytest in its own process, twice:

- here, with `bench/conformance_shim.py` serving its `tensorflow_estimator` imports from
  `compat.estimator` (this project's environment, `--python`);
- on TF 2.15 (the environment `--venv`, created on first use with tensorflow-cpu 2.15.1, whose
  tensorflow-estimator 2.15 the tests import as they were written), for the baseline: which tests
  pass there.

Then it prints, per file and in all, how many of the tests that pass on TF 2.15 pass here, and the
share of TF 2.15's public behaviour, as tested, that holds here (bench/conformance.py's rules: tests
that reach upstream's private internals, or whose own code needs Keras 2, are left out). Results are
kept in `--out` (per file and side, one JSON line per test). About 15 minutes a side on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)

import conformance  # noqa: E402  (bench/, this script's folder)
from tf215 import tf215_python  # noqa: E402

UPSTREAM_TESTS = os.path.join("tensorflow_estimator", "python", "estimator")
FILES = (
    "model_fn_test.py",
    "run_config_test.py",
    "export/export_test.py",
    "exporter_test.py",
    "early_stopping_test.py",
    "inputs/numpy_io_test.py",
    "inputs/pandas_io_test.py",
    "canned/parsing_utils_test.py",
    "hooks/hooks_test.py",
    "hooks/basic_session_run_hooks_test.py",
    "estimator_test.py",
    "training_test.py",
    "head/binary_class_head_test.py",
    "head/multi_class_head_test.py",
    "head/regression_head_test.py",
    "canned/dnn_test_fc_v2.py",
    "canned/linear_test.py",
    "canned/dnn_linear_combined_test.py",
    "keras_test.py",
    "canned/baseline_test.py",
    "head/multi_head_test.py",
    "head/multi_label_head_test.py",
    "canned/dnn_estimator_test.py",
    "canned/linear_estimator_test.py",
    "canned/dnn_linear_combined_estimator_test.py",
)
FILE_CAP_SECONDS = 600


def run_file(python: str, upstream: str, name: str, results: str, shim: bool) -> float:
    """Runs one upstream test file in a fresh folder; its JSON lines go to `results`. Returns seconds."""
    started = time.monotonic()
    if os.path.exists(results):
        os.remove(results)
    with tempfile.TemporaryDirectory(prefix="conformance-") as work:
        shutil.copy(os.path.join(upstream, UPSTREAM_TESTS, name), os.path.join(work, os.path.basename(name)))
        plugins = ["-p", "conformance_results"] + (["-p", "conformance_shim"] if shim else [])
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([BENCH, REPO] if shim else [BENCH]),
            "CONFORMANCE_RESULTS": results,
            "CONFORMANCE_UPSTREAM": upstream,
            "CUDA_VISIBLE_DEVICES": "",
            "TF_CPP_MIN_LOG_LEVEL": "2",
            "TEST_TMPDIR": work,
        }
        command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "--timeout=120",
                   *plugins, os.path.basename(name)]
        log = results[: -len(".jsonl")] + ".log"  # pytest's own output, with the tracebacks
        try:
            with open(log, "w") as stream:
                subprocess.run(command, cwd=work, env=env, stdout=stream, stderr=subprocess.STDOUT,
                               timeout=FILE_CAP_SECONDS)
        except subprocess.TimeoutExpired:
            print(f"  {name}: stopped at its {FILE_CAP_SECONDS} s cap; its unfinished tests count as failing")
    return time.monotonic() - started


def _passing(results: str) -> list[str]:
    if not os.path.exists(results):
        return []
    outcomes: dict[str, str] = {}
    for line in open(results):
        record = json.loads(line)
        test = record["nodeid"].split("::", 1)[-1]
        if outcomes.get(test) in (None, "passed"):
            outcomes[test] = record["outcome"]
    return sorted(test for test, outcome in outcomes.items() if outcome == "passed")


def _tf215(venv: str | None) -> str:
    """TF 2.15's interpreter, with what the tests need beside it (pytest; pandas for pandas_io_test.py)."""
    python = tf215_python(venv)
    if subprocess.run([python, "-c", "import pytest, pytest_timeout, pandas"], capture_output=True).returncode:
        print(f"adding pytest, pytest-timeout and pandas to {python}'s environment (once)", flush=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "pytest>=8", "pytest-timeout>=2.3", "pandas<2.2",
                        "numpy<2"],  # TF 2.15 needs NumPy 1
                       check=True)
    return python


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="a checkout of tensorflow/estimator at v2.15.0")
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "conformance-run"))
    parser.add_argument("--python", default=sys.executable, help="the environment under test (this project's)")
    parser.add_argument("--venv", default=None, help="TF 2.15's environment (default: created on first use)")
    parser.add_argument("--baseline", default=None,
                        help="a baseline.json an earlier run wrote: TF 2.15's side is not run again")
    parser.add_argument("files", nargs="*", default=list(FILES))
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.upstream, UPSTREAM_TESTS)):
        parser.error(f"--upstream {args.upstream}: no {UPSTREAM_TESTS} there; clone tensorflow/estimator at v2.15.0")
    unknown = [name for name in args.files if not os.path.isfile(os.path.join(args.upstream, UPSTREAM_TESTS, name))]
    if unknown:
        parser.error(f"not in the checkout: {', '.join(unknown)}")
    earlier = json.load(open(args.baseline)) if args.baseline else {"files": {}}
    old_python = None if all(name in earlier["files"] for name in args.files) else _tf215(args.venv)
    here_dir, there_dir = os.path.join(args.out, "here"), os.path.join(args.out, "tf215")
    os.makedirs(here_dir, exist_ok=True)
    os.makedirs(there_dir, exist_ok=True)
    baseline: dict = {"order": list(args.files), "files": {}}
    for name in args.files:
        stem = conformance.stem(name)
        if name in earlier["files"]:
            baseline["files"][name], there = earlier["files"][name], "from --baseline"
        else:
            assert old_python is not None
            seconds = run_file(old_python, args.upstream, name, os.path.join(there_dir, stem + ".jsonl"), False)
            baseline["files"][name] = {"passing": _passing(os.path.join(there_dir, stem + ".jsonl"))}
            there = f"{seconds:.0f} s"
        seconds_here = run_file(args.python, args.upstream, name, os.path.join(here_dir, stem + ".jsonl"), True)
        print(f"  {name}: TF 2.15 {there}, here {seconds_here:.0f} s", flush=True)
    with open(os.path.join(args.out, "baseline.json"), "w") as stream:
        json.dump(baseline, stream, indent=1)
    return conformance.report(baseline, here_dir, markdown=False)


if __name__ == "__main__":
    sys.exit(main())
