"""model_to_estimator over a model of layers that hold layers: Embedding, Bidirectional(LSTM), TimeDistributed,
GRU, MultiHeadAttention, BatchNormalization and a nested Sequential.

    python keras_layers_model_to_estimator.py WORK_DIR [TF215_FOLDER]

From fixed weights it trains 6 steps into WORK_DIR/model, then 3 more; prints one JSON line: the checkpoint's
variable names, the probe's predictions after 6 and after 9 steps. Given TF215_FOLDER (a model folder this
program wrote on TensorFlow 2.15: tests/data/tf215_keras_layers_folder) it also restores a copy of it,
predicts, trains 3 steps and predicts again. Run on TensorFlow 2.15 it records the oracle
(tests/data/tf215_keras_layers_model_to_estimator.json); tests/test_keras_estimator.py runs it after install().
"""
import json
import os
import shutil
import sys

import numpy as np
import tensorflow as tf

WORK = sys.argv[1]
rng = np.random.default_rng(21)
X = rng.integers(0, 10, size=(32, 5)).astype("int32")
Y = (X[:, 0] > X[:, 1]).astype("int64")
PROBE = X[:4]


def build(seed):
    layers = tf.keras.layers
    inputs = tf.keras.Input((5,), name="tokens", dtype="int32")
    net = layers.BatchNormalization()(layers.Embedding(10, 4)(inputs))
    net = layers.Bidirectional(layers.LSTM(3, return_sequences=True))(net)
    net = layers.TimeDistributed(layers.Dense(4))(net)
    net = layers.MultiHeadAttention(num_heads=2, key_dim=2)(net, net)
    net = layers.GRU(4)(net)
    net = tf.keras.Sequential([layers.Dense(4, activation="tanh"), layers.LayerNormalization()], name="block")(net)
    model = tf.keras.Model(inputs, layers.Dense(2, name="logits")(net))
    weights = np.random.default_rng(seed)
    # batch norm's statistics at their initial values: TF 2.15 did not copy the model's (docs/estimator.md)
    model.set_weights([np.zeros(w.shape, "float32") if "moving_mean" in name else np.ones(w.shape, "float32")
                       if "moving_variance" in name else weights.normal(size=w.shape).astype("float32") * 0.4
                       for w, name in zip(model.get_weights(), _names(model))])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.02),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _names(model):
    return [getattr(weight, "path", weight.name) for weight in model.weights]


def train_input():
    return tf.data.Dataset.from_tensor_slices(({"tokens": X}, Y)).repeat().batch(32)


def predict(estimator):
    def probe():
        return tf.data.Dataset.from_tensor_slices({"tokens": PROBE}).batch(4)

    return [np.asarray(p["logits"], float).round(6).tolist() for p in estimator.predict(probe)]


def estimator_in(model_dir, seed):
    return tf.keras.estimator.model_to_estimator(keras_model=build(seed), model_dir=model_dir)


report = {}
estimator = estimator_in(os.path.join(WORK, "model"), seed=5)
estimator.train(train_input, steps=6)
report["after_6"] = predict(estimator)
report["variables"] = sorted(name for name, _ in tf.train.list_variables(estimator.latest_checkpoint()))
estimator.train(train_input, steps=3)
report["after_9"] = predict(estimator)
if len(sys.argv) > 2:
    folder = shutil.copytree(sys.argv[2], os.path.join(WORK, "tf215"))
    restored = estimator_in(folder, seed=99)  # other starting weights: the checkpoint's must win
    report["tf215_folder"] = predict(restored)
    restored.train(train_input, steps=3)
    report["tf215_folder_after_3"] = predict(restored)
print(json.dumps(report, sort_keys=True))
