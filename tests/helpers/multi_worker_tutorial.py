"""The shape of TensorFlow's "Multi-worker training with Estimator" tutorial, as teams ran it: one task of it.

    TF_CONFIG=... python multi_worker_tutorial.py MODEL_DIR [STEPS]

Eager execution disabled at the top, a tf.compat.v1.layers model_fn, `RunConfig(train_distribute=
MultiWorkerMirroredStrategy())` over a TF_CONFIG cluster of a chief, a worker and an evaluator on 127.0.0.1,
and `train_and_evaluate` with a `LatestExporter`. Written for TF 2.15's tf.estimator: tests/test_distributed.py
runs each task as a process after compat.estimator.install() and compares with TF 2.15's run of the same
program (tests/data/tf215_multi_worker_tutorial.json, recorded with `--cluster` and TF 2.15's interpreter). Each task prints
a JSON line: the chief its checkpoint's variable names and global step, the evaluator its last evaluation's
metric keys and accuracy and its export's signatures, the worker its name. Or:

    python multi_worker_tutorial.py --cluster PYTHON MODEL_DIR [STEPS] [--compat] [--v1]

starts the three tasks with PYTHON on free ports of 127.0.0.1 (each after compat.estimator.install() with
`--compat`), waits for them (at most five minutes) and prints one JSON line: every task's report, keyed by task.
`--v1` makes the strategy TF 1.x's class, tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy.
"""
import glob
import json
import os
import socket
import subprocess
import sys

INSTALL_THEN_RUN = (
    "import compat.estimator, runpy, sys; compat.estimator.install(); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


def run_cluster(python, model_dir, steps, with_compat, v1=False):
    ports = []
    for _ in range(3):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            ports.append(probe.getsockname()[1])
    cluster = {"chief": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"],
               "evaluator": [f"127.0.0.1:{ports[2]}"]}
    command = [python, "-c", INSTALL_THEN_RUN] if with_compat else [python]
    processes = {}
    for task in cluster:
        env = {**os.environ, "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": task, "index": 0}}),
               "TF_CPP_MIN_LOG_LEVEL": "2"}
        processes[task] = subprocess.Popen([*command, os.path.abspath(__file__), model_dir, str(steps),
                                            *(["v1"] if v1 else [])],
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    reports = {}
    try:
        for task, process in processes.items():
            out, err = process.communicate(timeout=300)
            if process.returncode != 0:
                raise SystemExit(f"{task} failed ({process.returncode}):\n{err[-3000:]}")
            reports[task] = json.loads(out.strip().splitlines()[-1])
    finally:
        for process in processes.values():
            process.kill()
    return reports


if sys.argv[1] == "--cluster":
    python, model_dir = sys.argv[2], sys.argv[3]
    steps = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4].isdigit() else 100
    print(json.dumps(run_cluster(python, model_dir, steps, "--compat" in sys.argv, "--v1" in sys.argv)))
    sys.exit(0)

import tensorflow as tf  # noqa: E402

tf.compat.v1.disable_eager_execution()

import numpy as np  # noqa: E402

MODEL_DIR = sys.argv[1]
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 100
rng = np.random.default_rng(11)
X = rng.normal(size=(2048, 4)).astype("float32")
Y = (X[:, 0] - X[:, 1] > 0).astype("int32")


def input_fn(mode, input_context=None):
    dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
    if input_context is not None:  # each worker reads its own shard, as the tutorial's input_fn did
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if mode == tf.estimator.ModeKeys.TRAIN:
        dataset = dataset.shuffle(2048, seed=5).repeat()
    return dataset.batch(64)


def model_fn(features, labels, mode):
    net = tf.compat.v1.layers.dense(features["x"], 16, activation=tf.nn.relu, name="hidden")
    logits = tf.compat.v1.layers.dense(net, 2, name="logits")
    predictions = {"class_ids": tf.argmax(logits, 1), "probabilities": tf.nn.softmax(logits)}
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(
            mode, predictions=predictions,
            export_outputs={"serving_default": tf.estimator.export.PredictOutput(predictions)})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(
            mode, loss=loss, eval_metric_ops={"accuracy": tf.compat.v1.metrics.accuracy(labels, predictions["class_ids"])})
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step()))


def serving_input_fn():
    features = {"x": tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")}
    return tf.estimator.export.ServingInputReceiver(features, features)


# `--v1`: TF 1.x's class (`tf.contrib.distribute.CollectiveAllReduceStrategy` after TF 2.15's upgrader)
V1 = "v1" in sys.argv[3:]
strategy = (tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy() if V1
            else tf.distribute.MultiWorkerMirroredStrategy())
config = tf.estimator.RunConfig(train_distribute=strategy, save_checkpoints_steps=50, tf_random_seed=2)
estimator = tf.estimator.Estimator(model_fn, model_dir=MODEL_DIR, config=config)
result = tf.estimator.train_and_evaluate(
    estimator,
    tf.estimator.TrainSpec(input_fn=input_fn, max_steps=STEPS),
    tf.estimator.EvalSpec(input_fn=input_fn, steps=None, start_delay_secs=0, throttle_secs=1,
                          exporters=[tf.estimator.LatestExporter("latest", serving_input_fn)]),
)
task = json.loads(os.environ["TF_CONFIG"])["task"]["type"]
report = {"task": task}
if task == "chief":
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(MODEL_DIR))
    report["variables"] = sorted(reader.get_variable_to_shape_map())
    report["global_step"] = int(reader.get_tensor("global_step"))
elif task == "evaluator":
    events = sorted(glob.glob(os.path.join(MODEL_DIR, "eval", "events.out.tfevents.*")))
    last = {}
    for path in events:
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    last[value.tag] = (event.step, value.simple_value)
    report["metric_keys"] = sorted(last)
    report["last_evaluated_step"] = max(step for step, _ in last.values())
    report["accuracy"] = last["accuracy"][1]
    exports = sorted(glob.glob(os.path.join(MODEL_DIR, "export", "latest", "*", "saved_model.pb")))
    report["exports"] = len(exports)
    if exports:
        from tensorflow.core.protobuf import saved_model_pb2

        model = saved_model_pb2.SavedModel()
        model.ParseFromString(open(exports[-1], "rb").read())
        report["signatures"] = {
            name: {"inputs": sorted(signature.inputs), "outputs": sorted(signature.outputs)}
            for name, signature in model.meta_graphs[0].signature_def.items()
        }
print(json.dumps(report))
