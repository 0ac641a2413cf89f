"""P-ContextBench's part of a report: the tables of `hippocamp.report.pcontext` over its runs (with each
run's grader, citation statuses and T5 sub-scores from `hippocamp.report.pcontext_t5`), paired
comparisons of each run against the first by case id (a filler-ratio or decoy ablation: two persona sets
generated with the same seed hold the same cases), and every case with its answers, rendered.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hippocamp.report import fmt
from hippocamp.report.common import RESAMPLES, Comparison, Delta
from hippocamp.report.markdown import comparisons, files, md_escape, table
from hippocamp.report.pcontext import (
    T5_VERDICTS,
    CaseView,
    PContextTables,
    TypeResult,
    build_pcontext,
    graded,
    type_name,
    verdict_class,
)
from hippocamp.report.pcontext_t5 import CITATIONS, T5_PARTS, T5_PENALTIES, T5Parts
from hippocamp.report.rundata import RunData
from hippocamp.runs.rundir import SCORES
from hippocamp.scoring.stats import bootstrap_ci, wilcoxon

__all__ = ["PContextSection", "build_section"]

#: P-ContextBench rubric verdicts (T1–T4 and abstention; T5)
RUBRIC_MARK = {"correct": "✅ correct", "partial": "◐ partial", "incorrect": "❌ incorrect", "VERIFIED": "✅ VERIFIED",
               "FLAGGED": "◐ FLAGGED", "FAILED": "❌ FAILED", "unscored": "⚠️ unscored",
               "not scored": "⚠️ not scored"}  # fmt: skip


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
    return table(header, rows)


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
    return table(header, rows)


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
    return table(header, rows)


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
    return table(header, rows)


def _penalty_name(penalty: str, escape: Callable[[str], str] = str) -> str:
    points = T5_PENALTIES.get(penalty)
    return escape(penalty.replace("_", " ")) + (f" (−{points})" if points else "")


def _penalties(t: PContextTables) -> list[str]:
    """The T5 penalties shown: the four of the rubric, then any other a run's grades hold."""
    seen = [p for row in t.rows if row.pass2 and row.pass2.t5 for p in row.pass2.t5.penalties]
    return list(dict.fromkeys([*T5_PENALTIES, *seen]))


def _pc_grader(t: PContextTables) -> list[str]:
    header = ["Run", "Grader", "Judge id", "Decided by the judge model"]
    rows = []
    for row in t.rows:
        g = row.pass2.grader if row.pass2 else None
        if g is None:
            rows.append([md_escape(row.run), *[fmt.DASH] * 3])
            continue
        decided = f"{g.judge_decided} of {g.n} ({fmt.pct(g.share)}%)" if g.with_model else "– (no judge model)"
        rows.append([md_escape(row.run), md_escape(g.name), md_escape(g.judge), decided])
    return table(header, rows)


def _pc_t5_parts(t: PContextTables) -> list[str]:
    names = _penalties(t)
    header = ["Run", "T5 episodes", *(f"{name} (of {points})" for _, name, points in T5_PARTS),
              *(_penalty_name(name, md_escape) for name in names)]  # fmt: skip
    rows = []
    for row in t.rows:
        p = row.pass2.t5 if row.pass2 else None
        if p is None:
            rows.append([md_escape(row.run), *[fmt.DASH] * (1 + len(T5_PARTS) + len(names))])
            continue
        rows.append([md_escape(row.run), str(p.n), *(_points(p.means.get(key)) for key, _, _ in T5_PARTS),
                     *(_share(p.penalties.get(name, 0), p.n) for name in names)])  # fmt: skip
    return table(header, rows)


def _points(value: float | None) -> str:
    return fmt.DASH if value is None else f"{value:.2f}"


def _has_boundaries(t: PContextTables) -> bool:
    return any(row.pass2 and row.pass2.t5 and row.pass2.t5.boundary_n for row in t.rows)


def _pc_boundaries(run: str, p: T5Parts) -> list[str]:
    header = ["Expected / chosen", *map(md_escape, p.chosen), "Total"]
    rows = [[md_escape(e), *(str(p.count(e, c)) for c in p.chosen), str(sum(p.count(e, c) for c in p.chosen))]
            for e in p.expected]  # fmt: skip
    return ["", f"**{md_escape(run)}** ({p.boundary_n} scored T5 episodes)", "", *table(header, rows)]


