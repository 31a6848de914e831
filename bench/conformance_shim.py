"""pytest plugin: tensorflow/estimator's own tests import `tensorflow_estimator`; this serves those imports
from `compat.estimator`, so that the tests measure this project.

    python -m pytest -p conformance_shim FILE    (bench/ on PYTHONPATH; CONFORMANCE_UPSTREAM=the checkout)

Every module below `tensorflow_estimator` becomes a stand-in whose names are looked up, in order:

1. in `compat.estimator`'s module of the same relative path (`canned.dnn` -> `compat.estimator.canned.dnn`);
2. in the public namespaces a program reaches after `install()`: `compat.estimator` (tf.estimator),
   its `export`, `experimental` and `inputs`, `compat.estimator.v1` (tf.compat.v1.estimator), and, for
   upstream's `hooks` modules, `tf.compat.v1.train` (upstream's hooks are TensorFlow's);
3. in any other public module of `compat.estimator`;
4. again without a `V2`/`_v2` suffix (upstream's name for the TF2 classes: `DNNClassifierV2`).

A name found nowhere raises AttributeError saying "no counterpart of tensorflow_estimator...<name>", which
bench/conformance.py counts as a test of upstream's internals when the name is private. The testing
utilities and key constants the tests import (`canned/*_testing_utils.py`, `head/head_utils.py`,
`hooks/fake_summary_writer.py`, `canned/metric_keys.py`, `canned/prediction_keys.py`) are run from the
checkout itself, unchanged. Nothing of the project is patched.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import pkgutil
import sys
import types

ROOT = "tensorflow_estimator"
PREFIX = "tensorflow_estimator.python.estimator"
# upstream's own files, loaded from the checkout: test code and the constants it compares with
FROM_CHECKOUT = {
    "canned.dnn_testing_utils",
    "canned.linear_testing_utils",
    "canned.metric_keys",
    "canned.prediction_keys",
    "head.head_utils",
    "hooks.fake_summary_writer",
}
# what metric_keys.py reads of upstream's model_fn.py, when the project has no such names
_MODEL_FN_KEYS = {"LOSS_METRIC_KEY": "loss", "AVERAGE_LOSS_METRIC_KEY": "average_loss"}


def _public_modules() -> list[types.ModuleType]:
    import compat.estimator as package

    found = []
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        try:
            found.append(importlib.import_module(info.name))
        except Exception:  # a module that cannot load here (an optional dependency): not a counterpart
            continue
    return found


class _Counterparts:
    """Finds compat.estimator's counterpart of an upstream name."""

    def __init__(self) -> None:
        import tensorflow as tf

        import compat.estimator as estimator
        from compat.estimator import v1

        estimator.install()
        self._namespaces = [estimator, estimator.export, estimator.experimental, estimator.inputs, v1]
        self._train = tf.compat.v1.train
        self._everywhere: list[types.ModuleType] | None = None

    def _same_path(self, relative: str) -> types.ModuleType | None:
        try:
            return importlib.import_module(f"compat.estimator.{relative}") if relative else None
        except ImportError:
            return None

    def find(self, relative: str, name: str):
        places = [self._same_path(relative)]
        if not name.startswith("_"):
            places += self._namespaces
            if relative.startswith("hooks"):
                places.append(self._train)
            if self._everywhere is None:
                self._everywhere = _public_modules()
            places += self._everywhere
        for candidate in (name, name.removesuffix("V2").removesuffix("_v2")):
            for place in places:
                if place is not None and hasattr(place, candidate):
                    return getattr(place, candidate)
        if relative == "model_fn" and name in _MODEL_FN_KEYS:
            return _MODEL_FN_KEYS[name]
        raise AttributeError(f"[conformance] compat.estimator has no counterpart of {PREFIX}.{relative}.{name}")


_COUNTERPARTS: _Counterparts | None = None


class _StandIn(types.ModuleType):
    """An upstream module: a package (submodules import below it) whose names are compat.estimator's."""

    checkout = ""  # the tensorflow/estimator checkout: which names below a stand-in are upstream's modules

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__path__: list[str] = []  # a package, so that `import a.b.c` goes on below it
        self._relative = name[len(PREFIX) + 1 :] if name.startswith(PREFIX + ".") else ""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        below = os.path.join(_StandIn.checkout, *self.__name__.split("."), name)
        if os.path.isdir(below) or os.path.isfile(below + ".py"):  # upstream's submodule: its own stand-in
            return importlib.import_module(f"{self.__name__}.{name}")
        assert _COUNTERPARTS is not None
        value = _COUNTERPARTS.find(self._relative, name)
        if isinstance(value, types.ModuleType):  # a module of upstream's that the checkout lacks: a stand-in too
            return importlib.import_module(f"{self.__name__}.{name}")
        return value


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, checkout: str) -> None:
        self._checkout = checkout

    def find_spec(self, fullname, path=None, target=None):
        if fullname != ROOT and not fullname.startswith(ROOT + "."):
            return None
        relative = fullname[len(PREFIX) + 1 :] if fullname.startswith(PREFIX + ".") else None
        if relative in FROM_CHECKOUT:
            source = os.path.join(self._checkout, *fullname.split(".")) + ".py"
            return importlib.util.spec_from_file_location(fullname, source)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        return _StandIn(spec.name)

    def exec_module(self, module) -> None:
        pass


def pytest_configure(config) -> None:
    global _COUNTERPARTS
    checkout = os.environ.get("CONFORMANCE_UPSTREAM", "")
    if not os.path.isdir(os.path.join(checkout, *PREFIX.split("."))):
        raise SystemExit(f"CONFORMANCE_UPSTREAM={checkout!r} is not a tensorflow/estimator checkout (no {PREFIX})")
    _StandIn.checkout = checkout
    _COUNTERPARTS = _Counterparts()
    sys.meta_path.insert(0, _Finder(checkout))
