"""A training script of a WAV input_fn feeding a model_fn, written for tf.estimator (TF <= 2.15).

    python legacy_estimator_script.py MODEL_DIR

Its input_fn maps a WAV decode function, shuffles, maps a post-process,
batches and repeats; a compiled Keras model goes through model_to_estimator;
TrainSpec/EvalSpec go to train_and_evaluate. The tests run it with its two
import lines changed to compat.estimator, and unchanged after
compat.estimator.install(). It writes its own small WAV files first.
"""
import os
import sys

import numpy as np
import soundfile
import tensorflow as tf

estimator = tf.estimator
model_to_estimator = tf.keras.estimator.model_to_estimator

MODEL_DIR = sys.argv[1]


def write_wavs(folder):
    os.makedirs(folder, exist_ok=True)
    paths, labels = [], []
    for i in range(40):
        label = i % 2
        t = np.arange(4000) / 8000
        wave = 0.5 * np.sin(2 * np.pi * (300 + 600 * label + 5 * i) * t)
        path = os.path.join(folder, f"{i}.wav")
        soundfile.write(path, wave, 8000, subtype="PCM_16")
        paths.append(path)
        labels.append(label)
    return paths, labels


PATHS, LABELS = write_wavs(os.path.join(MODEL_DIR, "..", os.path.basename(MODEL_DIR) + "-wavs"))


def decode(path, label):
    audio, _ = tf.audio.decode_wav(tf.io.read_file(path))
    return audio[:, 0], label


def postprocess(wave, label):
    spectrogram = tf.abs(tf.signal.stft(wave, 256, 128))
    return {"spectrogram": tf.math.log(spectrogram + 1e-6)}, label


def input_fn(mode):
    dataset = tf.data.Dataset.from_tensor_slices((PATHS, LABELS)).map(decode).shuffle(40)
    dataset = dataset.map(postprocess).batch(8)
    return dataset.repeat() if mode == estimator.ModeKeys.TRAIN else dataset


class FirstStep(tf.keras.callbacks.Callback):
    """Reports the first step it trains (a resumed run's is its checkpoint's step + 1)."""

    first = None

    def on_train_batch_end(self, batch, logs=None):
        if FirstStep.first is None:
            FirstStep.first = batch
            print("first step", batch, flush=True)


inputs = tf.keras.Input((30, 129), name="spectrogram")
hidden = tf.keras.layers.Dense(8, activation="relu")(tf.keras.layers.GlobalAveragePooling1D()(inputs))
model = tf.keras.Model({"spectrogram": inputs}, tf.keras.layers.Dense(2)(hidden))
model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])

config = estimator.RunConfig(save_checkpoints_steps=20, keep_checkpoint_max=3)
classifier = model_to_estimator(keras_model=model, model_dir=MODEL_DIR, config=config)
train_spec = estimator.TrainSpec(input_fn=input_fn, max_steps=60, hooks=[FirstStep()])
eval_spec = estimator.EvalSpec(input_fn=input_fn, steps=None, throttle_secs=0)
metrics, _ = estimator.train_and_evaluate(classifier, train_spec, eval_spec)
print("eval accuracy", metrics["accuracy"], metrics)