def _pc_citations(t: PContextTables) -> list[str]:
    header = ["Run", "Scored with a status", *CITATIONS]
    rows = []
    for row in t.rows:
        c = row.pass2.citations if row.pass2 else None
        if c is None or not c.n:
            rows.append([md_escape(row.run), "0", *[fmt.DASH] * len(CITATIONS)])
            continue
        rows.append([md_escape(row.run), str(c.n), *(_share(c.counts.get(s, 0), c.n) for s in CITATIONS)])
    return table(header, rows)


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
    return table(header, rows)


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
    return table(header, rows)


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
    out += ["", "### Grader", "", "What produced each run's numbers: the guard layer alone (deterministic), the "
            "guard plus a judge model (the Pass-2 judge: the model decides only what the guard cannot), or the "
            "lexical rubric of runs scored before the guard layer; and how many scored episodes the judge model "
            "decided.", "", *_pc_grader(t)]  # fmt: skip
    out += ["", "## P-ContextBench: failure categories (Table 3 layout)", ""]
    out += ["Scored answers of each type that are not correct and carry the category, with their share of that "
            "type's errors; one answer can carry several categories. Categories the paper's Table 3 does not list "
            "for that type are marked (other).", ""]  # fmt: skip
    out += _pc_table3(t) if t.failures else ["No failure categories were recorded."]
    if t.t5:
        out += ["", "### T5 verdicts", "", "Share of scored T5 episodes; the normalized score is out of 15, in "
                "0–1.", "", *_pc_t5(t)]  # fmt: skip
        out += ["", "### T5 sub-scores", "", "Mean points of each part over the scored T5 episodes (constraint "
                "recognition of 5, action boundary of 6 with 3 for a neighbouring cautious one, evidence grounding "
                "of 4), and how often each penalty applied (its points under the default weights), with its share "
                "of those episodes.", "", *_pc_t5_parts(t)]  # fmt: skip
    if t.t5 and _has_boundaries(t):
        out += ["", "### T5 action boundary: expected × chosen", "", "Scored T5 episodes by the boundary the "
                "answer key expects (rows) and the one the answer took (columns; none: the answer took no "
                "boundary)."]  # fmt: skip
        for row in t.rows:
            if row.pass2 and row.pass2.t5 and row.pass2.t5.boundary_n:
                out += _pc_boundaries(row.run, row.pass2.t5)
    if any(row.pass2 and row.pass2.citations.n for row in t.rows):
        out += ["", "### Citations", "", "Scored episodes whose citations are ok, missing (none), wrong (no gold "
                "id) or indiscriminate (more ids than min(10, 3g + 5) for g gold ids), with their share of the "
                "scored episodes that have a citation status; only ok grounds an answer.", "",
                *_pc_citations(t)]  # fmt: skip
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
                     files(a.cited, "✓"), stop or fmt.DASH])  # fmt: skip
    return out + table(header, rows)


def _case_means(run: RunData) -> dict[str, tuple[str, float]]:
    """Each pcontext case's type and accuracy over its scored epochs (cases never scored left out)."""
    values: dict[str, list[bool]] = defaultdict(list)
    types: dict[str, str] = {}
    for g in graded(run.lines, run.pcontext_gold):
        types[g.task_id] = g.type
        if g.correct is not None:
            values[g.task_id].append(g.correct)
    return {q: (types[q], sum(v) / len(v)) for q, v in values.items() if v}


