"""Reads the training split as a training loop would, printing "ready" and then each batch.

    python slow_train.py SOURCE CACHE_DIR

The tests put a named pipe (FIFO) among the source's audio files: reading it
blocks for ever, so the first epoch, and the cache write that streams with it,
can never finish. The test kills this process once it printed "ready", when
the cache's temporary folder exists and its write is under way: a kill
mid-write at a point the test controls, not a race.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from compat import data  # noqa: E402


def main() -> None:
    source, cache_dir = sys.argv[1:3]
    config = data.PipelineConfig(cache_dir=cache_dir, batch_size=2, shuffle_buffer=2, prefetch=1)
    batches = iter(data.build_dataset(source, config, "train"))
    print("ready", flush=True)
    for step, _ in enumerate(batches):
        print(f"batch {step}", flush=True)


if __name__ == "__main__":
    main()
