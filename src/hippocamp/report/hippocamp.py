"""HippoCamp's part of a report: the paper's Table 2 layout (file F1 and accuracy per profile and task
family, Overall profile-balanced with a bootstrap interval stratified by profile), accuracy by capability
label, difficulty bin, number of gold files, modalities and reasoning steps, paired comparisons against
the first run over the same dataset, figures, and every question with its gold, answers and verdicts.

Every number is computed from each run's score lines (one judge and mode), episodes and the gold records
the manifest names, with the functions of `hippocamp.scoring.stats`, so a run's headline figures equal
its ``scores.summary.json``. Unscored answers are counted and never scored 0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hippocamp.dataset.derived import features_of
from hippocamp.report import fmt
from hippocamp.report.common import RESAMPLES, Comparison, Delta
from hippocamp.report.markdown import comparisons, figure, files, md_escape, table
from hippocamp.report.plots import AccuracyPanel, plot_accuracy_panels
from hippocamp.report.rundata import ReportError, RunData, choose_judge
from hippocamp.runs.rundir import SCORES, RunDir
from hippocamp.schema.record import HippoCampRecord
from hippocamp.schema.run import HippoCampScoreLine, ScoreLine
from hippocamp.scoring.evidence import normalize_path
from hippocamp.scoring.hippocamp import answer_metric_means, gold_records, scored_items, summarize_scores
from hippocamp.scoring.stats import (
    CAPABILITY_DIMENSIONS,
    CI,
    GroupMean,
    balanced_mean,
    bootstrap_ci,
    by_capability,
    by_difficulty,
    group_means,
    mean_of,
    wilcoxon,
    with_difficulty,
)

__all__ = [
    "OVERALL",
    "AccuracyTable",
    "Attempt",
    "HippoCampSection",
    "QuestionView",
    "Table2",
    "build_section",
    "family_name",
    "profile_run_data",
]

OVERALL = "Overall"
#: the paper's column order; other task families follow in name order
FAMILY_ORDER = ("profiling", "factual_retention")
FAMILY_NAMES = {"profiling": "Profiling", "factual_retention": "Factual retention"}
#: (feature, title, x label, last bucket "N+")
BREADTH_AXES = (
    ("evidence_files", "Evidence breadth", "gold files", 5),
    ("modality_count", "Modality breadth", "modalities", 3),
    ("reasoning_steps", "Reasoning depth", "reasoning steps", 8),
)


def family_name(family: str) -> str:
    return FAMILY_NAMES.get(family, family.replace("_", " ").capitalize() or "Unknown")


def profile_run_data(run: RunDir, judge_mode: str | None, judge: str | None) -> RunData:
    """A HippoCamp run: one judge's score lines with the gold records its manifest names."""
    try:
        gold = gold_records(run)
    except (FileNotFoundError, ValueError) as exc:
        raise ReportError(str(exc)) from None
    if not (run.path / SCORES).is_file():
        raise ReportError(f"{run.path}: no {SCORES}; score the run first (hippocamp score {run.path})")
    all_lines = [s for s in run.scores().items if isinstance(s, HippoCampScoreLine)]
    judge_id, mode = choose_judge(all_lines, judge_mode, judge, run.path)
    chosen = [s for s in all_lines if s.judge == judge_id and s.mode == mode]
    lines = [s for s in chosen if s.task_id in gold]
    items = scored_items(lines, gold)
    items = with_difficulty(items, [gold[i.id] for i in items])
    episodes = {e.key: e for e in run.episodes().episodes}
    scored_keys = {(s.task_id, s.agent, s.epoch) for s in chosen}
    return RunData(
        path=run.path,
        **run.described(),
        judge=judge_id,
        mode=mode,
        lines=lines,  # type: ignore[arg-type]
        items=items,
        episodes=episodes,
        gold=gold,
        summary={
            **summarize_scores(lines, gold),
            "answer_metrics": answer_metric_means(
                [episodes[k] for k in dict.fromkeys((s.task_id, s.agent, s.epoch) for s in lines) if k in episodes],
                gold,
            ),
        },
        not_scored=sum(k not in scored_keys for k in episodes),
        missing_gold=sorted({k[0] for k in episodes if k[0] not in gold}),
        benchmark=run.benchmark_name,
    )


