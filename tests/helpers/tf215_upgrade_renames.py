"""Lists the renames of TF 2.15's own upgrader: `python tf215_upgrade_renames.py OUT.json`, run under TensorFlow 2.15.

TF 2.15's `tf_upgrade_v2` rewrote TF 1.x names (`tf.layers.dense`, `tf.summary.scalar`,
`tf.contrib.estimator.stop_if_no_decrease_hook`) that TF 2.21's no longer rewrites. Its symbol table
(`TFAPIChangeSpec().symbol_renames`) is kept as facts in compat/estimator/tf215_upgrade_renames.json;
`python -m compat.estimator.check --fix` rewrites with TF 2.21's upgrader and these renames.
"""
import json
import sys

import tensorflow as tf
from tensorflow.tools.compatibility import tf_upgrade_v2

renames = tf_upgrade_v2.TFAPIChangeSpec().symbol_renames
json.dump({"tensorflow": tf.__version__, "symbol_renames": renames}, open(sys.argv[1], "w"), indent=0, sort_keys=True)
print(len(renames))
