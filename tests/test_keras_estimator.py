"""compat.estimator's Keras engine (model_to_estimator) against TF 2.15's Estimator semantics, one test per point."""

import glob
import json
import logging
import os
import shutil
import signal
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import compat.estimator as estimator
from compat.estimator.keras_engine import checkpoint as keras_checkpoint
from compat.estimator.dense_features import DenseFeatures
from conftest import HELPERS, REPO, keras_3_only, run_installed, sets_its_keras, start_paused

RNG = np.random.default_rng(0)
X = RNG.standard_normal((256, 8)).astype("float32")
Y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype("int32")


def make_model(compiled=True, batch_norm=True):
    inputs = keras.Input((8,), name="x")
    hidden = keras.layers.Dense(16, activation="relu")(inputs)
    if batch_norm:
        hidden = keras.layers.BatchNormalization(name="bn")(hidden)
    model = keras.Model({"x": inputs}, keras.layers.Dense(2, name="logits")(hidden))
    if compiled:
        model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


class CountingInputFn:
    """An input_fn that records its calls and the arguments it was given."""

    def __init__(self, repeat=True, batch=32):
        self.calls, self.repeat, self.batch = [], repeat, batch

    def __call__(self, params, mode, config, input_context):
        self.calls.append({"params": params, "mode": mode, "config": config, "input_context": input_context})
        dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
        return (dataset.repeat() if self.repeat else dataset).batch(self.batch)


def make_estimator(model_dir, **config):
    config.setdefault("save_checkpoints_steps", 10)
    return estimator.model_to_estimator(keras_model=make_model(), model_dir=str(model_dir),
                                        config=estimator.RunConfig(**config))


def steps_in(model_dir):
    return sorted(int(p.rsplit("-", 1)[1].split(".")[0]) for p in glob.glob(f"{model_dir}/model.ckpt-*.index"))


def test_tf_random_seed_makes_training_reproducible_and_checkpoints_can_be_off(tmp_path):
    initial = make_model().get_weights()

    def trained(folder, global_seed):
        keras.utils.set_random_seed(global_seed)  # differs between the runs; tf_random_seed does not
        model = make_model()
        model.set_weights(initial)
        est = estimator.model_to_estimator(keras_model=model, model_dir=str(folder),
                                           config=estimator.RunConfig(save_checkpoints_steps=5, tf_random_seed=3))
        est.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).shuffle(256).batch(32).repeat(),
                  max_steps=5)
        return {name: est.get_variable_value(name) for name in est.get_variable_names() if "moving" in name}

    first, second = trained(tmp_path / "a", 1), trained(tmp_path / "b", 2)
    assert first and all(np.array_equal(first[name], second[name]) for name in first)
    off = estimator.RunConfig(save_checkpoints_steps=None, save_checkpoints_secs=None)
    assert not off.saves_checkpoints
    est = estimator.model_to_estimator(keras_model=make_model(), model_dir=str(tmp_path / "c"), config=off)
    est.train(CountingInputFn(), steps=3)
    assert steps_in(tmp_path / "c") == []
    with pytest.raises(ValueError, match="train_and_evaluate needs checkpoints"):
        estimator.train_and_evaluate(est, estimator.TrainSpec(CountingInputFn(), max_steps=5),
                                     estimator.EvalSpec(CountingInputFn()))


def test_a_model_dir_of_none_is_a_temporary_folder_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING):
        est = estimator.model_to_estimator(keras_model=make_model())
    assert os.path.isdir(est.model_dir) and "Using temporary folder as model directory" in caplog.text


def test_checkpoint_cadence_and_retention(tmp_path):
    est = make_estimator(tmp_path, save_checkpoints_steps=10, keep_checkpoint_max=4)
    est.train(CountingInputFn(), max_steps=45)
    assert steps_in(tmp_path) == [20, 30, 40, 45]  # every 10 steps, the final step, the last 4 kept
    assert est.latest_checkpoint().endswith("model.ckpt-45")
    assert os.path.isfile(tmp_path / "checkpoint")
    assert glob.glob(str(tmp_path / "events.out.tfevents.*"))
    assert os.path.isdir(tmp_path / "keras")  # the warm-start copy


def test_steps_is_relative_max_steps_absolute_and_both_is_an_error(tmp_path, caplog):
    est = make_estimator(tmp_path)
    input_fn = CountingInputFn()
    est.train(input_fn, steps=7)
    est.train(input_fn, steps=7)
    assert est.get_variable_value("estimator_global_step/.ATTRIBUTES/VARIABLE_VALUE") == 14
    est.train(input_fn, max_steps=20)
    assert steps_in(tmp_path)[-1] == 20
    with pytest.raises(ValueError, match="Can not provide both steps and max_steps"):
        est.train(input_fn, steps=1, max_steps=30)
    calls = len(input_fn.calls)
    with caplog.at_level(logging.INFO):
        assert est.train(input_fn, max_steps=20) is est
    assert len(input_fn.calls) == calls  # skipped without calling input_fn
    assert "Skipping training since max_steps has already saved." in caplog.text
    assert steps_in(tmp_path)[-1] == 20  # and no extra step (TF 2.15 trained one more)


def test_evaluate_returns_compiled_metrics_loss_and_global_step(tmp_path):
    est = estimator.model_to_estimator(keras_model=make_model(), model_dir=str(tmp_path),
                                       config=estimator.RunConfig(save_checkpoints_steps=10),
                                       metric_names_map={"accuracy": "acc"})
    est.train(CountingInputFn(), max_steps=30)
    result = est.evaluate(CountingInputFn(repeat=False))
    assert set(result) == {"acc", "loss", "global_step"} and result["global_step"] == 30
    assert 0 <= result["acc"] <= 1 and result["loss"] > 0
    named = est.evaluate(CountingInputFn(), steps=2, name="holdout")
    assert named["global_step"] == 30
    assert glob.glob(str(tmp_path / "eval" / "events.out.tfevents.*"))
    assert glob.glob(str(tmp_path / "eval_holdout" / "events.out.tfevents.*"))
    older = est.evaluate(CountingInputFn(repeat=False), checkpoint_path=str(tmp_path / "model.ckpt-20"))
    assert older["global_step"] == 20


