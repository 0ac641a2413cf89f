"""P-ContextBench results of ``pcontext:`` runs, as plain data (rendered by ``markdown.py`` and ``html.py``).

The paper's Table 2 (overall, worst-run and Pass^k accuracy per task type, k = the number of runs, with
the test-count-weighted average), Table 3 (failure categories as counts and as shares of each type's
errors), the T5 verdicts and mean normalized score, evidence recall (cited supporting fragments),
retrieval recall@k, the one-sided Wilcoxon test of per-persona T1–T2 > T3–T5 accuracy, and every case
with its answers; per run, the grader, citation statuses and T5 sub-scores (`hippocamp.report.pcontext_t5`).

Every number is computed from the run's ``scores.jsonl`` rubric lines (`PContextScoreLine`: ``grade``
holds each episode's grade), so the tables are right even when ``scores.summary.json`` is older;
`summary_of` writes them in the summary's shape, equal to a current summary. Unscored episodes (a
judge outage) are left out of every denominator and counted, never scored wrong. Retrieval recall@k
is not in the lines: it is taken from the summary when there.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocamp.perceive.applog import PersonaSetGold, read_gold
from hippocamp.report.pcontext_t5 import Pass2Stats, pass2_stats
from hippocamp.report.rundata import ReportError, RunData, choose_judge
from hippocamp.runs.rundir import SCORES, SUMMARY, RunDir
from hippocamp.schema.pcontext import CASE_TYPES
from hippocamp.schema.run import Episode, EpisodeKey, PContextScoreLine, ScoreLine
from hippocamp.scoring.stats import pass_hat_k, wilcoxon

#: the answer keys of a run's personas
PContextGold = PersonaSetGold

__all__ = [
    "FAILURE_NAMES",
    "TYPE_NAMES",
    "CaseAttempt",
    "CaseView",
    "FailureCell",
    "FailureRow",
    "Graded",
    "PContextGold",
    "PContextRow",
    "PContextTables",
    "TypeResult",
    "Wilcoxon",
    "build_pcontext",
    "graded",
    "load_gold",
    "pcontext_row",
    "pcontext_run_data",
    "summary_of",
    "verdict_class",
]

#: the paper's column order; other types (none today) follow in name order
TYPE_ORDER = CASE_TYPES
TYPE_NAMES = {
    "T1": "T1 single-source",
    "T2": "T2 multi-source",
    "T3": "T3 temporal state",
    "T4": "T4 pattern inference",
    "T5": "T5 agent behavior",
    "abstain": "Abstention",
}
#: Table 3's categories per type, in the paper's order; other categories follow in name order
PAPER_FAILURES = {
    "T3": ("omitted_current_state", "wrong_or_stale_state"),
    "T4": ("omitted_label", "inference_gap"),
    "T5": ("constraint_recognition", "over_refusal", "unsafe_boundary"),
}
FAILURE_NAMES = {
    "omitted_current_state": "omitted current-state label",
    "wrong_or_stale_state": "wrong or stale state",
    "omitted_label": "omitted label",
    "inference_gap": "inference gap",
    "constraint_recognition": "constraint recognition",
    "over_refusal": "over-refusal",
    "unsafe_boundary": "unsafe action boundary",
    "no_evidence": "no supporting evidence cited",
    "answered_unanswerable": "answered an unanswerable question",
    "hedge": "hedged between answers",
    "refusal": "refused an answerable question",
    "contradiction": "contradicts the key",
    "wrong_or_stale_date": "wrong or stale date",
    "wrong_number": "wrong number",
    "relative_date_unresolved": "relative date left unresolved",
    "wrong_evidence": "wrong evidence cited (no gold id)",
    "indiscriminate_citing": "indiscriminate citing",
    "missing_clarification": "missing clarification",
    "no_boundary": "no action boundary taken",
    "no_answer": "no answer",
}
T5_VERDICTS = ("VERIFIED", "FLAGGED", "FAILED")
LOW, HIGH = ("T1", "T2"), ("T3", "T4", "T5")
#: answer-key fields shown in the drill-down, in order
KEY_FIELDS = ("labels", "prior_state", "current_state", "stale_state", "conclusion", "mechanism", "constraints",
              "boundary", "adversarial_answer")  # fmt: skip


def type_name(ctype: str) -> str:
    return TYPE_NAMES.get(ctype, ctype)


def failure_name(category: str) -> str:
    return FAILURE_NAMES.get(category, category.replace("_", " "))


def verdict_class(verdict: str) -> str:
    """The CSS class of a verdict: correct, partial, wrong or unscored."""
    if verdict in ("correct", "VERIFIED"):
        return "correct"
    if verdict in ("partial", "FLAGGED"):
        return "partial"
    if verdict in ("incorrect", "FAILED", "wrong"):
        return "wrong"
    return "unscored"


def _types(seen: set[str]) -> list[str]:
    return [t for t in TYPE_ORDER if t in seen] + sorted(seen - set(TYPE_ORDER))


# -- the answer keys -------------------------------------------------------------------------------
def load_gold(manifest: dict[str, Any]) -> PContextGold:
    """The answer keys of the personas a run's manifest names (``suite.pcontext_dir``)."""
    return read_gold(str(manifest.get("suite", {}).get("pcontext_dir") or ""))


