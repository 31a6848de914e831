"""DeepCTR 0.9.4's documented usage, its estimator models (DeepFMEstimator, WDLEstimator) on synthetic click data: one JSON line on stdout.

Runs unchanged under TensorFlow 2.15 (tests/helpers/tf215_libraries.py records it there) and under this
project after `compat.estimator.install()` (tests/test_libraries.py). Written for these tests; it drives the
library as its users did, and copies none of the library's or its examples' code. The JSON holds what a user
compares: metric keys and values, checkpoint variable names and shapes, prediction keys, export signatures.

Usage: python library_deepctr.py --workdir DIR [--steps N] [--out FILE]
"""

import argparse
import json
import os
import sys
import time
import traceback

_REAL_STDOUT = sys.stdout
sys.stdout = sys.stderr  # keep stdout clean for the single JSON line

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

T_START = time.time()

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import tensorflow as tf  # noqa: E402

SPARSE_HASH = {"user_id": 60, "site_id": 40}  # hash bucket sizes
SPARSE_VOCAB = {"device": ["mobile", "desktop", "tablet", "tv"], "hour_bin": ["night", "morning", "noon", "evening"]}
DENSE = ["price", "age_norm", "ctr_hist"]
LABEL = "click"
EMB_DIM = 4


def make_data(n_rows, seed):
    """Synthetic data with a learnable binary label."""
    rng = np.random.RandomState(seed)
    users = rng.randint(0, 50, n_rows)
    sites = rng.randint(0, 30, n_rows)
    device = rng.choice(SPARSE_VOCAB["device"], n_rows, p=[0.5, 0.3, 0.15, 0.05])
    hour = rng.choice(SPARSE_VOCAB["hour_bin"], n_rows)
    price = rng.gamma(2.0, 1.0, n_rows)
    age = rng.normal(0.0, 1.0, n_rows)
    ctr_hist = rng.beta(2.0, 5.0, n_rows)
    # Per-user / per-site latent effects + dense effects + an interaction.
    user_eff = np.random.RandomState(seed + 1).normal(0, 1.0, 50)
    site_eff = np.random.RandomState(seed + 2).normal(0, 0.8, 30)
    dev_eff = {"mobile": 0.6, "desktop": -0.3, "tablet": 0.1, "tv": -0.8}
    logit = (
        user_eff[users]
        + site_eff[sites]
        + np.array([dev_eff[d] for d in device])
        - 0.7 * (price - 2.0)
        + 0.5 * age
        + 3.0 * (ctr_hist - 0.28)
        + 0.8 * ((hour == "evening") & (device == "mobile"))
    )
    prob = 1.0 / (1.0 + np.exp(-logit))
    label = (rng.uniform(size=n_rows) < prob).astype(np.int64)
    df = pd.DataFrame(
        {
            "user_id": ["u%d" % u for u in users],
            "site_id": ["s%d" % s for s in sites],
            "device": device.astype(str),
            "hour_bin": hour.astype(str),
            "price": price.astype(np.float32),
            "age_norm": age.astype(np.float32),
            "ctr_hist": ctr_hist.astype(np.float32),
            LABEL: label,
        }
    )
    return df


def build_columns():
    fc = tf.feature_column
    cat_cols = []
    for name, buckets in SPARSE_HASH.items():
        cat_cols.append(fc.categorical_column_with_hash_bucket(name, buckets))
    for name, vocab in SPARSE_VOCAB.items():
        cat_cols.append(fc.categorical_column_with_vocabulary_list(name, vocab))
    num_cols = [fc.numeric_column(name) for name in DENSE]
    linear_cols = cat_cols + num_cols
    dnn_cols = [fc.embedding_column(c, EMB_DIM) for c in cat_cols] + num_cols
    return linear_cols, dnn_cols


def to_py(v):
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v


def signature_summary(export_dir):
    """Reads saved_model.pb directly (no loading) and summarises signatures."""
    from tensorflow.core.protobuf import saved_model_pb2

    sm = saved_model_pb2.SavedModel()
    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        sm.ParseFromString(f.read())
    out = {"meta_graphs": []}
    for mg in sm.meta_graphs:
        sigs = {}
        for key in sorted(mg.signature_def):
            sd = mg.signature_def[key]

            def _io(m):
                return {
                    k: {
                        "dtype": tf.dtypes.as_dtype(m[k].dtype).name,
                        "shape": (
                            [d.size for d in m[k].tensor_shape.dim] if not m[k].tensor_shape.unknown_rank else None
                        ),
                    }
                    for k in sorted(m)
                }

            sigs[key] = {"method_name": sd.method_name, "inputs": _io(sd.inputs), "outputs": _io(sd.outputs)}
        out["meta_graphs"].append({"tags": sorted(mg.meta_info_def.tags), "signatures": sigs})
    out["assets"] = (
        sorted(os.listdir(os.path.join(export_dir, "assets")))
        if os.path.isdir(os.path.join(export_dir, "assets"))
        else []
    )
    return out


