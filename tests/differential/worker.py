"""Runs many seeds in one process, a JSON line per seed.

    python -m tests.differential.worker --seeds 0:100 --out results.jsonl --workdir DIR [--ours]

Run from the repository root, by TF 2.15's interpreter (without --ours) or this project's (with
--ours: `compat.estimator.install()` first, as a user's program would). TensorFlow starts once;
each program gets a model folder of its own (and each Estimator call its own graph). Two logical
CPUs are made at start-up, on both sides, for the programs that train under MirroredStrategy.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sys
import time
import warnings

PROGRAM_SECONDS = 240


def _timeout(signum, frame):
    raise TimeoutError(f"the program took more than {PROGRAM_SECONDS} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", required=True, help="first:last (last excluded), or a comma-separated list")
    parser.add_argument("--out", required=True, help="the JSON-lines file results are appended to")
    parser.add_argument("--workdir", required=True, help="where each program's folders go (removed after it)")
    parser.add_argument("--ours", action="store_true", help="run under compat.estimator.install()")
    parser.add_argument("--from-folders", help="TF 2.15's kept model folders, for continue_from_folder")
    parser.add_argument("--keep-folders", help="run each program in <this>/<seed> and keep its folders there")
    args = parser.parse_args(argv)
    if ":" in args.seeds:
        first, last = (int(part) for part in args.seeds.split(":"))
        seeds = list(range(first, last))
    else:
        seeds = [int(part) for part in args.seeds.split(",") if part]

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    warnings.filterwarnings("ignore")
    if args.ours:
        import compat.estimator

        compat.estimator.install()
    import numpy as np
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

    from . import generator, program

    done = set()
    if os.path.exists(args.out):  # a seed already there, drawn by this generator, is not run again
        with open(args.out) as f:
            records = [json.loads(line) for line in f if line.strip()]
        done = {r["seed"] for r in records if r.get("spec") == generator.digest(generator.program(r["seed"]))}
    signal.signal(signal.SIGALRM, _timeout)
    with open(args.out, "a") as out:
        for seed in seeds:
            if seed in done:
                continue
            spec = generator.program(seed)
            # TF 2.15's folders are kept where they were written: their checkpoint lists name absolute paths
            workdir = os.path.join(args.keep_folders or args.workdir, str(seed) if args.keep_folders else f"seed_{seed}")
            shutil.rmtree(workdir, ignore_errors=True)
            os.makedirs(workdir)
            from_folder = None
            if args.from_folders and os.path.isdir(os.path.join(args.from_folders, str(seed), "model")):
                from_folder = os.path.join(args.from_folders, str(seed), "model")
            with open(args.out + ".current", "w") as current:  # for the runner's watchdog
                current.write(str(seed))
            tf.keras.backend.clear_session()
            # each program starts as in a fresh process: Python's and NumPy's generators from the OS's entropy
            # (Keras 2's unseeded initializers draw from `random`: TF 2.15 does not repeat such a program, and
            # running it twice shows it), no global TensorFlow seed left by an earlier program
            random.seed()
            np.random.seed(None)
            tf.random.set_seed(None)
            started = time.perf_counter()
            signal.alarm(PROGRAM_SECONDS)
            try:
                result = program.run(spec, workdir, from_folder)
            except TimeoutError as error:
                result = {"ops": [], "error": {"at": "worker", "type": "TimeoutError", "bases": [], "message": str(error)}}
            finally:
                signal.alarm(0)
            line = {"seed": seed, "spec": generator.digest(spec), "seconds": round(time.perf_counter() - started, 2), "result": result}
            out.write(json.dumps(line, sort_keys=True) + "\n")
            out.flush()
            if not args.keep_folders:
                shutil.rmtree(workdir, ignore_errors=True)
            os.remove(args.out + ".current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
