"""The graph engine: Estimator(model_fn=...), hooks, warm starts, exports and canned estimators, as TF 2.15."""

import glob
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import compat.estimator as estimator
from conftest import HELPERS, REPO, run_installed, start_paused

FIXTURES = os.path.join(REPO, "..", "shared", "fixtures", "tf215")
RNG = np.random.default_rng(0)
X = RNG.normal(size=(240, 4)).astype("float32")
Y = ((X[:, 0] > 0).astype("int32") + (X[:, 1] > 1).astype("int32"))


def input_fn(repeat=True, batch=32, labels=Y):
    def fn():
        dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, labels))
        return (dataset.repeat() if repeat else dataset).batch(batch)
    return fn


def model_fn(features, labels, mode, params):
    """A TF 1.x-style model_fn: tf.compat.v1 variables, losses, metrics and optimizer."""
    with tf.compat.v1.variable_scope("hidden"):
        kernel = tf.compat.v1.get_variable("kernel", [4, 8])
        hidden = tf.nn.relu(tf.matmul(features["x"], kernel))
    with tf.compat.v1.variable_scope("logits"):
        logits = tf.matmul(hidden, tf.compat.v1.get_variable("kernel", [8, 3]))
    predictions = {"class_ids": tf.argmax(logits, 1), "probabilities": tf.nn.softmax(logits)}
    if mode == estimator.ModeKeys.PREDICT:
        return estimator.EstimatorSpec(mode, predictions=predictions)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == estimator.ModeKeys.EVAL:
        return estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
            "accuracy": tf.compat.v1.metrics.accuracy(labels, predictions["class_ids"])})
    train_op = tf.compat.v1.train.AdamOptimizer(params.get("learning_rate", 0.05)).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def make(model_dir, **config):
    config.setdefault("save_checkpoints_steps", 10)
    return estimator.Estimator(model_fn, str(model_dir), estimator.RunConfig(tf_random_seed=1, **config), params={})


