"""Stage 4: app logs. Facts -> clusters of 2-3 -> 4-5 fragments each -> verified -> assembled with filler.

Clusters group facts of one theme (health, money, home, ...) in runs of two or three. Each cluster
gets four or five fragments, messenger exchanges and calendar events, so that every fact has at least
two (one per app, plus extras), each implying the fact through a behavior (a cue) without its label;
a fragment may carry two facts of the cluster when their validity intervals overlap. A fragment of
a prior state lies before the change, one of the current state after it.

Assembly adds filler until filler tokens reach ``filler_ratio`` times the evidence tokens, the
first ``decoy_share`` of them as decoys: messages and events about someone else that touch a
persona's fact (a cue) while naming that person. Filler is added greedily, item by item, stopping
at the item that would take the total further from the target than leaving it out. Filler and decoys
written elsewhere (a model's, already checked and placed in time) are taken first; the templates top
them up.
"""

from __future__ import annotations

import random
import string
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from itertools import chain

from hippocamp.pcontext.banks import fact_bank, phrase_bank
from hippocamp.pcontext.facts import spec_of
from hippocamp.pcontext.seeds import marginals
from hippocamp.pcontext.verify import FIRST_PERSON, find_leaks, lexical_recovery, normalize, tokens
from hippocamp.schema.pcontext import (
    CalendarEvent,
    Circle,
    Cluster,
    Fact,
    Fragment,
    FragmentLine,
    Message,
    Persona,
    VerifierAttempt,
)
from hippocamp.synth.world import rng_for

__all__ = [
    "LogContext",
    "WrittenSession",
    "assemble",
    "fill",
    "fragment_window",
    "lexical_verify",
    "make_clusters",
    "render_ics",
    "template_fragments",
    "third_people",
]


class _Slots(dict[str, str]):
    def __init__(self, rng: random.Random, given: dict[str, str]):
        super().__init__(given)
        self.rng = rng

    def __missing__(self, key: str) -> str:
        words = phrase_bank().words
        return self.rng.choice(words[key]) if key in words else "{" + key + "}"


def fill(template: str, rng: random.Random, **given: str) -> str:
    """``template`` with its slots filled: given values first, random words for the rest."""
    return string.Formatter().vformat(template, (), _Slots(rng, given))


@dataclass
class LogContext:
    """What stage 4 needs about one persona."""

    seed: int
    persona: Persona
    facts: list[Fact]
    circle: Circle
    filler_ratio: float
    decoy_share: float
    by_id: dict[str, Fact] = field(init=False)

    def __post_init__(self) -> None:
        self.by_id = {f.id: f for f in self.facts}

    @property
    def start(self) -> date:
        return self.persona.window_start

    @property
    def end(self) -> date:
        return self.persona.window_start + timedelta(days=self.persona.window_days)

    def rng(self, *parts: object) -> random.Random:
        return rng_for(self.seed, self.persona.id, *parts)


def make_clusters(ctx: LogContext) -> list[tuple[str, str, list[str]]]:
    """(cluster id, theme, fact ids): facts of one theme together, in runs of two or three."""
    rng = ctx.rng("clusters")
    themes: dict[str, list[Fact]] = {}
    for fact in ctx.facts:
        themes.setdefault(fact_bank().theme[fact.category], []).append(fact)
    ordered: list[tuple[str, Fact]] = []
    for theme in sorted(themes):
        group = list(themes[theme])
        rng.shuffle(group)
        ordered += [(theme, f) for f in group]
    out = []
    i = 0
    while i < len(ordered):
        rest = len(ordered) - i
        size = rest if rest <= 3 else 2 if rest == 4 else rng.choice((2, 3))
        chunk = ordered[i : i + size]
        out.append((f"c{len(out) + 1:02d}", chunk[0][0], [f.id for _, f in chunk]))
        i += size
    return out


