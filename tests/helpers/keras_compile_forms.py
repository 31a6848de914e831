"""model_to_estimator over every form Keras 2's `compile` took: metrics and losses by name, as functions, as
objects, per output (lists and dicts), `weighted_metrics`, `loss_weights`, `from_logits` losses, string
optimizers.

    python keras_compile_forms.py WORK_DIR [tf_keras|both] [--case NAME]

Written for TF 2.15, where tf.keras is Keras 2. Here it runs after compat.estimator.install(): with
TF_USE_LEGACY_KERAS=1 tf.keras is Keras 2 (tf_keras) again; without it tf.keras is Keras 3; with the argument
`tf_keras` the models are built from `import tf_keras` whatever tf.keras is (`both`: with tf.keras, then with
tf_keras, in one process; the JSON line then holds both reports by those names). Each case builds a small model from
fixed weights, compiles it in one form, trains 6 steps with model_to_estimator, evaluates and exports; it prints
one JSON line {case: {"metrics": evaluate's dict, "predictions": the first rows, "signatures": ...}}.
Recorded with TensorFlow 2.15 (tests/data/tf215_keras_compile_forms.json):

    TF215_PYTHON tests/helpers/keras_compile_forms.py /tmp/work > tests/data/tf215_keras_compile_forms.json
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf

argv = sys.argv[1:]
ONLY = argv.pop(argv.index("--case") + 1) if "--case" in argv else None
WORK = argv[0]
KERAS = argv[1] if len(argv) > 1 else "tf.keras"  # "tf.keras", "tf_keras", or "both" (one after the other)
K = tf.keras

rng = np.random.default_rng(67)
X = rng.normal(size=(64, 4)).astype("float32")
Y3 = ((X[:, 0] + X[:, 2] > 0).astype("int64") + (X[:, 1] > 1).astype("int64"))  # 3 classes
Y2 = (X[:, 0] - X[:, 3] > 0).astype("int64")  # binary
YR = (X @ np.array([0.5, -1.0, 0.3, 2.0], "float32") + 0.1).astype("float32")[:, None]
W = rng.uniform(0.2, 2.0, size=(64,)).astype("float32")


def dense_model(units, activation=None, outputs=1):
    inputs = K.Input((4,), name="x")
    hidden = K.layers.Dense(6, activation="relu", name="hidden")(inputs)
    heads = [K.layers.Dense(units, activation=activation, name=f"out{i}" if outputs > 1 else "out")(hidden)
             for i in range(outputs)]
    model = K.Model(inputs, heads if outputs > 1 else heads[0])
    seeded = np.random.default_rng(5)
    model.set_weights([seeded.normal(size=w.shape).astype("float32") * 0.4 for w in model.get_weights()])
    return model


def one_hot(labels, depth):
    return np.eye(depth, dtype="float32")[labels]


# name -> (model maker, compile kwargs maker, labels, weighted)
CASES = {
    "accuracy_sparse_by_name": (lambda: dense_model(3, "softmax"),
                                lambda: dict(optimizer="adam", loss="sparse_categorical_crossentropy",
                                             metrics=["accuracy"]), Y3, False),
    "acc_and_sparse_accuracy_names": (lambda: dense_model(3, "softmax"),
                                      lambda: dict(optimizer="sgd", loss="sparse_categorical_crossentropy",
                                                   metrics=["acc", "sparse_categorical_accuracy"]), Y3, False),
    "accuracy_binary": (lambda: dense_model(1, "sigmoid"),
                        lambda: dict(optimizer="rmsprop", loss="binary_crossentropy",
                                     metrics=["accuracy", "binary_accuracy"]), Y2[:, None].astype("float32"), False),
    "accuracy_categorical_one_hot": (lambda: dense_model(3, "softmax"),
                                     lambda: dict(optimizer="adagrad", loss="categorical_crossentropy",
                                                  metrics=["accuracy", "top_k_categorical_accuracy"]),
                                     one_hot(Y3, 3), False),
    "functions": (lambda: dense_model(1),
                  lambda: dict(optimizer=K.optimizers.SGD(0.05), loss=K.losses.mean_squared_error,
                               metrics=[K.metrics.mean_absolute_error, "mape"]), YR, False),
    "metric_objects_from_logits": (lambda: dense_model(3),
                                   lambda: dict(optimizer=K.optimizers.Adam(0.01),
                                                loss=K.losses.SparseCategoricalCrossentropy(from_logits=True),
                                                metrics=[K.metrics.SparseCategoricalAccuracy(name="acc_obj"),
                                                         K.metrics.SparseTopKCategoricalAccuracy(k=2)]), Y3, False),
    "binary_from_logits_auc": (lambda: dense_model(1),
                               lambda: dict(optimizer="adam", loss=K.losses.BinaryCrossentropy(from_logits=True),
                                            metrics=[K.metrics.AUC(name="auc", from_logits=True), "accuracy"]),
                               Y2[:, None].astype("float32"), False),
    "huber_delta": (lambda: dense_model(1),
                    lambda: dict(optimizer=K.optimizers.SGD(0.05), loss=K.losses.Huber(delta=0.5),
                                 metrics=["mae"]), YR, False),
    "weighted_metrics_same_name": (lambda: dense_model(1),
                                   lambda: dict(optimizer="sgd", loss="mse", metrics=["mse"],
                                                weighted_metrics=["mse"]), YR, True),
    "weighted_metrics_only": (lambda: dense_model(1),
                              lambda: dict(optimizer="sgd", loss="mse", weighted_metrics=["mae"]), YR, True),
    "two_outputs_lists": (lambda: dense_model(1, outputs=2),
                          lambda: dict(optimizer="sgd", loss=["mse", "mae"], loss_weights=[0.7, 1.3],
                                       metrics=[["mae"], ["mse"]]), [YR, 2 * YR], False),
    "two_outputs_dicts": (lambda: dense_model(1, outputs=2),
                          lambda: dict(optimizer="sgd", loss={"out0": "mse", "out1": K.losses.Huber(delta=0.3)},
                                       loss_weights={"out0": 2.0, "out1": 0.5},
                                       metrics={"out0": ["mae"], "out1": ["mae", "mse"]}), [YR, 2 * YR], False),
    "two_outputs_one_loss": (lambda: dense_model(1, outputs=2),
                             lambda: dict(optimizer="sgd", loss="mse", loss_weights=[0.7, 1.3], metrics=["mae"]),
                             [YR, 2 * YR], False),
}


def run(name):
    make_model, make_compile, labels, weighted = CASES[name]
    model = make_model()
    model.compile(**make_compile())
    labels_dict = ({n: lab for n, lab in zip(["out0", "out1"], labels)} if isinstance(labels, list) else labels)

    def input_fn(repeat=True):
        features = {"x": X}
        if weighted:
            features = {"features": features, "sample_weights": W}
        dataset = tf.data.Dataset.from_tensor_slices((features, labels_dict))
        return (dataset.repeat() if repeat else dataset).batch(16)

    config = tf.estimator.RunConfig(model_dir=os.path.join(WORK, name), save_checkpoints_steps=100,
                                    save_summary_steps=100)
    estimator = tf.keras.estimator.model_to_estimator(keras_model=model, config=config)
    estimator.train(input_fn, steps=6)
    metrics = estimator.evaluate(lambda: input_fn(False))
    predictions = list(estimator.predict(lambda: tf.data.Dataset.from_tensor_slices({"x": X[:4]}).batch(4)))
    signatures = None
    if name == "accuracy_sparse_by_name":  # the commonest compile: its export's signatures too
        def receiver():
            x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
            return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})

        exported = estimator.export_saved_model(os.path.join(WORK, name + "_export"), receiver).decode()
        signatures = {key: sorted(fn.structured_outputs) for key, fn in tf.saved_model.load(exported).signatures.items()}
    return {
        "signatures": signatures,
        "metrics": {key: float(value) for key, value in metrics.items()},
        "prediction_keys": sorted(predictions[0]),
        "predictions": {key: np.asarray([p[key] for p in predictions]).round(6).tolist() for key in predictions[0]},
    }


def run_or_error(name):
    try:
        return run(name)
    except Exception as error:  # reported per case, so one form's failure does not hide the others'
        return {"error": f"{type(error).__name__}: {error}"[:2000]}


def report_of(keras_name):
    global K, WORK
    if keras_name == "tf_keras":
        import tf_keras as K
    else:
        K = tf.keras
    WORK = os.path.join(argv[0], keras_name)
    return {name: run_or_error(name) for name in CASES if ONLY in (None, name)}


if KERAS == "both":
    print(json.dumps({keras_name: report_of(keras_name) for keras_name in ("tf.keras", "tf_keras")}, sort_keys=True))
else:
    print(json.dumps(report_of(KERAS), sort_keys=True))
