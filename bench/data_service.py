"""Training input through the tf.data service, beside the local builder.

    python bench/data_service.py --data_dir ../shared/data/fsdd/recordings [--json OUT]

Rows (FSDD's training split, its own 8 kHz, the default log-mel features, batch 64):

  local        the builder in this process with cache=none: it decodes every epoch,
               the same work the service's workers do
  service_1    --tf_data_service: a dispatcher and one worker (python -m compat.data.service)
  service_2    the same with two workers

Every server is a real process on 127.0.0.1, started here. Each row reads
`BATCHES` batches after `WARMUP` from a fresh iterator, `ROUNDS` times in
interleaved rounds; the figure is the median examples/s. All processes share
this machine's cores, so on a small machine the workers compete with the
trainer and with each other: service_1 is one worker's rate, and service_2
over service_1 shows what a second worker adds here, not on its own cores.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402

flags.DEFINE_string("data_dir", None, "FSDD recordings folder.", required=True)
flags.DEFINE_string("json", None, "Write the rates (examples/s) to this JSON file.")
flags.DEFINE_string("plot", None, "Write a PNG chart of the table to this file.")
FLAGS = flags.FLAGS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH, WARMUP, BATCHES, ROUNDS = 64, 10, 60, 3


def start_server(processes: list, *args: str) -> str:
    """Starts `python -m compat.data.service ARGS`, adds it to `processes` (to be stopped), returns its HOST:PORT."""
    process = subprocess.Popen([sys.executable, "-m", "compat.data.service", *args], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    processes.append(process)
    line = process.stdout.readline()
    if "listening on" not in line:
        raise SystemExit(f"the tf.data service server did not start ({args[0]}): {line!r}")
    return line.split()[-1]


def start_service(processes: list, workers: int) -> str:
    address = start_server(processes, "dispatcher", "--port=0")
    for _ in range(workers):
        start_server(processes, "worker", f"--dispatcher_address={address}")
    return f"grpc://{address}"


def examples_per_second(dataset) -> float:
    batches = iter(dataset)
    for _ in range(WARMUP):
        next(batches)
    started = time.perf_counter()
    examples = sum(int(next(batches)[1].shape[0]) for _ in range(BATCHES))
    return examples / (time.perf_counter() - started)


def main(argv: list[str]) -> None:
    from compat import data
    from compat.config import PipelineConfig

    source = data.index(f"fsdd:{FLAGS.data_dir}", PipelineConfig(sample_rate=8000))
    processes, rows = [], {}
    with tempfile.TemporaryDirectory() as cache_dir:
        base = PipelineConfig(sample_rate=8000, batch_size=BATCH, cache_dir=cache_dir)
        configs = {"local": dataclasses.replace(base, cache="none")}
        try:
            for workers in (1, 2):
                address = start_service(processes, workers)
                configs[f"service_{workers}"] = dataclasses.replace(base, data_service=address)
            datasets = {name: data.build_dataset(source, config, "train") for name, config in configs.items()}
            rates = {name: [] for name in datasets}
            for _ in range(ROUNDS):
                for name, dataset in datasets.items():
                    rates[name].append(examples_per_second(dataset))
        finally:
            for process in processes:
                process.kill()
                process.wait()
    rows = {name: statistics.median(values) for name, values in rates.items()}
    cores = os.cpu_count()
    print(f"examples/s, FSDD train split, log-mel, batch {BATCH}, {cores} cores, medians of {ROUNDS} rounds:")
    for name, rate in rows.items():
        print(f"  {name:<10} {rate:8,.0f}  ({rate / rows['local']:.2f}x local)")
    if FLAGS.json:
        with open(FLAGS.json, "w") as out:
            json.dump({"cores": cores, "batch": BATCH, **rows}, out, indent=1)
    if FLAGS.plot:
        import charts  # bench/charts.py: this script's folder is on the path

        charts.bars(FLAGS.plot, f"Training input, examples/s ({cores} cores; higher is better)", rows,
                    ylabel="examples/s")


if __name__ == "__main__":
    app.run(main)
