"""Layers inside a model_fn: tf.compat.v1.layers (from tf_keras) and Keras 3 layers, as a model_fn author expects.

The TF 2.15 numbers here were recorded by running tests/helpers/layers_model_fn_program.py under TF 2.15.1
(tensorflow-cpu, Python 3.11) with its real tf.estimator:
  tests/data/tf215_layers_model_fn/   `program DIR 20` (the checkpoint files) and `program DIR 0 --predict-only`
                                      (expected.json)
  tests/data/tf215_layers_oracle.json `program DIR 30` from scratch, and `program COPY 30` on a copy of that folder
  tests/data/tf215_keras_layers_model_fn/  tests/helpers/keras_layers_model_fn_program.py `DIR 20` (the checkpoint
                                      files; expected.json: its output line)
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import compat.estimator as estimator
from conftest import HELPERS, REPO, keras_3_only

DATA = os.path.join(REPO, "tests", "data")
ORACLE = json.load(open(os.path.join(DATA, "tf215_layers_oracle.json")))


def run_program(model_dir, max_steps, *flags):
    """The program with its one import line changed to compat.estimator, in a process of its own."""
    source = open(os.path.join(HELPERS, "layers_model_fn_program.py")).read()
    changed = source.replace("estimator = tf.estimator\n", "import compat.estimator as estimator\n")
    assert changed != source
    program = os.path.join(os.path.dirname(str(model_dir)), "program.py")
    with open(program, "w") as stream:
        stream.write(changed)
    result = subprocess.run([sys.executable, program, str(model_dir), str(max_steps), *flags], capture_output=True,
                            text=True, timeout=600, cwd=REPO, env={**os.environ, "PYTHONPATH": REPO})
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


# How far trained numbers may sit from TF 2.15's: float32 sums rounded in another order by another CPU's
# vector width. TF 2.15 itself, run on an AVX-only CPU (2026-12-03), gave probabilities 0.0034 and moving
# means 0.021 away from what it recorded on the machine that wrote the oracle (we: 0.0061 and 0.016). A real
# difference is far larger: another shuffle seed moves the probabilities by 1.0, another dropout rate by
# 0.78 and the moving means by 0.053. A forward pass from a checkpoint rounds alike everywhere (1e-5).
TRAINED = {"probabilities": 0.02, "served": 0.02, "moving_mean": 0.04}
RESTORED = {"probabilities": 1e-5, "served": 1e-5, "moving_mean": 1e-5}


def assert_same_numbers(ours, theirs, atol):
    for key in ("probabilities", "served", "moving_mean"):
        if key in theirs:
            np.testing.assert_allclose(ours[key], theirs[key], atol=atol[key], err_msg=key)
    for key in ("accuracy", "global_step"):
        if key in theirs:
            assert ours[key] == pytest.approx(theirs[key]), key


def test_a_tf_compat_v1_layers_program_trains_as_tf_2_15_did(tmp_path):
    ours = run_program(tmp_path / "run", 30)
    assert_same_numbers(ours, ORACLE["fresh_30_steps"], TRAINED)  # the same initial values, batches, dropout and updates
    assert {"conv2d/kernel", "batch_normalization/moving_mean", "dense/kernel", "dense/bias/Adam"} <= set(
        ours["variables"])  # TF 1.x names
    assert np.abs(ours["moving_mean"]).sum() > 0  # batch norm's UPDATE_OPS ran with the train op
    np.testing.assert_allclose(ours["served"], ours["probabilities"], atol=1e-6)  # the export serves predict()'s


def test_a_tf_2_15_model_folder_of_it_restores_predicts_and_trains_on(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(os.path.join(DATA, "tf215_layers_model_fn"), folder)
    expected = json.load(open(folder / "expected.json"))
    assert_same_numbers(run_program(folder, 0, "--predict-only"), expected, RESTORED)
    assert_same_numbers(run_program(folder, 30), ORACLE["train_on_20_to_30"], TRAINED)


def test_a_tf_2_15_folder_of_a_model_fn_with_keras_dense_and_dropout_restores_and_trains_on(tmp_path):
    """Keras 3 names a second Dense layer's variables as Keras 2 did (`dense_1/kernel`, not `dense_1_1/kernel`),
    and keeps Dropout's seed generator state, which Keras 2 did not have, out of the checkpoint."""
    folder = tmp_path / "run"
    shutil.copytree(os.path.join(DATA, "tf215_keras_layers_model_fn"), folder)
    expected = json.load(open(folder / "expected.json"))
    prelude = ("import compat.estimator, runpy, sys; compat.estimator.install(); "
               "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")
    result = subprocess.run([sys.executable, "-c", prelude, os.path.join(HELPERS, "keras_layers_model_fn_program.py"),
                             str(folder), "20", "23"], capture_output=True, text=True, timeout=600, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": REPO})
    assert result.returncode == 0, result.stderr[-3000:]
    restored, trained_on = (json.loads(line) for line in result.stdout.strip().splitlines()[-2:])
    assert restored["global_step"] == 20
    assert restored["loss"] == pytest.approx(expected["loss"], rel=1e-5)
    np.testing.assert_allclose(restored["predictions"], expected["predictions"], atol=1e-5)
    assert trained_on["global_step"] == 23 and trained_on["loss"] != restored["loss"]
    assert trained_on["variables"] == expected["variables"]  # TF 2.15's names, and no more
    assert "dense_1/kernel" in expected["variables"]


@keras_3_only
def test_tf_compat_v1_layers_are_tf_kerass_until_uninstall():
    from compat.core import tf_internals

    # as importing compat.estimator after TensorFlow, or its first name, does (another test file may have
    # imported compat.estimator before TensorFlow in this process)
    tf_internals.install()
    with tf.Graph().as_default():
        out = tf.compat.v1.layers.dense(tf.zeros([2, 3]), 4, name="projection")
        assert out.shape == [2, 4] and tf.compat.v1.global_variables()[0].name == "projection/kernel:0"
        tf.compat.v1.layers.batch_normalization(out, training=True)
        assert len(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)) == 2
        assert tf.compat.v1.nn.rnn_cell.LSTMCell(3).state_size.c == 3
    estimator.uninstall()  # undoes what importing compat.estimator did too
    try:
        with pytest.raises(AttributeError, match="not available with Keras 3"):
            tf.compat.v1.layers.dense  # noqa: B018  (TensorFlow's own stub again)
    finally:
        tf_internals.install()  # as importing compat.estimator left it, for the other tests
    assert tf.compat.v1.layers.dense is not None


