"""The app-log environment: `FilesEnv` over one P-ContextBench persona's messenger and calendar.

The logs are segments in a store (`hippocamp.perceive.applog`: one per message and per event, under
``<persona>/messenger/<session>.txt`` and ``<persona>/calendar/<YYYY-MM>.txt``). `AppLogEnv` confines an
episode to its persona's paths and adds three tools: ``read_session(session)``, ``window(after, before,
app)`` and ``list_events(after, before)``; ``read`` also takes ``message m1`` / ``event e1``; ``logs()``
gives everything the episode may see in time order (the full-context regime).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from hippocamp.envs.base import Observation
from hippocamp.envs.files import FilesEnv, parse_locator_text
from hippocamp.schema.segment import Segment

__all__ = ["AppLogEnv"]

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
               before: str | None = None, also: list[str] | None = None) -> Observation:  # fmt: skip
        glob = self._prefix + (path_glob or "*").lstrip("/") if self._prefix else path_glob
        obs = super().search(query, k, None, None, glob, after, before, also)
        if obs.ok and "showing results without filters" in obs.text and self._prefix:
            # relaxed, but never another persona
            obs = super().search(query, k, None, None, self._prefix + "*", also=also)
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
