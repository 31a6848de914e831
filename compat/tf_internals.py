"""The parts of TensorFlow's and Keras' internals this project uses, in one place.

TensorFlow 2.16 removed tf.estimator but kept, under private module paths,
pieces TF 2.15's Estimator was built on and that no public name offers:
the export outputs and signature builders that SavedModels of Estimators
were made with (`tensorflow.python.saved_model.model_utils`). Using them
keeps exports TF 2.15's instead of a rewrite of them.

Every such reach is here, so that a TensorFlow or Keras release that moves
one breaks `tests/test_tf_internals.py` by name, not a run deep inside.
"""

from __future__ import annotations

from tensorflow.python.saved_model.model_utils import export_output, export_utils  # noqa: F401