def fragment_window(facts: list[Fact], start: date, end: date) -> tuple[date, date] | None:
    """The days (half-open) on which all ``facts`` hold inside the window, or None."""
    lo = max([start, *(f.valid_from for f in facts if f.valid_from)])
    hi = min([end, *(f.valid_to for f in facts if f.valid_to)])
    return (lo, hi) if lo < hi else None


def _at(rng: random.Random, window: tuple[date, date], app: str) -> datetime:
    day = window[0] + timedelta(days=rng.randrange((window[1] - window[0]).days))
    if app == "calendar":
        return datetime.combine(day, time(rng.randint(8, 18), rng.choice((0, 15, 30, 45))))
    return datetime.combine(day, time(rng.randint(7, 20), rng.randint(0, 59)))


def _plan_slots(facts: list[Fact], rng: random.Random, start: date, end: date) -> list[list[tuple[Fact, str]]]:
    """Groups of (fact, app) pieces, one group per fragment: 4-5 fragments, each fact on both apps."""
    k = len(facts)
    n = rng.choice((4, 5))
    pieces: list[list[tuple[Fact, str]]] = [[(f, "messenger")] for f in facts] + [[(f, "calendar")] for f in facts]
    for _ in range(max(0, n - 2 * k)):
        pieces.append([(rng.choice(facts), "messenger")])
    merges = max(0, 2 * k - n)
    for _ in range(merges):
        done = False
        order = list(range(len(pieces)))
        rng.shuffle(order)
        for a in order:
            for b in order:
                pa, pb = pieces[a], pieces[b]
                if a == b or len(pa) > 1 or len(pb) > 1 or pa[0][1] != pb[0][1] or pa[0][0].id == pb[0][0].id:
                    continue
                if fragment_window([pa[0][0], pb[0][0]], start, end) is None:
                    continue
                pieces[a] = pa + pb
                del pieces[b]
                done = True
                break
            if done:
                break
    rng.shuffle(pieces)
    return pieces


def _contact_for(ctx: LogContext, facts: list[Fact], rng: random.Random) -> str:
    ids = {f.id for f in facts}
    linked = [c.id for c in ctx.circle.contacts if ids & set(c.fact_ids)]
    pool = linked or [c.id for c in ctx.circle.contacts]
    return rng.choice(pool) if pool else "c0"


def _variant(options: tuple, used: set[int], rng: random.Random) -> int:  # type: ignore[type-arg]
    fresh = [i for i in range(len(options)) if i not in used] or list(range(len(options)))
    i = rng.choice(fresh)
    used.add(i)
    return i


def template_fragments(ctx: LogContext, cluster_id: str, fact_ids: list[str], attempt: int) -> list[Fragment]:
    """The template engine's fragments of one cluster (a new wording per attempt)."""
    rng = ctx.rng("fragments", cluster_id, attempt)
    facts = [ctx.by_id[f] for f in fact_ids]
    used: dict[tuple[str, str], set[int]] = {}
    out = []
    for j, group in enumerate(_plan_slots(facts, rng, ctx.start, ctx.end)):
        group_facts = [f for f, _ in group]
        app = group[0][1]
        window = fragment_window(group_facts, ctx.start, ctx.end)
        if window is None:
            continue
        at = _at(rng, window, app)
        fid = f"{ctx.persona.id}-{cluster_id}-f{j + 1}"
        ids = [f.id for f in group_facts]
        if app == "messenger":
            contact = _contact_for(ctx, group_facts, rng)
            lines = []
            for fact in group_facts:
                spec = spec_of(fact)
                msgs = spec.msgs if spec else tuple(f"dealing with the {c} thing again" for c in fact.cues[:3])
                i = _variant(msgs, used.setdefault((fact.id, "m"), set()), rng)
                lines.append(FragmentLine(sender="me", text=rng.choice(phrase_bank().openers) + fill(msgs[i], rng)))
            if rng.random() < 0.6:
                lines.append(FragmentLine(sender=contact, text=rng.choice(phrase_bank().replies)))
            out.append(
                Fragment(
                    id=fid,
                    cluster_id=cluster_id,
                    app="messenger",
                    fact_ids=ids,
                    at=at,
                    contact_ids=[contact],
                    lines=lines,
                )
            )
        else:
            parts = []
            for fact in group_facts:
                spec = spec_of(fact)
                cals = spec.cals if spec else tuple((c.capitalize(), "") for c in fact.cues[:2])
                i = _variant(cals, used.setdefault((fact.id, "c"), set()), rng)
                parts.append((fill(cals[i][0], rng), fill(cals[i][1], rng)))
            title, notes = parts[0]
            for t, n in parts[1:]:
                notes = "; ".join(x for x in (notes, f"{t}: {n}" if n else t) if x)
            attendees = [_contact_for(ctx, group_facts, rng)] if rng.random() < 0.3 else []
            out.append(
                Fragment(
                    id=fid,
                    cluster_id=cluster_id,
                    app="calendar",
                    fact_ids=ids,
                    at=at,
                    contact_ids=attendees,
                    title=title,
                    notes=notes,
                    minutes=rng.choice((30, 45, 60, 90)),
                )
            )
    return out


