"""Stage 4b: filler and decoys around the evidence.

Filler is ordinary life with the persona's contacts; decoys are messages and events about someone else
that touch a persona's fact (a cue) while naming that person. The templates yield endless streams of
both (`template_filler`, with greetings and sign-offs for evidence sessions, and `template_decoys`),
from which `logs.assemble` takes until the targets are met.

A model writes them in batches (`model_filler`, `model_decoys`; `batch_plan` says how many would about
reach the targets). An item is kept only when it passes the same lexical checks as the templates' (no
hidden fact's label or synonym; filler carries no fact's cue; a decoy passes `verify.check_decoys`), and
a batch with no usable item is an unusable answer. Kept items are placed at random times in the window
(`place`) and taken before the templates'.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hippocamp.schema.pcontext import PCONTEXT_VERSION, CalendarEvent, Cluster, Fact, Message
from hippocamp.synth.personas.banks import phrase_bank
from hippocamp.synth.personas.clock import agree, clock_text, dated_slots, fits_date
from hippocamp.synth.personas.facts import spec_of
from hippocamp.synth.personas.fragments import LogContext, fill, random_time
from hippocamp.synth.personas.model import ModelStageError, ask
from hippocamp.synth.personas.seeds import marginals
from hippocamp.synth.personas.verify import FIRST_PERSON, check_decoys, find_leaks, has_term, normalize, tokens

__all__ = [
    "ITEMS_PER_BATCH",
    "Session",
    "WrittenBatch",
    "WrittenItem",
    "WrittenSession",
    "batch_plan",
    "model_decoys",
    "model_filler",
    "place",
    "template_decoys",
    "template_filler",
    "third_people",
    "written_items",
]

#: model-written filler and decoys: items asked per batch, a rough size of one item in tokens (to plan
#: how many batches reach the target), and at most this many batches of each kind per persona
ITEMS_PER_BATCH = 8
TOKENS_PER_ITEM = 20
MAX_BATCHES = 16


@dataclass
class Session:
    """A messenger session with one contact as `logs.assemble` builds it (evidence, filler or decoy lines),
    and whether a greeting or sign-off has been added around it."""

    contact: str
    start: datetime
    #: (sender: "me" or contact id, text, kind, fragment id, cluster id, about)
    lines: list[tuple[str, str, str, str | None, str | None, str | None]]
    has_before: bool = False
    has_after: bool = False


@dataclass(frozen=True)
class WrittenSession:
    """A filler or decoy messenger session written elsewhere (by a model) and placed in time:
    ``lines`` are (sender: "me" or a contact id, text); ``about`` names a decoy's other person."""

    contact: str
    start: datetime
    lines: tuple[tuple[str, str], ...]
    about: str | None = None


def written_items(kind: str, items: Iterable[WrittenSession | CalendarEvent]) -> Iterator[Session | CalendarEvent]:
    """Items written elsewhere (a model's, placed in time) as assembly takes them, marked ``kind``."""
    for item in items:
        if isinstance(item, CalendarEvent):
            yield item.model_copy(update={"kind": kind})
        else:
            lines = [(sender, text, kind, None, None, item.about) for sender, text in item.lines]
            yield Session(item.contact, item.start, lines)


def third_people(ctx: LogContext, rng: random.Random) -> list[tuple[str, str]]:
    """Up to 12 (first name, possessive) of people who are neither the persona nor a contact."""
    data = marginals()
    taken = set(ctx.persona.seed.name.split()) | {w for c in ctx.circle.contacts for w in c.name.split()}
    people = [(n, "her") for n in data["first_names"]["female"] if n not in taken]
    people += [(n, "his") for n in data["first_names"]["male"] if n not in taken]
    rng.shuffle(people)
    return people[:12]


def template_decoys(ctx: LogContext, rng: random.Random) -> Iterator[Session | CalendarEvent]:
    """Endless template decoys: a fact's cue in a message or event about a third person, who is named."""
    people = third_people(ctx, rng)
    facts = list(ctx.facts)
    contacts = [c.id for c in ctx.circle.contacts] or ["c0"]
    while True:
        fact = rng.choice(facts)
        other, pos = rng.choice(people)
        spec = spec_of(fact)
        plain_cues = [c for c in fact.cues if not set(normalize(c).split()) & FIRST_PERSON]
        cue = rng.choice(plain_cues) if plain_cues else fact.category
        titles = [t for t, _ in spec.cals if not set(normalize(t).split()) & FIRST_PERSON] if spec else []
        if rng.random() < 0.6 or not (titles or plain_cues):
            if spec and spec.decoys:
                text = fill(rng.choice(spec.decoys), rng, other=other, pos=pos)
            else:
                text = rng.choice(
                    (f"{other} has been dealing with {cue} stuff lately", f"{other} keeps talking about {cue}")
                )
            sender = rng.choice(contacts)
            lines = [(sender, text, "decoy", None, None, other)]
            if rng.random() < 0.5:
                lines.append(("me", rng.choice(phrase_bank().neutral_replies), "decoy", None, None, other))
            yield Session(sender, random_time(rng, (ctx.start, ctx.end), "messenger"), lines)
        else:
            start = random_time(rng, (ctx.start, ctx.end), "calendar")
            own = clock_text(start)
            title = f"{other}'s {fill(rng.choice(titles), rng, time=own).lower()}" if titles else f"{other}'s {cue}"
            notes = rng.choice((f"{other} asked for a ride", f"help {other} out", f"for {other}", ""))
            start = agree(start, title, notes, (ctx.start, ctx.end))
            yield CalendarEvent(
                id="",
                title=title,
                start=start,
                end=start + timedelta(minutes=60),
                notes=notes,
                kind="decoy",
                about=other,
            )


