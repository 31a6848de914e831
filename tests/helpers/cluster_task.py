"""One task of a TF_CONFIG cluster running a model_to_estimator program with MultiWorkerMirroredStrategy.

    TF_CONFIG=... python cluster_task.py MODEL_DIR MAX_STEPS

The chief and the workers train together; the evaluator evaluates each new
checkpoint. Prints a JSON line: the task, the step it ended at, and (trainers)
a weight of its final model, to compare across workers. A test that kills a
task mid-training runs it under pause.py.
"""
import json
import os
import sys

import tensorflow as tf

MODEL_DIR, MAX_STEPS = sys.argv[1], int(sys.argv[2])
task = json.loads(os.environ["TF_CONFIG"])["task"]

import keras  # noqa: E402
import numpy as np  # noqa: E402

import compat.estimator as estimator  # noqa: E402

strategy = tf.distribute.MultiWorkerMirroredStrategy()
rng = np.random.default_rng(0)
X = rng.standard_normal((512, 8)).astype("float32")
Y = (X[:, 0] + X[:, 1] > 0).astype("int32")


def input_fn(mode, input_context=None):
    dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
    batch = 32
    if input_context is not None:
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        batch = input_context.get_per_replica_batch_size(32)
    if mode == estimator.ModeKeys.TRAIN:
        dataset = dataset.shuffle(512, seed=0).repeat()
    return dataset.batch(batch)


with strategy.scope():
    inputs = keras.Input((8,), name="x")
    model = keras.Model({"x": inputs}, keras.layers.Dense(2, name="logits")(keras.layers.Dense(16, activation="relu")(inputs)))
model.compile(keras.optimizers.Adam(0.01), keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
config = estimator.RunConfig(save_checkpoints_steps=20, train_distribute=strategy, tf_random_seed=0)
est = estimator.model_to_estimator(keras_model=model, model_dir=MODEL_DIR, config=config)
result = estimator.train_and_evaluate(
    est, estimator.TrainSpec(input_fn, max_steps=MAX_STEPS),
    estimator.EvalSpec(input_fn, steps=None, start_delay_secs=0, throttle_secs=1))
folder = MODEL_DIR if config.is_chief or task["type"] == "evaluator" else os.path.join(MODEL_DIR, f"tmp_worker_{config.task_id}")
latest = tf.train.latest_checkpoint(folder)
print(json.dumps({"task": task, "returned": result, "checkpoint": latest,
                  "step": int(latest.rsplit("-", 1)[1]) if latest else None,
                  "weight": float(tf.train.load_variable(latest, "layer_with_weights-1/kernel/.ATTRIBUTES/VARIABLE_VALUE").sum())
                  if latest else None}))
