"""Restores each TF 2.15 fixture folder, trains it STEPS more on fixed data, predicts the probe inputs.

    python tf215_train_on.py FIXTURES_DIR WORK_DIR STEPS [OUT.json]

Written for TF 2.15's tf.estimator: run with TensorFlow 2.15 it records the
oracle (tests/data/tf215_train_on.json, kept in the repository); the tests run
it after compat.estimator.install() and compare the two, so continuing
training from a TF 2.15 folder (optimizer slots included) matches TF 2.15.
With STEPS 0 it only predicts: the fixture's own expected.json is the oracle.
"""
import json
import os
import shutil
import sys

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))  # this script's folder, also when exec'd
from tf215_model_fn import model_fn  # noqa: E402

FIXTURES, WORK, STEPS = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = np.random.default_rng(11)


def copy(name):
    target = os.path.join(WORK, name)
    shutil.copytree(os.path.join(FIXTURES, name), target)
    return target, json.load(open(os.path.join(FIXTURES, name, "expected.json")))


def data(width):
    x = rng.normal(size=(320, width)).astype("float32")
    return x, (x[:, 0] > 0).astype("int32") + (x[:, 1] > 1).astype("int32"), (x @ np.linspace(-1, 1, width)).astype("float32")


def train_on_then_predict(est, features, labels, probe, keys):
    if STEPS:
        est.train(lambda: tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(32), steps=STEPS)
    predictions = list(est.predict(lambda: tf.data.Dataset.from_tensor_slices(probe).batch(8)))
    return {"global_step": int(est.get_variable_value(
                "global_step" if "global_step" in est.get_variable_names() else
                [n for n in est.get_variable_names() if "global_step" in n][0])),
            "predictions": {key: [np.asarray(p[key], float).tolist() for p in predictions] for key in keys}}


results = {}
folder, expected = copy("model_fn")
x, y_class, y_reg = data(expected["settings"]["features"]["x"])
probe = np.array(expected["probe_inputs"], "float32")
est = tf.estimator.Estimator(model_fn, folder, params=expected["settings"]["params"])
results["model_fn"] = train_on_then_predict(est, {"x": x}, y_class, {"x": probe}, ["probabilities", "logits"])

folder, expected = copy("dnn_classifier")
columns = [tf.feature_column.numeric_column("x", shape=(probe.shape[1],))]
est = tf.estimator.DNNClassifier(hidden_units=expected["settings"]["hidden_units"], feature_columns=columns,
                                 n_classes=3, model_dir=folder)
results["dnn_classifier"] = train_on_then_predict(est, {"x": x}, y_class, {"x": probe}, ["probabilities", "logits"])

folder, expected = copy("linear_regressor")
bucket = tf.feature_column.bucketized_column(tf.feature_column.numeric_column("x0"), [-1.0, 0.0, 1.0])
est = tf.estimator.LinearRegressor(feature_columns=columns + [bucket], model_dir=folder)
linear_probe = {"x": probe, "x0": probe[:, 0]}
results["linear_regressor"] = train_on_then_predict(est, {"x": x, "x0": x[:, 0]}, y_reg, linear_probe, ["predictions"])

folder, expected = copy("keras")
inputs = tf.keras.Input((probe.shape[1],), name="x")
net = inputs
for units in expected["settings"]["layers"][1:-1]:
    net = tf.keras.layers.Dense(int(units.split("(")[1].split(",")[0]), activation="relu")(net)
model = tf.keras.Model(inputs, tf.keras.layers.Dense(3, name="logits")(net))
model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
est = tf.keras.estimator.model_to_estimator(keras_model=model, model_dir=folder)
results["keras"] = train_on_then_predict(est, {"x": x}, y_class, {"x": probe}, ["logits"])

results["tensorflow"] = tf.__version__
if len(sys.argv) > 4:
    with open(sys.argv[4], "w") as stream:
        json.dump(results, stream, indent=1)
print(json.dumps(results))
