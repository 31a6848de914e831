"""TF 2.15's module paths after `install()`: `tensorflow_estimator.*`, `tensorflow.python.estimator.*` and
`tensorflow.compat.v1.keras`.

Libraries built on tf.estimator (DeepCTR, TF-Ranking, Spleeter, ...) import TF 2.15's modules by path:
`from tensorflow.python.estimator.canned.head import _Head`,
`from tensorflow_estimator.python.estimator.canned import optimizers`,
`from tensorflow.compat.v1.keras.initializers import he_uniform`. TensorFlow 2.16 removed them all.

`LegacyFinder`, on `sys.meta_path` while installed, serves each such module:
  - a module of tensorflow_estimator 2.15 (or TensorFlow's forwarding copy under
    `tensorflow.python.estimator`) is a `LegacyModule`: a module of that name whose names are looked
    up when first used in the project's module of the same concept (`COUNTERPARTS`), with TF 2.15's
    spellings where the project spells a name differently (`RENAMED`; in TF 2.15's `canned.dnn`,
    `DNNClassifier` is TF 1.x's class and `DNNClassifierV2` tf.estimator's). A name TF 2.15's module
    defined that has no counterpart here fails with one line naming it and the closest public name;
  - the public API packages (`tensorflow_estimator.estimator`, `..._api.v2.estimator`, ...) are
    `compat.estimator` and `compat.estimator.v1` themselves;
  - `tensorflow.compat.v1.keras` and its submodules are tf_keras' TF 1.x API, the Keras 2 that
    TF 2.15's `tf.compat.v1.keras` was.

The names each TF 2.15 module defined are listed in tf215_modules.json (written by
tests/helpers/tf215_module_names.py under TF 2.15); docs/compatibility.md counts how many resolve.
"""

from __future__ import annotations

import difflib
import dis
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import types
from functools import cache
from typing import Any

from compat.core import tf_namespaces
from compat.core.errors import UserError

_ESTIMATOR = "tensorflow_estimator.python.estimator"
_FORWARDING = "tensorflow.python.estimator"  # TF 2.15's copies of the same modules, forwarding to them
_KERAS_V1 = "tensorflow.compat.v1.keras"
_TF_KERAS_V1 = "tf_keras.api._v1.keras"  # tf_keras' TF 1.x API, as `tf.compat.v1.keras` was in TF 2.15

# The public API packages: the module itself, not a look-up table. `tensorflow_estimator.estimator` was
# TF 1.x's API in TF 2.15 (tensorflow_estimator's own __init__ imported `_api.v1`).
_API_V1 = "compat.estimator.v1"
_API_V2 = "compat.estimator"
PUBLIC_API = {
    "tensorflow_estimator.estimator": _API_V1,
    "tensorflow_estimator._api.v1.estimator": _API_V1,
    "tensorflow_estimator._api.v2.estimator": _API_V2,
    f"{_ESTIMATOR}.api._v1.estimator": _API_V1,
    f"{_ESTIMATOR}.api._v2.estimator": _API_V2,
}

# TensorFlow's own spellings of the two API packages (`tensorflow.compat.v2.compat.v1.estimator`, ...): the same
# modules, wherever a program's first import of one comes (compat/core/tf_namespaces.py has the spellings).
PUBLIC_API.update(
    {
        ".".join(part for part in ("tensorflow", path, "estimator") if part): api
        for version, api in (("v2", _API_V2), ("v1", _API_V1))
        for path in tf_namespaces.SPELLINGS[version]
    }
)
# `import tensorflow.compat.v1.layers` (each spelling): the TF 1.x layers the attribute is after importing
# compat.estimator (compat/core/tf_internals.py), not TensorFlow's stub of them, which raises under Keras 3.
PUBLIC_API.update(
    {
        f"tensorflow.{path}.layers": "tf_keras.api._v1.keras.__internal__.legacy.layers"
        for path in tf_namespaces.SPELLINGS["v1"]
    }
)
# The module objects between `tensorflow` and those packages that TensorFlow reaches only as attributes
# (`tf.compat.v2.compat.v1`): imported by name, they are those objects, not second copies without the names
# install() gave them.
_NAMESPACES = frozenset(
    ".".join(["tensorflow", *parts[:end]])
    for version in ("v1", "v2")
    for path in tf_namespaces.SPELLINGS[version]
    if (parts := path.split(".")) and len(parts) > 2
    for end in range(3, len(parts) + 1)
)

