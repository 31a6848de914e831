"""Fine-tunes a tiny ALBERT on an STS-B-shaped regression through google-research's own classifier_utils
(albert-tensorflow 1.1), as rewritten by `check --fix` alone: one JSON line.

The `albert` package is imported from `--albert` (a folder holding it). Its model_fn_builder (task "sts-b": one
output, squared error, eval metrics from tf.contrib.metrics' `streaming_pearson_correlation` and
`streaming_concat`) and file_based_input_fn_builder run under TPUEstimator(use_tpu=False), as its README's GPU/CPU
runs did: train, evaluate, predict. The examples are written as the TFRecords its input_fn reads (no tokenizer:
the ids are drawn). The JSON holds the evaluation's metrics and the predictions, so that the caller can check
the streaming metrics against the predictions themselves.

Written for these tests; it drives the library as its users did and copies none of its code.

Usage: python albert_sts_b.py --albert DIR --workdir DIR
"""

import argparse
import json
import os
import sys

_REAL_STDOUT = sys.stdout
sys.stdout = sys.stderr  # keep stdout for the single JSON line
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SEQ_LENGTH, BATCH, EXAMPLES, VOCAB = 16, 8, 32, 40


def write_records(tf, path, rng):
    """EXAMPLES examples: drawn ids, a similarity label in [0, 5] that follows the share of small ids."""
    labels = []
    with tf.io.TFRecordWriter(path) as writer:
        for _ in range(EXAMPLES):
            length = int(rng.integers(4, SEQ_LENGTH))
            ids = rng.integers(5, VOCAB, size=length)
            label = float(5.0 * (ids < 20).mean())
            labels.append(label)

            def ints(values):
                return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))

            padded = list(ids) + [0] * (SEQ_LENGTH - length)
            feature = {
                "input_ids": ints(padded),
                "input_mask": ints([1] * length + [0] * (SEQ_LENGTH - length)),
                "segment_ids": ints([0] * SEQ_LENGTH),
                "label_ids": tf.train.Feature(float_list=tf.train.FloatList(value=[label])),
                "is_real_example": ints([1]),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--albert", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    sys.path.insert(0, args.albert)
    import numpy as np
    import tensorflow as tf
    from albert import classifier_utils, modeling

    rng = np.random.default_rng(11)
    records = os.path.join(args.workdir, "train.tf_record")
    labels = write_records(tf, records, rng)
    config = modeling.AlbertConfig(
        vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=48, max_position_embeddings=32,
    )
    steps = 12
    model_fn = classifier_utils.model_fn_builder(
        config, 1, None, 1e-3, steps, 0, False, False, "sts-b")
    run_config = tf.compat.v1.estimator.tpu.RunConfig(
        model_dir=os.path.join(args.workdir, "model"), tf_random_seed=3, save_checkpoints_steps=steps)
    estimator = tf.compat.v1.estimator.tpu.TPUEstimator(
        use_tpu=False, model_fn=model_fn, config=run_config, train_batch_size=BATCH, eval_batch_size=BATCH,
        predict_batch_size=BATCH)

    def input_fn(is_training):
        return classifier_utils.file_based_input_fn_builder(
            records, SEQ_LENGTH, is_training, True, "sts-b", False, BATCH)

    estimator.train(input_fn(True), max_steps=steps)
    metrics = estimator.evaluate(input_fn(False), steps=EXAMPLES // BATCH)
    predictions = [float(np.ravel(p["predictions"])[0]) for p in estimator.predict(input_fn(False))]
    report = {
        "metrics": {key: np.asarray(value).tolist() for key, value in metrics.items()},
        "predictions": predictions,
        "labels": labels,
    }
    _REAL_STDOUT.write(json.dumps(report) + "\n")


if __name__ == "__main__":
    main()