@keras_3_only
def test_a_module_imported_after_uninstall_leaves_tensorflow_its_own_until_install():
    program = (
        "import tensorflow as tf\n"
        "import compat.estimator as estimator\n"
        "def v1_layers():\n"
        "    try:\n"
        "        return callable(tf.compat.v1.layers.dense)\n"
        "    except AttributeError:  # TensorFlow's own stub under Keras 3\n"
        "        return False\n"
        "print(v1_layers())\n"
        "estimator.uninstall()\n"
        "import compat.estimator.estimator  # first imported now\n"
        "estimator.Estimator  # a name used now\n"
        "print(v1_layers())\n"
        "estimator.install()\n"
        "print(v1_layers())\n"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300,
                            cwd=REPO, env={**os.environ, "PYTHONPATH": REPO})
    assert result.stdout.split() == ["True", "False", "True"], result.stderr[-3000:]


X = np.random.default_rng(5).normal(2.0, 3.0, size=(16, 4)).astype("float32")


def _keras_model_fn(features, labels, mode):
    import keras

    net = keras.layers.BatchNormalization(momentum=0.9)(features)  # no training=: it follows the mode
    dropped = keras.layers.Dropout(0.5)(tf.ones([1, 2000]))
    logits = keras.layers.Dense(2)(net)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == estimator.ModeKeys.EVAL:
        return estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
            "kept": tf.compat.v1.metrics.mean(tf.reduce_sum(dropped))})
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.0).minimize(loss, tf.compat.v1.train.get_global_step())
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=[_Masks(dropped)])


class _Masks(tf.compat.v1.train.SessionRunHook):
    """Records how many units dropout kept at each training step."""

    kept: list = []

    def __init__(self, dropped):
        self.dropped = dropped

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self.dropped)

    def after_run(self, run_context, run_values):
        _Masks.kept.append(run_values.results)


def test_keras_3_layers_in_a_model_fn_update_their_state_and_follow_the_mode(tmp_path):
    import keras

    _Masks.kept = []
    est = estimator.Estimator(_keras_model_fn, str(tmp_path), estimator.RunConfig(tf_random_seed=1))
    steps = 5
    est.train(lambda: tf.data.Dataset.from_tensors((X, np.zeros(16, "int32"))).repeat(), steps=steps)
    eager = keras.layers.BatchNormalization(momentum=0.9)
    for _ in range(steps):
        eager(X, training=True)
    for name in ("moving_mean", "moving_variance"):
        np.testing.assert_allclose(est.get_variable_value(f"batch_normalization/{name}"),
                                   getattr(eager, name).numpy(), rtol=1e-5, err_msg=name)
    masks = np.array(_Masks.kept)[:, 0]
    assert all((mask == 0).any() for mask in masks)  # dropout trained ...
    # ... with masks drawn anew (two steps' random masks of one row can coincide by chance: a CI run saw 4
    # distinct of 5; all five alike would mean one fixed mask)
    assert len({tuple(np.flatnonzero(mask)) for mask in masks}) > 1
    result = est.evaluate(lambda: tf.data.Dataset.from_tensors((X, np.zeros(16, "int32"))), steps=1)
    assert result["kept"] == 2000  # and evaluated without dropout


def test_keras_layers_in_a_model_fn_name_their_variables_as_tf_2_15_did():
    """Sequential, nested, functional, custom and scoped Keras models in a model_fn's graph: each variable named
    as TF 2.15's Keras 2 named it (a Sequential built at construction: `dense/kernel`, not
    `sequential/dense/kernel`), so TF 2.15's checkpoints of such model_fns restore."""
    result = subprocess.run([sys.executable, os.path.join(HELPERS, "keras_variable_names.py"), "--compat"],
                            capture_output=True, text=True, timeout=300, cwd=REPO,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    recorded = json.load(open(os.path.join(DATA, "tf215_keras_variable_names.json")))
    assert recorded["sequential_built_at_construction"][0] == "dense/kernel:0"
    assert json.loads(result.stdout.strip().splitlines()[-1]) == recorded
