"""SessionRunHook semantics, as a program written for TF 2.15's tf.estimator observes them.

    python hook_semantics.py WORK_DIR            # under TF 2.15 (its own tf.estimator)
    python -c "<install, then run>" hook_semantics.py WORK_DIR   # under compat.estimator.install()

Prints one JSON line: for each scenario what the program saw (the order of every hook and listener call,
the global steps fetched, counters that hooks and scaffolds update through `session.run`, the values of
every variable of a GAN-shaped model's checkpoint, Adam's slots included). tests/test_hook_semantics.py runs
it after compat.estimator.install() and compares with TF 2.15's output of the same program
(tests/data/tf215_hook_semantics.json, recorded with TF 2.15's interpreter).
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf

v1 = tf.compat.v1
WORK = sys.argv[1]
rng = np.random.default_rng(5)
X = rng.normal(size=(64, 3)).astype("float32")
Y = (X[:, 0] > 0).astype("float32").reshape(-1, 1)
Z = rng.normal(size=(64, 2)).astype("float32")
W0 = rng.normal(size=(3, 1)).astype("float32") * 0.1


def input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X, "z": Z}, Y)).batch(8).repeat()


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X, "z": Z}, Y)).batch(8)


def predict_input_fn():
    return tf.data.Dataset.from_tensor_slices({"x": X[:12], "z": Z[:12]}).batch(8)


def linear(x, name, shape, seed_array):
    with v1.variable_scope(name):
        kernel = v1.get_variable("kernel", shape, initializer=v1.constant_initializer(seed_array))
        bias = v1.get_variable("bias", shape[-1:], initializer=v1.zeros_initializer())
        return tf.matmul(x, kernel) + bias


class Recorder(v1.train.SessionRunHook):
    """Logs each call with the global step it fetched; optionally feeds a probe and stops at a step."""

    def __init__(self, name, log, stop_at=None, probe=False):
        self.name, self.log, self.stop_at, self.probe = name, log, stop_at, probe

    def begin(self):
        self.global_step = v1.train.get_global_step()
        graph = v1.get_default_graph()
        self.probe_in = graph.get_tensor_by_name("probe:0") if self.probe else None
        self.probe_out = graph.get_tensor_by_name("probe_out:0") if self.probe else None
        self.log.append(f"{self.name}.begin")

    def after_create_session(self, session, coord):
        self.log.append(f"{self.name}.after_create_session:{session.run(self.global_step)}")

    def before_run(self, run_context):
        self.log.append(f"{self.name}.before_run")
        # the step about to run, read in a run of its own: fetched beside the train op, a variable's read and
        # its increment have no order (on TF 2.15 as here), so the value could be either
        self.step = run_context.session.run(self.global_step)
        if self.probe:
            return v1.train.SessionRunArgs({"probe": self.probe_out}, feed_dict={self.probe_in: 3.0})
        return None

    def after_run(self, run_context, run_values):
        entry = f"{self.name}.after_run:{self.step}"
        if self.probe:
            entry += f",probe={float(run_values.results['probe'])}"
        self.log.append(entry)
        if self.stop_at is not None and self.step >= self.stop_at:
            self.log.append(f"{self.name}.request_stop")
            run_context.request_stop()

    def end(self, session):
        self.log.append(f"{self.name}.end:{session.run(self.global_step)}")


class Listener(v1.train.CheckpointSaverListener):
    def __init__(self, log):
        self.log = log

    def begin(self):
        self.log.append("listener.begin")

    def before_save(self, session, global_step_value):
        self.log.append(f"listener.before_save:{global_step_value}")

    def after_save(self, session, global_step_value):
        self.log.append(f"listener.after_save:{global_step_value}")

    def end(self, session, global_step_value):
        self.log.append(f"listener.end:{global_step_value}")


class RunsOpHook(v1.train.SessionRunHook):
    """Runs ops of the model_fn's graph itself, through `run_context.session`, before each step."""

    def __init__(self, op_names):
        self.op_names = op_names

    def begin(self):
        graph = v1.get_default_graph()
        self.ops = [graph.get_operation_by_name(name) for name in self.op_names]

    def before_run(self, run_context):
        for op in self.ops:
            run_context.session.run(op)


def counter_model_fn(features, labels, mode, params):
    """The real update and a counter run by a hook; the train_op only steps the global step."""
    global_step = v1.train.get_or_create_global_step()
    counter = v1.get_variable("counter", [], initializer=v1.zeros_initializer(), trainable=False)
    bumped = v1.get_variable("bumped_by_init_fn", [], initializer=v1.zeros_initializer(), trainable=False)
    logits = linear(features["x"], "model", [3, 1], W0)
    loss = v1.losses.sigmoid_cross_entropy(labels, logits)
    probe = v1.placeholder_with_default(1.0, [], name="probe")
    tf.identity(probe * 2.0, name="probe_out")
    if mode != tf.estimator.ModeKeys.TRAIN:
        return tf.estimator.EstimatorSpec(mode, loss=loss, predictions={"logits": logits})
    update = v1.train.AdamOptimizer(0.05).minimize(loss)
    tf.group(v1.assign_add(counter, 1.0), name="counter_step")
    tf.group(update, name="update")
    bump = v1.assign_add(bumped, 100.0)

    def init_fn(scaffold, session):
        session.run(bump)

    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=v1.assign_add(global_step, 1),
        training_hooks=[RunsOpHook(["update", "counter_step"])], scaffold=v1.train.Scaffold(init_fn=init_fn))


