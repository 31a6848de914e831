"""Reads a legacy-shaped WAV pipeline through an input cache kept in a folder; prints each element's label.

    python input_cache_program.py DATA_DIR CACHE_FOLDER [SECONDS_BETWEEN_ELEMENTS]

The pause lets a test kill the process while the cache is being written. The
last line is `done` after a whole pass.
"""

import glob
import os
import sys
import time

import tensorflow as tf

from compat.estimator import input_cache

data_dir, folder = sys.argv[1], sys.argv[2]
pause = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)  # as a legacy program asks for its log
paths = sorted(glob.glob(os.path.join(data_dir, "*", "*.wav")))


def decode(path, label):
    audio, _ = tf.audio.decode_wav(tf.io.read_file(path))
    return tf.reduce_mean(tf.abs(audio)), label


tf.random.set_seed(7)
dataset = tf.data.Dataset.from_tensor_slices((paths, list(range(len(paths))))).shuffle(len(paths)).map(decode)
cache = input_cache.PROCESS_CACHES.for_settings(input_cache.InputCacheSettings(folder=folder))
for _, label in cache.wrap(dataset, "input_cache_program", "train"):
    print(int(label), flush=True)
    time.sleep(pause)
cache.publish()
print("done", flush=True)
