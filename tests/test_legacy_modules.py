"""TF 2.15's module paths after install(): what libraries built on tf.estimator import by path.

`tensorflow_estimator.*`, `tensorflow.python.estimator.*` and `tensorflow.compat.v1.keras.*` import after
install() and are gone after uninstall(); their names are the project's counterparts; what libraries build
on (a TF 1.x head subclass, DenseFeatures' cols_to_output_tensors, a subclass of a legacy optimizer) behaves
as in TF 2.15. The libraries themselves run in tests/test_libraries.py.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import compat.estimator as estimator
from compat.estimator import legacy_modules
from conftest import HELPERS, REPO, keras_3_only


def _import(name: str):
    return importlib.import_module(name)


@keras_3_only
def test_every_module_of_tensorflow_estimator_2_15_imports_and_uninstall_removes_them(installed):
    modules = list(legacy_modules.tf215_modules())
    assert len(modules) > 100
    for name in modules:
        assert _import(name).__name__ == name or name in legacy_modules.PUBLIC_API
    assert _import("tensorflow_estimator").estimator is estimator.v1  # TF 2.15's package was TF 1.x's API
    assert _import("tensorflow_estimator._api.v2.estimator") is estimator
    estimator.uninstall()
    try:
        for name in ("tensorflow_estimator", "tensorflow.python.estimator", "tensorflow.compat.v1.keras"):
            assert name not in sys.modules
            with pytest.raises(ImportError):
                _import(name)
        assert type(tf.compat.v1.keras).__name__ == "KerasLazyLoader"  # TensorFlow 2.21's own attribute again
    finally:
        estimator.install()  # for the fixture to undo


def test_the_names_libraries_import_are_the_projects_counterparts(installed):
    from tensorflow.python.estimator.canned import optimizers as forwarded
    from tensorflow_estimator.python.estimator import estimator as estimator_lib
    from tensorflow_estimator.python.estimator import mode_keys, model_fn
    from tensorflow_estimator.python.estimator.canned import dnn, optimizers
    from tensorflow_estimator.python.estimator.canned.head import _Head
    from tensorflow_estimator.python.estimator.head import base_head
    from tensorflow_estimator.python.estimator.tpu.tpu_estimator import TPUEstimatorSpec

    assert estimator_lib.Estimator is estimator_lib.EstimatorV2 is estimator.Estimator
    # in TF 2.15's canned modules the bare name is TF 1.x's class, `V2` tf.estimator's
    assert dnn.DNNClassifier is estimator.v1.DNNClassifier and dnn.DNNClassifierV2 is estimator.DNNClassifier
    assert callable(dnn.dnn_model_fn_v2) and mode_keys.ModeKeys is estimator.ModeKeys
    assert model_fn._TPUEstimatorSpec is TPUEstimatorSpec
    assert isinstance(optimizers.get_optimizer_instance("Adagrad", 0.1), tf.compat.v1.train.AdagradOptimizer)
    assert forwarded.get_optimizer_instance is optimizers.get_optimizer_instance
    assert optimizers._LEARNING_RATE == 0.05  # a constant of TF 2.15's module, as a fact
    for name in ("create_estimator_spec_summary", "create_estimator_spec_train_op", "create_eval_metrics_tuple"):
        assert callable(getattr(base_head, name))
    config = estimator_lib.maybe_overwrite_model_dir_and_session_config(estimator.RunConfig(), "/tmp/somewhere")
    assert config.model_dir == "/tmp/somewhere"
    assert issubclass(_import("tensorflow.python.estimator.canned.head")._Head, _Head.__mro__[0])


def test_a_name_without_a_counterpart_stops_with_one_line_naming_the_public_name(installed):
    with pytest.raises(ImportError) as raised:
        exec("from tensorflow_estimator.python.estimator.canned.timeseries.estimators import TimeSeriesRegressor")
    message = str(raised.value)
    assert "\n" not in message and "TimeSeriesRegressor" in message and "tf.estimator." in message
    # probing answers as it did: False, or the default, for the missing name and for one TF 2.15 never had
    module = _import("tensorflow_estimator.python.estimator.canned.timeseries.estimators")
    assert not hasattr(module, "TimeSeriesRegressor") and getattr(module, "TimeSeriesRegressor", None) is None
    assert not hasattr(_import("tensorflow_estimator.python.estimator.canned.dnn"), "NoSuchName")
    assert not hasattr(_import("tensorflow_estimator.python.estimator.canned.dnn"), "os")  # not the project's imports
    # a submodule of a public API package is the project's module, not a second copy of it
    assert _import("tensorflow_estimator._api.v2.estimator.export") is _import("compat.estimator.export")


def test_tf_compat_v1_keras_is_tf_kerass_v1_api_in_both_spellings(installed):
    import tensorflow.compat.v1.keras as keras_v1
    from tensorflow.compat.v1.keras.initializers import he_uniform

    assert tf.compat.v1.keras is keras_v1 and keras_v1.__name__ == "tf_keras.api._v1.keras"
    values = he_uniform(seed=50)(shape=(3, 4))
    assert values.shape == (3, 4)


def _dense_features_outputs(layer_class, graph: bool) -> dict:
    columns = [tf.feature_column.numeric_column("a"), tf.feature_column.numeric_column("b", shape=(2,))]
    features = {"a": [[1.0], [2.0]], "b": [[1.0, 2.0], [3.0, 4.0]]}
    outputs: dict = {}
    with tf.Graph().as_default() if graph else tf.init_scope():
        layer_class(columns)(
            {key: tf.constant(value) for key, value in features.items()}, cols_to_output_tensors=outputs
        )
    return {column.name: tuple(tensor.shape) for column, tensor in outputs.items()}


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
def test_dense_features_fills_the_callers_cols_to_output_tensors(installed, graph):
    expected = {"a": (2, 1), "b": (2, 2)}
    assert _dense_features_outputs(tf.keras.layers.DenseFeatures, graph) == expected
    assert _dense_features_outputs(tf.compat.v1.keras.layers.DenseFeatures, graph) == expected


@keras_3_only
def test_a_librarys_subclass_of_a_legacy_optimizer_trains_a_model_fn(installed, tmp_path):
    class ClippedSGD(tf.keras.optimizers.legacy.SGD):  # as privacy libraries subclass it
        def get_gradients(self, loss, params):
            return [tf.clip_by_norm(gradient, 1.0) for gradient in super().get_gradients(loss, params)]

    assert isinstance(tf.keras.optimizers.legacy.Adam(1e-3), tf.keras.optimizers.Adam)  # by its name, eagerly

    def model_fn(features, labels, mode):
        logits = tf.compat.v1.layers.dense(features["x"], 1)
        loss = tf.compat.v1.losses.mean_squared_error(labels, logits)
        optimizer = ClippedSGD(0.1)
        optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
        train_op = optimizer.get_updates(loss, tf.compat.v1.trainable_variables())[0]
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    x = np.linspace(-1, 1, 64, dtype=np.float32)[:, None]
    input_fn = estimator.inputs.numpy_input_fn({"x": x}, 3 * x, batch_size=16, num_epochs=None, shuffle=True)
    trained = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    trained.train(input_fn, steps=60)
    assert trained.get_variable_value("global_step") == 60
    assert abs(float(trained.get_variable_value("dense/kernel")[0, 0]) - 3.0) < 0.5


def test_a_tf1_head_subclass_trains_evaluates_and_predicts(installed, tmp_path):
    from tensorflow.python.estimator.canned.head import LossSpec, _Head

    class MeanSquaredHead(_Head):  # a library's own head, written against TF 1.x's interface
        name = None
        logits_dimension = 1

        def create_loss(self, features, mode, logits, labels):
            unreduced = tf.square(logits - labels)
            return LossSpec(tf.reduce_mean(unreduced), unreduced, 1.0, labels)

        def create_estimator_spec(self, features, mode, logits, labels=None, train_op_fn=None, **unused):
            if mode == tf.estimator.ModeKeys.PREDICT:
                return tf.estimator.EstimatorSpec(mode, predictions={"value": logits})
            loss = self.create_loss(features, mode, logits, labels).training_loss
            metrics = {"mse": tf.compat.v1.metrics.mean_squared_error(labels, logits)}
            train_op = train_op_fn(loss) if mode == tf.estimator.ModeKeys.TRAIN else None
            return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops=metrics)

    def model_fn(features, labels, mode):
        logits = tf.compat.v1.layers.dense(features["x"], 1)
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)

        def train_op_fn(loss):
            return optimizer.minimize(loss, tf.compat.v1.train.get_global_step())

        return MeanSquaredHead().create_estimator_spec(features, mode, logits, labels, train_op_fn=train_op_fn)

    x = np.linspace(-1, 1, 64, dtype=np.float32)[:, None]
    train = estimator.inputs.numpy_input_fn({"x": x}, 2 * x, batch_size=16, num_epochs=None, shuffle=True)
    once = estimator.inputs.numpy_input_fn({"x": x}, 2 * x, batch_size=16, num_epochs=1, shuffle=False)
    trained = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    trained.train(train, steps=100)
    metrics = trained.evaluate(once)
    assert set(metrics) == {"loss", "mse", "global_step"} and metrics["mse"] < 0.05
    predictions = [p["value"][0] for p in trained.predict(once)]
    assert np.allclose(predictions, 2 * x[:, 0], atol=0.3)


def test_an_abstract_tf1_head_is_refused_as_in_tf_2_15(installed):
    from tensorflow.python.estimator.canned.head import _Head

    class NoLoss(_Head):
        name = "x"
        logits_dimension = 1

    with pytest.raises(TypeError, match="abstract"):
        NoLoss()


def test_the_check_says_these_imports_run_after_install(tmp_path):
    program = tmp_path / "library.py"
    program.write_text(
        "import tensorflow as tf\n"
        "from tensorflow.python.estimator.canned.head import _Head\n"
        "from tensorflow_estimator.python.estimator.canned import optimizers\n"
        "from tensorflow.compat.v1.keras.initializers import he_uniform\n"
        "from tensorflow_estimator.python.estimator.canned.dnn import NotInTF215\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "compat.estimator.check", str(program)], capture_output=True, text=True, check=False
    )
    lines = result.stdout.splitlines()
    assert any("canned.head._Head  as TF 2.15: TF 2.15's module path: imports after" in line for line in lines)
    assert any("compat.v1.keras.initializers.he_uniform  as TF 2.15" in line for line in lines)
    assert any("NotInTF215  unknown: NotInTF215 was not a name of TF 2.15's" in line for line in lines)


def _resolve(dotted: str):
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            value = getattr(value, part)
        return value
    raise ImportError(dotted)


def _has(cls, attribute: str) -> bool:
    """Whether instances of `cls` have `attribute` (a class attribute, or one `__init__` sets: a head's
    `_label_vocabulary`), made with no arguments or with `n_classes=3` as the heads need."""
    if hasattr(cls, attribute):
        return True
    for args in ((), (3,)):
        try:
            return hasattr(cls(*args), attribute)
        except TypeError:
            continue
    return False


def test_every_estimator_name_that_libraries_reach_resolves_after_install(installed):
    """tests/data/library_estimator_names.json: what thirteen releases of ten libraries (AdaNet, Analytics Zoo,
    BigDL Orca, DeepCTR, Fedlearner, Keras 2.15, tf_keras, TF Lattice, TF Model Analysis, TF Privacy) reach
    of TF 2.15's estimator modules by path, subclass attributes included (tests/helpers/scan_library_names.py
    lists them). Each resolves to its counterpart here; none fails the library's import."""
    import json
    import os

    from conftest import REPO

    scanned = json.load(open(os.path.join(REPO, "tests", "data", "library_estimator_names.json")))
    assert len(scanned) >= 10
    missing = []
    for library, names in scanned.items():
        for name in names:
            target, _, attribute = name.partition("#")
            try:
                value = _resolve(target)
            except (ImportError, AttributeError) as error:
                missing.append(f"{library}: {name} ({error})")
                continue
            if attribute and not _has(value, attribute):
                missing.append(f"{library}: {name}")
    assert not missing, "\n".join(missing)


