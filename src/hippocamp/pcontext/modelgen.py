"""Model mode: each stage asks a `hippocamp.models.Model` for schema-validated JSON, one prompt file per
stage (``prompts/<stage>.md``, first line ``# stage: <name>``). Every function raises on an outage or
an unusable answer; the pipeline then uses the template engine for that stage and records why.
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

from pydantic import BaseModel, Field

from hippocamp.pcontext import audit as audit_mod
from hippocamp.pcontext.cases import CaseContext
from hippocamp.pcontext.interview import TOPIC_OF, question_list
from hippocamp.pcontext.logs import LogContext, fragment_window
from hippocamp.pcontext.verify import normalize
from hippocamp.schema.pcontext import (
    AuditFinding,
    AuditReport,
    Case,
    Circle,
    Contact,
    Fact,
    Fragment,
    FragmentLine,
    InterviewTurn,
    Persona,
    Seed,
    VerifierAttempt,
)

__all__ = ["audit", "cases", "changes", "circle", "distill", "fragments", "interview", "prompt", "verify_cluster"]

Category = Literal[
    "background", "family", "relationships", "work", "education", "health", "diet", "fitness", "finances",
    "housing", "transportation", "routine", "hobby", "values", "social_views", "goals", "personality", "constraints",
]  # fmt: skip
#: confidence at which the verifier's inference counts as recovered
CONFIDENT = 0.7


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
    gen = await model.generate(messages, response_format=fmt, temperature=0.0)
    return gen.parsed


# ------------------------------------------------------------------------------------------- interview


class _Answer(BaseModel):
    id: str
    answer: str = Field(min_length=1)


class _Answers(BaseModel):
    answers: list[_Answer]


async def interview(model: Any, seed: Seed) -> list[InterviewTurn]:
    """The 108 questions, asked topic by topic (concurrently), answered in the persona's voice."""
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

    answers: dict[str, str] = {}
    for got in await asyncio.gather(*(one(t) for t in topics)):
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


async def distill(model: Any, seed: Seed, turns: list[InterviewTurn]) -> tuple[list[Fact], dict[str, _Change]]:
    """Hidden facts from the interview (sources that do not exist become the first turn of the topic),
    and the changes the model proposed, by prior fact id, for `changes` to date."""
    payload = {"seed": seed.model_dump(exclude={"version"}), "interview": [t.model_dump() for t in turns]}
    parsed = await _ask(model, "facts", payload, _Facts)
    if len(parsed.facts) < 4:
        raise ModelStageError(f"facts: only {len(parsed.facts)} facts; need at least 4")
    ids = {t.id for t in turns}
    first_of = {}
    for t in turns:
        first_of.setdefault(t.topic, t.id)
    out = []
    successors: dict[str, _Change] = {}
    for i, f in enumerate(parsed.facts, start=1):
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
