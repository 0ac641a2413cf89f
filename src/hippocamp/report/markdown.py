"""The Markdown report: the same sections as the HTML one, figures linked as PNG files beside it.

The runs table, the notes, each benchmark's section (`hippocamp.report.common.Section.markdown`), the
cost and latency table, then each section's drill-down. Every text that comes from a run (answers,
rationales, file names) is escaped: HTML characters become entities and Markdown's link and emphasis
characters are backslash-escaped, so an answer cannot inject markup into a rendered page. The helpers
here (`md_escape`, `table`, `comparisons`, `figure`, `files`) serve every section.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from hippocamp.report import fmt
from hippocamp.report.common import Comparison, CostRow

if TYPE_CHECKING:
    from hippocamp.report.build import Report

__all__ = ["comparisons", "figure", "files", "md_escape", "render_markdown", "table"]

_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}()#+!|~])")


def md_escape(text: str) -> str:
    """Untrusted text made inert in Markdown (one line: newlines become ``<br>``)."""
    escaped = _MD_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))
    return escaped.replace("\r\n", "\n").replace("\n", "<br>")


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def figure(figures: Mapping[str, bytes], name: str, title: str, figures_dir: str | None) -> list[str]:
    if figures_dir is None or name not in figures:
        return []
    return ["", f"![{title}]({figures_dir}/{name}.png)"]


def files(paths: Sequence[tuple[str, bool]], mark: str) -> str:
    return ", ".join(f"{md_escape(p)}{' ' + mark if hit else ''}" for p, hit in paths) or fmt.DASH


def comparisons(items: Sequence[Comparison]) -> list[str]:
    out: list[str] = []
    for c in items:
        out += ["", f"### {md_escape(c.other)} vs {md_escape(c.base)} ({c.questions} questions)", ""]
        header = ["Metric", md_escape(c.base), md_escape(c.other), "Δ", "95% CI of Δ", "Wilcoxon p", "pairs"]
        rows = [
            [d.metric, fmt.num(d.base, d.unit), fmt.num(d.other, d.unit), fmt.delta(d.ci.estimate, d.unit),
             fmt.delta_ci(d.ci, d.unit), fmt.pvalue(d.test.pvalue), f"{d.ci.n} ({d.test.dropped} dropped)"]
            for d in c.deltas
        ]  # fmt: skip
        out += table(header, rows)
    return out


def _runs(report: Report) -> list[str]:
    header = ["Run", "Agent", "Model", "Suite", "Dataset sha256", "Epochs", "Date", "Judge / mode", "Episodes",
              "Unscored", "No score"]  # fmt: skip
    rows = []
    for r in report.runs:
        rows.append([
            md_escape(r.label), md_escape(r.agent), md_escape(r.model), md_escape(r.suite), f"`{r.short_sha}`",
            str(r.epochs), md_escape(r.created), md_escape(f"{r.judge or '?'} / {r.mode}"), str(len(r.lines)),
            str(r.summary.get("unscored", 0)), str(r.not_scored),
        ])  # fmt: skip
    return table(header, rows)


def _costs(rows_in: Sequence[CostRow]) -> list[str]:
    header = ["Run", "Episodes", "Median", "p95", "Median model time", "Tokens (total)", "Tokens (median)",
              "Cost (total)", "Cost (mean)", "Stops"]  # fmt: skip
    rows = []
    for c in rows_in:
        stops = ", ".join(f"{k} {v}" for k, v in sorted(c.stops.items()))
        rows.append([
            md_escape(c.run), str(c.episodes), fmt.seconds(c.seconds.median), fmt.seconds(c.seconds.p95),
            fmt.seconds(c.model_seconds.median), fmt.count(c.tokens), fmt.count(c.tokens, "median"), fmt.cost(c.cost),
            fmt.cost(c.cost, "mean"), md_escape(stops),
        ])  # fmt: skip
    return table(header, rows)


def render_markdown(report: Report, figures_dir: str | None = "figures") -> str:
    """The report as Markdown; figures are linked from ``figures_dir`` (None: left out)."""
    lines = [f"# {md_escape(report.title)}", "", "## Runs", "", *_runs(report)]
    if report.notes:
        lines += ["", "**Notes.**", "", *(f"- {md_escape(n)}" for n in report.notes)]
    for section in report.sections:
        lines += section.markdown(figures_dir)
    lines += ["", "## Cost and latency", "", "Unknown prices are shown as unknown, never as $0.", ""]
    lines += _costs(report.costs)
    lines += figure(report.figures, "latency", "Latency", figures_dir)
    for section in report.sections:
        lines += section.drill_markdown()
    return "\n".join(lines) + "\n"
