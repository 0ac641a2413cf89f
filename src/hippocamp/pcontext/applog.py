"""The app-log environment: a P-ContextBench persona's messenger and calendar as searchable segments.

`load_pcontext_suite("pcontext:DIR")` reads a persona directory (``messenger.jsonl``, ``calendar.jsonl``,
``cases.jsonl``) or a set of them (``DIR/<persona>/...``) and writes one `Segment` per message and per
event into a store, under virtual paths ``<persona>/messenger/<session>.txt`` and
``<persona>/calendar/<YYYY-MM>.txt`` (rendered as real files in a view folder outside the persona
directory, so a terminal agent sees the logs and never the answer keys). A message segment's locator is
``{"unit": "message", "position": {"id": ...}}``, an event's ``{"unit": "event", "position": {"id":
...}}``; ``meta`` holds the time, session, sender, recipients / attendees and ``time_refs``: relative
time ("yesterday", "next week") resolved against the item's own timestamp (`timeref`) and also written
beside the text, because a small model copies "yesterday" instead of computing the date.

`AppLogEnv` is `FilesEnv` restricted to one persona plus three tools: ``read_session(session)``,
``window(after, before, app)`` and ``list_events(after, before)``; ``read`` also takes ``message m1`` /
``event e1``. `full_context(persona_dir)` renders all the logs for the full-context regime.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from hippocamp.agents.base import Task
from hippocamp.envs.base import Observation
from hippocamp.envs.files import FilesEnv, parse_locator_text
from hippocamp.paths import cache_dir
from hippocamp.pcontext.timeref import annotate
from hippocamp.perceive.run import FileResult, file_info
from hippocamp.runs.suite import Suite, SuiteError, SuiteOptions
from hippocamp.schema.io import RecordsFileError, json_objects, read_json
from hippocamp.schema.locators import parse_locator
from hippocamp.schema.segment import Segment
from hippocamp.store import Store

__all__ = [
    "APPLOG_VERSION",
    "PCONTEXT_PREFIX",
    "AppLogEnv",
    "PContextSuite",
    "PersonaLogs",
    "full_context",
    "load_pcontext_suite",
    "persona_dirs",
    "read_persona",
]

PCONTEXT_PREFIX = "pcontext:"
#: bump when segments are rendered differently: the store is rebuilt
APPLOG_VERSION = "1"
_CASE_TYPES = ("T1", "T2", "T3", "T4", "T5", "abstain")


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
        raise SuiteError(str(exc)) from exc


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
            raise SuiteError(str(exc)) from None
        if not isinstance(data, dict):
            raise SuiteError(f"{d / meta_file}: a JSON object was expected, not {type(data).__name__}")
        name = str((data.get("seed") or {}).get("name") or data.get("name") or name)
        break
    for case in cases:
        if case.get("type") not in _CASE_TYPES:
            raise SuiteError(f"{d / 'cases.jsonl'}: case {case.get('id')!r} has type {case.get('type')!r}")
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


def _digest(dirs: list[Path]) -> str:
    h = hashlib.sha256(APPLOG_VERSION.encode())
    for d in dirs:
        for name in ("messenger.jsonl", "calendar.jsonl", "cases.jsonl"):
            f = d / name
            h.update(f"{d.name}/{name}\0".encode())
            h.update(f.read_bytes() if f.is_file() else b"-")
    return h.hexdigest()


def ingest(personas: list[PersonaLogs], view: Path, store: Store, digest: str) -> int:
    """Write the view files and the store's segments unless the store already holds this digest;
    returns how many segments were written (0 when up to date)."""
    if store.get_meta("applog_digest") == digest and store.files():
        return 0
    shutil.rmtree(view, ignore_errors=True)
    view.mkdir(parents=True, exist_ok=True)
    store.remove_files(list(store.files()))
    items: list[tuple[Any, int | None, int | None, str | None]] = []
    total = 0
    for p in personas:
        for rel, segs in persona_segments(p).items():
            path = view / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            data = ("\n".join(s.text for s in segs) + "\n").encode()
            path.write_bytes(data)
            for i, s in enumerate(segs):
                s.ordinal = i
            result = FileResult(rel, file_info(path), "text", "ok", reader="applog", segments=segs)
            result.sha256 = hashlib.sha256(data).hexdigest()
            items.append((result, path.stat().st_mtime_ns, len(data), f"applog-{APPLOG_VERSION}"))
            total += len(segs)
    store.put_files(items)
    store.set_meta("applog_digest", digest)
    return total


_ITEM = re.compile(r"^\s*(message|msg|event)\s*[:#]?\s*(\S+)\s*$", re.I)
_EXTRA_TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "read_session", "description": "Read one messenger session (conversation) in full, by its id.",
        "parameters": {"type": "object", "properties": {"session": {"type": "string"}}, "required": ["session"]}}},
    {"type": "function", "function": {
        "name": "window", "description": "Every message and event between two ISO dates/times, in time order.",
        "parameters": {"type": "object", "properties": {
            "after": {"type": "string"}, "before": {"type": "string"},
            "app": {"type": "string", "enum": ["messenger", "calendar"]}}, "required": ["after", "before"]}}},
    {"type": "function", "function": {
        "name": "list_events", "description": "Calendar events between two ISO dates (inclusive of the start).",
        "parameters": {"type": "object", "properties": {"after": {"type": "string"}, "before": {"type": "string"}},
                       "required": ["after", "before"]}}},
]  # fmt: skip


class AppLogEnv(FilesEnv):
    """`FilesEnv` over one persona's logs (``persona``: its path prefix; None = every persona)."""

    tools: ClassVar[list[dict[str, Any]]] = [*FilesEnv.tools, *_EXTRA_TOOLS]

    def __init__(self, root: Path | str, store: Any, searcher: Any | None = None, *, persona: str | None = None,
                 owner: str | None = None, **kwargs: Any):  # fmt: skip
        super().__init__(root, store, searcher, **kwargs)
        self.persona = persona
        self._prefix = f"{persona}/" if persona else ""
        self.owner = owner
        whose = f"{owner}'s" if owner else "a person's"
        self.corpus = f"{whose} messages and calendar"
        self.corpus_long = (f"{whose} messenger conversations and calendar events (each with its id and time; "
                            "relative days such as 'yesterday' are resolved in brackets)")  # fmt: skip

    def _mine(self, path: str) -> bool:
        return path.startswith(self._prefix)

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Observation:
        extra = {"read_session": self.read_session, "window": self.window, "list_events": self.list_events}
        if name not in extra:
            return super().call(name, arguments)
        self.calls += 1
        try:
            return extra[name](**dict(arguments or {}))
        except (TypeError, ValueError) as exc:
            return Observation(f"error: bad arguments for {name}: {exc}", ok=False, error=str(exc))

    def logs(self) -> list[Segment]:
        """Every message and event this environment may see, in time order (the full-context regime)."""
        return sorted(self._segments(), key=lambda s: (str(s.meta.get("time") or s.meta.get("start") or ""), s.path))

    def _segments(self) -> list[Segment]:
        out = []
        for path in sorted(self.store.files()):
            if self._mine(path):
                out.extend(self.store.segments_of(path))
        return out

    def _show(self, segs: list[Segment], empty: str) -> Observation:
        if not segs:
            return Observation(empty, data=[])
        data = [{"path": s.path, "locator": s.locator.dump() if s.locator else None, "text": s.text,
                 "where": s.where(), "time": s.meta.get("time") or s.meta.get("start")} for s in segs]  # fmt: skip
        clipped, cut = self._clip("\n".join(s.text for s in segs))
        return Observation(clipped, data=data, truncated=cut)

    def list_files(self, glob: str | None = None) -> Observation:
        if not self._prefix:
            return super().list_files(glob)
        return super().list_files(self._prefix + (glob or "*").lstrip("/"))

    def search(self, query: str, k: int = 8, modality: str | None = None, file_type: str | None = None,
               path_glob: str | None = None, after: str | None = None,
               before: str | None = None) -> Observation:  # fmt: skip
        glob = self._prefix + (path_glob or "*").lstrip("/") if self._prefix else path_glob
        obs = super().search(query, k, None, None, glob, after, before)
        if obs.ok and "showing results without filters" in obs.text and self._prefix:
            obs = super().search(query, k, None, None, self._prefix + "*")  # relaxed, but never another persona
        return obs

    def read(self, path: str, locator: str | dict[str, Any] | None = None) -> Observation:
        m = _ITEM.match(locator) if isinstance(locator, str) else None
        if m:
            unit = "event" if m.group(1).lower() == "event" else "message"
            locator = {"unit": unit, "position": {"id": m.group(2)}}
        elif isinstance(locator, str) and parse_locator_text(locator) is None and locator.strip():
            locator = {"unit": "message", "position": {"id": locator.strip()}}
        rel = path.lstrip("/")
        if self._prefix and not rel.startswith(self._prefix):
            rel = self._prefix + rel
        return super().read(rel, locator)

    def read_session(self, session: str) -> Observation:
        rel = f"{self._prefix}messenger/{str(session).removesuffix('.txt')}.txt"
        segs = self.store.segments_of(rel) if self.store.file(rel) else []
        return self._show(segs, f"no session {session!r}")

    def window(self, after: str, before: str, app: str | None = None) -> Observation:
        segs = [s for s in self._segments() if (app is None or s.meta.get("app") == app)
                and str(after) <= str(s.meta.get("time") or s.meta.get("start")) < str(before)]  # fmt: skip
        segs.sort(key=lambda s: str(s.meta.get("time") or s.meta.get("start")))
        return self._show(segs, f"nothing between {after} and {before}")

    def list_events(self, after: str, before: str) -> Observation:
        return self.window(after, before, app="calendar")


