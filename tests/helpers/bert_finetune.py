"""Fine-tunes a tiny BERT through google-research/bert's own run_classifier (bert-tensorflow 1.0.4): one JSON line.

The `bert` package is imported from `--bert` (a folder holding it, as rewritten for the TensorFlow at hand:
by this project's `check --fix` on TF >= 2.16, by TF 2.15's `tf_upgrade_v2` plus hand edits there; see
tests/test_check.py and tests/helpers/tf215_bert.py). Its model_fn_builder and input_fn_builder run under
TPUEstimator(use_tpu=False), as its README's GPU/CPU runs did: train, evaluate, predict.

The model is tiny (hidden 32, 2 layers, a 50-word vocabulary, 32 examples) and starts from a checkpoint this
program writes from a seeded NumPy generator, under the variable names BERT's own model builds, so the two
TensorFlows start from the same weights; BERT's init_checkpoint path restores them (dropout is off in the
config; the classifier's own 0.1 dropout stays, as run_classifier has it). The JSON holds what a user compares:
the loss at each step, the checkpoint's variable names and shapes (Adam's adam_m/adam_v slots
included), the evaluation's metrics and the predicted probabilities.

Written for these tests; it drives the library as its users did and copies none of its code.

Usage: python bert_finetune.py --bert DIR --workdir DIR
"""

import argparse
import json
import os
import sys

_REAL_STDOUT = sys.stdout
sys.stdout = sys.stderr  # keep stdout for the single JSON line

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

WORDS = [f"w{index}" for index in range(45)]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
CONFIG = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 48,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.0,
    "attention_probs_dropout_prob": 0.0,
    "max_position_embeddings": 32,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
    "vocab_size": len(VOCAB),
}
SEQ_LENGTH = 16
BATCH = 8
TRAIN_STEPS = 30
SEED = 7
LEARNING_RATE = 1e-3
# BERT's create_optimizer reads the global step for its learning-rate schedule and increments it with an assign
# that nothing orders after that read, on any TensorFlow: which runs first is the executor's choice, so a step
# now and then trains at the next step's rate (its graph pattern alone did so in 2,087 of 3,000 steps here), and
# by step 24 the losses differed by up to 0.1 in one CI run. A schedule this long with no warm-up keeps the rate
# at LEARNING_RATE to the last float32 bit, so which of the two runs first cannot matter.
SCHEDULE_STEPS = 2**40


def examples(run_classifier):
    """32 sentences of 3 to 8 words; the label says whether the first word is one of the first 22."""
    import numpy as np

    rng = np.random.RandomState(SEED)
    made = []
    for index in range(32):
        length = int(rng.randint(3, 9))
        words = [WORDS[int(choice)] for choice in rng.randint(0, len(WORDS), size=length)]
        label = "1" if WORDS.index(words[0]) < 22 else "0"
        made.append(run_classifier.InputExample(guid=f"train-{index}", text_a=" ".join(words), label=label))
    return made


def _initial_value(name, shape, rng):
    """BERT's initial values: ones for LayerNorm's gamma, zeros for biases and beta, else N(0, 0.1)."""
    import numpy as np

    if name.endswith("gamma"):
        return np.ones(shape, np.float32)
    if name.endswith(("beta", "bias")):
        return np.zeros(shape, np.float32)
    return rng.normal(0.0, 0.1, shape).astype(np.float32)


def initial_checkpoint(modeling, run_classifier, folder):
    """A checkpoint of every variable run_classifier's model creates, from a seeded NumPy generator."""
    import numpy as np
    import tensorflow.compat.v1 as tf

    config = modeling.BertConfig.from_dict(CONFIG)
    with tf.Graph().as_default():
        ids = tf.zeros([BATCH, SEQ_LENGTH], tf.int32)
        run_classifier.create_model(config, False, ids, ids, ids, tf.zeros([BATCH], tf.int32), 2, False)
        variables = sorted(tf.global_variables(), key=lambda variable: variable.op.name)
        rng = np.random.RandomState(SEED)
        values = [_initial_value(variable.op.name, variable.shape.as_list(), rng) for variable in variables]
        with tf.Session() as session:
            for variable, value in zip(variables, values):
                variable.load(value, session)
            return tf.train.Saver(variables).save(session, os.path.join(folder, "init", "bert_model.ckpt"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bert", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    sys.path.insert(0, args.bert)

    from bert import modeling, run_classifier, tokenization  # noqa: I001 (as rewritten for this TensorFlow)
    import tensorflow.compat.v1 as tf
    from absl import flags

    flags.FLAGS(["bert_finetune"])  # run_classifier's flags at their defaults, as `tf.app.run` would parse them

    vocab_file = os.path.join(args.workdir, "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as stream:
        stream.write("\n".join(VOCAB) + "\n")
    tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=True)
    features = run_classifier.convert_examples_to_features(examples(run_classifier), ["0", "1"], SEQ_LENGTH, tokenizer)
    init = initial_checkpoint(modeling, run_classifier, args.workdir)

    model_fn = run_classifier.model_fn_builder(
        bert_config=modeling.BertConfig.from_dict(CONFIG),
        num_labels=2,
        init_checkpoint=init,
        learning_rate=LEARNING_RATE,
        num_train_steps=SCHEDULE_STEPS,
        num_warmup_steps=0,
        use_tpu=False,
        use_one_hot_embeddings=False,
    )
    model_dir = os.path.join(args.workdir, "model")
    run_config = tf.estimator.tpu.RunConfig(
        model_dir=model_dir,
        tf_random_seed=SEED,
        save_checkpoints_steps=TRAIN_STEPS,
        log_step_count_steps=4,
        tpu_config=tf.estimator.tpu.TPUConfig(
            iterations_per_loop=4,
            num_shards=8,
            per_host_input_for_training=tf.estimator.tpu.InputPipelineConfig.PER_HOST_V2,
        ),
    )
    estimator = tf.estimator.tpu.TPUEstimator(
        use_tpu=False,
        model_fn=model_fn,
        config=run_config,
        train_batch_size=BATCH,
        eval_batch_size=BATCH,
        predict_batch_size=BATCH,
    )
    losses = []

    class Losses(tf.train.SessionRunHook):
        def before_run(self, run_context):
            graph = tf.get_default_graph()
            loss = graph.get_collection(tf.GraphKeys.LOSSES) or [graph.get_tensor_by_name("loss/Mean:0")]
            return tf.train.SessionRunArgs(loss[0])

        def after_run(self, run_context, run_values):
            losses.append(float(run_values.results))

    estimator.train(
        run_classifier.input_fn_builder(features, SEQ_LENGTH, is_training=True, drop_remainder=True),
        max_steps=TRAIN_STEPS,
        hooks=[Losses()],
    )
    evaluation = estimator.evaluate(
        run_classifier.input_fn_builder(features, SEQ_LENGTH, is_training=False, drop_remainder=True),
        steps=len(features) // BATCH,
    )
    predict_input = run_classifier.input_fn_builder(features, SEQ_LENGTH, is_training=False, drop_remainder=False)
    predictions = list(estimator.predict(predict_input))
    checkpoint = tf.train.latest_checkpoint(model_dir)
    result = {
        "status": "ok",
        "losses": losses,
        "checkpoint": os.path.basename(checkpoint),
        "variables": {name: shape for name, shape in tf.train.list_variables(checkpoint)},
        "eval": {key: float(value) for key, value in evaluation.items()},
        "probabilities": [[float(p) for p in prediction["probabilities"]] for prediction in predictions],
    }
    print(json.dumps(result, sort_keys=True), file=_REAL_STDOUT)


if __name__ == "__main__":
    main()
