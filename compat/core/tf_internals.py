"""The parts of TensorFlow's and Keras' internals this project uses, and the names it puts into TensorFlow.

TensorFlow 2.16 removed tf.estimator but kept, under private module paths,
pieces TF 2.15's Estimator was built on and that no public name offers: the
export outputs and signature builders its SavedModels were made with
(`tensorflow.python.saved_model.model_utils`) and its evaluation loop
(`tensorflow.python.training.evaluation`). Using them keeps exports and
evaluations TF 2.15's instead of a rewrite of them.

TensorFlow 2.21 also turned `tf.compat.v1.layers` (and `tf.compat.v1.nn.rnn_cell`)
into stubs that raise under Keras 3, though the layers still ship in `tf_keras`
(Keras 2, released with every TensorFlow), where TensorFlow itself routes them
when the whole process runs on Keras 2 (TF_USE_LEGACY_KERAS). `install()`
routes just those two names there, so that model_fns built from them run while
`tf.keras` stays Keras 3.

An input_fn written for graph mode returns `make_one_shot_iterator(ds).get_next()`;
the Keras engine calls it eagerly, where that is one batch of values:
`install()` wraps the two v1 iterator factories so that, inside
`v1_iterators_give_their_dataset()` only, they hand back a stand-in that leads
to the dataset; everywhere else they are TensorFlow's own.

Keras 3 layers called inside a model_fn's graph would run in inference mode
unless given `training=`: `keras_training_default` lets the Estimator say
which mode it builds, through the one Keras class that holds a call's
`training` value.

Every such reach is here, so that a TensorFlow or Keras release that moves one
breaks `tests/test_tf_internals.py` by name, not a run deep inside; every
change to TensorFlow's or Keras' names is made by `install()`, recorded in
compat/core/patches.py's one list and undone by `compat.estimator.uninstall()`.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import types
import weakref
from collections.abc import Iterator
from typing import Any

import tensorflow as tf
from tensorflow.python.eager import monitoring
from tensorflow.python.saved_model.model_utils import export_output, export_utils  # noqa: F401
from tensorflow.python.training import (
    evaluation,  # noqa: F401  (_evaluate_once, _StopAfterNEvalsHook)
    training_util,
)
from tensorflow.python.util.lazy_loader import LazyLoader

from compat.core import tf_namespaces
from compat.core.patches import PATCHES

# -- the names put into TensorFlow and Keras -------------------------------------------

_LEGACY_MODULES = (  # (attribute path below tf.compat.v1, the tf_keras module TensorFlow routes it to under Keras 2)
    ("layers", "tf_keras.api._v1.keras.__internal__.legacy.layers"),
    ("nn.rnn_cell", "tf_keras.api._v1.keras.__internal__.legacy.rnn_cell"),
)
_PART = "import"  # the changes importing compat.estimator makes (compat/core/patches.py)
_default_training: contextvars.ContextVar[bool | None] = contextvars.ContextVar("keras_training_default", default=None)
_called_layers: contextvars.ContextVar[list | None] = contextvars.ContextVar("keras_layers_called", default=None)


def _mode_call_context(base: type) -> type:
    """Keras 3 starts a `CallContext` for each outermost layer call; this one starts with the `training`
    value that `keras_training_default` set, where one is set (elsewhere it is Keras' own), and tells
    `keras_layers_called` which layer the call entered."""

    class ModeCallContext(base):
        def __init__(self, entry_layer):
            super().__init__(entry_layer)
            training = _default_training.get()
            if training is not None:
                self.set_value("training", training)
            called = _called_layers.get()
            if called is not None:
                called.append(entry_layer)

    return ModeCallContext


def namespace_modules(version: str) -> list:
    """Every module object that is TensorFlow's `version` API ("v1": `tf.compat.v1`; "v2": `tf`), by each of its
    spellings (compat/core/tf_namespaces.py): `tf.compat.v2`, the nested `tf.compat.v2.compat.v1`, ...

    `import tensorflow.compat.v1` makes a second module object of it and binds
    `tf.compat.v1` to that one; programs reach both, so a name set on one is set on all.
    """
    import sys

    import tensorflow.compat.v1  # noqa: F401  (makes those second objects now, not later)
    import tensorflow.compat.v2  # noqa: F401

    modules = []
    for path in tf_namespaces.SPELLINGS[version]:
        module: Any = tf
        for part in path.split(".") if path else ():
            module = getattr(module, part, None)
        modules.append(module)
        if path:  # `import tensorflow.compat.v1` binds a module of its own (`tensorflow` itself is `tf`)
            modules += [sys.modules.get(f"tensorflow.{path}"), sys.modules.get(f"tensorflow._api.v2.{path}")]
    return list({id(module): module for module in modules if module is not None}.values())


def compat_v1_modules() -> list:
    """Every module object that is `tf.compat.v1` (`namespace_modules("v1")`)."""
    return namespace_modules("v1")


def _legacy_owners() -> list[tuple[object, str, str]]:
    """(module, attribute, tf_keras module) for every object that is `tf.compat.v1` (or its `nn`)."""
    owners, seen = [], set()
    for root in compat_v1_modules():
        for path, module in _LEGACY_MODULES:
            *parents, name = path.split(".")
            owner = root
            for parent in parents:
                owner = getattr(owner, parent)
            if (id(owner), name) not in seen:
                seen.add((id(owner), name))
                owners.append((owner, name, module))
    return owners


class _CapturedIterator:
    """Stands in for a v1 iterator while a legacy input_fn runs eagerly: remembers its dataset.

    `get_next()` gives markers shaped like one element, so `features, labels =
    iterator.get_next()` unpacks as it did; each marker leads back to the dataset.
    """

    def __init__(self, dataset: tf.data.Dataset) -> None:
        self.dataset = dataset

    def get_next(self, name: str | None = None):
        return tf.nest.map_structure(lambda _: _IteratorMarker(self.dataset), self.dataset.element_spec)


class _IteratorMarker:
    def __init__(self, dataset: tf.data.Dataset) -> None:
        self.dataset = dataset


_capturing = threading.local()


def _capture_when_asked(make_iterator):
    def wrapper(dataset, *args, **kwargs):
        if getattr(_capturing, "active", False):
            return _CapturedIterator(dataset)
        return make_iterator(dataset, *args, **kwargs)

    wrapper.__wrapped__ = make_iterator
    return wrapper


@contextlib.contextmanager
def v1_iterators_give_their_dataset() -> Iterator[None]:
    """In this block (and this thread), `tf.compat.v1.data.make_one_shot_iterator(ds)` and
    `make_initializable_iterator(ds)` return a stand-in whose `get_next()` leads back to `ds`.

    An input_fn written for graph mode returns `make_one_shot_iterator(ds).get_next()`;
    called eagerly (the Keras engine), that would be one batch of values, not the dataset.
    """
    _capturing.active = True
    try:
        yield
    finally:
        _capturing.active = False


def dataset_behind(value) -> tf.data.Dataset | None:
    """The dataset whose stand-in iterator gave `value` in `v1_iterators_give_their_dataset`, else None."""
    return value.dataset if isinstance(value, _IteratorMarker) else None


def prepare() -> None:
    """`install()`, unless `compat.estimator.uninstall()` withdrew it: what importing compat.estimator (or its
    first name, or its estimator module) does, so that an import after uninstall() patches nothing again."""
    if not PATCHES.withdrawn():
        install()


def install() -> None:
    """`tf.compat.v1.layers` and `tf.compat.v1.nn.rnn_cell` become tf_keras' (loaded on first use),
    `tf.compat.v1.data`'s iterator factories give their dataset in `v1_iterators_give_their_dataset`, and
    Keras 3 layers honour `keras_training_default`. Idempotent; recorded in `PATCHES`, which
    `compat.estimator.uninstall()` undoes. Called explicitly, it undoes that withdrawal too."""
    PATCHES.reopen()
    if PATCHES.made_by(_PART):
        return
    for owner, name, module in _legacy_owners():
        PATCHES.set_attribute(_PART, owner, name, LazyLoader(name, {}, module))
    for data in {id(v1.data): v1.data for v1 in compat_v1_modules()}.values():
        for name in ("make_one_shot_iterator", "make_initializable_iterator"):
            PATCHES.set_attribute(_PART, data, name, _capture_when_asked(getattr(data, name)))
    from keras.src.layers import layer as keras_layer

    PATCHES.set_attribute(_PART, keras_layer, "CallContext", _mode_call_context(keras_layer.CallContext))


@contextlib.contextmanager
def keras_training_default(training: bool) -> Iterator[None]:
    """Keras 3 layers called without `training=` in this block (and this thread) run as `training` says."""
    token = _default_training.set(training)
    try:
        yield
    finally:
        _default_training.reset(token)


@contextlib.contextmanager
def keras_layers_called() -> Iterator[list]:
    """The outermost Keras 3 layers (and models) called in this block, in call order, in a list filled as
    they are called. A Keras 3 layer keeps no list of the state updates it makes (Keras 2's `layer.updates`):
    its variables are how the Estimator tells those updates from assignments the program made itself."""
    called: list = []
    token = _called_layers.set(called)
    try:
        yield called
    finally:
        _called_layers.reset(token)


# -- private names of TensorFlow and Keras, each behind one function -------------------


def keras_state_variables(layers) -> list:
    """The TensorFlow variables behind the non-trainable state of Keras 3 `layers` (batch norm's moving
    statistics, the seed generators' states), each replica's copy of a replicated one included."""
    state: list = []
    for layer in layers:
        for variable in layer.non_trainable_variables:
            state.extend(copies(getattr(variable, "_value", variable)))  # a Keras 3 Variable wraps a tf.Variable
    return state


def serves_in_process(strategy: Any) -> bool:
    """Whether a MultiWorkerMirroredStrategy started this task's server itself (made with eager execution on)."""
    return bool(getattr(strategy.extended, "_std_server_started", False))


def loss_scaled_for_estimator(strategy: Any) -> Any:
    """The context in which v1 optimizers scale a mean loss by 1/replicas, as TF 2.15's Estimator set it."""
    return strategy._scale_loss_for_estimator_enabled()


def loss_scaled_by_optimizer(graph: Any) -> bool:
    """Whether a v1 optimizer scaled this graph's loss for the replicas (the flag it leaves on the graph)."""
    return bool(getattr(graph, "_is_loss_scaled_by_optimizer", False))


def scaffold_init_fn(scaffold: Any) -> Any:
    """The init_fn the user gave a Scaffold (None if none), as given: `Scaffold.init_fn` wraps it."""
    return scaffold._user_init_fn


def strategy_session_config(strategy: Any, config: Any) -> Any:
    """`config` completed by the strategy for its sessions (a cluster's collective group leader, ...)."""
    return strategy.extended._update_config_proto(config)


def is_compiled(model: Any) -> bool:
    """Whether a Keras 2 (tf_keras) model was compiled."""
    return bool(getattr(model, "_is_compiled", False))


def keras_compile_arguments(model: Any) -> dict:
    """The arguments `model.compile` was called with, as given: Keras 3 and Keras 2 (tf_keras) models keep them
    in `_compile_config` ({} for a model not compiled). Their public `get_compile_config()` serializes them,
    which loses what a class leaves out of its config."""
    config = getattr(model, "_compile_config", None)
    return dict(getattr(config, "config", None) or {})


def keras_compiled_metric_lists(model: Any) -> list[tuple[list, list]]:
    """Per output, in output order, the (metrics, weighted metrics) Keras 3 built from `compile`'s arguments;
    [] before they are built (at their first update)."""
    compiled = getattr(model, "_compile_metrics", None)
    if compiled is None or not compiled.built:
        return []

    def per_output(lists: list) -> list[list]:
        return [list(metrics.metrics) if metrics else [] for metrics in lists]

    return list(zip(per_output(compiled._flat_metrics), per_output(compiled._flat_weighted_metrics)))


def keras_rmsprop_slots(optimizer: Any, variable: Any) -> tuple[Any, Any]:
    """(velocity, average gradient or None) of a Keras 3 RMSprop for `variable`, as its own `update_step` finds
    them (a distributed variable's component included)."""
    index = optimizer._get_variable_index(variable)
    return optimizer._velocities[index], (optimizer._average_gradients[index] if optimizer.centered else None)


def usage_gauge(name: str, description: str, *labels: str, of: str = "bool") -> monitoring.Metric:
    """One of TensorFlow's usage gauges (`monitoring.BoolGauge` or `StringGauge`), as TF 2.15's Estimator
    modules defined them: libraries built on it set their cells (`_canned_estimator_api_gauge`)."""
    gauge = monitoring.StringGauge if of == "string" else monitoring.BoolGauge
    return gauge(name, description, *labels)


def evaluate_once(**kwargs):
    """TensorFlow's evaluation loop (what tf.estimator's evaluate ran): the final ops' values."""
    return evaluation._evaluate_once(**kwargs)


def stop_after_n_evals_hook(num_evals: int) -> tf.compat.v1.train.SessionRunHook:
    """The hook that ends an evaluation after `num_evals` batches, logging "Evaluation [i/n]"."""
    return evaluation._StopAfterNEvalsHook(num_evals=num_evals)


# The collection a graph's cached read of its global step lives in (training_util.GLOBAL_STEP_READ_KEY): TF 2.15's
# Estimator filled it outside the replicas when it replicated a model_fn, so the replicas share one read.
GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"


def global_step_read(graph: tf.Graph) -> tf.Tensor | None:
    """The graph's cached read of its global step, made as TF 2.15's training made it before calling the input_fn
    (its ops count towards the op seeds of everything made after)."""
    return training_util._get_or_create_global_step_read(graph)


def create_eval_step() -> tf.Variable:
    """The evaluation's step counter (a local variable), made before a scaffold that initialises it."""
    return evaluation._get_or_create_eval_step()


def add_train_op(builder, train_op) -> None:
    """Records a train graph's op in the SavedModel, where `experimental_export_all_saved_models` put it."""
    builder._add_train_op(train_op)


def saved_model_has_variables(builder: Any) -> bool:
    """Whether a `tf.compat.v1.saved_model.Builder` has written its variables (with its first meta graph)."""
    return bool(builder._has_saved_variables)


def saver_listeners(hook: tf.compat.v1.train.CheckpointSaverHook) -> list:
    """The listeners a CheckpointSaverHook calls around each save (appending one attaches it)."""
    return hook._listeners


@contextlib.contextmanager
def keras_names_per_graph() -> Iterator[None]:
    """Keras 3 layers made in this block are numbered afresh (`dense`, `dense_1`, ...), as Keras 2
    numbered them per graph; the process's count is put back after.

    A model_fn is called once per graph (training, each evaluation, export);
    Keras 3 numbers layer names per process, which would give the evaluation
    graph's variables other names than the checkpoint's. Keras keeps that count
    in its global state and offers no public way to scope it (`clear_session`
    resets the default graph too, which a nested graph forbids).
    """
    import sys

    if "keras" not in sys.modules:
        yield
        return
    import collections

    from keras.src.backend.common import global_state

    saved = global_state.get_global_attribute("object_name_uids")
    global_state.set_global_attribute("object_name_uids", collections.defaultdict(int))
    try:
        with tf.variable_creator_scope(_keras_2_variable_names):
            yield
    finally:
        global_state.set_global_attribute("object_name_uids", saved)


def _keras_2_variable_names(next_creator, **kwargs):
    """Names a Keras 3 layer's variable in a graph as Keras 2 did: `<scopes>/<layer>/<weight>`.

    Keras 3 enters a layer's name scope once to build it and again for each
    call; in a graph each entry after the first gets a new suffix, so the
    second Dense layer's kernel became `dense_1_1/kernel` (its scope `dense_1`
    having gone to the first layer's call), where Keras 2, which built inside
    the call, named it `dense_1/kernel`. The graph's scopes outside the Keras
    layers (a model_fn's own `tf.compat.v1.variable_scope`) are kept.
    """
    from keras.src.backend.common import global_state

    stack = global_state.get_global_attribute("name_scope_stack") or []
    keras_scopes = [scope.name for scope in stack]
    name = kwargs.get("name")
    graph = tf.compat.v1.get_default_graph()
    if keras_scopes and isinstance(name, str) and name and not name.endswith("/") and not tf.executing_eagerly():
        graph_scopes = graph.get_name_scope().split("/") if graph.get_name_scope() else []
        # only inside those layers' scopes: the graph's innermost scopes are Keras' (maybe with a suffix); a
        # Keras scope left on its stack (an optimizer's `__optimizer`) must not rename variables made outside it
        inside = len(graph_scopes) >= len(keras_scopes) and all(
            _is_scope_entry(entered, keras)
            for entered, keras in zip(graph_scopes[len(graph_scopes) - len(keras_scopes) :], keras_scopes)
        )
        if inside:
            outside = graph_scopes[: len(graph_scopes) - len(keras_scopes)]
            wanted = "/".join([*outside, *_called_scopes(stack), name])
            with graph.name_scope(None):  # from the top: `unique_name` prefixes the scope it is called in
                # A name taken keeps TensorFlow's suffix; one given is marked as taken (a scope entered
                # by its full name, as here, is not), so that no later variable is given it too.
                if graph.unique_name(wanted, mark_as_used=False) == wanted:
                    kwargs["name"] = graph.unique_name(wanted) + "/"
    variable = next_creator(**kwargs)
    if keras_scopes:
        _made_by_keras_3.add(variable)
    return variable


# The variables Keras 3 layers made (weakly held): each replica's copy of one, under a strategy, too.
_made_by_keras_3: weakref.WeakSet = weakref.WeakSet()


def made_by_keras_3(variable: Any) -> bool:
    """Whether a Keras 3 layer made `variable` (in a block of `keras_names_per_graph`)."""
    return variable in _made_by_keras_3


def _called_scopes(stack: list) -> list[str]:
    """The Keras scopes a variable's name takes: a model's only while the model is being called.

    A model built at construction (`Sequential([Conv2D(..., input_shape=...)])`) builds its layers in its own
    scope in Keras 3; Keras 2 built them outside any scope of the model (`conv2d/kernel`, not
    `sequential/conv2d/kernel`). A model built by its first call keeps its scope (`sequential/dense/kernel`),
    as in Keras 2. Keras 3 builds both the same way, with no call context yet, so the call is looked for on
    the Python stack (only for a model's scope, as its variables are made).
    """
    import keras

    return [
        scope.name
        for scope in stack
        if not isinstance(getattr(scope, "caller", None), keras.Model) or _being_called(scope.caller)
    ]


def _being_called(layer: Any) -> bool:
    import sys

    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "__call__" and frame.f_locals.get("self") is layer:
            return True
        frame = frame.f_back
    return False


def _is_scope_entry(entered: str, scope: str) -> bool:
    """Whether the graph scope `entered` is an entry of the Keras scope `scope` (`dense_1`, or `dense_1_1`)."""
    return entered == scope or (entered.startswith(scope + "_") and entered[len(scope) + 1 :].isdigit())


def fn_args(fn) -> tuple[str, ...]:
    """A function's argument names as TensorFlow reads them for model_fns and input_fns (a partial's
    bound arguments and `self` left out)."""
    from tensorflow.python.util import function_utils

    return tuple(function_utils.fn_args(fn))


def op_def(name: str) -> Any:
    """The registered OpDef of the op type `name` (None if unknown): whether it is stateful, for the input
    cache."""
    from tensorflow.python.framework import op_def_registry

    return op_def_registry.get(name)


def is_partition(variable) -> bool:
    """True for one slice of a partitioned variable: a checkpoint holds the whole under the variable's name."""
    return getattr(variable, "_save_slice_info", None) is not None


def subgraph(graph_def, node_name: str):
    """The part of `graph_def` that `node_name` needs (TensorFlow's extract_sub_graph, whose deprecation
    notice would reach a program's stderr at every call)."""
    from tensorflow.python.util import deprecation

    with deprecation.silence():
        return tf.compat.v1.graph_util.extract_sub_graph(graph_def, [node_name])


def serialize_feature_columns(columns) -> list:
    """Feature columns as the configs Keras models keep them in (TF's own serialization of columns)."""
    from tensorflow.python.feature_column import serialization

    return serialization.serialize_feature_columns(columns)


def deserialize_feature_columns(configs, custom_objects=None) -> list:
    from tensorflow.python.feature_column import serialization

    return serialization.deserialize_feature_columns(configs, custom_objects=custom_objects)


def first_copy(variable):
    """A replicated variable's copy on the first replica (a plain variable, under the variable's own name);
    any other variable itself."""
    return getattr(variable, "_primary", variable)


def copies(variable) -> tuple:
    """Every copy of a replicated variable (one a replica), or the variable alone."""
    return tuple(getattr(variable, "_values", (variable,)))


def checkpoint_name(variable) -> str:
    """The name a Saver stores `variable` under: a replicated variable's is its first copy's (`bn/moving_mean`),
    whose own `.op` in a cross-replica context is the read that aggregates the copies."""
    return first_copy(variable).op.name


def monitored_training_session(**kwargs):
    """tf.compat.v1.train.MonitoredTrainingSession, looked up where TF 2.15's Estimator called it
    (`tensorflow.python.training.training`), so that a program or test that replaces it there is heard."""
    from tensorflow.python.training import training

    return training.MonitoredTrainingSession(**kwargs)


def add_control_inputs(op: tf.Operation, inputs: list) -> None:
    """Makes `op`, already in its graph, wait for `inputs` (TensorFlow has no public way after creation)."""
    if inputs:
        op._add_control_inputs(inputs)


# -- feature columns of the canned linear models (compat/estimator/canned/linear.py) ---------------------------
# TF 2.15's linear models fed their columns through TensorFlow's own weighted sums and state manager, which
# TensorFlow keeps in `tensorflow.python.feature_column.feature_column_v2` (and `tf.__internal__`); the canned
# estimators reach them only through these functions.


def column_scope_name(name: str) -> str:
    """The variable-scope name a feature column's variables are created under (TF cleans the column's name)."""
    from tensorflow.python.feature_column import feature_column_v2

    return feature_column_v2._sanitize_column_name_for_variable_scope(name)


def is_feature_column_v2(feature_columns) -> bool:
    """True when every column is a TF2 column (`tf.feature_column.*`), as the TF2 canned estimators require."""
    from tensorflow.python.feature_column import feature_column_v2

    return feature_column_v2.is_feature_column_v2(feature_columns)


def is_categorical_column(column) -> bool:
    """True for a TF2 categorical column (vocabulary, hash bucket, identity, crossed, weighted, bucketized)."""
    from tensorflow.python.feature_column import feature_column_v2

    return isinstance(column, feature_column_v2.CategoricalColumn)


def is_dense_column(column) -> bool:
    """True for a TF2 dense column (numeric, embedding, indicator, bucketized)."""
    return isinstance(column, tf.__internal__.feature_column.DenseColumn)


def feature_state_manager(layer, trainable: bool):
    """The state manager through which feature columns create their variables and tables in a Keras 2 layer
    (variables made with `tf.compat.v1.get_variable`, so under the caller's variable scope)."""
    return tf.__internal__.feature_column.StateManager(layer, trainable)


def feature_transformation_cache(features):
    """The per-call cache of the columns' transformed inputs (a column used twice is transformed once)."""
    return tf.__internal__.feature_column.FeatureTransformationCache(features)


def linear_weighted_sum(column, transformation_cache, state_manager, sparse_combiner: str, weight_var) -> tf.Tensor:
    """One column's `[batch_size, units]` contribution to a linear model: `input @ weights` for a dense column,
    a sparse lookup combined by `sparse_combiner` for a categorical one (TensorFlow's `linear_model` sum)."""
    from tensorflow.python.feature_column import feature_column_v2

    return feature_column_v2._create_weighted_sum(
        column=column,
        transformation_cache=transformation_cache,
        state_manager=state_manager,
        sparse_combiner=sparse_combiner,
        weight_var=weight_var,
    )


def check_same_batch_size(tensors, columns) -> None:
    """Raises ValueError when two columns' tensors have different static batch sizes (naming both columns)."""
    from tensorflow.python.feature_column import feature_column_v2

    feature_column_v2._verify_static_batch_size_equality(tensors, columns)


def normalize_feature_columns(feature_columns) -> list:
    """The columns as a list sorted by name, as TensorFlow's feature layers order them; ValueError for an empty
    list, a dict, a non-column or two columns of one name."""
    from tensorflow.python.feature_column import feature_column_v2

    return feature_column_v2._normalize_feature_columns(feature_columns)


def column_variable_scope_name(column_name: str) -> str:
    """The variable-scope name TensorFlow gives a column's variables (characters a scope forbids become `_`)."""
    from tensorflow.python.feature_column import feature_column_v2

    return feature_column_v2._sanitize_column_name_for_variable_scope(column_name)


def tf_keras_legacy_optimizer(optimizer):
    """tf_keras' converter of its newer-API optimizers (`tf_keras.optimizers.Adam`) to the legacy class of the same
    name and config (`tf_keras.optimizers.legacy.Adam`), which TF 2.15's canned estimators applied too."""
    import tf_keras

    return tf_keras.__internal__.optimizers.convert_to_legacy_optimizer(optimizer)


# -- the TF 1.x canned estimators (compat/estimator/canned: DNNClassifierV1, ...) ------------------------------
# TF 2.15's tf.compat.v1.estimator classes were built from tf.compat.v1.layers and, for TF2 feature columns, Keras 2's
# v1 DenseFeatures; both ship in tf_keras, under its v1 API, which `tf.compat.v1.keras` is under Keras 2 only.


def legacy_layers():
    """tf_keras' tf.compat.v1.layers (Dense, Dropout, BatchNormalization, ...): variables made with
    `tf.compat.v1.get_variable` under the caller's variable scope (its partitioner applies), updates in UPDATE_OPS."""
    import tf_keras.api._v1.keras.__internal__.legacy.layers as layers

    return layers


def v1_dense_features(feature_columns, name: str):
    """Keras 2's v1 DenseFeatures layer (`tf.compat.v1.keras.layers.DenseFeatures` under Keras 2): TF2 feature
    columns whose variables are made under the caller's variable scope, so that its partitioner applies."""
    from tf_keras.api._v1.keras.layers import DenseFeatures

    return DenseFeatures(feature_columns=feature_columns, name=name)


def variable_partitions(variable) -> list:
    """The slices of a partitioned variable (what `tf.compat.v1.get_variable` gives under a variable scope's
    partitioner; TensorFlow has no public name for its class), or `[variable]` for any other variable or a list's
    items for a list of slices."""
    from tensorflow.python.ops import variables

    if isinstance(variable, (list, tuple, variables.PartitionedVariable)):
        return list(variable)
    return [variable]


def forget_retries(oracle, trial_ids: set) -> None:
    """Takes `trial_ids` off a keras-tuner oracle's queue of trials to run again (it has no public accessor)."""
    oracle._retry_queue = [trial_id for trial_id in oracle._retry_queue if trial_id not in trial_ids]


# -- tf.compat.v1.estimator.experimental.KMeans (compat/estimator/canned/kmeans.py) ------------------------------


def kmeans_training_graph(**kwargs) -> tuple:
    """TensorFlow's k-means graph (`tensorflow.python.ops.clustering_ops.KMeans(**kwargs).training_graph()`, what TF
    2.15's KMeans estimator ran): (all_scores, cluster_idx, scores, cluster_centers_initialized, init_op,
    training_op), the first three one-item lists. The cluster centers are the variable `clusters`."""
    from tensorflow.python.ops import clustering_ops

    return clustering_ops.KMeans(**kwargs).training_graph()


# -- tf.estimator.experimental.RNNClassifier / RNNEstimator (compat/estimator/canned/rnn.py) ---------------------


def concatenate_context_input(context_input, sequence_input):
    """`[batch_size, time, d0 + d1]`: each example's context `[batch_size, d1]` repeated at every step of its
    sequence input `[batch_size, time, d0]` (TensorFlow's sequence feature columns' own helper)."""
    from tensorflow.python.feature_column import sequence_feature_column

    return sequence_feature_column.concatenate_context_input(context_input, sequence_input)


def enable_rnn_caching_device(cell) -> None:
    """Makes a tf_keras RNN cell read its weights through a caching device in a graph (once per step, not per
    time step), as TF 2.15's canned RNN set it; a cell without that switch is left as it is."""
    if hasattr(cell, "_enable_caching_device"):
        cell._enable_caching_device = True


def dataset_variant(dataset: tf.data.Dataset) -> tf.Tensor:
    """The variant tensor behind a Dataset, which `tf.raw_ops.DatasetToGraphV2` serialises (no public name)."""
    return dataset._variant_tensor


class SlotsSavedByName(tf.__internal__.tracking.AutoTrackable):
    """A checkpoint node that TensorFlow's object-based saver files optimizer state under, as an optimizer.

    The saver puts a variable's optimizer state beside the variable,
    `<variable's path>/.OPTIMIZER_SLOT/<this node's path>/<slot>`, for any node
    with `get_slot_names`, `get_slot` and `_create_or_restore_slot_variable`:
    the protocol of TF 1's and Keras 2's optimizers, which is how TF 2.15's
    model_to_estimator checkpoints named Adam's `m` and `v`. Keras 3's
    optimizers do not speak it; this node lends their variables its names.

    Args:
      slot: `(variable, slot_name) -> the variable's slot, or None`.
      slot_names: `() -> the slot names this node files`.
    """

    def __init__(self, slot, slot_names) -> None:
        super().__init__()
        # Plain functions: the saver tracks none of them, so they add nothing to the checkpoint.
        self._slot = slot
        self._slot_names = slot_names

    def get_slot_names(self) -> list[str]:
        return list(self._slot_names())

    def get_slot(self, variable, slot_name: str):
        return self._slot(variable, slot_name)

    def _create_or_restore_slot_variable(self, slot_variable_position, slot_name: str, variable, **kwargs):
        # The slot exists already (the Keras 3 optimizer's variable): the restore binds the value to it.
        return self._slot(variable, slot_name)
