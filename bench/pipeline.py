"""Input pipeline throughput on FSDD: the plain input_fn against the builder.

    python bench/pipeline.py --data_dir ../shared/data/fsdd/recordings [--copies 4] [--json OUT]

Every row makes the same features (FSDD's training split, 8 kHz, log-mel,
batch 64) from the same files with the builder's own decode and feature
functions, so only the pipeline differs:

  naive         the plain input_fn: sequential maps, no prefetch, and tf.data's
                autotune, map_parallelization and inject_prefetch turned off
  answer        the usual fix: parallel maps and prefetch(1) at the end
  builder_cold  the builder's defaults, empty disk cache (build + first epoch)
  builder_warm  the builder in a new process on the warm disk cache
  limit         decode + features on one core, times the cores: the ceiling

Each row runs two epochs of one iterator, 5 times in interleaved rounds
(medians), timed as in the tf.data performance guide's benchmark: the dataset
is made first (for the builder, build_dataset: listing, cache lookup, graph
tracing), then the clock runs from the iterator's creation. The first epoch
includes the iterator's start; the second is the steady rate. builder_cold
starts from an empty cache, so its first epoch decodes and writes (its figure);
builder_warm runs in a new process on the cache. limit is the builder's own
decode and feature stages on one core, times the cores. The JSON holds each
row's figure: the second epoch, except builder_cold's first.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import fsdd_copies  # noqa: E402  (bench/, this script's folder, is on the path)
import tensorflow as tf  # noqa: E402
from absl import app, flags  # noqa: E402
from plain_input_fn import plain_dataset  # noqa: E402

flags.DEFINE_string("data_dir", None, "FSDD recordings folder.", required=True)
flags.DEFINE_integer("copies", 1, "FSDD this many times over (links under new names: bench/fsdd_copies.py).",
                     lower_bound=1)
flags.DEFINE_string("json", None, "Write the five rates (examples/s) to this JSON file.")
flags.DEFINE_string("plot", None, "Write a PNG chart of the table to this file.")
flags.DEFINE_string("warm_child", None, "Internal: time one warm epoch with this cache dir.")
FLAGS = flags.FLAGS

BATCH = 64
REPEATS = 5


def _config(cache_dir: str):
    from compat.data import PipelineConfig

    return PipelineConfig(sample_rate=8000, cache_dir=cache_dir, batch_size=BATCH)


def _builder_stages(table, config):
    """The builder's own decode and feature stages, uncached, batched like the rest."""
    from compat import data

    files = data.list_files(table, config, shuffle=False)
    return data.transform(data.decode(files, config, True, None), config, True).unbatch().batch(BATCH)


def _single_core(dataset):
    import tensorflow as tf

    options = tf.data.Options()
    options.autotune.enabled = False
    options.experimental_optimization.map_parallelization = False
    options.experimental_optimization.inject_prefetch = False
    options.threading.private_threadpool_size = 1
    options.threading.max_intra_op_parallelism = 1
    return dataset.with_options(options)


def _epoch_rates(make_dataset, total: int) -> tuple[float, float]:
    """Examples/s of the first and the second epoch of one iterator.

    As in the tf.data performance guide's benchmark, the dataset object is made
    before the clock starts; the first epoch includes the iterator's start
    (threads, buffers filling), the second is the steady rate.
    """
    dataset = make_dataset()
    if dataset.cardinality() != tf.data.INFINITE_CARDINALITY:
        dataset = dataset.repeat(2)
    iterator = iter(dataset)
    rates = []
    for _ in range(2):
        start, seen = time.perf_counter(), 0
        while seen < total:  # the builder's epochs blur by a batch: count what was read
            seen += int(next(iterator)[1].shape[0])
        rates.append(seen / (time.perf_counter() - start))
    return rates[0], rates[1]


def _builder(source: str, config):
    from compat.data import build_dataset

    return lambda: build_dataset(source, config, "train")


def _warm_child(cache_dir: str) -> None:
    from compat.data.sources import DataSource, list_split

    config = _config(cache_dir)
    source = "fsdd:" + fsdd_copies.linked(FLAGS.data_dir, FLAGS.copies)
    total = len(list_split(DataSource.parse(source), "train", cache_dir))
    print(json.dumps({"rates": _epoch_rates(_builder(source, config), total)}))


