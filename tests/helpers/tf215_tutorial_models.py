"""TensorFlow's Estimator tutorials' feature-column models, trained by TF 2.15 into model folders kept in tests/data.

    python tf215_tutorial_models.py OUT_DIR        # with TF 2.15's interpreter (bench/tf215.py makes one)

Written for TF 2.15's tf.estimator. Trains, on the same fixed Titanic-shaped rows, the linear tutorial's second
model (a LinearClassifier over vocabulary and numeric columns plus crossed_column(['age', 'sex'], 100) over raw
keys) and a wide & deep classifier (a cross of a raw key, a vocabulary column and bucketized ages; hashed,
vocabulary, embedding and indicator columns); writes each model folder's checkpoint to OUT_DIR/<name> and TF
2.15's predictions to OUT_DIR/predictions.json. tests/test_to_keras.py converts those folders with
compat.estimator.to_keras and compares. The rows and columns are defined here once, for both sides.
"""

import json
import os
import shutil
import sys

import numpy as np
import tensorflow as tf

ROWS = 160


def titanic(count: int = ROWS, seed: int = 11) -> tuple[dict, np.ndarray]:
    """`count` rows of the linear tutorial's shape (Titanic): strings, small integers, floats, a feature named
    `class` (a Python keyword), one value per passenger; and who survived."""
    rng = np.random.RandomState(seed)
    rows = {
        "sex": rng.choice(["male", "female"], count),
        "n_siblings_spouses": rng.randint(0, 5, count).astype("int64"),
        "class": rng.choice(["First", "Second", "Third"], count),
        "deck": rng.choice(["A", "B", "C", "D", "unknown"], count),
        "alone": rng.choice(["y", "n"], count),
        "age": rng.uniform(0.4, 80, count).round(1),
        "fare": rng.uniform(5, 200, count),
    }
    survived = (((rows["sex"] == "female") ^ (rows["age"] > 50)) | (rows["class"] == "First")).astype("int64")
    return rows, survived


def linear_columns(fc) -> list:
    """The linear tutorial's columns, with its age x sex cross."""
    rows, _ = titanic()
    vocabulary = [fc.categorical_column_with_vocabulary_list(key, sorted(set(rows[key].tolist())))
                  for key in ("sex", "n_siblings_spouses", "class", "deck", "alone")]
    return vocabulary + [fc.numeric_column("age"), fc.numeric_column("fare"),
                         fc.crossed_column(["age", "sex"], hash_bucket_size=100)]


def wide_deep_columns(fc) -> tuple[list, list]:
    """A wide & deep model's (linear, dnn) columns: a cross over a vocabulary column among them."""
    klass = fc.categorical_column_with_vocabulary_list("class", ["First", "Second"])
    deck = fc.categorical_column_with_hash_bucket("deck", 10)
    ages = fc.bucketized_column(fc.numeric_column("age"), [18, 40, 65])
    cross = fc.crossed_column(["alone", klass, ages], 50)
    return [cross, deck, klass], [fc.embedding_column(cross, 4), fc.embedding_column(deck, 3),
                                  fc.indicator_column(klass), fc.numeric_column("fare")]


def input_fn(epochs=None, shuffle=True):
    rows, survived = titanic()
    data = tf.data.Dataset.from_tensor_slices((rows, survived))
    return (data.shuffle(ROWS, seed=3) if shuffle else data).batch(32).repeat(epochs)


def models(fc, estimator, model_dir: str) -> dict:
    """The two Estimators over `model_dir`/<name>, from `estimator` (tf.estimator or compat.estimator)."""
    linear, dnn = wide_deep_columns(fc)
    return {
        "linear_tutorial": estimator.LinearClassifier(
            linear_columns(fc), model_dir=os.path.join(model_dir, "linear_tutorial")),
        "wide_deep": estimator.DNNLinearCombinedClassifier(
            model_dir=os.path.join(model_dir, "wide_deep"), linear_feature_columns=linear,
            dnn_feature_columns=dnn, dnn_hidden_units=[8, 4],
            config=estimator.RunConfig(tf_random_seed=5)),
    }


if __name__ == "__main__":
    out = sys.argv[1]
    predictions = {"tensorflow": tf.__version__}
    for name, model in models(tf.feature_column, tf.estimator, out).items():
        model.train(input_fn, max_steps=60)
        rows = model.predict(lambda: input_fn(1, shuffle=False))
        predictions[name] = [row["probabilities"].tolist() for row in rows]
        folder = os.path.join(out, name)
        for entry in os.listdir(folder):  # the checkpoint is the folder a user keeps; graphs and events are not
            if not (entry == "checkpoint" or entry.startswith("model.ckpt-60")):
                path = os.path.join(folder, entry)
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    with open(os.path.join(out, "predictions.json"), "w") as file:
        json.dump(predictions, file)