@dataclass
class Table2Row:
    """One run in the paper's Table 2: (profile or Overall, family) -> (file F1, accuracy)."""

    run: str
    cells: dict[tuple[str, str], tuple[GroupMean, GroupMean]]
    overall: GroupMean
    ci: CI
    file_f1: GroupMean
    unscored: int


@dataclass
class Table2:
    profiles: list[str]
    families: list[str]
    rows: list[Table2Row]

    @property
    def groups(self) -> list[str]:
        """The column groups: each profile, then Overall (left out with one profile: it would repeat it)."""
        return [*self.profiles, OVERALL] if len(self.profiles) > 1 else list(self.profiles)


@dataclass
class AccuracyTable:
    """Accuracy per row label (and optional group) per run, in run order."""

    title: str
    key: str
    rows: list[tuple[str, str, list[GroupMean]]]

    def panel(self, runs: Sequence[str], title: str | None = None) -> AccuracyPanel:
        return AccuracyPanel(
            title=title or self.title,
            xlabel=self.key,
            labels=[label for _, label, _ in self.rows],
            values={r: [row[2][i].mean for row in self.rows] for i, r in enumerate(runs)},
            counts={r: [row[2][i].n for row in self.rows] for i, r in enumerate(runs)},
        )


@dataclass
class Attempt:
    """One run's answer to one question (one epoch) and how it was scored."""

    run: str
    epoch: int
    answer: str
    verdict: str
    reason: str
    rationale: str
    decided_by: str
    cited: list[tuple[str, bool]]
    stop: str
    seconds: float | None
    error: str | None


@dataclass
class QuestionView:
    id: str
    question: str
    gold_answer: str
    family: str
    profile: str
    gold_files: list[tuple[str, bool]]
    attempts: list[Attempt]

    @property
    def verdicts(self) -> list[str]:
        return [a.verdict for a in self.attempts]


def _families(runs: list[RunData]) -> list[str]:
    seen = {it.qa_type or "unknown" for r in runs for it in r.items}
    return [f for f in FAMILY_ORDER if f in seen] + sorted(seen - set(FAMILY_ORDER))


def _table2(runs: list[RunData]) -> Table2:
    profiles = sorted({it.profile or "unknown" for r in runs for it in r.items})
    families = _families(runs)
    rows = []
    for run in runs:
        cells: dict[tuple[str, str], tuple[GroupMean, GroupMean]] = {}
        for family in families:
            fam = [it for it in run.items if (it.qa_type or "unknown") == family]
            for profile in profiles:
                mine = [it for it in fam if (it.profile or "unknown") == profile]
                cells[(profile, family)] = (mean_of(it.f1 for it in mine), mean_of(it.correct for it in mine))
            cells[(OVERALL, family)] = (balanced_mean(fam, "f1"), balanced_mean(fam))
        values = [it.correct for it in run.items]
        groups = [it.profile or "unknown" for it in run.items]
        rows.append(
            Table2Row(
                run=run.label,
                cells=cells,
                overall=balanced_mean(run.items),
                ci=bootstrap_ci(values, groups=groups, resamples=RESAMPLES),
                file_f1=balanced_mean(run.items, "f1"),
                unscored=sum(v is None for v in values),
            )
        )
    return Table2(profiles, families, rows)


def _capability(runs: list[RunData]) -> AccuracyTable:
    per_run = [by_capability(r.items) for r in runs]
    rows = []
    for dim in CAPABILITY_DIMENSIONS:
        labels = sorted({label for caps in per_run for label in caps[dim]})
        for label in labels:
            rows.append((dim, label, [caps[dim].get(label, GroupMean(None, 0)) for caps in per_run]))
    return AccuracyTable("Accuracy by capability", "label", rows)


