"""A 2019-style Estimator program trained with several replicas, as teams wrote it for multi-GPU machines.

    python replicated_program.py MODEL_DIR model_fn|keras|dnn mirrored|multi_worker [STEPS] [--tf215] [--no-export]

`model_fn`: a custom model_fn with tf.compat.v1.layers (dense, batch normalization), a v1 AdamOptimizer,
eval metrics and a LoggingTensorHook; `keras`: the same network from tf.keras layers; `dnn`: a DNNClassifier with batch norm. `mirrored` trains with
`RunConfig(train_distribute=MirroredStrategy(two devices), eval_distribute=the same)` on two logical CPU
devices; `multi_worker` with a MultiWorkerMirroredStrategy over the TF_CONFIG cluster (one CPU device a
worker), through train_and_evaluate. Then it evaluates, predicts and exports (the chief, in a cluster).

Written for TF 2.15's tf.estimator: run with TensorFlow 2.15 (with `--tf215`: TF 2.15 hangs with two CPU
replicas on 2 cores unless the program sets more inter-op threads and ReductionToOneDevice) it records
tests/data/tf215_replicated.json; the tests run it after compat.estimator.install(), without `--tf215`, and
compare. Prints a JSON line: the checkpoint's variable names, global step, the metric keys and accuracy,
the export's signatures, a few predictions.
"""
import json
import os
import sys

import tensorflow as tf

MODEL_DIR, KIND, STRATEGY = sys.argv[1], sys.argv[2], sys.argv[3]
STEPS = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4].isdigit() else 200
TF215 = "--tf215" in sys.argv
EXPORT = "--no-export" not in sys.argv

if STRATEGY == "mirrored":
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import numpy as np  # noqa: E402

rng = np.random.default_rng(7)
X = rng.normal(size=(1024, 6)).astype("float32")
Y = ((X[:, 0] + X[:, 1] > 0).astype("int32") + (X[:, 2] > 0.5).astype("int32"))
X_EVAL = rng.normal(size=(256, 6)).astype("float32")
Y_EVAL = ((X_EVAL[:, 0] + X_EVAL[:, 1] > 0).astype("int32") + (X_EVAL[:, 2] > 0.5).astype("int32"))
BATCH = 32  # per replica, as Estimator's input_fns were written for train_distribute


def train_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).shuffle(1024, seed=1).repeat().batch(BATCH)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X_EVAL}, Y_EVAL)).batch(BATCH)


def model_fn(features, labels, mode, params):
    training = mode == tf.estimator.ModeKeys.TRAIN
    net = tf.compat.v1.layers.dense(features["x"], 32, name="hidden")
    net = tf.compat.v1.layers.batch_normalization(net, training=training, name="bn")
    net = tf.nn.relu(net)
    logits = tf.compat.v1.layers.dense(net, 3, name="logits")
    predictions = {"class_ids": tf.argmax(logits, 1), "probabilities": tf.nn.softmax(logits)}
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(
            mode, predictions=predictions,
            export_outputs={"serving_default": tf.estimator.export.PredictOutput(predictions)})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    metrics = {"accuracy": tf.compat.v1.metrics.accuracy(labels, predictions["class_ids"])}
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
    optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
    with tf.control_dependencies(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)):
        train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    hook = tf.compat.v1.train.LoggingTensorHook({"loss": loss}, every_n_iter=100)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=[hook])


def keras_model_fn(features, labels, mode, params):
    """The same network from Keras layers (as TensorFlow's multi-worker tutorial built its model_fn)."""
    training = mode == tf.estimator.ModeKeys.TRAIN
    net = tf.keras.layers.Dense(32, name="hidden")(features["x"])
    net = tf.keras.layers.BatchNormalization(name="bn")(net, training=training)
    logits = tf.keras.layers.Dense(3, name="logits")(tf.nn.relu(net))
    predictions = {"class_ids": tf.argmax(logits, 1), "probabilities": tf.nn.softmax(logits)}
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(
            mode, predictions=predictions,
            export_outputs={"serving_default": tf.estimator.export.PredictOutput(predictions)})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    metrics = {"accuracy": tf.compat.v1.metrics.accuracy(labels, predictions["class_ids"])}
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
    optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step()))


def strategy():
    if STRATEGY == "none":  # one device, for comparison
        return None
    if STRATEGY == "multi_worker":
        return tf.distribute.MultiWorkerMirroredStrategy()
    kwargs = {"cross_device_ops": tf.distribute.ReductionToOneDevice()} if TF215 else {}
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"], **kwargs)


chosen = strategy()
session_config = (tf.compat.v1.ConfigProto(inter_op_parallelism_threads=8, allow_soft_placement=True)
                  if TF215 else None)
config = tf.estimator.RunConfig(model_dir=MODEL_DIR, train_distribute=chosen, eval_distribute=chosen,
                                tf_random_seed=3, save_checkpoints_steps=100, session_config=session_config)
column = tf.feature_column.numeric_column("x", shape=(6,))


def make(config):
    if KIND in ("model_fn", "keras"):
        return tf.estimator.Estimator(model_fn if KIND == "model_fn" else keras_model_fn, config=config,
                                      params={"learning_rate": 0.05})
    return tf.estimator.DNNClassifier(hidden_units=[32], feature_columns=[column], n_classes=3,
                                      optimizer="Adam", batch_norm=True, config=config)


est = make(config)

if STRATEGY == "multi_worker":
    tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(train_input_fn, max_steps=STEPS),
                                    tf.estimator.EvalSpec(eval_input_fn, steps=None, throttle_secs=0))
    if not config.is_chief:
        print(json.dumps({"task": config.task_type, "index": config.task_id}))
        sys.exit(0)
    # TF 2.15 evaluated a multi-worker model only in train_and_evaluate ("Only `STANDALONE_CLIENT` mode is
    # supported when you call `Estimator.evaluate`"): the chief reads the folder with a one-device Estimator.
    est = make(tf.estimator.RunConfig(model_dir=MODEL_DIR, session_config=session_config))
else:
    est.train(train_input_fn, max_steps=STEPS)
metrics = est.evaluate(eval_input_fn)
predictions = list(est.predict(lambda: tf.data.Dataset.from_tensor_slices({"x": X_EVAL[:4]}).batch(4)))
signatures = {}
if EXPORT:
    receiver = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        tf.feature_column.make_parse_example_spec([column]))
    path = est.export_saved_model(os.path.join(MODEL_DIR, "export"), receiver).decode()
    loaded = tf.saved_model.load(path)
    for name, function in loaded.signatures.items():
        signatures[name] = {"inputs": sorted(function.structured_input_signature[1]),
                            "outputs": sorted(function.structured_outputs)}
reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(MODEL_DIR))
print(json.dumps({
    "variables": sorted(reader.get_variable_to_shape_map()),
    "global_step": int(metrics["global_step"]),
    "metric_keys": sorted(metrics),
    "accuracy": float(metrics["accuracy"]),
    "loss": float(metrics["loss"]),
    "signatures": signatures,
    "probabilities": [[round(float(p), 6) for p in prediction["probabilities"]] for prediction in predictions],
}))
