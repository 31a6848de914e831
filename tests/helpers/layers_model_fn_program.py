"""A 2019-style Estimator program: a model_fn built from tf.compat.v1.layers, on WAV input, written for TF <= 2.15.

    python layers_model_fn_program.py MODEL_DIR MAX_STEPS            train_and_evaluate, then evaluate, predict, export
    python layers_model_fn_program.py MODEL_DIR 0 --predict-only     predict the probe clips from MODEL_DIR's checkpoint

Its input_fn reads WAV files it writes itself (tf.audio.decode_wav, a
log-magnitude STFT); its model_fn is conv2d, batch_normalization (updates in
UPDATE_OPS, run by the train op), max_pooling2d, dropout, flatten and dense
layers of `tf.compat.v1.layers`, with tf.compat.v1 losses, metrics and
optimizer. Prints one JSON line. The tests run it with its one import line
changed to compat.estimator and against a model folder TF 2.15 wrote with it
(tests/data/tf215_layers_model_fn, made by running it under TF 2.15).
"""
import json
import os
import sys

import numpy as np
import soundfile
import tensorflow as tf

estimator = tf.estimator

MODEL_DIR, MAX_STEPS = sys.argv[1], int(sys.argv[2])
PREDICT_ONLY = "--predict-only" in sys.argv
CLASSES, PER_CLASS, RATE = 3, 8, 8000


def write_wavs(folder):
    os.makedirs(folder, exist_ok=True)
    paths, labels = [], []
    for i in range(CLASSES * PER_CLASS):
        label = i % CLASSES
        t = np.arange(RATE // 4) / RATE
        wave = 0.5 * np.sin(2 * np.pi * (400 + 900 * label + 7 * i) * t)
        wave += 0.02 * np.random.default_rng(i).standard_normal(t.size)
        path = os.path.join(folder, f"{i}.wav")
        soundfile.write(path, wave, RATE, subtype="PCM_16")
        paths.append(path)
        labels.append(label)
    return paths, labels


PATHS, LABELS = write_wavs(os.path.join(os.path.dirname(os.path.abspath(MODEL_DIR)),
                                        os.path.basename(os.path.abspath(MODEL_DIR)) + "-wavs"))


def spectrogram(path, label):
    audio, _ = tf.audio.decode_wav(tf.io.read_file(path), desired_channels=1)
    magnitude = tf.abs(tf.signal.stft(tf.reshape(audio[:, 0], [RATE // 4]), 256, 128))  # [14, 129]
    return {"spectrogram": tf.math.log(magnitude + 1e-6)}, label


def input_fn(mode):
    dataset = tf.data.Dataset.from_tensor_slices((PATHS, LABELS)).map(spectrogram)
    if mode == estimator.ModeKeys.TRAIN:
        return dataset.shuffle(64, seed=1).repeat().batch(8)
    return dataset.batch(8)


def model_fn(features, labels, mode, params):
    training = mode == estimator.ModeKeys.TRAIN
    net = tf.expand_dims(features["spectrogram"], -1)
    net = tf.compat.v1.layers.conv2d(net, 8, 3, kernel_initializer=tf.compat.v1.glorot_uniform_initializer())
    net = tf.compat.v1.layers.batch_normalization(net, training=training)
    net = tf.compat.v1.layers.max_pooling2d(tf.nn.relu(net), 2, 2)
    net = tf.compat.v1.layers.dropout(tf.compat.v1.layers.flatten(net), rate=0.2, training=training)
    logits = tf.compat.v1.layers.dense(net, CLASSES, kernel_initializer=tf.compat.v1.glorot_uniform_initializer())
    predictions = {"class_ids": tf.argmax(logits, 1), "probabilities": tf.nn.softmax(logits)}
    if mode == estimator.ModeKeys.PREDICT:
        return estimator.EstimatorSpec(mode, predictions=predictions,
                                       export_outputs={"predict": estimator.export.PredictOutput(predictions)})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == estimator.ModeKeys.EVAL:
        return estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
            "accuracy": tf.compat.v1.metrics.accuracy(labels, predictions["class_ids"])})
    with tf.control_dependencies(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)):
        train_op = tf.compat.v1.train.AdamOptimizer(params["learning_rate"]).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


config = estimator.RunConfig(save_checkpoints_steps=10, keep_checkpoint_max=1, tf_random_seed=3)
classifier = estimator.Estimator(model_fn, MODEL_DIR, config, params={"learning_rate": 0.01})
report = {}
if not PREDICT_ONLY:
    receiver = estimator.export.build_raw_serving_input_receiver_fn(
        {"spectrogram": tf.zeros([1, 14, 129])})
    estimator.train_and_evaluate(classifier, estimator.TrainSpec(input_fn, max_steps=MAX_STEPS),
                                 estimator.EvalSpec(input_fn, steps=None, throttle_secs=0))
    metrics = classifier.evaluate(input_fn)
    exported = classifier.export_saved_model(os.path.join(MODEL_DIR, "export"), receiver).decode()
    probe = np.stack([spectrogram(path, 0)[0]["spectrogram"].numpy() for path in PATHS[:6]])
    served = tf.saved_model.load(exported).signatures["predict"](spectrogram=tf.constant(probe))
    report.update(accuracy=float(metrics["accuracy"]), global_step=int(metrics["global_step"]),
                  served=served["probabilities"].numpy().tolist(),
                  moving_mean=classifier.get_variable_value("batch_normalization/moving_mean").tolist(),
                  variables=sorted(classifier.get_variable_names()))
predicted = classifier.predict(lambda: tf.data.Dataset.from_tensor_slices((PATHS[:6], LABELS[:6])).map(
    spectrogram).batch(6))
report["probabilities"] = [p["probabilities"].tolist() for p in predicted]
print(json.dumps(report))