def _difficulty(runs: list[RunData]) -> AccuracyTable:
    per_run = [by_difficulty(r.items) for r in runs]
    bins = list(per_run[0]) if per_run else []
    return AccuracyTable("Accuracy by difficulty", "difficulty score", [("", b, [p[b] for p in per_run]) for b in bins])


def _bucket(value: float, top: int) -> tuple[int, str]:
    v = int(value)
    return (top, f"{top}+") if v >= top else (v, str(v))


def _breadth(runs: list[RunData]) -> list[AccuracyTable]:
    features: dict[str, Any] = {}
    for run in runs:
        for key, record in run.gold.items():
            features.setdefault(key, features_of(record))
    tables = []
    for attr, title, xlabel, top in BREADTH_AXES:
        buckets = {key: _bucket(getattr(f, attr), top) for key, f in features.items()}
        per_run = [group_means(r.items, lambda it, b=buckets: b[it.id][1]) for r in runs]
        seen = {buckets[it.id] for r in runs for it in r.items}
        labels = [label for _, label in sorted(seen)]
        rows = [("", label, [g.get(label, GroupMean(None, 0)) for g in per_run]) for label in labels]
        tables.append(AccuracyTable(title, xlabel, rows))
    return tables


# -- comparisons ---------------------------------------------------------------------------------
LineMetric = Callable[[ScoreLine], float | None]


def _correct(s: ScoreLine) -> float | None:
    return None if s.correct is None else float(s.correct)


#: (name, unit, task family or None for all, value of a score line)
_METRICS: tuple[tuple[str, str, str | None, LineMetric], ...] = (
    ("Accuracy", "%", None, _correct),
    ("Accuracy · Profiling", "%", "profiling", _correct),
    ("Accuracy · Factual retention", "%", "factual_retention", _correct),
    ("File F1", "%", None, lambda s: float(s.files["hippocamp"]["f1"])),
    ("AU recall", "%", None, lambda s: float(s.au["recall"])),
    ("Latency", "s", None, lambda s: s.seconds),
    ("Tokens", "", None, lambda s: float(s.tokens)),
)


def _per_question(run: RunData, metric: LineMetric) -> dict[str, float | None]:
    """Each question's value, averaged over its epochs' known values (None when none is known)."""
    values: dict[str, list[float]] = defaultdict(list)
    for s in run.lines:
        known = values[s.task_id]
        v = metric(s)
        if v is not None:
            known.append(v)
    return {q: (sum(v) / len(v) if v else None) for q, v in values.items()}


def _balanced(values: list[float], groups: list[str]) -> float | None:
    by: dict[str, list[float]] = defaultdict(list)
    for v, g in zip(values, groups, strict=True):
        by[g].append(v)
    means = [sum(v) / len(v) for v in by.values()]
    return sum(means) / len(means) if means else None


def _compare(base: RunData, other: RunData) -> Comparison:
    common = sorted(set(base.gold) & {s.task_id for s in base.lines} & {s.task_id for s in other.lines})
    deltas = []
    for name, unit, family, metric in _METRICS:
        ids = [q for q in common if family is None or (base.gold[q].qa_type or "unknown") == family]
        if not ids:
            continue
        a, b = _per_question(base, metric), _per_question(other, metric)
        xs, ys = [b[q] for q in ids], [a[q] for q in ids]
        both = [(x, y, base.gold[q].data_source or "unknown") for q, x, y in zip(ids, xs, ys, strict=True)
                if x is not None and y is not None]  # fmt: skip
        groups = [g for _, _, g in both]
        ci = bootstrap_ci([x - y for x, y, _ in both], groups=groups, resamples=RESAMPLES)
        deltas.append(
            Delta(
                metric=name,
                unit=unit,
                base=_balanced([y for _, y, _ in both], groups),
                other=_balanced([x for x, _, _ in both], groups),
                ci=ci,
                test=wilcoxon(xs, ys),
            )
        )
    return Comparison(base.label, other.label, len(common), deltas)


