"""Model mode: each stage asks a `hippocamp.models.Model` for schema-validated JSON, one prompt file per
stage (``prompts/<stage>.md``, first line ``# stage: <name>``). Every function raises on an outage or
an unusable answer; the pipeline then uses the template engine for that stage and records why.

Filler and decoys are written in batches (`filler`, `decoys`); an item is kept only when it passes the
same lexical checks as the templates' (no hidden fact's label or synonym; filler carries no fact's cue;
a decoy passes `verify.check_decoys`), and a batch with no usable item is an unusable answer. T1-T3
cases (`recall_cases`) name their facts and cite fragment ids; their answer keys are built from the
facts, and the fragment ids are left for `verify.check_cases` to accept or reject.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from datetime import date, datetime, time, timedelta
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hippocamp.pcontext import audit as audit_mod
from hippocamp.pcontext import verify as V
from hippocamp.pcontext.cases import CaseContext
from hippocamp.pcontext.interview import TOPIC_OF, question_list
from hippocamp.pcontext.logs import LogContext, WrittenSession, fragment_window
from hippocamp.pcontext.verify import normalize
from hippocamp.schema.pcontext import (
    PCONTEXT_VERSION,
    AuditFinding,
    AuditReport,
    CalendarEvent,
    Case,
    Circle,
    Contact,
    Fact,
    Fragment,
    FragmentLine,
    InterviewTurn,
    Message,
    Persona,
    Seed,
    VerifierAttempt,
)

__all__ = [
    "MAX_TOKENS",
    "ModelStageError",
    "WrittenBatch",
    "WrittenItem",
    "audit",
    "cases",
    "changes",
    "circle",
    "decoys",
    "distill",
    "filler",
    "fragments",
    "interview",
    "place",
    "prompt",
    "recall_cases",
    "verify_cluster",
]

Category = Literal[
    "background", "family", "relationships", "work", "education", "health", "diet", "fitness", "finances",
    "housing", "transportation", "routine", "hobby", "values", "social_views", "goals", "personality", "constraints",
]  # fmt: skip
#: confidence at which the verifier's inference counts as recovered
CONFIDENT = 0.7
#: answer tokens per stage: a model that rambles is cut off (and its answer refused), not waited for
MAX_TOKENS = {
    "interview": 1536, "facts": 3072, "audit": 768, "circle": 768, "fragments": 768, "verifier": 384,
    "cases": 1024, "cases_recall": 768, "filler": 768, "decoys": 640,
}  # fmt: skip


class ModelStageError(ValueError):
    """A model answer that validated as JSON but cannot be used (missing ids, too few facts, ...)."""


@cache
def prompt(stage: str) -> str:
    """The prompt of ``stage`` (``prompts/<stage>.md``)."""
    return resources.files("hippocamp.pcontext").joinpath(f"prompts/{stage}.md").read_text(encoding="utf-8")


async def _ask(model: Any, stage: str, payload: dict[str, Any], fmt: type[BaseModel]) -> Any:
    messages = [
        {"role": "system", "content": prompt(stage)},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False, default=str)},
    ]
    gen = await model.generate(messages, response_format=fmt, temperature=0.0, max_tokens=MAX_TOKENS.get(stage))
    return gen.parsed


async def _all(coros: list[Any]) -> list[Any]:
    """Run ``coros`` concurrently; the first failure cancels the others (no server time spent on a
    stage that already failed) and is raised as itself."""
    try:
        async with asyncio.TaskGroup() as tg:
            tasks = [tg.create_task(c) for c in coros]
    except ExceptionGroup as group:
        raise group.exceptions[0] from None
    return [t.result() for t in tasks]


# ------------------------------------------------------------------------------------------- interview


class _Answer(BaseModel):
    id: str
    answer: str = Field(min_length=1)


class _Answers(BaseModel):
    answers: list[_Answer]


async def interview(model: Any, seed: Seed) -> list[InterviewTurn]:
    """The 108 questions, asked topic by topic (the first alone, the others concurrently), answered in
    the persona's voice."""
    questions = question_list()
    topics = sorted({t for _, t, _ in questions})
    seed_json = seed.model_dump(exclude={"version", "source"})

    async def one(topic: str) -> dict[str, str]:
        qs = [{"id": i, "question": q} for i, t, q in questions if t == topic]
        parsed = await _ask(model, "interview", {"seed": seed_json, "topic": topic, "questions": qs}, _Answers)
        got = {a.id: a.answer for a in parsed.answers}
        missing = [q["id"] for q in qs if q["id"] not in got]
        if missing:
            raise ModelStageError(f"interview topic {topic}: no answer for {', '.join(missing[:5])}")
        return got

    answers: dict[str, str] = await one(topics[0])  # a probe: a model that cannot answer costs one call
    for got in await _all([one(t) for t in topics[1:]]):
        answers.update(got)
    return [InterviewTurn(id=i, topic=t, question=q, answer=answers[i]) for i, t, q in questions]


