"""A report's data, assembled from scored run directories (rendering is in ``markdown.py`` and ``html.py``).

Each run is read through the benchmark its manifest names (`Benchmark.report_run`: one judge's score
lines, its episodes and gold), the runs are labelled, and each benchmark among them builds its section
over its own runs (`Benchmark.report_section`: HippoCamp's tables in `hippocamp.report.hippocamp`,
P-ContextBench's in `hippocamp.report.pcontext_section`), in the order the benchmarks first appear; the
cost and latency table covers every run. Every number is computed from ``scores.jsonl``, so a run's
headline figures equal its ``scores.summary.json``. Unscored answers are counted and never scored 0; an
unknown cost stays unknown. Runs of several benchmarks can be reported together.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocamp import registry
from hippocamp.report.common import CostRow, Section, costs
from hippocamp.report.plots import plot_latency
from hippocamp.report.rundata import ReportError, RunData
from hippocamp.runs.rundir import RunDir, RunDirError

__all__ = ["Report", "ReportError", "RunData", "build_report", "load_run"]


def _benchmark(name: str) -> Any:
    try:
        return registry.instance("benchmark", name)
    except registry.UnknownPluginError as exc:
        raise ReportError(str(exc)) from None


def load_run(run_dir: str | Path, *, judge_mode: str | None = None, judge: str | None = None) -> RunData:
    """Read a scored run directory through its benchmark; ``judge_mode``/``judge`` pick among several
    judges' scores."""
    from hippocamp.redact import redact_text

    try:
        run = RunDir.open(run_dir)
        bench = run.benchmark
    except RunDirError as exc:
        raise ReportError(str(exc)) from None
    judge = redact_text(judge) if judge else judge  # score lines hold redacted judge ids
    data: RunData = bench.report_run(run, judge_mode, judge)
    return data


def _labels(runs: list[RunData]) -> None:
    """``agent · model``, made unique with the directory name when two runs share it."""
    base = [f"{r.agent} · {r.model}" for r in runs]
    counts = Counter(base)
    for run, label in zip(runs, base, strict=True):
        run.label = f"{label} ({run.path.name})" if counts[label] > 1 else label


@dataclass
class Report:
    """Everything a report shows: the runs, one section per benchmark among them, the costs of every
    run, notes; figures are PNG bytes by name (every section's, and the latency of every run)."""

    title: str
    runs: list[RunData]
    sections: list[Section]
    costs: list[CostRow]
    figures: dict[str, bytes] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        return [r.label for r in self.runs]

    @property
    def lead(self) -> str:
        """``3 run(s) · 21 question(s) · 7 P-ContextBench case(s) · accuracy and file F1 in %``."""
        measures: list[str] = []
        for section in self.sections:
            measures += [m for m in section.measures if m not in measures]
        parts = [f"{len(self.runs)} run(s)", *(s.lead for s in self.sections)]
        return " · ".join([*parts, f"{' and '.join(measures) or 'results'} in %"])

    def section(self, benchmark: str) -> Section | None:
        return next((s for s in self.sections if s.benchmark == benchmark), None)


def _notes(runs: list[RunData], sections: list[Section]) -> list[str]:
    notes = [n for s in sections for n in s.notes]
    for run in runs:
        if run.judge_note:
            notes.append(f"{run.label}: {run.judge_note}.")
        if run.not_scored:
            notes.append(f"{run.label}: {run.not_scored} episode(s) have no score from {run.judge}/{run.mode}.")
        if run.missing_gold:
            notes.append(f"{run.label}: {len(run.missing_gold)} episode(s) have no gold record and are left out.")
    return notes


def build_report(
    run_dirs: Sequence[str | Path],
    *,
    judge_mode: str | None = None,
    judge: str | None = None,
    title: str = "hippocamp report",
    figures: bool = True,
) -> Report:
    """Read the runs and compute every section, comparison (against each benchmark's first run) and figure."""
    if not run_dirs:
        raise ReportError("no run directories given")
    runs = [load_run(d, judge_mode=judge_mode, judge=judge) for d in run_dirs]
    _labels(runs)
    by_benchmark: dict[str, list[RunData]] = {}
    for run in runs:
        by_benchmark.setdefault(run.benchmark, []).append(run)
    sections = [_benchmark(name).report_section(group, figures) for name, group in by_benchmark.items()]
    report = Report(title=title, runs=runs, sections=sections, costs=costs(runs), notes=_notes(runs, sections))
    if figures:
        for section in sections:
            report.figures.update(section.figures)
        seconds = [[s.seconds for s in r.lines] for r in runs]
        if any(seconds):
            report.figures["latency"] = plot_latency(report.labels, seconds)
    return report