# -- drill-down ----------------------------------------------------------------------------------
def _verdict(line: ScoreLine | None) -> tuple[str, str]:
    if line is None:
        return "not scored", "no score line for this judge"
    if line.correct is None:
        return "unscored", line.error or line.rationale or line.status
    return ("correct" if line.correct else "wrong"), ""


def _questions(runs: list[RunData]) -> list[QuestionView]:
    gold: dict[str, HippoCampRecord] = {}
    for run in runs:
        for key, record in run.gold.items():
            gold.setdefault(key, record)
    asked = {k[0] for r in runs for k in r.episodes}
    views = []
    for qid, record in gold.items():
        if qid not in asked:
            continue
        gold_files = {normalize_path(p) for p in record.file_path}
        attempts, cited_any = [], set()
        for run in runs:
            lines = {(s.task_id, s.epoch): s for s in run.lines}
            for (task, _, epoch), episode in sorted(run.episodes.items(), key=lambda kv: kv[0][2]):
                if task != qid:
                    continue
                line = lines.get((qid, epoch))
                verdict, reason = _verdict(line)
                cited = [(p, normalize_path(p) in gold_files) for p in episode.answer.files]
                cited_any.update(normalize_path(p) for p, _ in cited)
                attempts.append(
                    Attempt(
                        run=run.label,
                        epoch=epoch,
                        answer=episode.answer.text,
                        verdict=verdict,
                        reason=reason,
                        rationale=line.rationale if line else "",
                        decided_by=line.decided_by if line else "",
                        cited=cited,
                        stop=episode.answer.stop,
                        seconds=episode.wall_s,
                        error=episode.answer.error,
                    )
                )
        views.append(
            QuestionView(
                id=qid,
                question=record.question,
                gold_answer=record.answer,
                family=family_name(record.qa_type or "unknown"),
                profile=record.data_source or "unknown",
                gold_files=[(p, normalize_path(p) in cited_any) for p in record.file_path],
                attempts=attempts,
            )
        )
    return views


# -- the section -----------------------------------------------------------------------------------
FIGURE_TITLES = {
    "difficulty": "Accuracy vs difficulty",
    "breadth": "Accuracy by evidence breadth and reasoning depth",
    "capability": "Accuracy by capability label",
}
VERDICT_MARK = {"correct": "✅ correct", "wrong": "❌ wrong", "unscored": "⚠️ unscored", "not scored": "⚠️ not scored"}


@dataclass
class ListsRow:
    """One run's file P/R/F1 under each file-list definition and path rule, and its accuracy under
    both judge-failure policies (`hippocamp.scoring.hippocamp.summarize_scores`)."""

    run: str
    agent: str
    paper: str
    #: (rule, list) -> (precision, recall, f1); rule "hippocamp" (paths normalised) or "release" (as written)
    cells: dict[tuple[str, str], tuple[float | None, float | None, float | None]]
    accuracy: float | None
    accuracy_failures_as_no: float | None
    unscored: int
    #: the release's answer metrics (exact match, covered exact match, ROUGE, BLEU) by name
    answer_metrics: dict[str, float | None] = field(default_factory=dict)


def _lists(runs: list[RunData]) -> list[ListsRow]:
    rows = []
    for run in runs:
        s = run.summary
        found = s.get("file_lists") or {}
        cells = {
            (rule, name): (v.get("precision"), v.get("recall"), v.get("f1"))
            for rule, lists in found.items()
            for name, v in lists.items()
        }
        paper = s.get("paper_file_list")
        rows.append(ListsRow(run.label, run.agent, paper if isinstance(paper, str) else ", ".join(paper or []),
                             cells, s["question_weighted"]["mean"], s.get("accuracy_failures_as_no"),
                             s.get("unscored", 0), s.get("answer_metrics") or {}))  # fmt: skip
    return rows


LIST_NAMES = ("cited", "touched", "retrieved")
#: the release's answer metrics the report shows, with their column names
ANSWER_METRICS = {"exact_match": "EM", "covered_exact_match": "Covered EM", "rouge": "ROUGE", "bleu": "BLEU"}
LIST_RULES = (("hippocamp", "paths normalised"), ("release", "release: paths as written"))


