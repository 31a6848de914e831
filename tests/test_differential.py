"""Generated Estimator programs replayed against TF 2.15's recorded results (tests/differential/).

tests/data/differential/tf215.jsonl holds TF 2.15's results for a fixed range of seeds, each run twice
there (the places where its two runs differed are recorded and left out). Here the same programs run
under compat.estimator.install() in one subprocess, and each result must equal TF 2.15's, differ only as
docs/estimator.md lists, or differ only where tests/data/differential/open_differences.json says a
difference is still open (found, not yet fixed: each seed's places, removed as they are fixed). A new
difference fails. bench/differential.py runs the whole range with TF 2.15 itself.
"""

import json
import os
import subprocess
import sys

import pytest
from conftest import LEGACY_KERAS, REPO

from tests.differential import compare, generator

RECORDED = os.path.join(REPO, "tests", "data", "differential", "tf215.jsonl")
OPEN = os.path.join(REPO, "tests", "data", "differential", "open_differences.json")
# Seeds replayed here, of those recorded: every program family and dimension is in them (the coverage test).
REPLAYED = 50


def _recorded() -> list[dict]:
    with open(RECORDED) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_the_recorded_seeds_are_the_programs_the_generator_draws_now():
    """A changed generator makes the recordings stale: re-record with bench/differential.py --record."""
    stale = [r["seed"] for r in _recorded() if r["spec"] != generator.digest(generator.program(r["seed"]))]
    assert not stale, f"re-record seeds {stale[:10]}: python bench/differential.py --seeds 0:N --record {RECORDED}"


def test_the_replayed_seeds_cover_every_program_family_and_operation():
    table = {row[0]: row for row in compare.coverage(list(range(REPLAYED)))}
    for dimension in ("family", "canned_api", "input", "op", "hook", "experimental", "column"):
        _, seen, total, never = table[dimension]
        assert seen == total, f"{dimension}: never drawn in the replayed seeds: {never}"


@pytest.mark.slow
def test_generated_programs_match_tf215(tmp_path):
    records = _recorded()[:REPLAYED]
    out = tmp_path / "results.jsonl"
    command = [sys.executable, "-m", "tests.differential.worker", "--ours", "--seeds",
               ",".join(str(r["seed"]) for r in records), "--out", str(out), "--workdir", str(tmp_path / "work")]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1200,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": REPO})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    ours = {r["seed"]: r["result"] for r in map(json.loads, out.read_text().splitlines())}
    with open(OPEN) as f:
        still_open = json.load(f)
    differing = {}
    for record in records:
        seed = record["seed"]
        undocumented, _ = compare.compare(generator.program(seed), record["result"], ours[seed], record["unstable"],
                                          "2" if LEGACY_KERAS else "3")
        new = [line for line in undocumented if line.split(": ")[0] not in still_open.get(str(seed), [])]
        if new:
            differing[seed] = new[:5]
    keras = "TF_USE_LEGACY_KERAS=1" if LEGACY_KERAS else "Keras 3"
    assert not differing, f"{len(differing)} of {len(records)} programs differ from TF 2.15 ({keras}) where no " \
                          "difference was open: " + json.dumps(differing, indent=1)
