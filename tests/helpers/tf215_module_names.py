"""Lists the names each module of TF 2.15's tensorflow_estimator defines: `python tf215_module_names.py OUT.json`.

Run under TensorFlow 2.15 (the side environment of bench/tf215.py). For every module of the
`tensorflow_estimator` package and of TensorFlow's forwarding package `tensorflow.python.estimator`,
it writes the names a program can import from it, and the values of its plain constants (strings,
numbers, tuples of them: TF_CONFIG keys, default learning rates): what the module defines or re-exports from
tensorflow_estimator (classes, functions, constants), private ones included, leaving out submodules
and what it imported from elsewhere (`tf`, `ops`, `six`, ...) but for TensorFlow's
Estimator names it re-exports (ModeKeys, export outputs, session-run hooks). compat/estimator/tf215_modules.json keeps
the result; compat/estimator/legacy_modules.py and its tests read it.
"""
import importlib
import inspect
import json
import pkgutil
import sys
import types

import tensorflow as tf
import tensorflow_estimator

SKIP = ("_test", "tools", "_api", ".api.")
# what TF 2.15's modules define, and the TensorFlow names they re-export for Estimator users (ModeKeys,
# the export outputs, the session-run hooks, VocabInfo)
OWN = ("tensorflow_estimator", "tensorflow.python.saved_model.model_utils", "tensorflow.python.training.")
SIMPLE = (str, int, float, bool, bytes, tuple, frozenset, type(None))


def modules(package):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not any(part in info.name for part in SKIP):
            yield info.name


def constant(value):
    """The value as JSON, if it is a plain constant (a string, a number, a tuple of them); else None."""
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (tuple, list)) and all(isinstance(item, (str, int, float, bool)) for item in value):
        return list(value)
    return None


def own_names(module, constants):
    names = []
    for name, value in vars(module).items():
        if name.startswith("__") or name.startswith("_tfmw_") or isinstance(value, types.ModuleType):
            continue  # _tfmw_*: TensorFlow's module wrapper's bookkeeping, not a name of the module
        origin = getattr(value, "__module__", None) if (inspect.isclass(value) or callable(value)) else None
        if origin is None:
            if type(value).__module__.startswith("tensorflow.python.eager.monitoring"):
                names.append(name)  # a usage gauge a library's canned estimators set (`_canned_estimator_api_gauge`)
            elif isinstance(value, SIMPLE) or isinstance(value, dict):
                names.append(name)  # a constant of this module (keys, defaults)
                if constant(value) is not None:
                    constants[name] = constant(value)
            continue
        if name == "estimator_export" and not module.__name__.endswith(".estimator_export"):
            continue  # the API-export decorator every module imports, not a name of the module
        if origin.startswith(OWN):
            names.append(name)
    return sorted(names)


result, constants = {}, {}
for package in (tensorflow_estimator, importlib.import_module("tensorflow.python.estimator")):
    for name in [package.__name__, *modules(package)]:
        try:
            module = importlib.import_module(name)
        except Exception as error:  # a module TF 2.15 itself cannot import here
            print(f"skip {name}: {error}", file=sys.stderr)
            continue
        constants[name] = {}
        result[name] = own_names(module, constants[name])
constants = {name: values for name, values in constants.items() if values}
json.dump(
    {"tensorflow": tf.__version__, "modules": result, "constants": constants},
    open(sys.argv[1], "w"),
    indent=1,
    sort_keys=True,
)
print(len(result), sum(map(len, result.values())))
