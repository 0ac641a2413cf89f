"""What every benchmark's part of a report shares: paired comparisons, the cost table, and the `Section`
protocol a benchmark's report part follows.

A report is the runs table, notes, one section per benchmark among the runs (`Benchmark.report_section`:
HippoCamp's in `hippocamp.report.hippocamp`, P-ContextBench's in `hippocamp.report.pcontext`), the cost
and latency table over every run, and each section's drill-down. A section renders itself: Markdown lines,
and the names of the jinja2 templates (in ``report/templates``) that render its HTML with ``section``
in their context.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hippocamp.report.rundata import RunData
from hippocamp.scoring.stats import CI, ScoredItem, Summary, WilcoxonResult, usage_summary

__all__ = ["RESAMPLES", "Comparison", "CostRow", "Delta", "Section", "costs"]

#: bootstrap resamples (as `summarize_scores`, so the CI equals the summary's with one profile)
RESAMPLES = 2000


@dataclass
class Delta:
    """A paired difference (other − base) over the items both runs answered and had scored."""

    metric: str
    unit: str
    base: float | None
    other: float | None
    ci: CI
    test: WilcoxonResult


@dataclass
class Comparison:
    base: str
    other: str
    questions: int
    deltas: list[Delta]


@dataclass
class CostRow:
    run: str
    episodes: int
    seconds: Summary
    model_seconds: Summary
    tokens: Summary
    cost: Summary
    stops: dict[str, int]


def costs(runs: Sequence[RunData]) -> list[CostRow]:
    """Latency, tokens, cost and stop reasons of each run's scored episodes (from its score lines)."""
    rows = []
    for run in runs:
        usage = usage_summary([ScoredItem(id=s.task_id, seconds=s.seconds, tokens=s.tokens, cost=s.cost)
                               for s in run.lines])  # fmt: skip
        scored = {s.task_id for s in run.lines}
        model_s = usage_summary([ScoredItem(id=k[0], seconds=e.model_s) for k, e in run.episodes.items()
                                 if k[0] in scored])  # fmt: skip
        stops = Counter(s.stop for s in run.lines)
        rows.append(CostRow(run.label, len(run.lines), usage["seconds"], model_s["seconds"], usage["tokens"],
                            usage["cost"], dict(stops)))  # fmt: skip
    return rows


class Section(Protocol):
    """One benchmark's part of a report, over its runs (in run order)."""

    #: the benchmark it covers
    benchmark: str
    runs: list[RunData]
    #: PNG figures by name (shown by the section; Markdown links them from the figures folder)
    figures: dict[str, bytes]
    #: notes for the report's notes box
    notes: list[str]

    @property
    def lead(self) -> str:
        """What the section covers, for the report's first line (``21 question(s)``)."""
        ...

    @property
    def measures(self) -> list[str]:
        """What its tables measure, for the first line (``accuracy``, ``file F1``)."""
        ...

    @property
    def nav(self) -> list[tuple[str, str]]:
        """Links of the page's top menu to the section's parts: (anchor, title)."""
        ...

    @property
    def drill_nav(self) -> list[tuple[str, str]]:
        """Links to its drill-down (shown after the cost table)."""
        ...

    #: jinja2 templates of its HTML body and of its drill-down
    template: str
    drill_template: str

    def filters(self) -> dict[str, Callable[..., Any]]:
        """jinja2 filters its templates use."""
        ...

    def markdown(self, figures_dir: str | None) -> list[str]: ...

    def drill_markdown(self) -> list[str]: ...
