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
from typing import Literal, cast

from hippocamp.pcontext.facts import fact_from_spec, spec_of
from hippocamp.pcontext.seeds import marginals
from hippocamp.pcontext.templates.facts import BANK, FactSpec
from hippocamp.schema.pcontext import AuditFinding, AuditReport, Fact, Seed

__all__ = ["audit_and_repair", "ensure_changeable", "find_problems", "working"]

Perspective = Literal["demographic", "behavioral", "psychological", "political"]


def working(seed: Seed) -> bool:
    return seed.occupation_group not in ("not in labor force", "unemployed", "")


def _income_index(seed: Seed) -> int:
    bands = list(marginals()["income_band"])
    return bands.index(seed.income_band) if seed.income_band in bands else 0


def demographic_issue(spec: FactSpec, seed: Seed) -> str | None:
    """Why ``spec`` does not fit the seed, or None."""
    w = spec.when
    if "min_age" in w and seed.age < cast(int, w["min_age"]):
        return f"age {seed.age} is below {w['min_age']}"
    if "max_age" in w and seed.age > cast(int, w["max_age"]):
        return f"age {seed.age} is above {w['max_age']}"
    if "household" in w and not any(h in seed.household for h in cast(tuple[str, ...], w["household"])):
        return f"household {seed.household!r} does not fit"
    if w.get("working") and not working(seed):
        return f"not working ({seed.occupation})"
    if "status" in w and seed.occupation not in cast(tuple[str, ...], w["status"]):
        return f"work status is {seed.occupation!r}"
    if "groups" in w and not any(
        g.lower() in seed.occupation_group.lower() for g in cast(tuple[str, ...], w["groups"])
    ):
        return f"occupation group {seed.occupation_group!r} does not fit"
    if "education" in w and not any(e in seed.education for e in cast(tuple[str, ...], w["education"])):
        return f"education {seed.education!r} does not fit"
    if "max_income" in w and _income_index(seed) > cast(int, w["max_income"]):
        return f"income {seed.income_band} is too high"
    if "min_income" in w and _income_index(seed) < cast(int, w["min_income"]):
        return f"income {seed.income_band} is too low"
    return None


def _conflict(a: Fact, b: Fact) -> Perspective | None:
    for x, y in ((a, b), (b, a)):
        spec = spec_of(x)
        if spec is None:
            continue
        for tag, perspective in spec.conflicts.items():
            if tag in y.tags:
                return cast(Perspective, perspective)
    return None


def find_problems(seed: Seed, facts: list[Fact]) -> list[tuple[AuditFinding, int]]:
    """Findings with the index of the fact to repair (the later one of a pair)."""
    out: list[tuple[AuditFinding, int]] = []
    for i, fact in enumerate(facts):
        spec = spec_of(fact)
        if spec is not None and (why := demographic_issue(spec, seed)):
            out.append((AuditFinding(perspective="demographic", fact_ids=[fact.id], issue=f"{fact.label!r}: {why}"), i))
            continue
        for j in range(i):
            other = facts[j]
            if other.label.lower() == fact.label.lower():
                out.append(
                    (
                        AuditFinding(
                            perspective="behavioral", fact_ids=[other.id, fact.id], issue=f"duplicate {fact.label!r}"
                        ),
                        i,
                    )
                )
                break
            if perspective := _conflict(other, fact):
                issue = f"{other.label!r} contradicts {fact.label!r}"
                out.append((AuditFinding(perspective=perspective, fact_ids=[other.id, fact.id], issue=issue), i))
                break
    return out


def audit_and_repair(seed: Seed, facts: list[Fact], rng: random.Random) -> tuple[list[Fact], AuditReport]:
    """Find contradictions and repair them until none is left (or nothing fits and the fact goes)."""
    facts = list(facts)
    findings: list[AuditFinding] = []
    repaired = 0
    for _ in range(len(facts) + 1):
        problems = find_problems(seed, facts)
        if not problems:
            break
        finding, index = problems[0]
        bad = facts[index]
        used = {spec_of(f).key for f in facts if spec_of(f) is not None}  # type: ignore[union-attr]
        options = [s for s in BANK if s.category == bad.category and s.key not in used]
        rng.shuffle(options)
        replacement = None
        for spec in options:
            trial = [*facts[:index], fact_from_spec(spec, bad.id), *facts[index + 1 :]]
            if not any(i == index for _, i in find_problems(seed, trial)):
                replacement = trial[index]
                break
        if replacement is not None:
            facts[index] = replacement
            finding = finding.model_copy(update={"repair": f"replaced {bad.id} by {replacement.label!r}"})
        else:
            facts.pop(index)
            finding = finding.model_copy(update={"repair": f"removed {bad.id}; no fitting {bad.category} fact"})
        findings.append(finding)
        repaired += 1
    remaining = len(find_problems(seed, facts))
    return facts, AuditReport(findings=findings, repaired=repaired, remaining=remaining, auditor="rules")


def ensure_changeable(seed: Seed, facts: list[Fact], rng: random.Random) -> list[Fact]:
    """Facts with at least one that can change during the window (for T3), swapping one in if none can:
    a changeable fact of some category replaces that category's fact, if the audit still finds nothing."""
    if any((s := spec_of(f)) is not None and s.then is not None for f in facts):
        return facts
    options = [s for s in BANK if s.then is not None]
    rng.shuffle(options)
    for spec in options:
        for i, fact in enumerate(facts):
            if fact.category != spec.category:
                continue
            trial = [*facts[:i], fact_from_spec(spec, fact.id), *facts[i + 1 :]]
            if not find_problems(seed, trial):
                return trial
    return facts
