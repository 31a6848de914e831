"""Records the public names of tf-slim, where TF 1.x's tf.contrib.layers and tf.contrib.slim live on.

    pip install --no-deps --target DIR tf-slim==1.1.0
    PYTHONPATH=DIR python tests/helpers/tf_slim_names.py > compat/estimator/tf_slim_names.json

The migration check reads the file (it never imports tf_slim) to tell which `tf.contrib.layers.<name>` and
`tf.contrib.slim.<name>` tf-slim has, and `--fix` moves an import of those modules to tf_slim only when it does.
"""
import inspect
import json
import sys

import tf_slim
import tf_slim.layers


def public(module):
    """Names the module defines or re-exports from tf_slim: functions, classes, modules of tf_slim, constants."""
    names = []
    for name, value in vars(module).items():
        if name.startswith("_"):
            continue
        owner = getattr(value, "__module__", None) or (value.__name__ if inspect.ismodule(value) else "")
        if owner.startswith("tf_slim") or (name.isupper() and isinstance(value, str)):
            names.append(name)
    return sorted(names)


json.dump({"tf_slim": tf_slim.__version__ if hasattr(tf_slim, "__version__") else "1.1.0",
           "layers": public(tf_slim.layers), "slim": public(tf_slim)}, sys.stdout, indent=0)
sys.stdout.write("\n")
