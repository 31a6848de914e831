"""A 2018-style Estimator program in the shape of a WAV input_fn feeding a model_fn, written for TF <= 2.15.

    python wav_estimator.py --data_dir FSDD_RECORDINGS --model_dir DIR [--steps 600]

Its input_fn decodes WAV files with tf.data one map after another, with no
prefetch; a compiled tf.keras model goes through model_to_estimator, then
train_and_evaluate: --steps steps (default 600), a checkpoint and an evaluation
every 200. It runs unchanged on TensorFlow 2.15 and, after
`compat.estimator.install()`, on TensorFlow >= 2.16 (bench/vs_tf215.py runs
both). Prints one JSON line: eval accuracy, global step, training seconds.
"""
import argparse
import glob
import json
import os
import time

import tensorflow as tf

parser = argparse.ArgumentParser(description="The example Estimator program.")
parser.add_argument("--data_dir", required=True, help="FSDD recordings folder")
parser.add_argument("--model_dir", required=True, help="the Estimator's model folder (a new one to train afresh)")
parser.add_argument("--steps", type=int, default=600)
ARGS = parser.parse_args()
DATA, MODEL_DIR, STEPS = ARGS.data_dir, ARGS.model_dir, ARGS.steps
SAMPLES = 8000  # 1 s at FSDD's 8 kHz


def files(takes):
    paths = sorted(glob.glob(os.path.join(DATA, "*.wav")))
    chosen = [p for p in paths if int(os.path.basename(p)[:-4].split("_")[2]) in takes]
    return chosen, [int(os.path.basename(p)[0]) for p in chosen]


def decode(path, label):
    audio, _ = tf.audio.decode_wav(tf.io.read_file(path))
    wave = audio[:SAMPLES, 0]
    return tf.pad(wave, [[0, SAMPLES - tf.shape(wave)[0]]]), label


def features(wave, label):
    stft = tf.signal.stft(wave, 256, 128)
    mel = tf.signal.linear_to_mel_weight_matrix(40, 129, 8000, 20.0, 4000.0)
    log_mel = tf.math.log(tf.tensordot(tf.abs(stft), mel, 1) + 1e-6)
    return {"mel": log_mel}, label


def input_fn(mode):
    paths, labels = files(range(5, 50) if mode == tf.estimator.ModeKeys.TRAIN else range(0, 5))
    dataset = tf.data.Dataset.from_tensor_slices((paths, labels)).map(decode)
    if mode == tf.estimator.ModeKeys.TRAIN:
        dataset = dataset.shuffle(len(paths)).repeat()
    return dataset.map(features).batch(32)


inputs = tf.keras.Input((61, 40), name="mel")
x = tf.keras.layers.LayerNormalization()(inputs)
x = tf.keras.layers.Conv1D(64, 3, activation="relu")(x)
x = tf.keras.layers.MaxPooling1D(2)(x)
x = tf.keras.layers.Conv1D(96, 3, activation="relu")(x)
x = tf.keras.layers.MaxPooling1D(2)(x)
x = tf.keras.layers.Conv1D(128, 3, activation="relu")(x)
x = tf.keras.layers.GlobalAveragePooling1D()(x)
model = tf.keras.Model(inputs, tf.keras.layers.Dense(10, name="logits")(x))
model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])

config = tf.estimator.RunConfig(save_checkpoints_steps=200, tf_random_seed=0)
classifier = tf.keras.estimator.model_to_estimator(keras_model=model, model_dir=MODEL_DIR, config=config)
started = time.perf_counter()
metrics, _ = tf.estimator.train_and_evaluate(
    classifier, tf.estimator.TrainSpec(input_fn, max_steps=STEPS),
    tf.estimator.EvalSpec(input_fn, steps=None, throttle_secs=0))
print(json.dumps({"accuracy": float(metrics["accuracy"]), "global_step": int(metrics["global_step"]),
                  "train_seconds": time.perf_counter() - started, "tensorflow": tf.__version__}))
