"""Writes a model_to_estimator folder in the layout releases 0.1 and 0.2 wrote (Keras 3's optimizer keys).

    git worktree add /tmp/release 1e54c9f && cd /tmp/release
    PYTHONPATH=. python tests/helpers/release_0_2_keras_folder.py OUT_DIR

Run from a checkout of that code (commit 1e54c9f, the last to write it), it trains 7 steps into OUT_DIR
and records, in OUT_DIR/expected.json, the probe's predictions there and after 10 steps in one run.
tests/data/release_0_2_keras_folder is its output; tests/test_keras_estimator.py restores it and trains on.
"""
import json
import os
import sys
import tempfile

import keras
import numpy as np
import tensorflow as tf

import compat.estimator as est

out = sys.argv[1]
rng = np.random.default_rng(3)
x = rng.normal(size=(64, 4)).astype("float32")
y = (x[:, 0] > 0).astype("int64")
probe = x[:4]


def estimator(model_dir):
    keras.utils.set_random_seed(1)
    m = keras.Sequential([keras.Input((4,), name="x"), keras.layers.Dense(8, activation="relu"),
                          keras.layers.Dense(2, name="logits")])
    m.compile(keras.optimizers.Adam(0.01), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return est.model_to_estimator(keras_model=m, model_dir=model_dir, config=est.RunConfig(keep_checkpoint_max=1))


def predict(e):
    return [p["logits"].tolist() for p in e.predict(lambda: tf.data.Dataset.from_tensor_slices({"x": probe}).batch(4))]


def train():  # every step sees all 64 examples: 7 steps, then 3 more, are 10 steps in one run
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(64)


e = estimator(out)
e.train(train, steps=7)
straight = estimator(tempfile.mkdtemp())
straight.train(train, steps=10)
json.dump({"probe": probe.tolist(), "predictions": predict(e), "global_step": 7,
           "predictions_after_10_steps": predict(straight),
           "variables": sorted(n for n, _ in tf.train.list_variables(e.latest_checkpoint()))},
          open(os.path.join(out, "expected.json"), "w"), indent=1)
