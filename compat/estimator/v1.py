"""tf.compat.v1.estimator: tf.estimator's names with TF 1.x's canned classes.

In TF 2.15 the two namespaces shared every name but the canned estimators:
`tf.compat.v1.estimator.DNNClassifier` is TF 1.x's class (tf.compat.v1.train
optimizers, losses summed over the batch, tf.compat.v1.layers variable and
slot names), `tf.estimator.DNNClassifier` the TF2 one. `experimental` adds
KMeans and TF 1.x's logit fn builders and lacks the RNN estimators, which
TF 2.15 had only in `tf.estimator.experimental`.

`install()` (compat/estimator/__init__.py) makes `tf.compat.v1.estimator`
this module. Import it after compat.estimator: it is built from that
package's names.
"""

from __future__ import annotations

import types

import compat.estimator as _v2
from compat.estimator.canned import V1_CANNED, V1_EXPERIMENTAL

# tf.estimator's only: the RNN estimators; our own: install/uninstall
_NOT_IN_V1 = {"RNNClassifier", "RNNEstimator"}
_OWN = {"install", "uninstall", "experimental", "to_keras", "export_keras_saved_model"}

globals().update({name: getattr(_v2, name) for name in _v2.__all__ if name not in _OWN})
globals().update(V1_CANNED)

experimental = types.SimpleNamespace(
    **{**{name: value for name, value in vars(_v2.experimental).items() if name not in _NOT_IN_V1}, **V1_EXPERIMENTAL}
)

# A package to the import system, so that TF 2.15's submodule paths (`import tensorflow.compat.v1.estimator.tpu`)
# reach its attributes through legacy_modules.py's finder; it has no files of its own.
__path__: list[str] = []

__all__ = sorted({*(name for name in _v2.__all__ if name not in _OWN), *V1_CANNED, "experimental"})
