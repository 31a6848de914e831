"""What the legacy input_fn cache costs on its first pass: the same input_fn with the cache off and on.

    python bench/input_cache.py --data_dir ../shared/data/fsdd/recordings [--rounds 5]

The input_fn is the example Estimator program's (bench/programs/wav_estimator.py), written as
2018-era programs wrote it: decode each WAV, log-mel features, batch 32, one map after another. Each
round reads it (FSDD's files listed `--copies` times, so that a pass lasts about a second) once
through with the cache off, then once through `compat.estimator`'s input cache
on an empty cache folder (the first pass: decode, features and the cache's write), then once more on
the written cache (a later call of the input_fn: replay). Rounds interleave; medians are printed,
with the first pass's cost over the cache off, in wall and in CPU seconds (the target: at most 5 %;
on two cores a pass's wall time varies by about a tenth from round to round, its CPU time less).
"""

from __future__ import annotations

import glob
import os
import shutil
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
from absl import app, flags  # noqa: E402

from compat.estimator import input_cache  # noqa: E402

flags.DEFINE_string("data_dir", None, "FSDD recordings folder.", required=True)
flags.DEFINE_integer("rounds", 7, "Interleaved rounds (medians are reported).", lower_bound=1)
flags.DEFINE_integer("copies", 4, "Each file listed this many times: a pass long enough to time.", lower_bound=1)
FLAGS = flags.FLAGS
SAMPLES = 8000


def input_fn(paths: list[str]) -> tf.data.Dataset:
    """The example program's evaluation input_fn: every file once, in order."""

    def decode(path, label):
        audio, _ = tf.audio.decode_wav(tf.io.read_file(path))
        wave = audio[:SAMPLES, 0]
        return tf.pad(wave, [[0, SAMPLES - tf.shape(wave)[0]]]), label

    def features(wave, label):
        stft = tf.signal.stft(wave, 256, 128)
        mel = tf.signal.linear_to_mel_weight_matrix(40, 129, 8000, 20.0, 4000.0)
        return {"mel": tf.math.log(tf.tensordot(tf.abs(stft), mel, 1) + 1e-6)}, label

    labels = [int(os.path.basename(path)[0]) for path in paths]
    return tf.data.Dataset.from_tensor_slices((paths, labels)).map(decode).map(features).batch(32)


def seconds_to_read(dataset: tf.data.Dataset) -> tuple[float, float]:
    """(wall, CPU) seconds to read `dataset` through; CPU counts every thread of this process."""
    started, cpu = time.perf_counter(), time.process_time()
    for _ in dataset:
        pass
    return time.perf_counter() - started, time.process_time() - cpu


def main(argv) -> None:
    del argv
    paths = sorted(glob.glob(os.path.join(FLAGS.data_dir, "*.wav"))) * FLAGS.copies
    for path in paths[: len(paths) // FLAGS.copies]:  # the page cache holds every file for every row
        with open(path, "rb") as stream:
            stream.read()
    times: dict[str, list[tuple[float, float]]] = {"cache off": [], "first pass": [], "replay": []}
    for _ in range(FLAGS.rounds):
        times["cache off"].append(seconds_to_read(input_fn(paths)))
        folder = tempfile.mkdtemp(prefix="bench-input-cache-")
        with input_cache.InputCache(input_cache.settings_from(folder)) as cache:
            times["first pass"].append(seconds_to_read(cache.wrap(input_fn(paths), "input_fn", "eval")))
            cache.publish()
            times["replay"].append(seconds_to_read(cache.wrap(input_fn(paths), "input_fn", "eval")))
        shutil.rmtree(folder, ignore_errors=True)
    medians = {name: statistics.median(wall for wall, _ in values) for name, values in times.items()}
    cpu = {name: statistics.median(used for _, used in values) for name, values in times.items()}
    print(f"\nFSDD's files listed {FLAGS.copies} times ({len(paths)}), the example program's input_fn, "
          f"medians of {FLAGS.rounds} rounds\n")
    print("| pass | wall s | vs cache off | CPU s | vs cache off |")
    print("|---|---:|---:|---:|---:|")
    for name, value in medians.items():
        print(f"| {name} | {value:.3f} | {value / medians['cache off']:.2f}x | {cpu[name]:.3f} | "
              f"{cpu[name] / cpu['cache off']:.2f}x |")
    overhead = medians["first pass"] / medians["cache off"] - 1
    print(f"\nfirst pass over cache off: wall {overhead:+.1%}, CPU {cpu['first pass'] / cpu['cache off'] - 1:+.1%} "
          "(target: at most +5 %)")


if __name__ == "__main__":
    app.run(main)
