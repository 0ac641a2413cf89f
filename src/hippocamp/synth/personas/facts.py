"""Stages 2b and 2c: the hidden-fact inventory (18 categories), with prior/current states for facts that
change, and its four-perspective audit with repair.

Templates: facts are sampled from the fact bank (`banks.fact_bank`) per category, deliberately *without*
looking at the seed or at other facts: the audit must find and repair what does not fit. A model
distills facts from the interview instead (`model_facts`), proposes changes (dated by `model_changes`)
and audits them (`model_audit`).

The audit's rules (every fact of the template bank states its demographic conditions and the tags it
contradicts, each contradiction under one perspective): demographic plausibility (age, household,
work status, occupation group, income band), behavioral consistency, psychological coherence and
political consistency (contradicting tags of two facts). A repair replaces the later fact of a
contradiction by a fitting fact of the same category, or removes it when none fits. A model's audit
adds its own findings; the same rules then run over its repaired facts.
"""

from __future__ import annotations

import asyncio
import json
import random
from datetime import date, timedelta
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, Field

from hippocamp.schema.pcontext import CATEGORIES, AuditFinding, AuditReport, Fact, InterviewTurn, Seed
from hippocamp.synth.personas.banks import SEED_SLOTS, TOPIC_OF, FactSpec, Perspective, fact_bank
from hippocamp.synth.personas.model import ModelStageError, ask
from hippocamp.synth.personas.seeds import marginals, working
from hippocamp.synth.personas.verify import normalize

__all__ = [
    "DEFAULT_CHANGES",
    "DEFAULT_FACTS",
    "FactDrawer",
    "apply_changes",
    "audit_and_repair",
    "bank",
    "choose_slots",
    "ensure_changeable",
    "fact_from_spec",
    "find_problems",
    "model_audit",
    "model_changes",
    "model_facts",
    "sample_facts",
    "seed_matches",
    "spec_of",
    "weight",
]

#: the paper's instance: 10,088 hidden facts over 100 personas, about 7 of them changing (663 T3 cases)
DEFAULT_FACTS = 100
DEFAULT_CHANGES = 7


@cache
def bank() -> dict[str, FactSpec]:
    """Every spec by key, current states (``then``) included, their parameters unset."""
    out: dict[str, FactSpec] = {}
    for spec in fact_bank().facts:
        out[spec.key] = spec
        if spec.then is not None:
            out[spec.then.key] = spec.then
    return out


@cache
def _filled(key: str, values: str) -> FactSpec:
    return bank()[key].filled(json.loads(values))


def spec_of(fact: Fact) -> FactSpec | None:
    """The bank spec a template fact came from (its ``bank:<key>`` tag) with the fact's parameters set,
    None for model facts."""
    for tag in fact.tags:
        if tag.startswith("bank:"):
            key = tag[5:]
            if key not in bank():
                return None
            return _filled(key, json.dumps(fact.slots, sort_keys=True)) if fact.slots else bank()[key]
    return None


@cache
def _seed_slots_used(key: str) -> tuple[str, ...]:
    spec = bank()[key]
    texts = [t for _, t in spec.texts()] + ([t for _, t in spec.then.texts()] if spec.then else [])
    return tuple(n for n in SEED_SLOTS if any(f"{{@{n}}}" in t for t in texts))


def choose_slots(spec: FactSpec, rng: random.Random | None, seed: Seed | None = None) -> dict[str, Any]:
    """One choice per parameter of ``spec`` (the first choice without ``rng``), and the seed's city and
    state where its texts name them."""
    values: dict[str, Any] = {}
    for name, choices in spec.slots.items():
        choice = rng.choice(choices) if rng is not None else choices[0]
        values[name] = choice if isinstance(choice, str) else list(choice)
    for name in _seed_slots_used(spec.key) if spec.key in bank() else ():
        where = "" if seed is None else (seed.city or seed.state) if name == "city" else seed.state
        values[name] = where or ("town" if name == "city" else "the state")
    return values


