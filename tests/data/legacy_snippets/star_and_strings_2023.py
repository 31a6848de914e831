# 2023: a star import, names in strings and comments (not uses), a contrib import left behind
from tensorflow.estimator import *
import tensorflow as tf

HELP = "tf.estimator.DNNClassifier and tf.contrib.learn are mentioned here only"  # tf.layers.dense


def build(model_dir):
    spec = TrainSpec(input_fn=lambda: None, max_steps=10)  # tf.estimator.TrainSpec, by the star import
    hook = tf.estimator.experimental.stop_if_no_decrease_hook
    return spec, hook, tf.contrib.estimator.add_metrics