def test_the_export_garbage_collection_filters_keep_what_tf_2_15s_kept(tmp_path):
    """TF 2.15's `gc` filters, which TF Model Analysis imports: the largest versions, one of every n (version 0
    in the first interval), multiples, union, negation, and the export folders of a directory."""
    from compat.estimator import gc

    paths = [gc.Path(name, version) for name, version in [("a", 1), ("b", 5), ("c", None), ("d", 10), ("e", 11),
                                                         ("f", 0)]]
    by_version = {path.export_version: path for path in paths}
    assert gc.largest_export_versions(2)(paths) == [by_version[10], by_version[11]]
    assert gc.negation(gc.largest_export_versions(2))(paths) == sorted(set(paths) - {by_version[10], by_version[11]})
    assert gc.one_of_every_n_export_versions(5)(paths) == [by_version[5], by_version[10], by_version[11]]
    assert gc.one_of_every_n_export_versions(5)([by_version[0]]) == [by_version[0]]
    assert gc.mod_export_version(5)([by_version[0], by_version[5], by_version[11]]) == [by_version[5], by_version[0]]
    assert gc.union(gc.mod_export_version(10), gc.largest_export_versions(1))(
        [by_version[1], by_version[10], by_version[11]]) == [by_version[10], by_version[11]]
    for name in ("1700000000", "1700000001", "temp-1700000002", "notes"):
        (tmp_path / name).mkdir()
    found = gc.get_paths(str(tmp_path), parser=gc.export_version)
    assert [(os.path.basename(path.path), path.export_version) for path in found] == [
        ("1700000000", 1700000000), ("1700000001", 1700000001)]


