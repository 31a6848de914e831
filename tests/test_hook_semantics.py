"""SessionRunHooks, listeners and scaffolds behave as on TF 2.15: an op runs when the program runs it.

One program written for TF 2.15's tf.estimator (tests/helpers/hook_semantics.py) runs after
compat.estimator.install(); each test compares one behaviour with TF 2.15's run of the same program
(tests/data/tf215_hook_semantics.json, recorded with TF 2.15's interpreter).
"""

import json
import os

import numpy as np
import pytest

from conftest import REPO, run_installed


@pytest.fixture(scope="module")
def observed(tmp_path_factory):
    work = tmp_path_factory.mktemp("hooks")
    result = run_installed("hook_semantics.py", str(work))
    assert result.returncode == 0, result.stderr[-3000:]
    ours = json.loads(result.stdout.strip().splitlines()[-1])
    recorded = json.load(open(os.path.join(REPO, "tests", "data", "tf215_hook_semantics.json")))
    return ours, recorded


def test_an_op_a_hook_runs_through_its_session_runs_once_a_step(observed):
    """The train_op only steps the global step; a hook runs the real update and a counter itself. TF 2.15:
    the counter reads 10 after 10 steps and Adam's beta1_power shows 10 updates (0.9 ** 11)."""
    ours, recorded = observed
    assert recorded["counter"]["counter"] == 10.0
    assert ours["counter"] == recorded["counter"]


def test_a_scaffolds_init_fn_runs_its_op_once_and_not_on_restore(observed):
    ours, recorded = observed
    assert recorded["counter"]["bumped_by_init_fn"] == 100.0
    assert recorded["counter_resumed"] == {"bumped_by_init_fn": 100.0, "counter": 15.0, "global_step": 15}
    assert ours["counter_resumed"] == recorded["counter_resumed"]


def test_a_gan_trained_in_turn_by_a_hook_matches_tf215s_checkpoint(observed):
    """Two sub-networks, two Adam optimizers, each stepped once a step by a sequential hook: every variable of
    the checkpoint (weights, both optimizers' slots and powers, the global step) as TF 2.15 wrote it."""
    ours, recorded = observed
    assert sorted(ours["gan"]) == sorted(recorded["gan"])
    assert ours["gan"]["global_step"] == 10
    for name, value in recorded["gan"].items():
        np.testing.assert_allclose(ours["gan"][name], value, rtol=1e-4, atol=1e-6, err_msg=name)


def test_training_hooks_listeners_and_chief_hooks_are_called_in_tf215s_order(observed):
    """begin, after_create_session, before_run/after_run around each step, end; chief-only hooks first, then the
    caller's, then the model_fn's; SessionRunArgs fetches and feeds; request_stop after the step that asks; the
    listener around each save and at the end."""
    ours, recorded = observed
    assert "user_b.request_stop" in recorded["train_calls"]
    assert any("probe=6.0" in call for call in recorded["train_calls"])
    assert ours["train_calls"] == recorded["train_calls"]
    assert ours["train_again_calls"] == recorded["train_again_calls"]


def test_evaluation_and_prediction_hooks_are_called_as_tf215_called_them(observed):
    ours, recorded = observed
    assert ours["eval_calls"] == recorded["eval_calls"]
    assert ours["eval_global_step"] == recorded["eval_global_step"]
    assert ours["predict_calls"] == recorded["predict_calls"]
    assert ours["predictions"] == recorded["predictions"] == 12


def test_model_to_estimators_hooks_are_called_as_tf215_called_them(observed):
    """The Keras engine has no Session; its hooks see the same calls and global steps, in training and in
    evaluation (where the step stays the checkpoint's)."""
    ours, recorded = observed
    assert ours["keras_train_calls"] == recorded["keras_train_calls"]
    assert ours["keras_eval_calls"] == recorded["keras_eval_calls"]
