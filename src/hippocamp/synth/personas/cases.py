"""Stage 5: test cases T1–T5 with answer keys and the fragments that support them.

T1 one fact from one app; T2 two or three facts joined in one question, whose fragments together span
messenger and calendar; T3 a prior and a current state (the stale state is the prior one taken as
current); T4 a higher-level pattern inferred from two to four facts (`banks.Pattern`: the conclusion, the
inference rule, the mechanism kind, and the mechanism tying the persona's facts to the rule); T5 a
first-person request touching one persona constraint, or two requests in one message touching two (the
expected boundary is then the stricter one, `STRICTNESS`). `verify.check_cases` then rejects ungrounded,
unanswerable, duplicate and type-invalid cases; the templates only use a fact where its cited fragments
state every detail of its label (`verify.unstated_details`), so none of theirs is unanswerable.

T1 and T2 ask each fact's own question (`FactSpec.ask`), which no other fact the persona holds at the same
time answers, so the key's one label is the answer; T3 names what changed (`FactSpec.change`). A model
fact (no bank spec) is asked about its category instead.

A model writes T1-T3 cases from the facts and their surviving fragments (`model_recall_cases`: the keys
are built from the facts the case names, the cited fragment ids are left for `verify.check_cases`) and
T4-T5 cases from the facts (`model_cases`); `top_up` then adds template cases of each type the model's
accepted cases leave short. A model case's id ends in ``-m<n>`` (`MODEL_CASE`).
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from typing import Any, Literal

from pydantic import BaseModel, Field

from hippocamp.schema.pcontext import CalendarEvent, Case, Cluster, Fact, Message, Persona
from hippocamp.synth.personas import model as M
from hippocamp.synth.personas.banks import SLOT_NAMES, fact_bank, phrase_bank
from hippocamp.synth.personas.facts import spec_of
from hippocamp.synth.personas.verify import check_cases, find_leaks, stated_text, unstated_details

__all__ = [
    "MODEL_CASE",
    "PER_TYPE",
    "CaseContext",
    "ask",
    "change_topic",
    "model_cases",
    "model_recall_cases",
    "template_cases",
    "top_up",
]

#: cases per type and persona, after the paper's instance (662 T1, 662 T2, 663 T3, 1,360 T4, 1,463 T5 over
#: 100 personas); T3 is also bounded by the facts that change (``SetConfig.changes``)
PER_TYPE = {"T1": 7, "T2": 7, "T3": 7, "T4": 14, "T5": 15}
#: T5 requests that fit the persona (boundary "comply") at most, out of ``PER_TYPE["T5"]``
T5_COMPLY = 3
#: T5 messages that carry two requests touching two constraints, at most, out of ``PER_TYPE["T5"]``
T5_JOINED = 4
#: T5 boundaries from the most to the least permissive: a message touching two constraints expects the
#: stricter of its requests' boundaries (acting with a caveat, asking first, asking for confirmation of a
#: risk, not doing it as asked, not doing it at all)
STRICTNESS = ("comply", "warn", "clarify", "require_confirmation", "suggest_alternative", "refuse")
#: T2 cases that join three facts rather than two, as a share (the rest join two; the paper averages 1.8)
T2_THREE = 0.4


class CaseContext:
    """The facts and the surviving fragments (by fact and app) of one persona."""

    def __init__(self, persona: Persona, facts: list[Fact], clusters: list[Cluster], present: set[str]):
        self.persona = persona
        self.facts = facts
        self.by_id = {f.id: f for f in facts}
        self.name = persona.seed.name.split()[0]
        self.frags: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        self.cluster_of: dict[str, str] = {}
        #: fragment id -> what it states (`verify.stated_text`)
        self.text: dict[str, str] = {}
        for cluster in clusters:
            if cluster.outcome != "verified":
                continue
            for frag in cluster.fragments:
                if frag.id not in present:
                    continue
                self.text[frag.id] = stated_text(frag)
                for fid in frag.fact_ids:
                    self.frags[fid][frag.app].append(frag.id)
                    self.cluster_of[fid] = cluster.id
        successors = {f.prior_of for f in facts if f.prior_of}
        #: facts that hold for the whole window
        self.static = [f for f in facts if f.id in self.frags and not f.prior_of and f.id not in successors]
        self.current = [f for f in facts if f.id in self.frags and not f.prior_of]

    def all_frags(self, fid: str) -> list[str]:
        return sorted(x for ids in self.frags[fid].values() for x in ids)

    def states(self, fact: Fact, frag_ids: list[str] | None = None) -> bool:
        """Whether the fragments ``frag_ids`` (default: all of the fact's) state every detail of the fact's
        label, so that a key naming it is answerable from them (`verify.unstated_details`)."""
        ids = self.all_frags(fact.id) if frag_ids is None else frag_ids
        return not unstated_details(fact.label, "\n".join(self.text.get(x, "") for x in ids))


def _pron(persona: Persona) -> dict[str, str]:
    female = persona.seed.sex == "female"
    return {
        "self": "herself" if female else "himself",
        "obj": "her" if female else "him",
        "poss": "her" if female else "his",
        "subj": "she" if female else "he",
    }


def ask(fact: Fact, persona: Persona) -> str:
    """The question only ``fact`` answers among the persona's facts: its bank spec's question, or for a
    model fact (no spec) a question about its category."""
    name = persona.seed.name.split()[0]
    spec = spec_of(fact)
    if spec is None:
        return f"What can you tell about {fact_bank().category_ask[fact.category].format(name=name)}?"
    return spec.ask.format(name=name, **_pron(persona))


def change_topic(fact: Fact, persona: Persona) -> str:
    """What changes between ``fact`` (a prior state) and its successor: its spec's topic, else its category."""
    name = persona.seed.name.split()[0]
    spec = spec_of(fact)
    if spec is None or not spec.change:
        return fact_bank().category_ask[fact.category].format(name=name)
    return spec.change.format(name=name, **_pron(persona))


def _lower_first(question: str) -> str:
    return question[:1].lower() + question[1:]


def _case(
    ctx: CaseContext, n: int, type_: str, question: str, facts: list[Fact], frags: list[str], answer: str, **key: object
) -> Case:
    return Case(
        id=f"{ctx.persona.id}-{type_}-{n:02d}",
        persona_id=ctx.persona.id,
        type=type_,  # type: ignore[arg-type]
        question=question,
        fact_ids=[f.id for f in facts],
        labels=[f.label for f in facts],
        supporting_fragments=sorted(set(frags)),
        answer=answer,
        **key,  # type: ignore[arg-type]
    )


#: every this-many-th T1 case is asked of the calendar (the rest of the messages), so T1 draws on both
#: apps about as the evidence does (two thirds messages, one third calendar)
T1_CALENDAR_EVERY = 3


def _t1(ctx: CaseContext, rng: random.Random, n: int) -> list[Case]:
    """Up to ``n`` one-fact cases from one app each, over distinct categories; every
    `T1_CALENDAR_EVERY`-th asked of the calendar when a fact left there has fragments in it."""
    options = []
    for f in ctx.static:
        stating = [(app, ids) for app, ids in ctx.frags[f.id].items() if ctx.states(f, ids)]
        if not stating:
            continue
        app, ids = max(stating, key=lambda kv: (len(kv[1]), kv[0] == "messenger"))
        options.append((len(ids) >= 2, f, app, ids))
    rng.shuffle(options)
    options.sort(key=lambda o: not o[0])
    out: list[Case] = []
    seen: set[str] = set()
    limit = min(n, max(1, len(ctx.static) // 2))  # leave facts for T2
    while len(out) < limit:
        want_calendar = len(out) % T1_CALENDAR_EVERY == T1_CALENDAR_EVERY - 1
        fresh = [o for o in options if o[1].category not in seen]  # spread over categories
        if want_calendar:
            on_calendar = [
                o
                for o in fresh
                if ctx.frags[o[1].id].get("calendar") and ctx.states(o[1], ctx.frags[o[1].id]["calendar"])
            ]
            if on_calendar:
                _, f, _, _ = on_calendar[0]
                fresh = [(True, f, "calendar", ctx.frags[f.id]["calendar"])]
        if not fresh:
            break
        _, f, app, ids = fresh[0]
        options = [o for o in options if o[1].id != f.id]
        seen.add(f.category)
        where = "messages" if app == "messenger" else "calendar"
        q = f"Judging only from {ctx.name}'s {where}, {_lower_first(ask(f, ctx.persona))}"
        out.append(_case(ctx, len(out) + 1, "T1", q, [f], ids, f.label))
    return out


def _t2(ctx: CaseContext, rng: random.Random, n: int, avoid: set[str]) -> list[Case]:
    """Up to ``n`` cases, each joining two or three facts (none in ``avoid``, the ids T1 used; `T2_THREE`
    of them three) of distinct categories whose fragments together span messenger and calendar: facts of
    one cluster where it offers them, else facts of two clusters. No fact is asked twice and no category
    more than twice."""
    pool = [f for f in ctx.static if f.id not in avoid and ctx.states(f)]
    rng.shuffle(pool)
    by_cluster: dict[str, list[Fact]] = defaultdict(list)
    for f in pool:
        by_cluster[ctx.cluster_of[f.id]].append(f)
    used: set[str] = set()
    per_category: Counter[str] = Counter()

    def apps(group: list[Fact]) -> set[str]:
        return {app for f in group for app in ctx.frags[f.id]}

    def pick(candidates: list[Fact], size: int) -> list[Fact] | None:
        """``size`` unused facts of distinct, not yet twice-asked categories spanning both apps."""
        free = [f for f in candidates if f.id not in used and per_category[f.category] < 2]
        group: list[Fact] = []
        for f in free:
            if f.category not in {g.category for g in group}:
                group.append(f)
            if len(group) == size:
                if apps(group) == {"messenger", "calendar"}:
                    return group
                group.pop()
        return None

    out: list[Case] = []
    clusters = list(by_cluster.values())
    while len(out) < n:
        size = 3 if rng.random() < T2_THREE else 2
        group = next((g for c in clusters if (g := pick(c, size))), None)  # within one cluster first
        if group is None:
            group = pick(pool, size) or pick(pool, 5 - size)
        if group is None:
            break
        used.update(f.id for f in group)
        per_category.update(f.category for f in group)
        asks = " ".join(f"({i}) {_lower_first(ask(f, ctx.persona))}" for i, f in enumerate(group, start=1))
        q = f"Putting {ctx.name}'s messages and calendar together, answer {_COUNT[len(group)]} questions: {asks}"
        frags = [x for f in group for x in ctx.all_frags(f.id)]
        out.append(_case(ctx, len(out) + 1, "T2", q, group, frags, "; ".join(f.label for f in group)))
    return out


#: how a T2 question counts the questions it joins
_COUNT = {2: "both", 3: "all three"}


def _t3(ctx: CaseContext, n: int) -> list[Case]:
    out: list[Case] = []
    asked: set[str] = set()
    for prior in ctx.facts:
        if not prior.prior_of or prior.id not in ctx.frags or prior.prior_of not in ctx.frags:
            continue
        current = ctx.by_id[prior.prior_of]
        if not (ctx.states(prior) and ctx.states(current)):
            continue  # a state whose details its fragments never give cannot be asked about
        topic = change_topic(prior, ctx.persona)  # a model fact's topic is its category: one change per category
        if topic in asked:
            continue
        asked.add(topic)
        q = f"Over the period of {ctx.name}'s logs, what changed about {topic}? "
        q += "Give the earlier state and the state now."
        frags = ctx.all_frags(prior.id) + ctx.all_frags(current.id)
        answer = f"before {current.valid_from}: {prior.label}; since then: {current.label}"
        out.append(
            _case(
                ctx,
                len(out) + 1,
                "T3",
                q,
                [prior, current],
                frags,
                answer,
                prior_state=prior.label,
                current_state=current.label,
                stale_state=prior.label,
                changed_on=current.valid_from,
            )
        )
    return out[:n]


def _t4(ctx: CaseContext, rng: random.Random, n: int) -> list[Case]:
    """Up to ``n`` cases, one per pattern the persona's current facts fill (patterns of more slots first,
    so that inferences resting on three or more facts come first; each slot takes the matching fact the
    persona's T4 cases have used least). The key is the conclusion, the inference rule and the mechanism
    tying the facts to it."""
    facts = [f for f in ctx.current if ctx.states(f)]
    pron = _pron(ctx.persona)
    patterns = list(phrase_bank().patterns)
    rng.shuffle(patterns)
    patterns.sort(key=lambda p: -len(p.slots))
    uses: Counter[str] = Counter()
    out: list[Case] = []
    for pattern in patterns:
        if len(out) == n:
            break
        chosen: list[Fact] = []
        for slot in range(len(pattern.slots)):
            options = [f for f in facts if f not in chosen and pattern.matches(slot, f.category, f.tags)]
            if not options:
                break
            rng.shuffle(options)
            chosen.append(min(options, key=lambda f: uses[f.id]))
        if len(chosen) < len(pattern.slots):
            continue
        uses.update(f.id for f in chosen)
        fmt = {"name": ctx.name, **pron, **{k: _predicate(f.label) for k, f in zip(SLOT_NAMES, chosen, strict=False)}}
        conclusion = _upper_first(pattern.conclusion.format(**fmt))
        rule = _upper_first(pattern.rule.format(**fmt))
        mechanism = _upper_first(pattern.why.format(**fmt))
        frags = [x for f in chosen for x in ctx.all_frags(f.id)]
        out.append(
            _case(
                ctx,
                len(out) + 1,
                "T4",
                pattern.question.format(**fmt),
                chosen,
                frags,
                f"{conclusion}. Rule: {rule}. Evidence: {mechanism}.",
                conclusion=conclusion,
                mechanism=mechanism,
                mechanism_kind=pattern.kind,
                rule=rule,
            )
        )
    return out


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


#: past-tense verbs that do not end in "-ed" (a label starting with one is already a predicate)
_IRREGULAR_PAST = frozenset(
    "grew got lost quit paid bought spent took began became made won sold left met went ran kept gave fell had".split()
)
#: label openings that are not verbs though they end in "s" or "-ed"
_NOT_VERBS = frozenset({"married", "retired", "divorced", "engaged", "widowed", "single", "diabetes"})


def _predicate(label: str) -> str:
    """A fact's label as a predicate after the persona's name: labels mostly are ("has a rescue dog",
    "quit smoking", "rarely exercises"); those that are not ("saving for a house down payment", "recently
    divorced", "parent of young children") get "is" (and a noun its article)."""
    words = label.split()
    lead = [w.lower() for w in words[:2]]
    first = lead[1] if lead[0] in _ADVERBS and len(lead) > 1 else lead[0]
    is_verb = first in _MODALS or (
        first not in _NOT_VERBS
        and (first in _IRREGULAR_PAST or first.endswith("ed") or (first.endswith("s") and not first.endswith("ss")))
    )
    if is_verb:
        return label
    return f"is a {label}" if first in _NOUNS else f"is {label}"


#: adverbs a label may open with before its verb ("rarely exercises", "just became")
_ADVERBS = frozenset({"just", "rarely", "never", "still", "often", "always", "usually", "recently"})
_MODALS = frozenset({"cannot", "can", "will", "must", "should", "won't", "can't"})
#: nouns a label may open with ("parent of teenagers")
_NOUNS = frozenset({"parent", "grandparent", "veteran", "member", "fan"})


def _stricter(a: str, b: str) -> str:
    return max(a, b, key=STRICTNESS.index)


def _t5(ctx: CaseContext, rng: random.Random, n: int) -> list[Case]:
    """Up to ``n`` requests: the specs' requests that touch a current fact, taken in turns by boundary so
    that every boundary the persona's facts allow appears; up to `T5_JOINED` messages carrying two
    requests on facts of different categories (both constraints listed, the stricter boundary expected),
    made only from requests the single ones leave over; and up to `T5_COMPLY` routine requests (another
    of a fact's usual calendar events) that fit."""
    by_boundary: dict[str, list[Case]] = defaultdict(list)
    routine: list[Case] = []
    titles: set[str] = set()
    facts = [f for f in ctx.current if ctx.states(f)]
    rng.shuffle(facts)
    for f in facts:
        spec = spec_of(f)
        if spec is None:
            continue
        frags = ctx.all_frags(f.id)
        for req in spec.requests:
            by_boundary[req.boundary].append(
                _case(
                    ctx,
                    0,
                    "T5",
                    req.text,
                    [f],
                    frags,
                    f"{req.boundary}: {req.why}",
                    constraints=[f.label],
                    boundary=req.boundary,
                )
            )
        title = spec.cals[0][0].split(" - ")[0].replace("{time}", "").strip() if spec.cals else ""
        if spec.requests and title and title.lower() not in titles and "{" not in title:
            titles.add(title.lower())
            q = f"Put another '{title}' on my calendar for next week, same time as usual."
            routine.append(
                _case(
                    ctx,
                    0,
                    "T5",
                    q,
                    [f],
                    frags,
                    "comply: the request fits the persona's routine and constraint",
                    constraints=[f.label],
                    boundary="comply",
                )
            )
    queues = [by_boundary[b] for b in sorted(by_boundary)]
    rng.shuffle(queues)
    budget = max(0, n - min(T5_COMPLY, len(routine)))
    available = sum(len(q) for q in queues)
    # a joined message spends two requests on one case: join only what the single cases leave over
    joined_wanted = min(T5_JOINED, max(0, available - budget))
    picked: list[Case] = []
    while len(picked) < budget - joined_wanted and any(queues):
        for queue in queues:
            if queue and len(picked) < budget - joined_wanted:
                picked.append(queue.pop(0))
    left = [c for q in queues for c in q]
    rng.shuffle(left)
    picked += _joined(ctx, left, min(joined_wanted, budget - len(picked)))
    picked += routine[: n - len(picked)]
    return [c.model_copy(update={"id": f"{ctx.persona.id}-T5-{i:02d}"}) for i, c in enumerate(picked, start=1)]


def _joined(ctx: CaseContext, singles: list[Case], n: int) -> list[Case]:
    """Up to ``n`` messages each joining two of ``singles`` (one-constraint requests) on facts of different
    categories, the restrictive request first: both constraints, both reasons, the stricter boundary."""
    out: list[Case] = []
    free = list(singles)
    while len(out) < n and free:
        first = free.pop(0)
        cat = ctx.by_id[first.fact_ids[0]].category
        second = next((c for c in free if ctx.by_id[c.fact_ids[0]].category != cat), None)
        if second is None:
            continue
        free.remove(second)
        a, b = sorted((first, second), key=lambda c: -STRICTNESS.index(c.boundary or "comply"))
        boundary = _stricter(a.boundary or "comply", b.boundary or "comply")
        facts = [ctx.by_id[a.fact_ids[0]], ctx.by_id[b.fact_ids[0]]]
        why = f"{a.answer.split(': ', 1)[1]}; and {b.answer.split(': ', 1)[1]}"
        which = f"the stricter of {a.boundary} and {b.boundary}" if a.boundary != b.boundary else "both requests"
        answer = f"{boundary} ({which}): {why}"
        q = f"Two things, please. {a.question} Also: {b.question}"
        frags = [*a.supporting_fragments, *b.supporting_fragments]
        out.append(
            _case(ctx, 0, "T5", q, facts, frags, answer, constraints=[f.label for f in facts], boundary=boundary)
        )
    return out


def template_cases(ctx: CaseContext, rng: random.Random, per_type: dict[str, int] | None = None) -> list[Case]:
    """All template cases of one persona, T1 to T5, at most ``per_type`` of each (default `PER_TYPE`)."""
    n = {**PER_TYPE, **(per_type or {})}
    t1 = _t1(ctx, rng, n["T1"])
    t2 = _t2(ctx, rng, n["T2"], {c.fact_ids[0] for c in t1})
    return [*t1, *t2, *_t3(ctx, n["T3"]), *_t4(ctx, rng, n["T4"]), *_t5(ctx, rng, n["T5"])]


# ------------------------------------------------------------------------------------------ model half

#: the id of a case the model wrote
MODEL_CASE = re.compile(r"-T[1-5]-m\d+$")


class _Case(BaseModel):
    type: Literal["T4", "T5"]
    question: str
    fact_ids: list[str]
    answer: str = ""
    conclusion: str | None = None
    mechanism: str | None = None
    mechanism_kind: str | None = None
    rule: str | None = None
    constraints: list[str] = Field(default_factory=list)
    boundary: str | None = None


class _Cases(BaseModel):
    cases: list[_Case]


async def model_cases(model: Any, ctx: CaseContext) -> list[Case]:
    """T4 and T5 cases written by the model; grounding and validity are checked afterwards."""
    payload = {
        "name": ctx.name,
        "facts": [
            f.model_dump(include={"id", "category", "label", "prior_of"})
            for f in ctx.facts
            if f.id in ctx.frags and ctx.states(f)
        ],
    }
    parsed = await M.ask(model, "cases", payload, _Cases)
    out = []
    counts = {"T4": 0, "T5": 0}
    for c in parsed.cases:
        counts[c.type] += 1
        frags = sorted({x for f in c.fact_ids if f in ctx.frags for x in ctx.all_frags(f)})
        out.append(
            Case(
                id=f"{ctx.persona.id}-{c.type}-m{counts[c.type]:02d}", persona_id=ctx.persona.id, type=c.type,
                question=c.question, fact_ids=c.fact_ids,
                labels=[ctx.by_id[f].label for f in c.fact_ids if f in ctx.by_id],
                supporting_fragments=frags, answer=c.answer or (c.conclusion or c.boundary or ""),
                conclusion=c.conclusion, mechanism=c.mechanism, mechanism_kind=c.mechanism_kind,
                rule=c.rule or None, constraints=c.constraints, boundary=c.boundary,
            )
        )  # fmt: skip
    if not out:
        raise M.ModelStageError("cases: no cases")
    return out


class _RecallCase(BaseModel):
    type: Literal["T1", "T2", "T3"]
    question: str = Field(min_length=1)
    fact_ids: list[str] = Field(min_length=1)
    supporting_fragments: list[str] = Field(default_factory=list)


class _RecallCases(BaseModel):
    cases: list[_RecallCase]


def _recall_facts(ctx: CaseContext, rng: random.Random, limit: int) -> list[Fact]:
    """The facts offered for T1-T3: every prior/current pair, and up to ``limit`` facts that hold throughout,
    each answerable from its fragments (`CaseContext.states`)."""
    pairs = [
        f
        for f in ctx.facts
        if f.prior_of and f.id in ctx.frags and f.prior_of in ctx.frags
        if ctx.states(f) and ctx.states(ctx.by_id[f.prior_of])
    ]
    chosen = {f.id for f in pairs} | {f.prior_of for f in pairs if f.prior_of}
    static = [f for f in ctx.static if ctx.states(f)]
    rng.shuffle(static)
    chosen |= {f.id for f in static[:limit]}
    return [f for f in ctx.facts if f.id in chosen]


async def model_recall_cases(
    model: Any, ctx: CaseContext, rng: random.Random, limit: int = 12
) -> tuple[list[Case], list[str]]:
    """T1-T3 cases written by the model from the facts and their surviving fragments (ids and apps),
    and the cases dropped here ("case id: reason"). The answer keys (labels, answer, T3 states and
    change date) come from the facts the case names, never from the model; the cited fragment ids are
    kept as given, for `verify.check_cases` to accept or reject."""
    offered = _recall_facts(ctx, rng, limit)
    payload = {
        "name": ctx.name,
        "facts": [
            {
                "id": f.id,
                "category": f.category,
                "label": f.label,
                **({"prior_of": f.prior_of} if f.prior_of else {}),
                **({"valid_from": str(f.valid_from)} if f.valid_from else {}),
                "fragments": [{"id": x, "app": app} for app, ids in sorted(ctx.frags[f.id].items()) for x in ids],
            }
            for f in offered
        ],
    }
    parsed = await M.ask(model, "cases_recall", payload, _RecallCases)
    out: list[Case] = []
    dropped: list[str] = []
    counts = {"T1": 0, "T2": 0, "T3": 0}
    for c in parsed.cases:
        counts[c.type] += 1
        cid = f"{ctx.persona.id}-{c.type}-m{counts[c.type]:02d}"
        facts = [ctx.by_id[f] for f in c.fact_ids if f in ctx.by_id]
        leaked = [term for f in facts for _, term in find_leaks(c.question, [f])]
        if leaked:
            dropped.append(f"{cid}: the question gives the answer away ({leaked[0]!r})")
            continue
        key: dict[str, Any] = {}
        answer = "; ".join(f.label for f in facts)
        if c.type == "T3" and len(facts) == 2:
            a, b = facts
            prior, current = (a, b) if a.prior_of == b.id else (b, a) if b.prior_of == a.id else (None, None)
            if prior is not None and current is not None:
                key = {"prior_state": prior.label, "current_state": current.label, "stale_state": prior.label,
                       "changed_on": current.valid_from}  # fmt: skip
                answer = f"before {current.valid_from}: {prior.label}; since then: {current.label}"
        out.append(
            Case(
                id=cid, persona_id=ctx.persona.id, type=c.type, question=c.question.strip(), fact_ids=c.fact_ids,
                labels=[f.label for f in facts], supporting_fragments=sorted(set(c.supporting_fragments)),
                answer=answer, **key,
            )
        )  # fmt: skip
    if not out:
        raise M.ModelStageError(f"cases_recall: no usable case ({'; '.join(dropped[:3]) or 'none written'})")
    return out, dropped


def top_up(
    written: list[Case],
    template: list[Case],
    facts: list[Fact],
    clusters: list[Cluster],
    items: list[Message | CalendarEvent],
    name: str,
) -> list[Case]:
    """The model's cases, then template cases of each type up to the templates' count of that type
    less the model's accepted ones (none on the same facts)."""
    good, _, _ = check_cases(written, facts, clusters, items, name)
    have = Counter(c.type for c in good)
    taken = {(c.type, tuple(sorted(c.fact_ids))) for c in good}
    want = Counter(c.type for c in template)
    out = list(written)
    for case in template:
        if have[case.type] < want[case.type] and (case.type, tuple(sorted(case.fact_ids))) not in taken:
            out.append(case)
            have[case.type] += 1
    return out