def _contact_name(ctx: LogContext, cid: str) -> str:
    for c in ctx.circle.contacts:
        if c.id == cid:
            return c.name.split()[0]
    return "you"


#: draws of a template before a line already sent in this persona is accepted again
_TRIES = 8


def _key(text: str) -> str:
    """A line as a reader compares lines: case, spacing and trailing punctuation ignored."""
    return " ".join(text.casefold().split()).rstrip(".!?~ ")


class _Writer:
    """Fills chat templates for one persona: never a line that holds a fact's label, synonym or cue, dates
    true to the send time (`fits_date`), and a line already sent only when ``_TRIES`` draws found no other."""

    def __init__(self, ctx: LogContext, rng: random.Random) -> None:
        self.rng = rng
        terms = {normalize(t).strip() for f in ctx.facts for t in (f.label, *f.synonyms, *f.cues)}
        self.terms = sorted(t for t in terms if t)
        self.used: set[str] = set()

    def clean(self, text: str) -> bool:
        norm = normalize(text)
        return not any(f" {t} " in norm for t in self.terms)

    def line(self, templates: Iterable[str], at: datetime, **given: str) -> str | None:
        """A filled line from ``templates`` (None when none fits the date or every draw names a fact)."""
        fitting = [t for t in templates if fits_date(t, at)]
        if not fitting:
            return None
        again: str | None = None
        for _ in range(_TRIES):
            text = fill(self.rng.choice(fitting), self.rng, **(dated_slots(at, self.rng) | given)).strip()
            if not text or not fits_date(text, at) or not self.clean(text):
                continue
            if _key(text) not in self.used:
                self.used.add(_key(text))
                return text
            again = again or text
        return again


def _chat(
    writer: _Writer, at: datetime, contact: str, names: dict[str, str]
) -> list[tuple[str, str, str, str | None, str | None, str | None]]:
    """A filler chat of one or two exchanges: an opening line, its reply, maybe the opener's follow-up.
    A second topic is opened by whoever spoke last, so no reply answers a line it was not written for.
    ``names``: sender -> the first name of the one that sender writes to."""
    rng = writer.rng
    exchanges = phrase_bank().exchanges
    sender = "me" if rng.random() < 0.6 else contact
    lines: list[tuple[str, str]] = []
    for _ in range(1 if rng.random() < 0.7 else 2):
        ex = rng.choice(exchanges)
        other = contact if sender == "me" else "me"
        opener = writer.line(ex.open, at, name=names[sender])
        reply = writer.line(ex.reply, at, name=names[other]) if opener else None
        if opener is None or reply is None:
            continue
        lines += [(sender, opener), (other, reply)]
        if ex.follow and rng.random() < 0.5 and (follow := writer.line(ex.follow, at, name=names[sender])):
            lines.append((sender, follow))
        sender = lines[-1][0]
    return [(who, text, "filler", None, None, None) for who, text in lines]