@pytest.mark.parametrize("throttle_secs,evaluated_at", [(0, [10, 20, 30]), (1000, [10, 30])])
def test_train_and_evaluate_schedule(tmp_path, throttle_secs, evaluated_at):
    est = make_estimator(tmp_path, save_checkpoints_steps=10)
    train_fn, eval_fn = CountingInputFn(), CountingInputFn(repeat=False)
    evaluated = []
    original = est.evaluate

    def spy(*args, **kwargs):
        result = original(*args, **kwargs)
        evaluated.append(result["global_step"])
        return result

    est.evaluate = spy
    result, exports = estimator.train_and_evaluate(
        est, estimator.TrainSpec(train_fn, max_steps=30),
        estimator.EvalSpec(eval_fn, steps=None, throttle_secs=throttle_secs))
    assert len(train_fn.calls) == 1  # the training input is built once
    assert evaluated == evaluated_at and len(eval_fn.calls) == len(evaluated_at)
    assert result["global_step"] == 30 and exports == []
    assert estimator.train_and_evaluate(est, estimator.TrainSpec(train_fn, max_steps=30),
                                        estimator.EvalSpec(eval_fn)) == (None, None)


def test_exporters_write_their_folders(tmp_path):
    est = make_estimator(tmp_path, save_checkpoints_steps=10)
    exporters = [estimator.LatestExporter("latest", exports_to_keep=2), estimator.FinalExporter("final"),
                 estimator.BestExporter()]
    _, results = estimator.train_and_evaluate(
        est, estimator.TrainSpec(CountingInputFn(), max_steps=30),
        estimator.EvalSpec(CountingInputFn(repeat=False), steps=None, throttle_secs=0, exporters=exporters))
    latest = [n for n in os.listdir(tmp_path / "export" / "latest") if n.isdigit()]
    assert len(latest) == 2  # three evaluations, two kept
    assert len(os.listdir(tmp_path / "export" / "final")) == 1  # the final evaluation only
    assert all(name.isdigit() for name in os.listdir(tmp_path / "export" / "best_exporter"))  # exports only
    assert results[0].startswith(str(tmp_path / "export" / "latest").encode())
    assert results[1].startswith(str(tmp_path / "export" / "final").encode())


def test_predict_and_export_match_the_keras_model(tmp_path):
    model = make_model()
    model.get_layer("bn").moving_mean.assign(np.full(16, 0.5, "float32"))  # a non-trainable weight
    est = estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path))
    expected = np.asarray(model({"x": X[:32]}, training=False))
    predictions = list(est.predict(CountingInputFn(repeat=False, batch=16)))
    assert len(predictions) == 256 and set(predictions[0]) == {"logits"}
    np.testing.assert_allclose(np.stack([p["logits"] for p in predictions[:32]]), expected, atol=1e-5)
    batches = list(est.predict(CountingInputFn(repeat=False, batch=16), yield_single_examples=False))
    assert batches[0]["logits"].shape == (16, 2)
    path = est.export_saved_model(str(tmp_path / "exports"))
    assert isinstance(path, bytes) and os.path.basename(path).isdigit()
    assert not glob.glob(str(tmp_path / "exports" / "temp-*"))
    served = tf.saved_model.load(path.decode())
    np.testing.assert_allclose(served.signatures["serving_default"](x=tf.constant(X[:32]))["logits"].numpy(), expected,
                               atol=1e-5)


def test_warm_start_copies_all_weights_and_restarts_from_checkpoints(tmp_path):
    model = make_model()
    model.get_layer("bn").moving_mean.assign(np.full(16, 0.5, "float32"))
    est = estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path),
                                       config=estimator.RunConfig(save_checkpoints_steps=5))
    est.train(CountingInputFn(), max_steps=1)  # saves step 0 (the warm start), then step 1
    moving_mean = [n for n in est.get_variable_names() if "moving_mean" in n][0]
    step0 = tf.train.load_variable(str(tmp_path / "model.ckpt-0"), moving_mean)
    np.testing.assert_allclose(step0, 0.5)  # TF 2.15 restarted batch-norm statistics at 0
    again = estimator.model_to_estimator(keras_model=make_model(), model_dir=str(tmp_path))
    np.testing.assert_allclose(again.get_variable_value(moving_mean), est.get_variable_value(moving_mean))
    with pytest.raises(ValueError, match="Could not find trained model"):
        estimator.model_to_estimator(keras_model=make_model(), model_dir=str(tmp_path / "new")).get_variable_names()


def test_every_input_fn_form(tmp_path, caplog):
    est = make_estimator(tmp_path)
    est.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(32).repeat(), steps=2)
    est.train(lambda: ({"x": tf.constant(X[:32])}, tf.constant(Y[:32])), steps=2)

    def legacy():
        dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(32).repeat()
        return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()

    def legacy_unpacked():
        dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(32).repeat()
        features, labels = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
        return features, labels

    with caplog.at_level(logging.WARNING):
        est.train(legacy, steps=2)
        est.train(legacy_unpacked, steps=2)
    assert "return the tf.data.Dataset itself instead" in caplog.text
    assert steps_in(tmp_path)[-1] == 8
    predictions = list(est.predict(lambda: {"x": tf.constant(X[:4])}))  # features alone
    assert len(predictions) == 4


def test_input_fn_arguments_are_injected_by_signature(tmp_path):
    est = estimator.model_to_estimator(keras_model=make_model(), model_dir=str(tmp_path),
                                       config=estimator.RunConfig(save_checkpoints_steps=10))
    input_fn = CountingInputFn(repeat=False)
    est.train(input_fn, steps=1)
    est.evaluate(input_fn, steps=1)
    list(est.predict(input_fn))
    assert [c["mode"] for c in input_fn.calls] == ["train", "eval", "infer"]
    assert all(isinstance(c["config"], estimator.RunConfig) and c["params"] == {} for c in input_fn.calls)
    assert all(c["input_context"] is None for c in input_fn.calls)  # one machine: no distribution

    seen = {}

    def only_mode(mode):
        seen["mode"] = mode
        return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(32)

    est.evaluate(only_mode, steps=1)
    assert seen == {"mode": "eval"}