def event_tags(folder):
    tags = {}
    for path in glob.glob(os.path.join(folder, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                tags.setdefault(value.tag, []).append((event.step, value))
    return tags


def test_a_model_fn_estimator_writes_tf_2_15s_files_and_types(tmp_path):
    est = make(tmp_path, save_checkpoints_steps=20, save_summary_steps=10, log_step_count_steps=10)
    assert est.train(input_fn(), max_steps=40) is est
    assert sorted(os.path.basename(p) for p in glob.glob(f"{tmp_path}/model.ckpt-*.meta")) == [
        "model.ckpt-0.meta", "model.ckpt-20.meta", "model.ckpt-40.meta"]
    assert (tmp_path / "graph.pbtxt").is_file() and (tmp_path / "checkpoint").is_file()
    assert {"loss", "global_step/sec"} <= set(event_tags(str(tmp_path)))
    result = est.evaluate(input_fn(repeat=False))
    assert set(result) == {"accuracy", "loss", "global_step"}
    assert type(result["loss"]) is np.float32 and type(result["global_step"]) is np.int64
    assert result["global_step"] == 40
    tags = event_tags(str(tmp_path / "eval"))
    assert {"accuracy", "loss", "checkpoint_path"} <= set(tags)
    (step, value), = tags["checkpoint_path"]
    assert step == 40 and tf.make_ndarray(value.tensor).item().decode().endswith("model.ckpt-40")
    est.evaluate(input_fn(repeat=False), steps=2, name="holdout")
    assert glob.glob(f"{tmp_path}/eval_holdout/events.out.tfevents.*") and est.eval_dir("holdout").endswith("eval_holdout")
    assert est.get_variable_value("global_step") == 40 and "hidden/kernel" in est.get_variable_names()
    calls = []
    assert est.train(lambda: calls.append(1), max_steps=40) is est  # already there: no input_fn call
    assert calls == [] and est.get_variable_value("global_step") == 40


def test_model_fn_arguments_by_signature_and_params(tmp_path):
    seen = {}

    def recording_model_fn(features, labels, mode, params, config):
        seen.update(mode=mode, params=params, config=config, labels=labels is not None)
        return model_fn(features, labels, mode, params)

    est = estimator.Estimator(recording_model_fn, str(tmp_path), params={"learning_rate": 0.1})
    est.train(input_fn(), steps=1)
    assert seen["mode"] == "train" and seen["params"] == {"learning_rate": 0.1} and seen["labels"]
    assert isinstance(seen["config"], estimator.RunConfig) and seen["config"].model_dir == str(tmp_path)
    assert est.params == {"learning_rate": 0.1}
    with pytest.raises(ValueError, match="does not include params argument"):
        estimator.Estimator(lambda features, labels, mode: None, params={"a": 1})
    with pytest.raises(ValueError, match="must include features argument"):
        estimator.Estimator(lambda inputs, labels, mode: None)
    no_labels = estimator.Estimator(lambda features, mode: model_fn(features, None, mode, {}), str(tmp_path / "b"))
    with pytest.raises(ValueError, match="model_fn does not take labels, but input_fn returns labels"):
        no_labels.train(input_fn(), steps=1)


@pytest.mark.parametrize("mode,build,message", [
    ("train", lambda loss: estimator.EstimatorSpec("train", loss=loss), "Missing train_op"),
    ("infer", lambda loss: estimator.EstimatorSpec("infer"), "Missing predictions"),
    ("eval", lambda loss: estimator.EstimatorSpec("eval", loss=tf.ones([3])), "Loss must be scalar"),
    ("train", lambda loss: {"loss": loss}, "model_fn should return an EstimatorSpec"),
])
def test_a_model_fn_returning_the_wrong_thing_gets_a_named_error(tmp_path, mode, build, message):
    def bad_model_fn(features, labels, mode: str):
        if mode != bad_mode:
            return model_fn(features, labels, mode, {})
        return build(tf.reduce_mean(tf.matmul(features["x"], tf.compat.v1.get_variable("w", [4, 3]))))

    bad_mode = mode
    est = estimator.Estimator(bad_model_fn, str(tmp_path))
    call = {"train": lambda: est.train(input_fn(), steps=1), "eval": lambda: est.evaluate(input_fn(False)),
            "infer": lambda: list(est.predict(input_fn(False)))}[mode]
    with pytest.raises((ValueError, TypeError), match=message):
        call()
    assert not glob.glob(f"{tmp_path}/model.ckpt-*")  # nothing a rerun would trip on


def test_metric_objects_in_eval_metric_ops_update_every_batch(tmp_path):
    import keras
    import tf_keras

    def metric_model_fn(features, labels, mode):
        spec = model_fn(features, labels, mode, {})
        if mode != estimator.ModeKeys.EVAL:
            return spec
        keras3, keras2 = keras.metrics.Mean(), tf_keras.metrics.Mean()
        keras3.update_state(tf.cast(labels, tf.float32))
        keras2.update_state(tf.cast(labels, tf.float32))
        return spec._replace(eval_metric_ops={**spec.eval_metric_ops, "keras3": keras3, "keras2": keras2})

    est = estimator.Estimator(metric_model_fn, str(tmp_path))
    est.train(input_fn(), steps=2)
    result = est.evaluate(input_fn(False, batch=7))  # several batches: the means are of all of them
    assert result["keras3"] == pytest.approx(Y.mean()) and result["keras2"] == pytest.approx(Y.mean())
    assert "mean/total" not in " ".join(est.get_variable_names())  # metric variables are local, not saved
    with pytest.raises(ValueError, match="Please call update_state"), tf.Graph().as_default():
        estimator.EstimatorSpec("eval", loss=tf.constant(1.0), eval_metric_ops={"m": keras.metrics.Mean()})


def test_a_keras_metric_made_in_every_mode_stays_out_of_the_checkpoint(tmp_path):
    """A Keras metric object made before `if mode == EVAL:` (so in TRAIN mode too) keeps its variables local, as
    TF 2.15 kept them: its checkpoints hold the model's variables only (TF 2.15's list for this model_fn), so a
    folder TF 2.15 wrote, without them, trains on here; each evaluation starts the metric at zero."""
    import keras

    def metric_model_fn(features, labels, mode):
        spec = model_fn(features, labels, mode, {})
        kmean = keras.metrics.Mean(name="kmean")  # made in every mode, updated in EVAL only
        if mode != estimator.ModeKeys.EVAL:
            return spec
        kmean.update_state(tf.cast(labels, tf.float32))
        return spec._replace(eval_metric_ops={**spec.eval_metric_ops, "kmean": kmean})

    est = estimator.Estimator(metric_model_fn, str(tmp_path))
    est.train(input_fn(), steps=2)
    assert not [name for name in est.get_variable_names() if "kmean" in name]
    first, second = est.evaluate(input_fn(False, batch=7)), est.evaluate(input_fn(False, batch=7))
    assert first["kmean"] == second["kmean"] == pytest.approx(Y.mean())
    plain = estimator.Estimator(lambda features, labels, mode: model_fn(features, labels, mode, {}),
                                str(tmp_path / "plain"))
    plain.train(input_fn(), steps=2)  # a folder without metric variables, as TF 2.15 wrote it
    estimator.Estimator(metric_model_fn, str(tmp_path / "plain")).train(input_fn(), steps=1)


def test_estimator_spec_fills_in_what_tf_2_15_filled_in():
    with tf.Graph().as_default():
        spec = estimator.EstimatorSpec("infer", predictions={"y": tf.constant([1.0])})
        assert isinstance(spec.scaffold, tf.compat.v1.train.Scaffold)
        assert list(spec.export_outputs) == ["serving_default"]
        assert isinstance(spec.export_outputs["serving_default"], estimator.export.PredictOutput)
        training = estimator.EstimatorSpec("train", loss=tf.ones([1, 1]), train_op=tf.no_op())
        assert training.loss.shape == [] and training.predictions == {} and training.export_outputs is None
    with tf.Graph().as_default():
        other = tf.constant(1.0)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="must be from the default graph"):
        estimator.EstimatorSpec("eval", loss=other)


class Recorder(estimator.SessionRunHook):
    def __init__(self, stop_at=None):
        self.calls, self.steps, self.fetched, self.stop_at = [], [], [], stop_at

    def begin(self):
        self.calls.append("begin")
        self.step = tf.compat.v1.train.get_global_step()

    def after_create_session(self, session, coord):
        self.calls.append("after_create_session")

    def before_run(self, run_context):
        self.calls.append("before_run")
        return estimator.SessionRunArgs({"step": self.step})

    def after_run(self, run_context, run_values):
        self.calls.append("after_run")
        # A read in a run of its own comes after the step's increment. The fetch made beside the train op is
        # not ordered with that increment (in TF 2.15 too): it may hold the value before or after it.
        step = int(run_context.session.run(self.step))
        self.steps.append(step)
        self.fetched.append(int(run_values.results["step"]) in (step - 1, step))
        if self.stop_at is not None and step >= self.stop_at:
            run_context.request_stop()

    def end(self, session):
        self.calls.append("end")


def test_session_run_hooks_are_called_in_order_and_can_stop_training(tmp_path):
    est = make(tmp_path, save_checkpoints_steps=100)
    hook = Recorder()
    est.train(input_fn(), steps=3, hooks=[hook])
    assert hook.calls == ["begin", "after_create_session", *["before_run", "after_run"] * 3, "end"]
    assert hook.steps == [1, 2, 3] and hook.fetched == [True] * 3  # SessionRunArgs' fetches arrive in after_run
    stopper = Recorder(stop_at=5)
    est.train(input_fn(), steps=100, hooks=[stopper])
    assert est.latest_checkpoint().endswith("model.ckpt-5")  # the final checkpoint of a stopped run
    with pytest.raises(TypeError, match="Hooks must be a SessionRunHook"):
        est.train(input_fn(), steps=1, hooks=["not a hook"])


def test_stock_hooks_and_a_nan_loss_behave_as_tf_2_15(tmp_path, caplog):
    def nan_model_fn(features, labels, mode):
        spec = model_fn(features, labels, mode, {})
        step = tf.compat.v1.train.get_global_step()
        loss = tf.where(step >= 2, tf.constant(float("nan")), spec.loss)
        return spec._replace(loss=loss)

    est = estimator.Estimator(nan_model_fn, str(tmp_path), estimator.RunConfig(save_checkpoints_steps=100))
    hook = Recorder()
    with pytest.raises(estimator.NanLossDuringTrainingError):
        est.train(input_fn(), steps=10, hooks=[hook])
    assert "end" not in hook.calls  # TF 2.15 did not call end() after a NaN loss
    assert est.latest_checkpoint().endswith("model.ckpt-0")
    logged = make(tmp_path / "logged")
    with caplog.at_level("INFO"):
        logged.train(input_fn(), hooks=[estimator.LoggingTensorHook({"the_step": "global_step:0"}, every_n_iter=2),
                                        estimator.StopAtStepHook(last_step=4)])
    assert logged.get_variable_value("global_step") == 4 and "the_step" in caplog.text


def test_the_logged_step_is_the_step_that_ran(tmp_path, caplog):
    est = make(tmp_path, log_step_count_steps=2)
    level = tf.get_logger().level
    tf.get_logger().setLevel("INFO")
    try:
        with caplog.at_level("INFO"):
            est.train(input_fn(), steps=5)
    finally:
        tf.get_logger().setLevel(level)
    logged = [int(line.split("step = ")[1].split()[0]) for line in caplog.messages if "step = " in line]
    assert logged == [0, 2, 4]  # read after the train op, never the racing fetch beside it


def test_stop_if_no_decrease_hook_ends_train_and_evaluate_as_tf_2_15(tmp_path):
    def metric_model_fn(features, labels, mode):
        spec = model_fn(features, labels, mode, {})
        if mode == estimator.ModeKeys.EVAL:  # a metric that never decreases: the global step
            step = tf.cast(tf.compat.v1.train.get_global_step(), tf.float32)
            spec = spec._replace(eval_metric_ops={**spec.eval_metric_ops, "m": (step, tf.no_op())})
        return spec

    est = estimator.Estimator(metric_model_fn, str(tmp_path), estimator.RunConfig(save_checkpoints_steps=10))
    hook = estimator.experimental.stop_if_no_decrease_hook(est, "m", max_steps_without_decrease=20,
                                                           run_every_secs=None, run_every_steps=1)
    result, exports = estimator.train_and_evaluate(
        est, estimator.TrainSpec(input_fn(), max_steps=100, hooks=[hook]),
        estimator.EvalSpec(input_fn(False), steps=None, throttle_secs=0))
    assert result["global_step"] == 30 and exports == []  # evaluations at 10, 20, 30, then the stop


def test_warm_start_from_a_folder_or_settings(tmp_path):
    source = make(tmp_path / "source")
    source.train(input_fn(), max_steps=20)
    trained = {name: source.get_variable_value(name) for name in ("hidden/kernel", "logits/kernel")}

    def frozen_model_fn(features, labels, mode, params):
        return model_fn(features, labels, mode, {"learning_rate": 0.0})

    for target, warm_start_from, warmed in [
            ("all", str(tmp_path / "source"), {"hidden/kernel", "logits/kernel"}),
            ("some", estimator.WarmStartSettings(str(tmp_path / "source"), vars_to_warm_start="hidden.*"),
             {"hidden/kernel"})]:
        est = estimator.Estimator(frozen_model_fn, str(tmp_path / target), warm_start_from=warm_start_from, params={})
        est.train(input_fn(), steps=1)
        for name, value in trained.items():
            assert np.array_equal(est.get_variable_value(name), value) == (name in warmed), (target, name)
    missing = estimator.Estimator(model_fn, str(tmp_path / "x"), warm_start_from=str(tmp_path / "nowhere"), params={})
    with pytest.raises(ValueError, match="nowhere' does not exist"):
        missing.train(input_fn(), steps=1)
    assert not glob.glob(str(tmp_path / "x" / "model.ckpt-*"))


def test_a_checkpoint_of_another_model_is_a_named_error(tmp_path):
    make(tmp_path).train(input_fn(), steps=1)

    def other_model_fn(features, labels, mode):
        logits = tf.matmul(features["x"], tf.compat.v1.get_variable("other/kernel", [4, 3]))
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, predictions=logits)

    with pytest.raises(ValueError, match="was written by another model: it lacks other/kernel"):
        estimator.Estimator(other_model_fn, str(tmp_path)).train(input_fn(), steps=1)


