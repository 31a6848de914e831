"""The names Keras layers give their variables in a model_fn's graph, in the ways model_fns built them.

    python keras_variable_names.py           # TF 2.15 (Keras 2): prints one JSON line, {case: [names]}
    python keras_variable_names.py --compat  # here, in the Estimator's naming scope (Keras 3)

tests/test_legacy_layers.py compares the second with TF 2.15's (tests/data/tf215_keras_variable_names.json):
a checkpoint TF 2.15 wrote restores only under the same names.
"""
import contextlib
import json
import sys

import tensorflow as tf


class Outer(tf.keras.layers.Layer):
    def build(self, shape):
        self.inner = tf.keras.layers.Dense(2, name="inner_dense")
        self.w = self.add_weight(name="w", shape=(1,))

    def call(self, x):
        return self.inner(x) * self.w


def ones():
    return tf.ones([2, 4])


def functional():
    inputs = tf.keras.Input((4,))
    return tf.keras.Model(inputs, tf.keras.layers.Dense(2)(tf.keras.layers.Dense(3)(inputs)))(ones())


def nested_built():
    inner = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(4,))])
    return tf.keras.Sequential([inner, tf.keras.layers.Dense(2)])(ones())


def in_scope(build):
    def scoped():
        with tf.compat.v1.variable_scope("tower"):
            return build()
    return scoped


CASES = {
    "sequential": lambda: tf.keras.Sequential([tf.keras.layers.Dense(3), tf.keras.layers.Dense(2)])(ones()),
    "nested_sequential": lambda: tf.keras.Sequential(
        [tf.keras.Sequential([tf.keras.layers.Dense(3)]), tf.keras.layers.Dense(2)])(ones()),
    "sequential_built_at_construction": lambda: tf.keras.Sequential(
        [tf.keras.layers.Dense(3, input_shape=(4,)), tf.keras.layers.Dense(2)])(ones()),
    "nested_built_at_construction": nested_built,
    "functional": functional,
    "custom_layer": lambda: Outer()(ones()),
    "layers": lambda: tf.keras.layers.Dense(2)(tf.keras.layers.Dense(3)(ones())),
    "sequential_in_variable_scope": in_scope(lambda: tf.keras.Sequential([tf.keras.layers.Dense(3)])(ones())),
    "built_in_variable_scope": in_scope(
        lambda: tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(4,))])(ones())),
    "batch_norm": lambda: tf.keras.Sequential([tf.keras.layers.BatchNormalization()])(ones(), training=True),
}

naming = contextlib.nullcontext
if "--compat" in sys.argv:
    from compat.core import tf_internals

    naming = tf_internals.keras_names_per_graph
names = {}
for case, build in CASES.items():
    with tf.Graph().as_default(), naming():
        build()
        names[case] = [variable.name for variable in tf.compat.v1.global_variables()]
print(json.dumps(names, sort_keys=True))
