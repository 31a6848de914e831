"""A TF 1.x notebook as teams kept them (a shell line, a `%%bash` cell, a `%time` line, outputs), and the program
its Python cells make.

tests/test_check.py checks and `--fix`es it, then runs its program on TensorFlow >= 2.16 and compares with TF
2.15's run of the same notebook after TF 2.15's own `tf_upgrade_v2` (tests/helpers/tf215_notebook.py records
it). Its last cell prints a JSON line: the global step, the checkpoint's variables and the evaluated loss.
(TF 2.15's tf.compat.v1.layers.dense seeds its kernel's initializer at random, so the loss is not compared.)
"""

from __future__ import annotations


def _code(source: list[str], outputs: tuple = ()) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {"id": "c"}, "outputs": list(outputs),
            "source": source}


def notebook() -> dict:
    """The notebook, as nbformat 4 JSON."""
    printed = {"output_type": "stream", "name": "stdout", "text": ["1.15.0\n"]}
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3"}}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]},
        _code(["!pip install -q nothing\n", "import json\n", "import numpy as np\n", "import tensorflow as tf\n",
               "print(tf.__version__)"], (printed,)),
        _code(["%%bash\n", "echo tf.layers.dense"]),
        _code(["def model_fn(features, labels, mode):\n",
               "    width = features['x'].shape[-1].value\n",
               "    logits = tf.layers.dense(features['x'], width)\n",
               "    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)\n",
               "    train_op = tf.train.AdamOptimizer(0.1).minimize(loss, tf.train.get_global_step())\n",
               "    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)\n"]),
        _code(["rng = np.random.RandomState(0)\n",
               "x = rng.rand(64, 3).astype('float32'); y = (x[:, 0] > 0.5).astype('int32')\n",
               "%time print('timed')\n",
               "config = tf.estimator.RunConfig(tf_random_seed=1)\n",
               "est = tf.estimator.Estimator(model_fn, model_dir=MODEL_DIR, config=config)\n",
               "est.train(tf.estimator.inputs.numpy_input_fn({'x': x}, y, batch_size=16, num_epochs=None, "
               "shuffle=False), steps=5)\n",
               "loss = est.evaluate(tf.estimator.inputs.numpy_input_fn({'x': x}, y, shuffle=False))['loss']\n",
               "print('global step', est.get_variable_value('global_step'))\n",
               "print(json.dumps({'global_step': int(est.get_variable_value('global_step')), 'loss': float(loss),\n",
               "                  'variables': sorted(name for name, _ in tf.train.list_variables(MODEL_DIR))}))"]),
    ]}


def program(cells: list[dict], model_dir: str) -> str:
    """The Python of the code cells (shell `!` and magic `%` lines and `%%` cells left out), after
    `MODEL_DIR = model_dir`."""
    lines = [f"MODEL_DIR = {model_dir!r}"]
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and not source.startswith("%%"):
            lines += [line for line in source.splitlines() if not line.startswith(("!", "%"))]
    return "\n".join(lines) + "\n"
