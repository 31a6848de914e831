# 2022: Keras layers inside a model_fn, replicated over the machine's GPUs
import tensorflow as tf


def model_fn(features, labels, mode):
    hidden = tf.keras.layers.Dense(16, activation="relu")(features["x"])
    logits = tf.keras.layers.Dense(2)(hidden)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.AdamOptimizer().minimize(loss, tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def estimator(model_dir):
    config = tf.estimator.RunConfig(train_distribute=tf.distribute.MirroredStrategy())
    return tf.estimator.Estimator(model_fn, model_dir=model_dir, config=config)
