"""The optimizer a canned estimator trains with, from what its `optimizer` argument was given.

TF 2.15's canned estimators trained with Keras 2's OptimizerV2 classes (since
TF 2.11 under `tf.keras.optimizers.legacy`), building their updates in the
graph with `optimizer.get_updates(loss, variables)`: hyperparameters are
variables `training/<Name>/learning_rate`, ..., slots
`training/<Name>/<variable>/<slot>`, and the optimizer counts its steps with
the global step. Those classes live on in `tf_keras.optimizers.legacy`, which
is what the estimators here train with, so TF 2.15's checkpoints restore,
slots included, and train on as they did.

An `optimizer` argument may be
  - a name: 'Adagrad', 'Adam', 'Ftrl', 'RMSProp' or 'SGD', made with the
    estimator's default learning rate (or the class's own where it has none);
  - a tf_keras OptimizerV2 (`tf_keras.optimizers.legacy.*`, or a subclass of
    its base class `Optimizer`), used as it is;
  - a Keras 3 optimizer (what `tf.keras.optimizers.Adam()` gives on
    TF >= 2.16, and `tf.keras.optimizers.legacy.Adam()` after
    `compat.estimator.install()`): converted to the tf_keras legacy optimizer
    of the same name and configuration, since a Keras 3 optimizer cannot build
    graph updates. A name Keras 3 made up (`adam`, `adam_1`) becomes the
    legacy default (`Adam`), which names the variables as TF 2.15 did. What a
    legacy optimizer cannot hold (weight decay, EMA, loss scaling, gradient
    accumulation; classes without a legacy twin, such as AdamW and Lion) is
    refused with a ValueError, not dropped;
  - a tf_keras optimizer of the newer API (`tf_keras.optimizers.Adam`),
    converted to its legacy class, as TF 2.15 converted it when it could;
  - a callable returning one of those, called when the training graph is built.
A `tf.compat.v1.train.Optimizer` is refused, as TF 2.15's TF2 estimators refused it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf
import tf_keras
from tf_keras.optimizers.legacy import Optimizer as OptimizerV2

from compat.core import tf_internals

_legacy = tf_keras.optimizers.legacy

# the names TF 2.15's canned estimators took, and the classes they made
OPTIMIZER_NAMES: dict[str, type] = {
    "Adagrad": _legacy.Adagrad,
    "Adam": _legacy.Adam,
    "Ftrl": _legacy.Ftrl,
    "RMSProp": _legacy.RMSprop,
    "SGD": _legacy.SGD,
}
# what a Keras 3 optimizer may carry only at its defaults: a legacy optimizer has no place for it
_KERAS3_ONLY_DEFAULTS = {
    "weight_decay": None,
    "use_ema": False,
    "loss_scale_factor": None,
    "gradient_accumulation_steps": None,
}
_LEGACY_BASE_ARGUMENTS = ("clipnorm", "clipvalue", "global_clipnorm")
_REFUSED_MESSAGE = (
    "The given object is not a tf.keras.optimizers.Optimizer instance. Given: {}. Give a name "
    "('Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD'), a Keras optimizer (e.g. "
    "tf_keras.optimizers.legacy.Adagrad(0.05)) or a callable returning one"
)


def _check_name(name: str) -> None:
    if name not in OPTIMIZER_NAMES:
        raise ValueError(f"Unsupported optimizer name: {name}. Supported names are: {tuple(sorted(OPTIMIZER_NAMES))}")


def _by_name(name: str, learning_rate: float | None) -> OptimizerV2:
    _check_name(name)
    cls = OPTIMIZER_NAMES[name]
    # every legacy class has a default rate; TF 2.15 used it where the estimator gave none
    return cls(learning_rate=learning_rate) if learning_rate else cls()


def _is_keras3_optimizer(optimizer: Any) -> bool:
    return isinstance(optimizer, keras.optimizers.Optimizer)


def _is_automatic_name(name: str, cls_name: str) -> bool:
    """Keras 3 names an unnamed optimizer after its class in snake case, numbered (`rm_sprop`, `adam_1`)."""
    base = name.rsplit("_", 1)[0] if name.rsplit("_", 1)[-1].isdigit() else name
    return base.replace("_", "").lower() == cls_name.lower()


def _legacy_learning_rate(value: Any, cls_name: str) -> Any:
    """A Keras 3 config's learning rate for a legacy optimizer: a float, or a built-in schedule rebuilt in tf_keras."""
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict) and hasattr(tf_keras.optimizers.schedules, value.get("class_name", "")):
        return getattr(tf_keras.optimizers.schedules, value["class_name"]).from_config(value["config"])
    raise ValueError(
        f"{cls_name}: its learning rate {value!r} cannot be carried to a Keras 2 optimizer; give a "
        "float or one of keras.optimizers.schedules' own schedules, or a tf_keras.optimizers.legacy."
        f"{cls_name}"
    )


