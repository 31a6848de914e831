"""A canned model_fn, and tf.compat.v1.layers, called twice in one graph (neural-structured-learning's adversarial
wrapper calls the DNN's model_fn a second time), under the same scope, AUTO_REUSE and a new scope.

    python repeated_construction.py

Written for TF 2.15 (its private canned model_fns, which libraries call); prints one JSON line {case: the graph's
variable names, or the error}. tests/data/tf215_repeated_construction.json is TF 2.15's run; tests/test_canned.py
compares this project's, after install().
"""
import json
import tensorflow as tf
from tensorflow_estimator.python.estimator.canned import dnn, linear, dnn_linear_combined as dlc
cols = [tf.feature_column.numeric_column("x", shape=(3,)), tf.feature_column.embedding_column(tf.feature_column.categorical_column_with_identity("c", 5), 2)]
out = {}
for name, reuse in (("plain", None), ("auto_reuse", tf.compat.v1.AUTO_REUSE)):
    for fam in ("dnn", "linear", "combined"):
        g = tf.Graph()
        with g.as_default():
            f = {"x": tf.ones([4, 3]), "c": tf.constant([[1], [2], [3], [4]], tf.int64)}
            head = tf.estimator.BinaryClassHead()
            def call():
                if fam == "dnn":
                    return dnn.dnn_model_fn_v2(features=f, labels=tf.ones([4, 1]), mode="infer", head=head, hidden_units=[5], feature_columns=cols, optimizer="Adagrad")
                if fam == "linear":
                    return linear._linear_model_fn_v2(features=f, labels=tf.ones([4, 1]), mode="infer", head=head, feature_columns=cols, optimizer="Ftrl", config=None)
                return dlc._dnn_linear_combined_model_fn_v2(features=f, labels=tf.ones([4, 1]), mode="infer", head=head, linear_feature_columns=cols[:1], dnn_feature_columns=cols, dnn_hidden_units=[3], config=None)
            try:
                with tf.compat.v1.variable_scope(tf.compat.v1.get_variable_scope(), reuse=reuse):
                    call(); call()
                with tf.compat.v1.variable_scope("outer"):
                    call()
                out[f"{fam}_{name}"] = sorted(v.op.name for v in tf.compat.v1.global_variables())
            except Exception as error:  # compared by type: the two raise in other words
                out[f"{fam}_{name}"] = type(error).__name__
g = tf.Graph()
with g.as_default():
    x = tf.ones([2, 3])
    tf.compat.v1.layers.dense(x, 4); tf.compat.v1.layers.dense(x, 4, name="d"); tf.compat.v1.layers.dense(x, 4)
    with tf.compat.v1.variable_scope("s"):
        tf.compat.v1.layers.dense(x, 4)
    with tf.compat.v1.variable_scope("s", reuse=True):
        tf.compat.v1.layers.dense(x, 4, name="dense")
    with tf.compat.v1.variable_scope("t"):
        tf.compat.v1.layers.dense(x, 4); tf.compat.v1.layers.dense(x, 4)
    out["layers"] = sorted(v.op.name for v in tf.compat.v1.global_variables())
print(json.dumps(out))