def _examples(rows):
    return tf.constant([tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=row.tolist()))})).SerializeToString()
        for row in rows])


def test_exports_serve_what_the_receiver_describes_with_tf_2_15s_names(tmp_path):
    est = make(tmp_path)
    est.train(input_fn(), steps=5)
    expected = np.stack([p["probabilities"] for p in est.predict(input_fn(False, 8))][:4])
    spec = {"x": tf.io.FixedLenFeature([4], tf.float32)}
    parsing = est.export_saved_model(str(tmp_path / "export"),
                                     estimator.export.build_parsing_serving_input_receiver_fn(spec))
    loaded = tf.saved_model.load(parsing.decode())
    assert list(loaded.signatures) == ["serving_default"]
    served = loaded.signatures["serving_default"](examples=_examples(X[:4]))
    np.testing.assert_allclose(served["probabilities"].numpy(), expected, atol=1e-6)
    raw = est.export_saved_model(str(tmp_path / "export"),
                                 estimator.export.build_raw_serving_input_receiver_fn({"x": tf.zeros([1, 4])}))
    raw_signature = tf.saved_model.load(raw.decode()).signatures["serving_default"]
    assert set(raw_signature.structured_input_signature[1]) == {"x"}
    np.testing.assert_allclose(raw_signature(x=tf.constant(X[:4]))["probabilities"].numpy(), expected, atol=1e-6)
    assert not [n for n in os.listdir(tmp_path / "export") if n.startswith(".") or n.startswith("temp")]
    with pytest.raises(ValueError, match="An input_receiver_fn must be defined"):
        est.export_saved_model(str(tmp_path / "export"), None)

    def single_output_model_fn(features, labels, mode):
        spec = model_fn(features, labels, mode, {})
        if mode != "infer":
            return spec
        return estimator.EstimatorSpec(mode, predictions=spec.predictions["probabilities"])

    single = estimator.Estimator(single_output_model_fn, str(tmp_path))
    exported = single.export_saved_model(str(tmp_path / "single"),
                                         estimator.export.build_raw_serving_input_receiver_fn({"x": tf.zeros([1, 4])}))
    assert list(tf.saved_model.load(exported.decode()).signatures["serving_default"].structured_outputs) == ["output"]
    assert np.asarray(next(single.predict(input_fn(False, 8)))).shape == (3,)  # bare arrays, not dicts


