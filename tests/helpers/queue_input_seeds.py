"""numpy_input_fn and pandas_input_fn feeding a canned DNN (written for TF 2.15's tf.estimator).

Prints, as JSON, per input kind: the first hidden layer's kernel after two steps (its start follows the op
seeds, which follow the ops the input_fn made), the evaluation loss with dropout, and the training
summary tags (TF 2.15's queue-fill summary among them). Run by TF 2.15 into
tests/data/tf215_queue_input_seeds.json; tests/test_graph_estimator.py runs it here.
"""

import json
import tempfile

import numpy as np
import pandas as pd
import tensorflow as tf

tf.get_logger().setLevel("ERROR")
rng = np.random.RandomState(0)
X = {"a": rng.rand(24).astype("float32"), "b": rng.rand(24).astype("float32")}
Y = (X["a"] + X["b"] > 1).astype("int64")
COLUMNS = [tf.feature_column.numeric_column("a"), tf.feature_column.numeric_column("b")]


def inputs(kind, epochs):
    if kind == "numpy":
        return tf.compat.v1.estimator.inputs.numpy_input_fn(X, Y, batch_size=6, num_epochs=epochs, shuffle=False)
    if kind == "pandas":
        frame = pd.DataFrame(X)
        return tf.compat.v1.estimator.inputs.pandas_input_fn(frame, pd.Series(Y), batch_size=6, num_epochs=epochs,
                                                             shuffle=False)
    return lambda: tf.data.Dataset.from_tensor_slices((X, Y)).batch(6).repeat(epochs)


result = {}
for kind in ("numpy", "pandas", "dataset"):
    folder = tempfile.mkdtemp()
    est = tf.estimator.DNNClassifier([3], COLUMNS, dropout=0.3, model_dir=folder,
                                     config=tf.estimator.RunConfig(tf_random_seed=11, save_summary_steps=1))
    est.train(inputs(kind, None), steps=2)
    metrics = est.evaluate(inputs(kind, 1))
    tf.compat.v1.summary.FileWriterCache.clear()
    tags = set()
    for path in tf.io.gfile.glob(folder + "/events.out.tfevents*"):
        for event in tf.compat.v1.train.summary_iterator(path):
            tags.update(value.tag for value in event.summary.value)
    result[kind] = {"kernel": est.get_variable_value("dnn/hiddenlayer_0/kernel").round(5).tolist(),
                    "loss": round(float(metrics["loss"]), 5), "tags": sorted(tags - {"global_step/sec"})}
print(json.dumps(result, sort_keys=True))
