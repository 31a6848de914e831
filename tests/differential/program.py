"""Runs one generated spec with the interpreter's `tf.estimator`, and says what a user would observe.

Written against TF 2.15's public API only, so the same code runs under TF 2.15 and, after
`compat.estimator.install()`, here. Everything observed goes into a JSON-able result: each
operation's outcome (global step, evaluate dict, predictions, export signatures and outputs, what the
hooks saw), the first exception (type, its bases, and the operation it ended), and the model
folder afterwards (checkpoint variables with their sums, kept steps, files, summary tags by step).
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Any

import numpy as np
import tensorflow as tf

N_ROWS = 24
PREDICT_ROWS = 6
KERAS_LOSSES = {
    "binary": ("binary_crossentropy", "BinaryCrossentropy"),
    "multiclass": ("sparse_categorical_crossentropy", "SparseCategoricalCrossentropy"),
    "regression": ("mean_squared_error", "MeanSquaredError"),
}
TF1_OPTIMIZERS = {"Adagrad": "AdagradOptimizer", "Adam": "AdamOptimizer", "Ftrl": "FtrlOptimizer",
                  "RMSProp": "RMSPropOptimizer", "SGD": "GradientDescentOptimizer"}  # fmt: skip
KERAS_OPTIMIZERS = {"Adagrad": "Adagrad", "Adam": "Adam", "Ftrl": "Ftrl", "RMSProp": "RMSprop", "SGD": "SGD"}


class ProgramError(Exception):
    """Wraps the first exception of a program with the operation it ended."""


# ---------------------------------------------------------------- values


def plain(value: Any) -> Any:
    """A JSON-able copy: arrays to lists, bytes to str, numpy scalars to Python, NaN to a string."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (np.floating, float)):
        number = float(value)
        return number if np.isfinite(number) else str(number)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def dataset(spec: dict) -> tuple[dict, Any]:
    """The seed's rows: every raw feature any column may read, and the labels the head takes."""
    rng = np.random.RandomState(spec["data_seed"])
    x0 = rng.rand(N_ROWS).astype("float32")
    x1 = rng.rand(N_ROWS).astype("float32")
    features = {
        "x0": x0,
        "x1": x1,
        "v": rng.rand(N_ROWS, 2).astype("float32"),
        "cat": np.array([b"abcd"[i : i + 1] for i in rng.randint(0, 4, N_ROWS)], dtype=object),
        "idx": rng.randint(0, 5, N_ROWS).astype("int64"),
        "cat_weight": rng.rand(N_ROWS).astype("float32"),
        "wt": (rng.rand(N_ROWS) + 0.5).astype("float32"),
    }
    if spec["input"]["kind"] == "pandas":
        del features["v"]
    binary = (x0 + x1 > 1.0).astype("int64")
    three = np.minimum((x0 * 3).astype("int64"), 2)
    head = spec["head"]
    labels: Any
    if head == "binary":
        labels = np.array([[b"no", b"yes"][i] for i in binary], dtype=object) if spec.get("label_vocabulary") else binary
    elif head == "multiclass":
        vocab = [b"lo", b"mid", b"hi"]
        labels = np.array([vocab[i] for i in three], dtype=object) if spec.get("label_vocabulary") else three
    elif head == "regression":
        dim = spec.get("label_dimension", 1)
        labels = np.stack([x0 * 2 - x1, x1 + 0.5][:dim], axis=1).astype("float32")
    elif head == "multi_label":
        labels = np.stack([binary, 1 - binary, (three == 2).astype("int64")], axis=1)
    elif head == "multi_head":
        labels = {"a": binary.reshape(-1, 1), "b": (x0 * 2 - x1).reshape(-1, 1).astype("float32")}
    elif head == "poisson":
        labels = np.floor(x0 * 4).astype("float32").reshape(-1, 1)
    elif head == "logistic":
        labels = binary.astype("float32").reshape(-1, 1)
    else:
        labels = None
    if spec["family"] == "keras" and head != "multiclass":
        labels = labels.reshape(-1, 1).astype("float32") if head == "binary" else labels
    if spec.get("experiment") == "sdca":
        features["example_id"] = np.array([str(i).encode() for i in range(N_ROWS)], dtype=object)
    if spec.get("experiment") == "rnn":
        lengths = rng.randint(1, 5, N_ROWS)
        features = {"seq": (rng.rand(N_ROWS, 4) + 0.1).astype("float32") * (np.arange(4) < lengths[:, None])}
    if spec["family"] == "keras":
        features = {"v": features["v"]}
        if spec["model"] == "two_outputs":
            labels = {"out_a": labels, "out_b": (x0 * 2 - x1).reshape(-1, 1).astype("float32")}
    return features, labels


def _rows(tree: Any, stop: int) -> Any:
    if isinstance(tree, dict):
        return {k: v[:stop] for k, v in tree.items()}
    return tree[:stop]


# ---------------------------------------------------------------- input_fns


