"""Records TensorFlow 2.15's run of bert_finetune.py: `python tests/helpers/tf215_bert.py`.

Run with this project's interpreter. In TF 2.15's side environment (bench/tf215.py) it copies bert-tensorflow
1.0.4's `bert` package, rewrites it with TF 2.15's own `tf_upgrade_v2`, makes the hand edits TF 2.15 still
needed (HAND_EDITS: TensorFlow 2 has no tensorflow.contrib, whose layer_norm tf-slim keeps; the upgrader
leaves `tf.flags`, which TF 2 keeps under tf.compat.v1; a TF 2 shape's item has no `.value`), then fine-tunes
the tiny BERT there and writes tests/data/tf215_bert.json, which tests/test_check.py compares this project's
run (after `check --fix` alone) with.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.dirname(os.path.dirname(__file__)))]

import libraries  # noqa: E402

from bench.tf215 import tf215_python  # noqa: E402

RECORDING = os.path.join(libraries.REPO, "tests", "data", "tf215_bert.json")
# (file, before, after): what a person changed after TF 2.15's upgrader for the fine-tuning to run there
HAND_EDITS = [
    ("modeling.py", "from tensorflow.contrib import layers as contrib_layers",
     "from tf_slim import layers as contrib_layers"),
    ("run_classifier.py", "tf.flags", "tf.compat.v1.flags"),  # each of its uses
    ("run_classifier.py", "hidden_size = output_layer.shape[-1].value", "hidden_size = output_layer.shape[-1]"),
]


def main() -> None:
    python = tf215_python(None)
    with tempfile.TemporaryDirectory() as work:
        original = libraries.copy_of_bert(os.path.join(work, "original"), python)
        upgraded = os.path.join(work, "upgraded")
        subprocess.run([python, "-m", "tensorflow.tools.compatibility.tf_upgrade_v2_main", "--intree", original,
                        "--outtree", upgraded, "--reportfile", os.path.join(work, "report.txt")],
                       check=True, capture_output=True, text=True)
        for name, before, after in HAND_EDITS:
            path = os.path.join(upgraded, "bert", name)
            text = open(path, encoding="utf-8").read()
            if before not in text:
                raise SystemExit(f"{name}: `{before}` is not there after tf_upgrade_v2; update HAND_EDITS")
            open(path, "w", encoding="utf-8").write(text.replace(before, after))
        env = {**os.environ, "PYTHONPATH": libraries.install(libraries.TF_SLIM, python), "TF_CPP_MIN_LOG_LEVEL": "2"}
        run = subprocess.run([python, os.path.join(libraries.HELPERS, "bert_finetune.py"), "--bert", upgraded,
                              "--workdir", work], capture_output=True, text=True, env=env)
    if run.returncode != 0:
        raise SystemExit(f"bert_finetune.py failed under TF 2.15: {run.stderr[-3000:]}")
    result = json.loads(run.stdout.strip().splitlines()[-1])
    result["hand_edits"] = [f"{name}: {before} -> {after}" for name, before, after in HAND_EDITS]
    with open(RECORDING, "w") as stream:
        json.dump(result, stream, indent=1, sort_keys=True)
        stream.write("\n")
    print("recorded", RECORDING, result["eval"])


if __name__ == "__main__":
    main()
