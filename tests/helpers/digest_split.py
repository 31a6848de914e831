"""Builds one split with the builder and prints a JSON line: digest and example count.

    python digest_split.py SOURCE CACHE_DIR SPLIT ['{"field": value, ...}']

The JSON holds PipelineConfig overrides. Cache hits and misses are logged to
stderr ("Dataset cache hit/miss"). Used by the tests to use the cache from
other processes.
"""

import hashlib
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import logging  # noqa: E402

from compat import data  # noqa: E402


def main() -> None:
    source, cache_dir, split = sys.argv[1:4]
    overrides = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    logging.set_verbosity(logging.INFO)
    config = data.PipelineConfig(cache_dir=cache_dir, deterministic=True, **overrides)
    digest, count = hashlib.sha256(), 0
    for features, labels in data.build_dataset(source, config, split):
        digest.update(features[config.feature_key].numpy().tobytes() + labels.numpy().tobytes())
        count += int(labels.shape[0])
    print(json.dumps({"digest": digest.hexdigest(), "examples": count}))


if __name__ == "__main__":
    main()
