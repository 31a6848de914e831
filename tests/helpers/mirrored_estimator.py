"""model_to_estimator under MirroredStrategy on two logical CPU devices (or one with "one").

    python mirrored_estimator.py MODEL_DIR two|one

TensorFlow splits the CPU into devices only before it starts, hence a process
of its own. Prints a JSON line: replicas, the per-replica batch sizes the
input_fn was asked for, and the evaluation's accuracy.
"""
import json
import sys

import tensorflow as tf

MODEL_DIR, DEVICES = sys.argv[1], sys.argv[2]
if DEVICES == "two":
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402
import numpy as np  # noqa: E402

import compat.estimator as estimator  # noqa: E402

rng = np.random.default_rng(0)
X = rng.standard_normal((512, 8)).astype("float32")
Y = (X[:, 0] + X[:, 1] > 0).astype("int32")
asked = []


def input_fn(mode, input_context=None):
    batch = 32
    dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
    if input_context is not None:
        batch = input_context.get_per_replica_batch_size(32)
        asked.append(batch)
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if mode == estimator.ModeKeys.TRAIN:
        dataset = dataset.shuffle(512, seed=0).repeat()
    return dataset.batch(batch)


strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"] if DEVICES == "two" else ["/cpu:0"])
inputs = keras.Input((8,), name="x")
model = keras.Model({"x": inputs}, keras.layers.Dense(2)(keras.layers.Dense(16, activation="relu")(inputs)))
model.compile(keras.optimizers.Adam(0.01), keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
est = estimator.model_to_estimator(keras_model=model, model_dir=MODEL_DIR, config=estimator.RunConfig(
    save_checkpoints_steps=50, train_distribute=strategy, tf_random_seed=0))
metrics, _ = estimator.train_and_evaluate(est, estimator.TrainSpec(input_fn, max_steps=150),
                                          estimator.EvalSpec(input_fn, steps=None, throttle_secs=0))
print(json.dumps({"replicas": strategy.num_replicas_in_sync, "per_replica_batches": asked,
                  "accuracy": float(metrics["accuracy"]), "global_step": int(metrics["global_step"])}))
