"""What each stage of the builder's first epoch costs, against the usual answer: CPU per example.

    python bench/stages.py --data_dir ../shared/data/fsdd/recordings [--rounds 3] [--copies 4]

On two cores the first epoch is CPU-bound, so its speed is the CPU each example
costs. Each row adds stages to the one above and reads one epoch of FSDD's
training split (8 kHz log-mel, the builder's training window, batch 64); the
figure is the process's CPU time (every thread) per example, medians of
interleaved rounds, so a row's difference from the row above is what its stages
cost:

  decode, each file checked
                    not a stage: the decode below as it runs where not every file is a
                    canonical 16-bit PCM WAV at the sample rate (a check and a branch in
                    every file's graph); FSDD's files are, so the builder skips both
  decode            list the files, read and decode them (`tf.audio.decode_wav`), fit to
                    the window
  + features        STFT, mel and log on chunks of 32 clips
  + cache write     `examples` on an empty disk cache: a new file order, the
                    segment writer, unbatching
  + batch, augment  `build_dataset` on an empty disk cache: all of the above,
                    then batch, crop/shift and noise, prefetch
  the answer        the usual fix for the plain input_fn: parallel decode,
                    features clip by clip, a 1,000-example shuffle buffer,
                    batch, prefetch(1) (bench/plain_input_fn.py)

Then the fixed costs, timed apart: the CPU to build the pipeline on an empty
disk cache against `cache="none"` (what the cache's construction adds), and
the wall time of the batch that straddles the first epoch's end (the first
pass's last chunk, the publication, the replay's start) against the median
batch of that epoch.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import fsdd_copies  # noqa: E402  (bench/, this script's folder, is on the path)
import tensorflow as tf  # noqa: E402
from absl import app, flags  # noqa: E402
from plain_input_fn import plain_dataset  # noqa: E402  (bench/, this script's folder, is on the path)

flags.DEFINE_string("data_dir", None, "FSDD recordings folder.", required=True)
flags.DEFINE_integer("copies", 1, "FSDD this many times over (links under new names: bench/fsdd_copies.py).",
                     lower_bound=1)
flags.DEFINE_integer("rounds", 3, "Interleaved rounds (medians are reported).", lower_bound=1)
FLAGS = flags.FLAGS

BATCH = 64


def cpu_per_example(make_dataset: Callable[[], tf.data.Dataset], elements: int, examples: int) -> float:
    """CPU microseconds (all threads) per example to make a dataset and read `elements` elements
    (`examples` examples) of it.

    Making it is timed too: the builder checks the files' headers then. The elements are counted
    by `reduce`, inside TensorFlow, so that no row pays Python's per-element cost (which would weigh
    on rows of single examples, not on rows of batches).
    """
    started = time.process_time()
    make_dataset().take(elements).reduce(tf.constant(0, tf.int64), lambda count, _: count + 1)
    return (time.process_time() - started) / examples * 1e6


def construction_cpu(make_dataset: Callable[[], tf.data.Dataset]) -> float:
    """CPU seconds (all threads) to build a dataset, reading nothing."""
    started = time.process_time()
    make_dataset()
    return time.process_time() - started


def boundary_seconds(dataset: tf.data.Dataset, batches: int) -> tuple[float, float]:
    """(wall seconds of the batch after the first epoch's `batches` whole ones, median of the others).

    The builder's training stream is endless: the batch after the last whole one holds the epoch's end.
    """
    gaps, iterator = [], iter(dataset)
    next(iterator)
    for _ in range(batches + 2):
        started = time.perf_counter()
        next(iterator)
        gaps.append(time.perf_counter() - started)
    boundary = gaps[batches - 1]  # next() number `batches` (after the first) is batch batches + 1
    return boundary, statistics.median(gaps[: batches - 1])


def main(argv: list[str]) -> None:
    del argv
    from compat import data
    from compat.data import audio
    from compat.data.sources import DataSource, list_split

    cache_dir = tempfile.mkdtemp(prefix="bench-stages-")
    config = data.PipelineConfig(sample_rate=8000, cache_dir=cache_dir, batch_size=BATCH)
    source = "fsdd:" + fsdd_copies.linked(FLAGS.data_dir, FLAGS.copies)
    table = list_split(DataSource.parse(source), "train", cache_dir)
    total = len(table)
    for path in table.paths:  # every row reads from the page cache
        with open(path, "rb") as stream:
            stream.read()

    def decoded(checked: bool = False) -> tf.data.Dataset:  # as the builder decodes these files, checked or not
        files = data.list_files(table, config, shuffle=False)
        in_graph_only = not checked and audio.all_decode_in_graph(table.paths, config.sample_rate)
        return data.decode(files, config, True, None, in_graph_only=in_graph_only)

    def fresh(make):
        def run():
            shutil.rmtree(os.path.join(cache_dir, "datasets"), ignore_errors=True)
            return make()

        return run

    disk = dataclasses.replace(config, cache="disk")
    # Whole batches only: a batch past the epoch's end would read the cache's replay as well.
    chunks, batches = int(data.transform(decoded(), config, True).cardinality()), total // BATCH
    rows = {  # how to make each row's dataset, how many of its elements to read, and the examples they hold
        "decode, each file checked": (lambda: decoded(checked=True), total, total),
        "decode": (decoded, total, total),
        "+ features": (lambda: data.transform(decoded(), config, True), chunks, total),
        "+ cache write": (fresh(lambda: data.examples(table, disk, "train", True)), total, total),
        "+ batch, augment": (fresh(lambda: data.build_dataset(source, disk, "train")), batches, batches * BATCH),
        "the answer": (lambda: plain_dataset(table.paths, table.labels, config, True, BATCH), batches,
                       batches * BATCH),
    }
    none = dataclasses.replace(config, cache="none")
    samples: dict[str, list[float]] = {name: [] for name in rows}
    fixed: dict[str, list[float]] = {"build, empty disk cache": [], "build, cache=none": [], "boundary": [],
                                     "median batch": []}
    for _ in range(FLAGS.rounds):
        for name, (make, elements, examples) in rows.items():
            samples[name].append(cpu_per_example(make, elements, examples))
        fixed["build, empty disk cache"].append(construction_cpu(fresh(lambda: data.build_dataset(source, disk,
                                                                                                   "train"))))
        fixed["build, cache=none"].append(construction_cpu(lambda: data.build_dataset(source, none, "train")))
        boundary, median = boundary_seconds(fresh(lambda: data.build_dataset(source, disk, "train"))(), batches)
        fixed["boundary"].append(boundary)
        fixed["median batch"].append(median)
    costs = {name: statistics.median(values) for name, values in samples.items()}
    print(f"\nFSDD train split: {total} files, 8 kHz log-mel {config.feature_spec.shape} over the training window, "
          f"{os.cpu_count()} cores, medians of {FLAGS.rounds} rounds\n")
    print("| first epoch | CPU us/example | this stage | share of the builder's |")
    print("|---|---:|---:|---:|")
    builder, before = costs["+ batch, augment"], 0.0
    for name, cost in costs.items():
        if name in ("the answer", "decode, each file checked"):
            print(f"| {name} | {cost:,.0f} | | {cost / builder:.2f}x the builder's |")
            continue
        print(f"| {name} | {cost:,.0f} | {cost - before:,.0f} | {(cost - before) / builder:.0%} |")
        before = cost
    fixed_ms = {name: 1000 * statistics.median(values) for name, values in fixed.items()}
    print(f"\nfixed costs: building the pipeline {fixed_ms['build, empty disk cache']:.0f} ms of CPU on an empty "
          f"disk cache, {fixed_ms['build, cache=none']:.0f} ms with cache=none; the batch holding the first "
          f"epoch's end {fixed_ms['boundary']:.1f} ms of wall time against {fixed_ms['median batch']:.1f} ms for "
          "the epoch's median batch")
    shutil.rmtree(cache_dir, ignore_errors=True)


if __name__ == "__main__":
    app.run(main)