def test_hooks_take_keras_callbacks_and_simple_session_run_hooks(tmp_path):
    est = make_estimator(tmp_path)
    seen = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(batch)

    est.train(CountingInputFn(), steps=3, hooks=[Record()])
    assert seen == [1, 2, 3]

    class StopAtFive(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch >= 5:
                self.model.stop_training = True

    est.train(CountingInputFn(), steps=20, hooks=[StopAtFive()])
    assert steps_in(tmp_path)[-1] == 5  # the callback stopped training, and the final step was saved
    est.train(CountingInputFn(), steps=20, hooks=[tf.compat.v1.train.StopAtStepHook(last_step=8)])
    assert steps_in(tmp_path)[-1] == 8  # TensorFlow's own SessionRunHook, run without a Session


def test_an_uncompiled_model_is_refused_with_what_to_do():
    with pytest.raises(ValueError, match="has not been compiled"):
        estimator.model_to_estimator(keras_model=make_model(compiled=False))


def test_install_makes_tf_estimator_names_resolve_and_uninstall_undoes_it(installed):
    assert tf.estimator.RunConfig is estimator.RunConfig
    assert tf.estimator.train_and_evaluate is estimator.train_and_evaluate
    assert tf.keras.estimator.model_to_estimator is estimator.model_to_estimator
    estimator.uninstall()
    assert getattr(tf, "estimator", None) is not estimator
    estimator.install()  # for the fixture to undo


def _run_legacy_script(model_dir, script):
    """Runs the legacy script's text in this process as `__main__` with argv [script, MODEL_DIR]."""
    import contextlib
    import io

    stdout = io.StringIO()
    argv = sys.argv
    sys.argv = ["legacy_estimator_script.py", str(model_dir)]
    try:
        with contextlib.redirect_stdout(stdout):
            exec(compile(script, "legacy_estimator_script.py", "exec"), {"__name__": "__main__"})
    finally:
        sys.argv = argv
    return stdout.getvalue()


def test_a_legacy_training_script_runs_with_its_imports_changed(tmp_path):
    script = open(os.path.join(HELPERS, "legacy_estimator_script.py")).read()
    script = script.replace("estimator = tf.estimator", "import compat.estimator as estimator")
    script = script.replace("model_to_estimator = tf.keras.estimator.model_to_estimator",
                            "from compat.estimator import model_to_estimator")
    assert "eval accuracy" in _run_legacy_script(tmp_path, script)
    assert steps_in(tmp_path) == [20, 40, 60]


def test_a_legacy_training_script_runs_unchanged_after_install(tmp_path, installed):
    script = open(os.path.join(HELPERS, "legacy_estimator_script.py")).read()
    assert "eval accuracy" in _run_legacy_script(tmp_path, script)
    assert steps_in(tmp_path) == [20, 40, 60]


def test_kill_9_then_train_and_evaluate_resumes(tmp_path):
    script = os.path.join(HELPERS, "legacy_estimator_script.py")
    env = {**os.environ, "PYTHONPATH": REPO}
    process = start_paused("checkpoint:20", script, str(tmp_path), install=True, env=env)
    process.send_signal(signal.SIGKILL)  # held just after its checkpoint at step 20 was written
    process.wait()
    assert steps_in(tmp_path)[-1] == 20
    prelude = ["-c", "import compat.estimator; compat.estimator.install(); import runpy, sys; "
                     "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"]
    result = subprocess.run([sys.executable, *prelude, script, str(tmp_path)], env=env, cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert steps_in(tmp_path)[-1] == 60 and "'global_step': np.int64(60)" in result.stdout  # TF 2.15's types
    assert "first step 21\n" in result.stdout  # resumed from the last checkpoint, not step 0


def test_loss_is_the_mean_of_batch_losses_and_extra_features_are_ignored(tmp_path):
    est = make_estimator(tmp_path)
    est.train(CountingInputFn(), max_steps=5)

    def uneven_input_fn():  # 256 examples in batches of 100: the last batch is smaller
        features = {"x": X, "unused": np.zeros((256, 3), "float32")}
        return tf.data.Dataset.from_tensor_slices((features, Y)).batch(100)

    result = est.evaluate(uneven_input_fn)
    model = make_model()
    keras_checkpoint.checkpoint_root(model, tf.Variable(0, dtype=tf.int64), with_optimizer=False).read(
        est.latest_checkpoint()).expect_partial()
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    by_batch = [float(loss(Y[i:i + 100], model({"x": X[i:i + 100]}, training=False))) for i in (0, 100, 200)]
    assert result["loss"] == pytest.approx(np.mean(by_batch), rel=1e-4)
    assert result["loss"] != pytest.approx(float(loss(Y, model({"x": X}, training=False))), rel=1e-4)
    with pytest.raises(KeyError, match=r"does not cover requested input keys(.|\n)*Missed keys: {'x'}"):
        est.evaluate(lambda: tf.data.Dataset.from_tensor_slices(({"y": X}, Y)).batch(10))


def test_receiver_helpers_of_legacy_exporters_are_accepted(tmp_path):
    est = make_estimator(tmp_path)
    receiver = estimator.export.build_raw_serving_input_receiver_fn({"x": tf.zeros([1, 8])})
    path = est.export_saved_model(str(tmp_path / "exports"), receiver)
    assert tf.saved_model.load(path.decode()).signatures["serving_default"](x=tf.constant(X[:2]))["logits"].shape == (2, 2)


def test_a_model_compiled_with_a_lambda_loss_converts(tmp_path):
    model = make_model()
    model.compile("adam", lambda y, p: keras.losses.sparse_categorical_crossentropy(y, p, from_logits=True),
                  metrics=["accuracy"])
    est = estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path))
    est.train(CountingInputFn(), steps=2)
    assert set(est.evaluate(CountingInputFn(repeat=False))) == {"accuracy", "loss", "global_step"}
    with pytest.raises(NotImplementedError, match="checkpoint_format='saver'"):
        estimator.model_to_estimator(keras_model=make_model(), checkpoint_format="saver")


