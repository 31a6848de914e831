"""What differs between TF 2.15's result for a seed and ours, and which differences are documented.

Exact: dict keys, operation names, file lists, summary tags and steps, checkpoint variable names,
shapes and kept steps, what hooks saw, export signatures, where a program stopped and with what
exception (ours may be a subclass of TF 2.15's). Numbers: within RTOL and ATOL of TF 2.15's (a
few float32 training steps on CPU; two TF 2.15 runs of a seed give the same numbers, bench/differential.py
--twice shows it). Differences docs/estimator.md lists are reported apart, with its reason, never
hidden by a wider tolerance.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import generator

RTOL = 1e-4
ATOL = 1e-5


@dataclass(frozen=True)
class Documented:
    """A difference docs/estimator.md lists: where it shows (a path pattern) and for which programs."""

    pattern: str
    applies: Callable[[dict], bool]
    reason: str

    def covers(self, spec: dict, path: str) -> bool:
        return self.applies(spec) and fnmatch.fnmatchcase(path, self.pattern)


def _keras(spec: dict) -> bool:
    return spec["family"] == "keras"


def _optimizer_forms(spec: dict) -> set[str]:
    return {spec[k]["form"] for k in ("optimizer", "linear_optimizer") if spec.get(k)} if spec.get("api") == "v2" else set()


def _keras3_optimizer_object(spec: dict) -> bool:
    return "instance" in _optimizer_forms(spec)


def _trains_twice_with_object(spec: dict) -> bool:
    trains = sum(op["op"].startswith("train") or op["op"] in ("warm_start", "warm_start_settings") for op in spec["ops"])
    return trains > 1 and bool(_optimizer_forms(spec) & {"legacy_instance", "schedule"})


def _keras_keeps_fewer(spec: dict) -> bool:
    return _keras(spec) and spec["config"]["keep_checkpoint_max"] is not None


def _keras_metric_unfit_for_labels(spec: dict) -> bool:
    return _keras(spec) and spec["head"] == "multiclass" and spec["keras_metrics"] in ("mse", "weighted")


def _tf2_baseline_on_a_dataset(spec: dict) -> bool:
    dataset = spec["input"]["kind"] in ("dataset", "params", "generator")
    return spec.get("api") == "v2" and spec.get("class", "").startswith("Baseline") and dataset


# Differences docs/estimator.md lists ("Better than the reference, on purpose", "Differences that remain").
DOCUMENTED: tuple[Documented, ...] = (
    Documented("folder.files.graph.pbtxt", _keras, "model_to_estimator: no .meta or graph.pbtxt"),
    Documented("folder.files.model.ckpt-*.meta", _keras, "model_to_estimator: no .meta or graph.pbtxt"),
    Documented("folder.files.model.ckpt-*", _keras_keeps_fewer, "model_to_estimator keeps keep_checkpoint_max "
                                                                "checkpoints (TF 2.15 kept 5)"),
    Documented("folder.kept", _keras_keeps_fewer, "model_to_estimator keeps keep_checkpoint_max checkpoints"),
    Documented("*", _keras_metric_unfit_for_labels, "model_to_estimator updates the compiled metrics in training: "
                                                    "one that cannot take the labels fails at train()"),
    Documented("*", _keras3_optimizer_object, "TF2 canned estimators take Keras 3 optimizer objects (TF 2.15 refused "
                                              "them at train())"),
    Documented("*", _tf2_baseline_on_a_dataset, "TF2 Baseline estimators train on a Dataset of several features "
                                                "(TF 2.15 raised FailedPreconditionError: iterator not initialized)"),
    Documented("*", _trains_twice_with_object, "a TF2 canned estimator given an optimizer object trains on in a "
                                               "second train() (TF 2.15 raised RuntimeError)"),
)  # fmt: skip


def numbers_close(ref: float, ours: float) -> bool:
    return math.isclose(ref, ours, rel_tol=RTOL, abs_tol=ATOL)


def diff(ref: Any, ours: Any, path: str = "") -> list[tuple[str, str]]:
    """(path, what differs) for every place `ours` differs from `ref`."""
    if isinstance(ref, dict) and isinstance(ours, dict):
        found = []
        for key in sorted(set(ref) | set(ours)):
            where = f"{path}.{key}" if path else str(key)
            if key not in ours:
                found.append((where, "missing here"))
            elif key not in ref:
                found.append((where, "not in TF 2.15's"))
            else:
                found.extend(diff(ref[key], ours[key], where))
        return found
    if isinstance(ref, list) and isinstance(ours, list):
        if len(ref) != len(ours):
            return [(path, f"TF 2.15 {_short(ref)}, here {_short(ours)}")]
        return [item for i, (a, b) in enumerate(zip(ref, ours)) for item in diff(a, b, f"{path}[{i}]")]
    both_numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (ref, ours))
    if both_numbers and numbers_close(float(ref), float(ours)):
        return []
    if ref != ours:
        return [(path, f"TF 2.15 {_short(ref)}, here {_short(ours)}")]
    return []


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 160 else text[:157] + "..."


def _error(ref: dict | None, ours: dict | None) -> list[tuple[str, str]]:
    if ref is None and ours is None:
        return []
    if ref is None or ours is None:
        describe = ("raised nothing" if e is None else f"raised {e['type']} at {e['at']}: {e['message'][:120]}"
                    for e in (ref, ours))  # fmt: skip
        return [("error", "TF 2.15 {}; here {}".format(*describe))]
    found = []
    if ref["at"] != ours["at"]:
        found.append(("error.at", f"TF 2.15 stopped at {ref['at']}, here at {ours['at']}"))
    if ref["type"] not in ours["bases"]:
        found.append(("error.type", f"TF 2.15 {ref['type']} ({ref['message'][:100]}), here {ours['type']} "
                                    f"({ours['message'][:100]})"))  # fmt: skip
    return found


# The global step a recording hook fetched beside the train op: a read of the variable that races its
# increment in the same session.run, on TF 2.15 as here (the hook should read it after the run; the
# recorded results predate that), so not compared.
RACY = re.compile(r"hooks\.[a-z_]+\[\d+\]\[1\]$")


def _scope(path: str) -> str:
    """What a number that does not repeat makes unrepeatable with it: its whole operation (class ids follow
    logits), all checkpoint values, a hook's whole log."""
    parts = re.match(r"(ops\[\d+\]|folder\.variables|folder\.summaries|hooks\.[^.\[]+)", path)
    return parts.group(1) if parts else path


