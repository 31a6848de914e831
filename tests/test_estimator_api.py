"""TF 2.15's public tf.estimator names beyond the core: export of all modes, the experimental hooks,
add_metrics, TPUEstimator off a TPU and DenseFeatures, as a program uses them."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import compat.estimator as estimator
from conftest import HELPERS, REPO, keras_3_only, run_installed

RNG = np.random.default_rng(3)
X = RNG.normal(size=(96, 3)).astype("float32")
Y = (X[:, 0] + X[:, 1] > 0).astype("int32")


def input_fn(params=None, repeat=True):
    dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
    dataset = dataset.repeat() if repeat else dataset
    return dataset.batch((params or {}).get("batch_size", 16))


def model_fn(features, labels, mode):
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    predictions = {"class_ids": tf.argmax(logits, 1), "logits": logits}
    if mode == estimator.ModeKeys.PREDICT:
        return estimator.EstimatorSpec(mode, predictions=predictions)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.AdamOptimizer(0.05).minimize(loss, tf.compat.v1.train.get_global_step())
    return estimator.EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op, eval_metric_ops={
        "accuracy": tf.compat.v1.metrics.accuracy(labels, predictions["class_ids"])})


def test_every_public_name_of_tf_2_15_resolves_after_install(installed):
    from compat.estimator.compatibility import tf215_names

    names = tf215_names()
    missing = []
    for dotted in names:
        value = tf
        for part in dotted.split("."):
            value = getattr(value, part, None)
            if value is None:
                missing.append(dotted)
                break
    assert not missing and len(names) == 157


def test_export_all_modes_writes_tf_2_15s_tags_and_signatures(tmp_path):
    est = estimator.Estimator(model_fn, str(tmp_path / "run"))
    est.train(input_fn, steps=5)
    supervised = estimator.experimental.build_raw_supervised_input_receiver_fn(
        {"x": tf.zeros([1, 3])}, tf.zeros([1], tf.int32))
    serving = estimator.export.build_raw_serving_input_receiver_fn({"x": tf.zeros([1, 3])})
    path = est.experimental_export_all_saved_models(str(tmp_path / "export"), {
        estimator.ModeKeys.TRAIN: supervised, estimator.ModeKeys.EVAL: supervised, estimator.ModeKeys.PREDICT: serving})
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString(open(os.path.join(path.decode(), "saved_model.pb"), "rb").read())
    tags = {tuple(graph.meta_info_def.tags): sorted(graph.signature_def) for graph in proto.meta_graphs}
    assert tags == {("train",): ["train"], ("eval",): ["eval"], ("serve",): ["serving_default"]}
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        graph = tf.compat.v1.saved_model.load(session, ["eval"], path.decode())
        outputs = graph.signature_def["eval"].outputs
        assert {"loss", "metrics/accuracy/value", "metrics/accuracy/update_op", "predictions/logits"} <= set(outputs)
    with pytest.raises(ValueError, match="Features and labels must have distinct keys"):
        estimator.experimental.build_raw_supervised_input_receiver_fn({"x": X}, {"x": Y})


def test_in_memory_evaluator_hook_evaluates_while_training(tmp_path):
    est = estimator.Estimator(model_fn, str(tmp_path))
    hook = estimator.experimental.InMemoryEvaluatorHook(est, lambda: input_fn(repeat=False), every_n_iter=10)
    est.train(input_fn, steps=25, hooks=[hook])
    steps = set()
    for path in tf.io.gfile.glob(os.path.join(est.eval_dir(), "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            if any(value.tag == "accuracy" for value in event.summary.value):
                steps.add(event.step)
    assert steps == {0, 10, 20, 25}  # before training, every 10 steps, at the end; no checkpoint read
    with pytest.raises(ValueError, match="invalid every_n_iter"):
        estimator.experimental.InMemoryEvaluatorHook(est, input_fn, every_n_iter=0)


def test_stop_at_checkpoint_step_hook_is_a_stop_at_step_hook_on_the_chief(tmp_path):
    est = estimator.Estimator(model_fn, str(tmp_path))
    hook = estimator.experimental.make_stop_at_checkpoint_step_hook(est, last_step=7)
    assert isinstance(hook, tf.compat.v1.train.StopAtStepHook)
    est.train(input_fn, hooks=[hook])
    assert est.get_variable_value("global_step") == 7


def test_add_metrics_adds_to_evaluations_only(tmp_path):
    est = estimator.Estimator(model_fn, str(tmp_path))
    est.train(input_fn, steps=20)

    def metric_fn(labels, predictions):
        return {"mean_label": tf.compat.v1.metrics.mean(labels), "keras_mean": _keras_mean(predictions["logits"])}

    extended = estimator.add_metrics(est, metric_fn)
    assert extended.model_dir == est.model_dir
    result = extended.evaluate(lambda: input_fn(repeat=False))
    assert result["mean_label"] == pytest.approx(Y.mean()) and "accuracy" in result and "keras_mean" in result
    with pytest.raises(ValueError, match="not expected args"):
        estimator.add_metrics(est, lambda labels, logits: {})


def _keras_mean(values):
    metric = keras.metrics.Mean()
    metric.update_state(values)
    return metric


def test_tpu_estimator_runs_off_a_tpu_with_the_batch_size_in_params(tmp_path):
    seen = []

    def tpu_model_fn(features, labels, mode, params):
        seen.append((mode, params["batch_size"]))
        spec = model_fn(features, labels, mode)
        if mode == estimator.ModeKeys.PREDICT:
            return estimator.tpu.TPUEstimatorSpec(mode, predictions=spec.predictions)

        def metric_fn(labels, logits):
            return {"accuracy": tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1))}

        return estimator.tpu.TPUEstimatorSpec(mode, loss=spec.loss, train_op=spec.train_op,
                                              eval_metrics=(metric_fn, [labels, spec.predictions["logits"]]))

    config = estimator.tpu.RunConfig(tpu_config=estimator.tpu.TPUConfig(iterations_per_loop=4))
    est = estimator.tpu.TPUEstimator(tpu_model_fn, str(tmp_path), config, use_tpu=False, train_batch_size=32,
                                     eval_batch_size=8, predict_batch_size=4)
    est.train(input_fn, steps=30)
    result = est.evaluate(lambda params: input_fn(params, repeat=False))
    assert result["accuracy"] > 0.8 and result["global_step"] == 30
    assert len(list(est.predict(lambda params: input_fn(params, repeat=False)))) == 96
    assert seen == [("train", 32), ("eval", 8), ("infer", 4)]
    # TF 2.15's training summaries: examples/sec beside global_step/sec, every log_step_count_steps (100: none
    # in 30 steps), so a second estimator logging every 10 steps
    every_10 = estimator.tpu.RunConfig(log_step_count_steps=10)
    logged = estimator.tpu.TPUEstimator(tpu_model_fn, str(tmp_path / "logged"), every_10, use_tpu=False,
                                        train_batch_size=32)
    logged.train(input_fn, steps=30)
    tf.compat.v1.summary.FileWriterCache.clear()
    steps: dict = {}
    for path in tf.io.gfile.glob(str(tmp_path / "logged" / "events.out.tfevents*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                steps.setdefault(value.tag, []).append(event.step)
    assert steps["examples/sec"] == steps["global_step/sec"] == [11, 21]
    with pytest.raises(ValueError, match="no meaning off a TPU"):
        estimator.tpu.experimental.EmbeddingConfigSpec(feature_columns=[])
    with pytest.raises(ValueError, match="does not include params argument"):
        est.train(lambda: input_fn(), steps=1)


def test_a_tpu_program_hears_tf_2_15s_argument_checks_before_it_is_told_it_needs_a_tpu(tmp_path, monkeypatch):
    def tpu_model_fn(features, labels, mode, params):
        return model_fn(features, labels, mode)

    config = estimator.tpu.RunConfig(tpu_config=estimator.tpu.TPUConfig(iterations_per_loop="300s"))
    with pytest.raises(ValueError, match="`train_batch_size` cannot be `None`"):
        estimator.tpu.TPUEstimator(tpu_model_fn, str(tmp_path), config)
    with pytest.raises(ValueError, match="train_batch_size` must be positive integer"):
        estimator.tpu.TPUEstimator(tpu_model_fn, str(tmp_path), config, train_batch_size=0)
    with pytest.raises(ValueError, match="does not include params argument"):
        estimator.tpu.TPUEstimator(lambda features, labels, mode: None, str(tmp_path), config, params={"a": 1},
                                   train_batch_size=32)
    est = estimator.tpu.TPUEstimator(tpu_model_fn, str(tmp_path), config, train_batch_size=32)
    with pytest.raises(ValueError, match="one of `steps` or `max_steps` must be set"):
        est.train(input_fn)
    with pytest.raises(ValueError, match="Train steps must be positive integer"):
        est.train(input_fn, steps=-1)
    with pytest.raises(TypeError, match="SessionRunHook"):
        est.train(input_fn, steps=1, hooks=["not a hook"])
    with pytest.raises(ValueError, match="Evaluate `steps` must be set on TPU"):
        est.evaluate(input_fn)
    with pytest.raises(ValueError, match="needs a TPU"):  # only now: TF 2.15 would start the TPU here
        est.train(input_fn, steps=1)
    assert not os.listdir(tmp_path)  # nothing written

    # iterations_per_loop: steps or a time, as TF 2.15 read it; anything else refused when the config is made
    assert estimator.tpu.TPUConfig(iterations_per_loop="1h").iterations_per_loop == "1h"
    for bad in ("abc", 0, "10x", -2):
        with pytest.raises(ValueError, match="Invalid TPUConfig `iterations_per_loop` value"):
            estimator.tpu.TPUConfig(iterations_per_loop=bad)
    # a TF_CONFIG cluster: no device filters (TPUs run in-graph), and the TPU job named by its service
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"chief": ["localhost:2222"], "worker": ["localhost:2223"]},
        "task": {"type": "worker", "index": 0}, "service": {"tpu_worker_job_name": "tpu_job"}}))
    tpu_config = estimator.tpu.RunConfig()
    assert tpu_config.session_config is None and tpu_config.tpu_config.tpu_job_name == "tpu_job"


@keras_3_only
def test_dense_features_feeds_feature_columns_to_a_keras_3_model(tmp_path, installed):
    data = {"age": RNG.uniform(18, 80, 128).astype("float32"), "city": RNG.choice(["a", "b", "c"], 128)}
    labels = (data["city"] == "b").astype("int32")
    city = tf.feature_column.categorical_column_with_vocabulary_list("city", ["a", "b", "c"])
    columns = [tf.feature_column.numeric_column("age"), tf.feature_column.embedding_column(city, 4),
               tf.feature_column.indicator_column(city)]
    model = keras.Sequential([tf.keras.layers.DenseFeatures(columns), keras.layers.Dense(2)])
    model.compile(keras.optimizers.Adam(0.05), keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    dataset = tf.data.Dataset.from_tensor_slices((data, labels)).batch(16)
    history = model.fit(dataset, epochs=20, verbose=0)
    assert history.history["accuracy"][-1] == 1.0
    assert model.layers[0].compute_output_shape({"age": (None,)}) == (None, 1 + 4 + 3)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    np.testing.assert_allclose(loaded.predict(dataset, verbose=0), model.predict(dataset, verbose=0), atol=1e-6)
    with pytest.raises(ValueError, match="must be a DenseColumn"):
        tf.keras.layers.DenseFeatures([city])


@keras_3_only
def test_dense_features_is_there_by_every_spelling_of_tf_keras_layers_after_install():
    program = (
        "from tensorflow.keras import layers as before\n"
        "import tensorflow as tf\n"
        "import compat.estimator\n"
        "compat.estimator.install()\n"
        "from tensorflow import keras\n"
        "from tensorflow.keras import layers\n"
        "import tensorflow.keras.layers as imported\n"
        "print(all(hasattr(m, 'DenseFeatures') for m in (before, keras.layers, layers, imported, tf.keras.layers)))\n"
        "compat.estimator.uninstall()\n"
        "print(hasattr(tf.keras.layers, 'DenseFeatures'))\n"
        "print(hasattr(tf, 'estimator') or hasattr(tf.compat.v1, 'estimator') or 'estimator' in tf.compat.v1.__all__)\n")
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert result.stdout.split() == ["True", "False", "False"], result.stderr[-3000:]


def test_a_multi_head_program_with_add_metrics_exports_what_tf_2_15_exports(tmp_path):
    """tests/helpers/tf215_multihead_export.py (two heads in a MultiHead, add_metrics, tf.keras.optimizers.legacy
    in the model_fn), run after install(): the same metrics, and for the serving export and the export of all modes
    the same tags, signatures, methods and input and output keys as TF 2.15 recorded."""
    import subprocess
    import sys

    out = tmp_path / "ours.json"
    program = ("import runpy, sys\nimport compat.estimator\ncompat.estimator.install()\n"
               f"sys.argv = ['tf215_multihead_export.py', {str(tmp_path / 'work')!r}, {str(out)!r}]\n"
               f"runpy.run_path({os.path.join(HELPERS, 'tf215_multihead_export.py')!r}, run_name='__main__')\n")
    result = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    ours = json.loads(out.read_text())
    tf215 = json.load(open(os.path.join(REPO, "tests", "data", "tf215_multihead_export.json")))
    assert len(ours["serving"]["serve"]) > 1  # not vacuous: a signature per head and output (no default one)
    for key in ("metrics", "serving", "all_modes"):
        assert ours[key] == tf215[key], key


def _on_a_device(params=None, repeat=True):
    """A TF 1.8-era input_fn that copies its batches to a device itself (tensorflow/models#3908): "/cpu:0"
    here, where a GPU machine named "/gpu:0"."""
    return input_fn(params, repeat).apply(tf.data.experimental.prefetch_to_device("/cpu:0"))


@pytest.mark.parametrize("engine", ["graph", "keras"])
def test_an_input_fn_that_prefetches_to_a_device_trains_and_evaluates_on_both_engines(tmp_path, engine, monkeypatch):
    from compat.core import strategies

    # The Keras engine's own copy ahead goes to /cpu:0 here, where a GPU machine would copy to its GPU: on top of
    # the input_fn's own copy, as a GPU machine would run this program.
    monkeypatch.setenv(strategies.DEVICE_PREFETCH_VARIABLE, "/cpu:0")
    if engine == "graph":
        model = estimator.Estimator(model_fn, model_dir=str(tmp_path))
    else:
        inputs = keras.Input((3,), name="x")
        seeded = keras.initializers.GlorotUniform(seed=0)
        keras_model = keras.Model(inputs, keras.layers.Dense(2, "softmax", kernel_initializer=seeded)(inputs))
        keras_model.compile(keras.optimizers.Adam(0.05), "sparse_categorical_crossentropy", metrics=["accuracy"])
        model = estimator.model_to_estimator(keras_model=keras_model, model_dir=str(tmp_path))
    model.train(_on_a_device, steps=30)
    metrics = model.evaluate(lambda: _on_a_device(repeat=False))
    assert metrics["global_step"] == 30 and metrics["accuracy"] > 0.7  # the two features decide the label


def test_prefetch_to_accelerator_copies_ahead_in_order_and_is_a_no_op_without_a_gpu(monkeypatch):
    from compat.core import strategies

    monkeypatch.delenv(strategies.DEVICE_PREFETCH_VARIABLE, raising=False)
    dataset = input_fn(repeat=False)
    if not tf.config.list_logical_devices("GPU"):
        assert strategies.prefetch_to_accelerator(dataset) is dataset
    copied = strategies.prefetch_to_accelerator(dataset, device="/cpu:0")
    assert copied is not dataset
    assert [labels.numpy().tolist() for _, labels in copied] == [labels.numpy().tolist() for _, labels in dataset]

    @tf.function
    def sum_of_labels(iterator, steps):  # as the Keras engine's compiled loop reads it
        total = tf.constant(0, tf.int64)
        for _ in tf.range(steps):
            total += tf.reduce_sum(tf.cast(next(iterator)[1], tf.int64))
        return total

    assert int(sum_of_labels(iter(copied), tf.constant(6))) == int(Y.sum())
    monkeypatch.setenv(strategies.DEVICE_PREFETCH_VARIABLE, "0")
    assert strategies.prefetch_to_accelerator(dataset, device="/cpu:0") is dataset
    monkeypatch.setenv(strategies.DEVICE_PREFETCH_VARIABLE, "/cpu:0")  # a device named: copied there
    assert strategies.prefetch_to_accelerator(dataset) is not dataset


def test_the_builders_input_fn_leaves_the_copy_to_the_engine_and_a_strategy_gets_host_batches(tmp_path, monkeypatch):
    """A dataset a strategy distributes, or an Estimator engine reads, must not already be on a device."""
    from compat import data
    from compat.core import strategies
    from conftest import write_class_folders

    monkeypatch.setenv(strategies.DEVICE_PREFETCH_VARIABLE, "/cpu:0")
    source = str(write_class_folders(tmp_path / "data", per_class=4))
    config = data.PipelineConfig(cache_dir=str(tmp_path / "cache"), batch_size=4, clip_seconds=0.5)
    keras_mode = data.build_dataset(source, config, "eval")
    engine_input = data.make_input_fn(source, config, "eval")(mode="eval")
    strategy_input = data.build_dataset(source, config, "eval", input_context=tf.distribute.InputContext())
    # What the last stage is tells a copied dataset from a host one (prefetch_to_device ends in its own stage).
    copied = type(strategies.prefetch_to_accelerator(tf.data.Dataset.range(1))).__name__
    on_the_host = type(tf.data.Dataset.range(1).prefetch(1).with_options(tf.data.Options())).__name__
    assert copied != on_the_host
    assert type(keras_mode).__name__ == copied
    assert type(engine_input).__name__ == type(strategy_input).__name__ == on_the_host
    assert [labels.numpy().tolist() for _, labels in keras_mode] == [labels.numpy().tolist() for _, labels in engine_input]


def _loaded(tmp_path, code: str) -> set[str]:
    """The modules a fresh process has loaded when `code` ends (its `sys.modules`, written at exit)."""
    out = tmp_path / "modules.json"
    prologue = f"import atexit, json, sys; atexit.register(lambda: open({str(out)!r}, 'w').write(json.dumps(list(sys.modules))))\n"
    result = subprocess.run([sys.executable, "-c", prologue + code], capture_output=True, text=True, cwd=REPO,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return set(json.loads(out.read_text()))


def _command(module: str, *args: str) -> str:
    """`python -m module args...` as code for `_loaded`."""
    return (f"import runpy; sys.argv = {[module, *args]!r}; "
            f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)")


@keras_3_only
def test_a_program_loads_only_the_parts_of_the_package_it_uses(tmp_path):
    """The check and the cache listing need no TensorFlow; a model_fn of TF ops needs no Keras 2 (tf_keras);
    a canned estimator loads it. Every public name still resolves (the lazy table agrees with the modules)."""
    source = tmp_path / "legacy.py"
    source.write_text("import tensorflow as tf\nest = tf.estimator.DNNClassifier([4], [])\n")
    check = _loaded(tmp_path, _command("compat.estimator.check", str(source)))
    # `tensorflow.python`: TensorFlow loaded (a lazy `tensorflow` entry in sys.modules is not loaded)
    assert "compat.estimator.compatibility" in check and "tensorflow.python" not in check
    for cache_command in ("compat.data.cache", "compat.cache"):  # the command's name now, and before 0.2
        listing = _loaded(tmp_path, _command(cache_command, "--cache_dir", str(tmp_path), "list"))
        assert "compat.data.sources" in listing and "tensorflow.python" not in listing
    model_fn_program = (
        "import tensorflow as tf, compat.estimator as estimator\n"
        "def model_fn(features, labels, mode):\n"
        "    w = tf.compat.v1.get_variable('w', [3, 1])\n"
        "    loss = tf.reduce_mean(tf.square(tf.matmul(features['x'], w) - labels))\n"
        "    step = tf.compat.v1.train.get_global_step()\n"
        "    return estimator.EstimatorSpec(mode, loss=loss, predictions={'y': tf.matmul(features['x'], w)},\n"
        "        train_op=tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, step))\n"
        "data = lambda: tf.data.Dataset.from_tensors(({'x': tf.ones([4, 3])}, tf.ones([4, 1]))).repeat()\n"
        "estimator.Estimator(model_fn, config=estimator.RunConfig(model_dir=%r)).train(data, steps=2)\n"
    ) % str(tmp_path / "model_fn")
    model_fn_run = _loaded(tmp_path, model_fn_program)
    assert "compat.estimator.estimator" in model_fn_run and "tf_keras" not in model_fn_run
    # a legacy program imports TensorFlow, then this package, and may build tf.compat.v1 layers before it
    # reaches an Estimator name: they work from the import, as they always did (TF 2.21's stubs raise)
    layers = _loaded(tmp_path, "import tensorflow as tf, compat.estimator\n"
                               "assert tf.compat.v1.layers.Dense(2)(tf.ones([1, 3])).shape == (1, 2)")
    assert "tf_keras" in layers
    canned = _loaded(tmp_path, "import compat.estimator as estimator; estimator.DNNClassifier([4], [])")
    assert "tf_keras" in canned  # the measurement sees it where it is loaded
    names = _loaded(tmp_path, "import compat.estimator as e, compat.estimator.v1 as v1, compat.estimator.canned as c, "
                              "compat.estimator.head as h; [getattr(c, n) for n in c.__all__]; "
                              "[getattr(c, f'{n}V1') for n in c.V1_CLASSES]; [getattr(h, n) for n in h.__all__]; "
                      "[getattr(e, n) for n in e.__all__]; [getattr(v1, n) for n in v1.__all__]; "
                      "[getattr(e.experimental, n) for n in vars(e.experimental)]")
    assert "compat.estimator.canned.rnn" in names


SPELLINGS_V2 = ("tf", "tf.compat.v2", "tf.compat.v1.compat.v2", "tf.compat.v2.compat.v2")
SPELLINGS_V1 = ("tf.compat.v1", "tf.compat.v1.compat.v1", "tf.compat.v2.compat.v1")


def _at(path: str):
    value = tf
    for part in path.split(".")[1:]:
        value = getattr(value, part)
    return value


def test_every_spelling_tf_2_15_had_gives_the_estimator_and_uninstall_removes_them(installed):
    """TF 2.15 bound `estimator` in each spelling of its TF 2 API, and the v1 `estimator`, `layers` and `keras`
    in each of its TF 1.x API (Google's libraries `import tensorflow.compat.v2 as tf`)."""
    import tensorflow.compat.v1 as tf1
    import tensorflow.compat.v2 as tf2

    from compat.estimator import v1

    for path in SPELLINGS_V2:
        assert _at(path).estimator is estimator, path
    assert tf2.estimator is estimator
    for path in SPELLINGS_V1:
        namespace = _at(path)
        assert namespace.estimator is v1, path
        assert callable(namespace.layers.dense) and namespace.layers.dense is tf1.layers.dense, path
        assert namespace.keras.__name__ == "tf_keras.api._v1.keras", path
    import tensorflow.compat.v2.estimator as imported  # noqa: F401

    assert sys.modules["tensorflow.compat.v2.estimator"] is estimator
    estimator.uninstall()
    try:
        assert not any(hasattr(_at(path), "estimator") for path in SPELLINGS_V1 + SPELLINGS_V2)
        assert "tensorflow.compat.v2.estimator" not in sys.modules
    finally:
        estimator.install()


def test_a_library_in_the_compat_v2_style_trains_evaluates_and_predicts(tmp_path):
    result = run_installed("compat_v2_program.py", str(tmp_path / "model"))
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["global_step"] == 60 and report["predictions"] == 128 and report["linear_step"] == 20
    assert report["accuracy"] > 0.9


def test_tpu_estimator_takes_an_hparams_style_params_object_and_sets_tf_2_15s_keys(tmp_path):
    """A dict or an object with attributes, `values()` and `add_hparam`: the input_fn and the model_fn get
    copies with `batch_size` (and, for the model_fn, `use_tpu`) set as TF 2.15 set them; the caller's stays
    unchanged, the Estimator's gains `use_tpu` at export, as TF 2.15's did. Export calls the model_fn twice
    without `batch_size` and writes the meta graphs `serve` and `serve, tpu` (export_to_tpu's default)."""
    result = run_installed("tpu_params_program.py", str(tmp_path / "model"))
    assert result.returncode == 0, result.stderr[-3000:]
    recorded = json.load(open(os.path.join(REPO, "tests", "data", "tf215_tpu_params.json")))
    assert recorded["hparams"]["model_fn_train"]["values"]["batch_size"] == 16
    assert [mode for mode, _ in recorded["dict"]["calls"]] == ["train", "eval", "infer", "infer", "infer"]
    assert recorded["dict"]["tags"] == [["serve"], ["serve", "tpu"]]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == recorded


def test_tpu_estimator_refuses_to_export_nothing():
    """TF 2.15's check: export_to_cpu and export_to_tpu both off leave nothing to export."""
    with pytest.raises(ValueError, match="One of export_to_cpu and export_to_tpu must be true"):
        estimator.tpu.TPUEstimator(lambda features, labels, mode, params: None, config=estimator.tpu.RunConfig(),
                                   use_tpu=False, train_batch_size=2, export_to_cpu=False, export_to_tpu=False)