def test_dnn_classifier_keys_metrics_variables_and_signatures(tmp_path):
    columns = [tf.feature_column.numeric_column("x", shape=(4,))]
    est = estimator.DNNClassifier([8, 4], columns, model_dir=str(tmp_path), n_classes=3,
                                  config=estimator.RunConfig(tf_random_seed=1))
    est.train(input_fn(), steps=20)
    prediction = next(est.predict(input_fn(False)))
    assert set(prediction) == {"all_class_ids", "all_classes", "class_ids", "classes", "logits", "probabilities"}
    assert prediction["class_ids"].dtype == np.int64 and prediction["all_class_ids"].dtype == np.int32
    assert prediction["classes"].dtype == object and list(prediction["all_classes"]) == [b"0", b"1", b"2"]
    result = est.evaluate(input_fn(False))
    assert set(result) == {"accuracy", "average_loss", "loss", "global_step"}
    assert {"dnn/hiddenlayer_0/kernel", "dnn/logits/bias", "training/Adagrad/learning_rate",
            "training/Adagrad/dnn/hiddenlayer_1/kernel/accumulator"} <= set(est.get_variable_names())
    assert est.get_variable_value("training/Adagrad/learning_rate") == pytest.approx(0.001)
    parsing = est.export_saved_model(str(tmp_path / "export"), estimator.export.build_parsing_serving_input_receiver_fn(
        tf.feature_column.make_parse_example_spec(columns)))
    signatures = tf.saved_model.load(parsing.decode()).signatures
    assert set(signatures) == {"serving_default", "classification", "predict"}
    assert set(signatures["serving_default"].structured_input_signature[1]) == {"inputs"}
    assert set(signatures["predict"].structured_input_signature[1]) == {"examples"}
    classified = signatures["serving_default"](inputs=_examples(X[:2]))
    np.testing.assert_allclose(classified["scores"].numpy()[0], prediction["probabilities"], atol=1e-6)
    raw = est.export_saved_model(str(tmp_path / "export"),
                                 estimator.export.build_raw_serving_input_receiver_fn({"x": tf.zeros([1, 4])}))
    assert set(tf.saved_model.load(raw.decode()).signatures) == {"predict"}  # as TF 2.15: no classify from raw inputs


def test_binary_classifier_with_a_vocabulary_and_weights(tmp_path):
    words = np.array(["neg", "pos"])[(X[:, 0] > 0).astype(int)]
    weights = RNG.uniform(0.5, 2.0, len(X)).astype("float32")

    def weighted_input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": X, "w": weights}, words)).batch(40)

    est = estimator.LinearClassifier([tf.feature_column.numeric_column("x", shape=(4,))], model_dir=str(tmp_path),
                                     n_classes=2, weight_column="w", label_vocabulary=["neg", "pos"])
    est.train(lambda: weighted_input_fn().repeat(), steps=30)
    prediction = next(est.predict(weighted_input_fn))
    assert "logistic" in prediction and prediction["probabilities"].shape == (2,)
    assert list(prediction["all_classes"]) == [b"neg", b"pos"] and prediction["classes"][0] in (b"neg", b"pos")
    result = est.evaluate(weighted_input_fn)
    assert set(result) == {"accuracy", "accuracy_baseline", "auc", "auc_precision_recall", "average_loss",
                           "label/mean", "loss", "precision", "prediction/mean", "recall", "global_step"}
    assert result["accuracy"] > 0.8
    assert est.get_variable_value("training/Ftrl/learning_rate") == pytest.approx(0.2)