def lexical_verify(
    fragments: list[Fragment], cluster_facts: list[Fact], all_facts: list[Fact], attempt: int
) -> VerifierAttempt:
    """The offline verifier: recovers each fact from cues in two or more fragments, and finds no
    label or synonym of any of the persona's facts in the fragments."""
    recovered = lexical_recovery(fragments, cluster_facts)
    leaks = [f"{frag.id}: {fid}: {term!r}" for frag in fragments for fid, term in find_leaks(frag.text(), all_facts)]
    passed = not leaks and all(v >= 1.0 for v in recovered.values())
    return VerifierAttempt(attempt=attempt, recovered=recovered, leaks=leaks, passed=passed, verifier="lexical")


# ----------------------------------------------------------------------------------------------- assembly


@dataclass
class _Session:
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


def _written(kind: str, items: Iterable[WrittenSession | CalendarEvent]) -> Iterator[_Session | CalendarEvent]:
    for item in items:
        if isinstance(item, CalendarEvent):
            yield item.model_copy(update={"kind": kind})
        else:
            lines = [(sender, text, kind, None, None, item.about) for sender, text in item.lines]
            yield _Session(item.contact, item.start, lines)


def third_people(ctx: LogContext, rng: random.Random) -> list[tuple[str, str]]:
    """Up to 12 (first name, possessive) of people who are neither the persona nor a contact."""
    data = marginals()
    taken = set(ctx.persona.seed.name.split()) | {w for c in ctx.circle.contacts for w in c.name.split()}
    people = [(n, "her") for n in data["first_names"]["female"] if n not in taken]
    people += [(n, "his") for n in data["first_names"]["male"] if n not in taken]
    rng.shuffle(people)
    return people[:12]


def _decoy_items(ctx: LogContext, rng: random.Random) -> Iterator[_Session | CalendarEvent]:
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
                lines.append(("me", rng.choice(phrase_bank().filler_replies), "decoy", None, None, other))
            yield _Session(sender, _at(rng, (ctx.start, ctx.end), "messenger"), lines)
        else:
            title = f"{other}'s {fill(rng.choice(titles), rng).lower()}" if titles else f"{other}'s {cue}"
            notes = rng.choice((f"{other} asked for a ride", f"help {other} out", f"for {other}", ""))
            start = _at(rng, (ctx.start, ctx.end), "calendar")
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