def _compare_pcontext(base: RunData, other: RunData) -> Comparison | None:
    """Accuracy of ``other`` against ``base`` over the cases both scored (same task ids), overall and by
    task type: Δ with a bootstrap interval and the paired Wilcoxon test on per-case accuracy."""
    a, b = _case_means(base), _case_means(other)
    common = sorted(set(a) & set(b))
    if not common:
        return None
    deltas = []
    types = sorted({a[q][0] for q in common})
    for name, ids in [("Accuracy", common), *((f"Accuracy · {t}", [q for q in common if a[q][0] == t]) for t in types)]:
        xs, ys = [b[q][1] for q in ids], [a[q][1] for q in ids]
        ci = bootstrap_ci([x - y for x, y in zip(xs, ys, strict=True)], resamples=RESAMPLES)
        try:
            test = wilcoxon(xs, ys)
        except ValueError:  # too few pairs
            continue
        deltas.append(Delta(name, "%", sum(ys) / len(ys), sum(xs) / len(xs), ci, test))
    return Comparison(base.label, other.label, len(common), deltas)


@dataclass
class PContextSection:
    """P-ContextBench's part of a report, over its runs (in run order)."""

    runs: list[RunData]
    tables: PContextTables
    comparisons: list[Comparison]
    figures: dict[str, bytes] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    benchmark: str = "pcontext"
    template: str = "pcontext.html.j2"
    drill_template: str = "pcontext_cases.html.j2"

    @property
    def lead(self) -> str:
        return f"{len(self.tables.cases)} P-ContextBench case(s)"

    @property
    def measures(self) -> list[str]:
        return ["accuracy"]

    @property
    def nav(self) -> list[tuple[str, str]]:
        links = [("pc-table2", "P-ContextBench (Table 2)"), ("pc-table3", "Failures (Table 3)")]
        return [*links, ("pc-comparison", "P-ContextBench comparison")] if self.comparisons else links

    @property
    def drill_nav(self) -> list[tuple[str, str]]:
        return [("pc-cases", "Per case")]

    @property
    def boundaries(self) -> bool:
        """Some run has T5 grades with an expected boundary (grades before the guard layer have none)."""
        return _has_boundaries(self.tables)

    @property
    def t5_penalties(self) -> list[tuple[str, str]]:
        """The T5 penalties shown, as (key, name with its default points)."""
        return [(p, _penalty_name(p)) for p in _penalties(self.tables)]

    @property
    def t5_part_names(self) -> tuple[tuple[str, str, int], ...]:
        """The T5 parts as (key, name, points)."""
        return T5_PARTS

    @property
    def citation_statuses(self) -> tuple[str, ...]:
        return CITATIONS

    @property
    def citations(self) -> bool:
        return any(row.pass2 and row.pass2.citations.n for row in self.tables.rows)

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"type_name": type_name, "verdict_class": verdict_class}

    def markdown(self, figures_dir: str | None) -> list[str]:
        lines = _pcontext(self.tables)
        if self.comparisons:
            lines += ["", f"## P-ContextBench: comparison against {md_escape(self.comparisons[0].base)}", ""]
            lines += ["Paired by case id over the cases both runs scored (two persona sets generated with the same "
                      "seed hold the same cases, so this is how a filler-ratio or decoy ablation is read): Δ = other "
                      "− base, a 95% bootstrap interval of the paired difference and the paired Wilcoxon signed-rank "
                      "test on per-case accuracy (averaged over runs)."]  # fmt: skip
            lines += comparisons(self.comparisons)
        return lines

    def drill_markdown(self) -> list[str]:
        lines = ["", "## Per case (P-ContextBench)"]
        for c in self.tables.cases:
            lines += _case(c)
        return lines


def build_section(runs: list[RunData], figures: bool = True) -> PContextSection:
    """The P-ContextBench tables over its runs (labelled), each run paired with the first by case id."""
    tables = build_pcontext(runs)
    section = PContextSection(
        runs=runs,
        tables=tables,
        comparisons=[c for other in runs[1:] if (c := _compare_pcontext(runs[0], other))],
    )
    if len({r.dataset_sha256 for r in runs}) > 1:
        section.notes.append("The P-ContextBench runs are over different persona sets (dataset sha256 differs).")
    for run in runs:
        gold = run.pcontext_gold
        if gold is not None and gold.error:
            section.notes.append(f"{run.label}: no answer keys for the per-case view ({gold.error}); the tables "
                                 f"come from {SCORES}.")  # fmt: skip
    for row in tables.rows:
        if row.stale:
            section.notes.append(f"{row.run}: {row.stale}; it is older than the score lines, which this report uses.")
    return section
