"""A library in Google's open-source style (`import tensorflow.compat.v2 as tf`), written for TF 2.15.

    python compat_v2_program.py MODEL_DIR

It reaches the Estimator as `tf.estimator`, its TF 1.x layers as `tf.compat.v1.layers` (through compat.v2) and
a v1 canned estimator through the nested `tf.compat.v2.compat.v1`; trains, evaluates and predicts, and prints one
JSON line: the evaluation's accuracy and global step, and how many predictions came back.
"""
import json
import sys

import numpy as np
import tensorflow.compat.v2 as tf

MODEL_DIR = sys.argv[1]
rng = np.random.default_rng(2)
X = rng.normal(size=(128, 4)).astype("float32")
Y = (X[:, 0] > X[:, 1]).astype("int32")


def input_fn(repeat=True):
    dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
    return (dataset.repeat() if repeat else dataset).batch(32)


def model_fn(features, labels, mode):
    hidden = tf.compat.v1.layers.dense(features["x"], 8, activation=tf.nn.relu)
    logits = tf.compat.v2.compat.v1.layers.dense(hidden, 2)
    predictions = {"class_ids": tf.argmax(logits, 1)}
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions=predictions)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.AdamOptimizer(0.05).minimize(loss, tf.compat.v1.train.get_global_step())
    metrics = {"accuracy": tf.compat.v1.metrics.accuracy(labels, predictions["class_ids"])}
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops=metrics)


estimator = tf.estimator.Estimator(model_fn, MODEL_DIR, tf.estimator.RunConfig(tf_random_seed=1))
estimator.train(input_fn, max_steps=60)
metrics = estimator.evaluate(lambda: input_fn(False))
predictions = list(estimator.predict(lambda: input_fn(False)))
column = tf.feature_column.numeric_column("x", shape=(4,))
linear = tf.compat.v2.compat.v1.estimator.LinearClassifier([column], model_dir=MODEL_DIR + "-linear")
linear.train(input_fn, steps=20)
print(json.dumps({"accuracy": float(metrics["accuracy"]), "global_step": int(metrics["global_step"]),
                  "predictions": len(predictions),
                  "linear_step": int(linear.get_variable_value("global_step"))}))
