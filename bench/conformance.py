"""How much of TF 2.15's tested public behaviour compat.estimator reproduces, from the conformance suite.

    bash ../shared/conformance/run.sh                 # runs tensorflow/estimator 2.15's own tests (~15 min)
    python bench/conformance.py [--results /tmp/conformance] [--markdown]

Reads the runner's per-test results and TF 2.15's baseline, and sorts every
test that passes on TF 2.15 into one of:

  passes      passes here too
  private     fails reaching an internal of tensorflow_estimator (a name with a
              leading underscore, an attribute of one, or a mock of one): not a goal,
              the suite's README says
  keras2      fails inside the test's own code because it needs Keras 2 (it builds
              Keras 2 models or optimizers); the rules below say how that is told
  counted     fails, and counts against the project

and prints, per file and in total, passes / (passes + counted): the share of
TF 2.15's public behaviour, as tested, that holds here.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

SHARED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "conformance")

# A failure is the test's own Keras 2 code when no frame of the project is on its traceback and its message
# is one of these: each is Keras 3 refusing what Keras 2 took.
_KERAS2_ONLY = [
    (r"has no attribute 'input_names'", "Keras 2 models listed their input names; Keras 3 models do not"),
    (r"Could not interpret optimizer identifier: <tensorflow\.python\.training",
     "compiling a Keras model with a tf.compat.v1.train optimizer (Keras 2 only)"),
    (r"`loss_weights` must match the number of losses", "Keras 2's compile() took metrics third, Keras 3's loss_weights"),
    (r"Cannot convert '1' to a shape", "Input(shape=1): Keras 3 needs a tuple"),
    (r"unhashable type: 'Variable'", "a set of Keras 3 variables, which are unhashable"),
    (r"is not a valid root scope name", "a Keras 3 optimizer built inside a tf.compat.v1 graph"),
    (r"Exception encountered when calling Lambda\.call\(\)", "a Lambda layer calling Keras 2 backend functions"),
]
# The heads, baseline and hooks files, counted apart (they were built after the rest).
HEADS_FILES = {"head/binary_class_head_test.py", "head/multi_class_head_test.py", "head/regression_head_test.py",
                  "head/multi_label_head_test.py", "head/multi_head_test.py", "canned/baseline_test.py",
                  "hooks/hooks_test.py"}


def stem(name: str) -> str:
    return name[:-3].replace("/", "__")


def _results(folder: str, name: str) -> dict:
    """{test id: record}, the worse of a test's call and teardown records."""
    path = os.path.join(folder, stem(name) + ".jsonl")
    rank = {"passed": 0, "xfailed": 0, "skipped": 1, "xpassed": 1, "error": 2, "failed": 3}
    results: dict = {}
    if not os.path.exists(path):
        return results
    for line in open(path):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if "nodeid" not in record:
            continue
        test = record["nodeid"].split("::", 1)[-1]
        old = results.get(test)
        if old is None or rank.get(record["outcome"], 0) >= rank.get(old["outcome"], 0):
            results[test] = record
    return results


def classify(record: dict | None) -> str:
    if record is not None and record.get("outcome") == "passed":
        return "passes"
    message = (record or {}).get("message") or ""
    if re.search(r"no counterpart of tensorflow_estimator\.python\.estimator\.[\w.]*\._\w+", message) or \
            re.search(r"(does not have the attribute|object has no attribute) '_\w+'", message):
        return "private"
    in_project = any("/compat/" in frame for frame in (record or {}).get("frames", []))
    if not in_project and any(re.search(pattern, message) for pattern, _ in _KERAS2_ONLY):
        return "keras2"
    return "counted"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=os.environ.get("CONFORMANCE_OUT", "/tmp/conformance"))
    parser.add_argument("--baseline", default=os.path.join(SHARED, "baseline.json"))
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args()
    return report(json.load(open(args.baseline)), args.results, args.markdown)


def report(baseline: dict, results_dir: str, markdown: bool) -> int:
    """Prints the table and the totals: of the tests `baseline` says pass on TF 2.15, which pass here."""
    rows, totals = [], {"rest": [0, 0], "heads": [0, 0], "all": [0, 0]}
    for name in baseline["order"]:
        passing = baseline["files"][name]["passing"]
        if not passing:
            continue
        results = _results(results_dir, name)
        if not results:
            rows.append((name, None))
            continue
        counts = {"passes": 0, "private": 0, "keras2": 0, "counted": 0}
        for test in passing:
            counts[classify(results.get(test))] += 1
        rows.append((name, counts))
        for scope in ("all", "heads" if name in HEADS_FILES else "rest"):
            totals[scope][0] += counts["passes"]
            totals[scope][1] += counts["passes"] + counts["counted"]
    bar = "|" if markdown else " "
    print(f"{bar} file {bar} TF 2.15 passes {bar} pass here {bar} private {bar} Keras 2 test code {bar} counted "
          f"failures {bar} share {bar}")
    if markdown:
        print("|---|---:|---:|---:|---:|---:|---:|")
    for name, counts in rows:
        if counts is None:
            print(f"{bar} {name} {bar} (not run) {bar}")
            continue
        total = sum(counts.values())
        share = counts["passes"] / max(counts["passes"] + counts["counted"], 1)
        print(f"{bar} {name} {bar} {total} {bar} {counts['passes']} {bar} {counts['private']} {bar} "
              f"{counts['keras2']} {bar} {counts['counted']} {bar} {share:.1%} {bar}")
    for scope, label in (
        ("rest", "estimator, canned, export and the rest (all but heads, baseline, hooks)"),
        ("heads", "heads, baseline and hooks"),
        ("all", "all files"),
    ):
        passed, counted = totals[scope]
        print(f"{label}: {passed} of {counted} public-behaviour tests pass ({passed / max(counted, 1):.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