def input_fn(spec: dict, mode: str) -> Any:
    """An input_fn of the drawn kind for `mode` ("train" repeats for ever, "eval" one pass, "predict" features)."""
    features, labels = dataset(spec)
    kind, batch, shuffle = spec["input"]["kind"], spec["input"]["batch"], spec["input"]["shuffle"]
    if mode == "predict":
        features, labels = _rows(features, PREDICT_ROWS), None
    train = mode == "train"
    if kind in ("numpy", "pandas"):
        return _queue_input_fn(kind, features, labels, batch, shuffle and train, None if train else 1)

    def make(batch_size: int) -> tf.data.Dataset:
        if kind == "generator":
            ds = _generator_dataset(features, labels)
        else:
            ds = tf.data.Dataset.from_tensor_slices(features if labels is None else (features, labels))
        if shuffle and train:
            ds = ds.shuffle(N_ROWS, seed=7)
        if spec.get("experiment") == "kmeans":
            ds = ds.map(lambda f, *_: f["v"])
        ds = ds.repeat() if train else ds
        ds = ds.batch(batch_size, drop_remainder=spec["family"] == "tpu")
        if spec.get("experiment") == "rnn":
            ds = ds.map(lambda f, *rest: ({"seq": tf.sparse.from_dense(f["seq"])}, *rest) if rest
                        else {"seq": tf.sparse.from_dense(f["seq"])})
        return ds

    if kind == "params":

        def with_params(params):
            return make(params.get("batch_size", batch) if params else batch)

        return with_params
    if kind == "tuple":
        return lambda: tf.compat.v1.data.make_one_shot_iterator(make(batch)).get_next()
    return lambda: make(batch)


def _generator_dataset(features: dict, labels: Any) -> tf.data.Dataset:
    def take(tree: Any, i: int) -> Any:
        return {k: v[i] for k, v in tree.items()} if isinstance(tree, dict) else tree[i]

    def sig(tree: Any) -> Any:
        if isinstance(tree, dict):
            return {k: sig(v) for k, v in tree.items()}
        return tf.TensorSpec(tree.shape[1:], tf.string if tree.dtype == object else tf.as_dtype(tree.dtype))

    def rows():
        for i in range(len(next(iter(features.values())))):
            yield take(features, i) if labels is None else (take(features, i), take(labels, i))

    signature = sig(features) if labels is None else (sig(features), sig(labels))
    return tf.data.Dataset.from_generator(rows, output_signature=signature)


def _queue_input_fn(kind: str, features: dict, labels: Any, batch: int, shuffle: bool, epochs: int | None) -> Any:
    inputs = tf.compat.v1.estimator.inputs
    if kind == "numpy":
        return inputs.numpy_input_fn(features, labels, batch_size=batch, num_epochs=epochs, shuffle=shuffle)
    import pandas

    frame = pandas.DataFrame({k: list(v) if v.dtype == object else v for k, v in features.items()})
    target = None if labels is None else pandas.Series(np.asarray(labels).reshape(len(frame), -1)[:, 0])
    return inputs.pandas_input_fn(frame, target, batch_size=batch, num_epochs=epochs, shuffle=shuffle)


# ---------------------------------------------------------------- feature columns, optimizers, heads


def _base_column(kind: str, workdir: str) -> Any:
    fc = tf.feature_column
    if kind == "numeric":
        return fc.numeric_column("x0")
    if kind == "numeric_shape":
        return fc.numeric_column("v", shape=(2,))
    if kind == "numeric_normalizer":
        return fc.numeric_column("x1", normalizer_fn=lambda t: (t - 0.5) * 2.0)
    if kind == "bucketized":
        return fc.bucketized_column(fc.numeric_column("x1"), boundaries=[0.25, 0.5, 0.75])
    if kind == "vocab_list":
        return fc.categorical_column_with_vocabulary_list("cat", ["a", "b", "c"], num_oov_buckets=1)
    if kind == "vocab_file":
        path = os.path.join(workdir, "vocab.txt")
        with open(path, "w") as f:
            f.write("a\nb\nc\nd\n")
        return fc.categorical_column_with_vocabulary_file("cat", path, vocabulary_size=4)
    if kind == "hash_bucket":
        return fc.categorical_column_with_hash_bucket("cat", 5)
    if kind == "identity":
        return fc.categorical_column_with_identity("idx", 5)
    if kind == "crossed":
        return fc.crossed_column(["cat", fc.bucketized_column(fc.numeric_column("x1"), [0.5])], hash_bucket_size=7)
    if kind == "weighted_categorical":
        return fc.weighted_categorical_column(fc.categorical_column_with_identity("idx", 5), "cat_weight")
    raise AssertionError(kind)


def columns(specs: list[dict], workdir: str, api: str, invalid: str | None) -> list:
    """The drawn feature columns; categorical ones wrapped as drawn when the model takes dense columns only."""
    result = []
    for column in specs:
        base = _base_column(column["kind"], workdir)
        wrap = column.get("wrap")
        if wrap == "indicator":
            base = tf.feature_column.indicator_column(base)
        elif wrap and wrap.startswith("embedding"):
            base = tf.feature_column.embedding_column(base, dimension=2, combiner=wrap.split("_")[1])
        elif wrap == "shared_embedding":
            result.extend(tf.feature_column.shared_embeddings([base], dimension=2))
            continue
        result.append(base)
    if invalid == "missing_feature":
        result.append(tf.feature_column.numeric_column("missing"))
    return result


def optimizer(choice: dict, api: str) -> Any:
    """The optimizer argument in the drawn form (None: the estimator's default)."""
    form, name, lr = choice["form"], choice["name"], choice["lr"]
    if form == "default":
        return None
    if form == "name":
        return name
    if form == "tf1":
        return getattr(tf.compat.v1.train, TF1_OPTIMIZERS[name])(lr)
    if form == "legacy_instance":
        return getattr(tf.keras.optimizers.legacy, KERAS_OPTIMIZERS[name])(learning_rate=lr)
    if api == "v1":
        if form == "callable":
            return lambda: getattr(tf.compat.v1.train, TF1_OPTIMIZERS[name])(lr)
        return lambda: getattr(tf.compat.v1.train, TF1_OPTIMIZERS[name])(
            tf.compat.v1.train.exponential_decay(lr, tf.compat.v1.train.get_global_step(), 2, 0.5)
        )
    if form == "instance":  # TF 2.15 refused these (TF 2.10 took them): docs/estimator.md
        return getattr(tf.keras.optimizers, KERAS_OPTIMIZERS[name])(learning_rate=lr)
    legacy_class = getattr(tf.keras.optimizers.legacy, KERAS_OPTIMIZERS[name])
    if form == "callable":
        return lambda: legacy_class(learning_rate=lr)
    return legacy_class(learning_rate=tf.keras.optimizers.schedules.ExponentialDecay(lr, 2, 0.5))