def run_model(name, ctor, linear_cols, dnn_cols, train_df, test_df, feats, workdir, steps, seed, shuffle=True):
    from deepctr.estimator.inputs import input_fn_pandas

    res = {"model": name}
    model_dir = os.path.join(workdir, name)
    session_config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=2, inter_op_parallelism_threads=1)
    config = tf.estimator.RunConfig(
        tf_random_seed=seed, save_checkpoints_steps=steps, log_step_count_steps=100, session_config=session_config
    )
    est = ctor(linear_cols, dnn_cols, dnn_hidden_units=(32, 16), task="binary", model_dir=model_dir, config=config)
    res["estimator_class"] = type(est).__module__ + "." + type(est).__name__

    t0 = time.time()
    train_input = input_fn_pandas(train_df, feats, label=LABEL, batch_size=128, num_epochs=None, shuffle=shuffle)
    est.train(train_input, steps=steps)
    res["train_seconds"] = round(time.time() - t0, 2)

    t0 = time.time()
    eval_input = input_fn_pandas(test_df, feats, label=LABEL, batch_size=256, num_epochs=1, shuffle=False)
    ev = est.evaluate(eval_input)
    res["eval_seconds"] = round(time.time() - t0, 2)
    res["eval_metrics"] = {k: round(float(to_py(v)), 5) for k, v in sorted(ev.items())}

    ckpt = tf.train.latest_checkpoint(model_dir)
    res["checkpoint"] = os.path.basename(ckpt) if ckpt else None
    if ckpt:
        res["checkpoint_variables"] = [[n, list(s)] for n, s in tf.train.list_variables(ckpt)]
        res["num_checkpoint_variables"] = len(res["checkpoint_variables"])

    pred_input = input_fn_pandas(test_df.head(5), feats, label=None, batch_size=5, num_epochs=1, shuffle=False)
    preds = list(est.predict(pred_input))
    res["num_predictions"] = len(preds)
    if preds:
        res["prediction_keys"] = sorted(preds[0].keys())
        res["prediction_shapes"] = {k: list(np.shape(v)) for k, v in sorted(preds[0].items())}
        res["prediction_pred_values"] = [round(float(np.ravel(p["pred"])[0]), 5) for p in preds if "pred" in p]

    try:
        spec = tf.feature_column.make_parse_example_spec(linear_cols + dnn_cols)
        res["parse_spec"] = {k: type(v).__name__ for k, v in sorted(spec.items())}
        receiver = tf.estimator.export.build_parsing_serving_input_receiver_fn(spec)
        export_dir = est.export_saved_model(os.path.join(workdir, name + "_export"), receiver)
        if isinstance(export_dir, bytes):
            export_dir = export_dir.decode()
        res["export"] = signature_summary(export_dir)
    except Exception as e:  # report, do not abort the whole run
        res["export_error"] = "%s: %s" % (type(e).__name__, e)
        traceback.print_exc()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--rows", type=int, default=4000)
    ap.add_argument("--models", default="deepfm,wdl")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-shuffle", action="store_true", help="train in file order (removes input-order randomness)")
    args = ap.parse_args()

    import shutil

    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.WARN)

    summary = {
        "driver": "deepctr_estimator",
        "tf_version": tf.__version__,
        "args": vars(args),
        "python": sys.version.split()[0],
    }
    try:
        import deepctr
        from deepctr.estimator import DeepFMEstimator, WDLEstimator

        summary["deepctr_version"] = deepctr.__version__
        summary["import_seconds"] = round(time.time() - T_START, 2)
        df = make_data(args.rows, args.seed)
        n_train = int(0.8 * len(df))
        train_df, test_df = df.iloc[:n_train], df.iloc[n_train:].reset_index(drop=True)
        summary["data"] = {
            "rows": len(df),
            "train_rows": n_train,
            "test_rows": len(test_df),
            "positive_rate": round(float(df[LABEL].mean()), 4),
        }
        feats = list(SPARSE_HASH) + list(SPARSE_VOCAB) + DENSE
        linear_cols, dnn_cols = build_columns()
        ctors = {"deepfm": DeepFMEstimator, "wdl": WDLEstimator}
        summary["models"] = {}
        for m in args.models.split(","):
            summary["models"][m] = run_model(
                m,
                ctors[m],
                linear_cols,
                dnn_cols,
                train_df,
                test_df,
                feats,
                args.workdir,
                args.steps,
                args.seed,
                shuffle=not args.no_shuffle,
            )
        summary["status"] = "ok"
    except BaseException as e:  # noqa: B902
        summary["status"] = "error"
        summary["error"] = "%s: %s" % (type(e).__name__, str(e)[:2000])
        summary["traceback_tail"] = traceback.format_exc().splitlines()[-12:]
        traceback.print_exc()
    summary["wall_seconds"] = round(time.time() - T_START, 2)
    line = json.dumps(summary, sort_keys=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(line + "\n")
    _REAL_STDOUT.write(line + "\n")
    _REAL_STDOUT.flush()


if __name__ == "__main__":
    main()
