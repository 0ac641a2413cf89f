"""Stage 5: test cases T1–T5 with answer keys and the fragments that support them.

T1 one fact from one app; T2 facts whose fragments span messenger and calendar; T3 a prior and a
current state (the stale state is the prior one taken as current); T4 a higher-level pattern from two
facts (`banks.Pattern`: conclusion, mechanism kind and mechanism); T5 a first-person request
touching a persona constraint, with the expected action boundary. `verify.check_cases` then rejects
ungrounded, duplicate and type-invalid cases.

T1 and T2 ask each fact's own question (`FactSpec.ask`), which no other fact the persona holds at the same
time answers, so the key's one label is the answer; T3 names what changed (`FactSpec.change`). A model
fact (no bank spec) is asked about its category instead.
"""

from __future__ import annotations

import random
from collections import defaultdict

from hippocamp.pcontext.banks import fact_bank, phrase_bank
from hippocamp.pcontext.facts import spec_of
from hippocamp.schema.pcontext import Case, Cluster, Fact, Persona

__all__ = ["PER_TYPE", "CaseContext", "ask", "change_topic", "template_cases"]

#: cases per type and persona, after the paper's instance (662 T1, 662 T2, 663 T3, 1,360 T4, 1,463 T5 over
#: 100 personas); T3 is also bounded by the facts that change (``SetConfig.changes``)
PER_TYPE = {"T1": 7, "T2": 7, "T3": 7, "T4": 14, "T5": 15}
#: T5 requests that fit the persona (boundary "comply") at most, out of ``PER_TYPE["T5"]``
T5_COMPLY = 3


class CaseContext:
    """The facts and the surviving fragments (by fact and app) of one persona."""

    def __init__(self, persona: Persona, facts: list[Fact], clusters: list[Cluster], present: set[str]):
        self.persona = persona
        self.facts = facts
        self.by_id = {f.id: f for f in facts}
        self.name = persona.seed.name.split()[0]
        self.frags: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        self.cluster_of: dict[str, str] = {}
        for cluster in clusters:
            if cluster.outcome != "verified":
                continue
            for frag in cluster.fragments:
                if frag.id not in present:
                    continue
                for fid in frag.fact_ids:
                    self.frags[fid][frag.app].append(frag.id)
                    self.cluster_of[fid] = cluster.id
        successors = {f.prior_of for f in facts if f.prior_of}
        #: facts that hold for the whole window
        self.static = [f for f in facts if f.id in self.frags and not f.prior_of and f.id not in successors]
        self.current = [f for f in facts if f.id in self.frags and not f.prior_of]

    def all_frags(self, fid: str) -> list[str]:
        return sorted(x for ids in self.frags[fid].values() for x in ids)


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


