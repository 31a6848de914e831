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

    def covers(self, spec: dict, path: str, keras: str) -> bool:
        return self.applies({**spec, "keras": keras}) and fnmatch.fnmatchcase(path, self.pattern)


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
    return _keras(spec) and spec["head"] == "multiclass" and spec["keras_metrics"] in ("mse", "weighted", "object")


def _keras_evaluates_an_old_checkpoint(spec: dict) -> bool:
    return _keras_keeps_fewer(spec) and any(op["op"] == "evaluate_checkpoint" for op in spec["ops"])


def _keras_restarts_at_max_steps(spec: dict) -> bool:
    return _keras(spec) and any("max_steps" in op for op in spec["ops"][1:])


def _v1_class_with_a_tf2_head(spec: dict) -> bool:
    return spec.get("api") == "v1" and spec.get("class") in ("DNNEstimator", "LinearEstimator")


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
    Documented("folder.summaries.eval*", _keras_evaluates_an_old_checkpoint, "model_to_estimator keeps "
               "keep_checkpoint_max checkpoints: the oldest one evaluated is another"),
    Documented("ops.metrics*", _keras_evaluates_an_old_checkpoint, "model_to_estimator keeps keep_checkpoint_max "
               "checkpoints: the oldest one evaluated is another"),
    Documented("*", _keras_restarts_at_max_steps, "a restart after max_steps was reached trains no extra step "
                                                  "(TF 2.15's Keras path trained one)"),
    Documented("ops.export.signatures.__saved_model_init_op", _keras, "model_to_estimator exports through "
               "tf.saved_model: its init-op entry and fingerprint.pb"),
    Documented("folder.files.export*/fingerprint.pb", _keras, "model_to_estimator exports through tf.saved_model: "
               "its init-op entry and fingerprint.pb"),
    Documented("*", _keras_metric_unfit_for_labels, "model_to_estimator updates the compiled metrics in training: "
                                                    "one that cannot take the labels fails at train()"),
    Documented("*", _keras3_optimizer_object, "TF2 canned estimators take Keras 3 optimizer objects (TF 2.15 refused "
                                              "them at train())"),
    Documented("*", _tf2_baseline_on_a_dataset, "TF2 Baseline estimators train on a Dataset of several features "
                                                "(TF 2.15 raised FailedPreconditionError: iterator not initialized)"),
    Documented("*", _v1_class_with_a_tf2_head, "tf.compat.v1's DNNEstimator and LinearEstimator given a TF2 "
                                               "head train with TF 1.x optimizers (TF 2.15 raised ValueError)"),
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
            return [(path, f"lengths differ: TF 2.15 {_short(ref)}, here {_short(ours)}")]
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


def _scope(path: str) -> str:
    """What a number that does not repeat makes unrepeatable with it: its whole operation (class ids follow
    logits), all checkpoint values, a hook's whole log."""
    parts = re.match(r"(ops\[\d+\]|folder\.variables|folder\.summaries|hooks\.[^.\[]+)", path)
    return parts.group(1) if parts else path


def differing_paths(first: dict, second: dict) -> list[str]:
    """Where two results of one program differ: run on TF 2.15 twice, the places TF 2.15 itself does not
    repeat (unseeded Python `random` in Keras 2's initializers, threads feeding a shuffling queue)."""
    places = {_scope(path) for path, _ in _error(first.get("error"), second.get("error")) + diff(
        {k: v for k, v in first.items() if k != "error"}, {k: v for k, v in second.items() if k != "error"})}
    if "folder.variables" in places:  # weights that do not repeat: nothing computed from them repeats either
        # "~": their values are left out, not their keys, lengths or types
        places |= {f"~ops[{i}]" for i in range(len(first.get("ops", [])))} | {"~hooks"}
    return sorted(places)


def _unstable(path: str, what: str, unstable: list[str]) -> bool:
    def under(u: str) -> bool:
        return path == u or path.startswith((u + ".", u + "[")) or u.startswith((path + ".", path + "["))

    whole = any(under(u) for u in unstable if not u.startswith("~"))
    values = what.startswith("TF 2.15 ") and any(under(u[1:]) for u in unstable if u.startswith("~"))
    return whole or values


def compare(
    spec: dict, ref: dict, ours: dict, unstable: list[str] = (), keras: str = "3"
) -> tuple[list[str], list[str]]:
    """(undocumented differences, documented ones) between TF 2.15's result `ref` and `ours` (run with Keras
    `keras`, "3" or "2"), leaving out the places where two TF 2.15 runs of the program differed (`unstable`)."""
    found = _error(ref.get("error"), ours.get("error"))
    rest = [k for k in sorted(set(ref) | set(ours)) if k != "error"]
    for key in rest:
        if key not in ref or key not in ours:
            found.append((key, "missing here" if key not in ours else "not in TF 2.15's"))
        else:
            found.extend(diff(ref[key], ours[key], key))
    undocumented, documented = [], []
    for path, what in found:
        if _unstable(path, what, list(unstable)):
            continue
        flat = re.sub(r"\[\d+\]", "", path)
        entry = next((d for d in DOCUMENTED if d.covers(spec, flat, keras)), None)
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
