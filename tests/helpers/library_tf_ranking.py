"""TF-Ranking 0.5.5's documented usage, its estimator flow for LibSVM data (groupwise ranking fn, ranking head, train_and_evaluate with a LatestExporter) on a synthetic learning-to-rank set: one JSON line on stdout.

Runs unchanged under TensorFlow 2.15 (tests/helpers/tf215_libraries.py records it there) and under this
project after `compat.estimator.install()` (tests/test_libraries.py). Written for these tests; it drives the
library as its users did, and copies none of the library's or its examples' code. The JSON holds what a user
compares: metric keys and values, checkpoint variable names and shapes, prediction keys, export signatures.

Usage: python library_tf_ranking.py --workdir DIR [--steps N] [--out FILE]
"""

import argparse
import json
import os
import sys
import time
import traceback

_REAL_STDOUT = sys.stdout
sys.stdout = sys.stderr  # keep stdout for the single JSON line

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
T_START = time.time()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

NUM_FEATURES = 6
LIST_SIZE = 12
HIDDEN = (32, 16)
LOSS = "pairwise_logistic_loss"
FEATURE_NAMES = [str(i + 1) for i in range(NUM_FEATURES)]


# ----------------------------------------------------------------- data ----
def write_synthetic_libsvm(path, num_queries, seed, qid_offset):
    """Writes '<grade> qid:<q> <fid>:<val> ...' lines; zero features omitted."""
    rng = np.random.RandomState(seed)
    w = np.array([1.2, -0.8, 0.6, 0.0, 0.9, -0.4])  # feature 4 is noise
    n_docs_total = 0
    with open(path, "w") as f:
        for q in range(num_queries):
            n_docs = rng.randint(3, LIST_SIZE + 4)  # some lists exceed LIST_SIZE
            q_shift = rng.normal(0, 0.5)
            for _ in range(n_docs):
                x = rng.uniform(0, 1, NUM_FEATURES)
                x[rng.uniform(size=NUM_FEATURES) < 0.2] = 0.0  # LibSVM sparsity
                score = x.dot(w) + 0.5 * x[0] * x[4] + q_shift + rng.normal(0, 0.45)
                grade = int(np.clip(np.floor((score + 0.6) * 2.2), 0, 4))
                kv = " ".join("%d:%.4f" % (i + 1, v) for i, v in enumerate(x) if v)
                f.write("%d qid:%d %s\n" % (grade, qid_offset + q, kv))
                n_docs_total += 1
    return n_docs_total


def read_libsvm(path, list_size):
    """Returns ({fid: float32[Q, list_size, 1]}, float32[Q, list_size], stats)."""
    order, docs = [], {}
    with open(path) as f:
        for line in f:
            body = line.split("#", 1)[0].split()
            if len(body) < 2:
                continue
            grade, qid = float(body[0]), body[1].split(":", 1)[1]
            feats = dict((k, float(v)) for k, v in (t.split(":") for t in body[2:]))
            if qid not in docs:
                docs[qid] = []
                order.append(qid)
            docs[qid].append((grade, feats))
    q = len(order)
    features = {n: np.zeros((q, list_size, 1), np.float32) for n in FEATURE_NAMES}
    labels = np.full((q, list_size), -1.0, np.float32)
    dropped = 0
    for qi, qid in enumerate(order):
        for di, (grade, feats) in enumerate(docs[qid]):
            if di >= list_size:
                dropped += 1
                continue
            labels[qi, di] = grade
            for k, v in feats.items():
                features[k][qi, di, 0] = v
    stats = {"queries": q, "docs": sum(len(v) for v in docs.values()), "docs_dropped_over_list_size": dropped}
    return features, labels, stats


# --------------------------------------------------------------- inputs ----
class FeedIteratorHook(tf.estimator.SessionRunHook):
    """Initialises a placeholder-fed iterator once the session exists."""

    def __init__(self):
        self.init_fn = None

    def after_create_session(self, session, coord):
        del coord
        self.init_fn(session)


def make_feed_input_fn(features, labels, batch_size=None, repeat_shuffle=False, seed=0):
    hook = FeedIteratorHook()

    def input_fn():
        ph_x = {k: tf.compat.v1.placeholder(v.dtype, v.shape) for k, v in features.items()}
        ph_y = tf.compat.v1.placeholder(labels.dtype, labels.shape)
        if repeat_shuffle:
            ds = tf.data.Dataset.from_tensor_slices((ph_x, ph_y))
            ds = ds.shuffle(500, seed=seed).repeat().batch(batch_size)
        else:  # whole set as one batch
            ds = tf.data.Dataset.from_tensors((ph_x, ph_y))
        it = tf.compat.v1.data.make_initializable_iterator(ds)
        feed = {ph_y: labels}
        feed.update({ph_x[k]: features[k] for k in ph_x})
        hook.init_fn = lambda sess: sess.run(it.initializer, feed_dict=feed)
        return it.get_next()

    return input_fn, hook