def reduction(spec: dict) -> Any:
    name = "NONE" if spec.get("invalid") == "reduction_none" else spec.get("loss_reduction", "default")
    if name == "default":
        return None
    return getattr((tf.compat.v1.losses if spec.get("api") == "v1" else tf.losses).Reduction, name)


def head(spec: dict) -> Any:
    """A head object for the *Estimator classes."""
    kwargs: dict[str, Any] = {}
    if spec["weight_column"]:
        kwargs["weight_column"] = "wt"
    if reduction(spec) is not None:
        kwargs["loss_reduction"] = reduction(spec)
    vocab = {"binary": ["no", "yes"], "multiclass": ["lo", "mid", "hi"]}.get(spec["head"])
    if spec.get("label_vocabulary"):
        kwargs["label_vocabulary"] = vocab
    kind = spec["head"]
    if kind == "binary":
        return tf.estimator.BinaryClassHead(**kwargs)
    if kind == "multiclass":
        return tf.estimator.MultiClassHead(3, **kwargs)
    if kind == "regression":
        return tf.estimator.RegressionHead(label_dimension=spec["label_dimension"], **kwargs)
    if kind == "multi_label":
        return tf.estimator.MultiLabelHead(3, **kwargs)
    if kind == "poisson":
        return tf.estimator.PoissonRegressionHead(**kwargs)
    if kind == "logistic":
        return tf.estimator.LogisticRegressionHead(**kwargs)
    return tf.estimator.MultiHead([tf.estimator.BinaryClassHead(name="a"), tf.estimator.RegressionHead(name="b")])


def _canned_kwargs(spec: dict, workdir: str) -> dict:
    name, api, invalid = spec["class"], spec["api"], spec.get("invalid")
    kwargs: dict[str, Any] = {}
    if name.endswith("Estimator"):
        kwargs["head"] = head(spec)
    else:
        if name.endswith("Classifier"):
            kwargs["n_classes"] = 1 if invalid == "n_classes_1" else spec["n_classes"]
            if spec.get("label_vocabulary"):
                kwargs["label_vocabulary"] = ["no", "yes"] if spec["head"] == "binary" else ["lo", "mid", "hi"]
        else:
            kwargs["label_dimension"] = 0 if invalid == "label_dimension_0" else spec["label_dimension"]
        if spec["weight_column"]:
            kwargs["weight_column"] = "wt"
        if reduction(spec) is not None:
            kwargs["loss_reduction"] = reduction(spec)
    opt = "NoSuchOptimizer" if invalid == "bad_optimizer_name" else optimizer(spec["optimizer"], api)
    linear = columns(spec.get("linear_columns", []), workdir, api, invalid)
    dnn = columns(spec.get("dnn_columns", []), workdir, api, invalid)
    if name.startswith("DNNLinear"):
        kwargs.update(linear_feature_columns=linear, dnn_feature_columns=dnn, dnn_hidden_units=spec["hidden_units"])
        kwargs.update(dnn_dropout=spec["dropout"], dnn_activation_fn=getattr(tf.nn, spec["activation"]))
        kwargs["linear_sparse_combiner"] = spec["sparse_combiner"]
        lin_opt = optimizer(spec["linear_optimizer"], api)
        kwargs.update({k: v for k, v in (("dnn_optimizer", opt), ("linear_optimizer", lin_opt)) if v is not None})
        if spec.get("batch_norm"):
            kwargs["batch_norm"] = True
        return kwargs
    if name.startswith("DNN"):
        kwargs.update(feature_columns=dnn, hidden_units=spec["hidden_units"], dropout=spec["dropout"])
        kwargs["activation_fn"] = getattr(tf.nn, spec["activation"])
        if spec.get("batch_norm"):
            kwargs["batch_norm"] = True
    elif name.startswith("Linear"):
        kwargs.update(feature_columns=linear, sparse_combiner=spec["sparse_combiner"])
    if opt is not None:
        kwargs["optimizer"] = opt
    return kwargs


def _all_columns(spec: dict, workdir: str) -> list:
    found = columns(spec.get("linear_columns", []) + spec.get("dnn_columns", []) + spec.get("columns", []),
                    workdir, spec.get("api", "v2"), None)  # fmt: skip
    return found


# ---------------------------------------------------------------- model_fns


class RecordingHook(tf.compat.v1.train.SessionRunHook):
    """What a hook sees: its calls in order (collapsed) and the global step after each run."""

    def __init__(self, log: list, stop_after: int | None = None, counter: bool = False) -> None:
        self.log, self.stop_after, self.counter, self.first = log, stop_after, counter, None

    def begin(self) -> None:
        self.log.append("begin")
        self.step = tf.compat.v1.train.get_global_step()
        self.count = None
        if self.counter:
            self.count = tf.compat.v1.Variable(0, trainable=False, name="hook_counter",
                                               collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES])  # fmt: skip
            self.increment = self.count.assign_add(1)

    def after_create_session(self, session, coord) -> None:
        self.log.append("after_create_session")

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs({"count": self.increment} if self.count is not None else {})

    def after_run(self, run_context, run_values) -> None:
        # read after the step: fetched beside the train op, the variable's read would race its increment
        step = None if self.step is None else run_context.session.run(self.step)
        self.log.append(["run", plain(step), plain(run_values.results.get("count"))])
        self.first = step if self.first is None else self.first
        if self.stop_after is not None and step is not None and step >= self.first + self.stop_after:
            run_context.request_stop()

    def end(self, session) -> None:
        self.log.append(["end"] + ([plain(session.run(self.count))] if self.count is not None else []))


