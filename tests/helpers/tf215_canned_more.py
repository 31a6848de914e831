"""TF 2.15's other canned estimators on fixed data: the TF 1.x classes (tf.compat.v1.estimator.DNNClassifier, ...),
KMeans, LinearSDCA and the RNN estimators.

    python tf215_canned_more.py FIXTURES_DIR WORK_DIR [OUT.json] [--record] [--case NAME]

Written for TF 2.15 (`tf.compat.v1.estimator.*`, `tf.estimator.experimental.*`). Recorded with TensorFlow 2.15:

    /work/tf215-venv/bin/python tests/helpers/tf215_canned_more.py tests/data/tf215_canned_more /tmp/work \\
        tests/data/tf215_canned_more.json --record

`--record` first trains each model of the restored cases from scratch into FIXTURES_DIR/<case> (the TF 2.15 model
folders kept in tests/data: their checkpoints); then, with or without it, each case
  - restored: copies its folder to WORK_DIR, predicts, evaluates, trains TRAIN_ON more steps and predicts again
    (variable and slot names, the restored values, the loss reduction and the optimizer's updates: DNNs start from
    random values, so only a restored folder makes the numbers comparable);
  - scratch: trains from scratch where the result does not depend on random values (zero-initialised linear and
    baseline models, k-means from given or seeded centers, SDCA run to its optimum).
It prints the results as one JSON line (and writes OUT.json); the tests run it after compat.estimator.install()
and compare with tests/data/tf215_canned_more.json.
"""
import json
import os
import shutil
import sys

import numpy as np
import tensorflow as tf

argv = sys.argv[1:]
RECORD = "--record" in argv
ONLY = None  # one case (a name below, "linear_scratch", "kmeans" or "sdca"), else all
if "--case" in argv:
    ONLY = argv.pop(argv.index("--case") + 1)
positional = [a for a in argv if not a.startswith("--")]
FIXTURES, WORK = positional[:2]
OUT = positional[2] if len(positional) > 2 else None
STEPS, TRAIN_ON = 5, 5

v1 = tf.compat.v1
rng = np.random.default_rng(21)
N = 48
X = rng.normal(size=(N, 2)).astype("float32")
WORDS = np.array(["red", "green", "blue"])[(X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5).astype(int)]
CLASS3 = ((X[:, 0] > 0).astype("int32") + (X[:, 1] > 0.5).astype("int32"))
CLASS2 = (X @ np.array([1.5, -1.0]) > 0.2).astype("int32")
TARGET = (X @ np.array([2.0, -1.0]) + 0.5).astype("float32")
TARGET2 = np.stack([TARGET, 1.0 - TARGET], axis=1)
WEIGHTS = rng.uniform(0.5, 2.0, size=N).astype("float32")
IDS = np.array([f"example-{i}" for i in range(N)])
FEATURES = {"x": X, "x0": X[:, 0], "word": WORDS[:, None], "wt": WEIGHTS, "id": IDS}
PROBE = {key: value[:6] for key, value in FEATURES.items()}


def train_input(labels, batch=16):
    return lambda: tf.data.Dataset.from_tensor_slices((FEATURES, labels)).repeat().batch(batch)


def eval_input(labels):
    return lambda: tf.data.Dataset.from_tensor_slices((FEATURES, labels)).batch(16)


def probe_input():
    return tf.data.Dataset.from_tensor_slices(PROBE).batch(3)


def floats(value):
    return np.asarray(value, float).round(6).tolist()


def predictions(est, keys, input_fn=probe_input):
    rows = list(est.predict(input_fn))
    return {key: [floats(row[key]) for row in rows] for key in keys}


def metrics(est, input_fn):
    return {key: float(value) for key, value in est.evaluate(input_fn).items()}