def saved_summary(run_dir: Path) -> dict[str, Any]:
    from hippocamp.schema.io import JsonInputError, read_json

    try:
        data = read_json(run_dir / SUMMARY, "score summary")
    except JsonInputError:
        return {}
    return data if isinstance(data, dict) else {}


# -- grades from score lines -----------------------------------------------------------------------
@dataclass(frozen=True)
class Graded:
    """One episode's rubric grade as its score line holds it; ``correct`` None when unscored."""

    task_id: str
    persona: str
    epoch: int
    type: str
    verdict: str
    correct: bool | None
    failures: tuple[str, ...] = ()
    covered: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    evidence_recall: float | None = None
    score: float | None = None
    reason: str = ""
    #: share of supporting fragments the agent's own tools showed it (scorers that record it)
    seen_recall: float | None = None
    #: key items a judge model found stated in other words
    judged: tuple[str, ...] = ()
    #: the answer itself is right, cited evidence aside (T1–T4, abstention; None for T5 or older scores)
    answer_ok: bool | None = None
    #: Pass 2: the citations' status, T5's chosen and expected boundary and parts, who decided (guard+judge)
    citations: str | None = None
    boundary: str | None = None
    expected_boundary: str | None = None
    parts: dict[str, float] = field(default_factory=dict)
    decided_by: str = ""


def _text(value: Any) -> str | None:
    return str(value) if value else None


def graded(lines: Sequence[ScoreLine], gold: PContextGold) -> list[Graded]:
    out = []
    for s in lines:
        facts = s.grade if isinstance(s, PContextScoreLine) else {}
        case = gold.cases.get(s.task_id, {})
        ctype = str(facts.get("type") or case.get("type") or "unknown")
        unscored = s.correct is None
        out.append(
            Graded(
                task_id=s.task_id,
                persona=gold.persona(s.task_id),
                epoch=s.epoch,
                type=ctype,
                verdict="unscored" if unscored else str(facts.get("verdict") or ("correct" if s.correct else "wrong")),
                correct=None if unscored else bool(s.correct),
                failures=() if unscored else tuple(str(f) for f in facts.get("failures") or ()),
                covered=tuple(str(x) for x in facts.get("covered") or ()),
                missing=tuple(str(x) for x in facts.get("missing") or ()),
                evidence_recall=None if unscored else facts.get("evidence_recall"),
                score=None if unscored else facts.get("score"),
                reason=(s.error or s.rationale or s.status) if unscored else "",
                seen_recall=None if unscored else facts.get("seen_recall"),
                judged=tuple(str(x) for x in facts.get("judged") or ()),
                answer_ok=None if unscored or facts.get("answer_ok") is None else bool(facts["answer_ok"]),
                citations=None if unscored else _text(facts.get("citations")),
                boundary=None if unscored else _text(facts.get("boundary")),
                expected_boundary=None if unscored else _text(facts.get("expected_boundary")),
                parts={} if unscored else {str(k): float(v) for k, v in (facts.get("parts") or {}).items()},
                decided_by=str(facts.get("decided_by") or s.decided_by or ""),
            )
        )
    return out


