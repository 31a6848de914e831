"""TensorFlow Privacy 0.9.0's estimators as its users drove them: one JSON line on stdout.

TF Privacy subclasses TF 2.15's heads (`BinaryClassHead`, `MultiClassHead`, and TF 1.x's
`_BinaryLogisticHeadWithSigmoidCrossEntropyLoss`) and builds its estimators from TF 2.15's private model_fns
(`dnn._dnn_model_fn`, `dnn.dnn_model_fn_v2`, `linear._linear_model_fn`): its heads' loss is a vector (one
loss per example, what a differentially private optimizer clips) and their `_create_tpu_estimator_spec`
builds the spec. The estimators train with plain optimizers, and the v1 DNN and linear classifiers also as TF Privacy's users
train them: a loss per example (`loss_reduction=NONE`, which TF 2.15's head classes took) clipped by its DP
optimizer (dp-accounting installed beside it), then exported.
The TF 2 DNNClassifier's heads reach `tf.keras.__internal__` (Keras 2): it runs where tf.keras is Keras 2
(TF 2.15, or TF_USE_LEGACY_KERAS=1), and is reported as not run otherwise.

Runs unchanged under TensorFlow 2.15 (tests/helpers/tf215_libraries.py records it) and under this project
after `compat.estimator.install()` (tests/test_libraries.py). Written for these tests; it drives the library
and copies none of its code.

Usage: python library_tf_privacy.py --workdir DIR
"""

import argparse
import json
import os
import sys
import traceback

_REAL_STDOUT = sys.stdout
sys.stdout = sys.stderr  # keep stdout for the single JSON line
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.skip_tf_privacy_import = True  # TF Privacy's own switch: its estimators without its analysis packages

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

rng = np.random.default_rng(3)
X = rng.normal(size=(256, 4)).astype("float32")
Y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype("int64")
Y3 = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5]).astype("int64")
COLUMNS = [tf.feature_column.numeric_column("x", shape=(4,))]


def input_fn(labels, repeat):
    def make():
        dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, labels))
        return (dataset.repeat() if repeat else dataset).batch(32)

    return make


def variables(estimator):
    return sorted([name, list(np.shape(estimator.get_variable_value(name)))]
                  for name in estimator.get_variable_names())


def run(name, estimator, labels, workdir):
    estimator.train(input_fn(labels, True), max_steps=60)
    metrics = estimator.evaluate(input_fn(labels, False))
    predictions = list(estimator.predict(input_fn(labels, False)))
    return {
        "metrics": {key: float(value) for key, value in metrics.items()},
        "variables": variables(estimator),
        "prediction_keys": sorted(predictions[0]),
        "first_probabilities": [round(float(p), 4) for p in predictions[0]["probabilities"]],
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", required=True)
    workdir = parser.parse_args().workdir
    report = {"status": "ok", "tf_version": tf.__version__, "models": {}}
    from tensorflow_privacy.privacy.estimators.v1 import dnn as dnn_v1
    from tensorflow_privacy.privacy.estimators.v1 import linear as linear_v1

    def config(name):
        return tf.estimator.RunConfig(model_dir=os.path.join(workdir, name), tf_random_seed=5,
                                      save_summary_steps=1000, log_step_count_steps=1000)

    sgd = tf.compat.v1.train.GradientDescentOptimizer
    report["models"]["v1_dnn"] = run("v1_dnn", dnn_v1.DNNClassifier(
        [8], COLUMNS, optimizer=sgd(0.05), config=config("v1_dnn")), Y, workdir)
    report["models"]["v1_dnn_3_classes"] = run("v1_dnn_3_classes", dnn_v1.DNNClassifier(
        [8], COLUMNS, n_classes=3, optimizer=sgd(0.05), config=config("v1_dnn_3")), Y3, workdir)
    report["models"]["v1_linear"] = run("v1_linear", linear_v1.LinearClassifier(
        COLUMNS, optimizer=sgd(0.05), config=config("v1_linear")), Y, workdir)
    # As TF Privacy's users train them: a loss per example (loss_reduction NONE), clipped by its DP optimizer
    # (noise 0, so that both runs draw nothing at random), then exported.
    from tensorflow_privacy.privacy.optimizers.dp_optimizer import DPGradientDescentGaussianOptimizer

    def dp_sgd():
        return DPGradientDescentGaussianOptimizer(l2_norm_clip=1.0, noise_multiplier=0.0, num_microbatches=32,
                                                  learning_rate=0.05)

    none = tf.compat.v1.losses.Reduction.NONE
    for name, estimator in (
        ("v1_dnn_dp", dnn_v1.DNNClassifier([8], COLUMNS, optimizer=dp_sgd(), loss_reduction=none,
                                           config=config("v1_dnn_dp"))),
        ("v1_linear_dp", linear_v1.LinearClassifier(COLUMNS, optimizer=dp_sgd(), loss_reduction=none,
                                                    config=config("v1_linear_dp"))),
    ):
        report["models"][name] = run(name, estimator, Y, workdir)
        receiver = tf.estimator.export.build_parsing_serving_input_receiver_fn(
            tf.feature_column.make_parse_example_spec(COLUMNS))
        exported = estimator.export_saved_model(os.path.join(workdir, "export", name), receiver)
        report["models"][name]["signatures"] = sorted(tf.saved_model.load(exported.decode()).signatures)
    from tensorflow_privacy.privacy.estimators import dnn

    if hasattr(tf.keras, "__internal__"):
        optimizer = tf.keras.optimizers.legacy.SGD(0.05)  # TF 2.15 took no other
        report["models"]["dnn"] = run("dnn", dnn.DNNClassifier(
            [8], COLUMNS, optimizer=optimizer, config=config("dnn")), Y, workdir)
    else:
        report["models"]["dnn"] = "not run: its heads reach tf.keras.__internal__, which Keras 3 lacks"
    return report


if __name__ == "__main__":
    try:
        result = main()
    except Exception as error:  # the caller compares reports: a failure is one too
        result = {"status": "error", "error": repr(error), "traceback_tail": traceback.format_exc()[-3000:]}
    _REAL_STDOUT.write(json.dumps(result, sort_keys=True) + "\n")
