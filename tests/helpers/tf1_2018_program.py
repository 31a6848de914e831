"""A TF 1.x Estimator program as teams wrote them in 2017-2019, in TF 1.x names throughout.

    python tf1_2018_program.py --model_dir=DIR [--steps=N]

tf.app.flags and tf.app.run, tf.logging, a model_fn of tf.layers (dense, batch normalization with
UPDATE_OPS, dropout), tf.losses, tf.metrics, tf.summary, tf.train.AdamOptimizer, tf.GraphKeys, an input_fn
ending in `dataset.make_one_shot_iterator().get_next()`, a serving input of tf.placeholder, a tf.ConfigProto,
tf.contrib.estimator's early-stopping hook and train_and_evaluate with an exporter. It runs on no TensorFlow
as it is. tests/test_check.py runs it after `python -m compat.estimator.check --fix` on TensorFlow >= 2.16
and compares with TF 2.15's run of it after TF 2.15's own `tf_upgrade_v2` (tests/helpers/tf215_tf1_programs.py
records that). Prints a JSON line: the metric keys and accuracy, the checkpoint's variables, the export's
signatures.
"""
import glob
import json
import os

import numpy as np
import tensorflow as tf

flags = tf.app.flags
flags.DEFINE_string("model_dir", None, "Where the model is written.")
flags.DEFINE_integer("steps", 300, "Training steps.")
FLAGS = flags.FLAGS

rng = np.random.RandomState(3)
X = rng.normal(size=(1024, 6)).astype(np.float32)
Y = ((X[:, 0] + X[:, 1] > 0).astype(np.int32) + (X[:, 2] > 0.5).astype(np.int32))


def input_fn(training):
    dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
    if training:
        dataset = dataset.shuffle(1024, seed=1).repeat()
    dataset = dataset.batch(32)
    return dataset.make_one_shot_iterator().get_next()


def model_fn(features, labels, mode, params):
    training = mode == tf.estimator.ModeKeys.TRAIN
    net = tf.layers.dense(features["x"], 32, activation=tf.nn.relu, name="hidden")
    net = tf.layers.batch_normalization(net, training=training, name="bn")
    net = tf.layers.dropout(net, rate=0.1, training=training)
    logits = tf.layers.dense(net, 3, name="logits")
    classes = tf.argmax(logits, 1)
    if mode == tf.estimator.ModeKeys.PREDICT:
        predictions = {"class_ids": classes, "probabilities": tf.nn.softmax(logits)}
        return tf.estimator.EstimatorSpec(
            mode, predictions=predictions,
            export_outputs={"serving_default": tf.estimator.export.PredictOutput(predictions)})
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    accuracy = tf.metrics.accuracy(labels, classes)
    tf.summary.scalar("train_accuracy", accuracy[1])
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": accuracy})
    optimizer = tf.train.AdamOptimizer(params["learning_rate"])
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def serving_input_fn():
    inputs = {"x": tf.placeholder(tf.float32, [None, 6], name="x")}
    return tf.estimator.export.ServingInputReceiver(inputs, inputs)


def main(_):
    tf.logging.set_verbosity(tf.logging.WARN)
    session_config = tf.ConfigProto(allow_soft_placement=True)
    config = tf.estimator.RunConfig(model_dir=FLAGS.model_dir, tf_random_seed=5, save_checkpoints_steps=100,
                                    session_config=session_config)
    estimator = tf.estimator.Estimator(model_fn, config=config, params={"learning_rate": 0.01})
    stop = tf.contrib.estimator.stop_if_no_decrease_hook(estimator, "loss", max_steps_without_decrease=10000)
    tf.estimator.train_and_evaluate(
        estimator,
        tf.estimator.TrainSpec(lambda: input_fn(True), max_steps=FLAGS.steps, hooks=[stop]),
        tf.estimator.EvalSpec(lambda: input_fn(False), steps=None, throttle_secs=0,
                              exporters=[tf.estimator.LatestExporter("latest", serving_input_fn)]),
    )
    metrics = estimator.evaluate(lambda: input_fn(False))
    reader = tf.train.load_checkpoint(estimator.latest_checkpoint())
    exported = sorted(glob.glob(os.path.join(FLAGS.model_dir, "export", "latest", "*", "saved_model.pb")))
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString(open(exported[-1], "rb").read())
    print(json.dumps({
        "metric_keys": sorted(metrics),
        "accuracy": float(metrics["accuracy"]),
        "global_step": int(metrics["global_step"]),
        "variables": sorted(reader.get_variable_to_shape_map()),
        "signatures": {name: {"inputs": sorted(signature.inputs), "outputs": sorted(signature.outputs)}
                       for name, signature in saved.meta_graphs[0].signature_def.items()},
    }))


if __name__ == "__main__":
    tf.app.run()
