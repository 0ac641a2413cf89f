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
from hippocamp.report.build import OVERALL, AccuracyTable, Comparison, QuestionView, Report, family_name
from hippocamp.report.pcontext import T5_VERDICTS, CaseView, PContextTables, TypeResult

__all__ = ["md_escape", "render_markdown"]

_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}()#+!|~])")
FIGURE_TITLES = {
    "difficulty": "Accuracy vs difficulty",
    "breadth": "Accuracy by evidence breadth and reasoning depth",
    "capability": "Accuracy by capability label",
    "latency": "Latency",
}
VERDICT_MARK = {"correct": "✅ correct", "wrong": "❌ wrong", "unscored": "⚠️ unscored", "not scored": "⚠️ not scored"}
#: P-ContextBench rubric verdicts (T1–T4 and abstention; T5)
RUBRIC_MARK = {"correct": "✅ correct", "partial": "◐ partial", "incorrect": "❌ incorrect", "VERIFIED": "✅ VERIFIED",
               "FLAGGED": "◐ FLAGGED", "FAILED": "❌ FAILED", "unscored": "⚠️ unscored",
               "not scored": "⚠️ not scored"}  # fmt: skip


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


def _comparisons(comparisons: Sequence[Comparison]) -> list[str]:
    out: list[str] = []
    for c in comparisons:
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


# -- P-ContextBench --------------------------------------------------------------------------------
def _share(count: int, total: int) -> str:
    return f"{count} ({fmt.pct(count / total)}%)" if total else str(count)


def _pc_table2(t: PContextTables) -> list[str]:
    header = ["Run"]
    for name in [*t.types, "Avg."]:
        header += [f"{name} Acc", f"{name} Worst", f"{name} {t.pass_label}"]
    header.append("Unscored")
    rows = []
    for row in t.rows:
        cells = [md_escape(row.run)]
        for r in [*(row.types.get(ty) for ty in t.types), row.average]:
            cells += [fmt.DASH] * 3 if r is None else [fmt.pct(r.accuracy), fmt.pct(r.worst_run), fmt.pct(r.pass_k)]
        cells[-3] = f"**{cells[-3]}**"
        rows.append([*cells, str(row.unscored)])
    return _table(header, rows)


def _counts(r: TypeResult | None) -> str:
    if r is None:
        return fmt.DASH
    extra = f", {r.unscored} unscored" if r.unscored else ""
    answer = f"; answer alone {fmt.pct(r.answer_accuracy)}" if r.answer_n else ""
    return f"{r.cases} cases, n={r.n}{extra}; partial {fmt.pct(r.partial)}{answer}"


def _pc_counts(t: PContextTables) -> list[str]:
    header = ["Run", *t.types, "All"]
    rows = [[md_escape(row.run), *(_counts(row.types.get(ty)) for ty in t.types), _counts(row.average)]
            for row in t.rows]  # fmt: skip
    return _table(header, rows)


def _pc_table3(t: PContextTables) -> list[str]:
    header = ["Type", "Category", *map(md_escape, t.runs)]
    rows = []
    for ty in t.types:
        mine = [f for f in t.failures if f.type == ty]
        if not mine:
            continue
        errors = [row.types.get(ty) for row in t.rows]
        rows.append([ty, "*errors (of scored)*", *(f"{r.errors} of {r.n}" if r else fmt.DASH for r in errors)])
        for f in mine:
            cells = []
            for c in f.cells:
                text = f"{c.errors_with} ({fmt.pct(c.share)}%)" if c.errors else str(c.errors_with)
                cells.append(text + (f" +{c.on_correct} on correct" if c.on_correct else ""))
            rows.append([ty, md_escape(f.name) + ("" if f.paper else " (other)"), *cells])
    return _table(header, rows)


def _pc_t5(t: PContextTables) -> list[str]:
    header = ["Run", *T5_VERDICTS, "Unscored", "Mean normalized score"]
    rows = []
    for row in t.rows:
        r = row.types.get("T5")
        if r is None:
            rows.append([md_escape(row.run), *[fmt.DASH] * 5])
            continue
        rows.append([md_escape(row.run), *(_share(r.verdicts.get(v, 0), r.n) for v in T5_VERDICTS), str(r.unscored),
                     fmt.DASH if r.mean_score is None else f"{r.mean_score:.3f}"])  # fmt: skip
    return _table(header, rows)