def fact_from_spec(spec: FactSpec, fid: str, values: dict[str, Any] | None = None) -> Fact:
    """The fact ``spec`` states with its parameters set to ``values`` (unset: the first choices)."""
    values = choose_slots(spec, None) if values is None else values
    filled = spec.filled(values) if values else spec
    return Fact(
        id=fid,
        category=spec.category,
        label=filled.label,
        synonyms=list(filled.synonyms),
        cues=list(filled.cues),
        value=filled.say,
        tags=[f"bank:{spec.key}", *spec.tags],
        slots=values,
    )


def seed_matches(predicate: str, seed: Seed) -> bool:
    """Whether ``seed`` meets one `FactSpec.likely` predicate."""
    kind, _, arg = predicate.partition(":")
    if kind == "working":
        return working(seed)
    if kind == "not_working":
        return not working(seed)
    if kind == "age":
        lo, hi = (int(x) for x in arg.split("-"))
        return lo <= seed.age <= hi
    field = {
        "group": seed.occupation_group,
        "occupation": seed.occupation,
        "status": seed.occupation,
        "household": seed.household,
        "education": seed.education,
        "region": seed.region,
        "sex": seed.sex,
        "mentions": " ".join([seed.occupation, *seed.hobbies, *seed.goals, seed.narrative]),
    }[kind]
    if kind == "household":
        return _lives(seed.household.lower(), arg)
    if kind in ("sex", "status"):
        return field.lower() == arg
    return arg in field.lower()


#: each `FactSpec.likely` predicate a seed meets multiplies the spec's weight by this
LIKELY_FACTOR = 3.0


def weight(spec: FactSpec, seed: Seed | None) -> float:
    """How likely ``spec`` is for ``seed`` relative to a spec that says nothing about it."""
    if seed is None:
        return 1.0
    return LIKELY_FACTOR ** sum(seed_matches(p, seed) for p in spec.likely)


def _weighted_order(specs: list[FactSpec], rng: random.Random, seed: Seed | None) -> list[FactSpec]:
    """``specs`` in a random order where heavier specs tend to come first (a weighted draw without
    replacement: each spec's key is u ** (1 / weight), largest first)."""
    keyed = [(rng.random() ** (1.0 / weight(s, seed)), i, s) for i, s in enumerate(specs)]
    keyed.sort(key=lambda k: (-k[0], k[1]))
    return [s for _, _, s in keyed]


class FactDrawer:
    """Draws a persona's facts one category at a time (the interview asks, `sample_facts` takes turns).
    With the persona's ``seed`` the draw is weighted by what the seed makes likely (`weight`) and respects
    the constraints as it goes: a fact that does not fit the seed (`demographic_issue`) or contradicts one
    already drawn (the bank's ``conflicts``: one diet family, one childhood, one course of study, ...)
    is passed over; without it the draw is blind and the audit repairs the misfits. Each fact's parameters
    are drawn as it is chosen."""

    def __init__(self, rng: random.Random, seed: Seed | None = None):
        self.rng, self.seed = rng, seed
        self.pools = {
            c: list(reversed(_weighted_order([s for s in fact_bank().facts if s.category == c], rng, seed)))
            for c in CATEGORIES
        }
        self.drawn: list[Fact] = []

    def _fits(self, spec: FactSpec) -> bool:
        if self.seed is None:
            return True
        if demographic_issue(spec, self.seed):
            return False
        candidate = fact_from_spec(spec, "candidate")
        return not any(_conflict(other, candidate) for other in self.drawn)

    def left(self, category: str) -> bool:
        return bool(self.pools[category])

    def draw(self, category: str, fid: str = "drawn") -> Fact | None:
        """The next fitting fact of ``category``, or None when the bank has none left."""
        pool = self.pools[category]
        while pool:
            spec = pool.pop()
            if self._fits(spec):
                fact = fact_from_spec(spec, fid, choose_slots(spec, self.rng, self.seed))
                self.drawn.append(fact)
                return fact
        return None