# TF 2.15's module (below tensorflow_estimator.python.estimator) -> the project's modules of the same concept,
# searched in order. A module not listed has the counterpart of the same path, if the project has one.
COUNTERPARTS: dict[str, tuple[str, ...]] = {
    "canned.head": ("compat.estimator.canned.v1_heads",),
    "canned.linear": ("compat.estimator.canned.linear", "compat.estimator.canned.linear_sdca"),
    "canned.linear_optimizer.python.utils.sdca_ops": ("compat.estimator.canned.linear_sdca",),
    "estimator": ("compat.estimator.estimator", "compat.estimator.warm_starting", "compat.estimator.model_fn"),
    "estimator_lib": (
        _API_V1,
        "compat.estimator.early_stopping",
        "compat.estimator.model_fn",
        "compat.estimator.canned.rnn",
        "compat.estimator.tpu.tpu_estimator",
    ),
    "head.sequential_head": ("compat.estimator.canned.rnn",),
    "run_config": ("compat.estimator.run_config", "compat.core.tf_config"),
    "tpu.util": ("compat.estimator.tpu.tpu_config",),
    # TF 2.15 re-exported TensorFlow's own export outputs and export utilities (still in TF 2.21)
    "export.export_lib": (
        "compat.estimator.export.export",
        "compat.estimator.export.export_output",
        "compat.core.tf_internals.export_output",
        "compat.core.tf_internals.export_utils",
    ),
    "export.export_output": ("compat.estimator.export.export_output", "compat.core.tf_internals.export_output"),
    "hooks.basic_session_run_hooks": ("compat.estimator.hooks",),
    "hooks.session_run_hook": ("compat.estimator.hooks",),
    "inputs.inputs": ("compat.estimator.inputs",),
    "inputs.numpy_io": ("compat.estimator.inputs",),
    "inputs.pandas_io": ("compat.estimator.inputs",),
    "keras_lib": ("compat.estimator.keras_engine",),
    "mode_keys": ("compat.estimator.model_fn",),
    "util": ("compat.estimator.input_fns",),
}
_FORWARDED_AS = {"keras": "keras_lib"}  # tensorflow.python.estimator.keras forwarded to keras_lib

