"""Figures of a `DatasetStats`, drawn like the HippoCamp paper's (appendix figures 19–21, difficulty).

matplotlib is imported only when plotting, with the Agg backend, so nothing needs a display.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hippocamp.dataset.stats import AXES, BENCHMARK, DIFFICULTY_BIN_WIDTH, Axis, DatasetStats, merged_bins

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["AccuracyPanel", "plot_accuracy_panels", "plot_latency", "plot_stats"]

_PROFILE_COLORS = ("#E7A9B9", "#9CCFAE", "#9EC6E8", "#C9B3E6", "#E8D59E", "#A9D8D8")
_BENCHMARK_COLOR = "#F1C99E"
_EDGE = "#334155"
_MEAN_COLOR, _MEDIAN_COLOR = "#B91C1C", "#16A34A"
_TASK_COLORS = {"factual_retention": "#2563EB", "profiling": "#D97706"}
_DPI = 110
_FILE_NAMES = {
    "evidence_files": "evidence_files.png",
    "modality_count": "modality_breadth.png",
    "reasoning_steps": "reasoning_steps.png",
}

#: draws one panel: ``draw(ax, group, color)``
Draw = Callable[["Axes", str, str], None]


def plot_stats(stats: DatasetStats, out_dir: str | Path) -> list[Path]:
    """Write ``evidence_files.png``, ``modality_breadth.png``, ``reasoning_steps.png`` and
    ``difficulty.png`` into ``out_dir`` (created if missing); one panel per profile plus `BENCHMARK`.
    Returns the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for axis in AXES:
        fig = _panels(plt, stats, f"{axis.title} distribution", partial(_bars, stats=stats, axis=axis))
        written.append(_save(plt, fig, out / _FILE_NAMES[axis.key]))
    fig = _panels(plt, stats, "Difficulty distribution", partial(_difficulty, stats=stats))
    written.append(_save(plt, fig, out / "difficulty.png"))
    return written


def _panels(plt: Any, stats: DatasetStats, title: str, draw: Draw) -> Figure:
    """A grid of panels, two per row: each profile, then the benchmark."""
    groups = [*stats.profiles, BENCHMARK]
    ncols = min(len(groups), 2)
    nrows = -(-len(groups) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.4 * ncols, 4.4 * nrows), squeeze=False)
    flat = list(axes.flat)
    for i, (ax, group) in enumerate(zip(flat, groups, strict=False)):
        color = _BENCHMARK_COLOR if group == BENCHMARK else _PROFILE_COLORS[i % len(_PROFILE_COLORS)]
        draw(ax, group, color)
    for ax in flat[len(groups) :]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=15, fontweight="bold")
    fig.tight_layout()
    return fig


def _save(plt: Any, fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=_DPI)
    plt.close(fig)
    return path


def _style(ax: Axes, title: str, xlabel: str) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.set_title(title, fontsize=12, fontweight="bold")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Question count")
    ax.grid(axis="y", linestyle="--", alpha=0.3)
    ax.set_axisbelow(True)


def _bars(ax: Axes, group: str, color: str, *, stats: DatasetStats, axis: Axis) -> None:
    """Questions per value of one complexity axis, the long tail merged into one bin."""
    bins = merged_bins(getattr(stats.groups[group], axis.key), axis.tail_quantile)
    labels = [label for label, _ in bins]
    counts = [count for _, count in bins]
    bars = ax.bar(range(len(bins)), counts, color=color, edgecolor=_EDGE, linewidth=0.8)
    ax.bar_label(bars, fontsize=8)
    ax.set_xticks(range(len(bins)), labels, rotation=30 if len(bins) > 12 else 0, fontsize=9)
    _style(ax, f"{group} (n={stats.groups[group].questions})", axis.label)


def _difficulty(ax: Axes, group: str, color: str, *, stats: DatasetStats) -> None:
    """Histogram of difficulty with mean and median lines and one count line per task family."""
    summary = stats.groups[group].difficulty
    width = DIFFICULTY_BIN_WIDTH
    centers = [i * width + width / 2 for i in range(len(summary.histogram))]
    ax.bar(centers, summary.histogram, width=width * 0.84, color=color, edgecolor=_EDGE, label="All")
    for task, counts in summary.histogram_by_task.items():
        if task in _TASK_COLORS:
            ax.plot(
                centers,
                counts,
                color=_TASK_COLORS[task],
                marker="o",
                markersize=3,
                linewidth=1.8,
                label=task.replace("_", " ").capitalize(),
            )
    if summary.mean is not None and summary.median is not None:
        ax.axvline(summary.mean, color=_MEAN_COLOR, linestyle="--", linewidth=1.6, label=f"Mean {summary.mean:.1f}")
        ax.axvline(
            summary.median, color=_MEDIAN_COLOR, linestyle="-.", linewidth=1.6, label=f"Median {summary.median:.1f}"
        )
        note = f"n={len(summary.scores)}\n>=70: {100 * (summary.hard_share or 0.0):.1f}%"
        ax.text(
            0.97,
            0.97,
            note,
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=9,
            bbox={"boxstyle": "round,pad=0.3", "facecolor": "white", "edgecolor": "#64748B"},
        )
    ax.set_xlim(0, 100)
    ax.set_ylim(0, max(1, *summary.histogram) * 1.3)  # headroom for the legend and the note
    ax.set_xticks(range(0, 101, 10))
    ax.legend(loc="upper left", fontsize=8, framealpha=0.9)
    _style(ax, group, "Difficulty score (0-100)")