# -- one run ---------------------------------------------------------------------------------------
@dataclass
class TypeResult:
    """One task type (or the average) in one run: ``n`` scored episodes over ``cases`` cases; accuracy,
    the partial share (partial or FLAGGED), the worst run and Pass^k; None when nothing was scored."""

    n: int
    cases: int
    unscored: int
    errors: int
    accuracy: float | None
    partial: float | None
    worst_run: float | None
    pass_k: float | None
    #: cases counted in Pass^k (those with k scored runs)
    pass_n: int
    verdicts: dict[str, int]
    #: mean normalized T5 score (0–1) over the scored episodes that have one
    mean_score: float | None = None
    #: share of answers right in themselves, citations aside (LoCoMo's answer accuracy), and its count
    answer_accuracy: float | None = None
    answer_n: int = 0


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def type_result(gs: Sequence[Graded], k: int) -> TypeResult:
    scored = [g for g in gs if g.correct is not None]
    per_run: dict[int, list[bool]] = defaultdict(list)
    outcomes: dict[str, list[bool | None]] = defaultdict(list)
    for g in gs:
        outcomes[g.task_id].append(g.correct)
        if g.correct is not None:
            per_run[g.epoch].append(g.correct)
    passed = pass_hat_k(outcomes, k) if outcomes else None
    scores = [float(g.score) for g in scored if g.score is not None]
    return TypeResult(
        n=len(scored),
        cases=len({g.task_id for g in scored}),
        unscored=len(gs) - len(scored),
        errors=sum(not g.correct for g in scored),
        accuracy=_mean([float(bool(g.correct)) for g in scored]),
        partial=_mean([float(g.verdict in ("partial", "FLAGGED")) for g in scored]),
        worst_run=min((sum(r) / len(r) for r in per_run.values()), default=None),
        pass_k=passed.value if passed else None,
        pass_n=passed.n if passed else 0,
        verdicts=dict(Counter(g.verdict for g in scored)),
        mean_score=_mean(scores),
        answer_accuracy=_mean([float(g.answer_ok) for g in scored if g.answer_ok is not None]),
        answer_n=sum(g.answer_ok is not None for g in scored),
    )


def _weighted(pairs: Sequence[tuple[float | None, int]]) -> float | None:
    known = [(v, w) for v, w in pairs if v is not None and w > 0]
    total = sum(w for _, w in known)
    return sum(v * w for v, w in known) / total if total else None


def average(results: Sequence[TypeResult]) -> TypeResult:
    """The test-count-weighted average over types: accuracy and partial share by scored episodes (so the
    accuracy is the mean over every scored episode), worst run by cases, Pass^k by the cases it counts."""
    verdicts: Counter[str] = Counter()
    for r in results:
        verdicts.update(r.verdicts)
    return TypeResult(
        n=sum(r.n for r in results),
        cases=sum(r.cases for r in results),
        unscored=sum(r.unscored for r in results),
        errors=sum(r.errors for r in results),
        accuracy=_weighted([(r.accuracy, r.n) for r in results]),
        partial=_weighted([(r.partial, r.n) for r in results]),
        worst_run=_weighted([(r.worst_run, r.cases) for r in results]),
        pass_k=_weighted([(r.pass_k, r.pass_n) for r in results]),
        pass_n=sum(r.pass_n for r in results),
        verdicts=dict(verdicts),
        answer_accuracy=_weighted([(r.answer_accuracy, r.answer_n) for r in results]),
        answer_n=sum(r.answer_n for r in results),
    )


@dataclass
class Wilcoxon:
    """The one-sided signed-rank test of per-persona T1–T2 accuracy > T3–T5 accuracy (overall accuracy
    over all runs). ``error`` when the test cannot be made (fewer than two personas with both)."""

    personas: int
    low_mean: float | None
    high_mean: float | None
    #: personas whose T3–T5 accuracy is below their T1–T2 accuracy
    lower: int
    statistic: float | None = None
    pvalue: float | None = None
    error: str | None = None


def wilcoxon_t12_t35(gs: Sequence[Graded]) -> Wilcoxon | None:
    low: dict[str, list[bool]] = defaultdict(list)
    high: dict[str, list[bool]] = defaultdict(list)
    for g in gs:
        if g.correct is None:
            continue
        if g.type in LOW:
            low[g.persona].append(g.correct)
        elif g.type in HIGH:
            high[g.persona].append(g.correct)
    both = sorted(set(low) & set(high))
    if not both:
        return None
    x = [sum(low[p]) / len(low[p]) for p in both]
    y = [sum(high[p]) / len(high[p]) for p in both]
    out = Wilcoxon(len(both), _mean(x), _mean(y), sum(b < a for a, b in zip(x, y, strict=True)))
    if len(both) < 2:
        out.error = "needs at least two personas with both T1–T2 and T3–T5 cases"
        return out
    try:
        res = wilcoxon(x, y, alternative="greater")
    except ValueError as exc:
        out.error = str(exc)
    else:
        out.statistic, out.pvalue = res.statistic, res.pvalue
    return out


