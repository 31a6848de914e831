"""Reads the training split slowly, as a training loop would, printing each batch.

    python slow_train.py SOURCE CACHE_DIR

The tests kill it with SIGKILL while its first epoch is writing the cache.
"""

import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from compat import data  # noqa: E402


def main() -> None:
    source, cache_dir = sys.argv[1:3]
    config = data.PipelineConfig(cache_dir=cache_dir, batch_size=2, shuffle_buffer=2, prefetch=1)
    for step, _ in enumerate(data.build_dataset(source, config, "train")):
        print(f"batch {step}", flush=True)
        time.sleep(0.5)


if __name__ == "__main__":
    main()
