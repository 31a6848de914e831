"""From Estimator to Keras 3: the converted model predicts what the Estimator predicted, and stays a model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pandas  # the linear tutorial's own container
import pytest
import tensorflow as tf

import compat.estimator as estimator
import compat.estimator.v1 as estimator_v1
from conftest import REPO

FIXTURES = os.path.join(REPO, "..", "shared", "fixtures", "tf215")
X = np.random.RandomState(0).randn(48, 3).astype("float32")
Y3 = ((X[:, 0] > 0).astype("int32") + (X[:, 1] > 0).astype("int32"))
FEATURES = {"a": X[:, :2], "b": X[:, 2:]}
COLUMNS = [tf.feature_column.numeric_column("b"), tf.feature_column.numeric_column("a", shape=(2,))]


def _train(model, labels, steps=15):
    model.train(estimator.inputs.numpy_input_fn(FEATURES, labels, batch_size=16, num_epochs=None, shuffle=True),
                max_steps=steps)
    return model


def _predicted(model) -> dict:
    rows = list(model.predict(estimator.inputs.numpy_input_fn(FEATURES, shuffle=False)))
    return {key: np.stack([row[key] for row in rows]) for key in rows[0]}


@pytest.mark.parametrize("kind", ["multiclass", "binary", "regressor"])
def test_a_dnn_over_numeric_columns_becomes_a_native_keras_model_with_its_predictions(tmp_path, kind):
    if kind == "regressor":
        model = estimator.DNNRegressor([8, 4], COLUMNS, model_dir=str(tmp_path / "run"))
        labels = X[:, :1] * 2.0
    else:
        classes = 3 if kind == "multiclass" else 2
        model = estimator.DNNClassifier([8, 4], COLUMNS, n_classes=classes, model_dir=str(tmp_path / "run"))
        labels = Y3 % classes
    expected = _predicted(_train(model, labels))
    converted = estimator.to_keras(model)
    assert not any("TFSMLayer" in type(layer).__name__ for layer in converted.layers)  # native layers only
    got = converted.predict({"a": FEATURES["a"], "b": FEATURES["b"]}, verbose=0)
    for key, value in got.items():
        np.testing.assert_allclose(value, expected[key], rtol=1e-5, atol=1e-5, err_msg=key)
    # A model of its own: saved as .keras, loaded by Keras alone, trained on with fit.
    converted.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    again = loaded.predict({"a": FEATURES["a"], "b": FEATURES["b"]}, verbose=0)
    np.testing.assert_allclose(again["logits" if kind != "regressor" else "predictions"],
                               expected["logits" if kind != "regressor" else "predictions"], rtol=1e-5, atol=1e-5)
    output = "predictions" if kind == "regressor" else "logits"
    loss = "mse" if kind == "regressor" else keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    trainable = keras.Model(loaded.input, loaded.output[output])
    trainable.compile("adam", loss=loss if kind != "binary" else keras.losses.BinaryCrossentropy(from_logits=True))
    history = trainable.fit({"a": FEATURES["a"], "b": FEATURES["b"]}, labels, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_a_model_to_estimator_estimator_becomes_its_keras_model_with_the_trained_weights(tmp_path):
    def build():
        inputs = keras.Input((3,), name="x")
        model = keras.Model(inputs, keras.layers.Dense(3)(keras.layers.Dense(8, activation="relu")(inputs)))
        model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model

    model = estimator.model_to_estimator(build(), model_dir=str(tmp_path / "run"))
    model.train(estimator.inputs.numpy_input_fn({"x": X}, Y3, batch_size=16, num_epochs=None, shuffle=True),
                max_steps=12)
    rows = list(model.predict(estimator.inputs.numpy_input_fn({"x": X}, shuffle=False)))
    expected = np.stack([next(iter(row.values())) for row in rows])
    for converted in (estimator.to_keras(model), estimator.to_keras(str(tmp_path / "run"), keras_model=build())):
        np.testing.assert_allclose(converted.predict(X, verbose=0), expected, rtol=1e-5, atol=1e-5)
        assert converted.optimizer is not None  # compiled as it was: fit goes on from here
    with pytest.raises(ValueError, match="does not record its model's architecture: pass keras_model="):
        estimator.to_keras(str(tmp_path / "run"))


def _model_fn(features, labels, mode):
    logits = tf.compat.v1.layers.dense(features["x"], 3, name="out")
    if mode == estimator.ModeKeys.PREDICT:
        return estimator.EstimatorSpec(mode, predictions={"logits": logits, "top": tf.argmax(logits, -1)})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    step = tf.compat.v1.train.get_global_step()
    return estimator.EstimatorSpec(mode, loss=loss,
                                   train_op=tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, step))


def test_a_custom_model_fn_becomes_a_keras_model_over_its_export_and_the_command_saves_one(tmp_path):
    model = estimator.Estimator(_model_fn, model_dir=str(tmp_path / "run"))
    model.train(estimator.inputs.numpy_input_fn({"x": X}, Y3, batch_size=16, num_epochs=None, shuffle=True),
                max_steps=10)
    expected = [row["logits"] for row in model.predict(estimator.inputs.numpy_input_fn({"x": X}, shuffle=False))]
    def receiver():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
        return estimator.export.ServingInputReceiver({"x": x}, {"x": x})

    with pytest.raises(ValueError, match="pass serving_input_receiver_fn="):
        estimator.to_keras(model)
    converted = estimator.to_keras(model, serving_input_receiver_fn=receiver)
    got = converted({"x": tf.constant(X)})
    np.testing.assert_allclose(got["logits"], np.stack(expected), rtol=1e-5, atol=1e-5)
    assert set(got) == {"logits", "top"}  # the export's output keys, as serving clients read them

    export_dir = model.export_saved_model(str(tmp_path / "export"), receiver).decode()
    out = tmp_path / "model.keras"
    result = subprocess.run([sys.executable, "-m", "compat.estimator.to_keras", export_dir, str(out)],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    # Keras loads a layer over an external SavedModel only when asked to (safe_mode=False); importing
    # compat.estimator.to_keras registers the layer: in a fresh process, as a user loads it
    np.save(tmp_path / "x.npy", X)
    fresh = subprocess.run(
        [sys.executable, "-c", "import sys, numpy as np, keras, compat.estimator.to_keras; "
         "model = keras.saving.load_model(sys.argv[1], safe_mode=False); "
         "np.save(sys.argv[3], np.asarray(model({'x': np.load(sys.argv[2])})['logits']))",
         str(out), str(tmp_path / "x.npy"), str(tmp_path / "logits.npy")],
        capture_output=True, text=True, cwd=REPO, timeout=300)
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    np.testing.assert_allclose(np.load(tmp_path / "logits.npy"), np.stack(expected), rtol=1e-5, atol=1e-5)
    # a model folder without exports: one line, exit 2, nothing written
    refused = tmp_path / "refused.keras"
    bad = subprocess.run([sys.executable, "-m", "compat.estimator.to_keras", str(tmp_path / "run"), str(refused)],
                         capture_output=True, text=True, cwd=REPO)
    assert bad.returncode == 2 and "holds no SavedModel export" in bad.stderr.strip().splitlines()[-1]
    assert not refused.exists() and not [name for name in os.listdir(tmp_path) if name.startswith(".")]
    # a folder of exports converts its newest
    newest = tmp_path / "newest.keras"
    result = subprocess.run([sys.executable, "-m", "compat.estimator.to_keras", str(tmp_path / "export"), str(newest)],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0 and export_dir in result.stdout, result.stderr[-2000:]


@pytest.mark.skipif(not os.path.isdir(FIXTURES), reason="TF 2.15's model folders (maintainers' fixtures) not here")
def test_tf_2_15s_dnn_classifier_folder_becomes_a_keras_model_with_tf_2_15s_predictions(tmp_path):
    folder = shutil.copytree(os.path.join(FIXTURES, "dnn_classifier"), tmp_path / "dnn")
    expected = json.loads(open(os.path.join(folder, "expected.json")).read())
    probe = np.array(json.loads(expected["probe_inputs"]) if isinstance(expected["probe_inputs"], str)
                     else expected["probe_inputs"], np.float32)
    model = estimator.DNNClassifier([16, 8], [tf.feature_column.numeric_column("x", shape=(4,))], n_classes=3,
                                    model_dir=str(folder))
    got = estimator.to_keras(model).predict({"x": probe}, verbose=0)
    predictions = expected["predictions"]
    if isinstance(predictions, str):
        import ast

        predictions = ast.literal_eval(predictions)
    np.testing.assert_allclose(got["probabilities"], np.array(predictions["probabilities"]), atol=1e-5)
    np.testing.assert_array_equal(got["class_ids"], np.array(predictions["class_ids"]))


@pytest.mark.skipif(not os.path.isdir(FIXTURES), reason="TF 2.15's model folders (maintainers' fixtures) not here")
def test_tf_2_15s_model_to_estimator_folder_becomes_its_keras_model_with_tf_2_15s_predictions(tmp_path):
    """The folder gives the weights, the team's own code the architecture: TF 2.15 can be retired."""
    import ast

    folder = shutil.copytree(os.path.join(FIXTURES, "keras"), tmp_path / "keras")
    expected = json.loads(open(os.path.join(folder, "expected.json")).read())
    probe = np.array(expected["probe_inputs"], np.float32)
    inputs = keras.Input((4,), name="x")
    net = keras.layers.Dense(8, activation="relu")(keras.layers.Dense(16, activation="relu")(inputs))
    built = keras.Model(inputs, keras.layers.Dense(3, name="logits")(net))
    built.compile(keras.optimizers.Adam(0.01), keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    converted = estimator.to_keras(str(folder), keras_model=built)
    predictions = expected["predictions"]
    logits = (ast.literal_eval(predictions) if isinstance(predictions, str) else predictions)["logits"]
    np.testing.assert_allclose(converted.predict(probe, verbose=0), np.array(logits), atol=1e-5)


LINEAR_COLUMNS = [tf.feature_column.numeric_column("a", shape=(2,)),
                  tf.feature_column.bucketized_column(tf.feature_column.numeric_column("b"), [-0.5, 0.0, 0.5])]


@pytest.mark.parametrize("kind", ["multiclass", "binary", "regressor"])
def test_a_linear_model_over_numeric_and_bucketized_columns_becomes_native_keras_layers(tmp_path, kind):
    if kind == "regressor":
        model = estimator.LinearRegressor(LINEAR_COLUMNS, model_dir=str(tmp_path / "run"))
        labels, key = X[:, :1] * 2.0 + (X[:, 2:] > 0), "predictions"
    else:
        classes = 3 if kind == "multiclass" else 2
        model = estimator.LinearClassifier(LINEAR_COLUMNS, n_classes=classes, model_dir=str(tmp_path / "run"))
        labels, key = Y3 % classes, "probabilities"
    expected = _predicted(_train(model, labels, steps=30))
    converted = estimator.to_keras(model)
    got = converted.predict(FEATURES, verbose=0)
    np.testing.assert_allclose(got[key], expected[key], rtol=1e-5, atol=1e-5)
    converted.save(tmp_path / "model.keras")
    np.testing.assert_allclose(keras.saving.load_model(tmp_path / "model.keras").predict(FEATURES, verbose=0)[key],
                               expected[key], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("column", ["int_vocabulary_oov", "identity_default", "max_norm", "own_hash_key"])
def test_columns_whose_keras_ids_would_differ_from_tfs_are_named_not_converted(tmp_path, column):
    """Where Keras' layers would not give TF's ids (or vectors), the Estimator converts through its export."""
    fc = tf.feature_column
    size = fc.categorical_column_with_identity("size", 4)
    made = {
        "int_vocabulary_oov": fc.categorical_column_with_vocabulary_list("code", [3, 5, 7], num_oov_buckets=2),
        "identity_default": fc.categorical_column_with_identity("size", 4, default_value=0),
        "max_norm": fc.embedding_column(size, 2, max_norm=1.0),
        "own_hash_key": fc.crossed_column(["tag", size], 11, hash_key=7),
    }[column]
    model = (estimator.DNNClassifier([4], [made], model_dir=str(tmp_path / "run")) if column == "max_norm"
             else estimator.LinearClassifier([made], model_dir=str(tmp_path / "run")))
    with pytest.raises(ValueError, match=f"no native Keras form here: {made.name}: pass serving_input"):
        estimator.to_keras(model)


def test_a_column_keras_has_no_native_layer_for_here_is_named_and_the_export_path_offered(tmp_path):
    weighted = tf.feature_column.weighted_categorical_column(
        tf.feature_column.categorical_column_with_identity("colour", 4), "weight")
    model = estimator.LinearClassifier([weighted], model_dir=str(tmp_path / "run"))
    with pytest.raises(ValueError, match="no native Keras form here: colour_weighted_by_weight: pass serving_input"):
        estimator.to_keras(model)


RNG = np.random.RandomState(3)
# seen and unseen categories: "pink" and "grey" are out of every vocabulary (hashed, or dropped)
COLOURS = np.array([[c] for c in RNG.choice(["red", "blue", "green", "pink", "grey"], 60)])
SIZES = RNG.randint(0, 4, size=(60, 1)).astype("int64")
CATEGORICAL_FEATURES = {"x": RNG.randn(60, 1).astype("float32"), "colour": COLOURS, "size": SIZES,
                        "tag": np.array([[t] for t in RNG.choice(["a", "b", "c", "d"], 60)])}
CATEGORICAL_LABELS = ((COLOURS[:, 0] == "red") | (SIZES[:, 0] == 2)).astype("int32")


def _categorical_columns(oov_buckets: int):
    colour = tf.feature_column.categorical_column_with_vocabulary_list(
        "colour", ["red", "blue", "green"], num_oov_buckets=oov_buckets)
    size = tf.feature_column.categorical_column_with_identity("size", 4)
    tag = tf.feature_column.categorical_column_with_hash_bucket("tag", 5)
    return colour, size, tag


@pytest.mark.parametrize("oov_buckets", [0, 2])
def test_categorical_columns_become_keras_lookups_with_the_estimators_predictions(tmp_path, oov_buckets):
    """Vocabulary (with hashed or dropped unknowns), identity and hash bucket columns: as indicator and
    embedding columns of a DNN, and directly in a linear model."""
    colour, size, tag = _categorical_columns(oov_buckets)
    fc = tf.feature_column
    models = {
        "dnn": estimator.DNNClassifier([6], [fc.numeric_column("x"), fc.indicator_column(colour),
                                             fc.embedding_column(colour, 3), fc.indicator_column(size),
                                             fc.embedding_column(tag, 2)], model_dir=str(tmp_path / "dnn")),
        "linear": estimator.LinearClassifier([fc.numeric_column("x"), colour, size, tag],
                                             model_dir=str(tmp_path / "linear")),
    }
    for name, model in models.items():
        model.train(estimator.inputs.numpy_input_fn(CATEGORICAL_FEATURES, CATEGORICAL_LABELS, batch_size=20,
                                                    num_epochs=None, shuffle=True), max_steps=30)
        rows = list(model.predict(estimator.inputs.numpy_input_fn(CATEGORICAL_FEATURES, shuffle=False)))
        expected = np.stack([row["probabilities"] for row in rows])
        converted = estimator.to_keras(model)
        converted.save(tmp_path / f"{name}.keras")
        reloaded = keras.saving.load_model(tmp_path / f"{name}.keras")
        # strings reach Keras as tensors (NumPy's fixed-width str arrays are not a Keras dtype)
        got = reloaded.predict({k: tf.constant(v) for k, v in CATEGORICAL_FEATURES.items()}, verbose=0)
        got = got["probabilities"]
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.skipif(not os.path.isdir(FIXTURES), reason="TF 2.15's model folders (maintainers' fixtures) not here")
def test_tf_2_15s_linear_regressor_folder_becomes_keras_layers_with_tf_2_15s_predictions(tmp_path):
    import ast

    folder = shutil.copytree(os.path.join(FIXTURES, "linear_regressor"), tmp_path / "linear")
    expected = json.loads(open(os.path.join(folder, "expected.json")).read())
    probe = {key: np.array(value, np.float32) for key, value in expected["probe_inputs"].items()}
    columns = [tf.feature_column.numeric_column("x", shape=(4,)),
               tf.feature_column.bucketized_column(tf.feature_column.numeric_column("x0"), [-1.0, 0.0, 1.0])]
    model = estimator.LinearRegressor(columns, model_dir=str(folder))
    predictions = expected["predictions"]
    values = (ast.literal_eval(predictions) if isinstance(predictions, str) else predictions)["predictions"]
    got = estimator.to_keras(model).predict(probe, verbose=0)["predictions"]
    np.testing.assert_allclose(got, np.array(values), atol=1e-5)


@pytest.mark.skipif(not os.path.isdir(FIXTURES), reason="TF 2.15's model folders (maintainers' fixtures) not here")
def test_tf_2_15s_custom_model_fn_folder_converts_through_its_export_with_tf_2_15s_predictions(tmp_path, installed):
    import ast

    sys.path.insert(0, os.path.join(REPO, "tests", "helpers"))
    try:
        from tf215_model_fn import model_fn
    finally:
        sys.path.pop(0)
    folder = shutil.copytree(os.path.join(FIXTURES, "model_fn"), tmp_path / "model_fn")
    expected = json.loads(open(os.path.join(folder, "expected.json")).read())
    settings = expected["settings"] if isinstance(expected["settings"], dict) else ast.literal_eval(expected["settings"])
    model = estimator.Estimator(model_fn, model_dir=str(folder), params=settings["params"])

    def receiver():
        x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
        return estimator.export.ServingInputReceiver({"x": x}, {"x": x})

    converted = estimator.to_keras(model, serving_input_receiver_fn=receiver)
    predictions = expected["predictions"]
    want = (ast.literal_eval(predictions) if isinstance(predictions, str) else predictions)["probabilities"]
    got = converted({"x": tf.constant(np.array(expected["probe_inputs"], np.float32))})["probabilities"]
    np.testing.assert_allclose(got, np.array(want), atol=1e-5)


def test_what_cannot_convert_natively_says_why_and_a_folder_without_a_checkpoint_writes_nothing(tmp_path):
    """Native conversion only where the Keras layers compute exactly what the Estimator did."""
    untrained = tmp_path / "empty"
    untrained.mkdir()
    with pytest.raises(ValueError, match="holds no checkpoint"):
        estimator.to_keras(str(untrained), keras_model=keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)]))
    assert os.listdir(untrained) == []  # nothing written into the folder
    own = estimator.DNNClassifier([4], COLUMNS, activation_fn=lambda x: tf.nn.relu(x) * 2,
                                  model_dir=str(tmp_path / "own"))
    with pytest.raises(ValueError, match="activation_fn .* has no Keras activation"):
        estimator.to_keras(own)
    wide = tf.feature_column.bucketized_column(tf.feature_column.numeric_column("a", shape=(2,)), [0.0])
    averaged = estimator.LinearRegressor([wide], sparse_combiner="mean", model_dir=str(tmp_path / "mean"))
    with pytest.raises(ValueError, match="sparse_combiner='mean' over the multi-valued bucketized"):
        estimator.to_keras(averaged)