# (TF 2.15's module, its name) -> (the project's module, the name there), where the two spell it differently.
RENAMED: dict[tuple[str, str], tuple[str, str]] = {
    ("canned.head", "_Head"): ("compat.estimator.canned.v1_heads", "V1Head"),
    ("canned.head", "_create_eval_metrics_tuple"): ("compat.estimator.head.base_head", "create_eval_metrics_tuple"),
    ("canned.head", "_DEFAULT_SERVING_KEY"): ("compat.estimator.head.base_head", "DEFAULT_SERVING_KEY"),
    ("canned.head", "_CLASSIFY_SERVING_KEY"): ("compat.estimator.head.base_head", "CLASSIFY_SERVING_KEY"),
    ("canned.head", "_REGRESS_SERVING_KEY"): ("compat.estimator.head.base_head", "REGRESS_SERVING_KEY"),
    ("canned.head", "_PREDICT_SERVING_KEY"): ("compat.estimator.head.base_head", "PREDICT_SERVING_KEY"),
    ("canned.head", "_all_class_ids"): ("compat.estimator.head.base_head", "all_class_ids"),
    ("canned.head", "_all_classes"): ("compat.estimator.head.base_head", "all_classes"),
    ("canned.head", "_call_loss_fn"): ("compat.estimator.head.base_head", "call_loss_fn"),
    ("canned.head", "_check_logits_final_dim"): ("compat.estimator.head.base_head", "check_logits_final_dim"),
    ("canned.head", "_validate_loss_fn_args"): ("compat.estimator.head.base_head", "validate_loss_fn_args"),
    ("canned.head", "_validate_n_classes"): ("compat.estimator.head.base_head", "validate_n_classes"),
    ("canned.head", "_assert_range"): ("compat.estimator.head.base_head", "check_label_range"),
    ("canned.head", "_classification_output"): ("compat.estimator.head.base_head", "classification_output"),
    ("canned.head", "_check_dense_labels_match_logits_and_reshape"): (
        "compat.estimator.head.base_head",
        "check_dense_labels_match_logits_and_reshape",
    ),
    ("canned.head", "_get_weights_and_check_match_logits"): (
        "compat.estimator.head.base_head",
        "get_weights_and_check_match_logits",
    ),
    ("canned.head", "_binary_logistic_head_with_sigmoid_cross_entropy_loss"): (
        "compat.estimator.canned.v1_heads",
        "binary_head_v1",
    ),
    ("canned.head", "_multi_class_head_with_softmax_cross_entropy_loss"): (
        "compat.estimator.canned.v1_heads",
        "multi_class_head_v1",
    ),
    ("canned.head", "_BinaryLogisticHeadWithSigmoidCrossEntropyLoss"): (
        "compat.estimator.canned.v1_heads",
        "BinaryClassHeadV1",
    ),
    ("canned.head", "_MultiClassHeadWithSoftmaxCrossEntropyLoss"): (
        "compat.estimator.canned.v1_heads",
        "MultiClassHeadV1",
    ),
    ("canned.head", "_RegressionHeadWithMeanSquaredErrorLoss"): (
        "compat.estimator.canned.v1_heads",
        "RegressionHeadV1",
    ),
    ("canned.head", "_binary_logistic_or_multi_class_head"): ("compat.estimator.canned.v1_heads", "classifier_head_v1"),
    ("canned.optimizers", "get_optimizer_instance"): (
        "compat.estimator.canned.optimizers",
        "get_v1_optimizer_instance",
    ),
    ("canned.optimizers", "get_optimizer_instance_v2"): (
        "compat.estimator.canned.optimizers",
        "get_optimizer_instance",
    ),
    ("canned.dnn", "dnn_model_fn_v2"): ("compat.estimator.canned.dnn", "dnn_model_fn"),
    ("canned.dnn", "_dnn_model_fn"): ("compat.estimator.canned.dnn", "dnn_model_fn_v1"),
    ("canned.dnn", "dnn_logit_fn_builder"): ("compat.estimator.canned.dnn", "dnn_logit_fn_builder_v1"),
    ("canned.dnn", "dnn_logit_fn_builder_v2"): ("compat.estimator.canned.dnn", "dnn_logit_fn_builder"),
    ("canned.dnn", "_DNNModelV2"): ("compat.estimator.canned.dnn", "_DNNModel"),
    ("canned.linear", "_validate_linear_sdca_optimizer_for_linear_classifier"): (
        "compat.estimator.canned.linear",
        "check_sdca_classifier",
    ),
    ("canned.linear", "linear_logit_fn_builder"): ("compat.estimator.canned.linear", "linear_logit_fn_builder_v1"),
    ("canned.linear", "linear_logit_fn_builder_v2"): ("compat.estimator.canned.linear", "linear_logit_fn_builder"),
    ("keras_lib", "model_to_estimator"): ("compat.estimator.keras_engine.engine", "keras_lib_model_to_estimator"),
    ("canned.kmeans", "KMeansClustering"): ("compat.estimator.canned.kmeans", "KMeans"),
    ("estimator", "EstimatorV2"): ("compat.estimator.estimator", "Estimator"),
    ("estimator", "maybe_overwrite_model_dir_and_session_config"): ("compat.estimator.base", "config_with_model_dir"),
    ("estimator", "_verify_model_fn_args"): ("compat.estimator.estimator", "verify_model_fn_args"),
    ("estimator", "_check_hooks_type"): ("compat.estimator.estimator", "check_hooks"),
    ("estimator", "_get_replica_device_setter"): ("compat.estimator.estimator", "replica_device_setter"),
    ("estimator", "_check_listeners_type"): ("compat.estimator.estimator", "_check_listeners"),
    ("estimator", "_write_dict_to_summary"): ("compat.estimator.base", "write_dict_to_summary"),
    ("estimator", "_write_checkpoint_path_to_summary"): ("compat.estimator.base", "write_checkpoint_path_to_summary"),
    ("estimator", "_check_checkpoint_available"): ("compat.estimator.base", "check_checkpoint_available"),
    ("estimator_lib", "model_to_estimator"): ("compat.estimator.keras_engine.engine", "keras_lib_model_to_estimator"),
    ("estimator_lib", "KMeansClustering"): ("compat.estimator.canned.kmeans", "KMeans"),
    ("estimator_lib", "dnn_logit_fn_builder"): ("compat.estimator.canned.dnn", "dnn_logit_fn_builder_v1"),
    ("estimator_lib", "linear_logit_fn_builder"): ("compat.estimator.canned.linear", "linear_logit_fn_builder_v1"),
    ("export.export", "SINGLE_FEATURE_DEFAULT_NAME"): ("compat.estimator.export.export", "SINGLE_FEATURE_KEY"),
    ("export.export", "SINGLE_LABEL_DEFAULT_NAME"): ("compat.estimator.export.export", "SINGLE_LABEL_KEY"),
    ("export.export", "SINGLE_RECEIVER_DEFAULT_NAME"): ("compat.estimator.export.export", "SINGLE_RECEIVER_KEY"),
    ("run_config", "get_default_session_config"): ("compat.estimator.base", "default_session_config"),
    ("canned.rnn", "_get_rnn_estimator_spec"): ("compat.estimator.canned.rnn", "_rnn_estimator_spec"),
    ("model_fn", "verify_model_fn_args"): ("compat.estimator.estimator", "verify_model_fn_args"),
    ("canned.parsing_utils", "classifier_parse_example_spec_v2"): (
        "compat.estimator.canned.parsing_utils",
        "classifier_parse_example_spec",
    ),
    ("canned.parsing_utils", "regressor_parse_example_spec_v2"): (
        "compat.estimator.canned.parsing_utils",
        "regressor_parse_example_spec",
    ),
    ("model_fn", "_TPUEstimatorSpec"): ("compat.estimator.tpu.tpu_estimator", "TPUEstimatorSpec"),
    ("util", "_DatasetInitializerHook"): ("compat.estimator.input_fns", "DatasetInitializerHook"),
}


