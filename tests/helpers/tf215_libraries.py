"""Records TensorFlow 2.15's run of each library driver: `python tests/helpers/tf215_libraries.py [NAME...]`.

Run with this project's interpreter: it creates TF 2.15's side environment (bench/tf215.py), installs each
library there as tests/helpers/libraries.py does, runs its driver under TF 2.15's own tf.estimator, and
writes the JSON lines into tests/data/tf215_libraries.json, which tests/test_libraries.py compares with.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.dirname(os.path.dirname(__file__)))]

import libraries  # noqa: E402

from bench.tf215 import tf215_python  # noqa: E402

RECORDING = os.path.join(libraries.REPO, "tests", "data", "tf215_libraries.json")


def main(names: list[str]) -> None:
    python = tf215_python(None)
    recorded = json.load(open(RECORDING)) if os.path.exists(RECORDING) else {}
    for name in names or list(libraries.LIBRARIES):
        extra = libraries.LIBRARIES[name]["tf215_only"]
        sites = (libraries.install(extra, python),) if extra else ()
        with tempfile.TemporaryDirectory() as workdir:
            result = libraries.run_driver(name, python, workdir, with_compat=False, extra_sites=sites)
        if result.get("status") != "ok":
            raise SystemExit(f"{name} failed under TF 2.15: {result.get('error')}")
        recorded[name] = result
        print(name, "recorded", result.get("tf_version"))
    with open(RECORDING, "w") as stream:
        json.dump(recorded, stream, indent=1, sort_keys=True)
        stream.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
