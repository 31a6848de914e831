"""A TF 1.x canned-Estimator program as teams wrote them in 2017, in TF 1.x names throughout.

    python tf1_2017_canned_program.py --model_dir=DIR

tf.app.flags and tf.app.run, tf.logging, a LinearClassifier over tf.feature_column columns fed by
tf.estimator.inputs.numpy_input_fn, a SessionRunHook of its own (tf.train.SessionRunHook,
tf.train.SessionRunArgs) beside tf.train.LoggingTensorHook, a metric of tf.metrics added with add_metrics,
and an export through tf.estimator.export's parsing receiver. tests/test_check.py runs it after
`python -m compat.estimator.check --fix` and compares with TF 2.15's run after TF 2.15's `tf_upgrade_v2`
(tests/helpers/tf215_tf1_programs.py). Prints a JSON line: the metric keys and accuracy, the checkpoint's
variables, the export's signatures.
"""
import json
import os

import numpy as np
import tensorflow as tf

tf.app.flags.DEFINE_string("model_dir", None, "Where the model is written.")
FLAGS = tf.app.flags.FLAGS

rng = np.random.RandomState(9)
X = rng.normal(size=(800, 3)).astype(np.float32)
Y = (X[:, 0] + 0.5 * X[:, 1] - X[:, 2] > 0).astype(np.int32)


class StepCounter(tf.train.SessionRunHook):
    """Counts the training steps the session ran."""

    def begin(self):
        self.steps = 0
        self._step = tf.train.get_global_step()

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self._step)

    def after_run(self, run_context, run_values):
        self.steps += 1


def my_metrics(labels, predictions):
    return {"mean_probability": tf.metrics.mean(predictions["probabilities"][:, 1])}


def main(_):
    tf.logging.set_verbosity(tf.logging.WARN)
    columns = [tf.feature_column.numeric_column("x", shape=(3,))]
    classifier = tf.estimator.LinearClassifier(feature_columns=columns, n_classes=2, model_dir=FLAGS.model_dir,
                                               config=tf.estimator.RunConfig(tf_random_seed=4))
    classifier = tf.estimator.add_metrics(classifier, my_metrics)
    train = tf.estimator.inputs.numpy_input_fn({"x": X}, Y, batch_size=32, num_epochs=None, shuffle=True)
    counter = StepCounter()
    logging_hook = tf.train.LoggingTensorHook({"step": "global_step"}, every_n_iter=100)
    classifier.train(train, steps=300, hooks=[counter, logging_hook])
    once = tf.estimator.inputs.numpy_input_fn({"x": X}, Y, batch_size=100, num_epochs=1, shuffle=False)
    metrics = classifier.evaluate(once)
    receiver = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        tf.feature_column.make_parse_example_spec(columns))
    exported = classifier.export_saved_model(os.path.join(FLAGS.model_dir, "export"), receiver)
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    path = exported.decode() if isinstance(exported, bytes) else exported
    saved.ParseFromString(open(os.path.join(path, "saved_model.pb"), "rb").read())
    reader = tf.train.load_checkpoint(classifier.latest_checkpoint())
    print(json.dumps({
        "metric_keys": sorted(metrics),
        "accuracy": float(metrics["accuracy"]),
        "global_step": int(metrics["global_step"]),
        "steps_counted": counter.steps,
        "variables": sorted(reader.get_variable_to_shape_map()),
        "signatures": {name: {"inputs": sorted(signature.inputs), "outputs": sorted(signature.outputs)}
                       for name, signature in saved.meta_graphs[0].signature_def.items()},
    }))


if __name__ == "__main__":
    tf.app.run()