# -- fidelity to TF 2.15, round 2 ---------------------------------------------------


def two_output_model():
    inputs = keras.Input((8,), name="x")
    hidden = keras.layers.Dense(8, activation="relu")(inputs)
    model = keras.Model({"x": inputs}, [keras.layers.Dense(3, name="a")(hidden), keras.layers.Dense(1, name="b")(hidden)])
    model.compile("adam", loss={"a": keras.losses.SparseCategoricalCrossentropy(from_logits=True), "b": "mse"},
                  metrics={"a": ["accuracy"], "b": ["mae"]})
    return model


def two_output_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, {"a": Y, "b": X[:, :1]})).batch(32)


def _example(row):
    return tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=row.tolist()))})).SerializeToString()


def test_the_export_serves_what_the_receiver_describes(tmp_path):
    est = estimator.model_to_estimator(keras_model=two_output_model(), model_dir=str(tmp_path))
    est.train(lambda: two_output_input_fn().repeat(), steps=3)
    expected = list(est.predict(two_output_input_fn, yield_single_examples=False))[0]
    parsing = estimator.export.build_parsing_serving_input_receiver_fn({"x": tf.io.FixedLenFeature([8], tf.float32)})
    loaded = tf.saved_model.load(est.export_saved_model(str(tmp_path / "export"), parsing).decode())
    assert list(loaded.signatures) == ["serving_default"]  # TF 2.15's names: no extra `serve`
    signature = loaded.signatures["serving_default"]
    assert set(signature.structured_input_signature[1]) == {"examples"}
    served = signature(examples=tf.constant([_example(row) for row in X[:4]]))
    assert set(served) == {"a", "b"}  # outputs keyed by the output layers' names
    np.testing.assert_allclose(served["a"].numpy(), expected["a"][:4], atol=1e-5)

    def doubling_receiver():  # preprocessing inside a receiver reaches the model
        raw = tf.compat.v1.placeholder(tf.float32, [None, 8], name="raw")
        return estimator.export.ServingInputReceiver({"x": raw * 2.0}, {"raw": raw})

    doubled = tf.saved_model.load(est.export_saved_model(str(tmp_path / "export"), doubling_receiver).decode())
    twice = list(est.predict(lambda: tf.data.Dataset.from_tensor_slices({"x": 2 * X[:4]}).batch(4),
                             yield_single_examples=False))[0]
    np.testing.assert_allclose(doubled.signatures["serving_default"](raw=tf.constant(X[:4]))["a"].numpy(), twice["a"],
                               atol=1e-5)


def test_evaluate_and_predict_names_and_types_are_tf_2_15s(tmp_path):
    est = estimator.model_to_estimator(keras_model=two_output_model(), model_dir=str(tmp_path))
    est.train(lambda: two_output_input_fn().repeat(), steps=3)
    result = est.evaluate(two_output_input_fn)
    assert set(result) == {"a_accuracy", "b_mae", "loss", "global_step"}  # no per-output losses
    assert type(result["loss"]) is np.float32 and type(result["global_step"]) is np.int64
    assert set(next(est.predict(two_output_input_fn, predict_keys=["b", "missing"]))) == {"b"}
    with pytest.raises(ValueError, match="Expected to run at least one output"):
        next(est.predict(two_output_input_fn, predict_keys=["missing"]))
    names = est.get_variable_names()
    assert "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE" in names  # a name that leads to a layer
    assert est.get_variable_value("layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE").shape == (8, 8)
    assert est.eval_dir("x").endswith("eval_x") and callable(est.model_fn)
    tags = set()
    for path in glob.glob(str(tmp_path / "eval" / "events.out.tfevents.*")):
        tags |= {value.tag for event in tf.compat.v1.train.summary_iterator(path) for value in event.summary.value}
    assert {"loss", "a_accuracy", "checkpoint_path"} <= tags
    train_tags = set()
    for path in glob.glob(str(tmp_path / "events.out.tfevents.*")):
        train_tags |= {value.tag for event in tf.compat.v1.train.summary_iterator(path) for value in event.summary.value}
    # TF 2.15's training tag (its Keras graph had a `loss` op already), written at the call's first step
    assert train_tags == {"loss_1"}


def test_hooks_are_called_never_ignored(tmp_path):
    est = make_estimator(tmp_path)
    calls = []

    class Test(keras.callbacks.Callback):
        def on_test_begin(self, logs=None):
            calls.append("test_begin")

        def on_test_batch_end(self, batch, logs=None):
            calls.append("test_batch")

        def on_predict_batch_end(self, batch, logs=None):
            calls.append("predict_batch")

    est.train(CountingInputFn(), steps=2)
    est.evaluate(CountingInputFn(repeat=False, batch=128), hooks=[Test()])
    list(est.predict(CountingInputFn(repeat=False, batch=128), hooks=[Test()]))
    assert calls == ["test_begin", "test_batch", "test_batch", "predict_batch", "predict_batch"]

    class CountAndStop(estimator.SessionRunHook):
        def begin(self):
            self.runs, self.steps, self.losses = 0, [], []
            self.step_tensor = tf.compat.v1.train.get_global_step()

        def before_run(self, run_context):
            return estimator.SessionRunArgs({"step": self.step_tensor, "loss": "loss:0"})

        def after_run(self, run_context, run_values):
            self.runs += 1
            self.steps.append(int(run_values.results["step"]))
            self.losses.append(float(run_values.results["loss"]))
            if self.runs == 4:
                run_context.request_stop()

    hook = CountAndStop()
    est.train(CountingInputFn(), steps=50, hooks=[hook, estimator.StopAtStepHook(num_steps=100)])
    assert hook.runs == 4 and hook.steps == [2, 3, 4, 5] and all(np.isfinite(hook.losses))
    assert est.latest_checkpoint().endswith("model.ckpt-6")
    with pytest.raises(TypeError, match="CheckpointSaverHook needs a tf.compat.v1 Session"):
        est.train(CountingInputFn(), steps=1, hooks=[estimator.CheckpointSaverHook(str(tmp_path), save_steps=1)])
    evaluations = []

    class Watch(keras.callbacks.Callback):
        def on_test_end(self, logs=None):
            evaluations.append(logs)

    estimator.train_and_evaluate(est, estimator.TrainSpec(CountingInputFn(), max_steps=30),
                                 estimator.EvalSpec(CountingInputFn(repeat=False), steps=None, throttle_secs=0,
                                                    hooks=[Watch()]))
    assert evaluations  # EvalSpec(hooks=...) are called too


