"""The canned estimators (DNN*, Linear*, DNNLinearCombined*, Baseline*) as TF 2.15 made them: variable names,
prediction keys, optimizers and their defaults, the Baseline's learned values, warm starts with a new vocabulary."""

import functools
import glob
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import compat.estimator as estimator
from compat.estimator.canned import dnn, linear
from conftest import REPO, run_installed

RNG = np.random.default_rng(3)
X = RNG.normal(size=(48, 2)).astype("float32")
CLASSES = (X[:, 0] > 0).astype("int32") + (X[:, 1] > 0.5).astype("int32")  # 0, 1 or 2
TARGET = (X @ np.array([2.0, -1.0]) + 0.5).astype("float32")
WORDS = np.array(["red", "green", "blue"])[CLASSES]
NUMERIC = tf.feature_column.numeric_column("x", shape=(2,))
WORD = tf.feature_column.categorical_column_with_vocabulary_list("word", ["red", "green", "blue"])

CLASSIFY_KEYS = {"logits", "probabilities", "class_ids", "classes", "all_class_ids", "all_classes"}
BINARY_KEYS = CLASSIFY_KEYS | {"logistic"}
REGRESS_KEYS = {"predictions"}


def features():
    return {"x": X, "word": WORDS[:, None]}


def input_fn(labels, repeat=True, batch=16):
    def fn():
        dataset = tf.data.Dataset.from_tensor_slices((features(), labels))
        return (dataset.repeat() if repeat else dataset).batch(batch)
    return fn


def trained(est, labels, steps=3):
    est.train(input_fn(labels), steps=steps)
    return est


def predictions(est):
    return next(est.predict(lambda: tf.data.Dataset.from_tensor_slices(features()).batch(4)))


# (estimator, labels, names its checkpoint must hold, prediction keys)
ESTIMATORS = {
    "DNNClassifier": (lambda d: estimator.DNNClassifier([3], [NUMERIC], model_dir=d, n_classes=3, batch_norm=True,
                                                        dropout=0.1),
                      CLASSES, {"dnn/hiddenlayer_0/kernel", "dnn/hiddenlayer_0/bias", "dnn/logits/kernel",
                                "dnn/logits/bias", "dnn/hiddenlayer_0/batchnorm_0/gamma",
                                "dnn/hiddenlayer_0/batchnorm_0/moving_variance",
                                "training/Adagrad/dnn/logits/kernel/accumulator"}, CLASSIFY_KEYS),
    "DNNRegressor": (lambda d: estimator.DNNRegressor(
                         [3], [NUMERIC, tf.feature_column.embedding_column(WORD, 2)], model_dir=d),
                     TARGET, {"dnn/hiddenlayer_0/kernel", "dnn/logits/bias",
                              "dnn/input_from_feature_columns/input_layer/word_embedding/embedding_weights"},
                     REGRESS_KEYS),
    "DNNEstimator": (lambda d: estimator.DNNEstimator(estimator.RegressionHead(), [3], [NUMERIC], model_dir=d),
                     TARGET, {"dnn/hiddenlayer_0/kernel", "dnn/logits/kernel"}, REGRESS_KEYS),
    "LinearClassifier": (lambda d: estimator.LinearClassifier([NUMERIC, WORD], model_dir=d),
                         (CLASSES > 0).astype("int32"),
                         {"linear/linear_model/x/weights", "linear/linear_model/word/weights",
                          "linear/linear_model/bias_weights", "training/Ftrl/linear/linear_model/x/weights/linear"},
                         BINARY_KEYS),
    "LinearRegressor": (lambda d: estimator.LinearRegressor([NUMERIC], model_dir=d), TARGET,
                        {"linear/linear_model/x/weights", "linear/linear_model/bias_weights"}, REGRESS_KEYS),
    "LinearEstimator": (lambda d: estimator.LinearEstimator(estimator.MultiClassHead(3), [WORD], model_dir=d),
                        CLASSES, {"linear/linear_model/word/weights", "linear/linear_model/bias_weights"},
                        CLASSIFY_KEYS),
    "DNNLinearCombinedClassifier": (
        lambda d: estimator.DNNLinearCombinedClassifier(model_dir=d, linear_feature_columns=[WORD],
                                                        dnn_feature_columns=[NUMERIC], dnn_hidden_units=[3],
                                                        n_classes=3),
        CLASSES, {"dnn/hiddenlayer_0/kernel", "linear/linear_model/word/weights", "training/Ftrl/iter",
                  "training/Adagrad/learning_rate"}, CLASSIFY_KEYS),
    "DNNLinearCombinedRegressor": (
        lambda d: estimator.DNNLinearCombinedRegressor(model_dir=d, linear_feature_columns=[NUMERIC]),
        TARGET, {"linear/linear_model/x/weights", "training/Ftrl/learning_rate"}, REGRESS_KEYS),
    "DNNLinearCombinedEstimator": (
        lambda d: estimator.DNNLinearCombinedEstimator(estimator.RegressionHead(), model_dir=d,
                                                       dnn_feature_columns=[NUMERIC], dnn_hidden_units=[2]),
        TARGET, {"dnn/hiddenlayer_0/kernel", "dnn/logits/bias"}, REGRESS_KEYS),
    "BaselineClassifier": (lambda d: estimator.BaselineClassifier(model_dir=d, n_classes=3), CLASSES,
                           {"baseline/bias", "training/Ftrl/baseline/bias/accumulator"}, CLASSIFY_KEYS),
    "BaselineRegressor": (lambda d: estimator.BaselineRegressor(model_dir=d), TARGET, {"baseline/bias"},
                          REGRESS_KEYS),
    "BaselineEstimator": (lambda d: estimator.BaselineEstimator(estimator.RegressionHead(), model_dir=d), TARGET,
                          {"baseline/bias"}, REGRESS_KEYS),
}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_each_estimator_has_tf_2_15s_variable_names_and_prediction_keys(tmp_path, name):
    make, labels, variables, keys = ESTIMATORS[name]
    est = trained(make(str(tmp_path)), labels)
    names = set(est.get_variable_names())
    assert variables <= names, sorted(names)
    assert est.get_variable_value("global_step") == 3
    assert set(predictions(est)) == keys
    assert "loss" in est.evaluate(input_fn(labels, repeat=False))


