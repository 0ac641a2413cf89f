"""P-ContextBench's shared pieces: the `Grade` record, date and polarity reading of keys
(`relative_days`, `polarity`), the ids an answer cites (`cited_ids`) and its tools showed it
(`seen_ids`), the store's own evidence recall (`retrieval_recall`) and the run summary (`summarize`:
accuracy per type, worst run, pass^k, failures, the Wilcoxon test). Grading itself is the guard layer
(`hippocamp.scoring.pcontext.guard`) and the Pass-2 judge (`hippocamp.scoring.pcontext.judge`).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hippocamp.text.timeref import WEEKDAYS, week_of, weekday_after, weekday_before

if TYPE_CHECKING:
    from hippocamp.text.facts import Facts

__all__ = ["Grade", "cited_ids", "fragment_recall", "polarity", "relative_days", "retrieval_recall", "seen_ids",
           "summarize"]  # fmt: skip


def _same_day(want: tuple[int | None, ...], got: tuple[int | None, ...]) -> bool:
    """Whether ``got`` (year, month, day) states the day ``want`` names; an unknown year on either side
    matches, a missing month or day in ``got`` does not."""
    (wy, wm, wd), (gy, gm, gd) = want, got
    return (wy is None or gy is None or wy == gy) and wm == gm and (wd is None or wd == gd)


_POLARITY = re.compile(
    r"^\W*(?:(?:most |very )?(?:likely|probably|possibly|perhaps)\W+)?(yes|no)(?=\s*(?:$|[,;.:!]))", re.I
)
_COUNT = {"one": 1, "two": 2, "three": 3, "four": 4}
_RELATIVE_DAY = re.compile(r"^\W*(?:the\s+)?(?:(?P<n>one|two|three|four|\d)\s+)?(?P<unit>" + "|".join(WEEKDAYS)
                           + r"|weekend|week)s?\s+(?P<rel>before|after|of)\s+(?P<anchor>.+?)\W*$", re.I)  # fmt: skip


@lru_cache(maxsize=4096)
def _facts(text: str) -> Facts:
    """`extract_facts`, once per text: the guard reads an answer's facts for each key item."""
    from hippocamp.text.facts import extract_facts

    return extract_facts(text)


def _answer_facts(answer: str) -> Facts:
    """An answer's facts with its brackets opened (`extract_facts` skips "[...]" as a file reference, and
    agents write dates there: "[yesterday = Sun 2023-05-07]")."""
    return _facts(re.sub(r"[\[\]]", " ", answer))


def polarity(text: str) -> str | None:
    """'yes' or 'no' when the text opens with one ("Likely no; ...", "Yes, she is"), else None."""
    m = _POLARITY.match(text)
    return m.group(1).lower() if m else None


def relative_days(label: str) -> tuple[date, date] | None:
    """The days a relative date label names (LoCoMo's temporal gold: "The Friday before 15 July 2023",
    "the week before 9 June 2023", "two weekends before 17 July 2023", "the week of 23 August 2023"),
    as a first and last day, or None for any other label. "The week before D" is the calendar week
    before D's and the seven days before D (people mean either)."""
    m = _RELATIVE_DAY.match(label)
    if not m:
        return None
    days = [r for d in _facts(m["anchor"]).dates for r in d.readings if None not in r]
    if len(days) != 1:
        return None
    anchor = date(*days[0])  # type: ignore[arg-type]
    count = (m["n"] or "1").lower()
    n = int(count) if count.isdigit() else _COUNT[count]
    unit, before = m["unit"].lower(), m["rel"].lower() == "before"
    week, (monday, sunday) = timedelta(weeks=1), week_of(anchor)
    if unit == "week":
        if m["rel"].lower() == "of":
            return monday, sunday
        if before:
            return monday - n * week, anchor - (n - 1) * week - timedelta(days=1)
        return anchor + (n - 1) * week + timedelta(days=1), sunday + n * week
    if m["rel"].lower() == "of":
        return None
    target = 6 if unit == "weekend" else WEEKDAYS.index(unit)  # a weekend is found by its Sunday
    if before:
        day = weekday_before(anchor, target) - (n - 1) * week
    else:
        day = weekday_after(anchor, target) + (n - 1) * week
        if unit == "weekend" and day - timedelta(days=1) <= anchor:  # its Saturday must be after the anchor
            day += week
    return (day - timedelta(days=1), day) if unit == "weekend" else (day, day)