def test_regressors_and_wide_and_deep(tmp_path):
    target = (X @ np.array([1.0, -1.0, 0.5, 0.0])).astype("float32")
    columns = [tf.feature_column.numeric_column("x", shape=(4,))]
    bucket = tf.feature_column.bucketized_column(tf.feature_column.numeric_column("x0"), [-1.0, 0.0, 1.0])

    def regression_input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": X, "x0": X[:, 0]}, target)).batch(40)

    regressor = estimator.DNNRegressor([8], columns, model_dir=str(tmp_path / "dnn"))
    regressor.train(lambda: regression_input_fn().repeat(), steps=10)
    assert set(next(regressor.predict(regression_input_fn))) == {"predictions"}
    assert set(regressor.evaluate(regression_input_fn)) == {"average_loss", "label/mean", "loss", "prediction/mean",
                                                            "global_step"}
    combined = estimator.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path / "wide_deep"), linear_feature_columns=[bucket], dnn_feature_columns=columns,
        dnn_hidden_units=[8], n_classes=3)
    combined.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": X, "x0": X[:, 0]}, Y)).repeat().batch(40),
                   steps=5)
    names = set(combined.get_variable_names())
    assert {"dnn/hiddenlayer_0/kernel", "linear/linear_model/x0_bucketized/weights", "training/Ftrl/iter",
            "training/Adagrad/learning_rate"} <= names and "training/Adagrad/iter" not in names
    assert combined.get_variable_value("training/Ftrl/learning_rate") == pytest.approx(0.005)
    assert combined.get_variable_value("training/Ftrl/iter") == 5


def test_optimizers_are_given_as_tf_2_15_took_them(tmp_path):
    import keras

    columns = [tf.feature_column.numeric_column("x", shape=(4,))]
    for name, optimizer, variable, rate in [("adam", "Adam", "training/Adam/learning_rate", 0.001),
                                            ("sgd", "SGD", "training/SGD/learning_rate", 0.01),
                                            ("keras", keras.optimizers.Adagrad(0.3), "training/Adagrad/learning_rate",
                                             0.3),
                                            ("callable", lambda: keras.optimizers.RMSprop(0.02),
                                             "training/RMSprop/learning_rate", 0.02)]:
        est = estimator.DNNClassifier([4], columns, model_dir=str(tmp_path / name), n_classes=3, optimizer=optimizer)
        est.train(input_fn(), steps=2)
        assert est.get_variable_value(variable) == pytest.approx(rate), name
    refused = estimator.DNNClassifier([4], columns, model_dir=str(tmp_path / "v1"), n_classes=3,
                                      optimizer=tf.compat.v1.train.AdamOptimizer())
    with pytest.raises(ValueError, match="not a tf.keras.optimizers.Optimizer instance"):  # in training, as TF 2.15
        refused.train(input_fn(), steps=1)


def test_numpy_and_pandas_input_fns():
    import pandas

    with pytest.raises(ValueError, match="shuffle must be provided explicitly"):
        estimator.inputs.numpy_input_fn({"x": X}, Y)
    batches = list(estimator.inputs.numpy_input_fn({"x": X[:10]}, Y[:10], batch_size=4, shuffle=False)())
    assert [len(labels) for _, labels in batches] == [4, 4, 2]  # the last batch is smaller
    np.testing.assert_array_equal(batches[0][0]["x"].numpy(), X[:4])
    twice = list(estimator.inputs.numpy_input_fn(X[:10], batch_size=5, num_epochs=2, shuffle=True)())
    assert len(twice) == 4 and isinstance(twice[0], tf.Tensor)  # an array in: a tensor out, not a dict
    with tf.Graph().as_default():  # in a graph, repeated for ever: batches of a known size, as TF 2.15's queue gave
        features, labels = estimator.inputs.numpy_input_fn({"x": X}, Y, batch_size=4, num_epochs=None,
                                                           shuffle=False)()
        assert features["x"].shape.as_list() == [4, 4] and labels.shape.as_list() == [4]
    with pytest.raises(ValueError, match="mismatched"):
        estimator.inputs.numpy_input_fn({"x": X[:5]}, Y[:4], shuffle=False)
    frame = pandas.DataFrame({"a": X[:6, 0], "b": X[:6, 1]})
    features, labels = next(iter(estimator.inputs.pandas_input_fn(frame, pandas.Series(Y[:6]), batch_size=6,
                                                                  shuffle=False)()))
    assert set(features) == {"a", "b"} and labels.shape == (6,)
    est = estimator.DNNClassifier([4], [tf.feature_column.numeric_column("x", shape=(4,))], n_classes=3)
    est.train(estimator.inputs.numpy_input_fn({"x": X}, Y, batch_size=32, num_epochs=None, shuffle=True), steps=3)
    assert est.get_variable_value("global_step") == 3


def _run_program(path, *args):
    """Runs a legacy program's text as `__main__` in this process; returns the JSON line it printed last."""
    import contextlib
    import io

    output, argv = io.StringIO(), sys.argv
    sys.argv = [path, *args]
    try:
        with contextlib.redirect_stdout(output):
            exec(compile(open(path).read(), path, "exec"), {"__name__": "__main__"})
    finally:
        sys.argv = argv
    return json.loads(output.getvalue().strip().splitlines()[-1])


