"""Stage 4c: the app logs. Verified fragments, filler and decoys in time order as ``messenger.jsonl`` and
``calendar.jsonl``, and the calendar as iCalendar.

Assembly adds filler until filler tokens reach ``filler_ratio`` times the evidence tokens, the
first ``decoy_share`` of them as decoys. Filler is added greedily, item by item, stopping at the item
that would take the total further from the target than leaving it out. Filler and decoys written
elsewhere (a model's, already checked and placed in time) are taken first; the templates top them up.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from datetime import timedelta
from itertools import chain

from hippocamp.schema.pcontext import CalendarEvent, Cluster, Message
from hippocamp.synth.personas.filler import Session, WrittenSession, template_decoys, template_filler, written_items
from hippocamp.synth.personas.fragments import LogContext
from hippocamp.synth.personas.verify import tokens

__all__ = ["assemble", "render_ics"]


def _size(item: object) -> int:
    if isinstance(item, Session):
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
    sessions: list[Session] = []
    events: list[CalendarEvent] = []
    for cluster in clusters:
        if cluster.outcome != "verified":
            continue
        for frag in cluster.fragments:
            if frag.app == "messenger":
                contact = frag.contact_ids[0] if frag.contact_ids else "c0"
                lines = [(ln.sender, ln.text, "evidence", frag.id, cluster.id, None) for ln in frag.lines]
                sessions.append(Session(contact, frag.at, lines))
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
    decoy_source = chain(written_items("decoy", written_decoys), template_decoys(ctx, rng))
    decoys = _greedy(decoy_target, decoy_source) if decoy_target > 0 else []
    decoy_tokens = sum(_size(x) for x in decoys)
    filler_source = chain(written_items("filler", written_filler), template_filler(ctx, rng, evidence_sessions))
    plain = _greedy(filler_target - decoy_tokens, filler_source) if filler_target > 0 else []
    for item in [*decoys, *plain]:
        if isinstance(item, Session):
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


def _messages(ctx: LogContext, sessions: list[Session], rng: random.Random) -> list[Message]:
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