def _graph_made_learning_rate(optimizer: Any) -> float:
    """The constant learning rate of a Keras 3 optimizer made while a graph was being built: its variable's
    initial value (Keras 3 could read the variable only eagerly)."""
    value = tf.get_static_value(getattr(optimizer.learning_rate, "value", optimizer.learning_rate).initial_value)
    if value is None:
        raise ValueError(
            f"{type(optimizer).__name__} was made in a graph with a learning rate that is not a "
            "constant; make it outside the graph (or give a tf_keras.optimizers.legacy optimizer)"
        )
    return float(value)


def _keras3_config(optimizer: Any, accepted: set) -> dict:
    """A Keras 3 optimizer's settings. Made in a graph (a callable called in the model_fn, or an estimator made
    under `tf.Graph().as_default()`), its `get_config` cannot read its learning-rate variable; its settings are
    then its attributes, which Keras 3 names as its arguments."""
    try:
        return optimizer.get_config()
    except NotImplementedError:  # numpy() of a graph variable
        names = accepted | set(_KERAS3_ONLY_DEFAULTS) | {"name"}
        config = {name: getattr(optimizer, name) for name in names - {"learning_rate"} if hasattr(optimizer, name)}
        return {**config, "learning_rate": _graph_made_learning_rate(optimizer)}


def _from_keras3(optimizer: Any) -> OptimizerV2:
    """The tf_keras legacy optimizer with a Keras 3 optimizer's class name and settings (a fresh one: no state)."""
    import inspect

    cls_name = type(optimizer).__name__
    cls = getattr(_legacy, cls_name, None)
    if cls is None or not isinstance(cls, type) or not issubclass(cls, OptimizerV2):
        raise ValueError(
            f"Keras 3's {cls_name} has no Keras 2 (legacy) counterpart the canned estimators could train "
            f"with; give one of tf_keras.optimizers.legacy's: {', '.join(sorted(_legacy_names()))}"
        )
    accepted = (set(inspect.signature(cls).parameters) - {"kwargs", "name"}) | set(_LEGACY_BASE_ARGUMENTS)
    config = _keras3_config(optimizer, accepted)
    for key, default in _KERAS3_ONLY_DEFAULTS.items():
        if config.get(key, default) != default:
            raise ValueError(
                f"{cls_name}({key}={config[key]!r}): a Keras 2 optimizer has no `{key}`, so the canned "
                f"estimators cannot train with it; leave it at {default!r}"
            )
    arguments = {key: value for key, value in config.items() if key in accepted and value is not None}
    arguments["learning_rate"] = _legacy_learning_rate(config["learning_rate"], cls_name)
    name = config.get("name")
    if name and not _is_automatic_name(name, cls_name):
        arguments["name"] = name
    return cls(**arguments)


def _legacy_names() -> list[str]:
    return [
        n
        for n in dir(_legacy)
        if isinstance(getattr(_legacy, n), type) and n != "Optimizer" and issubclass(getattr(_legacy, n), OptimizerV2)
    ]