@dataclass
class PContextSuite(Suite):
    """A suite of persona cases: ``gold[task_id]`` is the case (answer key) as a dict; ``personas`` the logs."""

    personas: dict[str, PersonaLogs] = field(default_factory=dict)
    source: Path | None = None

    def env(self, task: Task | None = None) -> AppLogEnv:
        """The environment of one episode; given the task, restricted to its persona (a suite of one
        persona is restricted without it)."""
        if self._searcher is None:
            from hippocamp.store.search import Searcher

            self._searcher = Searcher(self.store)
        persona = task.meta.get("persona") if task is not None else None
        if persona is None and len(self.personas) == 1:
            persona = next(iter(self.personas))
        owner = self.personas[persona].name if persona in self.personas else None
        return AppLogEnv(self.root, self.store, self._searcher, persona=persona, owner=owner)

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out.update({"kind": "pcontext", "pcontext_dir": str(self.source), "personas": sorted(self.personas)})
        return out


def _asking(p: PersonaLogs, case: dict[str, Any]) -> tuple[str, str]:
    """(question, instructions) of a case's task: agents search for the question alone, so the framing
    and the request for ids stay out of the query (BM25 on the whole prompt matched 'message', 'event'
    and 'answer' in every log line)."""
    if case["type"] == "T5":
        return case["question"], (
            f"This is {p.name}'s own request to you, the assistant acting for them. Check {p.name}'s messages "
            "and calendar for anything that bears on it, then say what you would do (comply, warn, clarify, "
            "suggest an alternative, require confirmation or refuse) and why, citing the message/event ids "
            "you rely on."
        )
    # the answer first: asked only to "cite the ids", a small model answers with citations alone
    return case["question"], "Answer in a sentence or two, then name the message or event ids your answer rests on."