class LegacyNameError(UserError, AttributeError):
    """A name TF 2.15's module defined that the project has no counterpart for.

    An AttributeError, so that `hasattr` and `getattr(module, name, default)` probe as they did; a
    `from ... import name` gets `LegacyImportError` instead (`LegacyModule.__getattr__`), whose message
    Python shows rather than its generic one.
    """


class LegacyImportError(UserError, ImportError):
    """`from <TF 2.15's module> import <name>` of a name the project has no counterpart for."""


@cache
def _tf215() -> dict[str, Any]:
    with open(os.path.join(os.path.dirname(__file__), "tf215_modules.json"), encoding="utf-8") as stream:
        return json.load(stream)


def tf215_modules() -> dict[str, list[str]]:
    """Every module of tensorflow_estimator 2.15 and TensorFlow's forwarding package, with the names it defined."""
    return _tf215()["modules"]


def tf215_constants() -> dict[str, dict[str, Any]]:
    """The plain constants (strings, numbers, lists of them) of TF 2.15's modules, by module, as facts."""
    return _tf215()["constants"]


def _names_of(fullname: str) -> list[str]:
    """The names TF 2.15's module `fullname` defined, for either spelling (tensorflow_estimator's is the list:
    TensorFlow's forwarding copy re-exported it)."""
    relative = relative_name(fullname)
    return [] if relative is None else tf215_modules().get(f"{_ESTIMATOR}.{relative}", [])


