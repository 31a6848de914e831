"""Which TensorFlow releases (and Pythons) the package runs on: a smoke subset in a fresh environment each.

    python bench/versions.py [--tensorflow 2.16.2 2.21.0] [--python python3.11 python3.12] [--root DIR]
                             [--tier smoke|quick]

For each Python interpreter found and each TensorFlow release it builds a
virtual environment (in --root, default a temporary folder; reused when it is
already there) with `tensorflow==X`, the `tf_keras` of the same minor release and
this package, then runs the smoke subset: the legacy model_fn and
model_to_estimator programs, the input cache and a short `train.py` run in each
mode. `--tier quick` runs the test suite's fast tier (`pytest -m "not slow"`) in
place of the smoke tests, then the same `train.py` runs. It prints one line per
environment (`passed` / `failed` / `not installable`, with seconds and pytest's
summary) and, with --json, writes them; pyproject's bounds are set to what passed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMOKE_TESTS = [
    "tests/test_graph_estimator.py::test_a_2018_style_model_fn_program_runs",
    "tests/test_keras_estimator.py::test_a_legacy_training_script_runs_with_its_imports_changed",
    "tests/test_input_cache.py",
    "tests/test_legacy_layers.py::test_tf_compat_v1_layers_are_tf_kerass_until_uninstall",
]
TRAIN_RUNS = [["--mode=keras", "--max_steps=8"], ["--mode=estimator", "--max_steps=8"]]

flags.DEFINE_list("tensorflow", ["2.16.2", "2.21.0"], "TensorFlow releases to try.")
flags.DEFINE_list("python", ["python3.11", "python3.12", "python3.13"], "Interpreters to try (names or paths).")
flags.DEFINE_string("root", None, "Where the environments go (default: a temporary folder).")
flags.DEFINE_string("json", None, "Write the results to this JSON file.")
flags.DEFINE_enum("tier", "smoke", ["smoke", "quick"], "The smoke subset, or the test suite's fast tier.")
FLAGS = flags.FLAGS


def _run(command: list[str], cwd: str, timeout: int = 1800) -> tuple[bool, str]:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return result.returncode == 0, (result.stdout + result.stderr)[-2000:]


def build(python: str, tensorflow: str, folder: str) -> tuple[bool, str]:
    """A virtual environment with `tensorflow==tensorflow`, its tf_keras and this package (with the dev extra)."""
    pip = os.path.join(folder, "bin", "pip")
    if not os.path.exists(pip):
        ok, log = _run([python, "-m", "venv", folder], REPO)
        if not ok:
            return ok, log
    minor = ".".join(tensorflow.split(".")[:2])
    return _run([pip, "install", "-q", f"tensorflow=={tensorflow}", f"tf_keras~={minor}.0", "-e", ".[dev]"], REPO)


def smoke(folder: str, work: str, tier: str = "smoke") -> tuple[bool, str]:
    """The smoke tests (or the fast tier) and the train.py runs in the environment `folder`."""
    python = os.path.join(folder, "bin", "python")
    tests = ["-n", "0", *SMOKE_TESTS] if tier == "smoke" else ["-m", "not slow"]
    ok, log = _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests], REPO)
    if not ok:
        return ok, log
    tested = log.strip().splitlines()[-1]  # pytest's summary: "N passed, M skipped in S s"
    for run_flags in TRAIN_RUNS:
        model_dir = os.path.join(work, run_flags[0].split("=")[1])
        ok, log = _run([python, "train.py", f"--model_dir={model_dir}", f"--cache_dir={work}/cache", *run_flags],
                       REPO)
        if not ok:
            return ok, log
    return True, tested


def main(argv) -> None:
    del argv
    root = FLAGS.root or tempfile.mkdtemp(prefix="versions-")
    results = []
    for python in FLAGS.python:
        found = shutil.which(python)
        if found is not None and subprocess.run([found, "--version"], capture_output=True).returncode != 0:
            found = None  # a pyenv shim of a version that is installed but not selected
        if found is None:
            print(f"{python}: not on this machine", flush=True)
            results.append({"python": python, "tensorflow": None, "result": "no interpreter"})
            continue
        for tensorflow in FLAGS.tensorflow:
            folder = os.path.join(root, f"{python}-tf{tensorflow}")
            started = time.perf_counter()
            ok, log = build(found, tensorflow, folder)
            result = "passed"
            if not ok:
                result = "not installable"
            else:
                with tempfile.TemporaryDirectory(prefix="versions-run-") as work:
                    ok, log = smoke(folder, work, FLAGS.tier)
                result = "passed" if ok else "failed"
            seconds = time.perf_counter() - started
            summary = log.strip().splitlines()[-1] if result == "passed" and log.strip() else ""
            print(f"{python} tensorflow=={tensorflow}: {result} ({seconds:.0f} s) {summary}", flush=True)
            if result != "passed":
                print(log, flush=True)
            results.append({"python": python, "tensorflow": tensorflow, "result": result, "seconds": seconds})
    if FLAGS.json:
        with open(FLAGS.json, "w") as stream:
            json.dump(results, stream, indent=1)


if __name__ == "__main__":
    sys.path.insert(0, REPO)
    app.run(main)
