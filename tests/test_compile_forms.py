"""model_to_estimator over every form Keras 2's `compile` took, against TF 2.15's run of the same program.

tests/helpers/keras_compile_forms.py compiles one small model per form (metrics and losses by name, as functions,
as objects, per output in lists and dicts, `weighted_metrics`, `loss_weights`, `from_logits`, string optimizers),
trains 6 steps, evaluates and predicts; tests/data/tf215_keras_compile_forms.json is what TF 2.15 printed. The
program runs here three ways: tf.keras as Keras 3, tf.keras as Keras 2 (TF_USE_LEGACY_KERAS=1, as TensorFlow tells
Keras 2 teams to set it) and `import tf_keras` without the variable. Each sets its own Keras, so the file is not
run again in .ci/run's Keras 2 pass.
"""

import json
import os

import numpy as np
import pytest

from conftest import REPO, run_installed

RECORDED = json.load(open(os.path.join(REPO, "tests", "data", "tf215_keras_compile_forms.json")))
# Keras 3's tf.keras and `import tf_keras` need no variable: one process runs both (TensorFlow starts once)
WAYS = {"keras_3_then_import_tf_keras": ({"TF_USE_LEGACY_KERAS": "0"}, ("both",)),
        "tf_use_legacy_keras": ({"TF_USE_LEGACY_KERAS": "1"}, ())}


@pytest.mark.parametrize("way", sorted(WAYS))
def test_every_keras_2_compile_form_gives_tf_2_15s_metric_keys_values_and_predictions(tmp_path, way):
    """Each form trains, evaluates and predicts with TF 2.15's metric keys (`accuracy` resolved from the labels,
    `mse_1` for a weighted twin, an output's name before its metrics, none for weighted metrics alone), its values
    and predictions after 6 steps (1e-4), and a loss's settings kept (Huber's delta); `metrics=["accuracy"]`'s
    export has TF 2.15's signatures."""
    env, args = WAYS[way]
    result = run_installed("keras_compile_forms.py", str(tmp_path), *args, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    printed = json.loads(result.stdout.strip().splitlines()[-1])
    reports = printed if args == ("both",) else {"tf.keras": printed}
    assert len(reports) == len(args) + 1 and len(RECORDED) == 13
    for keras_name, ours in reports.items():
        assert sorted(ours) == sorted(RECORDED), keras_name
        for case, recorded in RECORDED.items():
            where = f"{keras_name}, {case}"
            assert "error" not in ours[case], f"{where}: {ours[case].get('error')}"
            assert sorted(ours[case]["metrics"]) == sorted(recorded["metrics"]), where
            for key, value in recorded["metrics"].items():
                assert ours[case]["metrics"][key] == pytest.approx(value, rel=1e-4, abs=1e-4), f"{where}: {key}"
            assert ours[case]["prediction_keys"] == recorded["prediction_keys"], where
            assert ours[case]["signatures"] == recorded["signatures"], where
            for key, rows in recorded["predictions"].items():
                np.testing.assert_allclose(ours[case]["predictions"][key], rows, atol=1e-4, err_msg=f"{where}: {key}")