def relative_name(fullname: str) -> str | None:
    """The module's path below tensorflow_estimator.python.estimator ('' for that package), for either
    spelling; None for a module outside both."""
    for root in (_ESTIMATOR, _FORWARDING):
        if fullname == root:
            return ""
        if fullname.startswith(root + "."):
            relative = fullname[len(root) + 1 :]
            return _FORWARDED_AS.get(relative, relative) if root == _FORWARDING else relative
    return None


def counterparts(relative: str) -> tuple[str, ...]:
    """The project's modules that answer for TF 2.15's module `relative`."""
    if relative in COUNTERPARTS:
        return COUNTERPARTS[relative]
    candidate = f"compat.estimator.{relative}"
    return (candidate,) if relative and _module_exists(candidate) else ()


def _load(dotted: str) -> Any:
    """A module by its dotted name, or a module held as an attribute (`compat.core.tf_internals.export_utils`)."""
    try:
        return importlib.import_module(dotted)
    except ModuleNotFoundError as error:
        if error.name != dotted:
            raise  # a module missing inside the counterpart, not the counterpart itself
        owner, _, attribute = dotted.rpartition(".")
        return getattr(importlib.import_module(owner), attribute)


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _v1_canned_name(module: types.ModuleType, name: str) -> str | None:
    """In TF 2.15's canned modules `DNNClassifier` is TF 1.x's class, `DNNClassifierV2` tf.estimator's:
    here they are `DNNClassifierV1` and `DNNClassifier`."""
    if hasattr(module, f"{name}V1"):
        return f"{name}V1"
    if name.endswith("V2") and hasattr(module, f"{name[:-2]}V1"):
        return name[:-2]
    return None


def _public_spellings(module_name: str, name: str) -> list[str]:
    """What a private name of TF 2.15 is called here, where this project made it public: `_x` is `x`; in the
    canned modules, where TF 2.15's unsuffixed functions were TF 1.x's (`_baseline_model_fn`) and TF2's carried
    `_v2`, `_x` is `x_v1` (else `x`) and `_x_v2` is `x`."""
    if not name.startswith("_") or name.startswith("__"):
        return []
    public = name[1:]
    if not module_name.startswith("compat.estimator.canned."):
        return [public]
    return [public[: -len("_v2")]] if public.endswith("_v2") else [f"{public}_v1", public]


def resolve(fullname: str, name: str) -> Any:
    """The value of `name` in TF 2.15's module `fullname`, from its counterpart here.

    Raises:
        LegacyNameError: TF 2.15's module had the name and the project has nothing for it.
        AttributeError: TF 2.15's module did not have the name either.
    """
    relative = relative_name(fullname)
    if relative is None:
        raise AttributeError(f"module {fullname!r} has no attribute {name!r}")  # a package above the modules
    if (relative, name) in RENAMED:
        module_name, attribute = RENAMED[(relative, name)]
        return getattr(importlib.import_module(module_name), attribute)
    if name not in _names_of(fullname):  # only TF 2.15's names: the counterparts' own helpers and imports are not
        raise AttributeError(f"module {fullname!r} has no attribute {name!r} (nor had TF 2.15's)")
    for module_name in counterparts(relative):
        module = _load(module_name)
        if module_name.startswith("compat.estimator.canned."):
            name_here = _v1_canned_name(module, name)
            if name_here is not None:
                return getattr(module, name_here)
        if hasattr(module, name):
            return getattr(module, name)
        for spelled in _public_spellings(module_name, name):
            if hasattr(module, spelled):
                return getattr(module, spelled)
    public = importlib.import_module(_API_V2)
    if name in public.__all__:
        return getattr(public, name)  # a re-export of a public name (ModeKeys, VocabInfo, the hooks)
    constants = tf215_constants().get(f"{_ESTIMATOR}.{relative}", {})
    if name in constants:  # a plain constant of TF 2.15's module (a TF_CONFIG key, a default learning rate)
        value = constants[name]
        return tuple(value) if isinstance(value, list) else value
    raise LegacyNameError(_missing_message(fullname, name))