@pytest.mark.skipif(not os.path.isdir(FIXTURES), reason="../shared/fixtures/tf215 not found")
@pytest.mark.parametrize("steps", [0, 10])
def test_tf_2_15_model_folders_restore_predict_and_train_on_as_tf_2_15(tmp_path, installed, steps):
    """Each of the four folders TF 2.15 trained predicts TF 2.15's values as it is (steps 0), and after 10 more
    steps on fixed data predicts what TF 2.15 predicted after the same 10 steps (an oracle recorded with TF 2.15
    by the same program: tests/data/tf215_train_on.json)."""
    after = _run_program(os.path.join(HELPERS, "tf215_train_on.py"), FIXTURES, str(tmp_path), str(steps))
    oracle = json.load(open(os.path.join(REPO, "tests", "data", "tf215_train_on.json")))
    for name in ("model_fn", "dnn_classifier", "linear_regressor", "keras"):
        if steps == 0:
            expected = json.load(open(os.path.join(FIXTURES, name, "expected.json")))
            want, step = expected["predictions"], expected["global_step"]
        else:
            want, step = oracle[name]["predictions"], oracle[name]["global_step"]
        assert after[name]["global_step"] == step, name
        for key, values in after[name]["predictions"].items():
            np.testing.assert_allclose(values, np.asarray(want[key], float), atol=1e-4, err_msg=f"{name} {key}")


@pytest.mark.parametrize("variant", ["import_changed", "install"])
def test_a_2018_style_model_fn_program_runs(tmp_path, variant, request):
    path = os.path.join(HELPERS, "legacy_model_fn_program.py")
    if variant == "import_changed":
        changed = tmp_path / "program.py"
        changed.write_text(open(path).read().replace("estimator = tf.estimator", "import compat.estimator as estimator"))
        result = _run_program(str(changed), str(tmp_path / "run"))
    else:
        request.getfixturevalue("installed")
        result = _run_program(path, str(tmp_path / "run"))
    # Three classes (chance 0.33); Keras 3 layers in a graph are not seeded by tf_random_seed, so the accuracy
    # varies from run to run (0.69-0.9 seen): what holds is that it learned.
    assert result["global_step"] == 400 and result["accuracy"] > 0.5
    assert result["metric_keys"] == ["accuracy", "global_step", "loss"]
    assert result["served"] == result["predicted"]  # the parsing export serves what predict() gives
    assert result["checkpoints"] == [f"model.ckpt-{n}.meta" for n in (0, 100, 200, 300, 400)]


def test_install_resolves_the_tf_estimator_names_legacy_programs_use(installed):
    assert tf.estimator.Estimator is estimator.Estimator and tf.estimator.EstimatorSpec is estimator.EstimatorSpec
    assert tf.estimator.SessionRunHook is tf.compat.v1.train.SessionRunHook
    assert tf.estimator.WarmStartSettings is estimator.WarmStartSettings
    assert tf.compat.v1.estimator.inputs.numpy_input_fn is estimator.inputs.numpy_input_fn
    assert tf.estimator.experimental.stop_if_no_increase_hook is not None
    assert tf.estimator.DNNClassifier is estimator.DNNClassifier


def test_a_model_fn_program_resumes_after_kill_9(tmp_path):
    program = os.path.join(HELPERS, "legacy_model_fn_program.py")
    process = start_paused("checkpoint:100", program, str(tmp_path / "run"), install=True)
    process.send_signal(signal.SIGKILL)  # held just after its checkpoint at step 100 was written
    process.wait()
    assert tf.train.latest_checkpoint(str(tmp_path / "run")).endswith("model.ckpt-100")
    command = [sys.executable, "-c", "import compat.estimator, runpy, sys; compat.estimator.install(); "
               "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')", program,
               str(tmp_path / "run")]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1])["global_step"] == 400


_VERBOSE_PROGRAM = """
import tensorflow as tf
tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
def input_fn():
    read = lambda path: tf.io.decode_csv(tf.strings.strip(tf.io.read_file(path)), [[0.0], [0.0]])
    rows = tf.data.Dataset.from_tensor_slices(FILES).map(read)
    return rows.map(lambda x, y: ({"x": tf.reshape(x, [1])}, tf.reshape(y, [1]))).batch(2)
def model_fn(features, labels, mode):
    loss = tf.compat.v1.losses.mean_squared_error(labels, tf.compat.v1.layers.dense(features["x"], 1))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
est = tf.estimator.Estimator(model_fn, MODEL_DIR)
est.train(input_fn, steps=2)
est.evaluate(input_fn)
"""


def test_a_program_that_asks_for_info_logs_sees_each_line_once_as_tf_2_15_printed_it(tmp_path):
    """TF 2.15's Estimator logged through TensorFlow's logger. absl's, on its first use in a process that has
    not set it up, gives the root logger a handler: every TensorFlow line after it was printed twice."""
    files = [str(tmp_path / f"row{x}.csv") for x in range(4)]
    for x, path in enumerate(files):
        with open(path, "w") as stream:
            stream.write(f"{x},{2 * x}\n")
    program = tmp_path / "program.py"
    program.write_text(f"FILES, MODEL_DIR = {files!r}, {str(tmp_path / 'run')!r}\n" + _VERBOSE_PROGRAM)
    command = [sys.executable, "-c", "import compat.estimator, runpy, sys; compat.estimator.install(); "
               "runpy.run_path(sys.argv[1], run_name='__main__')", str(program)]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stderr.splitlines()
    assert sum(line.startswith("INFO:tensorflow:input_fn ") for line in lines) == 2  # the input cache: train, eval
    saved = [line for line in lines if "Saving dict for global step 2" in line]
    assert len(saved) == 1 and saved[0].startswith("INFO:tensorflow:")
    loss = saved[0].split("loss = ")[1]
    assert len(loss) <= 11  # a float32 as str() shows it, as TF 2.15 printed it, not its float64 digits
    assert sum("Saving checkpoints for 2 into" in line for line in lines) == 1


