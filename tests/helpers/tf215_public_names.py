"""Lists TF 2.15's public tf.estimator names: `python tf215_public_names.py OUT.json`, run under TensorFlow 2.15.

Walks `tf.estimator` and `tf.compat.v1.estimator` (and their namespaces:
export, experimental, inputs, tpu, tpu.experimental) and writes the sorted
dotted names, e.g. "estimator.DNNClassifier", "compat.v1.estimator.tpu.TPUEstimator".
The result is kept in compat/estimator/tf215_names.json; tests check that
every name resolves after compat.estimator.install().
"""
import json
import sys
import types

import tensorflow as tf


def walk(prefix, namespace, names, seen):
    for attribute in sorted(dir(namespace)):
        if attribute.startswith("_"):
            continue
        value = getattr(namespace, attribute)
        dotted = f"{prefix}.{attribute}"
        if isinstance(value, types.ModuleType):
            if id(value) not in seen:
                seen.add(id(value))
                walk(dotted, value, names, seen)
            continue
        names.append(dotted)


names = []
walk("estimator", tf.estimator, names, set())
walk("compat.v1.estimator", tf.compat.v1.estimator, names, set())
json.dump({"tensorflow": tf.__version__, "names": sorted(names)}, open(sys.argv[1], "w"), indent=1)
print(len(names))