def test_the_combined_estimators_count_steps_with_the_dnn_optimizer_and_the_linear_one_on_its_own(tmp_path):
    est = trained(ESTIMATORS["DNNLinearCombinedClassifier"][0](str(tmp_path)), CLASSES, steps=4)
    names = set(est.get_variable_names())
    assert est.get_variable_value("training/Ftrl/iter") == 4 and "training/Adagrad/iter" not in names
    assert est.get_variable_value("training/Ftrl/learning_rate") == pytest.approx(0.005)  # min(0.005, 1/sqrt(1))
    assert est.get_variable_value("training/Adagrad/learning_rate") == pytest.approx(0.001)


@pytest.mark.parametrize("make, optimizer, variable, rate", [
    (functools.partial(estimator.DNNRegressor, [2]), "SGD", "training/SGD/learning_rate", 0.01),  # SGD's own
    (estimator.LinearRegressor, "SGD", "training/SGD/learning_rate", 0.2),  # the linear estimators' rate
    (estimator.BaselineRegressor, "Adam", "training/Adam/learning_rate", 0.3),  # the baseline's
    (estimator.LinearRegressor, "RMSProp", "training/RMSprop/learning_rate", 0.2),
    (estimator.LinearRegressor, lambda: tf_keras.optimizers.legacy.Adagrad(0.05), "training/Adagrad/learning_rate",
     0.05),
    (estimator.LinearRegressor, lambda: keras.optimizers.RMSprop(0.02), "training/RMSprop/learning_rate", 0.02),
    (estimator.LinearRegressor, tf_keras.optimizers.legacy.Ftrl(0.07), "training/Ftrl/learning_rate", 0.07),
    (estimator.LinearRegressor, keras.optimizers.Adagrad(0.3), "training/Adagrad/learning_rate", 0.3),
    (estimator.LinearRegressor, keras.optimizers.SGD(0.04, momentum=0.5, name="slow"), "training/slow/momentum",
     0.5),
    (estimator.LinearRegressor, tf_keras.optimizers.Adam(0.03), "training/Adam/learning_rate", 0.03),
], ids=["dnn-name", "linear-name", "baseline-name", "rmsprop-name", "callable-tf-keras", "callable-keras-3",
        "tf-keras", "keras-3", "keras-3-named", "tf-keras-new-api"])
