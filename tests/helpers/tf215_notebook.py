"""Records TensorFlow 2.15's run of tf1_notebook.py's notebook: `python tests/helpers/tf215_notebook.py`.

Run with this project's interpreter. In TF 2.15's side environment (bench/tf215.py) it writes the notebook,
rewrites it with TF 2.15's own `tf_upgrade_v2` (which reads notebooks), makes the one hand edit TF 2.15 still
needed (a TF 2 shape's item has no `.value`), runs the Python of its cells and writes
tests/data/tf215_notebook.json, which tests/test_check.py compares this project's run (after `check --fix`
alone) with.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

HELPERS = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HELPERS, os.path.dirname(os.path.dirname(HELPERS))]

import tf1_notebook  # noqa: E402

from bench.tf215 import tf215_python  # noqa: E402

RECORDING = os.path.join(os.path.dirname(HELPERS), "data", "tf215_notebook.json")
HAND_EDIT = ("features['x'].shape[-1].value", "features['x'].shape[-1]")


def main() -> None:
    python = tf215_python(None)
    with tempfile.TemporaryDirectory() as work:
        original, upgraded = os.path.join(work, "training.ipynb"), os.path.join(work, "upgraded.ipynb")
        with open(original, "w") as stream:
            json.dump(tf1_notebook.notebook(), stream)
        subprocess.run([python, "-m", "tensorflow.tools.compatibility.tf_upgrade_v2_main", "--infile", original,
                        "--outfile", upgraded, "--reportfile", os.path.join(work, "report.txt")],
                       check=True, capture_output=True, text=True)
        cells = json.load(open(upgraded))["cells"]
        source = tf1_notebook.program(cells, os.path.join(work, "model"))
        if HAND_EDIT[0] not in source:
            raise SystemExit(f"`{HAND_EDIT[0]}` is not there after tf_upgrade_v2; update HAND_EDIT")
        run = subprocess.run([python, "-c", source.replace(*HAND_EDIT)], capture_output=True, text=True, cwd=work,
                             env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    if run.returncode != 0:
        raise SystemExit(f"the notebook failed under TF 2.15: {run.stderr[-3000:]}")
    result = json.loads(run.stdout.strip().splitlines()[-1])
    result["hand_edits"] = [" -> ".join(HAND_EDIT)]
    with open(RECORDING, "w") as stream:
        json.dump(result, stream, indent=1, sort_keys=True)
        stream.write("\n")
    print("recorded", RECORDING, result)


if __name__ == "__main__":
    main()
