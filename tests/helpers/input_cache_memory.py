"""Writes, then replays, an input cache far larger than the memory a pipeline needs; prints how far memory rose.

    python input_cache_memory.py CACHE_FOLDER|off|memory MEGABYTES

A deterministic pipeline of MEGABYTES elements of 1 MB each (an input_fn that
decodes large clips or images) is read twice through `compat.estimator`'s input
cache: one pass that writes the cache, then, as a later input_fn call, one that
replays it. With `off` it is read twice without the cache, the baseline; with
`memory`, twice through one in-memory `dataset.cache()`, which a test of the
measurement itself shows holding the data in memory. The one
line printed is JSON: how far the process's resident memory rose above where it
stood before the passes (sampled at every element: the process's own peak may come
from starting TensorFlow), the cache's bytes on disk, and a checksum of every
element read.
"""

import json
import os
import sys

import tensorflow as tf

from compat.estimator import input_cache

folder, megabytes = sys.argv[1], int(sys.argv[2])
FLOATS_PER_MEGABYTE = (1 << 20) // 4


def resident_bytes() -> int:
    with open("/proc/self/statm") as stream:
        return int(stream.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def pipeline() -> tf.data.Dataset:
    return tf.data.Dataset.range(megabytes).map(
        lambda index: tf.fill([FLOATS_PER_MEGABYTE], tf.cast(index, tf.float32) + 0.5)
    )


cache = input_cache.InputCache(input_cache.InputCacheSettings(enabled=folder not in ("off", "memory"), folder=folder))
in_memory = pipeline().cache()
checksum = 0.0
before = peak = resident_bytes()
for _ in range(2):
    passed = in_memory if folder == "memory" else cache.wrap(pipeline(), "input_cache_memory", "train")
    for element in passed:
        checksum += float(element[0])
        peak = max(peak, resident_bytes())
    cache.publish()
cache.close()  # its temporary folders go; what was published stays
# what was published (temporary folders start with "."; the published files are hard links to theirs)
published = [] if folder in ("off", "memory") else [entry for entry in os.listdir(folder) if not entry.startswith(".")]
cached_bytes = sum(
    os.path.getsize(os.path.join(folder, entry, name)) for entry in published
    for name in os.listdir(os.path.join(folder, entry))
)
print(json.dumps({"rise_bytes": peak - before, "cached_bytes": cached_bytes, "checksum": checksum}))
