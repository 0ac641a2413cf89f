"""How report numbers are written, the same in Markdown and HTML: percentages with one decimal, a
dash when nothing was scored, ``unknown`` for an unknown cost (never 0)."""

from __future__ import annotations

import math

from hippocamp.scoring.stats import CI, GroupMean, Summary

__all__ = ["DASH", "ci", "cost", "count", "delta", "delta_ci", "mean_n", "num", "pct", "pvalue", "seconds"]

DASH = "–"


def pct(value: float | GroupMean | None) -> str:
    """``0.5333`` → ``53.3``; None (nothing scored) → a dash."""
    if isinstance(value, GroupMean):
        value = value.mean
    return DASH if value is None or math.isnan(value) else f"{100.0 * value:.1f}"


def ci(interval: CI) -> str:
    """``[27.8, 72.2]`` in percent, or a dash."""
    if interval.low is None or interval.high is None:
        return DASH
    return f"[{100.0 * interval.low:.1f}, {100.0 * interval.high:.1f}]"


def num(value: float | None, unit: str = "") -> str:
    """A value in its unit: ``%`` as a percentage, ``s`` as seconds, else a plain number."""
    if value is None or math.isnan(value):
        return DASH
    if unit == "%":
        return pct(value)
    if unit == "s":
        return seconds(value)
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def delta(value: float | None, unit: str = "") -> str:
    """A signed difference in its unit (percentage points for ``%``)."""
    if value is None or math.isnan(value):
        return DASH
    if unit == "%":
        return f"{100.0 * value:+.1f} pp"
    if unit == "s":
        return ("-" if value < 0 else "+") + seconds(abs(value))
    return f"{value:+,.0f}" if abs(value) >= 100 else f"{value:+.3g}"


def delta_ci(interval: CI, unit: str = "") -> str:
    if interval.low is None or interval.high is None:
        return DASH
    return f"[{delta(interval.low, unit)}, {delta(interval.high, unit)}]"


def pvalue(p: float) -> str:
    if p is None or math.isnan(p):
        return DASH
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def seconds(value: float | None) -> str:
    if value is None or math.isnan(value):
        return DASH
    if value < 1:
        return f"{value * 1000:.0f} ms" if value >= 0.001 else f"{value * 1000:.2f} ms"
    return f"{value:.1f} s" if value < 600 else f"{value / 60:.1f} min"


def count(summary: Summary, field: str = "total") -> str:
    """Tokens: the known total (or median), with how many were unknown."""
    value = getattr(summary, field)
    if value is None:
        return "unknown"
    text = f"{value:,.0f}"
    return f"{text} (+{summary.missing} unknown)" if summary.missing else text


def cost(summary: Summary, field: str = "total") -> str:
    """Dollars of the known costs; ``unknown`` when no price was known, and the unknown count otherwise."""
    value = getattr(summary, field)
    if value is None or summary.n == 0:
        return "unknown"
    text = f"${value:,.4f}" if value < 1 else f"${value:,.2f}"
    return f"{text} (+{summary.missing} unknown)" if summary.missing else text


def mean_n(group: GroupMean) -> str:
    """``53.3 (n=15, 2 unscored)``."""
    extra = f", {group.unscored} unscored" if group.unscored else ""
    return f"{pct(group)} (n={group.n}{extra})"
