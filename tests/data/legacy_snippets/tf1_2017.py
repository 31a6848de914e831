# 2017: TensorFlow 1.x names through `import tensorflow as tf` (refused on any TensorFlow 2)
import numpy as np
import tensorflow as tf


def model_fn(features, labels, mode):
    net = tf.layers.dense(features["x"], 4, activation=tf.nn.relu)
    logits = tf.layers.dense(net, 2)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


if __name__ == "__main__":
    x = np.random.rand(32, 3).astype("float32")
    estimator = tf.estimator.Estimator(model_fn)
    estimator.train(tf.estimator.inputs.numpy_input_fn({"x": x}, (x[:, 0] > 0.5).astype("int32"),
                                                       shuffle=False), steps=2)
