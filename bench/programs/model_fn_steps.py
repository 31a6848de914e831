"""A custom model_fn Estimator (the graph engine) that trains to --max_steps, checkpointing every 20 steps.

    python model_fn_steps.py --model_dir DIR --max_steps N

Rerun with the same --model_dir, it resumes from the latest checkpoint, as a
tf.estimator program does. Prints a JSON line: the final global step and the
step it started from.
"""
import argparse
import json

import numpy as np
import tensorflow as tf

import compat.estimator as estimator

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--model_dir", required=True)
parser.add_argument("--max_steps", type=int, required=True)
ARGS = parser.parse_args()
MODEL_DIR, MAX_STEPS = ARGS.model_dir, ARGS.max_steps
rng = np.random.default_rng(0)
X = rng.standard_normal((2048, 16)).astype("float32")
Y = (X[:, :4].sum(axis=1) > 0).astype("int64")


def input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).shuffle(2048, seed=0).repeat().batch(32)


def model_fn(features, labels, mode, params):
    def dense(inputs, units, name):
        kernel = tf.compat.v1.get_variable(f"{name}/kernel", [inputs.shape[-1], units])
        bias = tf.compat.v1.get_variable(f"{name}/bias", [units], initializer=tf.compat.v1.zeros_initializer())
        return tf.matmul(inputs, kernel) + bias

    hidden = tf.nn.relu(dense(features["x"], 64, "hidden"))
    logits = dense(hidden, 2, "logits")
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.AdamOptimizer(1e-3).minimize(
        loss, global_step=tf.compat.v1.train.get_or_create_global_step())
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


config = estimator.RunConfig(save_checkpoints_steps=20, log_step_count_steps=1000, tf_random_seed=0)
est = estimator.Estimator(model_fn, model_dir=MODEL_DIR, config=config)
latest = est.latest_checkpoint()
started_from = int(latest.rsplit("-", 1)[1]) if latest else 0
est.train(input_fn, max_steps=MAX_STEPS)
print(json.dumps({"global_step": int(est.get_variable_value("global_step")), "started_from": started_from}))