def make_predict_input_fn(features, query_index, n_docs):
    """Pointwise predict input (as the exported tf.Example path sees it)."""

    def input_fn():
        flat = {k: tf.constant(v[query_index, :n_docs, :]) for k, v in features.items()}
        return tf.data.Dataset.from_tensors(flat)

    return input_fn


# ---------------------------------------------------------------- model ----
def build_estimator(tfr, model_dir, seed, lr):
    columns = {n: tf.feature_column.numeric_column(n, shape=(1,), default_value=0.0) for n in FEATURE_NAMES}

    def transform_fn(features, mode):
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tfr.feature.encode_pointwise_features(
                features=features,
                context_feature_columns=None,
                example_feature_columns=columns,
                mode=mode,
                scope="transform_layer",
            )
        return tfr.feature.encode_listwise_features(
            features=features,
            context_feature_columns=None,
            example_feature_columns=columns,
            mode=mode,
            scope="transform_layer",
        )

    def group_score_fn(context_features, group_features, mode, params, config):
        del context_features, params, config
        training = mode == tf.estimator.ModeKeys.TRAIN
        x = tf.concat([tf.compat.v1.layers.flatten(group_features[n]) for n in sorted(columns)], axis=1)
        x = tf.compat.v1.layers.batch_normalization(x, training=training)
        for width in HIDDEN:
            x = tf.compat.v1.layers.dense(x, units=width)
            x = tf.compat.v1.layers.batch_normalization(x, training=training)
            x = tf.nn.relu(x)
        x = tf.compat.v1.layers.dropout(x, rate=0.1, training=training)
        return tf.compat.v1.layers.dense(x, units=1)  # group_size == 1

    key = tfr.metrics.RankingMetricKey
    metric_fns = {
        "metric/arp": tfr.metrics.make_ranking_metric_fn(key.ARP),
        "metric/ordered_pair_accuracy": tfr.metrics.make_ranking_metric_fn(key.ORDERED_PAIR_ACCURACY),
        "metric/mrr": tfr.metrics.make_ranking_metric_fn(key.MRR),
    }
    for k in (1, 3, 5, 10):
        metric_fns["metric/ndcg@%d" % k] = tfr.metrics.make_ranking_metric_fn(key.NDCG, topn=k)

    optimizer = tf.compat.v1.train.AdagradOptimizer(learning_rate=lr)

    def train_op_fn(loss):
        update_ops = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
        step = optimizer.minimize(loss=loss, global_step=tf.compat.v1.train.get_global_step())
        return tf.group([step, update_ops])

    head = tfr.head.create_ranking_head(
        loss_fn=tfr.losses.make_loss_fn(LOSS), eval_metric_fns=metric_fns, train_op_fn=train_op_fn
    )
    model_fn = tfr.model.make_groupwise_ranking_fn(
        group_score_fn=group_score_fn, group_size=1, transform_fn=transform_fn, ranking_head=head
    )
    session_config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=2, inter_op_parallelism_threads=1)
    config = tf.estimator.RunConfig(
        model_dir=model_dir,
        tf_random_seed=seed,
        save_checkpoints_steps=100,
        log_step_count_steps=100,
        session_config=session_config,
    )
    est = tf.estimator.Estimator(model_fn=model_fn, config=config)
    serving_fn = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        tf.feature_column.make_parse_example_spec(columns.values())
    )
    return est, serving_fn


# -------------------------------------------------------------- helpers ----
def rnd(v):
    v = np.asarray(v)
    return round(float(v), 5) if v.ndim == 0 else np.round(v, 5).tolist()


