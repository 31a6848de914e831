"""A 2019-style parameter-server job: one task of a TF_CONFIG cluster (chief or master, workers, ps, evaluator).

    TF_CONFIG=... python ps_cluster_program.py MODEL_DIR MAX_STEPS [--canned | --keras]
    python ps_cluster_program.py MODEL_DIR 0 [--canned | --keras] --predict-only    (no cluster: one process)
    ... [--give-up-secs N]    (RunConfig's session_creation_timeout_secs)

Written for TF <= 2.15's tf.estimator: a custom model_fn of tf.compat.v1.layers
(or, with --canned, a DNNClassifier; with --keras, a compiled tf.keras model through
model_to_estimator) trained asynchronously by between-graph
replication, its variables on the ps tasks; the evaluator evaluates the chief's
checkpoints and exports the latest. The tests run it with its one import line
changed to compat.estimator, and under TF 2.15 to compare. A ps task serves
until it is killed, as in TF 2.15. The others print one JSON line: the task,
what train_and_evaluate returned, the newest checkpoint in MODEL_DIR, the global step at each training session
it started, and
(evaluator) the exports and the last evaluation's numbers. `--predict-only`
restores MODEL_DIR's newest checkpoint in one process, predicts and evaluates.
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf

estimator = tf.estimator
model_to_estimator = tf.keras.estimator.model_to_estimator

MODEL_DIR, MAX_STEPS = sys.argv[1], int(sys.argv[2])
CANNED, KERAS, PREDICT_ONLY = "--canned" in sys.argv, "--keras" in sys.argv, "--predict-only" in sys.argv
task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task")

rng = np.random.default_rng(0)
X = rng.standard_normal((512, 4)).astype("float32")
Y = (X[:, 0] - X[:, 1] > 0).astype("int64")


def input_fn(mode):
    dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
    if mode == estimator.ModeKeys.TRAIN:
        return dataset.shuffle(512).repeat().batch(32)
    return dataset.batch(128)


def model_fn(features, labels, mode, params):
    hidden = tf.compat.v1.layers.dense(features["x"], 16, activation=tf.nn.relu)
    logits = tf.compat.v1.layers.dense(hidden, 2)
    predictions = {"class_ids": tf.argmax(logits, 1), "probabilities": tf.nn.softmax(logits)}
    if mode == estimator.ModeKeys.PREDICT:
        return estimator.EstimatorSpec(mode, predictions=predictions,
                                       export_outputs={"predict": estimator.export.PredictOutput(predictions)})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    metrics = {"accuracy": tf.compat.v1.metrics.accuracy(labels, predictions["class_ids"])}
    if mode == estimator.ModeKeys.EVAL:
        return estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
    train_op = tf.compat.v1.train.AdagradOptimizer(params["learning_rate"]).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


class SessionStarts(tf.compat.v1.train.SessionRunHook):
    """The global step at each training session this task starts: a recovered one (a lost ps) adds a step."""

    steps = []

    def after_create_session(self, session, coord):
        SessionStarts.steps.append(int(session.run(tf.compat.v1.train.get_global_step())))


def serving_input_fn():
    x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
    return estimator.export.ServingInputReceiver({"x": x}, {"x": x})


# Workers start 1 s apart instead of TF's 5 s, so that a test waits less. `--give-up-secs N`: how long a trainer
# waits for a lost ps task before it ends (RunConfig's session_creation_timeout_secs).
GIVE_UP = {"session_creation_timeout_secs": int(sys.argv[sys.argv.index("--give-up-secs") + 1])} \
    if "--give-up-secs" in sys.argv else {}
config = estimator.RunConfig(save_checkpoints_steps=50, keep_checkpoint_max=10, tf_random_seed=0,
                             experimental_max_worker_delay_secs=1, **GIVE_UP)
if CANNED:
    classifier = estimator.DNNClassifier([16], [tf.feature_column.numeric_column("x", shape=[4])],
                                         model_dir=MODEL_DIR, config=config)
elif KERAS:
    keras_model = tf.keras.Sequential([tf.keras.Input((4,), name="x"), tf.keras.layers.Dense(16, activation="relu"),
                                       tf.keras.layers.Dense(2, activation="softmax")])
    keras_model.compile(tf.keras.optimizers.Adagrad(0.5), "sparse_categorical_crossentropy", metrics=["accuracy"])
    classifier = model_to_estimator(keras_model=keras_model, model_dir=MODEL_DIR, config=config)
else:
    classifier = estimator.Estimator(model_fn, MODEL_DIR, config, params={"learning_rate": 0.5})
if PREDICT_ONLY:
    predicted = classifier.predict(lambda: tf.data.Dataset.from_tensor_slices({"x": X}).batch(64))
    classes = np.array([int(np.argmax(next(iter(p.values())))) if KERAS else
                        int(p["class_ids"][0] if CANNED else p["class_ids"]) for p in predicted])
    evaluated = classifier.evaluate(input_fn)  # of the newest checkpoint, which it names by its global step
    print(json.dumps({"global_step": int(evaluated["global_step"]), "predicted_accuracy": float(np.mean(classes == Y)),
                      "evaluated_accuracy": float(evaluated["accuracy"])}))
    sys.exit(0)
result = estimator.train_and_evaluate(
    classifier,
    estimator.TrainSpec(input_fn, max_steps=MAX_STEPS, hooks=[] if KERAS else [SessionStarts()]),
    estimator.EvalSpec(input_fn, steps=None, start_delay_secs=0, throttle_secs=1,
                       exporters=[estimator.LatestExporter("latest", serving_input_fn, exports_to_keep=2)]))
latest = tf.train.latest_checkpoint(MODEL_DIR)
report = {"task": task, "returned": result, "step": int(latest.rsplit("-", 1)[1]) if latest else None,
          "session_starts": SessionStarts.steps,
          "checkpoints": sorted(name for name in os.listdir(MODEL_DIR) if name.startswith("model.ckpt-"))}
if task["type"] == "evaluator":
    export_base = os.path.join(MODEL_DIR, "export", "latest")
    report["exports"] = len(os.listdir(export_base)) if os.path.isdir(export_base) else 0
    metrics = classifier.evaluate(input_fn, checkpoint_path=latest)
    report.update(accuracy=float(metrics["accuracy"]), global_step=int(metrics["global_step"]))
print(json.dumps(report))