# -- every canned class, over every column kind a team used -------------------------------------------------------

ROWS = np.random.RandomState(7)
N = 400  # the first 200 rows train, the other 200 are held out
KINDS = {
    "x": ROWS.randn(N, 1).astype("float32"),
    "a": ROWS.randn(N, 2).astype("float32"),
    "age": ROWS.uniform(-1, 1, (N, 1)).astype("float32"),
    "colour": ROWS.choice(["red", "blue", "green", "pink"], (N, 1)),
    "city": ROWS.choice(["paris", "rome", "oslo", "lima"], (N, 1)),
    "tag": ROWS.choice(["a", "b", "c", "d", "e"], (N, 1)),
    "size": ROWS.randint(0, 4, (N, 1)).astype("int64"),
}
SCORE = KINDS["x"][:, 0] + (KINDS["colour"][:, 0] == "red") - (KINDS["age"][:, 0] > 0.3) + 0.5 * (KINDS["size"][:, 0] == 2)


def _every_column_kind(tmp_path):
    fc = tf.feature_column
    vocabulary_file = tmp_path / "cities.txt"
    vocabulary_file.write_text("paris\nrome\noslo\n")
    age = fc.bucketized_column(fc.numeric_column("age"), [-0.5, 0.0, 0.5])
    colour = fc.categorical_column_with_vocabulary_list("colour", ["red", "blue", "green"], num_oov_buckets=1)
    city = fc.categorical_column_with_vocabulary_file("city", str(vocabulary_file), vocabulary_size=3)
    tag = fc.categorical_column_with_hash_bucket("tag", 7)
    size = fc.categorical_column_with_identity("size", 4)
    age_x_colour = fc.crossed_column([age, "colour"], 16)
    size_x_tag = fc.crossed_column([size, "tag"], 11)
    numeric = [fc.numeric_column("x"), fc.numeric_column("a", shape=(2,)), age]
    linear = numeric + [colour, city, tag, size, age_x_colour, size_x_tag]
    dnn = numeric + [fc.indicator_column(colour), fc.embedding_column(city, 3), fc.embedding_column(tag, 2),
                     fc.indicator_column(size), fc.indicator_column(age_x_colour), fc.embedding_column(size_x_tag, 2)]
    return linear, dnn