def test_tf_random_seed_leaves_python_and_numpy_alone(tmp_path):
    def trained(folder):
        keras.utils.set_random_seed(123)
        model = make_model()
        keras.utils.set_random_seed(np.random.randint(1000))  # a different process state each time
        est = estimator.model_to_estimator(keras_model=model, model_dir=str(folder),
                                           config=estimator.RunConfig(tf_random_seed=7, save_checkpoints_steps=5))
        np.random.seed(0)
        before = np.random.rand()
        est.train(CountingInputFn(), steps=3)
        est.train(CountingInputFn(), steps=3)
        assert np.random.rand() != before  # NumPy's generator was not reseeded by train()
        return est.get_variable_value("layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE")

    np.testing.assert_array_equal(trained(tmp_path / "a"), trained(tmp_path / "b"))


def test_best_exporter_reads_its_event_files_and_exports_first_after_a_restart(tmp_path):
    compared = []

    def smaller_loss(best_eval_result, current_eval_result):
        compared.append((best_eval_result["loss"], current_eval_result["loss"]))
        return current_eval_result["loss"] < best_eval_result["loss"]

    def run(max_steps):
        est = make_estimator(tmp_path, save_checkpoints_steps=10)
        exporter = estimator.BestExporter(compare_fn=smaller_loss, exports_to_keep=10)
        return estimator.train_and_evaluate(est, estimator.TrainSpec(CountingInputFn(), max_steps=max_steps),
                                            estimator.EvalSpec(CountingInputFn(repeat=False), steps=None,
                                                               throttle_secs=0, exporters=[exporter]))

    run(30)  # evaluations at 10, 20, 30: the first exports without comparing, then two comparisons
    assert len(compared) == 2
    exports = os.listdir(tmp_path / "export" / "best_exporter")
    assert all(name.isdigit() for name in exports) and 1 <= len(exports) <= 3
    compared.clear()
    run(50)  # a new process: reads evaluations 10-40 from the events (3 comparisons), exports at 40, compares at 50
    assert len(compared) == 4
    assert len(os.listdir(tmp_path / "export" / "best_exporter")) >= len(exports) + 1


def test_features_keyed_by_the_input_names_keras_2_gave_train_predict_and_export(tmp_path):
    """A TF 2.15 input_fn keys features by Keras 2's default input names: `<first layer>_input` for a Sequential
    model given `input_shape`, `input_1` for an unnamed `Input()`. Keras 3 names both `input_layer...`."""
    sequential = keras.Sequential([keras.layers.Dense(4, input_shape=(8,), name="hidden"),
                                   keras.layers.Dense(2, name="out")])
    inputs = keras.Input((8,))
    functional = keras.Model(inputs, keras.layers.Dense(2, name="out")(inputs))
    for model, key in ((sequential, "hidden_input"), (functional, "input_1")):
        model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        est = estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path / key))
        est.train(lambda: tf.data.Dataset.from_tensor_slices(({key: X}, Y)).repeat().batch(32), steps=2)
        assert est.evaluate(lambda: tf.data.Dataset.from_tensor_slices(({key: X}, Y)).batch(64))["global_step"] == 2
        predicted = list(est.predict(lambda: tf.data.Dataset.from_tensor_slices({key: X[:4]}).batch(4),
                                     yield_single_examples=False))[0]["out"]
        receiver = estimator.export.build_raw_serving_input_receiver_fn({key: tf.TensorSpec([None, 8], tf.float32)})
        served = tf.saved_model.load(est.export_saved_model(str(tmp_path / key / "export"), receiver).decode())
        np.testing.assert_allclose(served.signatures["serving_default"](**{key: tf.constant(X[:4])})["out"].numpy(),
                                   predicted, atol=1e-5)
        with pytest.raises(KeyError, match="Missed keys"):  # a key Keras 2 would not have given it is named
            est.train(lambda: tf.data.Dataset.from_tensor_slices(({"pixels": X}, Y)).repeat().batch(32), steps=1)


def test_a_model_with_categorical_feature_columns_exports_with_the_parsing_receiver(tmp_path):
    """The recipe of TF's feature-column tutorials: DenseFeatures over categorical columns (lookup tables, parsed
    from tf.Examples as SparseTensors) in a Keras model, exported with `make_parse_example_spec`'s receiver."""
    fc = tf.feature_column
    columns = [fc.indicator_column(fc.categorical_column_with_vocabulary_list("job", ["eng", "doc", "art"])),
               fc.indicator_column(fc.categorical_column_with_hash_bucket("city", 5))]
    inputs = {name: keras.Input((1,), name=name, dtype="string") for name in ("job", "city")}
    outputs = keras.layers.Dense(1, name="score")(DenseFeatures(columns)(inputs))  # tf.keras.layers.DenseFeatures
    model = keras.Model(inputs, outputs)
    model.compile("sgd", "mse")
    est = estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path))
    jobs, cities = np.array([["eng"], ["art"], ["doc"], ["eng"]]), np.array([["a"], ["b"], ["c"], ["d"]])
    features = {"job": jobs, "city": cities}
    est.train(lambda: tf.data.Dataset.from_tensor_slices((features, np.ones((4, 1), "float32"))).repeat().batch(2),
              steps=3)
    expected = list(est.predict(lambda: tf.data.Dataset.from_tensor_slices(features).batch(4),
                                yield_single_examples=False))[0]["score"]
    receiver = estimator.export.build_parsing_serving_input_receiver_fn(fc.make_parse_example_spec(columns))
    loaded = tf.saved_model.load(est.export_saved_model(str(tmp_path / "export"), receiver).decode())
    examples = [tf.train.Example(features=tf.train.Features(feature={
        name: tf.train.Feature(bytes_list=tf.train.BytesList(value=[features[name][i, 0].encode()]))
        for name in features})).SerializeToString() for i in range(4)]
    served = loaded.signatures["serving_default"](examples=tf.constant(examples))["score"].numpy()
    np.testing.assert_allclose(served, expected, atol=1e-5)
    assert len(set(np.round(served[:, 0], 5))) > 1  # the columns reach the score: not one value for all


