"""Every spelling of TF 2.15's estimator namespaces, as attribute and as `import` statement, in one order.

    python namespace_spellings.py ORDER FIRST_IMPORT

ORDER is `install_first` (the README's order: `compat.estimator.install()`, then the program's imports) or
`tensorflow_first`; FIRST_IMPORT is the program's first TensorFlow module (`tensorflow`, `tensorflow.compat.v1`,
`tensorflow.compat.v2`, or `tensorflow.compat.v2.compat.v1.estimator`). Prints one JSON line {spelling: true or
the error}; a library's subclass of `tf.compat.v2.compat.v1.estimator.tpu.TPUEstimator` (adanet's pattern) is
among them.
"""
import importlib
import json
import sys


def install():
    import compat.estimator

    compat.estimator.install()


ORDER, FIRST = sys.argv[1], sys.argv[2]
if ORDER == "install_first":
    install()
importlib.import_module(FIRST)
if ORDER == "tensorflow_first":
    install()
import tensorflow as tf  # noqa: E402

results = {}


def probe(spelling, check):
    try:
        results[spelling] = bool(check()) or "missing"
    except Exception as error:  # reported, so that one spelling's failure does not hide the others'
        results[spelling] = f"{type(error).__name__}: {error}"


for path in ("tf", "tf.compat.v2", "tf.compat.v1.compat.v2", "tf.compat.v2.compat.v2"):
    probe(f"{path}.estimator", lambda path=path: eval(path, {"tf": tf}).estimator.DNNClassifier)
for path in ("tf.compat.v1", "tf.compat.v1.compat.v1", "tf.compat.v2.compat.v1"):
    probe(f"{path}.estimator", lambda path=path: eval(path, {"tf": tf}).estimator.tpu.TPUEstimator)
    probe(f"{path}.layers", lambda path=path: eval(path, {"tf": tf}).layers.dense)
for module, name in (
    ("tensorflow.estimator", "DNNClassifier"),
    ("tensorflow.compat.v2.estimator", "DNNClassifier"),
    ("tensorflow.compat.v1.estimator", "DNNClassifier"),
    ("tensorflow.compat.v1.estimator.tpu", "TPUEstimator"),
    ("tensorflow.compat.v2.compat.v1.estimator", "Estimator"),
    ("tensorflow.compat.v1.compat.v1.estimator", "Estimator"),
    ("tensorflow.compat.v2.compat.v1.estimator.tpu", "TPUConfig"),
    ("tensorflow.compat.v1.estimator.experimental", "KMeans"),
    ("tensorflow.estimator.export", "ServingInputReceiver"),
    ("tensorflow.compat.v1.layers", "dense"),
    ("tensorflow.compat.v2.compat.v1.layers", "dense"),
):
    probe(f"import {module}", lambda module=module, name=name: getattr(importlib.import_module(module), name))


def subclass():
    class AdanetStyle(tf.compat.v2.compat.v1.estimator.tpu.TPUEstimator):
        pass

    def model_fn(features, labels, mode, params):
        raise AssertionError("not called")

    return AdanetStyle(model_fn=model_fn, config=tf.compat.v1.estimator.tpu.RunConfig(), use_tpu=False,
                       train_batch_size=8)


probe("subclass of tf.compat.v2.compat.v1.estimator.tpu.TPUEstimator", subclass)
print(json.dumps(results, sort_keys=True))
