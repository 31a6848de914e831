"""Records TF 2.15's run of each TF 1.x test program after TF 2.15's own upgrader.

    python tests/helpers/tf215_tf1_programs.py

Run with this project's interpreter: for each program (tests/helpers/tf1_*_program.py) it runs TF 2.15's
`tf_upgrade_v2` on a copy, runs the upgraded copy under TF 2.15 (bench/tf215.py's side environment) and writes
the JSON lines into tests/data/tf215_tf1_programs.json, which tests/test_check.py compares with.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile

HELPERS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HELPERS))
sys.path.insert(0, REPO)

from bench.tf215 import tf215_python  # noqa: E402

RECORDING = os.path.join(REPO, "tests", "data", "tf215_tf1_programs.json")


def main() -> None:
    python = tf215_python(None)
    upgrader = os.path.join(os.path.dirname(python), "tf_upgrade_v2")
    recorded = {}
    for program in sorted(glob.glob(os.path.join(HELPERS, "tf1_*_program.py"))):
        name = os.path.basename(program)
        with tempfile.TemporaryDirectory() as folder:
            upgraded = os.path.join(folder, name)
            subprocess.run([upgrader, "--infile", program, "--outfile", upgraded, "--reportfile",
                            os.path.join(folder, "report.txt")], check=True, capture_output=True)
            result = subprocess.run([python, upgraded, f"--model_dir={os.path.join(folder, 'model')}"],
                                    capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
            if result.returncode != 0:
                raise SystemExit(f"{name} failed under TF 2.15 after tf_upgrade_v2:\n{result.stderr[-3000:]}")
        recorded[name] = json.loads(result.stdout.strip().splitlines()[-1])
        print(name, "recorded")
    with open(RECORDING, "w") as stream:
        json.dump(recorded, stream, indent=1, sort_keys=True)
        stream.write("\n")


if __name__ == "__main__":
    main()