@dataclass
class HippoCampSection:
    """HippoCamp's part of a report, over its runs (in run order)."""

    runs: list[RunData]
    table2: Table2
    capability: AccuracyTable
    difficulty: AccuracyTable
    breadth: list[AccuracyTable]
    comparisons: list[Comparison]
    questions: list[QuestionView]
    lists: list[ListsRow] = field(default_factory=list)
    figures: dict[str, bytes] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    benchmark: str = "hippocamp"
    template: str = "hippocamp.html.j2"
    drill_template: str = "hippocamp_questions.html.j2"

    @property
    def labels(self) -> list[str]:
        return [r.label for r in self.runs]

    @property
    def lead(self) -> str:
        return f"{len(self.questions)} question(s)"

    @property
    def measures(self) -> list[str]:
        return ["accuracy", "file F1"]

    @property
    def nav(self) -> list[tuple[str, str]]:
        links = [("table2", "Results (Table 2)"), ("file-lists", "File lists")]
        if self.comparisons:
            links.append(("comparison", "Comparison"))
        return [*links, ("capability", "Capabilities"), ("difficulty", "Difficulty"), ("breadth", "Breadth")]

    @property
    def drill_nav(self) -> list[tuple[str, str]]:
        return [("questions", "Per question")]

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"family": family_name}

    def markdown(self, figures_dir: str | None) -> list[str]:
        """Table 2 by profile, comparisons, capability, difficulty, breadth."""
        labels = self.labels
        lines = ["", "## Results by profile and task family (Table 2 layout)", "", *self._table2()]
        lines += ["", "## File lists and judge-failure policies", "", *self._lists()]
        if self.comparisons:
            lines += ["", f"## Comparison against {md_escape(self.runs[0].label)}", ""]
            lines += ["Paired over the questions both runs answered: Δ = other − base (profile-balanced), a 95% "
                      "bootstrap interval of the paired difference, and the paired Wilcoxon signed-rank test on "
                      "per-question outcomes (averaged over epochs)."]  # fmt: skip
            lines += comparisons(self.comparisons)
        lines += ["", "## Accuracy by capability", "", *_accuracy_table(self.capability, labels, "dimension")]
        lines += figure(self.figures, "capability", FIGURE_TITLES["capability"], figures_dir)
        lines += ["", "## Accuracy vs difficulty", "", *_accuracy_table(self.difficulty, labels)]
        lines += figure(self.figures, "difficulty", FIGURE_TITLES["difficulty"], figures_dir)
        lines += ["", "## Evidence breadth, modality breadth and reasoning depth"]
        for t in self.breadth:
            lines += ["", f"### {t.title}", "", *_accuracy_table(t, labels)]
        lines += figure(self.figures, "breadth", FIGURE_TITLES["breadth"], figures_dir)
        return lines

    def drill_markdown(self) -> list[str]:
        lines = ["", "## Per question"]
        for q in self.questions:
            lines += _question(q)
        return lines

    def _table2(self) -> list[str]:
        t = self.table2
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
            "means (profile-balanced), with a 95% bootstrap interval (stratified by profile). Unscored answers "
            "are left out of accuracy and counted."
        )
        return [intro, "", *table(header, rows)]

    def _lists(self) -> list[str]:
        header = ["Run", "Paper's list"]
        header += [f"{name} P/R/F1 ({label})" for _, label in LIST_RULES for name in LIST_NAMES]
        header += ["Acc (failed judgments left out)", "Acc (failed judgments = no)", "Unscored"]
        header += [ANSWER_METRICS[m] for m in ANSWER_METRICS]
        rows = []
        for row in self.lists:
            cells = [md_escape(row.run), md_escape(row.paper)]
            for rule, _ in LIST_RULES:
                for name in LIST_NAMES:
                    cells.append(" / ".join(fmt.pct(v) for v in row.cells.get((rule, name), (None, None, None))))
            cells += [fmt.pct(row.accuracy), fmt.pct(row.accuracy_failures_as_no), str(row.unscored)]
            cells += [fmt.pct(row.answer_metrics.get(m)) for m in ANSWER_METRICS]
            rows.append(cells)
        intro = (
            "File precision / recall / F1 in % of the files each answer cites, the files its actions touched "
            "(the HippoCamp release's rule for terminal and tool agents) and the files its retrieval steps "
            "returned (the release's rule for RAG and Search-R1), with paths normalised (hippocamp) and as "
            "written (the release's evaluate.py). The paper's list is the one the paper used for the agent's "
            "family. Accuracy twice: with failed judgments left out (hippocamp) and counted as no (the release); "
            "beside it the release's answer metrics, in %."
        )
        return [intro, "", *table(header, rows)]


