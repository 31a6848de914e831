"""A model_to_estimator program of a team that keeps Keras 2: its model is a tf_keras (Keras 2) model.

    python keras2_model_to_estimator.py WORK_DIR

On TensorFlow 2.15, `tf.keras` is Keras 2; on TensorFlow >= 2.16 the team installs tf_keras and builds from
it (`import tf_keras`, or tf.keras under TF_USE_LEGACY_KERAS=1). The model starts from fixed weights, trains
30 steps with model_to_estimator, evaluates, predicts and exports; prints one JSON line: the metrics, the
predictions, the checkpoint's variable names and the first values of each (Adam's slots among them), the
export's signatures. Under compat.estimator it also
converts the Estimator back with `to_keras` and reports that model's Keras and its predictions.
tests/test_keras_estimator.py compares with TF 2.15's run (tests/data/tf215_keras2_model_to_estimator.json).
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf

try:
    import tf_keras as keras2
except ImportError:  # TensorFlow 2.15: tf.keras is Keras 2
    keras2 = tf.keras

WORK = sys.argv[1]
rng = np.random.default_rng(8)
X = rng.normal(size=(256, 4)).astype("float32")
Y = (X[:, 0] + X[:, 2] > 0).astype("int64") + (X[:, 1] > 1).astype("int64")

inputs = keras2.Input((4,), name="x")
hidden = keras2.layers.Dense(8, activation="relu", name="hidden")(inputs)
outputs = keras2.layers.Dense(3, name="logits")(hidden)
model = keras2.Model(inputs, outputs)
model.set_weights([rng.normal(size=w.shape).astype("float32") * 0.3 for w in model.get_weights()])
model.compile(optimizer=keras2.optimizers.legacy.Adam(0.01),
              loss=keras2.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])


def input_fn(repeat=True):
    dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
    return (dataset.repeat() if repeat else dataset).batch(32)


config = tf.estimator.RunConfig(model_dir=os.path.join(WORK, "model"), save_checkpoints_steps=15)
estimator = tf.keras.estimator.model_to_estimator(keras_model=model, config=config)
estimator.train(input_fn, max_steps=30)
metrics = estimator.evaluate(lambda: input_fn(False))
predictions = [p["logits"].tolist() for p in estimator.predict(lambda: input_fn(False))][:8]


def serving_input_fn():
    x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
    return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})


export = estimator.export_saved_model(os.path.join(WORK, "export"), serving_input_fn).decode()
loaded = tf.saved_model.load(export)
reader = tf.train.load_checkpoint(estimator.latest_checkpoint())


values = {name: np.ravel(reader.get_tensor(name))[:4].round(6).tolist()
          for name in reader.get_variable_to_shape_map() if name != "_CHECKPOINTABLE_OBJECT_GRAPH"}
report = {
    "values": values,
    "metrics": {key: float(value) for key, value in metrics.items()},
    "predictions": predictions,
    "variables": sorted(reader.get_variable_to_shape_map()),
    "warm_start_variables": sorted(name for name, _ in tf.train.list_variables(
        os.path.join(WORK, "model", "keras", "keras_model.ckpt"))),
    "checkpoints": sorted(name for name in os.listdir(os.path.join(WORK, "model")) if name.endswith(".index")),
    "signatures": {name: sorted(fn.structured_outputs) for name, fn in loaded.signatures.items()},
}
if "compat.estimator" in sys.modules:
    from compat.estimator import to_keras

    converted = to_keras(estimator)
    report["converted_keras"] = type(converted).__module__.split(".")[0]
    report["converted_predictions"] = converted.predict(X[:8], verbose=0).tolist()
print(json.dumps(report, sort_keys=True))