def test_an_optimizer_as_a_name_a_callable_a_tf_keras_or_a_keras_3_optimizer(tmp_path, make, optimizer, variable,
                                                                             rate):
    columns = {"feature_columns": [NUMERIC]} if make is not estimator.BaselineRegressor else {}
    est = trained(make(**columns, model_dir=str(tmp_path), optimizer=optimizer), TARGET, steps=2)
    assert est.get_variable_value(variable) == pytest.approx(rate)
    assert not any(name.startswith(("rm_sprop", "rmsprop")) for name in est.get_variable_names())  # no Keras 3 left


def test_a_keras_3_optimizer_trains_as_its_tf_keras_legacy_twin(tmp_path):
    """The conversion keeps every setting: both train to the same weights."""
    values = []
    for name, optimizer in [("keras3", keras.optimizers.Adam(0.05, beta_1=0.8, epsilon=1e-6)),
                            ("legacy", tf_keras.optimizers.legacy.Adam(0.05, beta_1=0.8, epsilon=1e-6))]:
        est = trained(estimator.LinearRegressor([NUMERIC], model_dir=str(tmp_path / name), optimizer=optimizer),
                      TARGET, steps=5)
        values.append(est.get_variable_value("linear/linear_model/x/weights"))
    np.testing.assert_allclose(values[0], values[1], rtol=1e-6)


def test_refused_optimizers_are_refused_where_tf_2_15_refused_them(tmp_path):
    """A name or object the canned classes cannot train with is refused in training, as TF 2.15 refused it: an
    Estimator made with one still predicts from a trained folder. A Keras optimizer without a Keras 2 twin, or
    with settings Keras 2 lacks, is refused when the estimator is made (its settings are read then)."""
    trained(estimator.DNNClassifier([2], [NUMERIC], model_dir=str(tmp_path)), CLASSES % 2)
    v1_optimizer = estimator.DNNClassifier([2], [NUMERIC], model_dir=str(tmp_path),
                                           optimizer=tf.compat.v1.train.AdamOptimizer())
    assert set(predictions(v1_optimizer)) >= {"logits", "probabilities"}
    with pytest.raises(ValueError, match="not a tf.keras.optimizers.Optimizer instance"):
        v1_optimizer.train(input_fn(CLASSES % 2), steps=1)
    with pytest.raises(ValueError, match="Unsupported optimizer name: Adamax"):
        trained(estimator.LinearRegressor([NUMERIC], model_dir=str(tmp_path / "named"), optimizer="Adamax"), TARGET)
    with pytest.raises(ValueError, match="weight_decay"):
        estimator.LinearRegressor([NUMERIC], optimizer=keras.optimizers.Adam(weight_decay=0.1))
    with pytest.raises(ValueError, match="Keras 2 .legacy. counterpart"):
        estimator.LinearRegressor([NUMERIC], optimizer=keras.optimizers.Lion())


def test_an_optimizer_instance_counts_with_the_global_step_and_trains_again(tmp_path):
    optimizer = tf_keras.optimizers.legacy.SGD(0.1)
    est = estimator.LinearRegressor([NUMERIC], model_dir=str(tmp_path), optimizer=optimizer)
    est.train(input_fn(TARGET), steps=2)
    assert optimizer.iterations.name == "global_step:0"  # TF 2.15: the instance is the one that trained
    est.train(input_fn(TARGET), steps=2)  # TF 2.15 failed here ("Cannot set `iterations`"); a copy trains on
    assert est.get_variable_value("global_step") == 4