def _days_said(answer: str) -> list[date]:
    out = []
    for d in _answer_facts(answer).dates:
        for y, mo, dd in d.readings:
            if y is not None and mo is not None and dd is not None:
                try:
                    out.append(date(y, mo, dd))
                except ValueError:
                    continue
    return out


@dataclass
class Grade:
    type: str
    verdict: str  # correct / partial / incorrect, or VERIFIED / FLAGGED / FAILED for T5
    correct: bool
    covered: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    cited_support: list[str] = field(default_factory=list)
    evidence_recall: float | None = None
    score: float | None = None  # T5: normalized 0–1
    parts: dict[str, float] = field(default_factory=dict)
    #: items the judge model found stated in other words (the lexical rubric missed them)
    judged: list[str] = field(default_factory=list)
    #: T1–T4 and abstention: the answer itself is right (labels and key items), cited evidence aside (the
    #: answer accuracy LoCoMo reports); None for T5
    answer_ok: bool | None = None
    #: share of supporting fragments the agent's own tools showed it
    seen_recall: float | None = None
    #: the citations: ok, missing, wrong or indiscriminate (`guard.citation_status`)
    citations: str | None = None
    #: T5: the boundary the answer took, and the one the key expects
    boundary: str | None = None
    expected_boundary: str | None = None
    #: who decided: "guard" alone, or "guard+judge" when a judge model settled what the guard could not
    decided_by: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, [], {})}


def cited_ids(answer: Any, known: set[str]) -> set[str]:
    """Message/event ids an answer cites: evidence locators' ids, and known ids written in its text."""
    out: set[str] = set()
    for ev in getattr(answer, "evidence", None) or []:
        loc = ev.locator if not isinstance(ev, dict) else ev.get("locator")
        pos = loc.get("position") if isinstance(loc, dict) else None
        if isinstance(pos, dict):
            out.update(str(pos[k]) for k in ("id", "message_id") if pos.get(k))
        elif isinstance(pos, str):
            out.add(pos)
        text = ev.text if not isinstance(ev, dict) else ev.get("text")
        out.update(t for t in re.findall(r"[\w:.-]+", str(text or "")) if t in known)
    out.update(t for t in re.findall(r"[\w:.-]+", str(getattr(answer, "text", "") or "")) if t.strip(".") in known)
    return {t.strip(".") for t in out}


_SHOWN = re.compile(r"\b(?:message|event) ([\w:.-]+) ·")


def seen_ids(answer: Any) -> list[str]:
    """Message/event ids the agent's tools showed it, in order of first appearance (its retrieval)."""
    out: dict[str, None] = {}
    for step in getattr(answer, "trace", None) or []:
        if step.kind == "tool" and step.observation:
            out.update((m.group(1).rstrip("."), None) for m in _SHOWN.finditer(step.observation))
    return list(out)


def fragment_recall(case: dict[str, Any], items: list[str], fragment_of: dict[str, str]) -> float | None:
    """Share of a case's supporting fragments that ``items`` (message/event ids) reach; None without support."""
    support = {str(x) for x in case.get("supporting_fragments") or []}
    if not support:
        return None
    reached = {fragment_of.get(i, i) for i in items}
    return len(support & reached) / len(support)


def retrieval_recall(
    store_path: Path, cases: dict[str, dict[str, Any]], persona_of: dict[str, str],
    fragment_of: dict[str, dict[str, str]], k: int = 10, mode: str = "hybrid",
) -> dict[str, Any]:  # fmt: skip
    """Evidence recall@k of the store's own retrieval (the case's question as the query, search confined to
    its persona), independent of any agent: does retrieval find the supporting messages and events?"""
    from hippocamp.store import Store
    from hippocamp.store.search import Searcher, SearchFilters

    store = Store(store_path)
    try:
        searcher = Searcher(store)
        per: dict[str, float] = {}
        for tid, case in cases.items():
            if not case.get("supporting_fragments"):
                continue
            hits = searcher.search(str(case["question"]), k=k, mode=mode,  # type: ignore[arg-type]
                                   filters=SearchFilters(glob=f"{persona_of[tid]}/*"))  # fmt: skip
            ids = [str(h.meta.get("message_id") or h.meta.get("event_id") or "") for h in hits]
            value = fragment_recall(case, ids, fragment_of[tid])
            if value is not None:
                per[tid] = value
        used = searcher.mode_used or mode
    finally:
        store.close()
    by_type: dict[str, list[float]] = defaultdict(list)
    for tid, v in per.items():
        by_type[str(cases[tid]["type"])].append(v)
    return {"k": k, "mode": used, "cases": len(per), "recall": sum(per.values()) / len(per) if per else None,
            "by_type": {t: sum(v) / len(v) for t, v in sorted(by_type.items())}, "per_case": per}  # fmt: skip