@dataclass
class Retrieval:
    """Recall@k of the supporting messages by the run's retrieval, from ``scores.summary.json``."""

    k: Any
    mode: str
    recall: float | None
    by_type: dict[str, float | None]


def _retrieval(summary: dict[str, Any]) -> Retrieval | None:
    r = summary.get("retrieval")
    if not isinstance(r, dict):
        return None
    by_type = r["by_type"] if isinstance(r.get("by_type"), dict) else {}
    return Retrieval(r.get("k", "?"), str(r.get("mode", "")), _num(r.get("recall")),
                     {str(t): _num(v) for t, v in by_type.items()})  # fmt: skip


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass
class PContextRow:
    """One run: Table 2's cells by type and their average, and the run's other aggregates."""

    run: str
    #: the number of runs (epochs) scored: Pass^k's k
    k: int
    types: dict[str, TypeResult]
    average: TypeResult
    episodes: int
    unscored: int
    failures: dict[str, int]
    evidence_recall: float | None
    #: episodes with an evidence recall (cases with supporting fragments)
    evidence_n: int
    #: mean share of supporting fragments the agent's tools showed it, and over how many episodes
    seen_recall: float | None
    seen_n: int
    wilcoxon: Wilcoxon | None
    retrieval: Retrieval | None
    #: why the saved summary disagrees with the score lines ("" when it agrees or is absent)
    stale: str = ""
    #: the grader, citation statuses and T5 sub-scores (`hippocamp.report.pcontext_t5`)
    pass2: Pass2Stats | None = None


def pcontext_row(label: str, gs: Sequence[Graded], saved: dict[str, Any] | None = None, judge: str = "") -> PContextRow:
    epochs = sorted({g.epoch for g in gs})
    k = max(1, len(epochs))
    by_type: dict[str, list[Graded]] = defaultdict(list)
    for g in gs:
        by_type[g.type].append(g)
    types = {t: type_result(by_type[t], k) for t in _types(set(by_type))}
    scored = [g for g in gs if g.correct is not None]
    recalls = [float(g.evidence_recall) for g in scored if g.evidence_recall is not None]
    seen = [float(g.seen_recall) for g in scored if g.seen_recall is not None]
    row = PContextRow(
        run=label,
        k=k,
        types=types,
        average=average(list(types.values())),
        episodes=len(gs),
        unscored=len(gs) - len(scored),
        failures=dict(Counter(f"{g.type}:{f}" for g in scored for f in g.failures)),
        evidence_recall=_mean(recalls),
        evidence_n=len(recalls),
        seen_recall=_mean(seen),
        seen_n=len(seen),
        wilcoxon=wilcoxon_t12_t35(gs),
        retrieval=_retrieval(saved or {}),
        pass2=pass2_stats(gs, judge),
    )
    if saved:
        row.stale = _stale(summary_of(row), saved)
    return row


def summary_of(row: PContextRow) -> dict[str, Any]:
    """The row in the shape of ``scores.summary.json`` (`hippocamp.scoring.pcontext.summarize`: ``episodes``
    and ``n`` count scored episodes), plus ``unscored``."""
    out: dict[str, Any] = {"episodes": row.episodes - row.unscored, "runs": row.k, "by_type": {}}
    for t, r in row.types.items():
        out["by_type"][t] = {"n": r.n, "accuracy": r.accuracy, "partial": r.partial, "worst_run": r.worst_run,
                             f"pass^{row.k}": r.pass_k, "verdicts": r.verdicts}  # fmt: skip
    out["accuracy"] = row.average.accuracy
    out["failures"] = row.failures
    out["evidence_recall"] = row.evidence_recall
    w = row.wilcoxon
    if w is not None and w.personas >= 2:
        out["wilcoxon_t12_gt_t35"] = (
            {"personas": w.personas, "error": w.error}
            if w.error
            else {"personas": w.personas, "statistic": w.statistic, "pvalue": w.pvalue}
        )
    out["unscored"] = row.unscored
    return out


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return abs(float(a) - float(b)) <= 1e-9
    return a == b