def test_a_subclass_of_the_legacy_optimizer_base_class_trains(tmp_path):
    calls = []

    class CountingSGD(tf_keras.optimizers.legacy.Optimizer):
        """Steps against the gradient by 0.1; counts the graphs it built updates in."""

        def get_updates(self, loss, params):
            calls.append([p.name for p in params])
            gradients = tf.gradients(loss, params)
            updates = [p.assign_sub(0.1 * g) for p, g in zip(params, gradients)]
            with tf.control_dependencies(updates):
                return [self.iterations.assign_add(1).op]

    est = trained(estimator.LinearRegressor([NUMERIC], model_dir=str(tmp_path), optimizer=CountingSGD("counting")),
                  TARGET, steps=3)
    assert calls == [["linear/linear_model/x/weights:0", "linear/linear_model/bias_weights:0"]]
    assert est.get_variable_value("global_step") == 3
    assert np.abs(est.get_variable_value("linear/linear_model/bias_weights")).sum() > 0


def test_the_baseline_regressor_learns_the_label_mean(tmp_path):
    labels = np.stack([TARGET, 3 * TARGET - 1], axis=1)
    est = estimator.BaselineRegressor(model_dir=str(tmp_path), label_dimension=2,
                                      optimizer=tf_keras.optimizers.legacy.SGD(0.3))
    est.train(input_fn(labels, batch=len(X)), steps=30)
    np.testing.assert_allclose(predictions(est)["predictions"], labels.mean(axis=0), atol=1e-3)


def test_the_baseline_classifier_learns_the_class_frequencies(tmp_path):
    est = estimator.BaselineClassifier(model_dir=str(tmp_path), n_classes=3,
                                       optimizer=lambda: tf_keras.optimizers.legacy.SGD(2.0))
    est.train(input_fn(CLASSES, batch=len(X)), steps=60)
    frequencies = np.bincount(CLASSES, minlength=3) / len(CLASSES)
    np.testing.assert_allclose(predictions(est)["probabilities"], frequencies, atol=0.01)


def test_the_baseline_classifier_weighs_examples(tmp_path):
    """A binary baseline with a weight column predicts the weighted share of positives."""
    labels = (CLASSES > 0).astype("int32")
    weights = np.where(labels == 1, 3.0, 1.0).astype("float32")

    def weighted():
        return tf.data.Dataset.from_tensor_slices(({"x": X, "w": weights}, labels)).repeat().batch(len(X))

    est = estimator.BaselineClassifier(model_dir=str(tmp_path), weight_column="w",
                                       optimizer=lambda: tf_keras.optimizers.legacy.SGD(4.0))
    est.train(weighted, steps=60)
    share = (weights * labels).sum() / weights.sum()
    assert predictions(est)["logistic"][0] == pytest.approx(share, abs=0.01)


def test_warm_start_remaps_a_changed_vocabulary(tmp_path):
    """Rows of the old vocabulary's words move to their new ids; a new word gets the backup initializer."""
    old_vocab, new_vocab = tmp_path / "old.txt", tmp_path / "new.txt"
    old_vocab.write_text("red\ngreen\nblue\n")
    new_vocab.write_text("blue\nred\npurple\n")

    def column(path):
        return tf.feature_column.categorical_column_with_vocabulary_file("word", str(path), vocabulary_size=3)

    name = "linear/linear_model/word/weights"
    first = trained(estimator.LinearClassifier([column(old_vocab)], model_dir=str(tmp_path / "first"), n_classes=3),
                    CLASSES, steps=10)
    old = first.get_variable_value(name)
    vocab_info = estimator.VocabInfo(new_vocab=str(new_vocab), new_vocab_size=3, num_oov_buckets=0,
                                     old_vocab=str(old_vocab), old_vocab_size=3,
                                     backup_initializer=tf.compat.v1.initializers.random_uniform(0.25, 0.25))
    second = estimator.LinearClassifier(
        [column(new_vocab)], model_dir=str(tmp_path / "second"), n_classes=3,
        optimizer=tf_keras.optimizers.legacy.SGD(0.0),
        warm_start_from=estimator.WarmStartSettings(str(tmp_path / "first"), vars_to_warm_start=".*word.*",
                                                    var_name_to_vocab_info={name: vocab_info}))
    second.train(input_fn(CLASSES), steps=1)
    new = second.get_variable_value(name)
    np.testing.assert_allclose(new[0], old[2])  # blue
    np.testing.assert_allclose(new[1], old[0])  # red
    np.testing.assert_allclose(new[2], [0.25] * 3)  # purple, new
    assert not second.get_variable_value("linear/linear_model/bias_weights").any()  # not warm-started


