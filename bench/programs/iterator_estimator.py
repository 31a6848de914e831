"""The example Estimator program as 2018-2019 code had it, written for TF <= 2.15.

    python iterator_estimator.py --data_dir FSDD_RECORDINGS --model_dir DIR [--steps 300] [--seed_keras]

Its input_fn returns `make_one_shot_iterator(dataset).get_next()`; a compiled
tf.keras model (1-D convolutions, dropout) goes through model_to_estimator with
RunConfig(tf_random_seed=7); train_and_evaluate trains --steps (default 300) with
an evaluation every 100. The Keras model's initial weights come from Keras'
own generator, which tf_random_seed does not reach (in TF 2.15 either):
--seed_keras seeds it too (tf.keras.utils.set_random_seed(7)), making the run
reproducible. Prints one JSON line. bench/accuracy_vs_tf215.py runs it under
TF 2.15 and compat.estimator.
"""
import argparse
import glob
import json
import os
import time

import tensorflow as tf

parser = argparse.ArgumentParser(description="The example Estimator program as 2018-2019 code had it.")
parser.add_argument("--data_dir", required=True, help="FSDD recordings folder")
parser.add_argument("--model_dir", required=True, help="the Estimator's model folder (a new one to train afresh)")
parser.add_argument("--steps", type=int, default=300)
parser.add_argument("--seed_keras", action="store_true", help="seed Keras' generator too (a reproducible run)")
ARGS = parser.parse_args()
DATA, MODEL_DIR, STEPS = ARGS.data_dir, ARGS.model_dir, ARGS.steps
SAMPLES = 8000  # 1 s at FSDD's 8 kHz
if ARGS.seed_keras:
    tf.keras.utils.set_random_seed(7)


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
    return {"mel": tf.math.log(tf.tensordot(tf.abs(stft), mel, 1) + 1e-6)}, label


def input_fn(mode):
    paths, labels = files(range(5, 50) if mode == tf.estimator.ModeKeys.TRAIN else range(0, 5))
    dataset = tf.data.Dataset.from_tensor_slices((paths, labels)).map(decode)
    if mode == tf.estimator.ModeKeys.TRAIN:
        dataset = dataset.shuffle(len(paths)).repeat()
    dataset = dataset.map(features).batch(32)
    return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()


inputs = tf.keras.Input((61, 40), name="mel")
x = tf.keras.layers.Conv1D(32, 3, activation="relu")(inputs)
x = tf.keras.layers.MaxPooling1D(2)(x)
x = tf.keras.layers.Conv1D(64, 3, activation="relu")(x)
x = tf.keras.layers.GlobalAveragePooling1D()(x)
x = tf.keras.layers.Dropout(0.2)(x)
model = tf.keras.Model(inputs, tf.keras.layers.Dense(10, name="logits")(x))
model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
config = tf.estimator.RunConfig(save_checkpoints_steps=100, tf_random_seed=7)
est = tf.keras.estimator.model_to_estimator(keras_model=model, model_dir=MODEL_DIR, config=config)
t = time.perf_counter()
metrics, _ = tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(input_fn, max_steps=STEPS),
                                             tf.estimator.EvalSpec(input_fn, steps=None, throttle_secs=0))
print(json.dumps({"accuracy": float(metrics["accuracy"]), "loss": float(metrics["loss"]),
                  "global_step": int(metrics["global_step"]), "train_seconds": time.perf_counter() - t}))