def _filler_items(ctx: LogContext, rng: random.Random, evidence: list[_Session]) -> Iterator[object]:
    phrases = phrase_bank()
    contacts = [c.id for c in ctx.circle.contacts] or ["c0"]
    while True:
        r = rng.random()
        open_sessions = [s for s in evidence if not (s.has_before and s.has_after)]
        if r < 0.2 and open_sessions:
            s = rng.choice(open_sessions)
            if not s.has_before:
                yield ("before", s, rng.choice(("hey", "hi!", "you around?", "quick q", "morning!", "ok so")))
            else:
                yield ("after", s, rng.choice(phrases.signoffs))
        elif r < 0.7:
            contact = rng.choice(contacts)
            name = _contact_name(ctx, contact)
            lines: list[tuple[str, str, str, str | None, str | None, str | None]] = []
            first_is_me = rng.random() < 0.6
            for k in range(rng.randint(2, 4)):
                me = (k % 2 == 0) == first_is_me
                if me or k == 0:
                    text = fill(rng.choice(phrases.filler_lines), rng, contact=name)
                else:
                    text = rng.choice(phrases.filler_replies)
                lines.append(("me" if me else contact, text, "filler", None, None, None))
            yield _Session(contact, _at(rng, (ctx.start, ctx.end), "messenger"), lines)
        else:
            title, notes = rng.choice(phrases.filler_events)
            name = _contact_name(ctx, rng.choice(contacts))
            start = _at(rng, (ctx.start, ctx.end), "calendar")
            yield CalendarEvent(
                id="",
                title=fill(title, rng, contact=name).capitalize(),
                start=start,
                end=start + timedelta(minutes=rng.choice((30, 60, 90))),
                notes=fill(notes, rng, contact=name),
                kind="filler",
            )


def _size(item: object) -> int:
    if isinstance(item, _Session):
        return sum(tokens(t) for _, t, *_ in item.lines)
    if isinstance(item, CalendarEvent):
        return tokens(item.title) + tokens(item.notes) + tokens(item.location)
    assert isinstance(item, tuple)
    return tokens(item[2])


def _greedy(target: float, source: Iterator[object], limit: int = 100_000) -> list[object]:
    """Items from ``source`` while each brings the running total closer to ``target``."""
    chosen: list[object] = []
    total = 0
    for _ in range(limit):
        if total >= target:
            break
        item = next(source)
        size = _size(item)
        if size == 0:
            continue
        if total + size > target and (total + size - target) > (target - total):
            break
        if isinstance(item, tuple):  # a greeting or sign-off for an evidence session
            where, session, _ = item
            if (where == "before" and session.has_before) or (where == "after" and session.has_after):
                continue
            setattr(session, "has_before" if where == "before" else "has_after", True)
        chosen.append(item)
        total += size
    return chosen


def assemble(
    ctx: LogContext,
    clusters: list[Cluster],
    written_decoys: Sequence[WrittenSession | CalendarEvent] = (),
    written_filler: Sequence[WrittenSession | CalendarEvent] = (),
) -> tuple[list[Message], list[CalendarEvent]]:
    """The final messenger and calendar logs: verified fragments, filler and decoys, in time order.
    Written (model) decoys and filler are used first, in order; the templates top them up to the targets."""
    rng = ctx.rng("assembly")
    sessions: list[_Session] = []
    events: list[CalendarEvent] = []
    for cluster in clusters:
        if cluster.outcome != "verified":
            continue
        for frag in cluster.fragments:
            if frag.app == "messenger":
                contact = frag.contact_ids[0] if frag.contact_ids else "c0"
                lines = [(ln.sender, ln.text, "evidence", frag.id, cluster.id, None) for ln in frag.lines]
                sessions.append(_Session(contact, frag.at, lines))
            else:
                events.append(
                    CalendarEvent(
                        id="",
                        title=frag.title,
                        start=frag.at,
                        end=frag.at + timedelta(minutes=frag.minutes or 60),
                        location=frag.location,
                        attendees=[_full_name(ctx, c) for c in frag.contact_ids],
                        notes=frag.notes,
                        kind="evidence",
                        fragment_id=frag.id,
                        cluster_id=cluster.id,
                    )
                )
    evidence_sessions = list(sessions)
    evidence_tokens = sum(_size(s) for s in sessions) + sum(_size(e) for e in events)
    filler_target = ctx.filler_ratio * evidence_tokens
    decoy_target = ctx.decoy_share * filler_target
    decoy_source = chain(_written("decoy", written_decoys), _decoy_items(ctx, rng))
    decoys = _greedy(decoy_target, decoy_source) if decoy_target > 0 else []
    decoy_tokens = sum(_size(x) for x in decoys)
    filler_source = chain(_written("filler", written_filler), _filler_items(ctx, rng, evidence_sessions))
    plain = _greedy(filler_target - decoy_tokens, filler_source) if filler_target > 0 else []
    for item in [*decoys, *plain]:
        if isinstance(item, _Session):
            sessions.append(item)
        elif isinstance(item, CalendarEvent):
            events.append(item)
        elif isinstance(item, tuple):
            where, session, text = item
            line = ("me" if where == "after" else session.contact, text, "filler", None, None, None)
            if where == "before":
                session.lines.insert(0, line)
            else:
                session.lines.append(line)
    return _messages(ctx, sessions, rng), _events(events)


