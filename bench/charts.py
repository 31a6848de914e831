"""PNG charts of the bench tables (`--plot`), with matplotlib (a dependency).

Each function takes a table's numbers as they were printed and writes one PNG.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def _pyplot():
    try:
        import matplotlib
    except ImportError as error:
        raise SystemExit("--plot needs matplotlib: pip install -e .") from error
    matplotlib.use("Agg")  # files only: no screen needed
    import matplotlib.pyplot as pyplot

    return pyplot


def grouped_bars(path: str, title: str, groups: Sequence[str], series: Mapping[str, Sequence[float]],
                 ideal: float | None = None, ylabel: str = "") -> None:
    """One group of bars per entry of `groups`, one bar per series; an optional dashed ideal line."""
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(figsize=(7, 4), dpi=120)
    width = 0.8 / max(len(series), 1)
    for i, (name, values) in enumerate(series.items()):
        positions = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        bars = axes.bar(positions, values, width, label=name)
        axes.bar_label(bars, fmt="%.2f", fontsize=7)
    if ideal is not None:
        axes.axhline(ideal, color="black", linestyle="--", linewidth=1, label="ideal")
    axes.set_xticks(range(len(groups)), groups)
    axes.set_title(title, fontsize=10)
    axes.set_ylabel(ylabel)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path)
    pyplot.close(figure)


def bars(path: str, title: str, values: Mapping[str, float], ylabel: str = "") -> None:
    """One bar per entry."""
    grouped_bars(path, title, list(values), {"": list(values.values())}, ylabel=ylabel)