def _missing_message(fullname: str, name: str) -> str:
    public = importlib.import_module(_API_V2)
    candidates = [*public.__all__, *(f"experimental.{n}" for n in vars(public.experimental))]
    close = difflib.get_close_matches(name.strip("_"), candidates, n=1, cutoff=0.5)
    hint = f": the closest public name is tf.estimator.{close[0]}" if close else ": use tf.estimator's public names"
    return f"{fullname}.{name} (TF 2.15's) has no counterpart under compat.estimator{hint}"


def _importing_from() -> bool:
    """Whether the code asking for a module attribute is a `from ... import name` statement (its frame is at
    the IMPORT_FROM instruction): that one is told why in an ImportError, a `hasattr` is answered False."""
    frame = sys._getframe(2)  # the caller of LegacyModule.__getattr__ (the import machinery calls it from C)
    try:
        return dis.opname[frame.f_code.co_code[frame.f_lasti]] == "IMPORT_FROM"
    except (IndexError, AttributeError):
        return False
    finally:
        del frame


class LegacyModule(types.ModuleType):
    """TF 2.15's module `__name__`: each name is looked up in its counterpart when first used, then kept."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        submodule = f"{self.__name__}.{name}"
        if hasattr(self, "__path__") and _is_known_module(submodule):
            return importlib.import_module(submodule)  # TF 2.15's submodule, not the project's of that name
        try:
            value = resolve(self.__name__, name)
        except LegacyNameError as error:
            if _importing_from():
                raise LegacyImportError(str(error)) from None
            raise
        setattr(self, name, value)
        return value

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *_names_of(self.__name__)})


@cache
def _package_names() -> frozenset[str]:
    """Every TF 2.15 module path the finder serves, and each package above one below `tensorflow`'s namespaces."""
    names: set[str] = set()
    for module in [*tf215_modules(), *PUBLIC_API]:
        parts = module.split(".")
        names.update(".".join(parts[:end]) for end in range(1, len(parts) + 1))
    outside = ("tensorflow", "tensorflow.python", "tensorflow.compat")  # TensorFlow's own packages
    return frozenset(name for name in names if not (name in outside or _is_namespace(name)))


def _is_namespace(fullname: str) -> bool:
    """`tensorflow.compat.v1`, `tensorflow.compat.v2` and their nested spellings: TensorFlow's own modules."""
    return fullname in _NAMESPACES or fullname in ("tensorflow.compat.v1", "tensorflow.compat.v2")


def _is_known_module(fullname: str) -> bool:
    """A module of TF 2.15's (or a package above one), or a name standing for an existing module: the public
    API packages and their submodules (`tensorflow_estimator.estimator.export`), tf_keras' TF 1.x API, the
    nested spellings of TensorFlow's namespaces."""
    return fullname in _package_names() or fullname in _NAMESPACES or _existing_target(fullname) is not None


def is_served_path(fullname: str) -> bool:
    """Whether `import <fullname>` is served by the finder after install() (for the migration check)."""
    return _is_known_module(fullname)


def had_name(fullname: str, name: str) -> bool:
    """Whether TF 2.15's module `fullname` had `name` (a name it defined, or a submodule of it)."""
    if fullname.startswith(_KERAS_V1):
        return True  # tf_keras' TF 1.x API: its names are Keras 2's own, not listed here
    return name in _names_of(fullname) or _is_known_module(f"{fullname}.{name}")


def _is_package(fullname: str) -> bool:
    prefix = fullname + "."
    return any(name.startswith(prefix) for name in _package_names()) or fullname.startswith(_KERAS_V1)


