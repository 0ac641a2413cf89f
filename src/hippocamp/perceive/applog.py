"""App logs as segments: a P-ContextBench persona's messenger and calendar, read and rendered.

`read_persona(dir)` reads a persona folder (``messenger.jsonl``, ``calendar.jsonl``, ``cases.jsonl``,
and ``persona.json`` or ``source.json`` for the name), every message, event and case validated by its
model (`hippocamp.schema.pcontext`; an error names the file, line, item and field); `persona_dirs(root)`
finds the persona folders of a set. Every message and calendar event becomes one `Segment` under a
virtual path ``<persona>/messenger/<session>.txt`` or ``<persona>/calendar/<YYYY-MM>.txt``, with the
locator ``{"unit": "message", "position": {"id": ...}}`` (``"event"`` for an event) and ``meta`` holding
the time, session, sender, recipients / attendees and ``time_refs``: relative time ("yesterday", "next
week") resolved against the item's own timestamp (`hippocamp.text.timeref`) and also written beside the
text, because a small model copies "yesterday" instead of computing the date. `full_context` renders all
of a persona's logs as one prompt (the full-context regime).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hippocamp.schema.io import RecordsFileError, json_objects, read_json
from hippocamp.schema.locators import parse_locator
from hippocamp.schema.pcontext import CalendarEvent, Case, Message
from hippocamp.schema.segment import Segment
from hippocamp.text.timeref import annotate

__all__ = [
    "AppLogError",
    "PersonaLogs",
    "PersonaSetGold",
    "event_segment",
    "full_context",
    "message_segment",
    "persona_dirs",
    "persona_segments",
    "read_gold",
    "read_persona",
]


class AppLogError(ValueError):
    """A persona folder that cannot be read: names the file, the record and the field."""


@dataclass
class PersonaLogs:
    id: str
    dir: Path
    name: str
    messages: list[dict[str, Any]]
    events: list[dict[str, Any]]
    cases: list[dict[str, Any]]
    #: message / event id -> the fragment it belongs to (absent for filler); for scoring only
    fragment_of: dict[str, str] = field(default_factory=dict)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    try:
        return [item for _, item in json_objects(path)]
    except RecordsFileError as exc:
        raise AppLogError(str(exc)) from exc


def persona_dirs(root: Path) -> list[Path]:
    """``root`` itself when it holds ``cases.jsonl``, else its sub-folders that do."""
    if (root / "cases.jsonl").is_file():
        return [root]
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / "cases.jsonl").is_file())


def read_persona(d: Path) -> PersonaLogs:
    messages, events, cases = _jsonl(d / "messenger.jsonl"), _jsonl(d / "calendar.jsonl"), _jsonl(d / "cases.jsonl")
    pid = str(cases[0].get("persona_id")) if cases and cases[0].get("persona_id") else d.name
    name = pid
    for meta_file in ("persona.json", "source.json"):
        if not (d / meta_file).is_file():
            continue
        try:
            data = read_json(d / meta_file)
        except ValueError as exc:  # a JsonInputError: names the file, the line and why
            raise AppLogError(str(exc)) from None
        if not isinstance(data, dict):
            raise AppLogError(f"{d / meta_file}: a JSON object was expected, not {type(data).__name__}")
        name = str((data.get("seed") or {}).get("name") or data.get("name") or name)
        break
    for file, items, model, what in ((d / "messenger.jsonl", messages, Message, "message"),
                                     (d / "calendar.jsonl", events, CalendarEvent, "event"),
                                     (d / "cases.jsonl", cases, Case, "case")):  # fmt: skip
        for n, item in enumerate(items, start=1):
            try:
                model.model_validate(item)
            except ValidationError as exc:
                err = exc.errors()[0]
                field = ".".join(str(p) for p in err.get("loc", ()))
                raise AppLogError(f"{file}: line {n}, {what} {item.get('id')!r}, field {field!r}: "
                                  f"{err.get('msg')}") from None  # fmt: skip
    fragment_of = {str(x["id"]): str(x["fragment_id"]) for x in messages + events if x.get("fragment_id")}
    return PersonaLogs(pid, d, name, messages, events, cases, fragment_of)


def _when(value: str) -> datetime:
    return datetime.fromisoformat(str(value))


def _fmt(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M (%a)")


def message_segment(pid: str, m: dict[str, Any]) -> Segment:
    t = _when(m["timestamp"])
    body, refs = annotate(str(m.get("text", "")), t)
    recipients = [str(r) for r in m.get("recipients") or []]
    to = f" → {', '.join(recipients)}" if recipients else ""
    text = f"[{_fmt(t)}] message {m['id']} · {m.get('sender', '?')}{to}: {body}"
    meta = {"app": "messenger", "time": t.isoformat(), "session": str(m.get("session_id", "")),
            "sender": m.get("sender"), "recipients": recipients,
            "participants": sorted({str(m.get("sender")), *recipients}), "message_id": str(m["id"]),
            "time_refs": [r.as_dict() for r in refs]}  # fmt: skip
    loc = parse_locator({"unit": "message", "position": {"id": str(m["id"])}})
    return Segment(path=f"{pid}/messenger/{meta['session']}.txt", modality="text", text=text, locator=loc, meta=meta)


def event_segment(pid: str, e: dict[str, Any]) -> Segment:
    start, end = _when(e["start"]), _when(e.get("end") or e["start"])
    parts = [f"[{_fmt(start)} – {end.strftime('%H:%M')}] event {e['id']} · {e.get('title', '')}"]
    attendees = [str(a) for a in e.get("attendees") or []]
    if e.get("location"):
        parts.append(f"at {e['location']}")
    if attendees:
        parts.append(f"with {', '.join(attendees)}")
    refs: list[Any] = []
    if e.get("notes"):
        notes, refs = annotate(str(e["notes"]), start)
        parts.append(f"notes: {notes}")
    meta = {"app": "calendar", "start": start.isoformat(), "end": end.isoformat(), "event_id": str(e["id"]),
            "title": e.get("title", ""), "location": e.get("location", ""), "attendees": attendees,
            "participants": attendees, "time_refs": [r.as_dict() for r in refs]}  # fmt: skip
    loc = parse_locator({"unit": "event", "position": {"id": str(e["id"])}})
    path = f"{pid}/calendar/{start.strftime('%Y-%m')}.txt"
    return Segment(path=path, modality="text", text="; ".join(parts), locator=loc, meta=meta)


def persona_segments(p: PersonaLogs) -> dict[str, list[Segment]]:
    """Segments by virtual path, each path's segments in time order."""
    by_path: dict[str, list[Segment]] = {}
    for m in sorted(p.messages, key=lambda x: (str(x["timestamp"]), str(x["id"]))):
        seg = message_segment(p.id, m)
        by_path.setdefault(seg.path, []).append(seg)
    for e in sorted(p.events, key=lambda x: (str(x["start"]), str(x["id"]))):
        seg = event_segment(p.id, e)
        by_path.setdefault(seg.path, []).append(seg)
    return by_path