def as_optimizer_v2(optimizer: Any) -> OptimizerV2:
    """An optimizer object as the tf_keras OptimizerV2 the graph trains with (see the module docstring)."""
    if isinstance(optimizer, OptimizerV2):
        return optimizer
    if isinstance(optimizer, tf.compat.v1.train.Optimizer):
        raise ValueError(
            _REFUSED_MESSAGE.format(optimizer) + " (TF 2.15's canned estimators refused "
            "tf.compat.v1.train optimizers too)"
        )
    if _is_keras3_optimizer(optimizer):
        return _from_keras3(optimizer)
    if isinstance(optimizer, tf_keras.optimizers.Optimizer):
        return tf_internals.tf_keras_legacy_optimizer(optimizer)
    raise ValueError(_REFUSED_MESSAGE.format(optimizer))


def _forget_graph_variables(optimizer: Any) -> None:
    """Takes a discarded Keras 3 optimizer's variables out of the graph's collections: not initialised, not saved."""
    graph = tf.compat.v1.get_default_graph()
    made = {id(variable.value) for variable in optimizer.variables}
    for key in graph.get_all_collection_keys():
        collection = graph.get_collection_ref(key)
        collection[:] = [item for item in collection if id(item) not in made]


def _called(make: Callable[[], Any]) -> OptimizerV2:
    """What an optimizer callable returns, as an OptimizerV2.

    It is called where the model_fn runs (the training graph), as TF 2.15
    called it, so that it may use graph tensors (the global step). A Keras 3
    optimizer it makes there is converted, and its own variables leave the
    graph's collections: they are neither initialised nor saved.
    """
    return as_graph_optimizer(make())


def as_graph_optimizer(optimizer: Any) -> OptimizerV2:
    """`optimizer` as an OptimizerV2 (see `as_optimizer_v2`); a Keras 3 optimizer made in this graph leaves its
    variables out of the graph's collections (neither initialised nor saved): its converted copy trains."""
    converted = as_optimizer_v2(optimizer)
    if converted is not optimizer and _is_keras3_optimizer(optimizer) and not tf.executing_eagerly():
        _forget_graph_variables(optimizer)
    return converted


def get_optimizer_instance(opt: Any, learning_rate: float | None = None) -> OptimizerV2:
    """The OptimizerV2 for `opt`: a name (made with `learning_rate`, else the class's default rate), an
    optimizer object, or a callable returning one (called now)."""
    if isinstance(opt, str):
        return _by_name(opt, learning_rate)
    if callable(opt) and not isinstance(opt, OptimizerV2):
        return _called(opt)
    return as_optimizer_v2(opt)


def checked_optimizer_argument(opt: Any) -> Any:
    """An estimator's `optimizer` argument checked when the estimator is made, not first at `train()` as in
    TF 2.15: a name must be known, an object is converted now (one refused is refused at once); a callable is
    kept, to be called in each training graph."""
    if opt is None:
        return None
    if isinstance(opt, str):
        _check_name(opt)
        return opt
    if isinstance(opt, OptimizerV2) or not callable(opt):
        return as_optimizer_v2(opt)
    return opt


def converted_while_eager(opt: Any) -> Any:
    """`opt` as a TF2 canned class keeps it: a Keras 3 or tf_keras (new API) optimizer object as its Keras 2
    legacy twin, converted now, while its settings can be read; anything else as given (checked in training).

    Raises:
      ValueError: a Keras optimizer without a Keras 2 twin, or with settings a Keras 2 optimizer lacks.
    """
    if _is_keras3_optimizer(opt) or (
        isinstance(opt, tf_keras.optimizers.Optimizer) and not isinstance(opt, OptimizerV2)
    ):
        return as_optimizer_v2(opt)
    return opt


