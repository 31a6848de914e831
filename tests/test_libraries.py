"""Libraries built on tf.estimator run unchanged after compat.estimator.install(), as under TensorFlow 2.15.

Each library is installed from the package index as its users install it (tests/helpers/libraries.py) and
driven by a program of ours; its run here is compared with TF 2.15's run of the same program
(tests/data/tf215_libraries.json): metric keys, checkpoint variable names and shapes, prediction keys and
export signatures equal, accuracy-like figures within 0.10. Skipped, with the reason, only when the package
index cannot be reached.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "helpers"))

import libraries  # noqa: E402
from conftest import sets_its_keras  # noqa: E402

TF215 = json.load(open(os.path.join(os.path.dirname(__file__), "data", "tf215_libraries.json")))
pytestmark = pytest.mark.slow


def _run(name: str, tmp_path) -> dict:
    try:
        result = libraries.run_driver(name, sys.executable, str(tmp_path), with_compat=True)
    except libraries.IndexUnreachable as error:
        pytest.skip(f"the package index is unreachable: {error}")
    assert result["status"] == "ok", result.get("error") or result.get("traceback_tail")
    return result


@pytest.fixture(scope="module")
def deepctr(tmp_path_factory) -> dict:
    return _run("deepctr", tmp_path_factory.mktemp("deepctr"))


def _variables(result: dict) -> dict:
    return {name: shape for name, shape in result["checkpoint_variables"]}


def _close(ours: dict, theirs: dict, keys: list[str], within: float = 0.10) -> None:
    for key in keys:
        assert abs(ours[key] - theirs[key]) <= within, (key, ours[key], theirs[key])


@pytest.mark.parametrize("model", ["deepfm", "wdl"])
def test_deepctr_estimators_train_evaluate_predict_and_export_as_under_tf_2_15(model, deepctr):
    ours = deepctr["models"][model]
    theirs = TF215["deepctr"]["models"][model]
    assert ours["estimator_class"] == "compat.estimator.estimator.Estimator"
    assert sorted(ours["eval_metrics"]) == sorted(theirs["eval_metrics"])
    _close(ours["eval_metrics"], theirs["eval_metrics"], ["AUC", "LogLoss", "label/mean", "prediction/mean"])
    assert _variables(ours) == _variables(theirs)
    assert ours["prediction_keys"] == theirs["prediction_keys"]
    assert ours["prediction_shapes"] == theirs["prediction_shapes"]
    assert ours["export"]["meta_graphs"] == theirs["export"]["meta_graphs"]


def test_tf_ranking_libsvm_flow_trains_evaluates_exports_and_predicts_as_under_tf_2_15(tmp_path):
    ours, theirs = _run("tf_ranking", tmp_path), TF215["tf_ranking"]
    for split in ("vali_metrics", "test_metrics"):
        assert sorted(ours[split]) == sorted(theirs[split])
        ndcg = [key for key in theirs[split] if key.startswith("metric/ndcg")]
        _close(ours[split], theirs[split], [*ndcg, "metric/ordered_pair_accuracy", "metric/mrr"])
    assert _variables(ours) == _variables(theirs)
    assert ours["export"] == theirs["export"] and ours["export_versions"] >= 1
    for key in ("num_rows", "row_type", "row_shape"):
        assert ours["predict"][key] == theirs["predict"][key]


def test_spleeter_trains_separates_and_exports_with_tf_2_15s_files_and_names(tmp_path):
    ours, theirs = _run("spleeter", tmp_path), TF215["spleeter"]
    assert ours["checkpoint_variables"] == theirs["checkpoint_variables"]
    assert ours["model_dir_files"] == theirs["model_dir_files"]
    assert sorted(ours["final_eval"]) == sorted(theirs["final_eval"])
    assert ours["train_event_tags"] == theirs["train_event_tags"]
    assert ours["driver_extra_export"] == theirs["driver_extra_export"]
    separated, reference = ours["separation"], theirs["separation"]
    assert separated["output_files"] == reference["output_files"]
    assert separated["output_shape_vocals"] == reference["output_shape_vocals"]
    # Spleeter's U-Net calls Keras layers without `training=`: here batch norm and dropout train in TRAIN
    # mode (docs/estimator.md), where TF 2.15 ran them frozen. The model separates at least as well as
    # TF 2.15's (lower loss, higher SNR), not to the same figures.
    for stem in ("vocals", "accompaniment"):
        assert separated[f"snr_db_{stem}"] >= reference[f"snr_db_{stem}"] - 0.10, stem
        assert separated[f"snr_db_{stem}"] > separated[f"snr_db_mixture_as_{stem}_baseline"] + 1.0, stem
    assert ours["final_eval"]["loss"] <= theirs["final_eval"]["loss"] + 0.10


@sets_its_keras
@pytest.mark.parametrize("keras", ["keras_3", "legacy_keras"])
def test_tf_privacy_heads_and_model_fns_train_as_under_tf_2_15(tmp_path, keras):
    """TF Privacy subclasses TF 2.15's heads (a loss per example, its own `_create_tpu_estimator_spec`, TF 1.x's
    `create_loss` and `_eval_metric_ops`) and calls its private model_fns: its v1 DNN (2 and 3 classes) and
    linear classifiers match TF 2.15 within 1e-3 in every metric, with its variables, also trained as its users
    train them (loss_reduction=NONE, its DP optimizer) and exported with TF 2.15's signatures. Its TF 2 DNN reaches
    `tf.keras.__internal__` (Keras 2): it runs, and matches, under TF_USE_LEGACY_KERAS=1."""
    env = {"TF_USE_LEGACY_KERAS": "1"} if keras == "legacy_keras" else {}
    try:
        ours = libraries.run_driver("tf_privacy", sys.executable, str(tmp_path), with_compat=True, extra_env=env)
    except libraries.IndexUnreachable as error:
        pytest.skip(f"the package index is unreachable: {error}")
    assert ours["status"] == "ok", ours.get("error") or ours.get("traceback_tail")
    theirs = TF215["tf_privacy"]["models"]
    compared = [name for name in theirs if name.startswith("v1_") or keras == "legacy_keras"]
    assert len(compared) == (6 if keras == "legacy_keras" else 5)
    for name in compared:
        mine, recorded = ours["models"][name], theirs[name]
        assert mine["variables"] == recorded["variables"], name
        assert mine["prediction_keys"] == recorded["prediction_keys"], name
        assert sorted(mine["metrics"]) == sorted(recorded["metrics"]), name
        _close(mine["metrics"], recorded["metrics"], list(recorded["metrics"]), within=1e-3)
        assert mine.get("signatures") == recorded.get("signatures"), name  # the DP models' exports