def test_the_logit_fn_builders_make_tf_2_15s_layers():
    with tf.Graph().as_default():
        logits = dnn.dnn_logit_fn_builder(units=3, hidden_units=[4], feature_columns=[NUMERIC],
                                          activation_fn=tf.nn.relu, dropout=None, batch_norm=False)(
            features={"x": tf.constant(X[:5])}, mode=estimator.ModeKeys.PREDICT)
        linear_logits = linear.linear_logit_fn_builder(units=2, feature_columns=[NUMERIC])({"x": tf.constant(X[:5])})
        names = {v.op.name for v in tf.compat.v1.global_variables()}
    assert logits.shape == (5, 3) and linear_logits.shape == (5, 2)
    assert names == {"dnn/hiddenlayer_0/kernel", "dnn/hiddenlayer_0/bias", "dnn/logits/kernel", "dnn/logits/bias",
                     "linear_model/x/weights", "linear_model/bias_weights"}
    with pytest.raises(ValueError, match="units must be an int"):
        dnn.dnn_logit_fn_builder(3.0, [4], [NUMERIC], tf.nn.relu, None)


def test_the_dnn_summarises_each_layer_as_tf_2_15(tmp_path):
    est = trained(estimator.DNNRegressor([3, 2], [NUMERIC], model_dir=str(tmp_path),
                                         config=estimator.RunConfig(save_summary_steps=1)), TARGET, steps=2)
    tags = {value.tag for path in glob.glob(str(tmp_path / "events.out.tfevents.*"))
            for event in tf.compat.v1.train.summary_iterator(path) for value in event.summary.value}
    assert {"dnn/hiddenlayer_0/fraction_of_zero_values", "dnn/hiddenlayer_1/activation",
            "dnn/logits/fraction_of_zero_values", "loss"} <= tags
    assert est.get_variable_value("global_step") == 2


def test_parse_example_specs_add_the_label_and_the_weight():
    spec = estimator.classifier_parse_example_spec([NUMERIC, WORD], "label", weight_column="w")
    assert spec["label"] == tf.io.FixedLenFeature((1,), tf.int64) and spec["w"] == tf.io.FixedLenFeature((1,),
                                                                                                          tf.float32)
    spec = estimator.regressor_parse_example_spec([NUMERIC], "y", label_dimension=3)
    assert spec["y"] == tf.io.FixedLenFeature((3,), tf.float32) and spec["x"] == tf.io.FixedLenFeature((2,),
                                                                                                      tf.float32)
    with pytest.raises(ValueError, match="weight_column should not be used as feature"):
        estimator.classifier_parse_example_spec([NUMERIC], "label", weight_column="x")
    with pytest.raises(ValueError, match="label should not be used as feature"):
        estimator.regressor_parse_example_spec([NUMERIC], "x")


def test_a_keras_3_optimizer_made_while_a_graph_is_built_converts_as_one_made_eagerly(tmp_path):
    """Keras 3 reads its settings eagerly only: one made under a graph (a program's `with tf.Graph().as_default()`,
    or a callable the model_fn calls) converts to the same legacy optimizer, and leaves no variable behind."""
    from compat.estimator.canned import optimizers

    eager = optimizers.as_optimizer_v2(keras.optimizers.RMSprop(0.02, rho=0.8, momentum=0.1, centered=True))
    with tf.Graph().as_default():
        in_graph = optimizers.as_optimizer_v2(keras.optimizers.RMSprop(0.02, rho=0.8, momentum=0.1, centered=True))
    assert in_graph.get_config() == eager.get_config()
    est = trained(estimator.LinearRegressor(
        [NUMERIC], model_dir=str(tmp_path),
        optimizer=lambda: keras.optimizers.RMSprop(0.02, rho=0.8, momentum=0.1, centered=True)), TARGET, steps=2)
    assert est.get_variable_value("training/RMSprop/rho") == pytest.approx(0.8)
    assert all(name.startswith(("linear/", "training/RMSprop/", "global_step")) for name in est.get_variable_names())


