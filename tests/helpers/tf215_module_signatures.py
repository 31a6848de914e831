"""Records the parameters of every function TF 2.15's estimator modules define: run with TF 2.15's interpreter.

    python tests/helpers/tf215_module_signatures.py > tests/data/tf215_module_signatures.json

tests/test_legacy_modules.py checks that each counterpart here takes TF 2.15's parameters in TF 2.15's order
(it may add optional ones after them): a library calling a function by position reaches the same arguments.
"""
import importlib
import inspect
import json
import os
import sys

NAMES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "compat",
                     "estimator", "tf215_modules.json")
signatures = {}
for module_name, names in json.load(open(NAMES))["modules"].items():
    if not module_name.startswith("tensorflow_estimator"):
        continue
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        continue
    for name in names:
        value = getattr(module, name, None)
        if inspect.isfunction(value) and not name.startswith("__"):
            signatures[f"{module_name}.{name}"] = list(inspect.signature(value).parameters)
json.dump(signatures, sys.stdout, indent=1, sort_keys=True)
sys.stdout.write("\n")
