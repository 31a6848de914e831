# 2019: the same program on TF 1.14+ through tensorflow.compat.v1, run with TF 2.x behaviour off
import sys

import numpy as np
import tensorflow.compat.v1 as tf


def model_fn(features, labels, mode, params):
    net = tf.layers.dense(features["x"], params["units"], activation=tf.nn.relu)
    logits = tf.layers.dense(net, 2)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=tf.train.get_global_step())
    if mode == tf.estimator.ModeKeys.PREDICT:  # an attribute chain below a public name
        return tf.estimator.EstimatorSpec(mode, predictions={"logits": logits})
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main():
    x = np.random.rand(32, 3).astype("float32")
    config = tf.estimator.RunConfig(model_dir=sys.argv[1] if len(sys.argv) > 1 else None)
    estimator = tf.estimator.Estimator(model_fn, config=config, params={"units": 4})
    input_fn = tf.estimator.inputs.numpy_input_fn({"x": x}, (x[:, 0] > 0.5).astype("int32"), batch_size=16,
                                                  shuffle=False)
    estimator.train(input_fn, steps=2)
    print("trained to step", estimator.get_variable_value("global_step"))


if __name__ == "__main__":
    main()