def differing_paths(first: dict, second: dict) -> list[str]:
    """Where two results of one program differ: run on TF 2.15 twice, the places TF 2.15 itself does not
    repeat (unseeded Python `random` in Keras 2's initializers, threads feeding a shuffling queue)."""
    return sorted({_scope(path) for path, _ in _error(first.get("error"), second.get("error")) + diff(
        {k: v for k, v in first.items() if k != "error"}, {k: v for k, v in second.items() if k != "error"})})


def _unstable(path: str, unstable: list[str]) -> bool:
    return any(path == u or path.startswith((u + ".", u + "[")) or u.startswith((path + ".", path + "["))
               for u in unstable)  # fmt: skip


def compare(spec: dict, ref: dict, ours: dict, unstable: list[str] = ()) -> tuple[list[str], list[str]]:
    """(undocumented differences, documented ones) between TF 2.15's result `ref` and `ours`, leaving out the
    places where two TF 2.15 runs of the program differed (`unstable`)."""
    found = _error(ref.get("error"), ours.get("error"))
    rest = [k for k in sorted(set(ref) | set(ours)) if k != "error"]
    for key in rest:
        if key not in ref or key not in ours:
            found.append((key, "missing here" if key not in ours else "not in TF 2.15's"))
        else:
            found.extend(diff(ref[key], ours[key], key))
    undocumented, documented = [], []
    for path, what in found:
        if _unstable(path, list(unstable)) or RACY.match(path):
            continue
        flat = re.sub(r"\[\d+\]", "", path)
        entry = next((d for d in DOCUMENTED if d.covers(spec, flat)), None)
        (documented if entry else undocumented).append(f"{path}: {what}" + (f"  [{entry.reason}]" if entry else ""))
    return undocumented, documented


def coverage(seeds: list[int]) -> list[tuple[str, int, int, list]]:
    """Per dimension of the generator: values drawn by these seeds, values it has, and those never drawn."""
    drawn: dict[str, set] = {}
    for seed in seeds:
        for dimension, values in generator.program(seed)["covered"].items():
            drawn.setdefault(dimension, set()).update(repr(v) for v in values)
    table = []
    for dimension, universe in generator.UNIVERSE.items():
        values = {repr(generator.jsonable(v)) for v in universe}
        seen = drawn.get(dimension, set()) & values
        table.append((dimension, len(seen), len(values), sorted(values - seen)))
    return table
