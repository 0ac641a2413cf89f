"""P-ContextBench's Pass-2 details of one run, as plain data: which grader produced its numbers and the
share of episodes a judge model decided (`Grader`), the citation statuses (`Citations`), and the T5
sub-scores (`T5Parts`: the mean of each part, how often each penalty applied, and the expected × chosen
boundary counts).

Like the rest of `hippocamp.report.pcontext`, everything is computed from the run's score lines (the
``grade`` of each `PContextScoreLine`, read into `Graded`); unscored episodes are left out of every count
and denominator.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, get_args

from hippocamp.schema.pcontext import BOUNDARIES
from hippocamp.scoring.pcontext.guard import CitationStatus, T5Weights
from hippocamp.scoring.pcontext.judge import GUARD_ID

if TYPE_CHECKING:
    from hippocamp.report.pcontext import Graded

__all__ = [
    "CITATIONS",
    "NO_BOUNDARY",
    "T5_PARTS",
    "T5_PENALTIES",
    "Citations",
    "Grader",
    "Pass2Stats",
    "T5Parts",
    "grader_name",
    "pass2_stats",
]

#: the judge id of the lexical rubric that came before the guard (``pcontext-rubric[+<model ids>]``; the guard's
#: is ``GUARD_ID[+<model ids>]``)
RUBRIC_ID = "pcontext-rubric"
#: ``decided_by`` values of an episode a judge model settled (the guard's, and the older rubric's)
JUDGE_DECIDED = ("guard+judge", "rubric+judge")
#: the citation statuses (`hippocamp.scoring.pcontext.guard.citation_status`), in order
CITATIONS: tuple[str, ...] = get_args(CitationStatus)
_WEIGHTS = T5Weights()


def _points(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


#: the T5 parts: key, name and points (`T5Weights`' defaults)
T5_PARTS = (("constraint", "constraint recognition", _points(_WEIGHTS.constraint)),
            ("boundary", "action boundary", _points(_WEIGHTS.boundary)),
            ("evidence", "evidence grounding", _points(_WEIGHTS.evidence)))  # fmt: skip
#: the T5 penalties (``-<name>`` in a grade's parts, present only when applied) and their default points
_PENALTY_NAMES = ("blind_compliance", "unsafe_action", "unnecessary_refusal", "missing_clarification")
T5_PENALTIES = {name: _points(getattr(_WEIGHTS, name)) for name in _PENALTY_NAMES}
#: what the boundary table shows for an answer that took no boundary
NO_BOUNDARY = "none"


def _models(judge: str, prefix: str) -> str:
    return judge[len(prefix) + 1 :].replace(",", ", ") if judge.startswith(prefix + "+") else ""


def grader_name(judge: str) -> str:
    """What graded a run, from its judge id: "guard alone", "guard + judge model <ids>", or the lexical
    rubric of runs scored before the guard layer; another id is given as it is."""
    if judge == GUARD_ID:
        return "guard alone"
    if models := _models(judge, GUARD_ID):
        return f"guard + judge model {models}"
    if judge == RUBRIC_ID:
        return "lexical rubric (before the guard layer)"
    if models := _models(judge, RUBRIC_ID):
        return f"lexical rubric (before the guard layer) + judge model {models}"
    return judge or "unknown"


def _share(count: int, total: int) -> float | None:
    return count / total if total else None


@dataclass
class Grader:
    """Which grader produced a run's numbers; ``judge_decided`` of its ``n`` scored episodes were settled
    by a judge model (what the guard could not decide)."""

    judge: str
    name: str
    n: int
    judge_decided: int

    @property
    def with_model(self) -> bool:
        return "+" in self.judge

    @property
    def share(self) -> float | None:
        return _share(self.judge_decided, self.n)


@dataclass
class Citations:
    """How many scored episodes' citations were ok, missing, wrong or indiscriminate (``n``: those with a
    citation status; grades before the guard layer have none)."""

    counts: dict[str, int]
    n: int

    def share(self, status: str) -> float | None:
        return _share(self.counts.get(status, 0), self.n)


@dataclass
class T5Parts:
    """A run's T5 sub-scores over its ``n`` scored T5 episodes with parts: the mean of each part (out of its
    points in `T5_PARTS`), how many episodes each penalty applied to, and the (expected, chosen) boundary
    counts over the ``boundary_n`` episodes with an expected boundary (chosen `NO_BOUNDARY` for none)."""

    n: int
    means: dict[str, float | None]
    penalties: dict[str, int]
    boundaries: dict[tuple[str, str], int] = field(default_factory=dict)
    boundary_n: int = 0

    def share(self, penalty: str) -> float | None:
        return _share(self.penalties.get(penalty, 0), self.n)

    @property
    def expected(self) -> list[str]:
        return _boundary_order({e for e, _ in self.boundaries})

    @property
    def chosen(self) -> list[str]:
        return _boundary_order({c for _, c in self.boundaries})

    def count(self, expected: str, chosen: str) -> int:
        return self.boundaries.get((expected, chosen), 0)


def _boundary_order(seen: set[str]) -> list[str]:
    known = [*BOUNDARIES, NO_BOUNDARY]
    return [b for b in known if b in seen] + sorted(seen - set(known))


@dataclass
class Pass2Stats:
    """One run's grader, citations and (when it has scored T5 episodes) T5 sub-scores."""

    grader: Grader
    citations: Citations
    t5: T5Parts | None


def t5_parts(gs: Sequence[Graded]) -> T5Parts | None:
    """The T5 sub-scores of the scored T5 episodes among ``gs``; None when there are none."""
    scored = [g for g in gs if g.type == "T5" and g.correct is not None]
    if not scored:
        return None
    with_parts = [g for g in scored if g.parts]
    means = {}
    for key, _, _ in T5_PARTS:
        values = [float(g.parts[key]) for g in with_parts if key in g.parts]
        means[key] = sum(values) / len(values) if values else None
    applied = Counter(k[1:] for g in with_parts for k in g.parts if k.startswith("-"))
    penalties = {p: applied.get(p, 0) for p in T5_PENALTIES} | {p: applied[p] for p in sorted(applied)}
    expected = [g for g in scored if g.expected_boundary]
    counts = Counter((str(g.expected_boundary), g.boundary or NO_BOUNDARY) for g in expected)
    return T5Parts(len(with_parts), means, penalties, dict(counts), len(expected))


def pass2_stats(gs: Sequence[Graded], judge: str) -> Pass2Stats:
    """The grader (from the run's ``judge`` id), citations and T5 sub-scores of one run's episodes."""
    scored = [g for g in gs if g.correct is not None]
    decided = sum(g.decided_by in JUDGE_DECIDED for g in scored)
    statuses = [g.citations for g in scored if g.citations]
    counts = Counter(statuses)
    citations = Citations({c: counts.get(c, 0) for c in CITATIONS} | dict(counts), len(statuses))
    return Pass2Stats(Grader(judge, grader_name(judge), len(scored), decided), citations, t5_parts(gs))
