"""A 2020-style model_fn built from tf.keras layers (Dense, Dropout) with a tf.compat.v1 optimizer, for TF <= 2.15.

    python keras_layers_model_fn_program.py MODEL_DIR MAX_STEPS [MAX_STEPS ...]

For each MAX_STEPS: trains to it (nothing when the folder is there already),
then evaluates and predicts, and prints one JSON line: the evaluation, the
first predictions and the checkpoint's variable names. tests/data/tf215_keras_layers_model_fn is
its folder after `MODEL_DIR 20` under TF 2.15 (expected.json: that run's line).
On TF 2.15 the Dropout layer held no variable; Keras 3's holds its seed
generator's state, which such a folder lacks.
"""
import json
import sys

import numpy as np
import tensorflow as tf

FEATURES = np.linspace(-1, 1, 96, dtype=np.float32).reshape(32, 3)
TARGETS = (FEATURES @ np.array([[0.5], [-1.0], [2.0]], np.float32)).astype(np.float32)


def input_fn(mode):
    if mode == "infer":
        return tf.data.Dataset.from_tensor_slices({"x": FEATURES}).batch(8)
    dataset = tf.data.Dataset.from_tensor_slices(({"x": FEATURES}, TARGETS))
    return dataset.repeat().batch(8) if mode == "train" else dataset.batch(8)


def model_fn(features, labels, mode):
    training = mode == "train"
    hidden = tf.keras.layers.Dense(16, activation="relu", kernel_initializer=tf.keras.initializers.GlorotUniform(3))
    output = tf.keras.layers.Dense(1, kernel_initializer=tf.keras.initializers.GlorotUniform(4))
    prediction = output(tf.keras.layers.Dropout(0.2, seed=5)(hidden(features["x"]), training=training))
    if mode == "infer":
        return tf.estimator.EstimatorSpec(mode, predictions={"y": prediction})
    loss = tf.compat.v1.losses.mean_squared_error(labels, prediction)
    train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(loss, tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main(model_dir, max_steps):
    estimator = tf.estimator.Estimator(model_fn, model_dir, tf.estimator.RunConfig(tf_random_seed=1))
    estimator.train(lambda: input_fn("train"), max_steps=max_steps)
    evaluation = estimator.evaluate(lambda: input_fn("eval"))
    predictions = [float(p["y"][0]) for p in estimator.predict(lambda: input_fn("infer"))]
    return {"global_step": int(evaluation["global_step"]), "loss": float(evaluation["loss"]),
            "predictions": predictions[:8], "variables": sorted(estimator.get_variable_names())}


if __name__ == "__main__":
    for steps in sys.argv[2:]:
        print(json.dumps(main(sys.argv[1], int(steps))), flush=True)