# -- run reports ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class AccuracyPanel:
    """One panel of grouped bars: accuracy (0-1, None when nothing was scored) per label and run."""

    title: str
    xlabel: str
    labels: Sequence[str]
    values: dict[str, Sequence[float | None]]
    counts: dict[str, Sequence[int]]


def _png(plt: Any, fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI)
    plt.close(fig)
    return buf.getvalue()


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _run_color(i: int) -> str:
    return _PROFILE_COLORS[i % len(_PROFILE_COLORS)]


def plot_accuracy_panels(panels: Sequence[AccuracyPanel], title: str) -> bytes:
    """Accuracy (%) as grouped bars, one colour per run and one panel each, as a PNG. A bar is labelled
    with its accuracy and its count of scored questions; a group with none scored is marked "n=0"."""
    plt = _pyplot()
    ncols = min(len(panels), 3)
    nrows = -(-len(panels) // ncols)
    runs_n = max(1, *(len(p.values) for p in panels))
    widths = [max(3.6, 1.0 + len(p.labels) * (0.45 + 0.32 * runs_n)) for p in panels]
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(min(18.0, max(6.4, sum(widths[:ncols]))), 4.4 * nrows), squeeze=False,
        gridspec_kw={"width_ratios": widths[:ncols]} if nrows == 1 else None,
    )  # fmt: skip
    flat = list(axes.flat)
    for ax, panel in zip(flat, panels, strict=False):
        runs = list(panel.values)
        width = 0.8 / max(1, len(runs))
        for i, run in enumerate(runs):
            xs = [j - 0.4 + width * (i + 0.5) for j in range(len(panel.labels))]
            heights = [100.0 * v if v is not None else 0.0 for v in panel.values[run]]
            bars = ax.bar(xs, heights, width=width * 0.92, color=_run_color(i), edgecolor=_EDGE, linewidth=0.7,
                          label=run)  # fmt: skip
            notes = [
                f"{h:.0f}%\nn={n}" if v is not None else "n=0"
                for h, v, n in zip(heights, panel.values[run], panel.counts[run], strict=True)
            ]
            ax.bar_label(bars, notes, fontsize=7 if len(runs) < 3 else 6, padding=2)
        ticks = [label.replace("_", "\n") for label in panel.labels]
        ax.set_xticks(range(len(panel.labels)), ticks, fontsize=8.5)
        ax.set_ylim(0, 122)
        ax.set_yticks(range(0, 101, 20))
        ax.set_ylabel("Accuracy (%)")
        ax.set_xlabel(panel.xlabel)
        ax.set_title(panel.title, fontsize=12, fontweight="bold")
        ax.grid(axis="y", linestyle="--", alpha=0.3)
        ax.set_axisbelow(True)
    for ax in flat[len(panels) :]:
        ax.set_visible(False)
    handles, names = flat[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="upper right", fontsize=9, framealpha=0.9)
    if len(panels) > 1:
        fig.suptitle(title, fontsize=14, fontweight="bold", x=0.02, ha="left")
    else:
        flat[0].set_title(title, fontsize=13, fontweight="bold")
    fig.tight_layout(rect=(0, 0, 1, 0.93 if len(panels) > 1 or len(panels[0].values) > 1 else 1))
    return _png(plt, fig)


def plot_latency(runs: Sequence[str], seconds: Sequence[Sequence[float]]) -> bytes:
    """Seconds per episode, one box per run (log scale when they span over two decades), as a PNG."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6.4, 1.6 + 1.9 * len(runs)), 4.2))
    data = [list(s) or [math.nan] for s in seconds]
    box = ax.boxplot(data, patch_artist=True, widths=0.55, medianprops={"color": _MEDIAN_COLOR, "linewidth": 1.8})
    for i, patch in enumerate(box["boxes"]):
        patch.set_facecolor(_run_color(i))
        patch.set_edgecolor(_EDGE)
    known = [v for s in seconds for v in s if v > 0]
    if known and max(known) / min(known) > 100:
        ax.set_yscale("log")
    ax.set_xticks(range(1, len(runs) + 1), list(runs), rotation=15 if len(runs) > 3 else 0, fontsize=9)
    ax.set_ylabel("Seconds per episode")
    ax.set_title("Latency", fontsize=12, fontweight="bold")
    ax.grid(axis="y", linestyle="--", alpha=0.3)
    ax.set_axisbelow(True)
    fig.tight_layout()
    return _png(plt, fig)