def test_a_checkpoint_path_that_names_no_checkpoint_is_tf_2_15s_value_error(tmp_path):
    """A program may catch ValueError here, as TF 2.15 raised it: e.g. for a checkpoint keep_checkpoint_max deleted."""
    graph_engine = make(tmp_path / "graph", keep_checkpoint_max=1)
    graph_engine.train(input_fn(), max_steps=20)
    keras_engine = estimator.model_to_estimator(keras_model=_compiled_keras_model(), model_dir=str(tmp_path / "k"))
    keras_engine.train(input_fn(), steps=1)
    for est in (graph_engine, keras_engine):
        gone = os.path.join(est.model_dir, "model.ckpt-10")
        with pytest.raises(ValueError, match="The passed save_path is not a valid checkpoint: .*model.ckpt-10"):
            est.evaluate(input_fn(repeat=False), checkpoint_path=gone)
        with pytest.raises(ValueError, match="not a valid checkpoint"):
            next(est.predict(lambda: tf.data.Dataset.from_tensor_slices({"x": X[:2]}).batch(2), checkpoint_path=gone))


def _compiled_keras_model():
    import keras

    inputs = keras.Input((X.shape[1],), name="x")
    model = keras.Model({"x": inputs}, keras.layers.Dense(3)(inputs))
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def test_a_truncated_latest_checkpoint_is_passed_over_for_the_previous_one(tmp_path, caplog):
    est = make(tmp_path / "run")
    est.train(input_fn(), max_steps=20)
    data_file = glob.glob(str(tmp_path / "run" / "model.ckpt-20.data-*"))[0]
    with open(data_file, "r+b") as stream:  # a disk that lost the file's end
        stream.truncate(os.path.getsize(data_file) // 2)
    with caplog.at_level("WARNING"):
        make(tmp_path / "run").train(input_fn(), max_steps=30)  # TF 2.15 stopped here with a DataLossError
    warning = next(r.getMessage() for r in caplog.records if "cannot be read" in r.getMessage())
    assert "model.ckpt-20" in warning and "model.ckpt-10" in warning
    assert est.get_variable_value("global_step") == 30
    assert est.latest_checkpoint().endswith("model.ckpt-30")
    make(tmp_path / "run").train(input_fn(), max_steps=40)  # the step-20 files were written again: all readable
    assert est.get_variable_value("global_step") == 40


def test_a_one_replica_strategy_trains_as_no_strategy(tmp_path):
    # MirroredStrategy() on a machine with one GPU (or only the CPU) is one replica: the same training.
    # Several replicas: tests/test_replicated.py.
    one = make(tmp_path / "one", train_distribute=tf.distribute.MirroredStrategy(["/cpu:0"]))
    one.train(input_fn(), max_steps=20)
    plain = make(tmp_path / "plain")
    plain.train(input_fn(), max_steps=20)
    np.testing.assert_allclose(one.get_variable_value("hidden/kernel"), plain.get_variable_value("hidden/kernel"))


# What TensorFlow's libraries print while they load, on either version: not the program's output.
STARTUP_LINES = ("absl::InitializeLog", "oneDNN custom operations", "cuda drivers", "cuInit", "cpu_feature_guard",
                 "To enable the following instructions", "rebuild TensorFlow with the appropriate compiler flags")


def test_a_2019_style_program_prints_no_more_on_stderr_than_on_tf_2_15(tmp_path):
    """A migrating user reads every extra stderr line as a failure: tests/helpers/legacy_2019_program.py, at
    TensorFlow's default log level, prints no more than TF 2.15 printed for it (tests/data/tf215_stderr_lines.json),
    and none of TensorFlow's C++ type-inference dumps, which the input cache once caused."""
    recorded = json.load(open(os.path.join(REPO, "tests", "data", "tf215_stderr_lines.json")))
    # a user's default environment: all log levels, and TensorFlow's own thread pools (the dump showed only
    # with more than one intra-op thread)
    env = {name: value for name, value in os.environ.items()
           if name not in ("TF_CPP_MIN_LOG_LEVEL", "TF_NUM_INTRAOP_THREADS")}
    result = subprocess.run(
        [sys.executable, "-c", "import compat.estimator, runpy, sys; compat.estimator.install(); "
         "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')",
         os.path.join(HELPERS, "legacy_2019_program.py"), str(tmp_path / "model")],
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert float(result.stdout.strip().splitlines()[-1]) > 0.9
    lines = [line for line in result.stderr.splitlines()
             if line.strip() and not any(words in line for words in STARTUP_LINES)]
    assert not [line for line in lines if "Type inference failed" in line]
    assert len(lines) <= recorded["stderr_lines"], "\n".join(lines)


def _seeded_run(model_dir, seed):
    """Trains a model_fn of tf.compat.v1.layers and Keras 3 layers, none given a seed of its own, 20 steps."""

    def seeded_model_fn(features, labels, mode):
        hidden = tf.compat.v1.layers.dense(features["x"], 8, activation=tf.nn.relu, name="v1_dense")
        logits = tf.keras.layers.Dense(3, name="keras_dense")(hidden)
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, tf.compat.v1.train.get_global_step()
        )
        metrics = {"accuracy": tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1))}
        return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops=metrics)

    x = np.random.RandomState(0).normal(size=(96, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 1).astype(np.int32)
    train = estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=16, num_epochs=None, shuffle=False)
    once = estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=32, num_epochs=1, shuffle=False)
    run = estimator.Estimator(seeded_model_fn, model_dir=str(model_dir), config=estimator.RunConfig(tf_random_seed=seed))
    run.train(train, steps=20)
    names = [name for name in run.get_variable_names() if name.endswith("kernel")]
    return {name: run.get_variable_value(name) for name in names}, run.evaluate(once)


