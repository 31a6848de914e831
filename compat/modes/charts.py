"""The PNG pictures a run writes: the tuning front and the test split's confusion matrix.

matplotlib's object API (`Figure`, no pyplot state), rendered to files only, each
written whole (`compat.core.atomic`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from compat.core import atomic


def _figure(size: tuple[float, float]):
    from matplotlib.figure import Figure  # the Agg canvas: files only, no screen needed

    return Figure(figsize=size, dpi=120)


def _save(figure, path: str) -> None:
    figure.tight_layout()
    atomic.write_file(path, lambda temp: figure.savefig(temp, format="png"))


def pareto_png(
    path: str,
    speeds: Sequence[float],
    scores: Sequence[float],
    labels: Sequence[str],
    front: Sequence[int],
    score_name: str,
) -> None:
    """Each trial's score against its training examples/s; the trials at indices `front` joined, fastest first."""
    figure = _figure((6, 4))
    axes = figure.add_subplot()
    axes.scatter(speeds, scores, color="0.6", label="trial")
    axes.plot([speeds[i] for i in front], [scores[i] for i in front], "o-", color="C3", label="Pareto front")
    for speed, score, label in zip(speeds, scores, labels):
        axes.annotate(label, (speed, score), textcoords="offset points", xytext=(4, 4), fontsize=8)
    axes.set_xlabel("training examples/s")
    axes.set_ylabel(score_name)
    axes.legend()
    _save(figure, path)


def confusion_png(path: str, matrix: np.ndarray, class_names: Sequence[str]) -> None:
    """Rows: the true class; columns: the predicted one; each cell its count."""
    size = max(4.0, 0.45 * len(class_names) + 2)
    figure = _figure((size, size))
    axes = figure.add_subplot()
    axes.imshow(matrix, cmap="Blues")
    ticks = range(len(class_names))
    axes.set_xticks(ticks, class_names, rotation=90, fontsize=7)
    axes.set_yticks(ticks, class_names, fontsize=7)
    axes.set_xlabel("predicted")
    axes.set_ylabel("true")
    threshold = matrix.max() / 2 if matrix.size else 0
    for (row, column), count in np.ndenumerate(matrix):
        if count:
            axes.text(
                column,
                row,
                int(count),
                ha="center",
                va="center",
                fontsize=7,
                color="white" if count > threshold else "black",
            )
    _save(figure, path)
