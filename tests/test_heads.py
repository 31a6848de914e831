"""The heads (tf.estimator.*Head): predictions, losses, metrics, export signatures and train ops, as TF 2.15's.

Graph-mode specs are built on constants and run in a session; the eager
tests use the heads as a custom training loop would. Expected values are
computed here with NumPy from the definitions (sigmoid / softmax
cross-entropy, squared error, weighted means).
"""

import keras
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import compat.estimator as estimator
from compat.estimator.canned.metric_keys import MetricKeys
from compat.estimator.canned.prediction_keys import PredictionKeys
from compat.estimator.head import (BinaryClassHead, Head, LogisticRegressionHead, MultiClassHead, MultiHead,
                                   MultiLabelHead, PoissonRegressionHead, RegressionHead)

TRAIN, EVAL, PREDICT = estimator.ModeKeys.TRAIN, estimator.ModeKeys.EVAL, estimator.ModeKeys.PREDICT
SERVING = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY


def sigmoid(x):
    return 1. / (1. + np.exp(-np.asarray(x, np.float64)))


def sigmoid_xent(labels, logits):
    logits = np.asarray(logits, np.float64)
    return np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))


def softmax(logits):
    e = np.exp(logits - np.max(logits, axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def run(fetches):
    """Runs `fetches` in a session of the default graph, variables and tables initialized."""
    with tf.compat.v1.Session() as session:
        session.run([tf.compat.v1.global_variables_initializer(), tf.compat.v1.local_variables_initializer(),
                     tf.compat.v1.tables_initializer()])
        return session.run(fetches)


def eval_values(spec):
    """Each eval metric's value after one update, by key."""
    with tf.compat.v1.Session() as session:
        session.run([tf.compat.v1.global_variables_initializer(), tf.compat.v1.local_variables_initializer(),
                     tf.compat.v1.tables_initializer()])
        session.run({key: update for key, (_, update) in spec.eval_metric_ops.items()})
        return session.run({key: value for key, (value, _) in spec.eval_metric_ops.items()})


# --- constants ---------------------------------------------------------------------------------------------------

def test_key_constants_are_tf215_strings():
    assert (MetricKeys.LOSS, MetricKeys.LOSS_MEAN, MetricKeys.LOSS_REGULARIZATION) == (
        "loss", "average_loss", "regularization_loss")
    assert MetricKeys.ACCURACY_AT_THRESHOLD % 0.5 == "accuracy/positive_threshold_0.5"
    assert MetricKeys.AUC_AT_CLASS % 2 == "auc/class2" and MetricKeys.AUC_PR_AT_NAME % "cat" == \
        "auc_precision_recall/cat"
    assert (PredictionKeys.CLASS_IDS, PredictionKeys.ALL_CLASSES, PredictionKeys.LOGISTIC) == (
        "class_ids", "all_classes", "logistic")


def test_install_exposes_the_heads_as_tf_estimator_names(installed):
    for name in ("Head", "BinaryClassHead", "MultiClassHead", "RegressionHead", "LogisticRegressionHead",
                 "PoissonRegressionHead", "MultiLabelHead", "MultiHead"):
        assert getattr(tf.estimator, name) is getattr(estimator, name)


def test_a_custom_head_must_implement_create_estimator_spec():
    class Minimal(Head):
        name = "m"
        logits_dimension = 1
        loss_reduction = "sum"

        def loss(self, labels, logits, features=None, mode=None, regularization_losses=None):
            return tf.reduce_sum(logits)

        def predictions(self, logits, keys=None):
            return {"logits": logits}

        def metrics(self, regularization_losses=None):
            return {}

        def update_metrics(self, eval_metrics, features, logits, labels, regularization_losses=None):
            return eval_metrics

    with pytest.raises(NotImplementedError, match="must implement `create_estimator_spec"):
        Minimal().create_estimator_spec({}, PREDICT, tf.constant([[1.]]))


# --- BinaryClassHead ---------------------------------------------------------------------------------------------

LOGITS_2 = np.array([[2.], [-1.]], np.float32)
LABELS_2 = np.array([[1], [0]], np.int64)


def test_binary_predictions_keys_dtypes_and_values():
    predictions = BinaryClassHead().predictions(LOGITS_2)
    assert list(predictions) == ["logits", "logistic", "probabilities", "class_ids", "classes", "all_class_ids",
                                 "all_classes"]
    dtypes = {key: value.dtype for key, value in predictions.items()}
    assert dtypes == {"logits": tf.float32, "logistic": tf.float32, "probabilities": tf.float32,
                      "class_ids": tf.int64, "classes": tf.string, "all_class_ids": tf.int32,
                      "all_classes": tf.string}
    np.testing.assert_allclose(predictions["logistic"], sigmoid(LOGITS_2), rtol=1e-6)
    np.testing.assert_allclose(predictions["probabilities"], np.hstack([1 - sigmoid(LOGITS_2), sigmoid(LOGITS_2)]),
                               rtol=1e-6)
    assert predictions["class_ids"].numpy().tolist() == [[1], [0]]
    assert predictions["classes"].numpy().tolist() == [[b"1"], [b"0"]]
    assert predictions["all_classes"].numpy().tolist() == [[b"0", b"1"]] * 2


def test_binary_predictions_of_chosen_keys_and_a_wrong_key():
    head = BinaryClassHead(label_vocabulary=["no", "yes"])
    predictions = head.predictions(LOGITS_2, [PredictionKeys.CLASSES])
    assert list(predictions) == ["classes"] and predictions["classes"].numpy().tolist() == [[b"yes"], [b"no"]]
    with pytest.raises(ValueError, match="Prediction key must be in PredictionKeys, given: top_k"):
        head.predictions(LOGITS_2, ["top_k"])


def test_binary_loss_reductions_and_weights():
    unreduced = sigmoid_xent(LABELS_2, LOGITS_2)
    assert BinaryClassHead().loss(LABELS_2, LOGITS_2, {}).numpy() == pytest.approx(unreduced.mean(), rel=1e-6)
    summed = BinaryClassHead(loss_reduction=tf_keras.losses.Reduction.SUM)
    assert summed.loss(LABELS_2, LOGITS_2, {}).numpy() == pytest.approx(unreduced.sum(), rel=1e-6)
    weighted = BinaryClassHead(weight_column="w")
    weights = np.array([1., 3.], np.float32)  # [batch_size]: expanded to [batch_size, 1]
    loss = weighted.loss(LABELS_2[:, 0], LOGITS_2, {"w": weights}, regularization_losses=[0.5])
    # SUM_OVER_BATCH_SIZE: the weighted sum over the number of examples, weights not normalized
    assert loss.numpy() == pytest.approx((unreduced[:, 0] * weights).sum() / 2 + 0.5, rel=1e-6)


def test_binary_soft_labels_and_label_checks():
    soft = np.array([[0.25], [0.75]], np.float32)
    loss = BinaryClassHead().loss(soft, LOGITS_2, {})
    assert loss.numpy() == pytest.approx(sigmoid_xent(soft, LOGITS_2).mean(), rel=1e-6)
    with pytest.raises(ValueError, match=r"Labels must be <= 2 - 1"):
        BinaryClassHead().loss(np.array([[1.5], [0.]], np.float32), LOGITS_2, {})
    with pytest.raises(ValueError, match="You must provide a labels Tensor"):
        BinaryClassHead().loss(None, LOGITS_2, {})
    with pytest.raises(ValueError, match="Mismatched label shape"):
        BinaryClassHead().loss(np.ones([2, 2]), LOGITS_2, {})


def test_binary_constructor_checks():
    with pytest.raises(ValueError, match=r"thresholds not in \(0, 1\)"):
        BinaryClassHead(thresholds=[0.5, 1.])
    with pytest.raises(ValueError, match="Invalid loss_reduction: none"):
        BinaryClassHead(loss_reduction=tf_keras.losses.Reduction.NONE)
    with pytest.raises(ValueError, match=r"loss_fn has unexpected args: \['scale'\]"):
        BinaryClassHead(loss_fn=lambda labels, logits, scale: labels)


def test_binary_eval_spec_metric_keys_and_values():
    with tf.Graph().as_default():
        head = BinaryClassHead(weight_column="w", thresholds=[0.5])
        weights = np.array([[1.], [3.]], np.float32)
        spec = head.create_estimator_spec({"w": weights}, EVAL, LOGITS_2, LABELS_2)
        assert spec.train_op is None and spec.export_outputs is None
        values = eval_values(spec)
    unreduced = sigmoid_xent(LABELS_2, LOGITS_2)
    expected = {
        "average_loss": (unreduced * weights).sum() / weights.sum(),  # a weighted mean
        "accuracy": 1., "precision": 1., "recall": 1., "auc": 1., "auc_precision_recall": 1.,
        "prediction/mean": (sigmoid(LOGITS_2) * weights).sum() / weights.sum(),
        "label/mean": 0.25,
        "accuracy_baseline": 0.75,  # always predicting 0 is right for 3 of the 4 units of weight
        "accuracy/positive_threshold_0.5": 1., "precision/positive_threshold_0.5": 1.,
        "recall/positive_threshold_0.5": 1.,
    }
    assert set(values) == set(expected)
    for key, value in expected.items():
        assert values[key] == pytest.approx(value, abs=1e-3), key


def test_binary_metric_keys_carry_the_head_name_and_regularization():
    with tf.Graph().as_default():
        head = BinaryClassHead(name="clicks")
        spec = head.create_estimator_spec({}, EVAL, LOGITS_2, LABELS_2, regularization_losses=[0.25, 0.5])
        assert all(key.endswith("/clicks") for key in spec.eval_metric_ops)
        values = eval_values(spec)
        assert values["regularization_loss/clicks"] == pytest.approx(0.75)
        assert run(spec.loss) == pytest.approx(sigmoid_xent(LABELS_2, LOGITS_2).mean() + 0.75, rel=1e-6)
        assert tf.compat.v1.local_variables(), "metric variables are local, so that each evaluation starts at 0"


def test_binary_eager_metrics_for_a_training_loop():
    head = BinaryClassHead()
    metrics = head.update_metrics(head.metrics(), {}, LOGITS_2, LABELS_2)
    metrics = head.update_metrics(metrics, {}, np.array([[3.]], np.float32), np.array([[1]]))
    assert metrics["label/mean"].result().numpy() == pytest.approx(2 / 3)
    assert metrics["accuracy_baseline"].result().numpy() == pytest.approx(2 / 3)
    assert metrics["accuracy"].result().numpy() == pytest.approx(1.)


def test_binary_predict_spec_signatures():
    with tf.Graph().as_default():
        spec = BinaryClassHead(label_vocabulary=["no", "yes"]).create_estimator_spec({}, PREDICT, LOGITS_2)
        assert set(spec.export_outputs) == {SERVING, "classification", "regression", "predict"}
        assert spec.loss is None and spec.eval_metric_ops == {}
        classes, scores, value = run([spec.export_outputs[SERVING].classes, spec.export_outputs[SERVING].scores,
                                      spec.export_outputs["regression"].value])
    assert classes.tolist() == [[b"no", b"yes"]] * 2
    np.testing.assert_allclose(value, sigmoid(LOGITS_2), rtol=1e-6)
    np.testing.assert_allclose(scores[:, 1:], sigmoid(LOGITS_2), rtol=1e-6)


# --- training ----------------------------------------------------------------------------------------------------

def test_train_op_from_train_op_fn_with_summaries_and_update_ops():
    with tf.Graph().as_default():
        counter = tf.Variable(0)
        seen = []

        def train_op_fn(loss):
            seen.append(loss)
            return tf.strings.as_string(loss, precision=3)

        spec = BinaryClassHead(name="b").create_estimator_spec(
            {}, TRAIN, LOGITS_2, LABELS_2, train_op_fn=train_op_fn, update_ops=[counter.assign_add(1)])
        assert seen == [spec.loss]
        tags = [tf.compat.v1.summary.Summary.FromString(summary).value[0].tag
                for summary in run(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES))]
        assert tags == ["loss/b"]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(spec.train_op)
            assert session.run(counter) == 1


def test_train_op_from_a_keras2_optimizer():
    with tf.Graph().as_default():
        kernel = tf.Variable([[0.5]])
        logits = tf.matmul(tf.constant([[1.], [2.]]), kernel)
        labels = np.array([[1.], [3.]], np.float32)
        spec = RegressionHead().create_estimator_spec({}, TRAIN, logits, labels,
                                                      optimizer=tf_keras.optimizers.legacy.SGD(learning_rate=0.1),
                                                      trainable_variables=[kernel])
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(spec.train_op)
            # loss = mean((x * k - y)^2), d/dk = mean(2 * x * (x * k - y)) = (2 * -0.5 + 4 * -2) / 2 = -4.5
            assert session.run(kernel)[0, 0] == pytest.approx(0.5 + 0.1 * 4.5)


def test_train_op_from_a_keras3_optimizer_made_in_the_graph():
    """`tf.keras.optimizers.SGD` is Keras 3's on TF >= 2.16: it trains as its Keras 2 counterpart, and its own
    variables stay out of the graph's collections."""
    with tf.Graph().as_default():
        kernel = tf.Variable([[0.5]])
        logits = tf.matmul(tf.constant([[1.], [2.]]), kernel)
        labels = np.array([[1.], [3.]], np.float32)
        spec = RegressionHead().create_estimator_spec({}, TRAIN, logits, labels,
                                                      optimizer=keras.optimizers.SGD(learning_rate=0.1),
                                                      trainable_variables=[kernel])
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(spec.train_op)
            assert session.run(kernel)[0, 0] == pytest.approx(0.5 + 0.1 * 4.5)
            # it counts with the global step, which a Keras 3 optimizer's own counter cannot be set to
            assert session.run(tf.compat.v1.train.get_global_step()) == 1


def test_train_op_arguments_are_checked():
    with tf.Graph().as_default():
        head, variables = BinaryClassHead(), [tf.Variable([1.])]
        with pytest.raises(ValueError, match="train_op_fn and optimizer cannot both be None"):
            head.create_estimator_spec({}, TRAIN, LOGITS_2, LABELS_2)
        with pytest.raises(ValueError, match="train_op_fn and optimizer cannot both be set"):
            head.create_estimator_spec({}, TRAIN, LOGITS_2, LABELS_2, optimizer=tf_keras.optimizers.legacy.SGD(),
                                       train_op_fn=lambda loss: tf.no_op(), trainable_variables=variables)
        with pytest.raises(ValueError, match="trainable_variables cannot be None"):
            head.create_estimator_spec({}, TRAIN, LOGITS_2, LABELS_2, optimizer=tf_keras.optimizers.legacy.SGD())
        with pytest.raises(ValueError, match="is not a tf.keras.optimizers.Optimizer"):
            head.create_estimator_spec({}, TRAIN, LOGITS_2, LABELS_2, optimizer="sgd", trainable_variables=variables)
        with pytest.raises(ValueError, match="update_ops should be a list or a tuple"):
            head.create_estimator_spec({}, TRAIN, LOGITS_2, LABELS_2, train_op_fn=lambda loss: tf.no_op(),
                                       update_ops=tf.no_op())


# --- MultiClassHead ----------------------------------------------------------------------------------------------

LOGITS_3 = np.array([[2., 0., 0.], [0., 1., 0.]], np.float32)
LABELS_3 = np.array([[0], [2]], np.int64)


def test_multi_class_predictions_loss_and_metrics():
    head = MultiClassHead(3, label_vocabulary=["a", "b", "c"])
    predictions = head.predictions(LOGITS_3)
    assert list(predictions) == ["logits", "probabilities", "class_ids", "classes", "all_class_ids", "all_classes"]
    assert predictions["class_ids"].dtype == tf.int64 and predictions["all_class_ids"].dtype == tf.int32
    assert predictions["classes"].numpy().tolist() == [[b"a"], [b"b"]]
    labels = np.array([[b"a"], [b"c"]])
    unreduced = -np.log(softmax(LOGITS_3.astype(np.float64))[[0, 1], [0, 2]])
    assert head.loss(labels, LOGITS_3, {}).numpy() == pytest.approx(unreduced.mean(), rel=1e-6)
    metrics = head.update_metrics(head.metrics(), {}, LOGITS_3, labels)
    assert set(metrics) == {"average_loss", "accuracy"}
    assert metrics["accuracy"].result().numpy() == pytest.approx(0.5)


def test_multi_class_checks():
    with pytest.raises(ValueError, match="n_classes must be > 2"):
        MultiClassHead(2)
    with pytest.raises(ValueError, match="Labels dtype should be integer"):
        MultiClassHead(3).loss(LABELS_3.astype(np.float32), LOGITS_3, {})
    with pytest.raises(ValueError, match="Labels must be >= 0"):
        MultiClassHead(3).loss(-LABELS_3 - 1, LOGITS_3, {})


def test_multi_class_eval_and_predict_specs():
    with tf.Graph().as_default():
        head = MultiClassHead(3, name="kind")
        values = eval_values(head.create_estimator_spec({}, EVAL, LOGITS_3, LABELS_3))
        assert set(values) == {"average_loss/kind", "accuracy/kind"}
        assert values["accuracy/kind"] == pytest.approx(0.5)
        spec = head.create_estimator_spec({}, PREDICT, LOGITS_3)
        assert set(spec.export_outputs) == {SERVING, "classification", "predict"}


def test_labels_of_unknown_rank_are_checked_when_the_graph_runs():
    """Labels from tf.io.parse_example can lack a static rank; their shape is then checked at run time."""
    with tf.Graph().as_default():
        labels = tf.compat.v1.placeholder(tf.int64)
        loss = MultiClassHead(3).loss(labels, LOGITS_3, {})
        with tf.compat.v1.Session() as session:
            assert session.run(loss, {labels: LABELS_3}) > 0
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[expected_labels_shape: \] \[2 1\]"):
                session.run(loss, {labels: np.zeros([2, 2], np.int64)})


# --- regression heads --------------------------------------------------------------------------------------------

def test_regression_per_dimension_weights_and_metrics():
    head = RegressionHead(label_dimension=2, weight_column="w")
    logits = np.array([[1., 2.], [3., 4.]], np.float32)
    labels = np.array([[1., 1.], [1., 1.]], np.float32)
    weights = np.array([[1., 0.], [1., 1.]], np.float32)  # one weight per value
    squared = (logits - labels) ** 2
    assert head.loss(labels, logits, {"w": weights}).numpy() == pytest.approx((squared * weights).sum() / 4)
    metrics = head.update_metrics(head.metrics(), {"w": weights}, logits, labels)
    assert set(metrics) == {"average_loss", "prediction/mean", "label/mean"}
    assert metrics["average_loss"].result().numpy() == pytest.approx((squared * weights).sum() / weights.sum())
    assert metrics["prediction/mean"].result().numpy() == pytest.approx((logits * weights).sum() / weights.sum())
    predictions = head.predictions(logits)
    assert list(predictions) == ["predictions"] and predictions["predictions"].dtype == tf.float32


def test_regression_predict_signatures():
    with tf.Graph().as_default():
        spec = RegressionHead().create_estimator_spec({}, PREDICT, np.array([[1.], [2.]]))
        assert set(spec.export_outputs) == {SERVING, "regression", "predict"}


def test_poisson_and_logistic_regression_heads():
    logits = np.array([[0.5], [-1.]], np.float32)
    counts = np.array([[2.], [0.]], np.float32)
    poisson = PoissonRegressionHead(compute_full_loss=False)
    predictions = poisson.predictions(logits)
    assert set(predictions) == {"predictions", "logits"}
    np.testing.assert_allclose(predictions["predictions"], np.exp(logits), rtol=1e-6)
    assert poisson.loss(counts, logits, {}).numpy() == pytest.approx(np.mean(np.exp(logits) - counts * logits))
    logistic = LogisticRegressionHead()
    np.testing.assert_allclose(logistic.predictions(logits)["predictions"], sigmoid(logits), rtol=1e-6)
    soft = np.array([[0.2], [0.9]], np.float32)
    assert logistic.loss(soft, logits, {}).numpy() == pytest.approx(sigmoid_xent(soft, logits).mean(), rel=1e-6)
    with pytest.raises(ValueError, match=r"Labels must be in range \[0, 1\]"):
        logistic.loss(counts, logits, {})


# --- MultiLabelHead ----------------------------------------------------------------------------------------------

def test_multi_label_dense_and_sparse_labels_give_the_same_loss():
    head = MultiLabelHead(3, label_vocabulary=["x", "y", "z"], classes_for_class_based_metrics=["z"])
    logits = np.array([[1., -1., 2.], [-2., 0.5, 0.]], np.float32)
    multi_hot = np.array([[1, 0, 1], [0, 1, 0]], np.int64)
    sparse = tf.sparse.SparseTensor(indices=[[0, 0], [0, 1], [1, 0]], values=["x", "z", "y"], dense_shape=[2, 2])
    expected = sigmoid_xent(multi_hot, logits).mean(axis=-1).mean()
    assert head.loss(multi_hot, logits, {}).numpy() == pytest.approx(expected, rel=1e-6)
    assert head.loss(sparse, logits, {}).numpy() == pytest.approx(expected, rel=1e-6)
    predictions = head.predictions(logits)
    assert list(predictions) == ["logits", "probabilities", "classes"]
    assert predictions["classes"].numpy().tolist() == [[b"x", b"y", b"z"]] * 2
    metrics = head.update_metrics(head.metrics(), {}, logits, multi_hot)
    assert set(metrics) == {"average_loss", "auc", "auc_precision_recall", "probability_mean/z", "auc/z",
                            "auc_precision_recall/z"}
    assert metrics["probability_mean/z"].result().numpy() == pytest.approx(sigmoid(logits[:, 2]).mean())


def test_multi_label_checks():
    with pytest.raises(ValueError, match="n_classes must be > 1"):
        MultiLabelHead(1)
    with pytest.raises(ValueError, match=r"labels must be an integer indicator Tensor with values in \[0, 1\]"):
        MultiLabelHead(2).loss(np.array([[2, 0]]), np.zeros([1, 2], np.float32), {})
    strings = tf.sparse.SparseTensor(indices=[[0, 0]], values=["x"], dense_shape=[1, 1])
    with pytest.raises(ValueError, match="Labels are strings: give the head a label_vocabulary"):
        MultiLabelHead(2).loss(strings, np.zeros([1, 2], np.float32), {})


# --- MultiHead ---------------------------------------------------------------------------------------------------

def _two_heads():
    return MultiHead([BinaryClassHead(name="click"), RegressionHead(name="time")], head_weights=[1., 2.])


def test_multi_head_loss_is_the_weighted_sum_of_the_heads():
    multi = _two_heads()
    assert multi.name == "click_time" and multi.logits_dimension == 2
    logits = {"click": LOGITS_2, "time": np.array([[1.], [2.]], np.float32)}
    labels = {"click": LABELS_2, "time": np.array([[2.], [2.]], np.float32)}
    expected = sigmoid_xent(LABELS_2, LOGITS_2).mean() + 2. * 0.5
    assert multi.loss(labels, logits, {}).numpy() == pytest.approx(expected, rel=1e-6)
    as_one_tensor = np.hstack([logits["click"], logits["time"]])  # split along the last dimension, in head order
    assert multi.loss(labels, as_one_tensor, {}).numpy() == pytest.approx(expected, rel=1e-6)
    with pytest.raises(ValueError, match="labels has missing values for head"):
        multi.loss({"click": LABELS_2}, logits, {})
    with tf.Graph().as_default(), pytest.raises(ValueError, match="You must provide a labels Tensor"):
        multi.create_estimator_spec({}, EVAL, logits, None)


def test_multi_head_eval_metrics_and_predict_signatures():
    logits = {"click": LOGITS_2, "time": np.array([[1.], [2.]], np.float32)}
    labels = {"click": LABELS_2, "time": np.array([[2.], [2.]], np.float32)}
    with tf.Graph().as_default():
        values = eval_values(_two_heads().create_estimator_spec({}, EVAL, logits, labels))
        assert {"loss/click", "loss/time", "accuracy/click", "auc/click", "average_loss/time",
                "label/mean/time"} <= set(values)
        assert values["loss/time"] == pytest.approx(0.5)
        spec = _two_heads().create_estimator_spec({}, PREDICT, logits)
        assert set(spec.export_outputs) == {SERVING, "click", "click/classification", "click/regression",
                                            "click/predict", "time", "time/regression", "time/predict", "predict"}
        assert ("click", "logistic") in spec.predictions and ("time", "predictions") in spec.predictions
        assert {"click/logistic", "time/predictions"} <= set(spec.export_outputs["predict"].outputs)


def test_multi_head_train_spec():
    logits = {"click": LOGITS_2, "time": np.array([[1.], [2.]], np.float32)}
    labels = {"click": LABELS_2, "time": np.array([[2.], [2.]], np.float32)}
    with tf.Graph().as_default():
        spec = _two_heads().create_estimator_spec({}, TRAIN, logits, labels, train_op_fn=lambda loss: loss * 2.)
        loss, doubled = run([spec.loss, spec.train_op])
        assert doubled == pytest.approx(2 * loss)
        tags = {tf.compat.v1.summary.Summary.FromString(summary).value[0].tag
                for summary in run(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES))}
        assert tags == {"loss", "loss/click", "loss/time"}
