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
"""

from __future__ import annotations

import sys
import types
from typing import Any

from compat.core import tf_internals
from compat.estimator import early_stopping, export, inputs, tpu
from compat.estimator.canned import *  # noqa: F401,F403  (the canned estimators: canned/__init__.py's __all__)
from compat.estimator.canned import EXPERIMENTAL as _CANNED_EXPERIMENTAL
from compat.estimator.canned import __all__ as _CANNED
from compat.estimator.canned.dnn import dnn_logit_fn_builder
from compat.estimator.canned.linear import linear_logit_fn_builder
from compat.estimator.estimator import Estimator
from compat.estimator.export.export import build_raw_supervised_input_receiver_fn
from compat.estimator.exporter import BestExporter, Exporter, FinalExporter, LatestExporter
from compat.estimator.extenders import add_metrics
from compat.estimator.head import *  # noqa: F401,F403  (the heads: compat/estimator/head/__init__.py's __all__)
from compat.estimator.head import __all__ as _HEADS
from compat.estimator.hooks import (
    CheckpointSaverHook,
    FeedFnHook,
    FinalOpsHook,
    GlobalStepWaiterHook,
    LoggingTensorHook,
    NanLossDuringTrainingError,
    NanTensorHook,
    ProfilerHook,
    SecondOrStepTimer,
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
    StepCounterHook,
    StopAtStepHook,
    SummarySaverHook,
)
from compat.estimator.hooks.hooks import InMemoryEvaluatorHook, make_stop_at_checkpoint_step_hook
from compat.estimator.keras_engine import model_to_estimator
from compat.estimator.keras_serving import export_saved_model as export_keras_saved_model
from compat.estimator.model_fn import EstimatorSpec, ModeKeys, call_logit_fn
from compat.estimator.run_config import RunConfig
from compat.estimator.to_keras import to_keras
from compat.estimator.training import CheckpointSaverListener, EvalSpec, TrainSpec, train_and_evaluate
from compat.estimator.warm_starting import VocabInfo, WarmStartSettings

# tf.estimator.experimental
experimental = types.SimpleNamespace(
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
    **_CANNED_EXPERIMENTAL,  # LinearSDCA, RNNClassifier, RNNEstimator
)

__all__ = [
    "BestExporter",
    "CheckpointSaverHook",
    "CheckpointSaverListener",
    "Estimator",
    "EstimatorSpec",
    "EvalSpec",
    "Exporter",
    "FeedFnHook",
    "FinalExporter",
    "FinalOpsHook",
    "GlobalStepWaiterHook",
    "LatestExporter",
    "LoggingTensorHook",
    "ModeKeys",
    "NanLossDuringTrainingError",
    "NanTensorHook",
    "ProfilerHook",
    "RunConfig",
    "SecondOrStepTimer",
    "SessionRunArgs",
    "SessionRunContext",
    "SessionRunHook",
    "SessionRunValues",
    "StepCounterHook",
    "StopAtStepHook",
    "SummarySaverHook",
    "TrainSpec",
    "VocabInfo",
    "WarmStartSettings",
    "add_metrics",
    "experimental",
    "export",
    "inputs",
    "install",
    "model_to_estimator",
    "to_keras",
    "export_keras_saved_model",
    "tpu",
    "train_and_evaluate",
    "uninstall",
    *_CANNED,
    *_HEADS,
]

_MISSING = object()
_replaced: list[tuple[object, str, object]] = []  # (owner, attribute, previous value) set by install()


def install() -> None:
    """Makes `tf.estimator` this module, `tf.compat.v1.estimator` compat.estimator.v1 (TF 1.x's canned classes),
    `tf.keras.estimator.model_to_estimator` this module's,
    `tf.keras.optimizers.legacy.<Name>` Keras 3's optimizers (see keras_legacy.py) and
    `tf.keras.layers.DenseFeatures` a Keras 3 layer over feature columns (see dense_features.py).

    A legacy program calls it once, at its start, before using those names;
    `uninstall()` puts TensorFlow's own attributes back. Calling it twice is harmless.
    """
    import tensorflow as tf

    tf_internals.install()
    if _replaced:
        return
    from compat.estimator import v1 as estimator_v1
    from compat.estimator.dense_features import DenseFeatures
    from compat.estimator.keras_engine.legacy import legacy_namespace

    this = sys.modules[__name__]
    keras_estimator = types.SimpleNamespace(model_to_estimator=model_to_estimator)
    names = [
        (tf, "estimator", this),
        *((v1, "estimator", estimator_v1) for v1 in tf_internals.compat_v1_modules()),
        (tf.keras, "estimator", keras_estimator),
        (tf.keras.optimizers, "legacy", legacy_namespace()),
        # every module object a program may reach tf.keras.layers as (`from tensorflow.keras import layers`,
        # `import tensorflow.keras.layers`, which Python may have loaded as a second copy of the same file)
        *((layers, "DenseFeatures", DenseFeatures) for layers in _keras_layers_modules(tf)),
    ]
    for owner, name, value in names:
        _replaced.append((owner, name, getattr(owner, name, _MISSING)))
        setattr(owner, name, value)
    # `from tensorflow.estimator import DNNClassifier` (and the v1 and Keras spellings) imports them as
    # modules, as TF 2.15's lazily loaded packages allowed: the import system finds them in sys.modules
    for module_name, value in (
        ("tensorflow.estimator", this),
        ("tensorflow.compat.v1.estimator", estimator_v1),
        ("tensorflow.keras.estimator", keras_estimator),
        # a later `import tensorflow.keras.layers` finds tf.keras.layers (with DenseFeatures), not a new copy
        *((("tensorflow.keras.layers", tf.keras.layers),) if "tensorflow.keras.layers" not in sys.modules else ()),
    ):
        _replaced.append((sys.modules, module_name, sys.modules.get(module_name, _MISSING)))
        sys.modules[module_name] = value  # type: ignore[assignment]  # a namespace object serves as a module


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
    """Undoes `install()`, and what importing this package did (tf.compat.v1.layers: compat/core/tf_internals.py)."""
    while _replaced:
        owner, name, previous = _replaced.pop()
        if owner is sys.modules:
            if previous is _MISSING:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous  # type: ignore[assignment]
        elif previous is _MISSING:
            delattr(owner, name)
        else:
            setattr(owner, name, previous)
    tf_internals.uninstall()


# Importing compat.estimator (the one changed import of a legacy program) makes tf.compat.v1.layers work:
# model_fns are built from them.
tf_internals.install()