def test_tf_random_seed_gives_two_runs_the_same_weights_and_metrics(tmp_path):
    first_weights, first_metrics = _seeded_run(tmp_path / "first", seed=42)
    second_weights, second_metrics = _seeded_run(tmp_path / "second", seed=42)
    assert sorted(first_weights) == ["keras_dense/kernel", "v1_dense/kernel"]
    for name, value in first_weights.items():
        np.testing.assert_array_equal(value, second_weights[name], err_msg=name)
    assert first_metrics == second_metrics
    other_weights, _ = _seeded_run(tmp_path / "other", seed=7)
    assert not np.array_equal(other_weights["v1_dense/kernel"], first_weights["v1_dense/kernel"])


def test_a_canned_dnn_classifier_program_prints_no_type_inference_dump(tmp_path):
    """The canned DNN's layer summaries (the share of zero activations) once made TensorFlow's type inference
    print a 27-line C++ dump as each session started; a user reads it as a failure."""
    program = tmp_path / "dnn_program.py"
    program.write_text(
        "import sys\n"
        "import numpy as np\n"
        "import tensorflow as tf\n"
        "x = np.random.default_rng(0).normal(size=(128, 4)).astype('float32')\n"
        "y = (x[:, 0] > 0).astype('int32')\n"
        "columns = [tf.feature_column.numeric_column('x', shape=(4,))]\n"
        "classifier = tf.estimator.DNNClassifier(hidden_units=[8], feature_columns=columns, model_dir=sys.argv[1])\n"
        "classifier.train(lambda: tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(32), steps=5)\n"
        "print(classifier.evaluate(lambda: tf.data.Dataset.from_tensor_slices(({'x': x}, y)).batch(32))['loss'])\n"
    )
    env = {name: value for name, value in os.environ.items()
           if name not in ("TF_CPP_MIN_LOG_LEVEL", "TF_NUM_INTRAOP_THREADS")}
    result = subprocess.run(
        [sys.executable, "-c", "import compat.estimator, runpy, sys; compat.estimator.install(); "
         "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')",
         str(program), str(tmp_path / "model")],
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Type inference failed" not in result.stderr, result.stderr[-3000:]


def test_a_subclass_written_for_tf_2_15_may_use_the_names_this_package_added(tmp_path):
    """`engine`, `keras_recipe`, `trained_keras_model` and `strategy` were not TF 2.15's: a subclass that
    defines its own trains as before, on the graph engine."""

    class Mine(estimator.Estimator):
        engine = "mine"

        def __init__(self, model_dir):
            super().__init__(model_fn, str(model_dir), params={})
            self.strategy = "its own"

        def trained_keras_model(self):
            return "its own"

    mine = Mine(tmp_path)
    mine.train(input_fn(), steps=2)
    assert mine.strategy == "its own" and mine.latest_checkpoint().endswith("-2")


def test_warm_start_from_nothing_raises_tf_2_15s_types_with_what_to_do(tmp_path):
    """A missing path raised TensorFlow's NotFoundError on TF 2.15 and a folder without a checkpoint a TypeError,
    at the first train(): code catching those still catches them, and the message says what to do."""
    (tmp_path / "empty").mkdir()
    for source, error, words in ((str(tmp_path / "missing"), tf.errors.NotFoundError, "does not exist"),
                                 (str(tmp_path / "empty"), TypeError, "holds no checkpoint"),
                                 (estimator.WarmStartSettings(str(tmp_path / "missing" / "model.ckpt-1")),
                                  tf.errors.NotFoundError, "does not exist")):
        est = estimator.Estimator(lambda features, labels, mode: model_fn(features, labels, mode, {}),
                                  str(tmp_path / "model"), warm_start_from=source)
        with pytest.raises(error, match=words):
            est.train(input_fn(), steps=1)


def test_numpy_and_pandas_input_fns_give_tf215s_op_seeds_and_queue_summary():
    """numpy_input_fn and pandas_input_fn build TF 2.15's queue (the same ops, so the same op seeds after them:
    dropout masks, initial weights) and write its fill summary to TensorBoard; a canned DNN with dropout trained
    on each ends at TF 2.15's weights, as with a Dataset input_fn (tests/helpers/queue_input_seeds.py; TF 2.15's
    run in tests/data/tf215_queue_input_seeds.json)."""
    result = run_installed("queue_input_seeds.py")
    assert result.returncode == 0, result.stderr[-3000:]
    ours = json.loads(result.stdout.strip().splitlines()[-1])
    recorded = json.load(open(os.path.join(REPO, "tests", "data", "tf215_queue_input_seeds.json")))
    assert "enqueue_input/queue/enqueue_input/fifo_queuefraction_over_0_of_1000_full" in recorded["numpy"]["tags"]
    assert ours == recorded


def test_a_numpy_input_fn_ends_after_its_epochs_with_a_short_last_batch():
    """Read through the queue in a graph: rows in order, the last batch short, then the end of input."""
    x = {"a": np.arange(10.0, dtype="float32")}
    graph = tf.Graph()
    with graph.as_default():
        features, labels = estimator.inputs.numpy_input_fn(x, np.arange(10), batch_size=4, num_epochs=1,
                                                           shuffle=False)()
        batches = []
        with tf.compat.v1.train.MonitoredSession() as session:
            while not session.should_stop():
                batches.append(session.run(features["a"]).tolist())
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