def test_functions_of_tf_2_15s_modules_take_its_parameters_in_its_order(installed):
    """A library calls TF 2.15's functions by position (`dnn_logit_fn_builder_v2(units, ..., dropout, True)`,
    `_regression_head(None, 3)`, `_summary_key(head_name, key)`): each counterpart takes TF 2.15's parameters
    in its order, optional ones of its own only after them (tests/data/tf215_module_signatures.json, recorded by
    tests/helpers/tf215_module_signatures.py under TF 2.15). Renamed parameters count as different too."""
    import inspect
    import json

    from conftest import REPO

    recorded = json.load(open(os.path.join(REPO, "tests", "data", "tf215_module_signatures.json")))
    assert len(recorded) > 250
    different, compared = [], 0
    for dotted, parameters in recorded.items():
        module_name, name = dotted.rsplit(".", 1)
        try:
            value = getattr(importlib.import_module(module_name), name)
        except (ImportError, AttributeError):
            continue  # names without a counterpart: docs/compatibility.md lists them
        try:
            ours = list(inspect.signature(value).parameters)
        except (TypeError, ValueError):
            continue
        compared += 1
        if ours[: len(parameters)] != parameters:
            different.append(f"{dotted}{tuple(parameters)}: here {tuple(ours)}")
    assert compared > 120
    assert not different, "\n".join(different)


@pytest.mark.parametrize("first", ["tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2",
                                   "tensorflow.compat.v2.compat.v1.estimator"])
@pytest.mark.parametrize("order", ["install_first", "tensorflow_first"])
def test_every_spelling_of_the_namespaces_works_in_either_order_of_install_and_import(order, first):
    """The README's order (install(), then `import tensorflow`) and the other, whichever TensorFlow module a
    program touches first: every spelling of tf.estimator and tf.compat.v1.estimator (and tf.compat.v1.layers)
    resolves as an attribute and imports as a module (`import tensorflow.compat.v1.estimator.tpu`), and a library
    subclasses `tf.compat.v2.compat.v1.estimator.tpu.TPUEstimator` (tests/helpers/namespace_spellings.py)."""
    if first.endswith(".estimator") and order == "tensorflow_first":
        pytest.skip("a TF 2.15 module path imports only after install()")
    result = subprocess.run([sys.executable, os.path.join(HELPERS, "namespace_spellings.py"), order, first],
                            capture_output=True, text=True, timeout=300, cwd=REPO,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": REPO})
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(results) == 22
    assert {spelling: outcome for spelling, outcome in results.items() if outcome is not True} == {}