# -- TF 1.x feature columns (tf.compat.v1.feature_column) and TF2 ones ----------------------------------------------
numeric_v1 = v1.feature_column.numeric_column("x", shape=(2,))
word_v1 = v1.feature_column.categorical_column_with_vocabulary_list("word", ["red", "green", "blue"])
bucket_v1 = v1.feature_column.bucketized_column(v1.feature_column.numeric_column("x0"), [-1.0, 0.0, 1.0])
numeric = tf.feature_column.numeric_column("x", shape=(2,))
word = tf.feature_column.categorical_column_with_vocabulary_list("word", ["red", "green", "blue"])
bucket = tf.feature_column.bucketized_column(tf.feature_column.numeric_column("x0"), [-1.0, 0.0, 1.0])
E = v1.estimator

# (make(model_dir), labels, prediction keys)
RESTORED = {
    "dnn_classifier_v1": (lambda d: E.DNNClassifier(
        [4, 3], [numeric_v1, v1.feature_column.embedding_column(word_v1, 2)], model_dir=d, n_classes=3,
        batch_norm=True), CLASS3, ["probabilities", "logits"]),
    "dnn_regressor_v1": (lambda d: E.DNNRegressor(
        [3], [numeric, tf.feature_column.indicator_column(word)], model_dir=d, label_dimension=2, weight_column="wt",
        optimizer="Adam", loss_reduction=v1.losses.Reduction.MEAN), TARGET2, ["predictions"]),
    "linear_classifier_v1": (lambda d: E.LinearClassifier([numeric_v1, word_v1, bucket_v1], model_dir=d),
                             CLASS2, ["probabilities", "logits"]),
    "linear_regressor_v1": (lambda d: E.LinearRegressor(
        [numeric, bucket], model_dir=d, weight_column="wt",
        optimizer=v1.train.ProximalAdagradOptimizer(0.1, l1_regularization_strength=0.01)), TARGET, ["predictions"]),
    "combined_classifier_v1": (lambda d: E.DNNLinearCombinedClassifier(
        model_dir=d, linear_feature_columns=[word_v1, bucket_v1], dnn_feature_columns=[numeric_v1],
        dnn_hidden_units=[3]), CLASS2, ["probabilities"]),
    "combined_regressor_v1": (lambda d: E.DNNLinearCombinedRegressor(
        model_dir=d, linear_feature_columns=[numeric], dnn_feature_columns=[numeric],
        dnn_hidden_units=[2], dnn_optimizer="SGD", loss_reduction=v1.losses.Reduction.SUM_OVER_BATCH_SIZE),
        TARGET, ["predictions"]),
    "combined_estimator_v1": (lambda d: E.DNNLinearCombinedEstimator(
        tf.estimator.MultiClassHead(3), model_dir=d, dnn_feature_columns=[numeric], dnn_hidden_units=[3]),
        CLASS3, ["probabilities"]),
    "baseline_classifier_v1": (lambda d: E.BaselineClassifier(model_dir=d, n_classes=3), CLASS3, ["probabilities"]),
    "baseline_regressor_v1": (lambda d: E.BaselineRegressor(model_dir=d, label_dimension=2, optimizer="SGD"),
                              TARGET2, ["predictions"]),
    "baseline_estimator_v1": (lambda d: E.BaselineEstimator(tf.estimator.BinaryClassHead(), model_dir=d),
                              CLASS2, ["logistic"]),
}

# -- RNN: a numeric sequence of 1 to 4 steps, a context value ------------------------------------------------------
T = 4
LENGTHS = rng.integers(1, T + 1, size=24)
LENGTHS[::3] = T  # every batch holds a full sequence: the mask of a shorter batch would be shorter than its steps
STEP_VALUES = rng.normal(size=(24, T)).astype("float32")
SEQ_CLASS = (STEP_VALUES[np.arange(24), LENGTHS - 1] > 0).astype("int32")
STEP_CLASS = (STEP_VALUES > 0).astype("int32")
CONTEXT = rng.normal(size=(24, 1)).astype("float32")