def _t1(ctx: CaseContext, rng: random.Random, n: int) -> list[Case]:
    options = []
    for f in ctx.static:
        app, ids = max(ctx.frags[f.id].items(), key=lambda kv: (len(kv[1]), kv[0] == "messenger"))
        options.append((len(ids) >= 2, f, app, ids))
    rng.shuffle(options)
    options.sort(key=lambda o: not o[0])
    out: list[Case] = []
    seen: set[str] = set()
    limit = min(n, max(1, len(ctx.static) // 2))  # leave facts for T2
    for _, f, app, ids in options:
        if len(out) == limit or f.category in seen:  # spread over categories
            continue
        seen.add(f.category)
        where = "messages" if app == "messenger" else "calendar"
        q = f"Judging only from {ctx.name}'s {where}, {_lower_first(ask(f, ctx.persona))}"
        out.append(_case(ctx, len(out) + 1, "T1", q, [f], ids, f.label))
    return out


def _t2(ctx: CaseContext, rng: random.Random, n: int, avoid: set[str]) -> list[Case]:
    """Up to ``n`` cases, each on one or two facts of a cluster (none in ``avoid``, the ids T1 used),
    no category asked about twice."""
    by_cluster: dict[str, list[Fact]] = defaultdict(list)
    for f in ctx.static:
        if f.id not in avoid and set(ctx.frags[f.id]) == {"messenger", "calendar"}:
            by_cluster[ctx.cluster_of[f.id]].append(f)
    groups = list(by_cluster.values())
    rng.shuffle(groups)
    out: list[Case] = []
    used: set[str] = set()
    for group in groups:
        group = [f for f in group if f.category not in used][:2]
        if len(group) > 1 and group[0].category == group[1].category:
            group = group[:1]
        if not group or len(out) == n:
            continue
        used.update(f.category for f in group)
        asks = " And ".join(_lower_first(ask(f, ctx.persona)) for f in group)
        q = f"Putting {ctx.name}'s messages and calendar together, {asks}"
        frags = [x for f in group for x in ctx.all_frags(f.id)]
        out.append(_case(ctx, len(out) + 1, "T2", q, group, frags, "; ".join(f.label for f in group)))
    return out


def _t3(ctx: CaseContext, n: int) -> list[Case]:
    out: list[Case] = []
    asked: set[str] = set()
    for prior in ctx.facts:
        if not prior.prior_of or prior.id not in ctx.frags or prior.prior_of not in ctx.frags:
            continue
        current = ctx.by_id[prior.prior_of]
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


def _matches(fact: Fact, alternatives: tuple[str, ...]) -> bool:
    return any(fact.category == a[4:] if a.startswith("cat:") else a in fact.tags for a in alternatives)


def _t4(ctx: CaseContext, rng: random.Random, n: int) -> list[Case]:
    out: list[Case] = []
    pron = _pron(ctx.persona)
    patterns = list(phrase_bank().patterns)
    rng.shuffle(patterns)
    for pattern in patterns:
        if len(out) == n:
            break
        chosen: list[Fact] = []
        for alternatives in pattern.slots:
            options = [f for f in ctx.current if f not in chosen and _matches(f, alternatives)]
            if not options:
                chosen = []
                break
            chosen.append(rng.choice(options))
        if len(chosen) < 2:
            continue
        fmt = {"name": ctx.name, **pron, "a": chosen[0].label, "b": chosen[1].label}
        conclusion = pattern.conclusion.format(**fmt)
        mechanism = pattern.why.format(**fmt)
        frags = [x for f in chosen for x in ctx.all_frags(f.id)]
        out.append(
            _case(
                ctx,
                len(out) + 1,
                "T4",
                pattern.question.format(**fmt),
                chosen,
                frags,
                f"{conclusion}: {mechanism}",
                conclusion=conclusion,
                mechanism=mechanism,
                mechanism_kind=pattern.kind,
            )
        )
    return out


def _t5(ctx: CaseContext, rng: random.Random, n: int) -> list[Case]:
    """Up to ``n`` requests: the specs' requests that touch a current fact, taken in turns by boundary so
    that every boundary the persona's facts allow appears, plus up to `T5_COMPLY` routine requests
    (another of a fact's usual calendar events) that fit."""
    by_boundary: dict[str, list[Case]] = defaultdict(list)
    routine: list[Case] = []
    titles: set[str] = set()
    facts = list(ctx.current)
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
        if spec.requests and title and title.lower() not in titles:
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
    picked: list[Case] = []
    queues = [by_boundary[b] for b in sorted(by_boundary)]
    rng.shuffle(queues)
    budget = max(0, n - min(T5_COMPLY, len(routine)))
    while len(picked) < budget and any(queues):
        for queue in queues:
            if queue and len(picked) < budget:
                picked.append(queue.pop(0))
    picked += routine[: n - len(picked)]
    return [c.model_copy(update={"id": f"{ctx.persona.id}-T5-{i:02d}"}) for i, c in enumerate(picked, start=1)]


def template_cases(ctx: CaseContext, rng: random.Random, per_type: dict[str, int] | None = None) -> list[Case]:
    """All template cases of one persona, T1 to T5, at most ``per_type`` of each (default `PER_TYPE`)."""
    n = {**PER_TYPE, **(per_type or {})}
    t1 = _t1(ctx, rng, n["T1"])
    t2 = _t2(ctx, rng, n["T2"], {c.fact_ids[0] for c in t1})
    return [*t1, *t2, *_t3(ctx, n["T3"]), *_t4(ctx, rng, n["T4"]), *_t5(ctx, rng, n["T5"])]