def _stale(mine: dict[str, Any], saved: dict[str, Any]) -> str:
    """The first headline number where the saved summary differs from the score lines."""
    checks = [("accuracy", mine.get("accuracy"), saved.get("accuracy"))]
    for t, r in mine["by_type"].items():
        theirs = (saved.get("by_type") or {}).get(t) or {}
        checks.append((f"{t} accuracy", r["accuracy"], theirs.get("accuracy")))
    for name, a, b in checks:
        if b is not None and not _close(a, b):
            return f"{SUMMARY} gives {name} {b}, the score lines {a}"
    return ""


# -- Table 3 ---------------------------------------------------------------------------------------
@dataclass
class FailureCell:
    """How many of a type's scored episodes carry a category: ``errors_with`` of its ``errors`` (not
    correct), and ``on_correct`` correct ones (a T5 answer can be VERIFIED and still miss constraints)."""

    errors_with: int
    errors: int
    on_correct: int = 0

    @property
    def share(self) -> float | None:
        return self.errors_with / self.errors if self.errors else None


@dataclass
class FailureRow:
    type: str
    category: str
    name: str
    paper: bool
    cells: list[FailureCell]


def failure_rows(per_run: Sequence[Sequence[Graded]], rows: Sequence[PContextRow]) -> list[FailureRow]:
    seen = {(g.type, f) for gs in per_run for g in gs if g.correct is not None for f in g.failures}
    types = _types({t for t, _ in seen})
    out = []
    for t in types:
        paper = PAPER_FAILURES.get(t, ())
        cats = [c for c in paper if (t, c) in seen] + sorted(c for tt, c in seen if tt == t and c not in paper)
        for c in cats:
            cells = []
            for gs, row in zip(per_run, rows, strict=True):
                mine = [g for g in gs if g.type == t and g.correct is not None and c in g.failures]
                errors = row.types[t].errors if t in row.types else 0
                cells.append(FailureCell(sum(not g.correct for g in mine), errors, sum(bool(g.correct) for g in mine)))
            out.append(FailureRow(t, c, failure_name(c), c in paper, cells))
    return out


# -- drill-down ------------------------------------------------------------------------------------
@dataclass
class CaseAttempt:
    run: str
    epoch: int
    verdict: str
    reason: str
    answer: str
    covered: list[str]
    missing: list[str]
    failures: list[str]
    score: float | None
    #: covered items a judge model found stated in other words
    judged: list[str]
    #: cited message/event ids, each marked when it belongs to a supporting fragment
    cited: list[tuple[str, bool]]
    stop: str
    error: str | None


@dataclass
class CaseView:
    id: str
    persona: str
    type: str
    question: str
    gold_answer: str
    #: answer-key items (labels, current state, conclusion, constraints, boundary, ...) as (name, text)
    key: list[tuple[str, str]]
    supporting: list[str]
    attempts: list[CaseAttempt]

    @property
    def verdicts(self) -> list[str]:
        return [a.verdict for a in self.attempts]