def _canned(name: str, directory: str, linear: list, dnn: list):
    """One canned Estimator by class name (`v1.` for tf.compat.v1's), three classes or two label dimensions."""
    module = estimator_v1 if name.startswith("v1.") else estimator
    cls = getattr(module, name.split(".")[-1])
    target = {"n_classes": 3} if "Classifier" in name else {"label_dimension": 2}
    if "Combined" in name:
        return cls(directory, linear_feature_columns=linear[3:], dnn_feature_columns=dnn[:3] + dnn[4:6],
                   dnn_hidden_units=[8], **target)
    if "DNN" in name:
        return cls([8, 4], dnn, model_dir=directory, **target)
    if "Linear" in name:
        return cls(linear, model_dir=directory, **target)
    return cls(directory, **target)  # a Baseline


CANNED = [f"{prefix}{model}{head}" for prefix in ("", "v1.") for model in ("DNN", "Linear", "DNNLinearCombined",
                                                                           "Baseline")
          for head in ("Classifier", "Regressor")]


@pytest.mark.parametrize("name", CANNED)
def test_every_canned_class_becomes_native_keras_with_its_predictions_on_held_out_rows(tmp_path, name):
    linear, dnn = _every_column_kind(tmp_path)
    model = _canned(name, str(tmp_path / "run"), linear, dnn)
    classifier = "Classifier" in name
    labels = (np.digitize(SCORE, [-0.3, 0.7]).astype("int32") if classifier
              else np.stack([SCORE, KINDS["a"][:, 0]], axis=1).astype("float32"))
    train = {key: value[:200] for key, value in KINDS.items()}
    held_out = {key: value[200:] for key, value in KINDS.items()}
    model.train(estimator.inputs.numpy_input_fn(train, labels[:200], batch_size=50, num_epochs=None, shuffle=True),
                max_steps=40)
    rows = list(model.predict(estimator.inputs.numpy_input_fn(held_out, shuffle=False)))
    key = "probabilities" if classifier else "predictions"
    expected = np.stack([row[key] for row in rows])

    converted = estimator.to_keras(model)
    assert not any("TFSMLayer" in type(layer).__name__ for layer in converted.layers)  # native layers only
    converted.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    baseline = "Baseline" in name

    def inputs(features):
        if baseline:
            return {"batch": np.zeros((len(features["x"]), 1), "float32")}
        return {key: tf.constant(features[key]) for key in loaded.input}

    got = loaded.predict(inputs(held_out), verbose=0)
    np.testing.assert_allclose(got[key], expected, rtol=1e-5, atol=1e-5)
    if classifier:
        np.testing.assert_array_equal(got["class_ids"][:, 0], np.stack([row["class_ids"][0] for row in rows]))

    # trained on natively: full-batch gradient steps lower the loss on the training rows
    output = "logits" if classifier else "predictions"
    trainable = keras.Model(loaded.input, loaded.output[output])
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True) if classifier else "mse"
    trainable.compile(keras.optimizers.SGD(0.05), loss=loss)
    before = trainable.evaluate(inputs(train), labels[:200], batch_size=200, verbose=0)
    weights = [weight.numpy().copy() for weight in trainable.trainable_weights]
    trainable.fit(inputs(train), labels[:200], batch_size=200, epochs=5, shuffle=False, verbose=0)
    after = trainable.evaluate(inputs(train), labels[:200], batch_size=200, verbose=0)
    # the weights move and the loss does not rise (a Baseline's bias may already sit at the optimum, where
    # five small steps change the loss by less than float32 shows)
    assert any(not np.array_equal(old, new.numpy()) for old, new in zip(weights, trainable.trainable_weights))
    assert after <= before, (before, after)