def _full_name(ctx: LogContext, cid: str) -> str:
    for c in ctx.circle.contacts:
        if c.id == cid:
            return c.name
    return cid


def _messages(ctx: LogContext, sessions: list[_Session], rng: random.Random) -> list[Message]:
    me = ctx.persona.seed.name
    out: list[Message] = []
    ordered = sorted(enumerate(sessions), key=lambda p: (p[1].start, p[0]))
    for s_index, (_, session) in enumerate(ordered, start=1):
        other = _full_name(ctx, session.contact)
        when = session.start
        for sender, text, kind, frag, cluster, about in session.lines:
            from_me = sender == "me"
            out.append(
                Message(
                    id="",
                    session_id=f"s{s_index:04d}",
                    sender=me if from_me else _full_name(ctx, sender),
                    recipients=[other] if from_me else [me],
                    timestamp=when,
                    text=text,
                    kind=kind,  # type: ignore[arg-type]
                    fragment_id=frag,
                    cluster_id=cluster,
                    about=about,
                )
            )
            when += timedelta(minutes=rng.randint(1, 4))
    return [m.model_copy(update={"id": f"m{i:05d}"}) for i, m in enumerate(out, start=1)]


def _events(events: list[CalendarEvent]) -> list[CalendarEvent]:
    ordered = sorted(enumerate(events), key=lambda p: (p[1].start, p[0]))
    return [e.model_copy(update={"id": f"e{i:04d}"}) for i, (_, e) in enumerate(ordered, start=1)]


def _ics_text(value: str) -> str:
    return value.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,").replace("\n", "\\n")


def _fold(line: str) -> str:
    raw = line.encode()
    if len(raw) <= 75:
        return line
    parts, cur = [], b""
    for ch in line:
        b = ch.encode()
        if len(cur) + len(b) > (75 if not parts else 74):
            parts.append(cur.decode())
            cur = b""
        cur += b
    parts.append(cur.decode())
    return "\r\n ".join(parts)


def render_ics(events: list[CalendarEvent], persona_id: str, name: str) -> str:
    """The calendar as iCalendar (RFC 5545, floating local times); the kind of an event is not shown."""
    fmt = "%Y%m%dT%H%M%S"
    lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//hippocamp//pcontext//EN", f"X-WR-CALNAME:{_ics_text(name)}"]
    for e in events:
        lines += [
            "BEGIN:VEVENT",
            f"UID:{e.id}@{persona_id}.pcontext",
            f"DTSTAMP:{e.start.strftime(fmt)}",
            f"DTSTART:{e.start.strftime(fmt)}",
            f"DTEND:{e.end.strftime(fmt)}",
            f"SUMMARY:{_ics_text(e.title)}",
        ]
        if e.location:
            lines.append(f"LOCATION:{_ics_text(e.location)}")
        if e.notes:
            lines.append(f"DESCRIPTION:{_ics_text(e.notes)}")
        for a in e.attendees:
            lines.append(f"ATTENDEE;CN={_ics_text(a)}:mailto:{a.lower().replace(' ', '.')}@example.invalid")
        lines.append("END:VEVENT")
    lines.append("END:VCALENDAR")
    return "\r\n".join(_fold(x) for x in lines) + "\r\n"
