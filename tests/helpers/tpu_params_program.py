"""TPUEstimator(use_tpu=False) with a dict and with an HParams-style params object, as TF 2.15 programs passed
them (audio and music models kept their hyperparameters in tf.contrib.training.HParams or a copy of it).

    python tpu_params_program.py WORK_DIR

Prints one JSON line: the params the input_fn and the model_fn saw in each mode, and the Estimator's; then, for
train, evaluate, predict (with predict_batch_size) and export, every model_fn call in order with its mode and
params (TF 2.15 exports without `batch_size`: the batch is not known there). Written
for TF 2.15's tf.estimator; tests/test_estimator_api.py runs it after compat.estimator.install() and compares
with TF 2.15's output (tests/data/tf215_tpu_params.json).
"""
import json
import sys

import numpy as np
import tensorflow as tf

class HParams:
    """The shape of tf.contrib.training.HParams (and magenta's copies): attributes, values(), add/set_hparam."""
    def __init__(self, **kwargs):
        self._names = []
        for k, v in kwargs.items(): self.add_hparam(k, v)
    def add_hparam(self, name, value):
        if hasattr(self, name): raise ValueError(f"Hyperparameter name is reserved: {name}")
        setattr(self, name, value); self._names.append(name)
    def set_hparam(self, name, value):
        setattr(self, name, value)
    def values(self):
        return {n: getattr(self, n) for n in self._names}
    def __contains__(self, key):
        return key in self._names

seen = {}
calls = []
def describe(params):
    if hasattr(params, "values") and not isinstance(params, dict):
        return {"type": type(params).__name__, "values": {k: v for k, v in sorted(params.values().items()) if k != "context"}}
    return {"type": type(params).__name__, "values": {k: v for k, v in sorted(params.items()) if k != "context"}}

X = np.random.default_rng(0).normal(size=(64, 3)).astype("float32"); Y = (X[:, 0] > 0).astype("int32")
def input_fn(params):
    seen.setdefault("input_fn", describe(params))
    bs = params["batch_size"] if isinstance(params, dict) else params.batch_size
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat().batch(bs, drop_remainder=True)
def model_fn(features, labels, mode, params):
    seen.setdefault("model_fn_" + mode, describe(params))
    calls.append([mode, describe(params)])
    lr = params["learning_rate"] if isinstance(params, dict) else params.learning_rate
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(mode, predictions={"logits": logits})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    opt = tf.compat.v1.train.GradientDescentOptimizer(lr)
    return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=opt.minimize(loss, tf.compat.v1.train.get_global_step()))
out = {}
for kind in ("dict", "hparams"):
    seen.clear()
    calls.clear()
    params = {"learning_rate": 0.1, "layers": 2} if kind == "dict" else HParams(learning_rate=0.1, layers=2)
    config = tf.compat.v1.estimator.tpu.RunConfig(model_dir=sys.argv[1] + kind)
    est = tf.compat.v1.estimator.tpu.TPUEstimator(model_fn, config=config, params=params, use_tpu=False, train_batch_size=16, eval_batch_size=8, predict_batch_size=4)
    est.train(input_fn, max_steps=3)
    est.evaluate(input_fn, steps=2)

    def predict_input_fn(params):
        bs = params["batch_size"] if isinstance(params, dict) else params.batch_size
        return tf.data.Dataset.from_tensor_slices({"x": X[:8]}).batch(bs)

    predictions = list(est.predict(predict_input_fn))

    def serving_input_fn():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3])
        return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})

    exported = est.export_saved_model(sys.argv[1] + kind + "_export", serving_input_fn).decode()
    out[kind] = dict(seen, estimator_params=describe(est.params), original=describe(params), calls=list(calls),
                     predictions=len(predictions),
                     tags=sorted(sorted(meta.meta_info_def.tags) for meta in __import__(
                         "tensorflow.core.protobuf.saved_model_pb2", fromlist=["SavedModel"]).SavedModel.FromString(
                         open(exported + "/saved_model.pb", "rb").read()).meta_graphs))
print(json.dumps(out, sort_keys=True))