def _accuracy_table(t: AccuracyTable, labels: Sequence[str], group: str | None = None) -> list[str]:
    header = ([group] if group else []) + [t.key, *map(md_escape, labels)]
    rows = [([md_escape(g)] if group else []) + [md_escape(label), *(fmt.mean_n(m) for m in means)]
            for g, label, means in t.rows]  # fmt: skip
    return table(header, rows)


def _question(q: QuestionView) -> list[str]:
    out = [
        "",
        f"### {md_escape(q.id)} · {md_escape(q.family)} · {md_escape(q.profile)}",
        "",
        f"**Question.** {md_escape(q.question)}",
        "",
        f"**Gold answer.** {md_escape(q.gold_answer)}",
        "",
        f"**Gold files** (✓ cited by some run): {files(q.gold_files, '✓')}",
        "",
    ]
    header = ["Run", "Epoch", "Verdict", "Answer", "Cited files (✓ gold)", "Stop", "Judge"]
    rows = []
    for a in q.attempts:
        verdict = VERDICT_MARK.get(a.verdict, a.verdict) + (f": {md_escape(a.reason)}" if a.reason else "")
        judge = md_escape(a.rationale) + (f" ({md_escape(a.decided_by)})" if a.decided_by else "")
        stop = md_escape(a.stop) + (f": {md_escape(a.error)}" if a.error else "")
        rows.append([md_escape(a.run), str(a.epoch), verdict, md_escape(a.answer) or fmt.DASH,
                     files(a.cited, "✓"), stop, judge or fmt.DASH])  # fmt: skip
    return out + table(header, rows)


def _figures(s: HippoCampSection) -> dict[str, bytes]:
    labels = s.labels
    figures: dict[str, bytes] = {}
    if s.difficulty.rows:
        figures["difficulty"] = plot_accuracy_panels([s.difficulty.panel(labels)], FIGURE_TITLES["difficulty"])
    panels = [t.panel(labels) for t in s.breadth if t.rows]
    if panels:
        figures["breadth"] = plot_accuracy_panels(panels, FIGURE_TITLES["breadth"])
    cap_panels = []
    for dim in CAPABILITY_DIMENSIONS:
        rows = [row for row in s.capability.rows if row[0] == dim]
        if rows:
            cap_panels.append(AccuracyTable(dim.capitalize(), f"{dim} label", rows).panel(labels))
    if cap_panels:
        figures["capability"] = plot_accuracy_panels(cap_panels, FIGURE_TITLES["capability"])
    return figures


def build_section(runs: list[RunData], figures: bool = True) -> HippoCampSection:
    """HippoCamp's tables over its runs (labelled); compared against the first when all share a dataset."""
    same_suite = len({r.dataset_sha256 for r in runs}) == 1
    section = HippoCampSection(
        runs=runs,
        table2=_table2(runs),
        capability=_capability(runs),
        difficulty=_difficulty(runs),
        breadth=_breadth(runs),
        comparisons=[_compare(runs[0], other) for other in runs[1:]] if same_suite else [],
        questions=_questions(runs),
        lists=_lists(runs),
    )
    if not same_suite:
        section.notes.append("The runs are over different datasets (dataset sha256 differs): they are not compared.")
    if figures:
        section.figures = _figures(section)
    return section
