"""A seed -> one small Estimator program, as a JSON-able spec.

Pure Python (no TensorFlow): the runner draws every seed's spec to print the coverage table
without running anything. Each draw goes through `Draw.pick`, which records the dimension and the
value it took, so coverage is counted against `UNIVERSE`, declared once here.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

CANNED = (
    "BaselineClassifier", "BaselineRegressor", "BaselineEstimator",
    "LinearClassifier", "LinearRegressor", "LinearEstimator",
    "DNNClassifier", "DNNRegressor", "DNNEstimator",
    "DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor", "DNNLinearCombinedEstimator",
)  # fmt: skip
CATEGORICAL = ("vocab_list", "vocab_file", "hash_bucket", "identity", "crossed", "weighted_categorical")
DENSE = ("numeric", "numeric_shape", "numeric_normalizer", "bucketized")

# Every dimension the generator draws from, and every value it can take there.
UNIVERSE: dict[str, tuple] = {
    "family": ("canned", "custom", "keras", "tpu", "experimental"),
    "canned_api": ("v2", "v1"),
    "canned_class": CANNED,
    "head": ("binary", "multiclass", "regression", "multi_label", "multi_head", "poisson", "logistic"),
    "n_classes": (2, 3),
    "label_vocabulary": (False, True),
    "weight_column": (False, True),
    "label_dimension": (1, 2),
    "loss_reduction": ("default", "SUM", "SUM_OVER_BATCH_SIZE", "MEAN", "SUM_BY_NONZERO_WEIGHTS"),
    "optimizer_form": ("default", "name", "instance", "legacy_instance", "callable", "tf1", "schedule"),
    "optimizer_name": ("Adagrad", "Adam", "Ftrl", "RMSProp", "SGD"),
    "column": DENSE + CATEGORICAL,
    "dnn_wrap": ("indicator", "embedding_mean", "embedding_sum", "embedding_sqrtn", "shared_embedding"),
    "hidden_units": ((4,), (4, 3)),
    "dropout": (None, 0.3),
    "batch_norm": (False, True),
    "sparse_combiner": ("sum", "mean", "sqrtn"),
    "input": ("dataset", "tuple", "numpy", "pandas", "generator", "params"),
    "shuffle": (False, True),
    "save_checkpoints_steps": (None, 2, 3),
    "keep_checkpoint_max": (None, 1, 2),
    "save_summary_steps": (1, 2, 100),
    "log_step_count_steps": (1, 100),
    "hook": ("recording", "stop_request", "op_running", "logging_tensor", "listener", "stop_at_step",
             "eval_hook", "predict_hook"),
    "op": ("train_steps", "train_max_steps", "train_twice", "evaluate", "evaluate_named", "evaluate_checkpoint",
           "predict", "predict_keys", "predict_batched", "export_parsing", "export_raw", "warm_start",
           "warm_start_settings", "train_and_evaluate", "continue_from_folder"),
    "custom_body": ("layers", "get_variable", "keras_layers", "batch_norm", "dropout"),
    "custom_input_layer": ("input_layer", "stacked"),
    "custom_initializer": ("default", "seeded"),
    "custom_optimizer": ("GradientDescent", "Adam", "Adagrad", "Momentum", "RMSProp", "decayed"),
    "custom_metrics": ("v1_metrics", "keras_metric_object", "none"),
    "custom_extra": ("summary", "scaffold_saver", "training_hook", "evaluation_hook", "export_outputs"),
    "keras_model": ("sequential", "functional", "two_outputs"),
    "keras_loss": ("name", "object", "function", "huber_delta"),
    "keras_optimizer": ("name", "instance"),
    "keras_metrics": ("none", "accuracy", "mse", "object", "weighted"),
    "keras_loss_weights": (False, True),
    "keras_start": ("set_weights", "seeded_initializers"),
    "experimental": ("rnn", "kmeans", "sdca"),
    "strategy": (None, "mirrored"),
    "invalid": (None, "n_classes_1", "label_dimension_0", "steps_zero", "steps_and_max_steps", "eval_steps_zero",
                "bad_predict_key", "no_receiver", "reduction_none", "bad_optimizer_name", "missing_feature",
                "model_dir_conflict", "evaluate_untrained", "checkpoint_both", "warm_start_missing"),
}  # fmt: skip


class Draw:
    """The seed's random choices, each recorded under its dimension for the coverage table."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.covered: dict[str, list] = {}

    def pick(self, dimension: str, among: tuple | list | None = None, weights: list[float] | None = None) -> Any:
        options = list(UNIVERSE[dimension] if among is None else among)
        value = self.rng.choices(options, weights=weights)[0]
        self.record(dimension, value)
        return value

    def record(self, dimension: str, value: Any) -> None:
        assert value in UNIVERSE[dimension], (dimension, value)
        self.covered.setdefault(dimension, []).append(jsonable(value))

    def chance(self, p: float) -> bool:
        return self.rng.random() < p


def jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def program(seed: int) -> dict:
    """The spec of seed `seed`: what the program builds, and the operations it runs in order."""
    draw = Draw(seed)
    family = draw.pick("family", weights=[50, 22, 14, 6, 8])
    spec: dict[str, Any] = {"seed": seed, "family": family, "data_seed": draw.rng.randrange(1 << 16)}
    {"canned": _canned, "custom": _custom, "keras": _keras, "tpu": _tpu, "experimental": _experimental}[family](
        draw, spec
    )
    spec["config"] = {
        key: draw.pick(key)
        for key in ("save_checkpoints_steps", "keep_checkpoint_max", "save_summary_steps", "log_step_count_steps")
    }
    spec["tf_random_seed"] = draw.rng.randrange(1, 1000)
    if family in ("canned", "custom") and spec.get("api", "v2") == "v2":
        spec["strategy"] = draw.pick("strategy", weights=[94, 6])
    # model_to_estimator's engine refuses SessionRunHooks (documented): its programs are drawn without them
    spec["hooks"] = sorted({draw.pick("hook") for _ in range(draw.rng.randrange(0, 3))}) if family != "keras" else []
    spec["ops"] = _operations(draw, spec)
    weights = [len(UNIVERSE["invalid"]) * 9] + [1] * (len(UNIVERSE["invalid"]) - 1)  # one program in ten
    spec["invalid"] = draw.pick("invalid", weights=weights)
    spec["covered"] = draw.covered
    return spec


def _head(draw: Draw, spec: dict, kind: str) -> None:
    if kind == "Classifier":
        spec["head"] = draw.pick("head", ["binary", "multiclass"])
    elif kind == "Regressor":
        spec["head"] = draw.pick("head", ["regression"])
    else:
        spec["head"] = draw.pick("head", weights=[3, 3, 3, 2, 2, 1, 1])
    if spec["head"] == "multiclass":
        spec["n_classes"] = draw.pick("n_classes", [3])
    elif spec["head"] in ("binary", "multi_label"):
        spec["n_classes"] = draw.pick("n_classes", [2]) if spec["head"] == "binary" else 3
    if spec["head"] in ("binary", "multiclass"):
        spec["label_vocabulary"] = draw.pick("label_vocabulary", weights=[3, 1])
    if spec["head"] == "regression":
        spec["label_dimension"] = draw.pick("label_dimension")
    spec["weight_column"] = draw.pick("weight_column", weights=[3, 1]) if spec["head"] != "multi_head" else False
    reductions = ["default", "SUM", "SUM_OVER_BATCH_SIZE"]
    if spec.get("api") == "v1":
        reductions += ["MEAN", "SUM_BY_NONZERO_WEIGHTS"]
    spec["loss_reduction"] = draw.pick("loss_reduction", reductions, weights=[4] + [1] * (len(reductions) - 1))


def _optimizer(draw: Draw, api: str) -> dict:
    forms = ["default", "name", "instance", "legacy_instance", "callable", "schedule"]
    if api == "v1":
        forms = ["default", "name", "callable", "tf1", "schedule"]
    form = draw.pick("optimizer_form", forms, weights=[3, 2, 1, 2, 2, 1] if api == "v2" else None)
    return {"form": form, "name": draw.pick("optimizer_name"), "lr": draw.rng.choice([0.05, 0.1, 0.3])}


def _columns(draw: Draw, spec: dict, dense_only: bool) -> list[dict]:
    kinds = sorted({draw.pick("column") for _ in range(draw.rng.randrange(1, 4))})
    columns = []
    if spec["input"]["kind"] == "pandas" and "numeric_shape" in kinds:
        kinds.remove("numeric_shape")  # a DataFrame's columns are scalars
        kinds = sorted({*kinds, "numeric"})
    for kind in kinds:
        column: dict[str, Any] = {"kind": kind}
        if kind in CATEGORICAL and dense_only:
            column["wrap"] = draw.pick("dnn_wrap", weights=[4, 2, 2, 2, 1])
        columns.append(column)
    if not any(c["kind"] in DENSE for c in columns) and draw.chance(0.5):
        dense = [kind for kind in DENSE if kind != "numeric_shape" or spec["input"]["kind"] != "pandas"]
        columns.append({"kind": draw.pick("column", dense)})
    return columns


def _canned(draw: Draw, spec: dict) -> None:
    spec["api"] = draw.pick("canned_api", weights=[2, 1])
    name = draw.pick("canned_class")
    spec["class"] = name
    kind = next(k for k in ("Classifier", "Regressor", "Estimator") if name.endswith(k))
    _head(draw, spec, kind)
    spec["input"] = _input(draw, spec)
    if name.startswith("Linear") or name.startswith("DNNLinear"):
        spec["linear_columns"] = _columns(draw, spec, dense_only=False)
        spec["sparse_combiner"] = draw.pick("sparse_combiner", weights=[3, 1, 1])
    if name.startswith("DNN"):
        spec["dnn_columns"] = _columns(draw, spec, dense_only=True)
        spec["hidden_units"] = draw.pick("hidden_units")
        spec["dropout"] = draw.pick("dropout", weights=[3, 1])
        spec["activation"] = draw.rng.choice(["relu", "tanh"])
        if spec["api"] == "v2":
            spec["batch_norm"] = draw.pick("batch_norm", weights=[4, 1])
    spec["optimizer"] = _optimizer(draw, spec["api"])
    if name.startswith("DNNLinear"):
        spec["linear_optimizer"] = _optimizer(draw, spec["api"])