class RecordingListener(tf.estimator.CheckpointSaverListener):
    def __init__(self, log: list) -> None:
        self.log = log

    def begin(self) -> None:
        self.log.append("begin")

    def before_save(self, session, global_step_value) -> None:
        self.log.append(["before_save", plain(global_step_value)])

    def after_save(self, session, global_step_value) -> None:
        self.log.append(["after_save", plain(global_step_value)])

    def end(self, session, global_step_value) -> None:
        self.log.append(["end", plain(global_step_value)])


def _net(spec: dict, features: dict, feature_columns: list) -> tf.Tensor:
    if spec.get("input_layer") == "input_layer" and feature_columns:
        return tf.compat.v1.feature_column.input_layer(features, feature_columns)
    return tf.stack([tf.cast(features["x0"], tf.float32), tf.cast(features["x1"], tf.float32)], axis=1)


def _body(spec: dict, net: tf.Tensor, units: int, mode: str) -> tf.Tensor:
    body, train = spec.get("body", "layers"), mode == tf.estimator.ModeKeys.TRAIN
    if body == "get_variable":
        with tf.compat.v1.variable_scope("model"):
            w = tf.compat.v1.get_variable("w", [net.shape[-1], 4], initializer=tf.compat.v1.glorot_uniform_initializer())
            b = tf.compat.v1.get_variable("b", [4], initializer=tf.compat.v1.zeros_initializer())
            hidden = tf.nn.relu(tf.matmul(net, w) + b)
            w2 = tf.compat.v1.get_variable("w2", [4, units])
            return tf.matmul(hidden, w2)
    if body == "keras_layers":
        hidden = tf.keras.layers.Dense(4, activation="relu")(net)
        return tf.keras.layers.Dense(units)(hidden)
    # Keras 2's default initializers drew their seeds from Python's `random` (TF 2.15 does not repeat itself)
    seeded = {"kernel_initializer": tf.compat.v1.glorot_uniform_initializer(seed=1)}
    init = seeded if spec.get("initializer") == "seeded" else {}
    hidden = tf.compat.v1.layers.dense(net, 4, activation=tf.nn.relu, name="hidden", **init)
    if body == "batch_norm":
        hidden = tf.compat.v1.layers.batch_normalization(hidden, training=train, name="bn")
    if body == "dropout":
        hidden = tf.compat.v1.layers.dropout(hidden, rate=0.3, training=train)
    return tf.compat.v1.layers.dense(hidden, units, name="logits", **init)


def _tf1_optimizer(spec: dict) -> Any:
    train, lr = tf.compat.v1.train, spec["lr"]
    name = spec["custom_optimizer"]
    if name == "Momentum":
        return train.MomentumOptimizer(lr, 0.9)
    if name == "decayed":
        return train.GradientDescentOptimizer(train.exponential_decay(lr, train.get_global_step(), 2, 0.5))
    return getattr(train, name + "Optimizer")(lr)


def _outputs(spec: dict, labels: Any, logits: tf.Tensor) -> tuple[dict, Any]:
    """Predictions, and the loss when there are labels."""
    if spec["head"] == "regression":
        predictions = {"predictions": logits}
        loss = None if labels is None else tf.compat.v1.losses.mean_squared_error(labels, logits)
        return predictions, loss
    predictions = {"logits": logits, "probabilities": tf.nn.softmax(logits), "class_ids": tf.argmax(logits, 1)}
    loss = None if labels is None else tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    return predictions, loss


def custom_model_fn(spec: dict, feature_columns: list, logs: dict) -> Any:
    """A model_fn of the kind TF 1.x programs wrote, composed as drawn."""
    extras = spec.get("extras", [])

    def model_fn(features, labels, mode, params):
        units = spec["n_classes"] if spec["head"] != "regression" else 1
        if spec["head"] == "regression" and labels is not None:
            labels = tf.reshape(labels, [-1, 1])
        logits = _body(spec, _net(spec, features, feature_columns), units, mode)
        predictions, loss = _outputs(spec, labels, logits)
        kmean = tf.keras.metrics.Mean(name="kmean") if spec["metrics"] == "keras_metric_object" else None
        if mode == tf.estimator.ModeKeys.PREDICT:
            export_outputs = None
            if "export_outputs" in extras:
                head_output = (tf.estimator.export.RegressionOutput(logits) if spec["head"] == "regression"
                               else tf.estimator.export.ClassificationOutput(scores=predictions["probabilities"]))  # fmt: skip
                export_outputs = {"serving_default": head_output,
                                  "everything": tf.estimator.export.PredictOutput(predictions)}  # fmt: skip
            return tf.estimator.EstimatorSpec(mode, predictions=predictions, export_outputs=export_outputs)
        if "summary" in extras:
            tf.compat.v1.summary.scalar("my_loss", loss)
            tf.compat.v1.summary.histogram("my_logits", logits)
        metrics: dict[str, Any] = {}
        if spec["metrics"] == "v1_metrics":
            if spec["head"] == "regression":
                metrics["mae"] = tf.compat.v1.metrics.mean_absolute_error(labels, logits)
            else:
                metrics["acc"] = tf.compat.v1.metrics.accuracy(labels, predictions["class_ids"])
            metrics["mean_logit"] = tf.compat.v1.metrics.mean(logits)
        elif kmean is not None:
            kmean.update_state(loss)
            metrics["kmean"] = kmean
        if mode == tf.estimator.ModeKeys.EVAL:
            hooks = [RecordingHook(logs.setdefault("spec_eval_hook", []))] if "evaluation_hook" in extras else None
            return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics, evaluation_hooks=hooks)
        opt = _tf1_optimizer(spec)
        with tf.control_dependencies(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)):
            train_op = opt.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
        hooks = [RecordingHook(logs.setdefault("spec_training_hook", []))] if "training_hook" in extras else None
        scaffold = None
        if "scaffold_saver" in extras:
            scaffold = tf.compat.v1.train.Scaffold(saver=tf.compat.v1.train.Saver(max_to_keep=2, sharded=True))
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=hooks, scaffold=scaffold)

    return model_fn


