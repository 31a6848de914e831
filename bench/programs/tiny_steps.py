"""Engine cost per step: a tiny model on in-memory data, so the step itself costs almost nothing.

    python tiny_steps.py estimator|keras STEPS

`estimator`: model_to_estimator(Dense 32 -> 10), RunConfig defaults, train(steps=STEPS)
after a 50-step warm-up, on TF <= 2.15's tf.estimator or, after
`compat.estimator.install()`, on compat.estimator. `keras`: Keras `fit` on the same
model and data (TF >= 2.16), steps_per_execution 1. Prints one JSON line: steps/s.
"""
import json
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf

ENGINE, STEPS = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
X = rng.standard_normal((1024, 32)).astype("float32")
Y = rng.integers(0, 10, 1024).astype("int32")


def input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).cache().repeat().batch(32)


inputs = tf.keras.Input((32,), name="x")
model = tf.keras.Model(inputs, tf.keras.layers.Dense(10)(tf.keras.layers.Dense(32, activation="relu")(inputs)))
model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))

if ENGINE == "keras":
    model.fit(input_fn(), steps_per_epoch=50, epochs=1, verbose=0)
    started = time.perf_counter()
    model.fit(input_fn(), steps_per_epoch=STEPS, epochs=1, verbose=0)
else:
    est = tf.keras.estimator.model_to_estimator(keras_model=model, model_dir=tempfile.mkdtemp())
    est.train(input_fn, steps=50)
    started = time.perf_counter()
    est.train(input_fn, steps=STEPS)
print(json.dumps({"steps_per_second": STEPS / (time.perf_counter() - started), "tensorflow": tf.__version__}))