def signature_summary(export_dir):
    from tensorflow.core.protobuf import saved_model_pb2

    sm = saved_model_pb2.SavedModel()
    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        sm.ParseFromString(f.read())

    def _io(m):
        return {
            k: {
                "dtype": tf.dtypes.as_dtype(m[k].dtype).name,
                "shape": (None if m[k].tensor_shape.unknown_rank else [d.size for d in m[k].tensor_shape.dim]),
            }
            for k in sorted(m)
        }

    return [
        {
            "tags": sorted(mg.meta_info_def.tags),
            "signatures": {
                k: {
                    "method_name": mg.signature_def[k].method_name,
                    "inputs": _io(mg.signature_def[k].inputs),
                    "outputs": _io(mg.signature_def[k].outputs),
                }
                for k in sorted(mg.signature_def)
            },
        }
        for mg in sm.meta_graphs
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch_size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import shutil

    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.WARN)
    res = {
        "driver": "tfr_libsvm_estimator",
        "tf_version": tf.__version__,
        "python": sys.version.split()[0],
        "args": vars(args),
        "loss": LOSS,
        "list_size": LIST_SIZE,
        "num_features": NUM_FEATURES,
    }
    stage = "import"
    try:
        import tensorflow_ranking as tfr

        res["tfr_version"] = tfr.__version__
        res["import_seconds"] = round(time.time() - T_START, 2)

        stage = "data"
        data = {}
        for i, (split, nq) in enumerate((("train", 240), ("vali", 40), ("test", 40))):
            path = os.path.join(args.workdir, split + ".txt")
            write_synthetic_libsvm(path, nq, args.seed + i, 1000 * (i + 1))
            x, y, stats = read_libsvm(path, LIST_SIZE)
            valid = y[y >= 0]
            stats["grade_histogram"] = np.bincount(valid.astype(int), minlength=5).tolist()
            data[split] = (x, y)
            res.setdefault("data", {})[split] = stats

        stage = "build"
        model_dir = os.path.join(args.workdir, "model")
        est, serving_fn = build_estimator(tfr, model_dir, args.seed, args.lr)
        res["estimator_class"] = type(est).__module__ + "." + type(est).__name__
        train_fn, train_hook = make_feed_input_fn(
            *data["train"], batch_size=args.batch_size, repeat_shuffle=True, seed=args.seed
        )
        vali_fn, vali_hook = make_feed_input_fn(*data["vali"])
        test_fn, test_hook = make_feed_input_fn(*data["test"])
        train_spec = tf.estimator.TrainSpec(input_fn=train_fn, hooks=[train_hook], max_steps=args.steps)
        eval_spec = tf.estimator.EvalSpec(
            input_fn=vali_fn,
            hooks=[vali_hook],
            steps=1,
            exporters=tf.estimator.LatestExporter("latest_exporter", serving_input_receiver_fn=serving_fn),
            start_delay_secs=0,
            throttle_secs=30,
        )

        stage = "train_and_evaluate"
        t0 = time.time()
        tae = tf.estimator.train_and_evaluate(est, train_spec, eval_spec)
        res["train_and_evaluate_seconds"] = round(time.time() - t0, 2)
        if isinstance(tae, tuple) and tae and isinstance(tae[0], dict):
            res["vali_metrics"] = {k: rnd(v) for k, v in sorted(tae[0].items())}
            res["train_and_evaluate_export_results"] = [
                os.path.relpath(p.decode() if isinstance(p, bytes) else p, args.workdir) for p in (tae[1] or [])
            ]
        else:
            res["train_and_evaluate_return"] = repr(tae)[:200]

        stage = "evaluate_test"
        t0 = time.time()
        ev = est.evaluate(input_fn=test_fn, hooks=[test_hook])
        res["eval_seconds"] = round(time.time() - t0, 2)
        res["test_metrics"] = {k: rnd(v) for k, v in sorted(ev.items())}

        stage = "checkpoint"
        ckpt = tf.train.latest_checkpoint(model_dir)
        res["checkpoint"] = os.path.basename(ckpt) if ckpt else None
        res["checkpoint_variables"] = [[n, list(s)] for n, s in tf.train.list_variables(ckpt)]

        stage = "predict"
        y_test = data["test"][1]
        qi = next((i for i in range(len(y_test)) if len(set(y_test[i][y_test[i] >= 0])) >= 3), 0)
        n_docs = int((y_test[qi] >= 0).sum())
        preds = list(est.predict(make_predict_input_fn(data["test"][0], qi, n_docs)))
        res["predict"] = {
            "num_rows": len(preds),
            "row_type": type(preds[0]).__name__ if preds else None,
            "row_keys": sorted(preds[0]) if preds and isinstance(preds[0], dict) else None,
            "row_shape": list(np.shape(preds[0])) if preds and not isinstance(preds[0], dict) else None,
            "query_index": qi,
            "first_query_labels": y_test[qi, :n_docs].tolist(),
            "first_query_scores": [rnd(np.ravel(p)[0]) for p in preds]
            if preds and not isinstance(preds[0], dict)
            else None,
        }

        stage = "export_inspect"
        exp_root = os.path.join(model_dir, "export", "latest_exporter")
        if os.path.isdir(exp_root):
            versions = sorted(d for d in os.listdir(exp_root) if d.isdigit())
            res["export_versions"] = len(versions)
            if versions:
                res["export"] = signature_summary(os.path.join(exp_root, versions[-1]))
        else:
            res["export"] = None
        res["status"] = "ok"
    except BaseException as e:  # noqa: B902
        res["status"] = "error"
        res["failed_stage"] = stage
        res["error"] = "%s: %s" % (type(e).__name__, str(e)[:2000])
        res["traceback_tail"] = traceback.format_exc().splitlines()[-14:]
        traceback.print_exc()
    res["wall_seconds"] = round(time.time() - T_START, 2)
    line = json.dumps(res, sort_keys=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(line + "\n")
    _REAL_STDOUT.write(line + "\n")
    _REAL_STDOUT.flush()


if __name__ == "__main__":
    main()