def sample_facts(
    persona_id: str, rng: random.Random, n: int = DEFAULT_FACTS - DEFAULT_CHANGES, seed: Seed | None = None
) -> list[Fact]:
    """``n`` facts spread evenly over the 18 categories (as many as the bank holds), drawn by a
    `FactDrawer`: categories take turns, in a new random order each round."""
    drawer = FactDrawer(rng, seed)
    chosen: dict[str, list[Fact]] = {c: [] for c in CATEGORIES}
    total = 0
    while total < n and any(drawer.left(c) for c in CATEGORIES):
        order = [c for c in CATEGORIES if drawer.left(c)]
        rng.shuffle(order)
        if total == 0:  # a small inventory still holds a personal rule, for T5
            order.sort(key=lambda c: c != "constraints")
        for category in order[: n - total]:
            fact = drawer.draw(category)
            if fact is not None:
                chosen[category].append(fact)
                total += 1
    out: list[Fact] = []
    for category in CATEGORIES:
        for fact in chosen[category]:
            out.append(fact.model_copy(update={"id": f"{persona_id}-F{len(out) + 1:03d}"}))
    return out


def apply_changes(
    facts: list[Fact],
    persona_id: str,
    start: date,
    days: int,
    rng: random.Random,
    changes: int = DEFAULT_CHANGES,
    seed: Seed | None = None,
) -> list[Fact]:
    """Up to ``changes`` facts that can change (of distinct categories while there are some; never into
    a successor that contradicts another fact or, with the ``seed``, does not fit it) get a successor:
    the prior ends, the current begins, on a day in the middle third of the window. Returns the facts
    with the successors appended."""
    out = [f.model_copy() for f in facts]

    def successor_fits(i: int, then: FactSpec) -> bool:  # "bought a house" beside "lives in a downtown studio"
        if seed is not None and demographic_issue(then, seed):  # newborn twins in a home "with no children"
            return False
        after = fact_from_spec(then, "successor")
        return not any(_conflict(other, after) for j, other in enumerate(out) if j != i)

    candidates = [i for i, f in enumerate(out)
                  if (s := spec_of(f)) is not None and s.then is not None and successor_fits(i, s.then)]  # fmt: skip
    rng.shuffle(candidates)
    # facts with T5 requests change last, so a small inventory keeps a current constraint to ask about
    candidates.sort(key=lambda i: bool((s := spec_of(out[i])) is not None and s.requests))
    first: dict[str, int] = {}  # one change per category first: T3 asks about a category
    for i in candidates:
        first.setdefault(out[i].category, i)
    ranked = [*first.values(), *(i for i in candidates if i not in first.values())]
    chosen = sorted(ranked[:changes])
    n = max((int(f.id.rsplit("-F", 1)[-1]) for f in out), default=0)
    for i in chosen:
        spec = spec_of(out[i])
        if spec is None or spec.then is None:
            continue
        n += 1
        on = start + timedelta(days=rng.randint(days // 3, max(days // 3, 2 * days // 3)))
        values = {**out[i].slots, **choose_slots(spec.then, rng)}
        current = fact_from_spec(spec.then, f"{persona_id}-F{n:03d}", values).model_copy(update={"valid_from": on})
        out[i] = out[i].model_copy(update={"valid_to": on, "prior_of": current.id})
        out.append(current)
    return out


# ------------------------------------------------------------------------------------------------ audit


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
    job = seed.occupation.lower()
    if w.occupation is not None and not any(o.lower() in job for o in w.occupation):
        return f"occupation {seed.occupation!r} does not fit"
    if w.not_occupation is not None and any(o.lower() in job for o in w.not_occupation):
        return f"occupation {seed.occupation!r} rules it out"
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
            trial = [*facts[:i], fact_from_spec(spec, bad.id, choose_slots(spec, rng, seed)), *facts[i + 1 :]]
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


def _changeable(fact: Fact, seed: Seed | None = None) -> bool:
    """Whether ``fact`` can change during the window into a state that fits ``seed``."""
    spec = spec_of(fact)
    if spec is None or spec.then is None:
        return False
    return seed is None or demographic_issue(spec.then, seed) is None


def ensure_changeable(seed: Seed, facts: list[Fact], rng: random.Random, want: int = 1) -> list[Fact]:
    """Facts of at least ``want`` categories that can change during the window (for T3; a T3 question
    asks about a category), swapping some in while too few can: a changeable fact of a new category
    replaces an unchangeable fact of that category (or, when it has none, of the fullest category), if
    the audit still finds nothing."""
    changing = {f.category for f in facts if _changeable(f, seed)}
    if len(changing) >= want:
        return facts
    facts = list(facts)
    used = {spec.key for f in facts if (spec := spec_of(f)) is not None}
    options = [
        s
        for s in fact_bank().facts
        if s.then is not None and s.key not in used and demographic_issue(s.then, seed) is None
    ]
    rng.shuffle(options)
    for spec in options:
        if len(changing) >= want:
            break
        if spec.category in changing:
            continue
        slots = [i for i, f in enumerate(facts) if f.category == spec.category and not _changeable(f, seed)]
        rng.shuffle(slots)
        if not slots:  # none of its category to swap (the constraints left few): the fullest category gives one
            filled: dict[str, int] = {}
            for f in facts:
                filled[f.category] = filled.get(f.category, 0) + 1
            slots = [i for i, f in enumerate(facts) if not _changeable(f, seed) and filled[f.category] >= 3]
            rng.shuffle(slots)
            slots.sort(key=lambda i: -filled[facts[i].category])
        for i in slots:
            trial = [*facts[:i], fact_from_spec(spec, facts[i].id, choose_slots(spec, rng, seed)), *facts[i + 1 :]]
            if _fits(seed, trial, i):
                facts = trial
                changing.add(spec.category)
                break
    return facts


# ------------------------------------------------------------------------------------------ model half


Category = Literal[
    "background", "family", "relationships", "work", "education", "health", "diet", "fitness", "finances",
    "housing", "transportation", "routine", "hobby", "values", "social_views", "goals", "personality", "constraints",
]  # fmt: skip


class _Change(BaseModel):
    label: str = Field(min_length=1)
    synonyms: list[str] = Field(default_factory=list)
    cues: list[str] = Field(min_length=1)


class _Fact(BaseModel):
    category: Category
    label: str = Field(min_length=1)
    synonyms: list[str] = Field(default_factory=list)
    cues: list[str] = Field(min_length=1)
    value: str = ""
    sources: list[str] = Field(default_factory=list)
    changes_to: _Change | None = None


class _Facts(BaseModel):
    facts: list[_Fact]


async def model_facts(
    model: Any, seed: Seed, turns: list[InterviewTurn], want: int = 40
) -> tuple[list[Fact], dict[str, _Change]]:
    """About ``want`` hidden facts from the interview, asked topic by topic (concurrently: each prompt
    holds one topic's turns, so a 4k-context local model can answer), facts outside the topic's
    categories and repeated labels dropped; sources that do not exist become the first turn of the
    topic. Also the changes the model proposed, by prior fact id, for `model_changes` to date. A topic whose
    answer is unusable is left out; fewer than 4 facts in all is an error."""
    topics = list(dict.fromkeys(t.topic for t in turns))
    per_category = max(1, -(-want // len(TOPIC_OF)))

    async def one(topic: str) -> list[_Fact]:
        categories = [c for c, t in TOPIC_OF.items() if t == topic]
        payload = {"seed": seed.model_dump(exclude={"version"}), "topic": topic, "categories": categories,
                   "count": per_category * len(categories),
                   "interview": [t.model_dump() for t in turns if t.topic == topic]}  # fmt: skip
        parsed = await ask(model, "facts", payload, _Facts)
        return [f for f in parsed.facts if f.category in categories]

    answers = await asyncio.gather(*(one(t) for t in topics), return_exceptions=True)
    seen: set[str] = set()
    found: list[_Fact] = []
    for got in answers:
        if isinstance(got, BaseException):
            continue
        for f in got:
            key = normalize(f.label)
            if key not in seen:
                seen.add(key)
                found.append(f)
    if len(found) < 4:
        errors = [a for a in answers if isinstance(a, BaseException)]
        why = f" ({type(errors[0]).__name__}: {str(errors[0])[:160]})" if errors else ""
        raise ModelStageError(f"facts: only {len(found)} usable facts over {len(topics)} topics; need 4{why}")
    ids = {t.id for t in turns}
    first_of = {}
    for t in turns:
        first_of.setdefault(t.topic, t.id)
    out = []
    successors: dict[str, _Change] = {}
    for i, f in enumerate(found, start=1):
        fid = f"{seed.id}-F{i:03d}"
        sources = [s for s in f.sources if s in ids] or [first_of[TOPIC_OF[f.category]]]
        out.append(
            Fact(id=fid, category=f.category, label=f.label, synonyms=f.synonyms, cues=f.cues, value=f.value,
                 sources=sources)
        )  # fmt: skip
        if f.changes_to is not None:
            successors[fid] = f.changes_to
    return out, successors


def model_changes(
    facts: list[Fact], successors: dict[str, Any], pid: str, start: date, days: int, rng: random.Random, n: int
) -> list[Fact]:
    """Date up to ``n`` of the model's proposed changes: the prior ends where the current begins."""
    out = list(facts)
    candidates = [i for i, f in enumerate(out) if f.id in successors]
    nxt = max((int(f.id.rsplit("-F", 1)[-1]) for f in out), default=0)
    for i in sorted(rng.sample(candidates, min(n, len(candidates)))):
        change = successors[out[i].id]
        nxt += 1
        on = start + timedelta(days=rng.randint(days // 3, max(days // 3, 2 * days // 3)))
        current = Fact(
            id=f"{pid}-F{nxt:03d}", category=out[i].category, label=change.label, synonyms=change.synonyms,
            cues=change.cues, sources=out[i].sources, valid_from=on,
        )  # fmt: skip
        out[i] = out[i].model_copy(update={"valid_to": on, "prior_of": current.id})
        out.append(current)
    return out


class _Finding(BaseModel):
    perspective: Perspective
    fact_ids: list[str]
    issue: str
    action: Literal["drop", "relabel", "keep"] = "keep"
    new_label: str = ""


class _Findings(BaseModel):
    findings: list[_Finding]


async def model_audit(model: Any, seed: Seed, facts: list[Fact]) -> tuple[list[Fact], AuditReport]:
    """The model's four-perspective audit, applied (drop or relabel the later fact), then the rules."""
    payload = {
        "seed": seed.model_dump(exclude={"version"}),
        "facts": [f.model_dump(include={"id", "category", "label"}) for f in facts],
    }
    parsed = await ask(model, "audit", payload, _Findings)
    by_id = {f.id: f for f in facts}
    findings = []
    repaired = 0
    for f in parsed.findings:
        known = [x for x in f.fact_ids if x in by_id]
        if not known:
            continue
        target = known[-1]
        repair = ""
        if f.action == "drop":
            by_id.pop(target, None)
            repair = f"removed {target}"
        elif f.action == "relabel" and f.new_label.strip():
            by_id[target] = by_id[target].model_copy(update={"label": f.new_label.strip()})
            repair = f"relabelled {target} as {f.new_label.strip()!r}"
        repaired += bool(repair)
        findings.append(AuditFinding(perspective=f.perspective, fact_ids=known, issue=f.issue, repair=repair))
    kept = [f for f in facts if f.id in by_id]
    kept = [by_id[f.id] for f in kept]
    kept, rules = audit_and_repair(seed, kept, random.Random(0))
    report = AuditReport(
        findings=findings + rules.findings,
        repaired=repaired + rules.repaired,
        remaining=rules.remaining,
        auditor=f"model:{model.id}+rules",
    )
    return kept, report
