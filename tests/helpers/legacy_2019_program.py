"""A 2019-style Estimator program, as a team wrote it for TF 1.14-2.x: a custom model_fn of tf.compat.v1.layers
with a summary, a tf.data input_fn that maps, train_and_evaluate, then an export for serving.

    python legacy_2019_program.py MODEL_DIR

Written for TF 2.15's tf.estimator; the tests run it after compat.estimator.install() and count what it
prints on stderr against TF 2.15's run of it (tests/data/tf215_stderr_lines.json), TensorFlow's start-up
lines left out: a migrating user reads each extra line as a failure.
"""
import sys

import numpy as np
import tensorflow as tf

X = np.random.default_rng(0).normal(size=(256, 4)).astype("float32")
Y = (X[:, 0] > 0).astype("int32")


def input_fn():
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).map(lambda x, y: ({"x": x * 2.0}, y))
    return dataset.shuffle(256).repeat().batch(32)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices((X, Y)).map(lambda x, y: ({"x": x * 2.0}, y)).batch(32)


def model_fn(features, labels, mode):
    net = tf.compat.v1.layers.dense(features["x"], 16, activation=tf.nn.relu)
    tf.compat.v1.summary.scalar("zero_fraction", tf.math.zero_fraction(net))
    logits = tf.compat.v1.layers.dense(net, 2)
    predictions = {"class": tf.argmax(logits, 1)}
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions=predictions)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(loss, tf.compat.v1.train.get_global_step())
    metrics = {"accuracy": tf.compat.v1.metrics.accuracy(labels, predictions["class"])}
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops=metrics)


def serving_input_fn():
    x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
    return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})


est = tf.estimator.Estimator(model_fn, sys.argv[1])
tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(input_fn, max_steps=100),
                                tf.estimator.EvalSpec(eval_input_fn, throttle_secs=0))
est.export_saved_model(sys.argv[1] + "/export", serving_input_fn)
print(est.evaluate(eval_input_fn)["accuracy"])