def tpu_model_fn(spec: dict) -> Any:
    def model_fn(features, labels, mode, params):
        units = spec["n_classes"] if spec["head"] != "regression" else 1
        if spec["head"] == "regression" and labels is not None:
            labels = tf.reshape(labels, [-1, 1])
        logits = _body(spec, _net(spec, features, []), units, mode)
        predictions, loss = _outputs(spec, labels, logits)
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(mode, predictions=predictions)
        if mode == tf.estimator.ModeKeys.EVAL:

            def metric_fn(labels, logits):
                return {"mean_logit": tf.compat.v1.metrics.mean(logits)}

            return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))
        train_op = _tf1_optimizer(spec).minimize(loss, global_step=tf.compat.v1.train.get_global_step())
        return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    return model_fn


# ---------------------------------------------------------------- Keras models for model_to_estimator


def keras_model(spec: dict) -> Any:
    """A compiled Keras model with weights drawn from the seed (each Keras draws its initial weights its own way)."""
    layers = tf.keras.layers
    if spec.get("start") == "seeded_initializers":  # the initial weights are the initializers', seeded
        tf.keras.utils.set_random_seed(spec["data_seed"])
    units, activation = {"binary": (1, "sigmoid"), "multiclass": (3, "softmax")}.get(spec["head"], (1, None))
    if spec["model"] == "sequential":
        model = tf.keras.Sequential([tf.keras.Input(shape=(2,), name="v"), layers.Dense(4, activation="relu"),
                                     layers.Dense(units, activation=activation)])  # fmt: skip
    else:
        inputs = tf.keras.Input(shape=(2,), name="v")
        hidden = layers.Dense(4, activation="relu")(inputs)
        outputs: Any = layers.Dense(units, activation=activation, name="out_a")(hidden)
        if spec["model"] == "two_outputs":
            outputs = [outputs, layers.Dense(1, name="out_b")(hidden)]
        model = tf.keras.Model(inputs, outputs)
    if spec.get("start") != "seeded_initializers":
        rng = np.random.RandomState(spec["data_seed"] + 1)
        model.set_weights([(rng.standard_normal(w.shape) * 0.5).astype("float32") for w in model.get_weights()])
    name, class_name = KERAS_LOSSES[spec["head"]]
    loss: Any = {"name": name, "function": getattr(tf.keras.losses, name)}.get(spec["loss"])
    if loss is None:
        huber = spec["loss"] == "huber_delta" and spec["head"] == "regression"
        loss = tf.keras.losses.Huber(delta=0.5) if huber else getattr(tf.keras.losses, class_name)()
    kwargs: dict[str, Any] = {}
    if spec["model"] == "two_outputs":
        loss = [loss, "mse"] if spec["seed"] % 2 else {"out_a": loss, "out_b": "mse"}
        if spec["loss_weights"]:
            kwargs["loss_weights"] = [0.7, 1.3]
    metrics = {"none": None, "accuracy": ["accuracy"], "mse": ["mse"], "weighted": ["mse"],
               "object": [tf.keras.metrics.MeanAbsoluteError()]}[spec["keras_metrics"]]  # fmt: skip
    if spec["keras_metrics"] == "weighted":
        kwargs["weighted_metrics"] = ["mse"]
    opt: Any = spec["optimizer_name"].lower()
    if spec["keras_optimizer"] == "instance":
        opt = getattr(tf.keras.optimizers, KERAS_OPTIMIZERS[spec["optimizer_name"]])(learning_rate=0.05)
    model.compile(optimizer=opt, loss=loss, metrics=metrics, **kwargs)
    return model


# ---------------------------------------------------------------- the estimator


def run_config(spec: dict, model_dir: str | None = None) -> Any:
    config = dict(spec["config"])
    kwargs: dict[str, Any] = {"tf_random_seed": spec["tf_random_seed"], "model_dir": model_dir}
    kwargs["keep_checkpoint_max"] = config["keep_checkpoint_max"] or 5
    kwargs["save_summary_steps"] = config["save_summary_steps"]
    kwargs["log_step_count_steps"] = config["log_step_count_steps"]
    if config["save_checkpoints_steps"]:
        kwargs["save_checkpoints_steps"] = config["save_checkpoints_steps"]
    if spec.get("invalid") == "checkpoint_both":
        kwargs.update(save_checkpoints_steps=2, save_checkpoints_secs=10)
    if spec.get("strategy") == "mirrored":  # as TF 2.15 needed it on 2 cores (docs/distribution.md)
        kwargs["train_distribute"] = tf.distribute.MirroredStrategy(
            ["/cpu:0", "/cpu:1"], cross_device_ops=tf.distribute.ReductionToOneDevice()
        )
        kwargs["session_config"] = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=8, device_count={"CPU": 2})
    if spec["family"] == "tpu":
        tpu = tf.compat.v1.estimator.tpu
        loops = 1 + spec["seed"] % 2
        return tpu.RunConfig(tpu_config=tpu.TPUConfig(iterations_per_loop=loops), **kwargs)
    return tf.estimator.RunConfig(**kwargs)