def _pc_evidence(t: PContextTables) -> list[str]:
    header = ["Run", "Evidence recall (cited supporting fragments)"]
    if t.seen:
        header.append("Seen by the agent's tools")
    if t.retrieval:
        header += ["Retrieval recall@k", *(f"{ty} recall@k" for ty in t.types)]
    rows = []
    for row in t.rows:
        cells = [md_escape(row.run), f"{fmt.pct(row.evidence_recall)} (n={row.evidence_n})"]
        if t.seen:
            cells.append(f"{fmt.pct(row.seen_recall)} (n={row.seen_n})")
        if t.retrieval:
            r = row.retrieval
            if r is None:
                cells += [fmt.DASH] * (1 + len(t.types))
            else:
                cells.append(f"{fmt.pct(r.recall)} (k={md_escape(str(r.k))}, {md_escape(r.mode) or '?'})")
                cells += [fmt.pct(r.by_type.get(ty)) for ty in t.types]
        rows.append(cells)
    return _table(header, rows)


def _pc_wilcoxon(t: PContextTables) -> list[str]:
    header = ["Run", "Personas", "T1–T2 acc", "T3–T5 acc", "Personas lower on T3–T5", "W", "p (one-sided)"]
    rows = []
    for row in t.rows:
        w = row.wilcoxon
        if w is None:
            rows.append([md_escape(row.run), "0", *[fmt.DASH] * 5])
            continue
        test = [md_escape(w.error), fmt.DASH] if w.error else [f"{w.statistic:g}", fmt.pvalue(w.pvalue)]
        rows.append([md_escape(row.run), str(w.personas), fmt.pct(w.low_mean), fmt.pct(w.high_mean),
                     f"{w.lower} of {w.personas}", *test])  # fmt: skip
    return _table(header, rows)


def _pcontext(t: PContextTables) -> list[str]:
    out = ["", "## P-ContextBench: accuracy by task type (Table 2 layout)", ""]
    out += [f"Accuracy in % per task type over all runs (Acc), in the worst run (Worst) and {t.pass_label} (the "
            "chance that k runs of a case are all correct, k = the number of runs). Avg. is the test-count-weighted "
            "average over the types shown. Only correct (T5: VERIFIED) counts; unscored episodes are left out of "
            "every denominator and counted.", ""]  # fmt: skip
    out += _pc_table2(t)
    out += ["", "### Test counts and partial credit", "", "Cases, scored episodes and the share of answers "
            "graded partial (T5: FLAGGED), which count as wrong above; answer alone: the share whose answer is "
            "right in itself, cited evidence aside (the answer accuracy LoCoMo reports; not for T5).", "",
            *_pc_counts(t)]  # fmt: skip
    out += ["", "## P-ContextBench: failure categories (Table 3 layout)", ""]
    out += ["Scored answers of each type that are not correct and carry the category, with their share of that "
            "type's errors; one answer can carry several categories. Categories the paper's Table 3 does not list "
            "for that type are marked (other).", ""]  # fmt: skip
    out += _pc_table3(t) if t.failures else ["No failure categories were recorded."]
    if t.t5:
        out += ["", "### T5 verdicts", "", "Share of scored T5 episodes; the normalized score is out of 15, in "
                "0–1.", "", *_pc_t5(t)]  # fmt: skip
    out += ["", "### Evidence and retrieval", "", "Evidence recall: the mean share of a case's supporting "
            "fragments the answer cites. Seen (when scored): the share the agent's own tools showed it. "
            "Retrieval recall@k (when scored): the share the store's retrieval finds in its top k for the "
            "question.", "", *_pc_evidence(t)]  # fmt: skip
    out += ["", "### T1–T2 vs T3–T5 per persona", "", "One-sided Wilcoxon signed-rank test that a persona's "
            "T1–T2 accuracy is above its T3–T5 accuracy (overall accuracy over all runs).", "",
            *_pc_wilcoxon(t)]  # fmt: skip
    return out


def _labels_text(items: Sequence[str]) -> str:
    return "; ".join(md_escape(x) for x in items) or fmt.DASH