def gan_model_fn(features, labels, mode, params):
    """Two sub-networks, two Adam optimizers, trained in turn by a hook (a GAN estimator's sequential hook)."""
    global_step = v1.train.get_or_create_global_step()
    fake = tf.tanh(linear(features["z"], "generator", [2, 3], rng_g))
    d_real = linear(features["x"], "discriminator", [3, 1], rng_d)
    with v1.variable_scope("", reuse=True):
        d_fake = linear(fake, "discriminator", [3, 1], rng_d)
    d_loss = (v1.losses.sigmoid_cross_entropy(tf.ones_like(d_real), d_real)
              + v1.losses.sigmoid_cross_entropy(tf.zeros_like(d_fake), d_fake))
    g_loss = v1.losses.sigmoid_cross_entropy(tf.ones_like(d_fake), d_fake)
    if mode != tf.estimator.ModeKeys.TRAIN:
        return tf.estimator.EstimatorSpec(mode, loss=d_loss + g_loss, predictions={"fake": fake})
    d_vars = v1.get_collection(v1.GraphKeys.TRAINABLE_VARIABLES, "discriminator")
    g_vars = v1.get_collection(v1.GraphKeys.TRAINABLE_VARIABLES, "generator")
    with v1.name_scope("discriminator_train"):
        tf.group(v1.train.AdamOptimizer(0.02, 0.5).minimize(d_loss, var_list=d_vars), name="step")
    with v1.name_scope("generator_train"):
        tf.group(v1.train.AdamOptimizer(0.01, 0.5).minimize(g_loss, var_list=g_vars), name="step")
    return tf.estimator.EstimatorSpec(
        mode, loss=d_loss + g_loss, train_op=v1.assign_add(global_step, 1),
        training_hooks=[RunsOpHook(["discriminator_train/step", "generator_train/step"])])


rng_g = rng.normal(size=(2, 3)).astype("float32") * 0.3
rng_d = rng.normal(size=(3, 1)).astype("float32") * 0.3


def spec_hooks_model_fn(features, labels, mode, params):
    """Hooks given by the model_fn itself (training, chief-only, evaluation, prediction), and a probe."""
    log = LOG  # not params: the Estimator passes the model_fn a deep copy of them
    global_step = v1.train.get_or_create_global_step()
    logits = linear(features["x"], "model", [3, 1], W0)
    probe = v1.placeholder_with_default(1.0, [], name="probe")
    tf.identity(probe * 2.0, name="probe_out")
    predictions = {"logits": logits}
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions=predictions,
                                          prediction_hooks=[Recorder("spec_predict", log)])
    loss = v1.losses.sigmoid_cross_entropy(labels, logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss, evaluation_hooks=[Recorder("spec_eval", log)])
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=train_op, training_hooks=[Recorder("spec_train", log, probe=True)],
        training_chief_hooks=[Recorder("spec_chief", log)])


def config(name, **kwargs):
    return tf.estimator.RunConfig(tf_random_seed=7, save_summary_steps=1000, log_step_count_steps=1000,
                                  model_dir=os.path.join(WORK, name), **kwargs)


def values(estimator):
    return {name: np.asarray(estimator.get_variable_value(name)).round(6).tolist()
            for name in estimator.get_variable_names()}


report = {}

counter = tf.estimator.Estimator(counter_model_fn, config=config("counter"))
counter.train(input_fn, max_steps=10)
report["counter"] = {name: value for name, value in values(counter).items()
                     if name in ("counter", "bumped_by_init_fn", "global_step", "beta1_power", "beta2_power")}
counter.train(input_fn, steps=5)  # restored, so the scaffold's init_fn does not run again
report["counter_resumed"] = {name: values(counter)[name] for name in ("counter", "bumped_by_init_fn", "global_step")}

gan = tf.estimator.Estimator(gan_model_fn, config=config("gan"))
gan.train(input_fn, max_steps=10)
report["gan"] = values(gan)

log = LOG = []
spec = tf.estimator.Estimator(spec_hooks_model_fn, config=config("spec", save_checkpoints_steps=3))
spec.train(input_fn, max_steps=7, hooks=[Recorder("user_a", log), Recorder("user_b", log, stop_at=5)],
           saving_listeners=[Listener(log)])
report["train_calls"] = list(log)
log.clear()
metrics = spec.evaluate(eval_input_fn, steps=3, hooks=[Recorder("user_eval", log)])
report["eval_calls"] = list(log)
report["eval_global_step"] = int(metrics["global_step"])
log.clear()
predictions = list(spec.predict(predict_input_fn, hooks=[Recorder("user_predict", log)]))
report["predict_calls"] = list(log)
report["predictions"] = len(predictions)
log.clear()
spec.train(input_fn, steps=2, hooks=[Recorder("again", log)])
report["train_again_calls"] = list(log)

log.clear()
keras_model = tf.keras.Sequential([tf.keras.Input((3,), name="x"), tf.keras.layers.Dense(1, name="out")])
keras_model.compile(optimizer="sgd", loss="mse")
converted = tf.keras.estimator.model_to_estimator(keras_model=keras_model, config=config("keras"))
converted.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(8).repeat(), max_steps=3,
                hooks=[Recorder("keras_a", log), Recorder("keras_b", log, stop_at=2)])
report["keras_train_calls"] = list(log)
log.clear()
converted.evaluate(lambda: tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(8), steps=2,
                   hooks=[Recorder("keras_eval", log)])
report["keras_eval_calls"] = list(log)

print(json.dumps(report, sort_keys=True))