def test_model_to_estimator_inputs_as_tf_2_15_took_them(tmp_path, installed):
    import json as json_lib

    est = make_estimator(tmp_path)
    weights = np.where(Y == 1, 1.0, 0.0).astype("float32")
    est.train(lambda: tf.data.Dataset.from_tensor_slices(({"features": {"x": X}, "sample_weights": weights}, Y))
              .repeat().batch(32), steps=3)  # the {'features': ..., 'sample_weights': ...} dict
    assert est.get_variable_value("estimator_global_step/.ATTRIBUTES/VARIABLE_VALUE") == 3
    h5 = os.path.join(REPO, "tests", "data", "tf215_keras_model.h5")
    recorded = json_lib.load(open(os.path.join(REPO, "tests", "data", "tf215_keras_model.json")))
    from_h5 = estimator.model_to_estimator(keras_model_path=h5, model_dir=str(tmp_path / "h5"))
    predictions = list(from_h5.predict(lambda: tf.data.Dataset.from_tensor_slices(
        {"x": np.array(recorded["inputs"], "float32")}).batch(4), yield_single_examples=False))[0]
    np.testing.assert_allclose(predictions["logits"], recorded["predictions"], atol=1e-5)
    saved_model = tmp_path / "saved_model"
    saved_model.mkdir()
    with pytest.raises(ValueError, match="SavedModel .* Keras 3 cannot load"):
        estimator.model_to_estimator(keras_model_path=str(saved_model))
    optimizer = tf.keras.optimizers.legacy.Adam(learning_rate=0.01)  # TF 2.11-2.15 code, after install()
    # Keras 3's optimizer; Keras 2's own under TF_USE_LEGACY_KERAS=1, where tf.keras is Keras 2 and has them
    legacy_keras = tf.keras.__name__.startswith("tf_keras")
    expected = sys.modules["tf_keras"].optimizers.legacy.Adam if legacy_keras else keras.optimizers.Adam
    assert isinstance(optimizer, expected) and float(optimizer.learning_rate) == pytest.approx(0.01)


def test_a_sequential_model_trains_evaluates_and_predicts_as_a_functional_one(tmp_path):
    """The most common legacy shape: `Sequential([Input(name=...), ...])`. Keras 3's Sequential model has no
    `input` or `output_names`; its features still come by the Input's name and its predictions under its last
    layer's name, as TF 2.15 named them."""
    model = keras.Sequential([keras.Input((8,), name="x"), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(2, activation="softmax", name="probabilities")])
    model.compile(keras.optimizers.Adam(0.05), "sparse_categorical_crossentropy", metrics=["accuracy"])
    est = estimator.model_to_estimator(keras_model=model, model_dir=str(tmp_path),
                                       config=estimator.RunConfig(save_checkpoints_steps=50))
    est.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(32).repeat(), steps=100)
    metrics = est.evaluate(lambda: tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(64))
    assert metrics["global_step"] == 100 and metrics["accuracy"] > 0.9
    predictions = list(est.predict(lambda: tf.data.Dataset.from_tensor_slices({"x": X[:4]}).batch(4)))
    assert len(predictions) == 4 and set(predictions[0]) == {"probabilities"}


@sets_its_keras
@pytest.mark.parametrize("legacy_keras", ["0", "1"])
def test_a_keras_2_model_to_estimator_program_matches_tf_2_15_and_converts_back_to_keras_2(tmp_path, legacy_keras):
    """A team that keeps Keras 2: its model is a tf_keras model (tf.keras under TF_USE_LEGACY_KERAS=1). From the
    same weights, 30 steps give TF 2.15's metrics and predictions (1e-4), its checkpoints, its checkpoint keys and
    values (Adam's slots and hyperparameters among them, 1e-5) and export signatures; `to_keras` hands back a
    Keras 2 model that predicts what the Estimator does."""
    result = run_installed("keras2_model_to_estimator.py", str(tmp_path), env={"TF_USE_LEGACY_KERAS": legacy_keras})
    assert result.returncode == 0, result.stderr[-3000:]
    ours = json.loads(result.stdout.strip().splitlines()[-1])
    recorded = json.load(open(os.path.join(REPO, "tests", "data", "tf215_keras2_model_to_estimator.json")))
    assert sorted(ours["metrics"]) == sorted(recorded["metrics"])
    for key, value in recorded["metrics"].items():
        assert ours["metrics"][key] == pytest.approx(value, abs=1e-4), key
    np.testing.assert_allclose(ours["predictions"], recorded["predictions"], atol=1e-4)
    assert ours["checkpoints"] == recorded["checkpoints"] and ours["signatures"] == recorded["signatures"]
    # TF 2.15's checkpoint keys, Adam's slots and hyperparameters included, in model.ckpt-* and keras/keras_model.ckpt
    assert ours["variables"] == recorded["variables"] and ours["warm_start_variables"] == recorded["warm_start_variables"]
    assert sum("OPTIMIZER_SLOT" in name for name in recorded["values"]) == 8  # Adam's m and v of 4 weights
    for name, values in recorded["values"].items():  # ... with TF 2.15's values after 30 steps
        np.testing.assert_allclose(ours["values"][name], values, atol=1e-5, err_msg=name)
    assert ours["converted_keras"] == "tf_keras"
    np.testing.assert_allclose(ours["converted_predictions"], ours["predictions"], atol=1e-5)