def _share(values: list[bool]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(grades: dict[tuple[str, int], Grade], persona_of: dict[str, str]) -> dict[str, Any]:
    """Accuracy per type, worst run, pass^k (k = the number of runs, 3 in the paper), failure counts, and
    the one-sided Wilcoxon test of per-persona T1–T2 vs T3–T5 accuracy."""
    from hippocamp.scoring.stats import pass_hat_k, wilcoxon

    by_type: dict[str, list[Grade]] = defaultdict(list)
    for (_, _), g in grades.items():
        by_type[g.type].append(g)
    epochs = sorted({e for _, e in grades})
    out: dict[str, Any] = {"episodes": len(grades), "runs": len(epochs), "by_type": {}}
    for ctype, gs in sorted(by_type.items()):
        per_run = [[g.correct for (t, e), g in grades.items() if e == ep and g.type == ctype] for ep in epochs]
        outcomes: dict[str, list[bool]] = defaultdict(list)
        for (t, _), g in grades.items():
            if g.type == ctype:
                outcomes[t].append(g.correct)
        k = min(len(v) for v in outcomes.values())
        out["by_type"][ctype] = {
            "n": len(gs), "accuracy": sum(g.correct for g in gs) / len(gs),
            "partial": sum(g.verdict in ("partial", "FLAGGED") for g in gs) / len(gs),
            "worst_run": min(sum(r) / len(r) for r in per_run if r), f"pass^{k}": pass_hat_k(outcomes, k).value,
            "answer_accuracy": _share([g.answer_ok for g in gs if g.answer_ok is not None]),
            "verdicts": dict(Counter(g.verdict for g in gs)),
        }  # fmt: skip
    everything = list(grades.values())
    out["accuracy"] = sum(g.correct for g in everything) / len(everything) if everything else None
    out["answer_accuracy"] = _share([g.answer_ok for g in everything if g.answer_ok is not None])
    out["failures"] = dict(Counter(f"{g.type}:{f}" for g in everything for f in g.failures))
    recalls = [g.evidence_recall for g in everything if g.evidence_recall is not None]
    out["evidence_recall"] = sum(recalls) / len(recalls) if recalls else None
    seen = [g.seen_recall for g in everything if g.seen_recall is not None]
    out["seen_recall"] = sum(seen) / len(seen) if seen else None
    out["judged_items"] = sum(len(g.judged) for g in everything)
    out["decided_by_judge"] = sum(g.decided_by == "guard+judge" for g in everything)
    out["citations"] = dict(Counter(g.citations for g in everything if g.citations))
    t5 = [g for g in everything if g.type == "T5" and g.parts]
    if t5:
        out["t5"] = {
            "n": len(t5), "mean_score": sum(g.score or 0.0 for g in t5) / len(t5),
            "parts": {p: sum(g.parts.get(p, 0.0) for g in t5) / len(t5)
                      for p in ("constraint", "boundary", "evidence")},
            "penalties": dict(Counter(k[1:] for g in t5 for k in g.parts if k.startswith("-"))),
            "boundaries": dict(Counter(f"{g.expected_boundary}->{g.boundary or 'none'}" for g in t5)),
        }  # fmt: skip
    low: dict[str, list[bool]] = defaultdict(list)
    high: dict[str, list[bool]] = defaultdict(list)
    for (t, _), g in grades.items():
        (low if g.type in ("T1", "T2") else high if g.type in ("T3", "T4", "T5") else {}).setdefault(
            persona_of.get(t, ""), []
        ).append(g.correct)  # fmt: skip
    both = sorted(set(low) & set(high))
    if len(both) >= 2:
        x = [sum(low[p]) / len(low[p]) for p in both]
        y = [sum(high[p]) / len(high[p]) for p in both]
        try:
            res = wilcoxon(x, y, alternative="greater")
            out["wilcoxon_t12_gt_t35"] = {"personas": len(both), "statistic": res.statistic, "pvalue": res.pvalue}
        except ValueError as exc:
            out["wilcoxon_t12_gt_t35"] = {"personas": len(both), "error": str(exc)}
    return out