def rnn_features(rows=slice(None)):
    count = len(range(24)[rows])
    indices = [[i, t] for i, row in enumerate(range(24)[rows]) for t in range(LENGTHS[row])]
    values = [STEP_VALUES[list(range(24)[rows])[i], t] for i, t in indices]
    sparse = tf.sparse.SparseTensor(np.array(indices, "int64"), np.array(values, "float32"), [count, T])
    return {"seq": sparse, "ctx": CONTEXT[rows]}


def rnn_input(labels, repeat=True):
    def input_fn():
        dataset = tf.data.Dataset.from_tensor_slices((rnn_features(), labels))
        return (dataset.repeat() if repeat else dataset).batch(8)
    return input_fn


def rnn_probe():
    return tf.data.Dataset.from_tensor_slices(rnn_features(slice(0, 6))).batch(3)


sequence = tf.feature_column.sequence_numeric_column("seq")
context = tf.feature_column.numeric_column("ctx")
EX = tf.estimator.experimental
RNN = {
    "rnn_classifier": (lambda d: EX.RNNClassifier([sequence], [context], units=[3], cell_type="lstm", model_dir=d),
                       SEQ_CLASS, ["probabilities", "logits"]),
    "rnn_estimator": (lambda d: EX.RNNEstimator(tf.estimator.RegressionHead(), [sequence], units=2, cell_type="gru",
                                                model_dir=d, optimizer="SGD"),
                      STEP_VALUES[np.arange(24), LENGTHS - 1], ["predictions"]),
    "rnn_sequences": (lambda d: EX.RNNClassifier([sequence], units=[2, 2], return_sequences=True, model_dir=d,
                                                 n_classes=3),
                      np.minimum(STEP_CLASS + (STEP_VALUES > 1), 2).astype("int32"), ["probabilities"]),
}


def restored_case(name, make, labels, keys, train_fn, eval_fn, probe_fn):
    fixture = os.path.join(FIXTURES, name)
    if RECORD:
        shutil.rmtree(fixture, ignore_errors=True)
        make(fixture).train(train_fn, steps=STEPS)
        for entry in os.listdir(fixture):  # the checkpoint alone
            if not entry.startswith(("checkpoint", "model.ckpt-")):
                path = os.path.join(fixture, entry)
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    folder = os.path.join(WORK, name)
    shutil.copytree(fixture, folder)
    est = make(folder)
    result = {"before": predictions(est, keys, probe_fn), "eval": metrics(est, eval_fn)}
    est.train(train_fn, steps=TRAIN_ON)
    result.update(after=predictions(est, keys, probe_fn), step=int(est.get_variable_value("global_step")),
                  variables=sorted(est.get_variable_names()))
    return result


def linear_scratch():
    """Zero-initialised models trained from scratch: the same updates give the same weights."""
    results = {}
    for name in ("linear_classifier_v1", "linear_regressor_v1", "baseline_classifier_v1", "baseline_regressor_v1"):
        make, labels, keys = RESTORED[name]
        est = make(os.path.join(WORK, "scratch_" + name))
        est.train(train_input(labels), steps=STEPS)
        results[name] = predictions(est, keys)
    return results


KMEANS_DATA_MEANS = ([0, 0], [3, 3], [0, 4])  # 20 points drawn around each


