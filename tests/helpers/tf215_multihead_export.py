"""A multi-task program as teams wrote it for TF 2.15: a MultiHead over a classification and a regression head,
an extra metric added with tf.estimator.add_metrics, then exported for serving and in all three modes.

    python tf215_multihead_export.py WORK_DIR [OUT.json]

Prints (and writes to OUT.json) what a serving system sees of the exports: per meta graph its tags, and per
signature its method name and input and output keys. Recorded with TensorFlow 2.15:

    /work/tf215-venv/bin/python tests/helpers/tf215_multihead_export.py /tmp/work tests/data/tf215_multihead_export.json

tests/test_estimator_api.py runs it after compat.estimator.install() and compares.
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf

WORK = sys.argv[1]
OUT = sys.argv[2] if len(sys.argv) > 2 else None

rng = np.random.default_rng(4)
X = rng.normal(size=(64, 3)).astype("float32")
LABELS = {"kind": (X[:, 0] > 0).astype("int32") + (X[:, 1] > 0).astype("int32"),
          "size": (X @ np.array([1.0, -2.0, 0.5])).astype("float32")[:, None]}


def input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, LABELS)).repeat().batch(16)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, LABELS)).batch(16)


HEAD = tf.estimator.MultiHead([tf.estimator.MultiClassHead(3, name="kind"),
                               tf.estimator.RegressionHead(name="size")])


def model_fn(features, labels, mode, params):
    hidden = tf.compat.v1.layers.dense(features["x"], 8, activation=tf.nn.relu)
    logits = {"kind": tf.compat.v1.layers.dense(hidden, 3), "size": tf.compat.v1.layers.dense(hidden, 1)}
    optimizer = tf.keras.optimizers.legacy.Adagrad(0.1)  # TF 2.11-2.15's advice for Estimators
    optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
    return HEAD.create_estimator_spec(features, mode, logits, labels=labels, optimizer=optimizer,
                                      trainable_variables=tf.compat.v1.trainable_variables())


def size_error(labels, predictions):
    return {"size_abs_error": tf.compat.v1.metrics.mean_absolute_error(
        labels["size"], predictions[("size", "predictions")])}


est = tf.estimator.Estimator(model_fn, os.path.join(WORK, "model"))
est = tf.estimator.add_metrics(est, size_error)
est.train(input_fn, steps=20)
metrics = est.evaluate(eval_input_fn)

# tensors giving each input's dtype and shape; the receivers take any batch size
serving = tf.estimator.export.build_raw_serving_input_receiver_fn({"x": tf.zeros([1, 3])})
supervised = tf.estimator.experimental.build_raw_supervised_input_receiver_fn(
    {"x": tf.zeros([1, 3])}, {"kind": tf.zeros([1], tf.int32), "size": tf.zeros([1, 1])})
paths = {"serving": est.export_saved_model(os.path.join(WORK, "serving"), serving),
         "all_modes": est.experimental_export_all_saved_models(
             os.path.join(WORK, "all_modes"), {"train": supervised, "eval": supervised, "infer": serving})}


def signatures(path):
    """{tags joined by ',': {signature: {method, inputs, outputs}}} of the SavedModel at `path`."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as stream:
        proto.ParseFromString(stream.read())
    return {",".join(sorted(graph.meta_info_def.tags)): {
        name: {"method": signature.method_name, "inputs": sorted(signature.inputs),
               "outputs": sorted(signature.outputs)}
        for name, signature in graph.signature_def.items()} for graph in proto.meta_graphs}


result = {"metrics": sorted(metrics), **{kind: signatures(path.decode()) for kind, path in paths.items()},
          "tensorflow": tf.__version__}
if OUT:
    with open(OUT, "w") as stream:
        json.dump(result, stream, indent=1, sort_keys=True)
print(json.dumps(result))
