"""Lists the tables of TF 2.15's own upgrader: `python tf215_upgrade_renames.py OUT.json`, run under TensorFlow 2.15.

TF 2.15's `tf_upgrade_v2` rewrote TF 1.x names (`tf.layers.dense`, `tf.summary.scalar`,
`tf.contrib.estimator.stop_if_no_decrease_hook`) and calls (a canned estimator's `loss_reduction=SUM`, TF 1.x's
default, and its `tf.compat.v1` class when given a TF 1.x optimizer) that TF 2.21's no longer rewrites. Its
tables (`TFAPIChangeSpec`'s symbol renames, keyword renames, argument reorders, and which of the upgrader's
own transformer functions, with which arguments, each name got), and which of the renamed names TF 2.15's own
API still had (`tf.keras.optimizers.Adam`: TF 2 code uses them), are kept as facts in
compat/estimator/tf215_upgrade_renames.json; `python -m compat.estimator.check --fix` rewrites with TF 2.21's
upgrader and these.
"""
import functools
import json
import sys

import tensorflow as tf
from tensorflow.tools.compatibility import tf_upgrade_v2

spec = tf_upgrade_v2.TFAPIChangeSpec()
transformers = {}
for name, transformer in spec.function_transformers.items():
    if isinstance(transformer, functools.partial):
        keywords = {key: value for key, value in transformer.keywords.items() if isinstance(value, (str, list, tuple))}
        transformers[name] = {"function": transformer.func.__name__, "keywords": keywords}
    else:
        transformers[name] = {"function": transformer.__name__, "keywords": {}}


def resolves(dotted):
    """Whether `dotted` (`tf.keras.optimizers.Adam`) is a name of TensorFlow 2's own API here."""
    value = tf
    for part in dotted.split(".")[1:]:
        try:
            value = getattr(value, part)
        except Exception:  # AttributeError, or a lazily loaded module that fails to load
            return False
    return True


json.dump(
    {
        "tensorflow": tf.__version__,
        # renamed names that TF 2 has too (tf.keras.optimizers.Adam, tf.summary.scalar): TF 2's own code uses them
        "tf2_names": sorted(name for name in spec.symbol_renames if name.startswith("tf.") and resolves(name)),
        "symbol_renames": spec.symbol_renames,
        "function_keyword_renames": spec.function_keyword_renames,
        "function_reorders": spec.function_reorders,
        "reordered_function_names": sorted(spec.reordered_function_names),
        "function_transformers": transformers,
    },
    open(sys.argv[1], "w"),
    indent=0,
    sort_keys=True,
)
print(len(spec.symbol_renames), len(transformers))