def kmeans_cases():
    rng_points = np.random.default_rng(5)
    points = np.concatenate([rng_points.normal(c, 0.3, size=(20, 2)) for c in KMEANS_DATA_MEANS])
    points = points.astype("float32")
    KMeans = v1.estimator.experimental.KMeans

    def repeated():
        return tf.data.Dataset.from_tensors(points).repeat()

    def once():
        return tf.data.Dataset.from_tensors(points)

    def batches():
        return tf.data.Dataset.from_tensor_slices({"a": points[:, :1], "b": points[:, 1:]}).shuffle(
            60, seed=1).repeat().batch(20)

    def dict_once():
        return tf.data.Dataset.from_tensors({"a": points[:, :1], "b": points[:, 1:]})

    cases = {
        "given_full_batch": (dict(initial_clusters=points[[0, 25, 45]], use_mini_batch=False), repeated, once),
        "given_mini_batch": (dict(initial_clusters=points[[0, 25, 45]], mini_batch_steps_per_iteration=2),
                             repeated, once),
        "kmeans_plus_plus": (dict(initial_clusters=KMeans.KMEANS_PLUS_PLUS_INIT, seed=3, use_mini_batch=False),
                             repeated, once),
        "random_cosine": (dict(initial_clusters=KMeans.RANDOM_INIT, seed=7,
                               distance_metric=KMeans.COSINE_DISTANCE), repeated, once),
        "dict_features": (dict(initial_clusters=points[[0, 25, 45]], relative_tolerance=1e-3), batches,
                          dict_once),
    }
    results = {}
    for name, (settings, train_fn, probe_fn) in cases.items():
        folder = os.path.join(WORK, "kmeans_" + name)
        km = KMeans(3, model_dir=folder, **settings)
        km.train(train_fn, steps=8)
        results[name] = {"centers": floats(km.cluster_centers()), "score": float(km.score(probe_fn)),
                         "index": [int(i) for i in km.predict_cluster_index(probe_fn)],
                         "transform": [floats(t) for t in km.transform(probe_fn)],
                         "step": int(km.get_variable_value("global_step")),
                         "variables": sorted(km.get_variable_names())}
    return results


def sdca_cases():
    """SDCA's kernel visits examples in a random order: runs to the optimum (the same for any order) compare."""
    SDCA = tf.estimator.experimental.LinearSDCA
    cases = {
        "classifier": (lambda d: tf.estimator.LinearClassifier(
            [numeric, word, bucket], model_dir=d, optimizer=SDCA("id", symmetric_l2_regularization=2.0,
                                                                 symmetric_l1_regularization=0.1)), CLASS2),
        "regressor": (lambda d: tf.estimator.LinearRegressor(
            [numeric, word], model_dir=d, weight_column="wt",
            optimizer=SDCA("id", symmetric_l2_regularization=4.0, num_table_shards=2)), TARGET),
        "classifier_v1": (lambda d: v1.estimator.LinearClassifier(
            [numeric, word], model_dir=d, optimizer=v1.estimator.experimental.LinearSDCA(
                "id", symmetric_l2_regularization=2.0)), CLASS2),
    }
    results = {}
    for name, (make, labels) in cases.items():
        est = make(os.path.join(WORK, "sdca_" + name))
        est.train(train_input(labels, batch=N), steps=30)
        results[name] = {
            "weights": {n: floats(est.get_variable_value(n)) for n in est.get_variable_names()
                        if n.startswith("linear/linear_model/")},
            "variables": sorted(est.get_variable_names()), "eval": metrics(est, eval_input(labels))}
    return results


results = {}
for name, (make, labels, keys) in RESTORED.items():
    if ONLY in (None, name):
        results[name] = restored_case(name, make, labels, keys, train_input(labels), eval_input(labels), probe_input)
for name, (make, labels, keys) in RNN.items():
    if ONLY in (None, name):
        results[name] = restored_case(name, make, labels, keys, rnn_input(labels), rnn_input(labels, repeat=False),
                                      rnn_probe)
if ONLY in (None, "linear_scratch"):
    results["linear_scratch"] = linear_scratch()
if ONLY in (None, "kmeans"):
    results["kmeans"] = kmeans_cases()
if ONLY in (None, "sdca"):
    results["sdca"] = sdca_cases()
results["tensorflow"] = tf.__version__
if OUT:
    with open(OUT, "w") as stream:
        json.dump(results, stream, indent=1, sort_keys=True)
print(json.dumps(results))
