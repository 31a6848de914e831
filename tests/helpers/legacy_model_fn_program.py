"""A custom Estimator program in the shape of TensorFlow's 2018-2020 tutorials, written for TF <= 2.15.

    python legacy_model_fn_program.py MODEL_DIR

Feature columns (numeric, bucketized, categorical with a vocabulary, embedded),
a model_fn over `input_layer` and Keras Dense layers, tf.compat.v1 losses,
metrics and optimizer, a LoggingTensorHook, an early-stopping hook, and
train_and_evaluate with a parsing-receiver exporter; then predict and a
served prediction of serialized tf.Examples. The tests run it with its one
import line changed to compat.estimator, and unchanged after install().
Prints a JSON line of what it saw.
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf

estimator = tf.estimator

MODEL_DIR = sys.argv[1]
rng = np.random.default_rng(42)
N = 600
SPECIES = ["setosa", "versicolor", "virginica"]
data = {
    "sepal_length": rng.normal(5.8, 0.8, N).astype("float32"),
    "sepal_width": rng.normal(3.0, 0.4, N).astype("float32"),
    "petal_length": rng.normal(3.7, 1.7, N).astype("float32"),
    "colour": rng.choice(["red", "blue", "white"], N),
}
labels = (np.digitize(data["petal_length"], [2.5, 4.8])).astype("int64")

feature_columns = [
    tf.feature_column.numeric_column("sepal_length"),
    tf.feature_column.numeric_column("sepal_width"),
    tf.feature_column.bucketized_column(tf.feature_column.numeric_column("petal_length"), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
    tf.feature_column.embedding_column(
        tf.feature_column.categorical_column_with_vocabulary_list("colour", ["red", "blue", "white"]), dimension=2),
]


def train_input_fn(batch_size=32):
    dataset = tf.data.Dataset.from_tensor_slices((data, labels))
    return dataset.shuffle(1000).repeat().batch(batch_size)


def eval_input_fn(batch_size=64):
    return tf.data.Dataset.from_tensor_slices((data, labels)).batch(batch_size)


def my_model(features, labels, mode, params):
    net = tf.compat.v1.feature_column.input_layer(features, params["feature_columns"])
    for units in params["hidden_units"]:
        net = tf.keras.layers.Dense(units, activation=tf.nn.relu)(net)
    logits = tf.keras.layers.Dense(params["n_classes"], activation=None)(net)
    predicted_classes = tf.argmax(logits, 1)
    if mode == estimator.ModeKeys.PREDICT:
        predictions = {"class_ids": predicted_classes[:, tf.newaxis], "probabilities": tf.nn.softmax(logits),
                       "logits": logits}
        return estimator.EstimatorSpec(mode, predictions=predictions, export_outputs={
            "serving_default": estimator.export.PredictOutput(predictions)})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    accuracy = tf.compat.v1.metrics.accuracy(labels=labels, predictions=predicted_classes, name="acc_op")
    tf.compat.v1.summary.scalar("accuracy", accuracy[1])
    if mode == estimator.ModeKeys.EVAL:
        return estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": accuracy})
    optimizer = tf.compat.v1.train.AdagradOptimizer(learning_rate=0.1)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    logging_hook = estimator.LoggingTensorHook({"loss": loss}, every_n_iter=50)
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=[logging_hook])


classifier = estimator.Estimator(
    model_fn=my_model, model_dir=MODEL_DIR,
    params={"feature_columns": feature_columns, "hidden_units": [10, 10], "n_classes": 3},
    config=estimator.RunConfig(save_checkpoints_steps=100, tf_random_seed=0))
early_stopping = estimator.experimental.stop_if_no_decrease_hook(
    classifier, metric_name="loss", max_steps_without_decrease=1000, run_every_secs=None, run_every_steps=100)
serving_input_fn = estimator.export.build_parsing_serving_input_receiver_fn(
    tf.feature_column.make_parse_example_spec(feature_columns))
metrics, exports = estimator.train_and_evaluate(
    classifier,
    estimator.TrainSpec(train_input_fn, max_steps=400, hooks=[early_stopping]),
    estimator.EvalSpec(eval_input_fn, steps=None, throttle_secs=0,
                       exporters=[estimator.LatestExporter("exporter", serving_input_fn, exports_to_keep=2)]))
predictions = list(classifier.predict(lambda: tf.data.Dataset.from_tensor_slices(
    {key: value[:5] for key, value in data.items()}).batch(5)))

# The export serves serialized tf.Examples, as TensorFlow Serving would send them.
def example(index):
    feature = {key: (tf.train.Feature(float_list=tf.train.FloatList(value=[float(value[index])]))
                     if value.dtype != object and value.dtype.kind == "f" else
                     tf.train.Feature(bytes_list=tf.train.BytesList(value=[str(value[index]).encode()])))
               for key, value in data.items()}
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


served = tf.saved_model.load(exports[0].decode()).signatures["serving_default"](
    examples=tf.constant([example(i) for i in range(5)]))
print(json.dumps({
    "accuracy": float(metrics["accuracy"]), "global_step": int(metrics["global_step"]),
    "metric_keys": sorted(metrics), "predicted": [int(p["class_ids"][0]) for p in predictions],
    "served": np.argmax(served["probabilities"].numpy(), 1).tolist(), "export": os.path.basename(exports[0].decode()),
    "checkpoints": sorted(name for name in os.listdir(MODEL_DIR) if name.endswith(".meta")),
}))