# ----------------------------------------------------------------------------------------------- facts


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


async def distill(
    model: Any, seed: Seed, turns: list[InterviewTurn], want: int = 40
) -> tuple[list[Fact], dict[str, _Change]]:
    """About ``want`` hidden facts from the interview, asked topic by topic (concurrently: each prompt
    holds one topic's turns, so a 4k-context local model can answer), facts outside the topic's
    categories and repeated labels dropped; sources that do not exist become the first turn of the
    topic. Also the changes the model proposed, by prior fact id, for `changes` to date. A topic whose
    answer is unusable is left out; fewer than 4 facts in all is an error."""
    topics = list(dict.fromkeys(t.topic for t in turns))
    per_category = max(1, -(-want // len(TOPIC_OF)))

    async def one(topic: str) -> list[_Fact]:
        categories = [c for c, t in TOPIC_OF.items() if t == topic]
        payload = {"seed": seed.model_dump(exclude={"version"}), "topic": topic, "categories": categories,
                   "count": per_category * len(categories),
                   "interview": [t.model_dump() for t in turns if t.topic == topic]}  # fmt: skip
        parsed = await _ask(model, "facts", payload, _Facts)
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


def changes(
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


# ----------------------------------------------------------------------------------------------- audit


class _Finding(BaseModel):
    perspective: Literal["demographic", "behavioral", "psychological", "political"]
    fact_ids: list[str]
    issue: str
    action: Literal["drop", "relabel", "keep"] = "keep"
    new_label: str = ""


class _Findings(BaseModel):
    findings: list[_Finding]


async def audit(model: Any, seed: Seed, facts: list[Fact]) -> tuple[list[Fact], AuditReport]:
    """The model's four-perspective audit, applied (drop or relabel the later fact), then the rules."""
    payload = {
        "seed": seed.model_dump(exclude={"version"}),
        "facts": [f.model_dump(include={"id", "category", "label"}) for f in facts],
    }
    parsed = await _ask(model, "audit", payload, _Findings)
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
    kept, rules = audit_mod.audit_and_repair(seed, kept, random.Random(0))
    report = AuditReport(
        findings=findings + rules.findings,
        repaired=repaired + rules.repaired,
        remaining=rules.remaining,
        auditor=f"model:{model.id}+rules",
    )
    return kept, report


# ---------------------------------------------------------------------------------------------- circle


class _Contact(BaseModel):
    name: str = Field(min_length=1)
    relationship: str
    history: str = ""
    shared_activities: list[str] = Field(default_factory=list)
    fact_ids: list[str] = Field(default_factory=list)


class _Contacts(BaseModel):
    contacts: list[_Contact]


async def circle(model: Any, persona: Persona, facts: list[Fact], n: int) -> Circle:
    payload = {
        "persona": persona.summary,
        "contacts_wanted": n,
        "facts": [f.model_dump(include={"id", "category", "label"}) for f in facts if not f.valid_to],
    }
    parsed = await _ask(model, "circle", payload, _Contacts)
    if len(parsed.contacts) < n:
        raise ModelStageError(f"circle: {len(parsed.contacts)} contacts, {n} wanted")
    contacts = [
        Contact(id=f"c{i}", name=c.name, relationship=c.relationship.lower(), history=c.history,
                shared_activities=c.shared_activities, fact_ids=c.fact_ids)
        for i, c in enumerate(parsed.contacts[:n], start=1)
    ]  # fmt: skip
    return Circle(persona_id=persona.id, contacts=contacts, generator=f"model:{model.id}")


# ------------------------------------------------------------------------------------------- fragments


class _Line(BaseModel):
    sender: str
    text: str = Field(min_length=1)


class _Fragment(BaseModel):
    app: Literal["messenger", "calendar"]
    fact_ids: list[str] = Field(min_length=1)
    date: date
    time: str = "12:00"
    contact_id: str | None = None
    lines: list[_Line] = Field(default_factory=list)
    title: str = ""
    notes: str = ""
    location: str = ""
    minutes: int = 60


class _Fragments(BaseModel):
    fragments: list[_Fragment]


def _clock(value: str) -> time:
    m = re.match(r"^(\d{1,2}):(\d{2})", value.strip())
    if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        return time(12, 0)
    return time(int(m.group(1)), int(m.group(2)))


async def fragments(
    model: Any, ctx: LogContext, cid: str, fact_ids: list[str], attempt: int, feedback: list[str]
) -> list[Fragment]:
    """4-5 fragments of one cluster; refused (ModelStageError) unless every fact has two, dated inside
    its validity, from known contacts."""
    facts = [ctx.by_id[f] for f in fact_ids]

    def dates(f: Fact) -> list[str]:
        w = fragment_window([f], ctx.start, ctx.end)
        return [str(w[0]), str(w[1] - timedelta(days=1))] if w else []

    payload = {
        "persona": ctx.persona.summary,
        "contacts": [{"id": c.id, "name": c.name, "relationship": c.relationship} for c in ctx.circle.contacts],
        "facts": [
            {"id": f.id, "label": f.label, "forbidden": [f.label, *f.synonyms], "cues": f.cues, "dates": dates(f)}
            for f in facts
        ],
        "attempt": attempt,
        "feedback": feedback,
    }
    parsed = await _ask(model, "fragments", payload, _Fragments)
    contacts = {c.id for c in ctx.circle.contacts}
    out = []
    for j, f in enumerate(parsed.fragments, start=1):
        unknown = [x for x in f.fact_ids if x not in ctx.by_id or x not in fact_ids]
        if unknown:
            raise ModelStageError(f"fragments {cid}: fragment {j} cites facts outside the cluster: {unknown}")
        window = fragment_window([ctx.by_id[x] for x in f.fact_ids], ctx.start, ctx.end)
        if window is None or not window[0] <= f.date < window[1]:
            raise ModelStageError(f"fragments {cid}: fragment {j} dated {f.date} outside its facts' dates")
        fid = f"{ctx.persona.id}-{cid}-f{j}"
        at = datetime.combine(f.date, _clock(f.time))
        if f.app == "messenger":
            contact = f.contact_id if f.contact_id in contacts else None
            if contact is None or not f.lines:
                raise ModelStageError(f"fragments {cid}: messenger fragment {j} needs lines and a known contact_id")
            lines = [
                FragmentLine(sender="me" if ln.sender not in contacts else ln.sender, text=ln.text) for ln in f.lines
            ]
            out.append(Fragment(id=fid, cluster_id=cid, app="messenger", fact_ids=f.fact_ids, at=at,
                                contact_ids=[contact], lines=lines))  # fmt: skip
        else:
            if not f.title.strip():
                raise ModelStageError(f"fragments {cid}: calendar fragment {j} has no title")
            out.append(Fragment(id=fid, cluster_id=cid, app="calendar", fact_ids=f.fact_ids, at=at, title=f.title,
                                notes=f.notes, location=f.location, minutes=max(15, min(f.minutes, 600))))  # fmt: skip
    if not 4 <= len(out) <= 5:
        raise ModelStageError(f"fragments {cid}: {len(out)} fragments; 4 or 5 wanted")
    for fact in facts:
        if sum(fact.id in fr.fact_ids for fr in out) < 2:
            raise ModelStageError(f"fragments {cid}: fact {fact.id} has fewer than 2 fragments")
    return out


# -------------------------------------------------------------------------------------------- verifier


class _Inference(BaseModel):
    slot: int
    statement: str = ""
    confidence: float = Field(ge=0, le=1)


class _Verdict(BaseModel):
    inferences: list[_Inference]
    leaks: list[str] = Field(default_factory=list)


_STOP = frozenset("a an the and or of to in on for with has have is are was be their his her they them who".split())


def _content(text: str) -> set[str]:
    return {w for w in normalize(text).split() if len(w) >= 4 and w not in _STOP}


def _matches(statement: str, fact: Fact) -> bool:
    """The verifier's words name the fact: they share a content word with its label, synonyms or cues."""
    return bool(_content(statement) & _content(" ".join([fact.label, *fact.synonyms, *fact.cues])))


async def verify_cluster(verifier: Any, frags: list[Fragment], facts: list[Fact], attempt: int) -> VerifierAttempt:
    """The model verifier: it sees the fragments' words and each fact's category, never labels or ids."""
    payload = {
        "fragments": [{"n": i, "app": f.app, "text": f.text()} for i, f in enumerate(frags, start=1)],
        "slots": [{"slot": i, "category": f.category} for i, f in enumerate(facts, start=1)],
    }
    parsed = await _ask(verifier, "verifier", payload, _Verdict)
    recovered = {}
    for i, fact in enumerate(facts, start=1):
        best = max(
            (x.confidence for x in parsed.inferences if x.slot == i and _matches(x.statement, fact)), default=0.0
        )
        recovered[fact.id] = best
    passed = not parsed.leaks and all(v >= CONFIDENT for v in recovered.values())
    return VerifierAttempt(
        attempt=attempt, recovered=recovered, leaks=[f"verifier: {x}" for x in parsed.leaks], passed=passed,
        verifier=f"model:{verifier.id}",
    )  # fmt: skip


# ----------------------------------------------------------------------------------------------- cases


class _Case(BaseModel):
    type: Literal["T4", "T5"]
    question: str
    fact_ids: list[str]
    answer: str = ""
    conclusion: str | None = None
    mechanism: str | None = None
    mechanism_kind: str | None = None
    constraints: list[str] = Field(default_factory=list)
    boundary: str | None = None


class _Cases(BaseModel):
    cases: list[_Case]


async def cases(model: Any, ctx: CaseContext) -> list[Case]:
    """T4 and T5 cases written by the model; grounding and validity are checked afterwards."""
    payload = {
        "name": ctx.name,
        "facts": [
            f.model_dump(include={"id", "category", "label", "prior_of"}) for f in ctx.facts if f.id in ctx.frags
        ],
    }
    parsed = await _ask(model, "cases", payload, _Cases)
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
                constraints=c.constraints, boundary=c.boundary,
            )
        )  # fmt: skip
    if not out:
        raise ModelStageError("cases: no cases")
    return out


class _RecallCase(BaseModel):
    type: Literal["T1", "T2", "T3"]
    question: str = Field(min_length=1)
    fact_ids: list[str] = Field(min_length=1)
    supporting_fragments: list[str] = Field(default_factory=list)


class _RecallCases(BaseModel):
    cases: list[_RecallCase]


def _recall_facts(ctx: CaseContext, rng: random.Random, limit: int) -> list[Fact]:
    """The facts offered for T1-T3: every prior/current pair, and up to ``limit`` facts that hold throughout."""
    pairs = [f for f in ctx.facts if f.prior_of and f.id in ctx.frags and f.prior_of in ctx.frags]
    chosen = {f.id for f in pairs} | {f.prior_of for f in pairs if f.prior_of}
    static = list(ctx.static)
    rng.shuffle(static)
    chosen |= {f.id for f in static[:limit]}
    return [f for f in ctx.facts if f.id in chosen]


async def recall_cases(
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
    parsed = await _ask(model, "cases_recall", payload, _RecallCases)
    out: list[Case] = []
    dropped: list[str] = []
    counts = {"T1": 0, "T2": 0, "T3": 0}
    for c in parsed.cases:
        counts[c.type] += 1
        cid = f"{ctx.persona.id}-{c.type}-m{counts[c.type]:02d}"
        facts = [ctx.by_id[f] for f in c.fact_ids if f in ctx.by_id]
        leaked = [term for f in facts for _, term in V.find_leaks(c.question, [f])]
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
        raise ModelStageError(f"cases_recall: no usable case ({'; '.join(dropped[:3]) or 'none written'})")
    return out, dropped


# ------------------------------------------------------------------------------------ filler and decoys


class WrittenLine(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: "me" or a contact id
    sender: str
    text: str


class WrittenItem(BaseModel):
    """A model-written filler or decoy item that passed the checks, not yet placed in time."""

    model_config = ConfigDict(extra="forbid")
    app: Literal["messenger", "calendar"]
    contact_id: str = ""
    lines: list[WrittenLine] = Field(default_factory=list)
    title: str = ""
    notes: str = ""
    location: str = ""
    minutes: int = 60
    #: a decoy's other person
    about: str = ""

    def texts(self) -> list[str]:
        if self.app == "messenger":
            return [line.text for line in self.lines]
        return [x for x in (self.title, self.notes, self.location) if x]


class WrittenBatch(BaseModel):
    """One answer of the ``filler`` or ``decoys`` stage as kept in ``model_filler.jsonl``: the items
    that passed, and why the others were refused."""

    model_config = ConfigDict(extra="forbid")
    version: int = PCONTEXT_VERSION
    id: str
    kind: Literal["filler", "decoy"]
    items: list[WrittenItem]
    rejected: list[str] = Field(default_factory=list)
    model: str = ""


class _WLine(BaseModel):
    sender: str = "me"
    text: str = Field(min_length=1)


class _WItem(BaseModel):
    app: Literal["messenger", "calendar"]
    contact_id: str | None = None
    about: str | None = None
    lines: list[_WLine] = Field(default_factory=list)
    title: str = ""
    notes: str = ""
    location: str = ""
    minutes: int = 60


class _WItems(BaseModel):
    items: list[_WItem]


#: everyday subjects offered to the filler stage, a few per batch, so that batches differ
TOPICS = (
    "groceries", "weekend plans", "the weather", "a TV show", "a movie night", "dinner plans", "car errands",
    "a birthday", "laundry and chores", "a package delivery", "a funny video", "the neighbors", "a haircut",
    "running late", "a restaurant", "a game on TV", "a podcast", "borrowing something", "a school event",
    "a recipe", "a power outage", "a coffee run", "a playlist", "holiday plans", "a lost phone charger",
    "parking", "a garage sale", "a book", "a phone upgrade", "traffic",
)  # fmt: skip
_MAX_ITEM_CHARS = 400


def _avoid(facts: list[Fact], limit: int = 60) -> list[str]:
    """Labels and synonyms of hidden facts, shortest first, at most ``limit`` (a hint; the check is lexical)."""
    terms = {t.strip() for f in facts for t in (f.label, *f.synonyms) if t.strip()}
    return sorted(terms, key=lambda t: (len(t), t))[:limit]


def _contacts(ctx: LogContext) -> list[dict[str, Any]]:
    return [
        {"id": c.id, "name": c.name, "relationship": c.relationship, "shared_activities": c.shared_activities}
        for c in ctx.circle.contacts
    ]


def _item(raw: _WItem, ctx: LogContext, kind: str) -> WrittenItem | str:
    """The item in stored form, or why it is refused (shape only; the lexical checks come after)."""
    contacts = {c.id: c for c in ctx.circle.contacts}
    names = {c.name.lower(): c.id for c in ctx.circle.contacts} | {
        c.name.split()[0].lower(): c.id for c in ctx.circle.contacts
    }
    about = (raw.about or "").strip() if kind == "decoy" else ""
    if raw.app == "messenger":
        contact = raw.contact_id if raw.contact_id in contacts else names.get((raw.contact_id or "").lower())
        if contact is None:
            return f"unknown contact {raw.contact_id!r}"
        lines = []
        for ln in raw.lines[:8]:
            text = " ".join(ln.text.split())
            if not text:
                continue
            sender = ln.sender.strip()
            who = sender if sender in contacts else names.get(sender.lower(), "me")
            lines.append(WrittenLine(sender=who if who in (contact, "me") else "me", text=text))
        if not lines:
            return "a message without lines"
        item = WrittenItem(app="messenger", contact_id=contact, lines=lines, about=about)
    else:
        title = " ".join(raw.title.split())
        if not title:
            return "an event without a title"
        item = WrittenItem(app="calendar", title=title, notes=" ".join(raw.notes.split()),
                           location=" ".join(raw.location.split()), minutes=max(15, min(raw.minutes, 600)),
                           about=about)  # fmt: skip
    if any(len(t) > _MAX_ITEM_CHARS for t in item.texts()):
        return "a line longer than a message"
    return item


def _cued(text: str, facts: list[Fact]) -> list[str]:
    return [f.id for f in facts if any(V.has_term(text, c) for c in f.cues)]


def _check_filler(item: WrittenItem, ctx: LogContext) -> str | None:
    for text in item.texts():
        leaks = V.find_leaks(text, ctx.facts)
        if leaks:
            return f"names fact {leaks[0][0]} ({leaks[0][1]!r})"
        cued = _cued(text, ctx.facts)
        if cued:
            return f"carries a cue of fact {cued[0]}: filler would become untracked evidence"
    return None


def _check_decoy(item: WrittenItem, ctx: LogContext, people: set[str]) -> str | None:
    if item.about.lower() not in people:
        return f"about {item.about!r}, not one of the other people offered"
    stamp = datetime.combine(ctx.start, time(12))
    if item.app == "messenger":
        items: list[Message | CalendarEvent] = [
            Message(id=f"line{i}", session_id="s", sender=line.sender, recipients=[], timestamp=stamp,
                    text=line.text, kind="decoy", about=item.about)
            for i, line in enumerate(item.lines, start=1)
        ]  # fmt: skip
    else:
        items = [CalendarEvent(id="event", title=item.title, start=stamp, end=stamp, location=item.location,
                               notes=item.notes, kind="decoy", about=item.about)]  # fmt: skip
    check = V.check_decoys(items, ctx.facts, ctx.persona.seed.name)
    if not check.passed:
        return check.problems[0]
    cued = [t for t in item.texts() if _cued(t, ctx.facts)]
    if not cued:
        return "carries no cue of a hidden fact: not a decoy"
    for text in cued:  # stricter than sentence by sentence: "Mr. Okafor" must not split a cue from "I"
        if set(normalize(text).split()) & V.FIRST_PERSON:
            return "a line with a cue is in the first person: it would tie the cue to the persona"
        if not V.has_term(text, item.about):
            return f"a line with a cue does not name {item.about!r}"
    return None


async def _written(model: Any, stage: str, kind: str, ctx: LogContext, batch_id: str, payload: dict[str, Any],
                   check: Any) -> WrittenBatch:  # fmt: skip
    parsed = await _ask(model, stage, payload, _WItems)
    items: list[WrittenItem] = []
    rejected: list[str] = []
    seen: set[str] = set()
    for j, raw in enumerate(parsed.items[: 2 * payload["count"]], start=1):
        item = _item(raw, ctx, kind)
        why = item if isinstance(item, str) else check(item)
        if why is None and isinstance(item, WrittenItem):
            key = normalize(" ".join(item.texts()))
            if key in seen:
                why = "repeats an earlier item"
            seen.add(key)
        if why is not None or isinstance(item, str):
            rejected.append(f"item {j}: {why}")
            continue
        items.append(item)
    if not items:
        raise ModelStageError(f"{stage} {batch_id}: no usable item ({'; '.join(rejected[:3]) or 'none written'})")
    return WrittenBatch(id=batch_id, kind=kind, items=items, rejected=rejected, model=model.id)  # type: ignore[arg-type]


async def filler(model: Any, ctx: LogContext, batch_id: str, index: int, count: int) -> WrittenBatch:
    """One batch of ordinary-life filler with the persona's contacts: no hidden fact's label, synonym or cue."""
    topics = [TOPICS[(index * 3 + k) % len(TOPICS)] for k in range(3)]
    payload = {
        "persona": ctx.persona.summary,
        "contacts": _contacts(ctx),
        "window": [str(ctx.start), str(ctx.end - timedelta(days=1))],
        "batch": index,
        "topics": topics,
        "count": count,
        "avoid": _avoid(ctx.facts),
    }
    return await _written(model, "filler", "filler", ctx, batch_id, payload, lambda it: _check_filler(it, ctx))


async def decoys(model: Any, ctx: LogContext, batch_id: str, index: int, count: int, people: list[str]) -> WrittenBatch:
    """One batch of decoys: items that use a hidden fact's cue about one of ``people``, never the persona."""
    facts = [f for f in ctx.facts if f.cues]
    rng = random.Random(f"{ctx.persona.id}:{batch_id}")
    offered = rng.sample(facts, min(4, len(facts)))
    plain = [c for f in offered for c in f.cues if not set(normalize(c).split()) & V.FIRST_PERSON]
    payload = {
        "batch": index,
        "people": people,
        "contacts": [{"id": c.id, "name": c.name} for c in ctx.circle.contacts],
        "cues": plain,
        "count": count,
        "avoid": _avoid(offered, limit=20),
    }
    allowed = {p.lower() for p in people}
    return await _written(model, "decoys", "decoy", ctx, batch_id, payload, lambda it: _check_decoy(it, ctx, allowed))


def place(ctx: LogContext, batch: WrittenBatch) -> list[WrittenSession | CalendarEvent]:
    """The batch's items at random times inside the window (a random stream of their own per batch)."""
    rng = ctx.rng("written", batch.id)
    days = (ctx.end - ctx.start).days
    out: list[WrittenSession | CalendarEvent] = []
    for item in batch.items:
        day = ctx.start + timedelta(days=rng.randrange(days))
        about = item.about or None
        if item.app == "messenger":
            at = datetime.combine(day, time(rng.randint(7, 21), rng.randint(0, 59)))
            lines = tuple((line.sender, line.text) for line in item.lines)
            out.append(WrittenSession(contact=item.contact_id, start=at, lines=lines, about=about))
        else:
            at = datetime.combine(day, time(rng.randint(8, 19), rng.choice((0, 15, 30, 45))))
            end = at + timedelta(minutes=item.minutes)
            out.append(CalendarEvent(id="", title=item.title, start=at, end=end, location=item.location,
                                     notes=item.notes, kind=batch.kind, about=about))  # fmt: skip
    return out
