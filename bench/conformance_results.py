"""pytest plugin: one JSON line per test report, for bench/conformance.py's counts.

    python -m pytest -p conformance_results FILE      (bench/ on PYTHONPATH; CONFORMANCE_RESULTS=OUT.jsonl)

Each line: the test's `nodeid`, its `when` (setup, call, teardown), `outcome`, the exception's
`message` (type and text, as pytest's crash line gives them) and `frames` (the files of its
traceback), which is what tells a failure in the project from one in the test's own code.
"""

from __future__ import annotations

import json
import os

_OUT = os.environ.get("CONFORMANCE_RESULTS", "conformance.jsonl")


def pytest_collection_modifyitems(config, items: list) -> None:
    """Leaves out `tf.test.TestCase.test_session`, a deprecated helper pytest collects in every test class:
    it tests nothing."""
    kept = [item for item in items if item.name != "test_session"]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item.name == "test_session"])
        items[:] = kept


def _frames(longrepr) -> list[str]:
    entries = getattr(getattr(longrepr, "reprtraceback", None), "reprentries", None) or []
    return [entry.reprfileloc.path for entry in entries if getattr(entry, "reprfileloc", None) is not None]


def pytest_runtest_logreport(report) -> None:
    if report.when != "call" and report.outcome == "passed":
        return  # a passing setup or teardown says nothing the call does not
    crash = getattr(report.longrepr, "reprcrash", None)
    message = crash.message if crash is not None else (str(report.longrepr)[-500:] if report.longrepr else "")
    record = {
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": "error" if report.when != "call" and report.outcome == "failed" else report.outcome,
        "message": message,
        "frames": _frames(report.longrepr),
    }
    with open(_OUT, "a") as stream:
        stream.write(json.dumps(record) + "\n")