def test_a_canned_model_fn_built_twice_in_one_graph_names_its_variables_as_tf_2_15(tmp_path):
    """neural-structured-learning calls a DNN's model_fn a second time in the same graph: the second copy's
    variables are `dnn_1/hiddenlayer_0_1/kernel`, and under a new scope `outer/dnn/outer/hiddenlayer_0/kernel`,
    as TF 2.15's Keras 2 layers named them (so such checkpoints restore both ways); the DNN, linear and combined
    model_fns and tf.compat.v1.layers, plain, under AUTO_REUSE and a new scope
    (tests/helpers/repeated_construction.py; TF 2.15's run in tests/data/tf215_repeated_construction.json)."""
    result = run_installed("repeated_construction.py")
    assert result.returncode == 0, result.stderr[-3000:]
    ours = json.loads(result.stdout.strip().splitlines()[-1])
    recorded = json.load(open(os.path.join(REPO, "tests", "data", "tf215_repeated_construction.json")))
    assert "dnn_1/hiddenlayer_0_1/kernel" in recorded["dnn_auto_reuse"]
    assert ours == recorded


def test_an_optimizer_instance_with_a_schedule_trains_on_in_a_second_train_call(tmp_path, installed):
    """TF 2.15 refused a second `train()` of a TF2 canned estimator given an optimizer object ("Cannot set
    `iterations` ..."); here it trains on from the checkpoint (docs/estimator.md, "Differences that remain"), with
    a learning-rate schedule too (which failed with a TypeError): 3 + 3 steps end where 6 steps in one call end.
    The optimizer is written as for TF 2.15: `tf.keras.optimizers.legacy.Adagrad` over a tf.keras schedule."""
    def make(folder):
        schedule = tf.keras.optimizers.schedules.ExponentialDecay(0.1, 2, 0.5)
        return estimator.DNNRegressor([4], [NUMERIC], model_dir=str(tmp_path / folder),
                                      optimizer=tf.keras.optimizers.legacy.Adagrad(learning_rate=schedule),
                                      config=estimator.RunConfig(tf_random_seed=4))

    twice = trained(trained(make("twice"), TARGET), TARGET)
    once = trained(make("once"), TARGET, steps=6)
    assert twice.get_variable_value("global_step") == once.get_variable_value("global_step") == 6
    for name in once.get_variable_names():
        np.testing.assert_allclose(twice.get_variable_value(name), once.get_variable_value(name), atol=1e-6,
                                   err_msg=name)


def test_batch_norm_moving_statistics_are_saved_and_restored(tmp_path):
    """A DNN with batch_norm keeps its moving mean and variance in the checkpoint (they are read per replica and
    not trained, like a metric's state, but averaged, not summed), so prediction uses the trained statistics."""
    est = trained(estimator.DNNRegressor([3], [NUMERIC], model_dir=str(tmp_path), batch_norm=True), TARGET)
    names = est.get_variable_names()
    for statistic in ("moving_mean", "moving_variance"):
        assert f"dnn/hiddenlayer_0/batchnorm_0/{statistic}" in names
    assert np.abs(est.get_variable_value("dnn/hiddenlayer_0/batchnorm_0/moving_mean")).sum() > 0


def test_arguments_are_checked_where_tf_2_15_checked_them(tmp_path):
    """`hidden_units=4` and a `sparse_combiner` TF 2.15 never read (dense columns only) build an Estimator; the
    first is refused in training with TF 2.15's TypeError. A float or numpy int64 `n_classes` is compared with 2
    as TF 2.15 compared it (an error now, eagerly); a numpy int32 is taken."""
    est = estimator.DNNClassifier(4, [NUMERIC], model_dir=str(tmp_path))
    with pytest.raises(TypeError):
        est.train(input_fn(CLASSES % 2), steps=1)
    estimator.LinearRegressor([NUMERIC], sparse_combiner="bogus", model_dir=str(tmp_path / "linear")).train(
        input_fn(TARGET), steps=1)
    for n_classes in (3.0, np.int64(3)):
        with pytest.raises(tf.errors.InvalidArgumentError):
            estimator.MultiClassHead(n_classes)
    assert estimator.MultiClassHead(np.int32(3)).logits_dimension == 3
