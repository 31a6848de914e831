"""TensorFlow's "Multi-worker training with Estimator" tutorial as its readers ran it: one worker of it.

    TF_CONFIG=... python multi_worker_keras_tutorial.py MODEL_DIR STEPS [--graph]

A TF_CONFIG of workers only (worker 0 leads, as TF 2.15 had it), a model_fn whose network is a
`tf.keras.Sequential` CNN called with `training=False` (as the tutorial wrote it), a v1 optimizer, sharded
input under `RunConfig(train_distribute=MultiWorkerMirroredStrategy())`, and `train_and_evaluate`; with
`--graph`, eager execution disabled first. MNIST is not downloaded: 28x28 images made from a seed stand in.
Written for TF 2.15's tf.estimator; each worker prints a JSON line with the global step and the variables of
the newest checkpoint in MODEL_DIR once the last step's is there (worker 0 saves it as training ends, and worker
1 may end first, on TF 2.15 as here: it waits for it, a minute at most). Or:

    python multi_worker_keras_tutorial.py --cluster PYTHON MODEL_DIR STEPS [--graph] [--compat]

starts both workers with PYTHON on free ports of 127.0.0.1 (after compat.estimator.install() with
`--compat`), waits for them (five minutes at most) and prints one JSON line: each worker's report and the
files the run left in MODEL_DIR (tests/test_distributed.py compares it with TF 2.15's run,
tests/data/tf215_multi_worker_keras_tutorial.json).
"""
import json
import os
import socket
import subprocess
import sys
import time

INSTALL_THEN_RUN = (
    "import compat.estimator, runpy, sys; compat.estimator.install(); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


def folder_listing(model_dir):
    """The run's files, by kind: checkpoint steps, and the folders and event files it wrote."""
    listing = {"checkpoints": [], "folders": [], "event_files": 0}
    for root, folders, files in os.walk(model_dir):
        relative = os.path.relpath(root, model_dir)
        listing["folders"] += sorted(os.path.join(relative, folder) for folder in folders)
        listing["event_files"] += sum(name.startswith("events.out.tfevents") for name in files)
        if relative == ".":
            listing["checkpoints"] = sorted(int(name.split("-")[1].split(".")[0]) for name in files
                                            if name.startswith("model.ckpt-") and name.endswith(".index"))
    listing["folders"].sort()
    return listing


def run_cluster(python, model_dir, steps, flags):
    ports = []
    for _ in range(2):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            ports.append(probe.getsockname()[1])
    cluster = {"worker": [f"127.0.0.1:{port}" for port in ports]}
    command = [python, "-c", INSTALL_THEN_RUN] if "--compat" in flags else [python]
    processes = []
    for index in range(2):
        env = {**os.environ, "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}),
               "TF_CPP_MIN_LOG_LEVEL": "2"}
        processes.append(subprocess.Popen([*command, os.path.abspath(__file__), model_dir, str(steps), *flags],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    reports = {}
    try:
        for index, process in enumerate(processes):
            out, err = process.communicate(timeout=300)
            if process.returncode != 0:
                raise SystemExit(f"worker {index} failed ({process.returncode}):\n{err[-3000:]}")
            reports[f"worker{index}"] = json.loads(out.strip().splitlines()[-1])
    finally:
        for process in processes:
            process.kill()
    reports["files"] = folder_listing(model_dir)
    return reports


if sys.argv[1] == "--cluster":
    python, model_dir, steps = sys.argv[2], sys.argv[3], int(sys.argv[4])
    print(json.dumps(run_cluster(python, model_dir, steps, [f for f in sys.argv[5:] if f.startswith("--")])))
    sys.exit(0)

import tensorflow as tf  # noqa: E402

if "--graph" in sys.argv:
    tf.compat.v1.disable_eager_execution()

import numpy as np  # noqa: E402

MODEL_DIR, STEPS = sys.argv[1], int(sys.argv[2])
BATCH_SIZE = 64
rng = np.random.default_rng(4)
LABELS = rng.integers(0, 10, size=1024).astype("int64")
# each class a blob at its own place, so the network has something to learn
IMAGES = (rng.normal(size=(1024, 28, 28, 1)) * 0.3).astype("float32")
for index, label in enumerate(LABELS):
    IMAGES[index, 2 * label : 2 * label + 8, 2 * label : 2 * label + 8, 0] += 1.0


def input_fn(mode, input_context=None):
    dataset = tf.data.Dataset.from_tensor_slices((IMAGES, LABELS))
    if input_context:
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return dataset.cache().shuffle(1024, seed=1).repeat().batch(BATCH_SIZE)


def model_fn(features, labels, mode):
    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(8, 3, activation="relu", input_shape=(28, 28, 1)),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(16, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    logits = model(features, training=False)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode=mode, predictions={"logits": logits})
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=0.05)
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")(labels, logits)
    loss = tf.reduce_sum(loss) * (1.0 / BATCH_SIZE)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss)
    return tf.estimator.EstimatorSpec(
        mode=mode, loss=loss,
        train_op=optimizer.minimize(loss, tf.compat.v1.train.get_or_create_global_step()))


strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()
config = tf.estimator.RunConfig(train_distribute=strategy, save_checkpoints_steps=100, tf_random_seed=3)
classifier = tf.estimator.Estimator(model_fn=model_fn, model_dir=MODEL_DIR, config=config)
tf.estimator.train_and_evaluate(
    classifier,
    train_spec=tf.estimator.TrainSpec(input_fn=input_fn, max_steps=STEPS),
    eval_spec=tf.estimator.EvalSpec(input_fn=input_fn, steps=5),
)

def last_checkpoint() -> str:
    """The newest checkpoint in MODEL_DIR, once it is the last step's (or after a minute, whatever it is)."""
    deadline = time.monotonic() + 60
    while True:
        path = tf.train.latest_checkpoint(MODEL_DIR)
        if (path and path.endswith(f"-{STEPS}")) or time.monotonic() > deadline:
            return path
        time.sleep(0.2)


reader = tf.train.load_checkpoint(last_checkpoint())
print(json.dumps({"global_step": int(reader.get_tensor("global_step")),
                  "variables": sorted(reader.get_variable_to_shape_map()),
}))
