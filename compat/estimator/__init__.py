"""tf.estimator on TensorFlow >= 2.16 and Keras 3: `import compat.estimator as estimator`.

Names as in tf.estimator; `install()` makes `tf.estimator.<name>` (and
`tf.compat.v1.estimator`, `tf.keras.estimator.model_to_estimator`) resolve to
these, so a legacy program runs unchanged after one added line.

Two engines serve the constructors:
  - `Estimator(model_fn=...)` and the canned estimators (DNN*, Linear*,
    DNNLinearCombined*, Baseline*): the graph engine (estimator.py), tf.compat.v1 graphs
    and sessions with TensorFlow's own hooks, name-based checkpoints as TF 2.15;
  - `model_to_estimator(keras_model)`: the Keras engine (keras_engine/), Keras 3
    eagerly, many steps per compiled call, object-based checkpoints.
Both share RunConfig, TrainSpec/EvalSpec, train_and_evaluate and the exporters.
See the README for the differences from TF 2.15, each on purpose.

Names load when first used (PEP 562, `lazy_loader`): `import compat.estimator` costs nothing, the graph
engine loads TensorFlow with the first Estimator name a program reaches, and Keras 2 (`tf_keras`, about a
third of a second) loads only with what is built from it (the canned estimators and heads, tf.compat.v1
layers). The migration check runs without TensorFlow.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import types
from typing import TYPE_CHECKING, Any

import lazy_loader

from compat.estimator import canned, head, hooks

# Where each public name lives ({module: names}), loaded on first use; the imports under TYPE_CHECKING below
# say the same to type checkers and editors. tests/test_estimator_api.py checks that every name of TF 2.15's
# tf.estimator resolves, and tests/test_architecture.py that the two tables agree.
_SUBMODULES = ["export", "inputs", "tpu"]
_LAZY = {
    "estimator": ["Estimator"],
    "exporter": ["BestExporter", "Exporter", "FinalExporter", "LatestExporter"],
    "extenders": ["add_metrics"],
    "hooks": hooks.__all__,  # its package's own list (that package loads no TensorFlow until a name is used)
    "keras_engine": ["model_to_estimator"],
    "keras_serving": ["export_keras_saved_model"],
    "model_fn": ["EstimatorSpec", "ModeKeys"],
    "run_config": ["RunConfig"],
    "to_keras": ["to_keras"],
    "training": ["EvalSpec", "TrainSpec", "train_and_evaluate"],
    "warm_starting": ["VocabInfo", "WarmStartSettings"],
    # the canned estimators and heads by their packages' own tables (those packages load nothing yet)
    "canned": canned.__all__,
    "head": head.__all__,
}
_lazy_getattr, _, _LAZY_NAMES = lazy_loader.attach(__name__, submodules=_SUBMODULES, submod_attrs=_LAZY)

if TYPE_CHECKING:  # the names above, for type checkers and editors; at run time they load when first used
    from compat.estimator import export, inputs, tpu
    from compat.estimator.canned import (
        BaselineClassifier,
        BaselineEstimator,
        BaselineRegressor,
        DNNClassifier,
        DNNEstimator,
        DNNLinearCombinedClassifier,
        DNNLinearCombinedEstimator,
        DNNLinearCombinedRegressor,
        DNNRegressor,
        LinearClassifier,
        LinearEstimator,
        LinearRegressor,
        classifier_parse_example_spec,
        regressor_parse_example_spec,
    )
    from compat.estimator.estimator import Estimator
    from compat.estimator.exporter import BestExporter, Exporter, FinalExporter, LatestExporter
    from compat.estimator.extenders import add_metrics
    from compat.estimator.head import (
        BinaryClassHead,
        Head,
        LogisticRegressionHead,
        MultiClassHead,
        MultiHead,
        MultiLabelHead,
        PoissonRegressionHead,
        RegressionHead,
    )
    from compat.estimator.hooks import *  # noqa: F403  (TensorFlow's classes: Any to type checkers)
    from compat.estimator.keras_engine import model_to_estimator
    from compat.estimator.keras_serving import export_keras_saved_model
    from compat.estimator.model_fn import EstimatorSpec, ModeKeys
    from compat.estimator.run_config import RunConfig
    from compat.estimator.to_keras import to_keras
    from compat.estimator.training import EvalSpec, TrainSpec, train_and_evaluate
    from compat.estimator.warm_starting import VocabInfo, WarmStartSettings

__all__ = sorted({*_LAZY_NAMES, "experimental", "install", "uninstall"})


def _experimental() -> types.SimpleNamespace:
    """tf.estimator.experimental, built when first used (it holds names from most of the package)."""
    from compat.estimator import early_stopping
    from compat.estimator.canned import EXPERIMENTAL
    from compat.estimator.canned.dnn import dnn_logit_fn_builder
    from compat.estimator.canned.linear import linear_logit_fn_builder
    from compat.estimator.export.export import build_raw_supervised_input_receiver_fn
    from compat.estimator.hooks.hooks import InMemoryEvaluatorHook, make_stop_at_checkpoint_step_hook
    from compat.estimator.model_fn import call_logit_fn

    return types.SimpleNamespace(
        InMemoryEvaluatorHook=InMemoryEvaluatorHook,
        build_raw_supervised_input_receiver_fn=build_raw_supervised_input_receiver_fn,
        call_logit_fn=call_logit_fn,
        dnn_logit_fn_builder=dnn_logit_fn_builder,
        linear_logit_fn_builder=linear_logit_fn_builder,
        make_early_stopping_hook=early_stopping.make_early_stopping_hook,
        make_stop_at_checkpoint_step_hook=make_stop_at_checkpoint_step_hook,
        stop_if_higher_hook=early_stopping.stop_if_higher_hook,
        stop_if_lower_hook=early_stopping.stop_if_lower_hook,
        stop_if_no_decrease_hook=early_stopping.stop_if_no_decrease_hook,
        stop_if_no_increase_hook=early_stopping.stop_if_no_increase_hook,
        **EXPERIMENTAL,  # LinearSDCA, RNNClassifier, RNNEstimator
    )


_prepared = False


def _prepare() -> None:
    """Makes tf.compat.v1.layers work (compat/core/tf_internals.py), once: model_fns are built from them."""
    global _prepared
    from compat.core import tf_internals

    tf_internals.prepare()
    _prepared = True


def __getattr__(name: str) -> Any:
    """A public name, loaded when first used and then kept as an attribute of this module.

    The first one also makes tf.compat.v1.layers work (`_prepare`), if the import did not.
    """
    if not _prepared and name in __all__:
        _prepare()
    value: Any
    if name == "experimental":
        value = _experimental()
    elif name not in __all__ and not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}"):
        value = importlib.import_module(f"{__name__}.{name}")  # a module of the package, as an attribute
    else:
        value = _lazy_getattr(name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


_PART = "install"  # install()'s changes, in compat/core/patches.py's one list


def install() -> None:
    """Makes `tf.estimator` this module, `tf.compat.v1.estimator` compat.estimator.v1 (TF 1.x's canned classes),
    `tf.keras.estimator.model_to_estimator` this module's,
    `tf.keras.optimizers.legacy.<Name>` Keras 3's optimizers (see keras_engine/keras2_artefacts.py) and
    `tf.keras.layers.DenseFeatures` a Keras 3 layer over feature columns (see dense_features.py), and
    TF 2.15's module paths importable: `tensorflow_estimator.*`, `tensorflow.python.estimator.*` and
    `tensorflow.compat.v1.keras` (see legacy_modules.py).

    A legacy program calls it once, at its start, before using those names;
    `uninstall()` puts TensorFlow's own attributes back. Calling it twice is harmless. Every change is
    recorded in `compat.core.patches.PATCHES`, with those importing this package made.
    """
    import tensorflow as tf

    from compat.core import tf_internals
    from compat.core.patches import PATCHES

    tf_internals.install()  # explicit: after an uninstall() too (it reopens what that withdrew)
    if PATCHES.made_by(_PART):
        return
    from compat.estimator import v1 as estimator_v1
    from compat.estimator.dense_features import DenseFeatures
    from compat.estimator.keras_engine import model_to_estimator
    from compat.estimator.keras_engine.keras2_artefacts import legacy_namespace

    this = sys.modules[__name__]
    keras_estimator = types.SimpleNamespace(model_to_estimator=model_to_estimator)
    # `tf.compat.v1.keras` becomes tf_keras' TF 1.x API, as `import tensorflow.compat.v1.keras` gives it
    # (legacy_modules.py), so both spellings reach the same Keras 2 that TF 2.15 had there.
    keras_v1 = importlib.import_module("tf_keras.api._v1.keras")
    names = [
        *((v2, "estimator", this) for v2 in tf_internals.namespace_modules("v2")),
        *((v1, "estimator", estimator_v1) for v1 in tf_internals.compat_v1_modules()),
        (tf.keras, "estimator", keras_estimator),
        *((v1, "keras", keras_v1) for v1 in tf_internals.compat_v1_modules()),
    ]
    if not tf.keras.__name__.startswith("tf_keras"):
        # Keras 3 lacks what TF 2.15's Keras 2 had here; under TF_USE_LEGACY_KERAS=1 tf.keras is Keras 2, and has it
        names += [
            (tf.keras.optimizers, "legacy", legacy_namespace()),
            # every module object a program may reach tf.keras.layers as (`from tensorflow.keras import layers`,
            # `import tensorflow.keras.layers`, which Python may have loaded as a second copy of the same file)
            *((layers, "DenseFeatures", DenseFeatures) for layers in _keras_layers_modules(tf)),
            *_keras2_function_names(tf),
        ]
    for owner, name, value in names:
        PATCHES.set_attribute(_PART, owner, name, value)
    _serve_tf_2_15_module_paths(keras_estimator)


def _serve_tf_2_15_module_paths(keras_estimator: types.SimpleNamespace) -> None:
    """TF 2.15's module paths (`tensorflow_estimator.*`, `tensorflow.python.estimator.*`): legacy_modules.py's
    finder, and `from tensorflow.estimator import DNNClassifier` (and the v1 and Keras spellings, the latter
    `keras_estimator`, the namespace install() set), which imports them as modules as TF 2.15's lazily
    loaded packages allowed: the import system finds them in sys.modules."""
    import tensorflow as tf

    from compat.core.patches import PATCHES
    from compat.estimator import legacy_modules
    from compat.estimator import v1 as estimator_v1

    python = sys.modules["tensorflow.python"]
    # `tensorflow.python.estimator` is bound by the import system on first import: removed on undo
    PATCHES.add_undo(_PART, lambda: vars(python).pop("estimator", None))

    def remove_finder() -> None:
        sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, legacy_modules.LegacyFinder)]
        for served in legacy_modules.served_modules():
            del sys.modules[served]

    PATCHES.add_undo(_PART, remove_finder)
    legacy_modules.insert_finder(legacy_modules.LegacyFinder())
    for module_name, value in (
        ("tensorflow.estimator", sys.modules[__name__]),
        ("tensorflow.compat.v1.estimator", estimator_v1),
        ("tensorflow.compat.v2.estimator", sys.modules[__name__]),
        ("tensorflow.keras.estimator", keras_estimator),
        # a later `import tensorflow.keras.layers` finds tf.keras.layers (with DenseFeatures), not a new copy
        *((("tensorflow.keras.layers", tf.keras.layers),) if "tensorflow.keras.layers" not in sys.modules else ()),
    ):
        PATCHES.set_item(_PART, sys.modules, module_name, value)


def _keras2_function_names(tf: Any) -> list[tuple[Any, str, Any]]:
    """Keras 2's loss and metric functions by their long names (`tf.keras.losses.mean_squared_error`,
    `tf.keras.metrics.mean_absolute_error`), which Keras 3 has under `keras.losses` but not under tf.keras."""
    import keras

    return [
        (getattr(tf.keras, kind), name, function)
        for kind in ("losses", "metrics")
        for name, function in vars(getattr(keras, kind)).items()
        if not name.startswith("_")
        and inspect.isfunction(function)
        and name not in ("get", "serialize", "deserialize")
        and not hasattr(getattr(tf.keras, kind), name)
    ]


def _keras_layers_modules(tf: Any) -> list:
    """The distinct module objects that stand for `tf.keras.layers` in this process."""
    candidates = [
        tf.keras.layers,
        sys.modules.get("tensorflow.keras.layers"),
        sys.modules.get("keras._tf_keras.keras.layers"),
    ]
    unique: dict[int, Any] = {}
    for module in candidates:
        if module is not None:
            unique.setdefault(id(module), module)
    return list(unique.values())


def uninstall() -> None:
    """Undoes `install()`, and what importing this package did (tf.compat.v1.layers: compat/core/tf_internals.py):
    every change in `compat.core.patches.PATCHES`, newest first."""
    from compat.core.patches import PATCHES

    PATCHES.undo()  # withdrawn until install(): a name or module used later patches nothing again


# A legacy program imports TensorFlow, then this package (its one added line), and may build tf.compat.v1
# layers before it reaches any Estimator name: with TensorFlow loaded, preparing them costs nothing more,
# so the import does it, as it always did. Without TensorFlow (the migration check) the first name does.
if "tensorflow.python" in sys.modules:
    _prepare()
