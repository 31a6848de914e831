"""A short RNNClassifier / RNNEstimator run written as TF 2.15 programs wrote it: an `rnn_cell_fn` of Keras cells
with dropout, numpy and parse-example input_fns.

    python rnn_program.py MODEL_DIR numpy|parse|custom_cell|sequential

Written for TF 2.15's tf.estimator.experimental: run with TensorFlow 2.15 it records tests/data/tf215_rnn.json;
the tests run it after compat.estimator.install() and compare. Prints a JSON line: the metrics, the global step,
the prediction keys and the model's get_config() keys where it has one.
"""
import json
import sys

import numpy as np
import tensorflow as tf

MODEL_DIR, KIND = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(5)
STEPS_IN = 6
X = rng.normal(size=(400, STEPS_IN)).astype("float32")
LENGTHS = rng.integers(2, STEPS_IN + 1, size=400)
for row, length in zip(X, LENGTHS):
    row[length:] = 0.0
Y = (np.array([row[:length].sum() for row, length in zip(X, LENGTHS)]) > 0).astype("int64")

token = tf.feature_column.sequence_numeric_column("tokens")


def rnn_cell_fn():
    return [tf.keras.layers.SimpleRNNCell(8, dropout=0.1), tf.keras.layers.LSTMCell(8, recurrent_dropout=0.1)]


class MinimalCell(tf.keras.layers.Layer):
    """A custom cell, as the Keras RNN guide wrote one."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="glorot_uniform", name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(self.units, self.units), initializer="orthogonal",
                                                name="recurrent_kernel")

    def call(self, inputs, states):
        output = tf.tanh(tf.matmul(inputs, self.kernel) + tf.matmul(states[0], self.recurrent_kernel))
        return output, [output]


def sparse_tokens(x, lengths):
    indices = [[i, j] for i, length in enumerate(lengths) for j in range(length)]
    values = [x[i, j] for i, j in indices]
    return tf.sparse.SparseTensor(indices, values, [len(lengths), STEPS_IN])


def numpy_like_input_fn(x, y, lengths, repeat):
    def input_fn():
        dataset = tf.data.Dataset.from_tensor_slices((x, lengths, y))
        if repeat:
            dataset = dataset.shuffle(400, seed=2).repeat()
        dataset = dataset.batch(32)

        def to_features(xb, lb, yb):
            mask = tf.sequence_mask(lb, STEPS_IN)
            indices = tf.where(mask)
            values = tf.gather_nd(xb, indices)
            sparse = tf.sparse.SparseTensor(indices, values, tf.shape(xb, out_type=tf.int64))
            return {"tokens": sparse}, yb

        return dataset.map(to_features)
    return input_fn


def parse_input_fn(repeat):
    examples = []
    for row, length, label in zip(X, LENGTHS, Y):
        example = tf.train.SequenceExample()
        example.context.feature["label"].int64_list.value.append(int(label))
        tokens = example.feature_lists.feature_list["tokens"]
        for value in row[:length]:
            tokens.feature.add().float_list.value.append(float(value))
        examples.append(example.SerializeToString())

    def parse(serialized):
        context, sequence = tf.io.parse_single_sequence_example(
            serialized, context_features={"label": tf.io.FixedLenFeature([], tf.int64)},
            sequence_features={"tokens": tf.io.VarLenFeature(tf.float32)})
        return {"tokens": sequence["tokens"]}, context["label"]

    def input_fn():
        dataset = tf.data.Dataset.from_tensor_slices(examples)
        if repeat:
            dataset = dataset.shuffle(400, seed=2).repeat()
        return dataset.map(parse).padded_batch(32) if False else dataset.map(parse).batch(32)
    return input_fn


config = tf.estimator.RunConfig(tf_random_seed=1)
if KIND == "custom_cell":
    est = tf.estimator.experimental.RNNEstimator(
        head=tf.estimator.BinaryClassHead(), sequence_feature_columns=[token],
        rnn_cell_fn=lambda: MinimalCell(8), model_dir=MODEL_DIR, config=config, optimizer="Adam")
elif KIND == "sequential":
    est = tf.estimator.experimental.RNNClassifier(
        sequence_feature_columns=[token], rnn_cell_fn=rnn_cell_fn, return_sequences=True,
        model_dir=MODEL_DIR, config=config, optimizer="Adam")
else:
    est = tf.estimator.experimental.RNNClassifier(
        sequence_feature_columns=[token], rnn_cell_fn=rnn_cell_fn, model_dir=MODEL_DIR, config=config,
        optimizer="Adam")

if KIND == "parse":
    train_fn, eval_fn = parse_input_fn(True), parse_input_fn(False)
elif KIND == "sequential":
    per_step = np.where(np.arange(STEPS_IN)[None, :] < LENGTHS[:, None], (X > 0).astype("int64"), 0)

    def seq_input(repeat):
        def input_fn():
            dataset = tf.data.Dataset.from_tensor_slices((X, LENGTHS, per_step))
            if repeat:
                dataset = dataset.shuffle(400, seed=2).repeat()

            def to_features(xb, lb, yb):
                mask = tf.sequence_mask(lb, STEPS_IN)
                indices = tf.where(mask)
                sparse = tf.sparse.SparseTensor(indices, tf.gather_nd(xb, indices), tf.shape(xb, out_type=tf.int64))
                labels = tf.sparse.SparseTensor(indices, tf.gather_nd(yb, indices), tf.shape(yb, out_type=tf.int64))
                return {"tokens": sparse}, labels
            return dataset.batch(32).map(to_features)
        return input_fn
    train_fn, eval_fn = seq_input(True), seq_input(False)
else:
    train_fn, eval_fn = numpy_like_input_fn(X, Y, LENGTHS, True), numpy_like_input_fn(X, Y, LENGTHS, False)

est.train(train_fn, steps=300)
metrics = est.evaluate(eval_fn)
predictions = next(iter(est.predict(lambda: eval_fn().map(lambda f, l: f))))
print(json.dumps({"metrics": {k: float(v) for k, v in metrics.items()}, "prediction_keys": sorted(predictions)}))