def template_filler(ctx: LogContext, rng: random.Random, evidence: list[Session]) -> Iterator[object]:
    """Endless template filler: chats with contacts built from the bank's exchanges (every reply written
    for its message), everyday events, and greetings or sign-offs for the ``evidence`` sessions (as
    ("before" or "after", session, text)). Lines are drawn so that a persona rarely sends one twice."""
    phrases = phrase_bank()
    contacts = [c.id for c in ctx.circle.contacts] or ["c0"]
    me = ctx.persona.seed.name.split()[0] if ctx.persona.seed.name.split() else "you"
    writer = _Writer(ctx, rng)
    while True:
        r = rng.random()
        open_sessions = [s for s in evidence if not (s.has_before and s.has_after)]
        if r < 0.2 and open_sessions:
            s = rng.choice(open_sessions)
            if not s.has_before:  # the contact opens: a greeting to the persona
                text = writer.line(phrases.hellos, s.start, name=me)
                if text:
                    yield ("before", s, text)
            else:  # the persona closes
                text = writer.line(phrases.signoffs, s.start, name=_contact_name(ctx, s.contact))
                if text:
                    yield ("after", s, text)
        elif r < 0.7:
            contact = rng.choice(contacts)
            at = random_time(rng, (ctx.start, ctx.end), "messenger")
            lines = _chat(writer, at, contact, {"me": _contact_name(ctx, contact), contact: me})
            if lines:
                yield Session(contact, at, lines)
        else:
            title, notes = rng.choice(phrases.filler_events)
            name = _contact_name(ctx, rng.choice(contacts))
            start = random_time(rng, (ctx.start, ctx.end), "calendar")
            own = clock_text(start)
            title = fill(title, rng, contact=name, time=own).capitalize()
            notes = fill(notes, rng, contact=name, time=own)
            if not writer.clean(f"{title}\n{notes}"):  # a slot's word that names or cues a fact
                continue
            start = agree(start, title, notes, (ctx.start, ctx.end))
            yield CalendarEvent(
                id="",
                title=title,
                start=start,
                end=start + timedelta(minutes=rng.choice((30, 60, 90))),
                notes=notes,
                kind="filler",
            )


# ------------------------------------------------------------------------------------------ model half


def _evidence_tokens(clusters: list[Cluster]) -> int:
    return sum(
        sum(tokens(line.text) for line in f.lines) + tokens(f.title) + tokens(f.notes) + tokens(f.location)
        for c in clusters
        if c.outcome == "verified"
        for f in c.fragments
    )


def batch_plan(ctx: LogContext, clusters: list[Cluster]) -> list[tuple[str, str, int]]:
    """(batch id, kind, index) of the model-written batches that would about reach the targets."""
    target = ctx.filler_ratio * _evidence_tokens(clusters)
    decoy = ctx.decoy_share * target
    per = ITEMS_PER_BATCH * TOKENS_PER_ITEM
    n_decoy = min(MAX_BATCHES, math.ceil(decoy / per))
    n_plain = min(MAX_BATCHES, math.ceil((target - decoy) / per))
    return [(f"decoy-{i:02d}", "decoy", i) for i in range(1, n_decoy + 1)] + [
        (f"filler-{i:02d}", "filler", i) for i in range(1, n_plain + 1)
    ]


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
    return [f.id for f in facts if any(has_term(text, c) for c in f.cues)]


def _check_filler(item: WrittenItem, ctx: LogContext) -> str | None:
    for text in item.texts():
        leaks = find_leaks(text, ctx.facts)
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
    check = check_decoys(items, ctx.facts, ctx.persona.seed.name)
    if not check.passed:
        return check.problems[0]
    cued = [t for t in item.texts() if _cued(t, ctx.facts)]
    if not cued:
        return "carries no cue of a hidden fact: not a decoy"
    for text in cued:  # stricter than sentence by sentence: "Mr. Okafor" must not split a cue from "I"
        if set(normalize(text).split()) & FIRST_PERSON:
            return "a line with a cue is in the first person: it would tie the cue to the persona"
        if not has_term(text, item.about):
            return f"a line with a cue does not name {item.about!r}"
    return None


async def _batch(model: Any, stage: str, kind: str, ctx: LogContext, batch_id: str, payload: dict[str, Any],
                   check: Any) -> WrittenBatch:  # fmt: skip
    parsed = await ask(model, stage, payload, _WItems)
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


async def model_filler(model: Any, ctx: LogContext, batch_id: str, index: int, count: int) -> WrittenBatch:
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
    return await _batch(model, "filler", "filler", ctx, batch_id, payload, lambda it: _check_filler(it, ctx))


async def model_decoys(
    model: Any, ctx: LogContext, batch_id: str, index: int, count: int, people: list[str]
) -> WrittenBatch:
    """One batch of decoys: items that use a hidden fact's cue about one of ``people``, never the persona."""
    facts = [f for f in ctx.facts if f.cues]
    rng = random.Random(f"{ctx.persona.id}:{batch_id}")
    offered = rng.sample(facts, min(4, len(facts)))
    plain = [c for f in offered for c in f.cues if not set(normalize(c).split()) & FIRST_PERSON]
    payload = {
        "batch": index,
        "people": people,
        "contacts": [{"id": c.id, "name": c.name} for c in ctx.circle.contacts],
        "cues": plain,
        "count": count,
        "avoid": _avoid(offered, limit=20),
    }
    allowed = {p.lower() for p in people}
    return await _batch(model, "decoys", "decoy", ctx, batch_id, payload, lambda it: _check_decoy(it, ctx, allowed))


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