def estimator(spec: dict, model_dir: str, workdir: str, logs: dict, warm_start_from: Any = None) -> Any:
    """The drawn Estimator over `model_dir`."""
    config = run_config(spec, workdir + "/elsewhere" if spec.get("invalid") == "model_dir_conflict" else None)
    if spec.get("invalid") == "warm_start_missing" and warm_start_from is None:
        warm_start_from = os.path.join(workdir, "no_such_folder")
    family = spec["family"]
    common = {"model_dir": model_dir, "config": config}
    if warm_start_from is not None:
        common["warm_start_from"] = warm_start_from
    if family == "canned":
        api = tf.estimator if spec["api"] == "v2" else tf.compat.v1.estimator
        return getattr(api, spec["class"])(**common, **_canned_kwargs(spec, workdir))
    if family == "custom":
        fn = custom_model_fn(spec, columns(spec["columns"], workdir, "v2", spec.get("invalid")), logs)
        return tf.estimator.Estimator(fn, params={"units": 4}, **common)
    if family == "keras":
        tf.keras.backend.clear_session()
        return tf.keras.estimator.model_to_estimator(keras_model=keras_model(spec), **common)
    if family == "tpu":
        return tf.compat.v1.estimator.tpu.TPUEstimator(tpu_model_fn(spec), use_tpu=False, train_batch_size=8,
                                                       eval_batch_size=8, predict_batch_size=2, **common)  # fmt: skip
    experiment = spec["experiment"]
    if experiment == "rnn":
        seq = [tf.feature_column.sequence_numeric_column("seq")]
        return tf.estimator.experimental.RNNClassifier(seq, units=[3], cell_type="lstm", **common)
    if experiment == "kmeans":
        return tf.compat.v1.estimator.experimental.KMeans(2, seed=spec["tf_random_seed"], **common)
    sdca = tf.compat.v1.estimator.experimental.LinearSDCA("example_id", symmetric_l2_regularization=0.1)
    fc = tf.feature_column
    return tf.estimator.LinearClassifier([fc.numeric_column("x0"), fc.numeric_column("x1")], optimizer=sdca, **common)


def receiver(spec: dict, workdir: str, parsing: bool) -> Any:
    """A serving input receiver of the drawn kind over the features the model reads."""
    features, _ = dataset(spec)
    if spec.get("experiment") == "kmeans":
        return tf.estimator.export.build_raw_serving_input_receiver_fn(
            {"v": tf.compat.v1.placeholder(tf.float32, [None, 2])}
        )
    if spec.get("experiment") == "rnn":
        return tf.estimator.export.build_parsing_serving_input_receiver_fn({"seq": tf.io.VarLenFeature(tf.float32)})
    if parsing and spec["family"] in ("canned",) and _all_columns(spec, workdir):
        return tf.estimator.export.build_parsing_serving_input_receiver_fn(
            tf.feature_column.make_parse_example_spec(_all_columns(spec, workdir))
        )

    def placeholders() -> dict:
        return {k: tf.compat.v1.placeholder(tf.string if v.dtype == object else tf.as_dtype(v.dtype),
                                            [None, *v.shape[1:]], name=k) for k, v in features.items()}  # fmt: skip

    if parsing:
        spec_ = {k: tf.io.FixedLenFeature(v.shape[1:], tf.string if v.dtype == object else tf.as_dtype(v.dtype))
                 for k, v in features.items()}  # fmt: skip
        return tf.estimator.export.build_parsing_serving_input_receiver_fn(spec_)
    if spec["seed"] % 2:  # the two ways programs wrote a raw receiver: by hand, and through the builder in a graph

        def by_hand() -> Any:
            tensors = placeholders()
            return tf.estimator.export.ServingInputReceiver(tensors, tensors)

        return by_hand
    return lambda: tf.estimator.export.build_raw_serving_input_receiver_fn(placeholders())()


# ---------------------------------------------------------------- what a user observes