def test_a_folder_of_release_0_2_restores_and_trains_on_into_tf_2_15s_layout(tmp_path):
    """Releases 0.1 and 0.2 keyed the optimizer's state as Keras 3 does (`kernel..momentum`, `global_step`):
    such a folder (tests/helpers/release_0_2_keras_folder.py wrote it) predicts as it did, and 3 more steps
    carry Adam's state on (the 10-step run's predictions, 1e-5) into a checkpoint keyed as TF 2.15's."""
    folder = tmp_path / "model"
    shutil.copytree(os.path.join(REPO, "tests", "data", "release_0_2_keras_folder"), folder)
    expected = json.load(open(folder / "expected.json"))
    assert "layer_with_weights-0/kernel..momentum/.ATTRIBUTES/VARIABLE_VALUE" in expected["variables"]
    model = keras.Sequential([keras.Input((4,), name="x"), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(2, name="logits")])
    model.compile(keras.optimizers.Adam(0.01), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    est = estimator.model_to_estimator(keras_model=model, model_dir=str(folder))
    probe = np.array(expected["probe"], "float32")

    def predict():
        return [p["logits"] for p in est.predict(lambda: tf.data.Dataset.from_tensor_slices({"x": probe}).batch(4))]

    np.testing.assert_allclose(predict(), expected["predictions"], atol=1e-6)
    x = np.random.default_rng(3).normal(size=(64, 4)).astype("float32")  # the helper's data
    est.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": x}, (x[:, 0] > 0).astype("int64"))).repeat().batch(64),
              steps=3)
    assert est.get_variable_value("estimator_global_step/.ATTRIBUTES/VARIABLE_VALUE") == 10
    assert "layer_with_weights-0/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE" in est.get_variable_names()
    np.testing.assert_allclose(predict(), expected["predictions_after_10_steps"], atol=1e-5)


@sets_its_keras
@pytest.mark.parametrize("legacy_keras", ["0", "1"])
def test_layers_holding_layers_are_keyed_trained_and_restored_as_tf_2_15(tmp_path, legacy_keras):
    """Embedding, Bidirectional(LSTM), TimeDistributed, MultiHeadAttention, GRU, BatchNormalization and a nested
    Sequential: the checkpoint's keys are TF 2.15's (`forward_layer/cell/kernel`, `_query_dense/kernel`,
    `layer_with_weights-6/layer_with_weights-0/...`, Adam's slots beside each); 6 and 9 steps from the same weights
    predict what TF 2.15 predicted (1e-5: the embedding's repeated rows summed before Adam's update, as Keras 2
    did); TF 2.15's folder of the same program restores and trains on as on TF 2.15. With Keras 3 and Keras 2."""
    result = run_installed("keras_layers_model_to_estimator.py", str(tmp_path),
                           os.path.join(REPO, "tests", "data", "tf215_keras_layers_folder"),
                           env={"TF_USE_LEGACY_KERAS": legacy_keras})
    assert result.returncode == 0, result.stderr[-3000:]
    ours = json.loads(result.stdout.strip().splitlines()[-1])
    recorded = json.load(open(os.path.join(REPO, "tests", "data", "tf215_keras_layers_model_to_estimator.json")))
    assert ours["variables"] == recorded["variables"]
    assert "layer_with_weights-2/forward_layer/cell/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE" \
        in recorded["variables"]
    for key in ("after_6", "after_9", "tf215_folder", "tf215_folder_after_3"):
        np.testing.assert_allclose(ours[key], recorded[key], atol=1e-5, err_msg=key)