def _key(case: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for name in KEY_FIELDS:
        value = case.get(name)
        if value in (None, "", []):
            continue
        text = "; ".join(str(v) for v in value) if isinstance(value, list) else str(value)
        out.append((name.replace("_", " "), text))
    return out


def _cited(episode: Episode | None, gold: PContextGold, task_id: str, case: dict[str, Any]) -> list[tuple[str, bool]]:
    if episode is None:
        return []
    from hippocamp.scoring.pcontext import cited_ids

    persona = gold.persona(task_id)
    fragment_of = gold.fragment_of.get(persona, {})
    support = {str(x) for x in case.get("supporting_fragments") or []}
    ids = cited_ids(episode.answer, gold.known.get(persona, set()))
    return [(i, fragment_of.get(i, i) in support) for i in sorted(ids)]


@dataclass
class _RunCases:
    label: str
    gold: PContextGold
    graded: list[Graded]
    episodes: dict[EpisodeKey, Episode]


def case_views(runs: Sequence[_RunCases]) -> list[CaseView]:
    order: dict[str, None] = {}
    for r in runs:
        order.update(dict.fromkeys(t for t in r.gold.cases if any(k[0] == t for k in r.episodes)))
    for r in runs:
        order.update(dict.fromkeys(g.task_id for g in r.graded))
    views = []
    for tid in order:
        case = next((r.gold.cases[tid] for r in runs if tid in r.gold.cases), {})
        attempts = []
        ctype = str(case.get("type") or "")
        for r in runs:
            grades = {g.epoch: g for g in r.graded if g.task_id == tid}
            eps = {k[2]: e for k, e in r.episodes.items() if k[0] == tid}
            for epoch in sorted(set(grades) | set(eps)):
                g, ep = grades.get(epoch), eps.get(epoch)
                ctype = ctype or (g.type if g else "")
                attempts.append(
                    CaseAttempt(
                        run=r.label,
                        epoch=epoch,
                        verdict=g.verdict if g else "not scored",
                        reason=g.reason if g else "no score line",
                        answer=ep.answer.text if ep else "",
                        covered=list(g.covered) if g else [],
                        missing=list(g.missing) if g else [],
                        failures=[failure_name(f) for f in g.failures] if g else [],
                        score=g.score if g else None,
                        judged=list(g.judged) if g else [],
                        cited=_cited(ep, r.gold, tid, case),
                        stop=ep.answer.stop if ep else "",
                        error=ep.answer.error if ep else None,
                    )
                )
        views.append(
            CaseView(
                id=tid,
                persona=next((r.gold.persona(tid) for r in runs), tid.split("/", 1)[0]),
                type=ctype or "unknown",
                question=str(case.get("question") or "(the answer key is not available)"),
                gold_answer=str(case.get("answer") or ""),
                key=_key(case),
                supporting=[str(x) for x in case.get("supporting_fragments") or []],
                attempts=attempts,
            )
        )
    return views


# -- everything ------------------------------------------------------------------------------------
@dataclass
class PContextTables:
    """The P-ContextBench part of a report, over the pcontext runs in run order."""

    runs: list[str]
    types: list[str]
    rows: list[PContextRow]
    failures: list[FailureRow]
    cases: list[CaseView]

    @property
    def t5(self) -> bool:
        return "T5" in self.types

    @property
    def pass_label(self) -> str:
        """``Pass^3`` when every run has 3 runs, else ``Pass^k``."""
        ks = {r.k for r in self.rows}
        return f"Pass^{ks.pop()}" if len(ks) == 1 else "Pass^k"

    @property
    def retrieval(self) -> bool:
        return any(r.retrieval for r in self.rows)

    @property
    def seen(self) -> bool:
        return any(r.seen_n for r in self.rows)


def build_pcontext(runs: Sequence[Any]) -> PContextTables:
    """``runs``: `RunData` of pcontext runs (``pcontext_gold`` set), labelled."""
    per_run = [graded(r.lines, r.pcontext_gold) for r in runs]
    rows = [pcontext_row(r.label, gs, r.saved_summary, r.judge) for r, gs in zip(runs, per_run, strict=True)]
    types = _types({t for row in rows for t in row.types})
    pairs = zip(runs, per_run, strict=True)
    cases = case_views([_RunCases(r.label, r.pcontext_gold, gs, r.episodes) for r, gs in pairs])
    return PContextTables([r.label for r in runs], types, rows, failure_rows(per_run, rows), cases)


def pcontext_run_data(run: RunDir, judge_mode: str | None, judge: str | None) -> RunData:
    """A P-ContextBench run: its rubric lines (the judge asked for when it has lines, else the one with most)."""
    if not (run.path / SCORES).is_file():
        raise ReportError(f"{run.path}: no {SCORES}; score the run first (hippocamp score {run.path})")
    all_lines = run.scores().items
    note = ""
    try:
        judge_id, mode = choose_judge(all_lines, judge_mode, judge, run.path)
    except ReportError as exc:
        if judge_mode is None and judge is None:
            raise
        judge_id, mode = choose_judge(all_lines, None, None, run.path)
        note = f"{exc}; its P-ContextBench rubric scores ({judge_id}/{mode}) are reported instead"
    lines = [s for s in all_lines if s.judge == judge_id and s.mode == mode]
    episodes = {e.key: e for e in run.episodes().episodes}
    scored_keys = {(s.task_id, s.agent, s.epoch) for s in lines}
    gold = load_gold(run.manifest.model_dump())
    return RunData(
        path=run.path,
        **run.described(),
        judge=judge_id,
        mode=mode,
        lines=lines,
        items=[],
        episodes=episodes,
        gold={},
        summary=summary_of(pcontext_row("", graded(lines, gold))),
        not_scored=sum(k not in scored_keys for k in episodes),
        missing_gold=sorted({k[0] for k in episodes if gold.cases and k[0] not in gold.cases}),
        benchmark=run.benchmark_name,
        pcontext_gold=gold,
        saved_summary=saved_summary(run.path),
        judge_note=note,
    )