def optimizer_for_graph(opt: Any, learning_rate: float | None = None) -> OptimizerV2:
    """The optimizer that builds this graph's train op (called in the model_fn, TRAIN mode).

    A name or a callable makes a new optimizer per graph. An optimizer object
    is used itself, as TF 2.15 used it (its `iterations` becomes the global
    step); once it holds variables of an earlier graph (a second `train()`),
    that graph's copy is a new optimizer from its config, where TF 2.15 failed
    ("Cannot set `iterations` ..."): the checkpoint restores its state.
    """
    optimizer = get_optimizer_instance(opt, learning_rate)
    weights = optimizer.weights
    if weights and weights[0].graph is not tf.compat.v1.get_default_graph():
        config = optimizer.get_config()
        if isinstance(config.get("learning_rate"), dict):
            # a schedule, rebuilt in tf_keras: the optimizer's own `from_config` cannot read a Keras 3 schedule's
            # (`tf.keras.optimizers.schedules.*` given to a Keras 2 optimizer)
            config["learning_rate"] = _legacy_learning_rate(config["learning_rate"], type(optimizer).__name__)
        optimizer = type(optimizer).from_config(config)
    return optimizer


# -- the TF 1.x (v1) canned estimators' optimizers ---------------------------------------------------------------
# tf.compat.v1.estimator's classes train with tf.compat.v1.train optimizers, `optimizer.minimize(loss, global_step)`:
# slots are `<variable>/<Name>` (e.g. `dnn/hiddenlayer_0/kernel/Adagrad`), hyperparameters are Python numbers (no
# variables), and a name is made with the estimator's own default rate, which every v1 class requires.

V1_OPTIMIZER_NAMES: dict[str, type] = {
    "Adagrad": tf.compat.v1.train.AdagradOptimizer,
    "Adam": tf.compat.v1.train.AdamOptimizer,
    "Ftrl": tf.compat.v1.train.FtrlOptimizer,
    "RMSProp": tf.compat.v1.train.RMSPropOptimizer,
    "SGD": tf.compat.v1.train.GradientDescentOptimizer,
}
_V1_REFUSED_MESSAGE = (
    "The given object is not an Optimizer instance. Given: {}. A tf.compat.v1.estimator class "
    "trains with a tf.compat.v1.train optimizer (e.g. tf.compat.v1.train.AdagradOptimizer(0.05)), "
    "one of the names {} or a callable returning one; for a Keras optimizer use the TF2 class "
    "(tf.estimator.<Name>)"
)


def _check_v1_name(name: str) -> None:
    if name not in V1_OPTIMIZER_NAMES:
        raise ValueError(
            f"Unsupported optimizer name: {name}. Supported names are: {tuple(sorted(V1_OPTIMIZER_NAMES))}"
        )


def _checked_v1_object(optimizer: Any) -> tf.compat.v1.train.Optimizer:
    if not isinstance(optimizer, tf.compat.v1.train.Optimizer):
        raise ValueError(_V1_REFUSED_MESSAGE.format(optimizer, tuple(sorted(V1_OPTIMIZER_NAMES))))
    return optimizer


def get_v1_optimizer_instance(opt: Any, learning_rate: float) -> tf.compat.v1.train.Optimizer:
    """The tf.compat.v1.train optimizer for a v1 estimator's `optimizer`: a name (made with `learning_rate`, the
    estimator's default), an optimizer, or a callable returning one (called now, in the graph being built)."""
    if isinstance(opt, str):
        _check_v1_name(opt)
        return V1_OPTIMIZER_NAMES[opt](learning_rate=learning_rate)
    return _checked_v1_object(opt() if callable(opt) else opt)


__all__ = [
    "OPTIMIZER_NAMES",
    "V1_OPTIMIZER_NAMES",
    "as_graph_optimizer",
    "as_optimizer_v2",
    "checked_optimizer_argument",
    "converted_while_eager",
    "get_optimizer_instance",
    "get_v1_optimizer_instance",
    "optimizer_for_graph",
]
