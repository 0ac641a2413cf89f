"""The Markdown report: the same sections as the HTML one, figures linked as PNG files beside it.

Every text that comes from a run (answers, rationales, file names) is escaped: HTML characters become
entities and Markdown's link and emphasis characters are backslash-escaped, so an answer cannot inject
markup into a rendered page.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence

from hippocamp.report import fmt
from hippocamp.report.build import OVERALL, AccuracyTable, QuestionView, Report, family_name

__all__ = ["md_escape", "render_markdown"]

_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}()#+!|~])")
FIGURE_TITLES = {
    "difficulty": "Accuracy vs difficulty",
    "breadth": "Accuracy by evidence breadth and reasoning depth",
    "capability": "Accuracy by capability label",
    "latency": "Latency",
}
VERDICT_MARK = {"correct": "✅ correct", "wrong": "❌ wrong", "unscored": "⚠️ unscored", "not scored": "⚠️ not scored"}


def md_escape(text: str) -> str:
    """Untrusted text made inert in Markdown (one line: newlines become ``<br>``)."""
    escaped = _MD_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))
    return escaped.replace("\r\n", "\n").replace("\n", "<br>")


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def _accuracy_table(table: AccuracyTable, labels: Sequence[str], group: str | None = None) -> list[str]:
    header = ([group] if group else []) + [table.key, *map(md_escape, labels)]
    rows = [([md_escape(g)] if group else []) + [md_escape(label), *(fmt.mean_n(m) for m in means)]
            for g, label, means in table.rows]  # fmt: skip
    return _table(header, rows)


def _figure(report: Report, name: str, figures_dir: str | None) -> list[str]:
    if figures_dir is None or name not in report.figures:
        return []
    return ["", f"![{FIGURE_TITLES.get(name, name)}]({figures_dir}/{name}.png)"]


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
    return _table(header, rows)


def _table2(report: Report) -> list[str]:
    t = report.table2
    header = ["Run"]
    for group in t.groups:
        for family in t.families:
            name = family_name(family)
            header += [f"{md_escape(group)} · {name} F1", f"{md_escape(group)} · {name} Acc"]
    header += ["Overall Acc [95% CI]", "File F1", "Unscored"]
    rows = []
    for row in t.rows:
        cells = [md_escape(row.run)]
        for group in t.groups:
            for family in t.families:
                f1, acc = row.cells[(group, family)]
                cells += [fmt.pct(f1), fmt.pct(acc)]
        cells += [f"**{fmt.pct(row.overall)}** {fmt.ci(row.ci)}", fmt.pct(row.file_f1), str(row.unscored)]
        rows.append(cells)
    intro = (
        f"Accuracy and file F1 in %, per profile and task family; {OVERALL} is the mean of the per-profile "
        "means (profile-balanced), with a 95% bootstrap interval (stratified by profile). Unscored answers are "
        "left out of accuracy and counted."
    )
    return [intro, "", *_table(header, rows)]


def _comparisons(report: Report) -> list[str]:
    out: list[str] = []
    for c in report.comparisons:
        out += ["", f"### {md_escape(c.other)} vs {md_escape(c.base)} ({c.questions} questions)", ""]
        header = ["Metric", md_escape(c.base), md_escape(c.other), "Δ", "95% CI of Δ", "Wilcoxon p", "pairs"]
        rows = [
            [d.metric, fmt.num(d.base, d.unit), fmt.num(d.other, d.unit), fmt.delta(d.ci.estimate, d.unit),
             fmt.delta_ci(d.ci, d.unit), fmt.pvalue(d.test.pvalue), f"{d.ci.n} ({d.test.dropped} dropped)"]
            for d in c.deltas
        ]  # fmt: skip
        out += _table(header, rows)
    return out


def _costs(report: Report) -> list[str]:
    header = ["Run", "Episodes", "Median", "p95", "Median model time", "Tokens (total)", "Tokens (median)",
              "Cost (total)", "Cost (mean)", "Stops"]  # fmt: skip
    rows = []
    for c in report.costs:
        stops = ", ".join(f"{k} {v}" for k, v in sorted(c.stops.items()))
        rows.append([
            md_escape(c.run), str(c.episodes), fmt.seconds(c.seconds.median), fmt.seconds(c.seconds.p95),
            fmt.seconds(c.model_seconds.median), fmt.count(c.tokens), fmt.count(c.tokens, "median"), fmt.cost(c.cost),
            fmt.cost(c.cost, "mean"), md_escape(stops),
        ])  # fmt: skip
    return _table(header, rows)


def _files(files: Sequence[tuple[str, bool]], mark: str) -> str:
    return ", ".join(f"{md_escape(p)}{' ' + mark if hit else ''}" for p, hit in files) or fmt.DASH


def _question(q: QuestionView) -> list[str]:
    out = [
        "",
        f"### {md_escape(q.id)} · {md_escape(q.family)} · {md_escape(q.profile)}",
        "",
        f"**Question.** {md_escape(q.question)}",
        "",
        f"**Gold answer.** {md_escape(q.gold_answer)}",
        "",
        f"**Gold files** (✓ cited by some run): {_files(q.gold_files, '✓')}",
        "",
    ]
    header = ["Run", "Epoch", "Verdict", "Answer", "Cited files (✓ gold)", "Stop", "Judge"]
    rows = []
    for a in q.attempts:
        verdict = VERDICT_MARK.get(a.verdict, a.verdict) + (f": {md_escape(a.reason)}" if a.reason else "")
        judge = md_escape(a.rationale) + (f" ({md_escape(a.decided_by)})" if a.decided_by else "")
        stop = md_escape(a.stop) + (f": {md_escape(a.error)}" if a.error else "")
        rows.append([md_escape(a.run), str(a.epoch), verdict, md_escape(a.answer) or fmt.DASH,
                     _files(a.cited, "✓"), stop, judge or fmt.DASH])  # fmt: skip
    return out + _table(header, rows)


def render_markdown(report: Report, figures_dir: str | None = "figures") -> str:
    """The report as Markdown; figures are linked from ``figures_dir`` (None: left out)."""
    labels = report.labels
    lines = [f"# {md_escape(report.title)}", "", "## Runs", "", *_runs(report)]
    if report.notes:
        lines += ["", "**Notes.**", "", *(f"- {md_escape(n)}" for n in report.notes)]
    lines += ["", "## Results by profile and task family (Table 2 layout)", "", *_table2(report)]
    if report.comparisons:
        lines += ["", f"## Comparison against {md_escape(report.runs[0].label)}", ""]
        lines += ["Paired over the questions both runs answered: Δ = other − base (profile-balanced), a 95% "
                  "bootstrap interval of the paired difference, and the paired Wilcoxon signed-rank test on "
                  "per-question outcomes (averaged over epochs)."]  # fmt: skip
        lines += _comparisons(report)
    lines += ["", "## Accuracy by capability", "", *_accuracy_table(report.capability, labels, "dimension")]
    lines += _figure(report, "capability", figures_dir)
    lines += ["", "## Accuracy vs difficulty", "", *_accuracy_table(report.difficulty, labels)]
    lines += _figure(report, "difficulty", figures_dir)
    lines += ["", "## Evidence breadth, modality breadth and reasoning depth"]
    for table in report.breadth:
        lines += ["", f"### {table.title}", "", *_accuracy_table(table, labels)]
    lines += _figure(report, "breadth", figures_dir)
    lines += ["", "## Cost and latency", "", "Unknown prices are shown as unknown, never as $0.", ""]
    lines += _costs(report)
    lines += _figure(report, "latency", figures_dir)
    lines += ["", "## Per question"]
    for q in report.questions:
        lines += _question(q)
    return "\n".join(lines) + "\n"