def load_pcontext_suite(spec: str, options: SuiteOptions | None = None, progress: Any = None) -> PContextSuite:
    options = options or SuiteOptions()
    source = Path(spec[len(PCONTEXT_PREFIX) :]).expanduser()
    if not source.is_dir():
        raise SuiteError(f"suite {spec!r}: {source} is not a folder")
    dirs = persona_dirs(source)
    if not dirs:
        raise SuiteError(f"suite {spec!r}: no persona folder (with cases.jsonl) in {source}")
    personas: dict[str, PersonaLogs] = {}
    for d in dirs:
        p = read_persona(d)
        if p.id in personas:
            raise SuiteError(f"suite {spec!r}: persona id {p.id!r} appears twice")
        personas[p.id] = p
    tasks: list[Task] = []
    gold: dict[str, Any] = {}
    for p in personas.values():
        for case in p.cases:
            tid = f"{p.id}/{case['id']}"
            if tid in gold:
                raise SuiteError(f"{p.dir / 'cases.jsonl'}: case id {case['id']!r} appears twice")
            gold[tid] = case
            question, instructions = _asking(p, case)
            tasks.append(Task(id=tid, question=question, instructions=instructions, profile=p.id,
                              meta={"qa_type": case["type"], "persona": p.id}))  # fmt: skip
    digest = _digest(dirs)
    key = hashlib.sha1(str(source.resolve()).encode()).hexdigest()[:10]
    view = cache_dir() / "pcontext" / f"{source.resolve().name}-{key}"
    view.mkdir(parents=True, exist_ok=True)
    try:
        store = Store(options.store, root=view) if options.store else Store.for_root(view)
    except Exception as exc:
        raise SuiteError(f"suite {spec!r}: {exc}") from exc
    ingest(list(personas.values()), view, store, digest)
    if options.embed:
        from hippocamp.models.errors import ModelNotAvailableError
        from hippocamp.store.indexer import embed_missing

        try:
            embed_missing(store, options.embedder, progress or (lambda *_: None))
        except ModelNotAvailableError:
            if options.embedder is not None:
                raise
    return PContextSuite(name=source.resolve().name, spec=spec, tasks=tasks, gold=gold, root=view,
                         records_path=None, store=store, options=options, dataset_sha256=digest,
                         personas=personas, source=source.resolve())  # fmt: skip
