"""docs/architecture.md's recipe for a canned estimator: its module and one entry in CANNED (the by-hand rest,
type checkers' imports and docs, is checked by tests/test_architecture.py and tests/test_compatibility.py).

A copy of the package (this project's own code) gets a fake canned module and the one registry line; a
program then reaches the new class by every name a canned class has: tf.estimator's (compat.estimator,
its canned package, TYPE_CHECKING aside), tf.compat.v1.estimator's (its TF 1.x twin), after install(),
and trains and converts it with to_keras; the compatibility table gives both of its names this toolkit's
own row, and the migration check knows the name.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow  # a process that imports TensorFlow and trains

FAKE_MODULE = '''"""A canned estimator added by the recipe: a DNN classifier under another name."""
import tensorflow as tf

from compat.estimator.canned.dnn import DNNClassifier, DNNClassifierV1
from compat.estimator.canned.recipe import CannedRecipe


class FakeClassifier(DNNClassifier):
    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2, activation_fn=tf.nn.relu):
        super().__init__(hidden_units, feature_columns, model_dir=model_dir, n_classes=n_classes,
                         activation_fn=activation_fn)
        self.keras_recipe = CannedRecipe.from_arguments("FakeClassifier", locals(), network="dnn")


class FakeClassifierV1(DNNClassifierV1):
    pass
'''

PROGRAM = '''
import numpy as np
import tensorflow as tf
import compat.estimator as estimator
import compat.estimator.v1 as estimator_v1
from compat.estimator import canned

assert "FakeClassifier" in estimator.__all__ and "FakeClassifier" in canned.V1_CLASSES
assert estimator_v1.FakeClassifier is canned.FakeClassifierV1
from compat.estimator import compatibility
for dotted in ("tf.estimator.FakeClassifier", "tf.compat.v1.estimator.FakeClassifier"):  # its table rows
    row = compatibility.lookup(dotted)
    assert (row.status, row.note) == (compatibility.DIFFERS, compatibility.OWN_NAME), (dotted, row)
assert compatibility.lookup("tf.compat.v1.estimator.DNNClassifier").status == compatibility.SAME
estimator.install()
assert tf.estimator.FakeClassifier is canned.FakeClassifier
assert tf.compat.v1.estimator.FakeClassifier is canned.FakeClassifierV1
x = np.random.RandomState(0).randn(64, 2).astype("float32")
y = (x[:, 0] > 0).astype("int32")
model = tf.estimator.FakeClassifier([4], [tf.feature_column.numeric_column("x", shape=(2,))], model_dir=MODEL_DIR)
model.train(estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=16, num_epochs=None, shuffle=True), max_steps=5)
rows = list(model.predict(estimator.inputs.numpy_input_fn({"x": x}, shuffle=False)))
converted = estimator.to_keras(model)
got = converted.predict({"x": x}, verbose=0)["probabilities"]
np.testing.assert_allclose(got, np.stack([row["probabilities"] for row in rows]), rtol=1e-5, atol=1e-5)
print("fake canned estimator: every name, trained and converted")
'''


def test_a_canned_estimator_is_added_by_its_module_and_one_registry_entry(tmp_path):
    copy = tmp_path / "project"
    shutil.copytree(os.path.join(REPO, "compat"), copy / "compat",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "compat" / "estimator" / "canned" / "fake.py").write_text(FAKE_MODULE)
    registry = copy / "compat" / "estimator" / "canned" / "__init__.py"
    source = registry.read_text()
    entry = '    "dnn": ("DNNClassifier", "DNNEstimator", "DNNRegressor"),\n'
    assert entry in source
    registry.write_text(source.replace(entry, entry + '    "fake": ("FakeClassifier",),\n'))
    program = PROGRAM.replace("MODEL_DIR", repr(str(tmp_path / "run")))
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=600,
                            cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": str(copy)})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "every name, trained and converted" in result.stdout
    legacy = tmp_path / "legacy.py"
    legacy.write_text("import tensorflow as tf\nmodel = tf.estimator.FakeClassifier([4], [])\n")
    check = subprocess.run([sys.executable, "-m", "compat.estimator.check", str(legacy)], capture_output=True,
                           text=True, timeout=300, cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": str(copy)})
    line = next(line for line in check.stdout.splitlines() if "tf.estimator.FakeClassifier" in line)
    assert "unknown" not in line and "refused" not in line, check.stdout
