"""Jupyter notebooks for the migration check: their code cells as one Python source, and back.

The check reads a notebook's code cells in order as one program (an import in the first cell binds the
name the third one uses), and `--fix` writes what it made of that program back into the same cells, each
cell keeping its outputs and metadata and the notebook everything else. IPython's own lines (`%magic`,
`!shell`, `?help`) are kept as they were: they pass through the check as comments. Cells of another
language (`%%bash`) are left alone, as TensorFlow's `tf_upgrade_v2` leaves them.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re

_CELL = "# compat.estimator.check: notebook cell {index}"
_CELL_LINE = re.compile(r"^# compat\.estimator\.check: notebook cell (\d+)$")
_IPYTHON = "#compat.estimator.check:ipython:"  # before a line Python cannot read (`%time ...`, `!pip ...`)


def is_notebook(path: str) -> bool:
    return path.endswith(".ipynb")


def _is_python(cell: dict) -> bool:
    lines = _lines(cell)
    return cell.get("cell_type") == "code" and bool(lines) and not lines[0].startswith("%%")


def _lines(cell: dict) -> list[str]:
    source = cell.get("source", [])
    return (source if isinstance(source, list) else source.splitlines(keepends=True)) or []


def _hidden(lines: list[str]) -> list[str]:
    """The cell's lines with IPython's own (and the lines they continue with `\\`) turned into comments."""
    out, continued = [], False
    for line in lines:
        text = line.rstrip("\n")
        if continued or text.lstrip().startswith(("%", "!", "?")):
            out.append(_IPYTHON + text)
            continued = text.endswith("\\")
        else:
            out.append(text)
    return out


def python_source(text: str) -> str:
    """The notebook `text` (its JSON) as one Python source: each code cell after a marker line."""
    notebook = json.loads(text)
    parts = []
    for index, cell in enumerate(notebook.get("cells", [])):
        if _is_python(cell):
            parts.append("\n".join([_CELL.format(index=index), *_hidden(_lines(cell))]))
    return "\n".join(parts) + "\n"


@dataclasses.dataclass(frozen=True)
class Place:
    """Where a line of `python_source` is in the notebook: a cell's index and the line in it (from 1)."""

    cell: int
    line: int


def place(source: str, line: int) -> Place:
    """Where line `line` of `python_source`'s text (or of what `--fix` made of it) is in the notebook."""
    cell, start = 0, 0
    for number, text in enumerate(source.splitlines()[:line], start=1):
        found = _CELL_LINE.match(text)
        if found:
            cell, start = int(found.group(1)), number
    return Place(cell, line - start)


def with_python_source(text: str, source: str) -> str:
    """The notebook `text` with each code cell's code as `source` (a `python_source` changed) has it;
    outputs, metadata and the other cells as they were."""
    notebook = json.loads(text)
    cells: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in source.splitlines():
        found = _CELL_LINE.match(line)
        if found:
            current = cells.setdefault(int(found.group(1)), [])
        elif current is not None:
            current.append(line[len(_IPYTHON) :] if line.startswith(_IPYTHON) else line)
    changed = copy.deepcopy(notebook)
    for index, lines in cells.items():
        cell = changed["cells"][index]
        ended = _lines(notebook["cells"][index])[-1].endswith("\n")
        while lines and not lines[-1] and not ended:
            lines.pop()
        joined = [line + "\n" for line in lines]
        if joined and not ended:
            joined[-1] = joined[-1][:-1]
        cell["source"] = joined if isinstance(notebook["cells"][index].get("source"), list) else "".join(joined)
    return json.dumps(changed, indent=1, ensure_ascii=False) + "\n"
