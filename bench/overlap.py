"""Does input preparation overlap the training step? A slow input_fn beside a fast step, simulated on FSDD.

    python bench/overlap.py --data_dir ../shared/data/fsdd/recordings [--rounds 3] [--modes] [--plot OUT.png]

A simulated accelerator step is a sleep of half the plain input_fn's
per-batch preparation time (the seed's 2 s of input against 1 s of step), so
an ideal pipeline shows 1.00 step units per batch and 0 % of the time waiting.
Each row reads FSDD's training split (batch 64) for 3 epochs: one `next()`,
then one step, per batch; it reports wall time per batch in step units and the
share of wall time blocked in `next()`, per epoch (an epoch is the split's
batches; the builder's training stream is endless and its epochs blur by its
shuffle buffer). Rows, interleaved over rounds, medians:

  seed     the plain input_fn: sequential maps, no prefetch, tf.data's autotune,
           map_parallelization and inject_prefetch off
  answer   the usual fix: parallel maps and prefetch(1) at the end
  builder  `build_dataset` with its defaults, an empty disk cache each round
           (epoch 1 decodes and writes it; epochs 2+ replay it)
  ready    the floor: one batch of the builder held in memory and handed out
           again; its wait is what `next()` itself costs from Python each batch,
           which no pipeline can remove (inside a compiled training loop, as in
           `--mode=keras` and `--mode=estimator`, there is no such call)

Then the time to the first batch from an empty cache, the builder against
`cache="none"`, and (`--modes`) the same simulated step inside the model's
train step through `train.py --mode=keras` and `--mode=estimator`'s code.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tensorflow as tf  # noqa: E402
from absl import app, flags  # noqa: E402

flags.DEFINE_string("data_dir", None, "FSDD recordings folder.", required=True)
flags.DEFINE_integer("rounds", 3, "Interleaved rounds (medians are reported).", lower_bound=1)
flags.DEFINE_integer("epochs", 3, "Epochs per row.", lower_bound=2)
flags.DEFINE_bool("modes", False, "Also run the step inside --mode=keras and --mode=estimator.")
flags.DEFINE_string("json", None, "Write the figures to this JSON file.")
flags.DEFINE_string("plot", None, "Write a PNG chart of the step units to this file (needs matplotlib).")
FLAGS = flags.FLAGS

BATCH = 64


def _config(cache_dir: str, **overrides):
    from compat.data import PipelineConfig

    return PipelineConfig(sample_rate=8000, cache_dir=cache_dir, batch_size=BATCH, **overrides)


def repeated_plain_dataset(table, config, parallel: bool) -> tf.data.Dataset:
    """The plain input_fn (decode, shuffle, features, batch; bench/plain_input_fn.py), repeated."""
    from plain_input_fn import plain_dataset  # bench/ is on the path: this script's own folder

    return plain_dataset(table.paths, table.labels, config, parallel, BATCH).repeat()


def preparation_seconds(make_dataset, batches: int) -> float:
    """Median seconds per batch of a pipeline read flat out (its second epoch)."""
    iterator = iter(make_dataset())
    for _ in range(batches):
        next(iterator)
    times = []
    for _ in range(batches):
        start = time.perf_counter()
        next(iterator)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def simulate(make_dataset, step: float, batches: int, epochs: int) -> dict:
    """Per epoch: wall seconds per batch in step units, and the share of wall time in next()."""
    dataset = make_dataset()
    started = time.perf_counter()
    iterator = iter(dataset)
    result = {"first_batch_seconds": None, "units": [], "wait": []}
    for epoch in range(epochs):
        epoch_start, waited = time.perf_counter(), 0.0
        for _ in range(batches):
            before = time.perf_counter()
            next(iterator)
            waited += time.perf_counter() - before
            if result["first_batch_seconds"] is None:
                result["first_batch_seconds"] = time.perf_counter() - started
            time.sleep(step)
        wall = time.perf_counter() - epoch_start
        result["units"].append(wall / batches / step)
        result["wait"].append(waited / wall)
    return result


def first_batch_seconds(make_dataset) -> tuple[float, float]:
    """(seconds to build the dataset, seconds from the iterator's creation to the first batch)."""
    started = time.perf_counter()
    dataset = make_dataset()
    built = time.perf_counter()
    next(iter(dataset))
    return built - started, time.perf_counter() - built


def _mode_rows(source: str, cache_dir: str, step: float, epochs: int) -> dict:
    """The step as a sleep inside the model's train step, through the two training modes."""
    import keras

    from compat.modes import estimator_mode, keras_mode
    from compat.config import TrainConfig
    from compat.data import feature_shape as data_feature_shape
    from compat.modes.run import Run, open_run
    from models import ModelConfig

    @keras.saving.register_keras_serializable("bench")
    class SimulatedStep(keras.layers.Layer):
        """Identity; sleeps for the simulated accelerator step in each training step."""

        def __init__(self, seconds: float, **kwargs):
            super().__init__(**kwargs)
            self.seconds = seconds

        def call(self, inputs, training=None):
            if not training:
                return inputs
            done = tf.py_function(lambda: time.sleep(self.seconds) or 0.0, [], tf.float32)
            with tf.control_dependencies([done]):  # the sleep runs before the outputs, every step
                return tf.identity(inputs)

        def get_config(self):
            return {**super().get_config(), "seconds": self.seconds}

    class SimulatedRun(Run):
        """A run whose model costs nothing but the simulated step: pooled features, one Dense layer."""

        def build_model(self, *args, **kwargs):
            inputs = keras.Input(data_feature_shape(self.pipeline), name=self.pipeline.feature_key)
            logits = keras.layers.Dense(len(self.class_names))(keras.layers.GlobalAveragePooling1D()(inputs))
            model = keras.Model({self.pipeline.feature_key: inputs}, SimulatedStep(step)(logits))
            model.compile(optimizer=keras.optimizers.Adam(1e-3),
                          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"],
                          steps_per_execution=self.plan.steps_per_execution(self.train.steps_per_execution))
            return model

    def train_seconds(mode, epochs: int) -> tuple[float, int]:
        model_dir = tempfile.mkdtemp(prefix="overlap-mode-")
        with open_run(source, _config(cache_dir), ModelConfig(), TrainConfig(epochs=epochs, export=False),
                      model_dir) as run:
            metrics = mode.train_and_evaluate(SimulatedRun(**vars(run)))
            per_epoch = run.plan.steps_per_epoch
        shutil.rmtree(model_dir, ignore_errors=True)
        return metrics["train_seconds"], per_epoch

    train_seconds(keras_mode, 1)  # fills the cache: every run below reads it warm
    rows = {}
    for name, mode in (("keras", keras_mode), ("estimator", estimator_mode)):
        # Epochs after the first, as the difference of two runs: tracing and the first epoch cancel.
        one, per_epoch = train_seconds(mode, 1)
        more, _ = train_seconds(mode, epochs)
        rows[name] = {"units": (more - one) / ((epochs - 1) * per_epoch * step)}
    return rows


def main(argv) -> None:
    del argv
    from compat import data

    source = "fsdd:" + FLAGS.data_dir
    work = tempfile.mkdtemp(prefix="bench-overlap-")
    index = data.index(source, _config(work))
    table = index.table("train")
    batches = -(-len(table) // BATCH)
    for path in table.paths:  # the page cache warm, so every row reads from memory
        with open(path, "rb") as stream:
            stream.read()

    seed = lambda: repeated_plain_dataset(table, _config(work), parallel=False)
    answer = lambda: repeated_plain_dataset(table, _config(work), parallel=True)
    # The cost of next() itself: the builder's first batch, held in memory and handed out again.
    ready = lambda: data.build_dataset(index, _config(work, cache="none"), "train").take(1).cache().repeat()

    def builder(cache: str = "disk"):
        def make():
            shutil.rmtree(os.path.join(work, "datasets"), ignore_errors=True)  # an empty cache
            return data.build_dataset(index, _config(work, cache=cache), "train")
        return make

    step = preparation_seconds(seed, batches) / 2
    print(f"FSDD train split: {len(table)} files, {batches} batches of {BATCH} per epoch; simulated step "
          f"{1000 * step:.1f} ms (half the plain input_fn's per-batch preparation)", flush=True)
    rows = {"seed": seed, "answer": answer, "builder": builder(), "ready (floor)": ready}
    samples = {name: [] for name in rows}
    firsts = {"builder (disk, empty)": [], "cache=none": []}
    for round_ in range(FLAGS.rounds):
        for name, make in rows.items():
            samples[name].append(simulate(make, step, batches, FLAGS.epochs))
        firsts["builder (disk, empty)"].append(first_batch_seconds(builder("disk")))
        firsts["cache=none"].append(first_batch_seconds(builder("none")))
        print(f"round {round_ + 1}/{FLAGS.rounds} done", flush=True)

    table_rows = {}
    header = " | ".join(f"epoch {e + 1}" for e in range(FLAGS.epochs))
    print(f"\n| pipeline | {header} |\n|---|" + "---:|" * FLAGS.epochs)
    for name, runs in samples.items():
        units = [statistics.median(r["units"][e] for r in runs) for e in range(FLAGS.epochs)]
        wait = [statistics.median(r["wait"][e] for r in runs) for e in range(FLAGS.epochs)]
        table_rows[name] = {"units": units, "wait": wait}
        cells = " | ".join(f"{u:.2f} ({100 * w:.0f} % wait)" for u, w in zip(units, wait))
        print(f"| {name} | {cells} |")
    first = {name: [statistics.median(v[i] for v in values) for i in (0, 1)] for name, values in firsts.items()}
    disk, none = first["builder (disk, empty)"], first["cache=none"]
    print(f"\ntime to first batch, from the iterator's creation (as the tf.data guide times it): empty disk "
          f"cache {disk[1]:.3f} s, cache=none {none[1]:.3f} s: ratio {disk[1] / none[1]:.2f} (target <= 1.2); "
          f"building the dataset before it: {disk[0]:.2f} s and {none[0]:.2f} s")
    builder, floor = table_rows["builder"], table_rows["ready (floor)"]
    later_units = max(b / f for b, f in zip(builder["units"][1:], floor["units"][1:]))
    later_wait = max(b - f for b, f in zip(builder["wait"][1:], floor["wait"][1:]))
    print(f"targets: builder epoch 1 <= answer epoch 1: {builder['units'][0] <= table_rows['answer']['units'][0]}"
          f" ({builder['units'][0]:.2f} vs {table_rows['answer']['units'][0]:.2f}); epochs 2+ within 1.03 of the "
          f"floor: {later_units <= 1.03} ({later_units:.3f}); input wait beyond the floor's <= 2 %: "
          f"{later_wait <= 0.02} ({100 * later_wait:.1f} %). The floor is what next() itself costs each batch.")
    result = {"step_seconds": step, "rows": table_rows, "first_batch_seconds": first}
    if FLAGS.modes:
        modes = _mode_rows(source, work, step, FLAGS.epochs)
        result["modes"] = modes
        for name, row in modes.items():
            print(f"--mode={name}: {row['units']:.2f} step units per training step (epochs 2-{FLAGS.epochs}, "
                  "the step inside the model's compiled train step)")
    if FLAGS.json:
        with open(FLAGS.json, "w") as stream:
            json.dump(result, stream, indent=1)
    if FLAGS.plot:
        from bench import charts

        charts.grouped_bars(FLAGS.plot, "Wall time per batch, in simulated steps (1.00 = never waits)",
                            [f"epoch {e + 1}" for e in range(FLAGS.epochs)],
                            {name: row["units"] for name, row in table_rows.items()}, ideal=1.0)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    app.run(main)