def examples(spec: dict, rows: int) -> list[bytes]:
    """The first rows as serialized tf.train.Examples, for a parsing receiver's export."""
    features, _ = dataset(spec)
    out = []
    for i in range(rows):
        feature = {}
        for key, array in features.items():
            value = np.asarray(array[i]).reshape(-1)
            if array.dtype == object:
                feature[key] = tf.train.Feature(bytes_list=tf.train.BytesList(value=list(value)))
            elif array.dtype.kind == "f":
                feature[key] = tf.train.Feature(float_list=tf.train.FloatList(value=value[value != 0] if key == "seq"
                                                                              else value))  # fmt: skip
            else:
                feature[key] = tf.train.Feature(int64_list=tf.train.Int64List(value=value))
        out.append(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return out


def export_observed(spec: dict, path: str) -> dict:
    """An export's MetaGraph tags and signatures, and what its signatures return for the first rows."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    observed: dict[str, Any] = {"tags": sorted(",".join(sorted(m.meta_info_def.tags)) for m in proto.meta_graphs)}
    serve = next(m for m in proto.meta_graphs if list(m.meta_info_def.tags) == ["serve"])
    observed["signatures"] = {
        key: {"inputs": sorted(f"{k}:{v.dtype}" for k, v in sig.inputs.items()),
              "outputs": sorted(f"{k}:{v.dtype}" for k, v in sig.outputs.items()), "method": sig.method_name}
        for key, sig in serve.signature_def.items()
    }  # fmt: skip
    loaded = tf.saved_model.load(path)
    features, _ = dataset(spec)
    outputs = {}
    for key in sorted(loaded.signatures):
        function = loaded.signatures[key]
        args = function.structured_input_signature[1]
        feed = {}
        for name, arg in args.items():
            if arg.dtype == tf.string and name not in features:
                feed[name] = tf.constant(examples(spec, 4))
            else:
                feed[name] = tf.constant(features[name][:4])
        outputs[key] = {k: plain(np.asarray(v)) for k, v in function(**feed).items()}
    observed["outputs"] = outputs
    return observed


def folder_observed(model_dir: str) -> dict:
    """The model folder as a user lists it: files, checkpoint variables (with sums), kept steps, summary tags."""
    tf.compat.v1.summary.FileWriterCache.clear()  # writers stay open (and unflushed) between Estimator calls
    files: dict[str, int] = {}
    summaries: dict[str, dict[str, list]] = {}
    for root, dirs, names in os.walk(model_dir):
        dirs.sort()
        rel = os.path.relpath(root, model_dir)
        parts = rel.split(os.sep)
        if parts[0].startswith("export") or parts[0] == "keras":
            rel = os.sep.join(parts[:2]) if len(parts) > 1 and not parts[1].isdigit() else parts[0]
        for name in sorted(names):
            if name.startswith("events.out.tfevents"):
                tags = summaries.setdefault(rel, {})
                try:
                    for event in tf.compat.v1.train.summary_iterator(os.path.join(root, name)):
                        for value in event.summary.value:
                            tags.setdefault(value.tag, []).append(int(event.step))
                except tf.errors.DataLossError:
                    tags.setdefault("<truncated>", []).append(0)
                name = "events.out.tfevents"
            # how many shards a checkpoint's data has depends on the devices, and no user reads it
            name = re.sub(r"\.data-\d{5}-of-\d{5}$", ".data", name)
            key = os.path.normpath(os.path.join(rel, name))
            files[key] = 1 if name.endswith(".data") else files.get(key, 0) + 1
    observed: dict[str, Any] = {"files": files, "summaries": summaries}
    state = tf.train.get_checkpoint_state(model_dir)
    if state is not None and not tf.io.gfile.glob(state.model_checkpoint_path + ".index"):
        observed["kept"] = "the checkpoint file names a checkpoint that is not there"
    elif state is not None:
        observed["kept"] = [os.path.basename(p) for p in state.all_model_checkpoint_paths]
        variables = {}
        for name, shape in tf.train.list_variables(state.model_checkpoint_path):
            value = tf.train.load_variable(state.model_checkpoint_path, name)
            entry: list = [list(shape)]
            if isinstance(value, np.ndarray) and value.dtype.kind in "fiu":
                entry += [plain(np.sum(value, dtype=np.float64)), plain(np.sum(np.abs(value), dtype=np.float64))]
            elif np.isscalar(value) and not isinstance(value, (bytes, str)):
                entry += [plain(value)]
            variables[name] = entry
        observed["variables"] = variables
    return observed


# ---------------------------------------------------------------- operations


def operations(spec: dict) -> list[dict]:
    """The drawn operations, with the drawn invalid argument (if any) put where a user would put it."""
    ops = [dict(op) for op in spec["ops"]]
    invalid = spec.get("invalid")
    if invalid == "steps_zero":
        ops[0] = {"op": "train", "steps": 0}
    elif invalid == "steps_and_max_steps":
        ops[0] = {"op": "train", "steps": 2, "max_steps": 5}
    elif invalid == "eval_steps_zero":
        ops.insert(1, {"op": "evaluate", "steps": 0})
    elif invalid == "bad_predict_key":
        ops.append({"op": "predict_keys", "keys": ["no_such_key"]})
    elif invalid == "no_receiver":
        ops.append({"op": "export_none"})
    elif invalid == "evaluate_untrained":
        ops.insert(0, {"op": "evaluate", "steps": 1})
    return ops


class Run:
    """One program: its Estimator, hooks' logs, and the operations' outcomes."""

    def __init__(self, spec: dict, workdir: str, from_folder: str | None) -> None:
        self.spec, self.workdir, self.from_folder = spec, workdir, from_folder
        self.model_dir = os.path.join(workdir, "model")
        self.logs: dict[str, list] = {}
        self.estimator: Any = None

    def hooks(self, where: str) -> list:
        drawn, log = self.spec["hooks"], self.logs.setdefault
        hooks: list = []
        if where == "train":
            if "recording" in drawn:
                hooks.append(RecordingHook(log("recording", [])))
            if "stop_request" in drawn:
                hooks.append(RecordingHook(log("stop_request", []), stop_after=1))
            if "op_running" in drawn:
                hooks.append(RecordingHook(log("op_running", []), counter=True))
            if "logging_tensor" in drawn:
                hooks.append(tf.compat.v1.train.LoggingTensorHook({"step": "global_step:0"}, every_n_iter=2))
            if "stop_at_step" in drawn:
                hooks.append(tf.compat.v1.train.StopAtStepHook(num_steps=2))
        elif f"{where}_hook" in drawn:
            hooks.append(RecordingHook(log(f"{where}_hook", [])))
        return hooks

    def step(self) -> int | None:
        latest = tf.train.latest_checkpoint(self.model_dir)
        return None if latest is None else int(latest.rsplit("-", 1)[1])

    def train(self, est: Any, **steps: Any) -> None:
        listeners = [RecordingListener(self.logs.setdefault("listener", []))] if "listener" in self.spec["hooks"] else None
        est.train(input_fn(self.spec, "train"), hooks=self.hooks("train"), saving_listeners=listeners, **steps)

    def evaluate(self, est: Any, op: dict) -> dict:
        kwargs = {k: op[k] for k in ("steps", "name", "checkpoint_path") if op.get(k) is not None}
        return plain(est.evaluate(input_fn(self.spec, "eval"), hooks=self.hooks("eval"), **kwargs))

    def predict(self, keys: list | None = None, single: bool = True) -> list:
        found = self.estimator.predict(input_fn(self.spec, "predict"), predict_keys=keys, hooks=self.hooks("predict"),
                                       yield_single_examples=single)  # fmt: skip
        return [plain(p) for p, _ in zip(found, range(PREDICT_ROWS))]

    def export(self, parsing: bool | None) -> dict:
        fn = None if parsing is None else receiver(self.spec, self.workdir, parsing)
        path = self.estimator.export_saved_model(os.path.join(self.workdir, "export"), fn)
        return export_observed(self.spec, path.decode() if isinstance(path, bytes) else path)

    def operation(self, op: dict) -> dict:
        name, spec = op["op"], self.spec
        record: dict[str, Any] = {"op": name}
        if name == "train":
            self.train(self.estimator, **{k: op[k] for k in ("steps", "max_steps") if k in op})
            record["global_step"] = self.step()
        elif name == "train_and_evaluate":
            exporters = [tf.estimator.LatestExporter("latest", receiver(spec, self.workdir, False), exports_to_keep=2)]
            train_spec = tf.estimator.TrainSpec(input_fn(spec, "train"), max_steps=op["max_steps"], hooks=self.hooks("train"))
            eval_spec = tf.estimator.EvalSpec(input_fn(spec, "eval"), steps=2, start_delay_secs=0, throttle_secs=0,
                                              exporters=exporters if op["exporter"] else None)  # fmt: skip
            metrics, exports = tf.estimator.train_and_evaluate(self.estimator, train_spec, eval_spec)
            record.update(metrics=plain(metrics), exports=len(exports or []), global_step=self.step())
        elif name.startswith("evaluate"):
            if name == "evaluate_named":
                op = {**op, "name": "holdout"}
            if name == "evaluate_checkpoint":
                op = {**op, "checkpoint_path": tf.train.get_checkpoint_state(self.model_dir).all_model_checkpoint_paths[0]}
            record["metrics"] = self.evaluate(self.estimator, op)
        elif name == "predict":
            record["predictions"] = self.predict()
        elif name == "predict_keys":
            keys = op.get("keys") or sorted(self.predict()[0], key=str)[:1]
            record["predictions"] = self.predict(keys)
        elif name == "predict_batched":
            record["predictions"] = self.predict(single=False)[:2]
        elif name.startswith("export"):
            record["export"] = self.export({"export_parsing": True, "export_raw": False}.get(name))
        elif name.startswith("warm_start") or name == "continue_from_folder":
            record.update(self.second_estimator(name))
        return record

    def second_estimator(self, name: str) -> dict:
        """Warm-starting from the folder, or training on in a copy of it (TF 2.15's copy when the runner gives one)."""
        if self.spec["family"] == "keras" and name.startswith("warm_start"):
            return {"skipped": "model_to_estimator takes no warm_start_from"}
        if name == "continue_from_folder":
            model_dir = os.path.join(self.workdir, "continued")
            shutil.copytree(self.from_folder or self.model_dir, model_dir)
            warm = None
        else:
            model_dir = os.path.join(self.workdir, name)
            warm = self.model_dir
            if name == "warm_start_settings":
                warm = tf.estimator.WarmStartSettings(self.model_dir, vars_to_warm_start=".*(kernel|weights|bias).*")
        est = estimator(self.spec, model_dir, self.workdir, self.logs, warm_start_from=warm)
        self.train(est, steps=2 if name == "continue_from_folder" else 1)
        step = tf.train.latest_checkpoint(model_dir)
        return {"global_step": int(step.rsplit("-", 1)[1]), "metrics": self.evaluate(est, {"steps": 1})}

    def run(self) -> dict:
        result: dict[str, Any] = {"ops": []}
        where = "construct"
        try:
            self.estimator = estimator(self.spec, self.model_dir, self.workdir, self.logs)
            for index, op in enumerate(operations(self.spec)):
                where = f"{index}:{op['op']}"
                result["ops"].append(self.operation(op))
        except Exception as error:  # noqa: BLE001 - the program's first exception is what is compared
            bases = [c.__name__ for c in type(error).__mro__ if c not in (object, BaseException, Exception)]
            message = str(error).strip().splitlines()[0][:300] if str(error).strip() else ""
            result["error"] = {"at": where, "type": type(error).__name__, "bases": bases, "message": message}
        if os.path.isdir(self.model_dir):
            result["folder"] = folder_observed(self.model_dir)
        result["hooks"] = self.logs
        return result


def run(spec: dict, workdir: str, from_folder: str | None = None) -> dict:
    """Runs the program of `spec` in `workdir`; `from_folder` is where `continue_from_folder` copies from."""
    return Run(spec, workdir, from_folder).run()
