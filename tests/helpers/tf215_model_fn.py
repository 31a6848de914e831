"""The custom model_fn that trained TF 2.15's `model_fn` fixture folder, written for tf.estimator (TF <= 2.15):
the tests run it after compat.estimator.install()."""

import tensorflow as tf


def model_fn(features, labels, mode, params):
    net = features["x"]
    for i, units in enumerate(params["hidden_units"]):
        with tf.compat.v1.variable_scope(f"hidden_{i}"):
            kernel = tf.compat.v1.get_variable("kernel", [net.shape[-1], units])
            bias = tf.compat.v1.get_variable("bias", [units], initializer=tf.compat.v1.zeros_initializer())
            net = tf.nn.relu(tf.matmul(net, kernel) + bias)
    with tf.compat.v1.variable_scope("logits"):
        kernel = tf.compat.v1.get_variable("kernel", [net.shape[-1], params["n_classes"]])
        bias = tf.compat.v1.get_variable("bias", [params["n_classes"]], initializer=tf.compat.v1.zeros_initializer())
        logits = tf.matmul(net, kernel) + bias
    predictions = {"class_ids": tf.argmax(logits, 1), "probabilities": tf.nn.softmax(logits), "logits": logits}
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions=predictions)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.AdamOptimizer(params["learning_rate"]).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