def full_context(persona_dir: Path) -> str:
    """Every message and event of a persona in time order, as one prompt (the full-context regime)."""
    segs = [s for group in persona_segments(read_persona(persona_dir)).values() for s in group]
    segs.sort(key=lambda s: str(s.meta.get("time") or s.meta.get("start")))
    return "\n".join(s.text for s in segs)


@dataclass
class PersonaSetGold:
    """The answer keys of a set of personas (read from the folder a run's manifest names), with what
    scoring needs beside them: each task's persona, each persona's message/event ids, and which
    fragment each message or event belongs to. ``error`` says why the keys could not be read."""

    source: str
    #: task id (``<persona>/<case id>``) -> the case as written
    cases: dict[str, dict[str, Any]] = field(default_factory=dict)
    persona_of: dict[str, str] = field(default_factory=dict)
    #: persona -> message/event ids, and message/event id -> fragment id
    known: dict[str, set[str]] = field(default_factory=dict)
    fragment_of: dict[str, dict[str, str]] = field(default_factory=dict)
    #: persona -> evidence message/event id -> {id, speaker, time, text} (what a judge model reads)
    evidence: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    error: str | None = None

    def gold_ids(self, task_id: str) -> list[str]:
        """The message/event ids of a case's supporting fragments."""
        support = {str(x) for x in self.cases[task_id].get("supporting_fragments") or []}
        return [i for i, f in self.fragment_of.get(self.persona(task_id), {}).items() if f in support]

    def persona(self, task_id: str) -> str:
        return self.persona_of.get(task_id) or task_id.split("/", 1)[0]


def read_gold(source: str | Path) -> PersonaSetGold:
    """The answer keys of the personas under ``source`` (never raises: ``error`` says what went wrong)."""
    gold = PersonaSetGold(str(source))
    if not str(source) or not Path(source).is_dir():
        gold.error = f"the persona folder {source or '(not recorded)'} is not there"
        return gold
    try:
        for d in persona_dirs(Path(source)):
            p = read_persona(d)
            gold.known[p.id] = {str(x["id"]) for x in p.messages + p.events}
            gold.fragment_of[p.id] = p.fragment_of
            shown = gold.evidence.setdefault(p.id, {})
            for m in p.messages:
                if str(m["id"]) in p.fragment_of:
                    shown[str(m["id"])] = {
                        "id": str(m["id"]),
                        "speaker": str(m.get("sender") or ""),
                        "time": str(m.get("timestamp") or ""),
                        "text": str(m.get("text") or ""),
                    }
            for e in p.events:
                if str(e["id"]) in p.fragment_of:
                    text = "; ".join(str(x) for x in (e.get("title"), e.get("notes")) if x)
                    shown[str(e["id"])] = {
                        "id": str(e["id"]),
                        "speaker": "calendar",
                        "time": str(e.get("start") or ""),
                        "text": text,
                    }
            for case in p.cases:
                tid = f"{p.id}/{case['id']}"
                gold.cases[tid], gold.persona_of[tid] = case, p.id
    except (OSError, AppLogError, KeyError) as exc:
        gold.error = f"{source}: {exc}"
    return gold