def main(argv) -> None:
    del argv
    if FLAGS.warm_child:
        return _warm_child(FLAGS.warm_child)

    from compat.data.sources import DataSource, list_split

    cache_dir = tempfile.mkdtemp(prefix="bench-pipeline-")
    config = _config(cache_dir)
    data_dir = fsdd_copies.linked(FLAGS.data_dir, FLAGS.copies)
    source = "fsdd:" + data_dir
    table = list_split(DataSource.parse(source), "train", cache_dir)
    total = len(table)
    for path in table.paths:  # warm the page cache so every row reads from memory
        with open(path, "rb") as stream:
            stream.read()

    plain = lambda parallel: lambda: plain_dataset(table.paths, table.labels, config, parallel, BATCH)

    def cold() -> tuple[float, float]:  # an empty cache: the first epoch decodes and writes
        shutil.rmtree(os.path.join(cache_dir, "datasets"), ignore_errors=True)
        return _epoch_rates(_builder(source, config), total)

    def warm() -> tuple[float, float]:  # a new process on the cache the last cold run wrote
        child = subprocess.run(
            [sys.executable, __file__, f"--data_dir={data_dir}", f"--warm_child={cache_dir}"],
            check=True, capture_output=True, text=True,
        )
        return tuple(json.loads(child.stdout.strip().splitlines()[-1])["rates"])

    cores = os.cpu_count() or 1
    rows = {
        "naive": lambda: _epoch_rates(plain(False), total),
        "answer": lambda: _epoch_rates(plain(True), total),
        "builder_cold": cold,
        "builder_warm": warm,
        "limit": lambda: tuple(cores * r for r in _epoch_rates(
            lambda: _single_core(_builder_stages(table, config)), total)),
    }
    # Rounds of every row in turn, so that the machine's drift hits all rows alike.
    samples = {name: [] for name in rows}
    for _ in range(REPEATS):
        for name, measure in rows.items():
            samples[name].append(measure())
    first = {name: statistics.median(s[0] for s in values) for name, values in samples.items()}
    steady = {name: statistics.median(s[1] for s in values) for name, values in samples.items()}
    # The figure each row stands for: a cold cache is, by definition, its first epoch.
    rates = {**steady, "builder_cold": first["builder_cold"]}

    print(f"\nFSDD train split x{FLAGS.copies}: {total} files, 8 kHz log-mel {config.feature_spec.shape}, "
          f"batch {BATCH}, {cores} cores, median of {REPEATS}\n")
    print("| pipeline | first epoch ex/s | second epoch ex/s | figure | vs naive |")
    print("|---|---:|---:|---:|---:|")
    for name in rows:
        print(f"| {name} | {first[name]:,.0f} | {steady[name]:,.0f} | {rates[name]:,.0f} | "
              f"{rates[name] / rates['naive']:.1f}x |")
    print(f"\nsingle core: {steady['limit'] / cores:,.0f} ex/s (second epoch)")
    print(f"targets: builder_cold >= answer (first epochs): {first['builder_cold'] >= first['answer']} "
          f"({first['builder_cold'] / first['answer']:.2f}); "
          f"builder_cold >= 0.85 x limit: {rates['builder_cold'] >= 0.85 * rates['limit']} "
          f"({rates['builder_cold'] / rates['limit']:.2f}); "
          f"builder_warm >= 10 x naive (second epochs): {rates['builder_warm'] >= 10 * rates['naive']} "
          f"({rates['builder_warm'] / rates['naive']:.1f}x)")
    if FLAGS.json:
        with open(FLAGS.json, "w") as stream:
            json.dump({k: round(v, 1) for k, v in rates.items()}, stream, indent=1)
    if FLAGS.plot:
        import charts  # bench/charts.py: this script's folder is on the path

        charts.grouped_bars(FLAGS.plot, f"FSDD train split, examples/s ({cores} cores; higher is better)", list(rows),
                            {"first epoch": [first[name] for name in rows],
                             "second epoch": [steady[name] for name in rows]}, ylabel="examples/s")


if __name__ == "__main__":
    app.run(main)