def _signature_defs(export_dir: str) -> dict:
    """{name: (method, {input key: dtype}, {output key: dtype})}, read from the SavedModel's own proto."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString(open(os.path.join(export_dir, "saved_model.pb"), "rb").read())
    (graph,) = [meta for meta in saved.meta_graphs if "serve" in meta.meta_info_def.tags]
    # `__saved_model_init_op` is TF2's own entry for initializing tables, no signature a client calls
    return {name: (sig.method_name, {key: info.dtype for key, info in sig.inputs.items()},
                   {key: info.dtype for key, info in sig.outputs.items()})
            for name, sig in graph.signature_def.items() if name != "__saved_model_init_op"}


def _examples(features: dict) -> tf.Tensor:
    rows = []
    for index in range(len(features["x"])):
        feature = {"x": tf.train.Feature(float_list=tf.train.FloatList(value=features["x"][index])),
                   "colour": tf.train.Feature(bytes_list=tf.train.BytesList(value=[features["colour"][index][0].encode()]))}
        rows.append(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return tf.constant(rows)


@pytest.mark.parametrize("name", ["DNNClassifier", "LinearClassifier", "DNNRegressor", "v1.BaselineClassifier"])
def test_the_converted_models_export_keeps_the_estimators_signatures_for_serving_clients(tmp_path, name):
    fc = tf.feature_column
    colour = fc.categorical_column_with_vocabulary_list("colour", ["red", "blue", "green"])
    columns = ([fc.numeric_column("x"), fc.indicator_column(colour)] if "DNN" in name
               else [fc.numeric_column("x"), colour])
    module = estimator_v1 if name.startswith("v1.") else estimator
    cls = getattr(module, name.split(".")[-1])
    classifier = "Classifier" in name
    settings = {"n_classes": 2, "label_vocabulary": ["no", "yes"]} if classifier else {}
    if "Baseline" in name:
        model = cls(str(tmp_path / "run"), **settings)
    elif "DNN" in name:
        model = cls([4], columns, model_dir=str(tmp_path / "run"), **settings)
    else:
        model = cls(columns, model_dir=str(tmp_path / "run"), **settings)
    features = {"x": KINDS["x"][:200], "colour": KINDS["colour"][:200]}
    labels = np.where(SCORE[:200] > 0.3, "yes", "no") if classifier else SCORE[:200].astype("float32")
    model.train(estimator.inputs.numpy_input_fn(features, labels, batch_size=50, num_epochs=None, shuffle=True),
                max_steps=20)
    spec = fc.make_parse_example_spec([fc.numeric_column("x"), colour])
    theirs = model.export_saved_model(str(tmp_path / "estimator_export"),
                                      estimator.export.build_parsing_serving_input_receiver_fn(spec)).decode()
    converted = estimator.to_keras(model)
    ours = estimator.export_keras_saved_model(converted, str(tmp_path / "keras_export"), like=theirs,
                                              estimator=model)
    assert os.path.dirname(ours) == str(tmp_path / "keras_export")
    assert _signature_defs(ours) == _signature_defs(theirs)  # names, methods, input and output keys and dtypes
    # and the same answers, signature by signature, for the same serialized examples
    serialized = _examples({key: value[:20] for key, value in features.items()})
    theirs_loaded, ours_loaded = tf.saved_model.load(theirs), tf.saved_model.load(ours)
    for signature, (_, inputs, outputs) in _signature_defs(theirs).items():
        (key,) = inputs
        want = theirs_loaded.signatures[signature](**{key: serialized})
        got = ours_loaded.signatures[signature](**{key: serialized})
        for output in outputs:
            if want[output].dtype == tf.string:
                np.testing.assert_array_equal(got[output].numpy(), want[output].numpy(), err_msg=output)
            else:
                np.testing.assert_allclose(got[output].numpy(), want[output].numpy(), rtol=1e-5, atol=1e-5,
                                           err_msg=f"{signature}: {output}")


def _saved_model(folder, names):
    """A SavedModel whose signatures are `names`, each doubling its input `x` (and adding its index)."""
    module = tf.Module()
    signatures = {}
    for index, name in enumerate(names):
        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
        def serve(x, offset=float(index)):
            return {"y": 2.0 * x + offset}

        signatures[name] = serve
    tf.saved_model.save(module, str(folder), signatures=signatures)
    return str(folder)


def test_the_export_route_takes_the_only_signature_or_the_one_named(tmp_path):
    from compat.estimator.to_keras import from_export

    only_predict = _saved_model(tmp_path / "predict_only", ["predict"])
    np.testing.assert_allclose(from_export(only_predict)({"x": tf.constant(X)})["y"], 2.0 * X, rtol=1e-6)
    two = _saved_model(tmp_path / "two", ["first", "second"])
    with pytest.raises(ValueError, match=r"has no signature 'serving_default'; it has \['first', 'second'\]: name one"):
        from_export(two)
    np.testing.assert_allclose(from_export(two, "second")({"x": tf.constant(X)})["y"], 2.0 * X + 1.0, rtol=1e-6)
    out = tmp_path / "second.keras"
    result = subprocess.run([sys.executable, "-m", "compat.estimator.to_keras", two, str(out), "--signature=second"],
                            capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 0 and out.exists(), result.stderr[-2000:]
    refused = subprocess.run([sys.executable, "-m", "compat.estimator.to_keras", two, str(tmp_path / "no.keras")],
                             capture_output=True, text=True, cwd=REPO, timeout=300)
    assert refused.returncode == 2 and "signature=NAME" in refused.stderr and not (tmp_path / "no.keras").exists()


# The shape of TensorFlow's linear-model tutorial (Titanic), fed as 1-D columns through tf.data.
sys.path.insert(0, os.path.join(REPO, "tests", "helpers"))
import tf215_tutorial_models as tutorial_models  # noqa: E402  (the rows and columns both sides use)

PASSENGERS = 240
TITANIC, SURVIVED = tutorial_models.titanic(PASSENGERS, seed=7)


def _titanic_input(epochs=None, shuffle=True):
    dataset = tf.data.Dataset.from_tensor_slices((dict(TITANIC), SURVIVED))
    return (dataset.shuffle(PASSENGERS, seed=1) if shuffle else dataset).batch(32).repeat(epochs)


def _trained_predictions(model, steps=60) -> np.ndarray:
    model.train(_titanic_input, max_steps=steps)
    return np.stack([row["probabilities"] for row in model.predict(lambda: _titanic_input(1, shuffle=False))])


def _titanic_columns():
    fc = tf.feature_column
    categorical = [fc.categorical_column_with_vocabulary_list(key, sorted(set(TITANIC[key].tolist())))
                   for key in ("sex", "n_siblings_spouses", "class", "deck", "alone")]
    return categorical + [fc.numeric_column("age"), fc.numeric_column("fare")]


def test_the_linear_tutorials_two_models_convert_natively_and_take_numpy_strings_and_lists(tmp_path):
    """Its first LinearClassifier, then the same with crossed_column(['age', 'sex'], 100) over raw keys."""
    age_x_gender = tf.feature_column.crossed_column(["age", "sex"], hash_bucket_size=100)
    for name, columns in (("base", _titanic_columns()), ("crossed", _titanic_columns() + [age_x_gender])):
        model = estimator.LinearClassifier(columns, model_dir=str(tmp_path / name))
        expected = _trained_predictions(model)
        converted = estimator.to_keras(model)
        assert not any("TFSMLayer" in type(layer).__name__ for layer in converted.layers)
        converted.save(tmp_path / f"{name}.keras")
        loaded = keras.saving.load_model(tmp_path / f"{name}.keras")
        for given in (TITANIC, {key: list(values) for key, values in TITANIC.items()}, pandas.DataFrame(TITANIC)):
            got = loaded.predict(given, verbose=0)["probabilities"]
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg=name)
    # it trains on with Keras, the same NumPy strings as training and validation data
    loaded.compile(keras.optimizers.SGD(1e-4), loss={"logits": keras.losses.BinaryCrossentropy(from_logits=True)})
    labels = {"logits": SURVIVED.astype("float32")[:, None]}
    before = [weight.numpy().copy() for weight in loaded.trainable_weights]
    history = loaded.fit(TITANIC, labels, validation_data=(TITANIC, labels), epochs=2, batch_size=PASSENGERS,
                         verbose=0)
    assert len(history.history["val_loss"]) == 2 and np.isfinite(history.history["val_loss"]).all()
    assert any(not np.array_equal(old, new.numpy()) for old, new in zip(before, loaded.trainable_weights))


def test_wide_and_deep_over_hashed_crossed_vocabulary_and_embedding_columns_converts_natively(tmp_path):
    """Crosses in any key order, over a vocabulary column (TF's ids, unknowns crossed as -1), bucketized
    ages, raw strings and a raw integer only the cross reads (its dtype given), three keys in one cross."""
    fc = tf.feature_column
    klass = fc.categorical_column_with_vocabulary_list("class", ["First", "Second"])  # "Third" is unknown
    deck = fc.categorical_column_with_hash_bucket("deck", 10)
    ages = fc.bucketized_column(fc.numeric_column("age"), [18, 40, 65])
    alone_class_age = fc.crossed_column(["alone", klass, ages], 50)  # a raw key first
    siblings_sex = fc.crossed_column(["n_siblings_spouses", "sex"], 20)
    model = estimator.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path / "run"),
        linear_feature_columns=[alone_class_age, siblings_sex, deck, klass],
        dnn_feature_columns=[fc.embedding_column(alone_class_age, 4), fc.embedding_column(deck, 3),
                             fc.indicator_column(klass), fc.indicator_column(siblings_sex), fc.numeric_column("fare")],
        dnn_hidden_units=[8, 4])
    expected = _trained_predictions(model, steps=80)
    converted = estimator.to_keras(model, feature_dtypes={"n_siblings_spouses": "int64"})
    assert not any("TFSMLayer" in type(layer).__name__ for layer in converted.layers)
    converted.save(tmp_path / "model.keras")
    got = keras.saving.load_model(tmp_path / "model.keras").predict(TITANIC, verbose=0)["probabilities"]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def _raw_receiver(dtypes: dict):
    def receiver():
        tensors = {key: tf.compat.v1.placeholder(dtype, [None], name=key) for key, dtype in dtypes.items()}
        return estimator.export.ServingInputReceiver(tensors, tensors)
    return receiver


def test_an_export_with_a_keyword_feature_and_float64_placeholders_converts_frozen(tmp_path):
    """The linear tutorial's model exported with raw placeholders as pandas gave them (float64), one named
    `class`: its only signature (`predict`) as a Keras model; frozen, and `fit` says so."""
    model = estimator.LinearClassifier(_titanic_columns(), model_dir=str(tmp_path / "run"))
    expected = _trained_predictions(model)
    dtypes = {key: tf.as_dtype(values.dtype if values.dtype.kind != "U" else "string")
              for key, values in TITANIC.items()}
    assert dtypes["age"] == tf.float64
    export_dir = model.export_saved_model(str(tmp_path / "export"), _raw_receiver(dtypes)).decode()
    from compat.estimator.to_keras import from_export

    converted = from_export(export_dir)
    assert converted.trainable_weights == []
    # TensorFlow's loader refuses the key `class`: the model reads a copy beside the export, inputs renamed
    assert tf.saved_model.contains_saved_model(export_dir + "-renamed-inputs")
    np.testing.assert_allclose(converted.predict(TITANIC, verbose=0)["probabilities"], expected, rtol=1e-4, atol=1e-4)
    converted.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras", safe_mode=False)
    np.testing.assert_allclose(loaded.predict(TITANIC, verbose=0)["probabilities"], expected, rtol=1e-4, atol=1e-4)
    loaded.compile(keras.optimizers.Adam(), loss="mse")
    with pytest.raises(ValueError, match="is frozen"):
        loaded.fit(TITANIC, SURVIVED, epochs=1, verbose=0)
    # its outputs feed layers of one's own, which train
    head = keras.layers.Dense(1, name="new_head")(loaded.output["logits"])
    tuned = keras.Model(loaded.input, head)
    tuned.compile(keras.optimizers.Adam(0.05), loss=keras.losses.BinaryCrossentropy(from_logits=True))
    features = {key: tf.constant(values) for key, values in TITANIC.items()}
    history = tuned.fit(features, SURVIVED.astype("float32"), epochs=5, batch_size=PASSENGERS, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


@pytest.mark.slow
def test_a_portable_core_predicts_the_same_under_keras_jax_backend_without_tensorflow(tmp_path):
    """to_keras(..., portable=True): the string preprocessing here (TensorFlow), its numbers fed to the core
    saved as `.keras` and loaded by Keras on JAX in an environment without TensorFlow."""
    sys.path.insert(0, os.path.join(REPO, "tests", "helpers"))
    from backend_venv import python_with
    from libraries import IndexUnreachable

    fc = tf.feature_column
    klass = fc.categorical_column_with_vocabulary_list("class", ["First", "Second", "Third"])
    sex_class = fc.crossed_column(["sex", klass], 12)
    ages = fc.bucketized_column(fc.numeric_column("age"), [18, 40, 65])
    model = estimator.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path / "run"), linear_feature_columns=[sex_class, ages],
        dnn_feature_columns=[fc.embedding_column(klass, 2), fc.indicator_column(sex_class), fc.numeric_column("age")],
        dnn_hidden_units=[6])
    expected = _trained_predictions(model)
    preprocess, core = estimator.to_keras(model, portable=True)
    numbers = preprocess.predict(TITANIC, verbose=0)
    assert all(np.asarray(value).dtype.kind in "if" for value in numbers.values())
    np.testing.assert_allclose(core.predict(numbers, verbose=0)["probabilities"], expected, rtol=1e-5, atol=1e-5)
    core.save(tmp_path / "core.keras")
    np.savez(tmp_path / "numbers.npz", **numbers)
    try:
        python = python_with("jax")
    except IndexUnreachable as error:
        pytest.skip(f"the package index is not reachable: {error}")
    result = subprocess.run(
        [python, os.path.join(REPO, "tests", "helpers", "predict_core.py"), str(tmp_path / "core.keras"),
         str(tmp_path / "numbers.npz"), "probabilities"],
        capture_output=True, text=True, env={**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": ""}, check=True)
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert got["backend"] == "jax"
    np.testing.assert_allclose(np.array(got["probabilities"]), expected, rtol=1e-5, atol=1e-5)


def test_portable_is_refused_for_a_model_without_a_native_conversion(tmp_path):
    model = estimator.Estimator(_model_fn, model_dir=str(tmp_path / "run"))
    with pytest.raises(ValueError, match="portable=True splits a canned Estimator's native model"):
        estimator.to_keras(model, portable=True)


def test_a_tpu_estimator_model_fn_off_a_tpu_converts_through_its_export(tmp_path):
    """The TPUEstimator programs of TF's TPU samples, run with use_tpu=False: their export as a Keras model."""

    def tpu_model_fn(features, labels, mode, params):
        spec = _model_fn(features, labels, mode)
        if mode == estimator.ModeKeys.PREDICT:
            return estimator.tpu.TPUEstimatorSpec(mode, predictions=spec.predictions)
        return estimator.tpu.TPUEstimatorSpec(mode, loss=spec.loss, train_op=spec.train_op)

    def input_fn(params):
        data = tf.data.Dataset.from_tensor_slices(({"x": X}, Y3))
        return data.repeat().batch(params["batch_size"], drop_remainder=True)

    model = estimator.tpu.TPUEstimator(tpu_model_fn, str(tmp_path / "run"), estimator.tpu.RunConfig(),
                                       use_tpu=False, train_batch_size=16, predict_batch_size=8)
    model.train(input_fn, max_steps=10)
    expected = np.stack([row["logits"] for row in model.predict(
        lambda params: tf.data.Dataset.from_tensor_slices({"x": X}).batch(params["batch_size"]))])

    def receiver():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
        return estimator.export.ServingInputReceiver({"x": x}, {"x": x})

    converted = estimator.to_keras(model, serving_input_receiver_fn=receiver, export_dir_base=str(tmp_path / "e"))
    np.testing.assert_allclose(converted.predict({"x": X}, verbose=0)["logits"], expected, rtol=1e-4, atol=1e-4)
    converted.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras", safe_mode=False)
    np.testing.assert_allclose(loaded.predict({"x": X}, verbose=0)["logits"], expected, rtol=1e-4, atol=1e-4)


def test_a_dnn_regressor_trainer_with_a_latest_exporter_converts_natively_and_from_its_export(tmp_path):
    """The shape of the taxifare trainers: train_and_evaluate with a LatestExporter over raw placeholders.
    Natively within 1e-5; the command takes the model folder's newest export (its only signature)."""
    columns = [tf.feature_column.numeric_column(key) for key in ("age", "fare")]
    columns.append(tf.feature_column.indicator_column(
        tf.feature_column.categorical_column_with_vocabulary_list("class", ["First", "Second", "Third"])))
    model = estimator.DNNRegressor([8, 4], columns, model_dir=str(tmp_path / "run"))
    fares = TITANIC["fare"].astype("float32")

    def input_fn(epochs=None, shuffle=True):
        features = {key: TITANIC[key] for key in ("age", "fare", "class")}
        data = tf.data.Dataset.from_tensor_slices((features, fares / 100))
        return (data.shuffle(PASSENGERS, seed=2) if shuffle else data).batch(32).repeat(epochs)

    receiver = _raw_receiver({"age": tf.float64, "fare": tf.float64, "class": tf.string})
    exporter = estimator.LatestExporter("taxifare", receiver)
    estimator.train_and_evaluate(model, estimator.TrainSpec(input_fn, max_steps=40),
                                 estimator.EvalSpec(lambda: input_fn(1, False), steps=None, exporters=[exporter]))
    expected = np.stack([row["predictions"] for row in model.predict(lambda: input_fn(1, False))])
    native = estimator.to_keras(model)
    np.testing.assert_allclose(native.predict(TITANIC, verbose=0)["predictions"], expected, rtol=1e-5, atol=1e-5)
    out = tmp_path / "export.keras"
    result = subprocess.run([sys.executable, "-m", "compat.estimator.to_keras", str(tmp_path / "run"), str(out)],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    loaded = keras.saving.load_model(out, safe_mode=False)
    np.testing.assert_allclose(loaded.predict(TITANIC, verbose=0)["predictions"], expected, rtol=1e-4, atol=1e-4)


TUTORIAL_FOLDERS = os.path.join(REPO, "tests", "data", "tf215_tutorial_models")


@pytest.mark.parametrize("name", ["linear_tutorial", "wide_deep"])
def test_tf_2_15s_folders_of_the_tutorials_crossed_models_convert_natively_with_its_predictions(tmp_path, name):
    """Model folders TF 2.15 trained (tests/helpers/tf215_tutorial_models.py): the linear tutorial's model
    with its age x sex cross, and a wide & deep model crossing a vocabulary column."""
    programs = tutorial_models
    folders = shutil.copytree(TUTORIAL_FOLDERS, tmp_path / "folders")
    model = programs.models(tf.feature_column, estimator, str(folders))[name]
    expected = np.array(json.loads((folders / "predictions.json").read_text())[name])
    rows, _ = programs.titanic()
    converted = estimator.to_keras(model)
    assert not any("TFSMLayer" in type(layer).__name__ for layer in converted.layers)
    np.testing.assert_allclose(converted.predict(rows, verbose=0)["probabilities"], expected, rtol=1e-5, atol=1e-5)
    ours = np.stack([row["probabilities"] for row in model.predict(lambda: programs.input_fn(1, shuffle=False))])
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5)  # and the Estimator here agrees


def test_the_crossed_tutorial_models_keras_export_keeps_its_signature_and_keyword_input(tmp_path):
    """The linear tutorial's crossed model, exported by its Estimator with raw placeholders (one named
    `class`; its numeric `age` is also crossed raw, so TF has no tf.Example parsing for it): the converted
    model's export has the same signature and input keys, and predicts the same."""
    from tensorflow.core.protobuf import saved_model_pb2

    from compat.estimator.to_keras import from_export

    columns = _titanic_columns() + [tf.feature_column.crossed_column(["age", "sex"], hash_bucket_size=100)]
    model = estimator.LinearClassifier(columns, model_dir=str(tmp_path / "run"))
    expected = _trained_predictions(model)
    dtypes = {key: tf.as_dtype(values.dtype if values.dtype.kind != "U" else "string")
              for key, values in TITANIC.items()}
    like = model.export_saved_model(str(tmp_path / "estimator_export"), _raw_receiver(dtypes)).decode()
    exported = estimator.export_keras_saved_model(estimator.to_keras(model), str(tmp_path / "keras_export"),
                                                  like=like, estimator=model)
    proto = saved_model_pb2.SavedModel.FromString(open(os.path.join(exported, "saved_model.pb"), "rb").read())
    assert sorted(proto.meta_graphs[0].signature_def["predict"].inputs) == sorted(TITANIC)
    got = from_export(exported).predict(TITANIC, verbose=0)["probabilities"]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_input_keys_python_cannot_take_get_distinct_parameter_names():
    from compat.estimator.keras_twin import parameter_names

    names = parameter_names(["a/b", "a_b", "class", "class_", "x", "1x"])
    assert names["a_b"] == "a_b" and names["class_"] == "class_" and names["x"] == "x"
    assert len(set(names.values())) == 6 and all(name.isidentifier() for name in names.values())


def test_what_is_not_an_estimator_is_refused_in_one_line():
    with pytest.raises(ValueError, match="to_keras converts an Estimator of compat.estimator"):
        estimator.to_keras(object())


def test_a_canned_class_built_with_another_head_keeps_no_native_recipe():
    """The native models reproduce the canned heads' predictions only (sigmoid, softmax, identity). A canned class
    built with another head, such as a Poisson regression's exp(logits) or a TF 1.x head given a link, or with a
    head its arguments do not describe, gets no native recipe, so to_keras converts it through its export rather
    than to a model that predicts something else."""
    from compat.estimator.canned.recipe import CannedRecipe

    columns = [tf.feature_column.numeric_column("x")]
    for head in (estimator.RegressionHead(), estimator_v1.RegressionHead()):
        assert CannedRecipe.from_arguments("R", {"head": head, "feature_columns": columns}, "linear") is not None
    from compat.estimator.canned.v1_heads import RegressionHeadV1

    others = (estimator.PoissonRegressionHead(), estimator.LogisticRegressionHead(),
              RegressionHeadV1(1, inverse_link_fn=tf.math.sigmoid))  # a TF 1.x twin with a link of its own
    for head in others:
        assert head.native_keras_output is None
        assert CannedRecipe.from_arguments("R", {"head": head, "feature_columns": columns}, "linear") is None
    # a head the arguments do not describe: a softmax or sigmoid head without its n_classes, a wider regression
    for head, described in ((estimator.MultiClassHead(3), {"n_classes": 3}), (estimator.BinaryClassHead(), {"n_classes": 2}),
                            (estimator.RegressionHead(label_dimension=2), {"label_dimension": 2})):
        arguments = {"head": head, "feature_columns": columns}
        assert CannedRecipe.from_arguments("E", arguments, "linear") is None, head
        assert CannedRecipe.from_arguments("E", {**arguments, **described}, "linear").output == (
            head.native_keras_output, head.logits_dimension)
    for canned in (estimator.LinearRegressor(columns), estimator.DNNClassifier([2], columns, n_classes=3),
                   estimator_v1.LinearClassifier(columns), estimator.BaselineRegressor()):
        assert canned.keras_recipe is not None, type(canned).__name__