def _input(draw: Draw, spec: dict) -> dict:
    kinds = ["dataset", "tuple", "numpy", "pandas", "generator", "params"]
    weights = [4, 2, 2, 1, 1, 1]
    if spec["head"] in ("multi_label", "multi_head") or spec.get("label_dimension", 1) > 1:
        weights[3] = 0  # a DataFrame's labels are one column per head output: not what these heads take
    kind = draw.pick("input", kinds, weights=weights)
    return {"kind": kind, "batch": draw.rng.choice([4, 6, 8]), "shuffle": draw.pick("shuffle", weights=[3, 1])}


def _custom(draw: Draw, spec: dict) -> None:
    spec["head"] = draw.pick("head", ["binary", "multiclass", "regression"])
    spec["n_classes"] = {"binary": 2, "multiclass": 3}.get(spec["head"], 1)
    spec["body"] = draw.pick("custom_body")
    spec["input"] = _input(draw, spec)
    spec["input_layer"] = draw.pick("custom_input_layer")
    spec["initializer"] = draw.pick("custom_initializer")
    spec["columns"] = _columns(draw, spec, dense_only=True) if spec["input_layer"] == "input_layer" else []
    spec["custom_optimizer"] = draw.pick("custom_optimizer")
    spec["lr"] = draw.rng.choice([0.05, 0.1])
    spec["metrics"] = draw.pick("custom_metrics")
    spec["extras"] = sorted({draw.pick("custom_extra") for _ in range(draw.rng.randrange(0, 3))})


def _keras(draw: Draw, spec: dict) -> None:
    spec["model"] = draw.pick("keras_model")
    spec["head"] = draw.pick("head", ["binary", "multiclass", "regression"])
    spec["n_classes"] = {"binary": 2, "multiclass": 3}.get(spec["head"], 1)
    spec["loss"] = draw.pick("keras_loss")
    spec["keras_optimizer"] = draw.pick("keras_optimizer")
    spec["optimizer_name"] = draw.pick("optimizer_name", ["Adam", "SGD", "RMSProp", "Adagrad"])
    spec["keras_metrics"] = draw.pick("keras_metrics")
    spec["loss_weights"] = draw.pick("keras_loss_weights") if spec["model"] == "two_outputs" else False
    spec["start"] = draw.pick("keras_start")
    spec["input"] = {"kind": "dataset", "batch": draw.rng.choice([4, 8]), "shuffle": False}


def _tpu(draw: Draw, spec: dict) -> None:
    spec["head"] = draw.pick("head", ["binary", "regression"])
    spec["n_classes"] = {"binary": 2}.get(spec["head"], 1)
    spec["custom_optimizer"] = draw.pick("custom_optimizer", ["GradientDescent", "Adam", "Adagrad"])
    spec["lr"] = 0.1
    spec["input"] = {"kind": "params", "batch": 8, "shuffle": False}


def _experimental(draw: Draw, spec: dict) -> None:
    spec["experiment"] = draw.pick("experimental")
    spec["head"] = "binary" if spec["experiment"] != "kmeans" else "none"
    spec["n_classes"] = 2
    spec["input"] = {"kind": "dataset", "batch": 8, "shuffle": False}


def _operations(draw: Draw, spec: dict) -> list[dict]:
    first = draw.pick("op", ["train_steps", "train_max_steps", "train_twice", "train_and_evaluate"], weights=[5, 2, 2, 1])
    ops: list[dict] = []
    if first == "train_steps":
        ops.append({"op": "train", "steps": draw.rng.randrange(2, 6)})
    elif first == "train_max_steps":
        ops.append({"op": "train", "max_steps": draw.rng.randrange(2, 6)})
    elif first == "train_twice":
        ops.append({"op": "train", "steps": draw.rng.randrange(2, 4)})
        second = {"steps": draw.rng.randrange(1, 4)} if draw.chance(0.5) else {"max_steps": draw.rng.randrange(2, 7)}
        ops.append({"op": "train", **second})
    else:
        ops.append({"op": "train_and_evaluate", "max_steps": draw.rng.randrange(3, 6), "exporter": draw.chance(0.5)})
    later = ["evaluate", "evaluate_named", "evaluate_checkpoint", "predict", "predict_keys", "predict_batched",
             "export_parsing", "export_raw", "warm_start", "warm_start_settings", "continue_from_folder"]  # fmt: skip
    chosen = [draw.pick("op", later) for _ in range(draw.rng.randrange(1, 5))]
    for name in sorted(set(chosen), key=later.index):
        op: dict[str, Any] = {"op": name}
        if name.startswith("evaluate"):
            op["steps"] = draw.rng.choice([1, 2, None])
        ops.append(op)
    return ops


def digest(spec: dict) -> str:
    """A short fingerprint of a spec: a recorded result belongs to the program this generator draws now."""
    return hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