def _case(c: CaseView) -> list[str]:
    out = ["", f"### {md_escape(c.id)} · {md_escape(c.type)} · {md_escape(c.persona)}", "",
           f"**Question.** {md_escape(c.question)}", "",
           f"**Gold answer.** {md_escape(c.gold_answer) or fmt.DASH}", ""]  # fmt: skip
    if c.key:
        out += ["**Key.** " + "; ".join(f"{md_escape(k)}: {md_escape(v)}" for k, v in c.key), ""]
    out += [f"**Supporting fragments.** {_labels_text(c.supporting)}", ""]
    header = ["Run", "Epoch", "Verdict", "Answer", "Covered", "Missing", "Failures", "Cited ids (✓ supporting)",
              "Stop"]  # fmt: skip
    rows = []
    for a in c.attempts:
        verdict = RUBRIC_MARK.get(a.verdict, md_escape(a.verdict))
        verdict += f" {a.score:.3f}" if a.score is not None else ""
        verdict += f": {md_escape(a.reason)}" if a.reason else ""
        stop = md_escape(a.stop) + (f": {md_escape(a.error)}" if a.error else "")
        rows.append([md_escape(a.run), str(a.epoch), verdict, md_escape(a.answer) or fmt.DASH,
                     "; ".join(md_escape(x) + (" (judge)" if x in a.judged else "") for x in a.covered) or fmt.DASH,
                     _labels_text(a.missing), _labels_text(a.failures),
                     _files(a.cited, "✓"), stop or fmt.DASH])  # fmt: skip
    return out + _table(header, rows)


def render_markdown(report: Report, figures_dir: str | None = "figures") -> str:
    """The report as Markdown; figures are linked from ``figures_dir`` (None: left out)."""
    labels = report.profile_labels
    lines = [f"# {md_escape(report.title)}", "", "## Runs", "", *_runs(report)]
    if report.notes:
        lines += ["", "**Notes.**", "", *(f"- {md_escape(n)}" for n in report.notes)]
    if report.pcontext:
        lines += _pcontext(report.pcontext)
        if report.pcontext_comparisons:
            lines += ["", f"## P-ContextBench: comparison against {md_escape(report.pcontext_comparisons[0].base)}", ""]
            lines += ["Paired by case id over the cases both runs scored (two persona sets generated with the same "
                      "seed hold the same cases, so this is how a filler-ratio or decoy ablation is read): Δ = other "
                      "− base, a 95% bootstrap interval of the paired difference and the paired Wilcoxon signed-rank "
                      "test on per-case accuracy (averaged over runs)."]  # fmt: skip
            lines += _comparisons(report.pcontext_comparisons)
    if report.profile_runs:
        lines += _profile_sections(report, labels, figures_dir)
    lines += ["", "## Cost and latency", "", "Unknown prices are shown as unknown, never as $0.", ""]
    lines += _costs(report)
    lines += _figure(report, "latency", figures_dir)
    if report.profile_runs:
        lines += ["", "## Per question"]
        for q in report.questions:
            lines += _question(q)
    if report.pcontext:
        lines += ["", "## Per case (P-ContextBench)"]
        for c in report.pcontext.cases:
            lines += _case(c)
    return "\n".join(lines) + "\n"


def _profile_sections(report: Report, labels: Sequence[str], figures_dir: str | None) -> list[str]:
    """The sections over HippoCamp records: Table 2 by profile, comparisons, capability, difficulty, breadth."""
    lines = ["", "## Results by profile and task family (Table 2 layout)", "", *_table2(report)]
    if report.comparisons:
        lines += ["", f"## Comparison against {md_escape(report.profile_runs[0].label)}", ""]
        lines += ["Paired over the questions both runs answered: Δ = other − base (profile-balanced), a 95% "
                  "bootstrap interval of the paired difference, and the paired Wilcoxon signed-rank test on "
                  "per-question outcomes (averaged over epochs)."]  # fmt: skip
        lines += _comparisons(report.comparisons)
    lines += ["", "## Accuracy by capability", "", *_accuracy_table(report.capability, labels, "dimension")]
    lines += _figure(report, "capability", figures_dir)
    lines += ["", "## Accuracy vs difficulty", "", *_accuracy_table(report.difficulty, labels)]
    lines += _figure(report, "difficulty", figures_dir)
    lines += ["", "## Evidence breadth, modality breadth and reasoning depth"]
    for table in report.breadth:
        lines += ["", f"### {table.title}", "", *_accuracy_table(table, labels)]
    lines += _figure(report, "breadth", figures_dir)
    return lines