def test_each_optimizer_family_is_saved_and_steps_as_tf_2_15s(tmp_path):
    """SGD (momentum), Adam (amsgrad), Adamax, Nadam, RMSprop (centered), Adagrad, Adadelta and Ftrl: after 3
    steps from the same weights, the checkpoint has TF 2.15's keys (each slot under Keras 2's name, `rms`, `mg`,
    `accum_grad`, `linear`...; the hyperparameters; Nadam's `momentum_cache`), and every value is TF 2.15's
    (1e-5), the whole Embedding's included, whose sparse gradient repeats rows and misses others from one batch
    to the next (Keras 2 summed repeats first; SGD and RMSprop with momentum, Adamax and Ftrl left the missing
    rows alone). Nadam's aside: Keras 3's Nadam updates otherwise, which model_to_estimator says in a warning."""
    result = run_installed("optimizer_checkpoints.py", str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    ours = json.loads(result.stdout.strip().splitlines()[-1])
    recorded = json.load(open(os.path.join(REPO, "tests", "data", "tf215_optimizer_checkpoints.json")))
    assert sorted(ours) == sorted(recorded) and len(recorded) == 8
    for name, values in recorded.items():
        assert sorted(ours[name]) == sorted(values), name
        if name != "Nadam":
            for key, value in values.items():
                np.testing.assert_allclose(ours[name][key], value, atol=1e-5, err_msg=f"{name} {key}")
    assert "layer_with_weights-0/embeddings/.OPTIMIZER_SLOT/optimizer/mg/.ATTRIBUTES/VARIABLE_VALUE" in recorded["RMSprop"]
    warned = [line for line in result.stderr.splitlines() if "does not update as the Keras 2 optimizer" in line]
    assert warned and all("Keras 3's Nadam" in line for line in warned)


def test_training_on_from_a_saver_folder_retires_its_old_checkpoints(tmp_path):
    """A TF 2.15 model_to_estimator folder lists its checkpoints as a `Saver` did, without their times: training
    on here keeps `keep_checkpoint_max` of them, retiring the oldest files (they stayed behind, unlisted, before).
    TF 2.15 itself kept 5 whatever keep_checkpoint_max said (docs/estimator.md)."""
    make_estimator(tmp_path, keep_checkpoint_max=10).train(CountingInputFn(), steps=40)
    state = tf.train.get_checkpoint_state(str(tmp_path))
    tf.compat.v1.train.update_checkpoint_state(  # the Saver's form of the same list
        str(tmp_path), state.model_checkpoint_path, all_model_checkpoint_paths=state.all_model_checkpoint_paths)
    assert not tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_timestamps
    assert steps_in(tmp_path) == [0, 10, 20, 30, 40]
    make_estimator(tmp_path, keep_checkpoint_max=3).train(CountingInputFn(), steps=20)
    assert steps_in(tmp_path) == [40, 50, 60]


def _two_output_model(dict_outputs=False):
    inputs = keras.Input((8,), name="x")
    hidden = keras.layers.Dense(4, name="hidden")(inputs)
    first, second = keras.layers.Dense(1, name="out0")(hidden), keras.layers.Dense(1, name="out1")(hidden)
    return keras.Model(inputs, {"zb": first, "aa": second} if dict_outputs else [first, second])


def _evaluated(model, labels):
    est = estimator.model_to_estimator(keras_model=model)
    data = lambda: tf.data.Dataset.from_tensor_slices(({"x": X}, labels)).batch(16)  # noqa: E731
    est.train(lambda: data().repeat(), steps=2)
    return est.evaluate(data)


@keras_3_only
def test_compile_arguments_keyed_by_a_models_dict_outputs_and_an_output_without_metrics():
    """A Keras 3 model whose outputs are a dict takes losses, weights and metrics keyed by the dict's keys, as
    Keras 3 does; `metrics=[None, ["mae"]]` gives the second output alone its metric."""
    target = X[:, :1].astype("float32")
    keyed = _two_output_model(dict_outputs=True)
    keyed.compile("sgd", loss={"zb": "mse", "aa": "mae"}, loss_weights={"zb": 1.0, "aa": 0.5},
                  metrics={"zb": ["mae"], "aa": ["mse"]})
    metrics = _evaluated(keyed, {"out0": target, "out1": 2 * target})  # labels by output layer, as TF 2.15
    assert {"loss", "global_step"} < set(metrics) and len(metrics) == 4
    unmeasured = _two_output_model()
    unmeasured.compile("sgd", loss="mse", metrics=[None, ["mae"]])
    assert set(_evaluated(unmeasured, {"out0": target, "out1": target})) == {"out1_mae", "loss", "global_step"}


def test_keras_2_metric_objects_convert_with_their_functions_and_a_keras_2_subclass_is_named():
    """A tf_keras `MeanMetricWrapper` of the program's own function (given in custom_objects) reports that
    function's mean; a program's own subclass of tf_keras' Metric, whose state Keras 3 cannot update, is refused
    in one line naming it, not run with wrong values."""
    import tf_keras

    def doubled_error(y_true, y_pred):
        return 2.0 * tf_keras.backend.abs(y_true - y_pred)

    class Counted(tf_keras.metrics.Metric):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.count = self.add_weight("count", initializer="zeros")

        def update_state(self, y_true, y_pred, sample_weight=None):
            self.count.assign_add(1.0)

        def result(self):
            return self.count

    def model(metric):
        inputs = tf_keras.Input((8,), name="x")
        built = tf_keras.Model(inputs, tf_keras.layers.Dense(1, name="out")(inputs))
        built.compile(tf_keras.optimizers.legacy.SGD(0.01), "mse", metrics=[metric])
        return built

    wrapped = model(tf_keras.metrics.MeanMetricWrapper(doubled_error, name="doubled"))
    est = estimator.model_to_estimator(keras_model=wrapped, custom_objects={"doubled_error": doubled_error})
    data = lambda: tf.data.Dataset.from_tensor_slices(({"x": X}, X[:, :1])).batch(16)  # noqa: E731
    metrics = est.evaluate(data)
    predicted = np.concatenate([p["out"] for p in est.predict(data, yield_single_examples=False)])
    assert metrics["doubled"] == pytest.approx(2 * np.mean(np.abs(X[:, :1] - predicted)), rel=1e-5)
    with pytest.raises(ValueError, match="the metric Counted is a Keras 2 .tf_keras. class"):
        estimator.model_to_estimator(keras_model=model(Counted(name="counted")))


def test_training_summaries_are_tf215s_or_keras_fits_when_asked(tmp_path):
    """TF 2.15's model_to_estimator wrote `loss_1` at each train() call's first step and every
    save_summary_steps after, `global_step/sec` every log_step_count_steps after that first step;
    training_summaries="keras" writes a Keras fit's tags at multiples of the settings instead."""
    def steps_by_tag(folder) -> dict:
        found: dict = {}
        for path in sorted(glob.glob(str(folder / "events.out.tfevents.*"))):
            for event in tf.compat.v1.train.summary_iterator(path):
                for value in event.summary.value:
                    found.setdefault(value.tag, []).append(event.step)
        return found

    config = estimator.RunConfig(save_summary_steps=2, log_step_count_steps=2)
    tf215 = estimator.model_to_estimator(keras_model=two_output_model(), model_dir=str(tmp_path / "a"), config=config)
    tf215.train(lambda: two_output_input_fn().repeat(), steps=5)
    tf215.train(lambda: two_output_input_fn().repeat(), steps=3)
    assert steps_by_tag(tmp_path / "a") == {"loss_1": [1, 3, 5, 6, 8], "global_step/sec": [3, 5, 8]}
    keras_tags = estimator.model_to_estimator(keras_model=two_output_model(), model_dir=str(tmp_path / "b"),
                                              config=config, training_summaries="keras")
    keras_tags.train(lambda: two_output_input_fn().repeat(), steps=5)
    found = steps_by_tag(tmp_path / "b")
    assert found["loss"] == found["learning_rate"] == found["global_step/sec"] == [2, 4]
