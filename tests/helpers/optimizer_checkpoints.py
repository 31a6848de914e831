"""model_to_estimator with each optimizer family tf.keras offered in TF 2.15: what its checkpoint holds.

    python optimizer_checkpoints.py WORK_DIR

For each optimizer, a small model from fixed weights (an Embedding among its layers, whose gradient is sparse)
trains 3 steps; prints one JSON line:
{optimizer: {checkpoint key: its first values (all of the embedding's)}}. Run on TensorFlow 2.15 it records the oracle
(tests/data/tf215_optimizer_checkpoints.json); tests/test_keras_estimator.py runs it after install().
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf

WORK = sys.argv[1]
rng = np.random.default_rng(4)
# a sparse gradient: some rows repeat within a batch, others are missing from one batch and not the next
TOKENS = rng.integers(0, 40, size=(64, 2)).astype("int32")
Y = (TOKENS[:, 0] > TOKENS[:, 1]).astype("int64")
OPTIMIZERS = {
    "SGD": lambda o: o.SGD(0.1, momentum=0.9),
    "Adam": lambda o: o.Adam(0.05, amsgrad=True),
    "Adamax": lambda o: o.Adamax(0.05),
    "Nadam": lambda o: o.Nadam(0.05),
    "RMSprop": lambda o: o.RMSprop(0.05, momentum=0.5, centered=True),
    "Adagrad": lambda o: o.Adagrad(0.1),
    "Adadelta": lambda o: o.Adadelta(1.0),
    "Ftrl": lambda o: o.Ftrl(0.1),
}


def checkpoint_of(name):
    layers = tf.keras.layers
    tokens = tf.keras.Input((2,), name="tokens", dtype="int32")
    net = layers.Dense(4, activation="tanh")(layers.Flatten()(layers.Embedding(40, 2)(tokens)))
    model = tf.keras.Model(tokens, layers.Dense(2, name="logits")(net))
    weights = np.random.default_rng(7)
    model.set_weights([weights.normal(size=w.shape).astype("float32") * 0.5 for w in model.get_weights()])
    model.compile(optimizer=OPTIMIZERS[name](tf.keras.optimizers),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    estimator = tf.keras.estimator.model_to_estimator(keras_model=model, model_dir=os.path.join(WORK, name))
    estimator.train(lambda: tf.data.Dataset.from_tensor_slices(({"tokens": TOKENS}, Y)).repeat().batch(16), steps=3)
    reader = tf.train.load_checkpoint(estimator.latest_checkpoint())
    return {key: np.ravel(reader.get_tensor(key))[: None if "embeddings" in key else 3].astype(float).round(6).tolist()
            for key in reader.get_variable_to_shape_map() if key != "_CHECKPOINTABLE_OBJECT_GRAPH"}


print(json.dumps({name: checkpoint_of(name) for name in OPTIMIZERS}, sort_keys=True))
