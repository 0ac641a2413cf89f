"""Stage 2c: the four-perspective audit of a persona's facts, with repair.

Rules (every fact of the template bank states its demographic conditions and the tags it
contradicts, each contradiction under one perspective): demographic plausibility (age, household,
work status, occupation group, income band), behavioral consistency, psychological coherence and
political consistency (contradicting tags of two facts). A repair replaces the later fact of a
contradiction by a fitting fact of the same category, or removes it when none fits. A model's audit
adds its own findings (`pipeline.py`); the same rules then run over its repaired facts.
"""

from __future__ import annotations

import random

from hippocamp.pcontext.banks import FactSpec, Perspective, fact_bank
from hippocamp.pcontext.facts import fact_from_spec, spec_of
from hippocamp.pcontext.seeds import marginals
from hippocamp.schema.pcontext import AuditFinding, AuditReport, Fact, Seed

__all__ = ["audit_and_repair", "ensure_changeable", "find_problems", "working"]


def working(seed: Seed) -> bool:
    return seed.occupation_group not in ("not in labor force", "unemployed", "")


def _income_index(seed: Seed) -> int:
    bands = list(marginals()["income_band"])
    return bands.index(seed.income_band) if seed.income_band in bands else 0


def _lives(household: str, word: str) -> bool:
    """Whether a household (``married, no children at home``) has ``word`` in it, not negated."""
    return word in household and f"no {word}" not in household


def demographic_issue(spec: FactSpec, seed: Seed) -> str | None:
    """Why ``spec`` does not fit the seed, or None."""
    w = spec.when
    if w.min_age is not None and seed.age < w.min_age:
        return f"age {seed.age} is below {w.min_age}"
    if w.max_age is not None and seed.age > w.max_age:
        return f"age {seed.age} is above {w.max_age}"
    if w.household is not None and not any(_lives(seed.household, h) for h in w.household):
        return f"household {seed.household!r} does not fit"
    if w.working and not working(seed):
        return f"not working ({seed.occupation})"
    if w.status is not None and seed.occupation not in w.status:
        return f"work status is {seed.occupation!r}"
    if w.groups is not None and not any(g.lower() in seed.occupation_group.lower() for g in w.groups):
        return f"occupation group {seed.occupation_group!r} does not fit"
    if w.education is not None and not any(e in seed.education for e in w.education):
        return f"education {seed.education!r} does not fit"
    if w.max_income is not None and _income_index(seed) > w.max_income:
        return f"income {seed.income_band} is too high"
    if w.min_income is not None and _income_index(seed) < w.min_income:
        return f"income {seed.income_band} is too low"
    return None


def _conflict(a: Fact, b: Fact) -> Perspective | None:
    for x, y in ((a, b), (b, a)):
        spec = spec_of(x)
        if spec is None:
            continue
        for tag, perspective in spec.conflicts.items():
            if tag in y.tags:
                return perspective
    return None


def _problem_at(seed: Seed, facts: list[Fact], i: int) -> AuditFinding | None:
    """The first problem of ``facts[i]``: a demographic misfit, or a duplicate of / contradiction with
    an earlier fact."""
    fact = facts[i]
    spec = spec_of(fact)
    if spec is not None and (why := demographic_issue(spec, seed)):
        return AuditFinding(perspective="demographic", fact_ids=[fact.id], issue=f"{fact.label!r}: {why}")
    label = fact.label.lower()
    for other in facts[:i]:
        if other.label.lower() == label:
            return AuditFinding(
                perspective="behavioral", fact_ids=[other.id, fact.id], issue=f"duplicate {fact.label!r}"
            )
        if perspective := _conflict(other, fact):
            issue = f"{other.label!r} contradicts {fact.label!r}"
            return AuditFinding(perspective=perspective, fact_ids=[other.id, fact.id], issue=issue)
    return None


def _fits(seed: Seed, facts: list[Fact], i: int) -> bool:
    """Whether ``facts[i]`` fits the seed and neither repeats nor contradicts any other fact."""
    fact = facts[i]
    spec = spec_of(fact)
    if spec is not None and demographic_issue(spec, seed):
        return False
    label = fact.label.lower()
    return not any(j != i and (other.label.lower() == label or _conflict(other, fact)) for j, other in enumerate(facts))


def find_problems(seed: Seed, facts: list[Fact]) -> list[tuple[AuditFinding, int]]:
    """Findings with the index of the fact to repair (the later one of a pair)."""
    return [(finding, i) for i in range(len(facts)) if (finding := _problem_at(seed, facts, i)) is not None]


def audit_and_repair(seed: Seed, facts: list[Fact], rng: random.Random) -> tuple[list[Fact], AuditReport]:
    """Find contradictions and repair them, earliest first, until none is left. A fact at fault is
    replaced by a fitting unused fact of its category, else of the least-filled category that has one
    (the inventory keeps its size), else removed."""
    facts = list(facts)
    findings: list[AuditFinding] = []
    repaired = 0
    used = {spec.key for f in facts if (spec := spec_of(f)) is not None}
    i = 0
    while i < len(facts):
        finding = _problem_at(seed, facts, i)
        if finding is None:
            i += 1
            continue
        bad = facts[i]
        filled: dict[str, int] = {}
        for f in facts:
            filled[f.category] = filled.get(f.category, 0) + 1
        same = [s for s in fact_bank().facts if s.category == bad.category and s.key not in used]
        other = [s for s in fact_bank().facts if s.category != bad.category and s.key not in used]
        rng.shuffle(same)
        rng.shuffle(other)
        other.sort(key=lambda s: filled.get(s.category, 0))
        replacement = None
        for spec in [*same, *other]:
            trial = [*facts[:i], fact_from_spec(spec, bad.id), *facts[i + 1 :]]
            if _problem_at(seed, trial, i) is None:
                replacement = trial[i]
                used.add(spec.key)
                break
        if replacement is not None:
            facts[i] = replacement
            finding = finding.model_copy(update={"repair": f"replaced {bad.id} by {replacement.label!r}"})
            i += 1
        else:
            facts.pop(i)
            finding = finding.model_copy(update={"repair": f"removed {bad.id}; no fitting fact left in the bank"})
        findings.append(finding)
        repaired += 1
    remaining = len(find_problems(seed, facts))
    return facts, AuditReport(findings=findings, repaired=repaired, remaining=remaining, auditor="rules")


def _changeable(fact: Fact) -> bool:
    return (spec := spec_of(fact)) is not None and spec.then is not None


def ensure_changeable(seed: Seed, facts: list[Fact], rng: random.Random, want: int = 1) -> list[Fact]:
    """Facts of at least ``want`` categories that can change during the window (for T3; a T3 question
    asks about a category), swapping some in while too few can: a changeable fact of a new category
    replaces an unchangeable fact of that category, if the audit still finds nothing."""
    changing = {f.category for f in facts if _changeable(f)}
    if len(changing) >= want:
        return facts
    facts = list(facts)
    used = {spec.key for f in facts if (spec := spec_of(f)) is not None}
    options = [s for s in fact_bank().facts if s.then is not None and s.key not in used]
    rng.shuffle(options)
    for spec in options:
        if len(changing) >= want:
            break
        if spec.category in changing:
            continue
        slots = [i for i, f in enumerate(facts) if f.category == spec.category and not _changeable(f)]
        rng.shuffle(slots)
        for i in slots:
            trial = [*facts[:i], fact_from_spec(spec, facts[i].id), *facts[i + 1 :]]
            if _fits(seed, trial, i):
                facts = trial
                changing.add(spec.category)
                break
    return facts
