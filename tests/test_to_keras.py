"""From Estimator to Keras 3: the converted model predicts what the Estimator predicted, and stays a model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import compat.estimator as estimator
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
    # compat.estimator registers the layer.
    reloaded = keras.saving.load_model(out, safe_mode=False)
    np.testing.assert_allclose(reloaded({"x": tf.constant(X)})["logits"], np.stack(expected), rtol=1e-5, atol=1e-5)
    bad = subprocess.run([sys.executable, "-m", "compat.estimator.to_keras", str(tmp_path), str(out)],
                         capture_output=True, text=True, cwd=REPO)
    assert bad.returncode == 2 and "holds no SavedModel" in bad.stderr.strip().splitlines()[-1]


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


def test_a_column_keras_has_no_native_layer_for_here_is_named_and_the_export_path_offered(tmp_path):
    crossed = tf.feature_column.crossed_column(["colour", "size"], hash_bucket_size=8)
    model = estimator.LinearClassifier([crossed], model_dir=str(tmp_path / "run"))
    with pytest.raises(ValueError, match="no native Keras form here: colour_X_size: pass serving_input_receiver_fn="):
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
