"""Every reach into TensorFlow's, Keras' and tf_keras' internals (compat/core/tf_internals.py) still works here.

A release that moves one of these names fails this file, by name, rather than
a run deep inside; and what install() changes, uninstall() puts back.
"""

import inspect

import keras
import numpy as np
import pytest
import tensorflow as tf

import compat.estimator  # noqa: F401  (the documented import that installs what tf_internals changes)
from compat.core import tf_internals
from compat.core.patches import PATCHES


def test_the_private_modules_and_names_are_where_they_were():
    assert tf_internals.export_output.PredictOutput and tf_internals.export_utils.build_all_signature_defs
    assert callable(tf_internals.evaluation._evaluate_once)
    assert "num_evals" in inspect.signature(tf_internals.evaluation._StopAfterNEvalsHook).parameters
    assert hasattr(tf.compat.v1.saved_model.Builder, "_add_train_op")
    assert hasattr(tf.compat.v1.train.CheckpointSaverHook(".", save_steps=1), "_listeners")
    assert hasattr(tf.Operation, "_add_control_inputs")
    # the distribution hooks TF 2.15's Estimator used, and tf_keras' compile flag
    assert callable(tf.distribute.MirroredStrategy._scale_loss_for_estimator_enabled)
    assert tf_internals.scaffold_init_fn(tf.compat.v1.train.Scaffold(init_fn=print)) is print
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=3)
    assert tf_internals.strategy_session_config(tf.distribute.get_strategy(), config).inter_op_parallelism_threads == 3
    import tf_keras

    model = tf_keras.Sequential([tf_keras.layers.Dense(1, input_shape=(2,))])
    assert not tf_internals.is_compiled(model)
    model.compile("sgd", "mse")
    assert tf_internals.is_compiled(model)
    from keras.src.backend.common import global_state
    from keras.src.layers import layer as keras_layer

    keras.layers.Dense(1)  # Keras counts names in this global attribute
    assert global_state.get_global_attribute("object_name_uids") is not None
    assert "entry_layer" in inspect.signature(keras_layer.CallContext.__init__).parameters
    assert tf_internals.fn_args(lambda features, labels, mode: None) == ("features", "labels", "mode")


def test_keras_names_restart_per_graph_and_the_count_comes_back():
    keras.layers.Dense(1)  # the process's count moves on
    with tf_internals.keras_names_per_graph():
        assert keras.layers.Dense(1).name == "dense"
    assert keras.layers.Dense(1).name != "dense"


def test_a_keras_scope_left_on_its_stack_does_not_rename_variables_made_outside_it():
    # An optimizer's scope Keras 3 left on its stack (`__optimizer`, from TF 2.15's head tests) once renamed every
    # later variable of the graph (metrics too) under it, which TensorFlow then refused as a root scope name.
    from keras.src.backend.common import global_state

    with tf.Graph().as_default(), tf_internals.keras_names_per_graph():
        stack = global_state.get_global_attribute("name_scope_stack", [], set_to_default=True)
        stack.append(keras.name_scope("__optimizer"))
        try:
            total = tf.compat.v1.metrics.mean(tf.constant([1.0]))[0]
            inside = keras.layers.Dense(2, name="dense")
            inside(tf.zeros([1, 3]))
        finally:
            stack.pop()
        assert [v.op.name for v in tf.compat.v1.local_variables()] == ["mean/total", "mean/count"]
        assert total.op.name.startswith("mean/")
        assert {v.op.name for v in tf.compat.v1.global_variables()} == {"dense/kernel", "dense/bias"}


def test_the_training_default_reaches_keras_3_layers_only_inside_its_block():
    dropout = keras.layers.Dropout(0.5, seed=1)
    ones = np.ones((1, 1000), "float32")
    with tf_internals.keras_training_default(True):
        assert (dropout(ones).numpy() == 0).any()
        assert (dropout(ones, training=False).numpy() == 1).all()  # an explicit value still wins
    assert (dropout(ones).numpy() == 1).all()


def test_v1_iterators_give_their_dataset_only_inside_the_block():
    dataset = tf.data.Dataset.range(3)
    with tf_internals.v1_iterators_give_their_dataset():
        value = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    assert tf_internals.dataset_behind(value) is dataset
    with tf.Graph().as_default():
        assert isinstance(tf.compat.v1.data.make_one_shot_iterator(tf.data.Dataset.range(3)).get_next(), tf.Tensor)


def test_uninstall_puts_tensorflows_own_names_back():
    tf_internals.install()  # as importing compat.estimator after TensorFlow does (idempotent)
    installed = (tf.compat.v1.layers, tf.compat.v1.data.make_one_shot_iterator)
    PATCHES.undo()  # what importing compat.estimator changed (and install(), where a test left it installed)
    try:
        with pytest.raises(AttributeError, match="not available with Keras 3"):
            tf.compat.v1.layers.dense  # noqa: B018
        assert tf.compat.v1.data.make_one_shot_iterator is not installed[1]
        from keras.src.layers import layer as keras_layer

        assert keras_layer.CallContext.__module__ == "keras.src.layers.layer"
    finally:
        tf_internals.install()
    assert tf.compat.v1.layers.dense is not None


def test_a_keras_tuner_oracle_still_keeps_its_retry_queue():
    import keras_tuner

    oracle = keras_tuner.oracles.RandomSearchOracle(max_trials=1)
    oracle._retry_queue.extend(["0", "1"])
    tf_internals.forget_retries(oracle, {"0"})
    assert oracle._retry_queue == ["1"]


def test_op_definitions_say_which_ops_keep_state():
    assert tf_internals.op_def("RandomUniform").is_stateful
    assert not tf_internals.op_def("MatMul").is_stateful
    assert tf_internals.op_def("NoSuchOp") is None


def test_the_saver_files_optimizer_state_beside_its_variable_and_restores_it(tmp_path):
    """The object-based saver's optimizer protocol, which model_to_estimator's checkpoints are named through."""
    weight, slot = tf.Variable([1.0, 2.0]), tf.Variable([3.0, 4.0])

    def slots_of(variable, name):
        return slot if variable is weight and name == "m" else None

    root = tf.train.Checkpoint(w=weight, optimizer=tf_internals.SlotsSavedByName(slots_of, lambda: ["m"]))
    path = root.write(str(tmp_path / "ckpt"))
    assert "w/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE" in dict(tf.train.list_variables(path))
    slot.assign([0.0, 0.0])
    root.restore(path).expect_partial()  # restore() adds a save_counter the written file did not have
    assert slot.numpy().tolist() == [3.0, 4.0]