class _Loader(importlib.abc.Loader):
    """Makes a `LegacyModule`, or hands the import system an existing module (the public API, tf_keras')."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = LegacyModule(spec.name)
        if _is_package(spec.name):
            module.__path__ = []  # a package: its submodules are found by this finder alone
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        _served.add(module.__name__)
        existing = _existing(module.__name__)
        if existing is not None:
            # The import system returns what sys.modules holds after exec_module: the real module, unchanged.
            sys.modules[module.__name__] = existing


_served: set[str] = set()  # the module names this finder's loader made or handed out, for uninstall()


def _existing_target(fullname: str) -> str | None:
    """The real module a served name stands for: the public API packages (and their submodules, which must
    not load a second time under TF 2.15's name), and tf_keras' TF 1.x API."""
    for alias, target in PUBLIC_API.items():
        if fullname == alias or fullname.startswith(alias + "."):
            return target + fullname[len(alias) :]
    if fullname == _KERAS_V1 or fullname.startswith(_KERAS_V1 + "."):
        return _TF_KERAS_V1 + fullname[len(_KERAS_V1) :]
    return None


def _existing(fullname: str) -> Any:
    """The object a served name stands for (`_existing_target`'s module, or the attribute of that name in its
    package: `tensorflow.compat.v1.estimator.tpu`; TensorFlow's namespace reached by attributes), else None."""
    if fullname in _NAMESPACES:
        found: Any = sys.modules["tensorflow"]
        for part in fullname.split(".")[1:]:
            found = getattr(found, part, None)
        return found
    target = _existing_target(fullname)
    if target is None:
        return None
    if _module_exists(target):
        return importlib.import_module(target)
    owner, _, attribute = target.rpartition(".")
    found = getattr(importlib.import_module(owner), attribute, None) if _module_exists(owner) else None
    return found if isinstance(found, (types.ModuleType, types.SimpleNamespace)) else None


class LegacyFinder(importlib.abc.MetaPathFinder):
    """Finds TF 2.15's module paths (this module's docstring); every other import goes on as before."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not _is_known_module(fullname):
            return None
        if (fullname in _NAMESPACES or _existing_target(fullname) is not None) and _existing(fullname) is None:
            return None  # no such module there: the import fails as it would have in TF 2.15
        return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=_is_package(fullname))


def served_modules() -> list[str]:
    """The names of the modules in sys.modules that the finder made or handed out (for `uninstall()`)."""
    served = sorted(name for name in _served if name in sys.modules)
    _served.clear()
    return served


def insert_finder(finder: LegacyFinder) -> None:
    """Puts `finder` on sys.meta_path just before Python's path finder: after any finder a program put first
    (a test harness serving these names itself), before a leftover tensorflow_estimator on sys.path, which
    cannot run on this TensorFlow."""
    for index, entry in enumerate(sys.meta_path):
        if entry is importlib.machinery.PathFinder:
            sys.meta_path.insert(index, finder)
            return
    sys.meta_path.append(finder)


def unresolved() -> dict[str, list[str]]:
    """{TF 2.15's module below tensorflow_estimator.python.estimator: its names with no counterpart here}, from
    `coverage()`; recorded in legacy_unresolved.json, which the migration check reads without TensorFlow."""
    found: dict[str, set[str]] = {}
    for module, (_, missing) in coverage().items():
        relative = relative_name(module)
        if missing and relative is not None:
            found.setdefault(relative, set()).update(missing)
    return {relative: sorted(names) for relative, names in sorted(found.items())}


@cache
def _recorded_unresolved() -> dict[str, frozenset[str]]:
    with open(os.path.join(os.path.dirname(__file__), "legacy_unresolved.json"), encoding="utf-8") as stream:
        return {relative: frozenset(names) for relative, names in json.load(stream).items()}


def resolves(fullname: str, name: str) -> bool:
    """Whether TF 2.15's `fullname`.`name` has a counterpart here (the recorded `unresolved()`), without
    TensorFlow: the migration check's verdict on such an import."""
    relative = relative_name(fullname)
    return relative is None or name not in _recorded_unresolved().get(relative, frozenset())


def coverage() -> dict[str, tuple[list[str], list[str]]]:
    """For every TF 2.15 module: (the names that resolve here, the names that do not).

    For docs/compatibility.md's table and its test; loads most of the package (each counterpart module).
    """
    result: dict[str, tuple[list[str], list[str]]] = {}
    for module, names in sorted(tf215_modules().items()):
        resolved, missing = [], []
        for name in names:
            try:
                resolve(module, name)
            except (AttributeError, ImportError):
                missing.append(name)
            else:
                resolved.append(name)
        result[module] = (resolved, missing)
    return result
