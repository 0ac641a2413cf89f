"""`FilesEnv`: what an agent may see and do in an indexed profile, as four tools.

``list_files(glob)``, ``search(query, k, filters)``, ``read(path, locator)`` and ``metadata(path)``,
each described by an OpenAI-style function schema (`FilesEnv.tools`) so any tool-calling model can
use them, and each answering an `Observation`: the text shown to the model plus structured ``data``
(hits and segments an agent can cite). Everything comes from the profile's store and files, through
the `Sandbox`: no path outside the root, no gold annotations, no other profile.
"""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path
from typing import Any

from hippocamp.envs.base import Observation
from hippocamp.envs.sandbox import Sandbox, SandboxError
from hippocamp.schema.locators import Locator, overlaps, parse_locator
from hippocamp.schema.segment import Segment

__all__ = ["FilesEnv", "parse_locator_text", "terminal_backend", "terminal_description"]

_SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "list_files",
            "description": "List the profile's files (path, modality, size), optionally matching a glob such as "
            "'Mail/**' or '*.pdf'.",
            "parameters": {
                "type": "object",
                "properties": {"glob": {"type": "string", "description": "shell pattern on the relative path"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the contents of every file (text, OCR of images, transcripts of audio and "
            "video); returns ranked passages with their file and locator.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "k": {"type": "integer", "description": "how many passages (default 8)"},
                    "modality": {"type": "string", "enum": ["text", "document", "image", "audio", "video"]},
                    "file_type": {"type": "string", "description": "extension, e.g. pdf, eml, jpg"},
                    "path_glob": {"type": "string"},
                    "after": {"type": "string", "description": "ISO date: only content from this date on"},
                    "before": {"type": "string", "description": "ISO date: only content before this date"},
                },
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file, or one part of it: a locator such as 'page 3', 'slide 2', "
            "'Sheet1!A1:D20', 'lines 10-40', '00:01:10-00:01:30' (seconds of audio/video).",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "locator": {"type": "string"}},
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "metadata",
            "description": "A file's metadata: size, type, modality, created and modified times, and what the "
            "reader found (EXIF time and GPS, mail headers, duration).",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    },
]


_TIME = r"(\d+(?::\d{1,2}){0,2}(?:\.\d+)?)"


def parse_locator_text(text: str | dict[str, Any] | None) -> Locator | None:
    """A locator from what a model writes: a JSON locator, or 'page 3', 'p. 3', 'slide 2',
    'Sheet1!A1:D20', 'A1:D20', 'lines 10-40', 'line 7', '00:01:10-00:01:30', '12.5-20s'."""
    if text is None or text == "":
        return None
    if isinstance(text, dict):
        return parse_locator(text)
    t = text.strip()
    if t.startswith("{"):
        try:
            return parse_locator(json.loads(t))
        except (ValueError, TypeError):
            pass
    low = t.lower()
    if m := re.fullmatch(r"(?:page|p\.?|pages)\s*(\d+)(?:\s*-\s*(\d+))?", low):
        pos: Any = int(m.group(1)) if not m.group(2) else f"{m.group(1)}-{m.group(2)}"
        return parse_locator({"unit": "page", "position": pos})
    if m := re.fullmatch(r"slides?\s*(\d+)(?:\s*-\s*(\d+))?", low):
        return parse_locator(
            {"unit": "slide", "position": m.group(1) if not m.group(2) else f"{m.group(1)}-{m.group(2)}"}
        )
    if m := re.fullmatch(r"(?:lines?|l\.)\s*(\d+)(?:\s*-\s*(\d+))?", low):
        return parse_locator(
            {"unit": "line", "position": m.group(1) if not m.group(2) else f"{m.group(1)}-{m.group(2)}"}
        )
    if m := re.fullmatch(r"paragraphs?\s*(\d+)(?:\s*-\s*(\d+))?", low):
        return parse_locator(
            {"unit": "paragraph", "position": m.group(1) if not m.group(2) else f"{m.group(1)}-{m.group(2)}"}
        )
    if m := re.fullmatch(_TIME + r"\s*s?\s*-\s*" + _TIME + r"\s*s?", low):
        return parse_locator({"unit": "timestamp", "position": {"start": m.group(1), "end": m.group(2)}})
    if "!" in t or re.fullmatch(r"\$?[A-Za-z]{1,3}\$?\d+(:\$?[A-Za-z]{1,3}\$?\d+)?", t):
        return parse_locator({"unit": "cells", "position": t})
    return None


class FilesEnv:
    """The file tools over one indexed profile: ``store`` is its `hippocamp.store.Store`."""

    tools: list[dict[str, Any]] = _SCHEMAS
    #: what the agent searches, as its prompts name it: briefly, and in full
    corpus: str = "the person's files"
    corpus_long: str = ("the files of their own computer (documents, e-mails, calendar, notes, photos with their "
                        "text, voice memos and videos with their transcripts)")  # fmt: skip
    #: the name of the person whose data this is, when known ("the user" of a question)
    owner: str | None = None

    def __init__(self, root: Path | str, store: Any, searcher: Any | None = None, *, max_chars: int = 6000,
                 max_list: int = 200, hard_links: str = "inside", terminal: str = "emulated"):  # fmt: skip
        self.root = Path(root)
        self.store = store
        self._searcher = searcher
        self.sandbox = Sandbox(self.root)
        self.max_chars = max_chars
        self.max_list = max_list
        #: what the terminal does with a file hard-linked from outside the profile: "inside" refuses it,
        #: "any" reads it (a profile imported as hard links to trusted source files)
        self.hard_links = hard_links
        #: which terminal `terminal()` opens: "emulated", "jail" (a real bash in bubblewrap) or "auto"
        #: (the jail when this machine can make one, else the emulated terminal)
        self.terminal_backend = terminal_backend(terminal)
        self.calls = 0

    @property
    def searcher(self) -> Any:
        if self._searcher is None:
            from hippocamp.store.search import Searcher

            self._searcher = Searcher(self.store)
        return self._searcher

    @property
    def escapes(self) -> int:
        return self.sandbox.escapes

    # -- dispatch ----------------------------------------------------------------------------------
    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Observation:
        """Run one tool; unknown tools, bad arguments and escapes become error observations."""
        self.calls += 1
        args = dict(arguments or {})
        handler = {"list_files": self.list_files, "search": self.search, "read": self.read,
                   "metadata": self.metadata}.get(name)  # fmt: skip
        if handler is None:
            return _error(f"unknown tool {name!r}; tools: list_files, search, read, metadata")
        try:
            return handler(**args)
        except (TypeError, ValueError) as exc:
            return _error(f"bad arguments for {name}: {exc}")
        except SandboxError as exc:
            return _error(f"refused: {exc} (paths stay inside the profile)")
        except OSError as exc:  # named by the path the agent gave (a name too long, ...), never the host's
            where = args.get("path") if isinstance(args.get("path"), str) else None
            return _error(f"{name}: {where + ': ' if where else ''}{exc.strerror or type(exc).__name__}")
        except Exception as exc:  # a tool failure is an observation, never a crash of the episode
            return _error(f"{name} failed: {type(exc).__name__}: {self._scrub(str(exc))}")

    def _scrub(self, text: str) -> str:
        """``text`` without the host path of the profile (a last guard for error messages)."""
        root = str(self.sandbox.root)
        return text.replace(root + "/", "/").replace(root, "/") if root in text else text

    def _rel(self, path: str) -> str:
        resolved = self.sandbox.resolve(path)
        return self.sandbox.rel(resolved)

    def _clip(self, text: str) -> tuple[str, bool]:
        if len(text) <= self.max_chars:
            return text, False
        cut = len(text) - self.max_chars
        return text[: self.max_chars] + f"\n[... truncated {cut} chars]", True

    # -- tools ---------------------------------------------------------------------------------------
    def list_files(self, glob: str | None = None) -> Observation:
        rows = self.store.files()
        paths = sorted(rows)
        if glob:
            pattern = glob.lstrip("/")
            paths = [p for p in paths if fnmatch.fnmatchcase(p, pattern) or fnmatch.fnmatchcase(p, f"**/{pattern}")
                     or fnmatch.fnmatchcase(Path(p).name, pattern)]  # fmt: skip
        shown = paths[: self.max_list]
        data = [{"path": p, "modality": rows[p].modality, "size": rows[p].size} for p in shown]
        lines = [f"{d['path']}  ({d['modality']}, {d['size']} bytes)" for d in data]
        more = len(paths) - len(shown)
        if more:
            lines.append(f"[... {more} more; narrow the glob]")
        text = f"{len(paths)} files" + (f" matching {glob!r}" if glob else "") + ":\n" + "\n".join(lines)
        clipped, cut = self._clip(text)
        return Observation(clipped, data=data, truncated=cut or bool(more))

    def search(
        self,
        query: str,
        k: int = 8,
        modality: str | None = None,
        file_type: str | None = None,
        path_glob: str | None = None,
        after: str | None = None,
        before: str | None = None,
        also: list[str] | None = None,
        mode: str | None = None,
    ) -> Observation:
        """The search tool. Not offered to models in the tool's schema, for agents: ``also``, other
        queries for the same need, ranked together with ``query`` (agents that expand questions pass
        them); ``mode``, the ranking (``hybrid``, the default; ``fts``, BM25 alone; ``vector``, the
        embeddings alone, an error when the store has none)."""
        from hippocamp.store.search import SearchFilters

        if not str(query).strip():
            return _error("search needs a non-empty query")
        mode = mode or "hybrid"
        if mode not in ("hybrid", "fts", "vector"):
            return _error(f"search mode {mode!r}: choose hybrid, fts or vector")
        k = max(1, min(int(k), 30))
        filters = SearchFilters(
            glob=path_glob or None,
            modality=(modality,) if modality else (),
            types=(file_type.lower().lstrip("."),) if file_type else (),
            after=after or None,
            before=before or None,
        )
        extra = [str(a) for a in also] if isinstance(also, list) else []
        try:
            hits = self.searcher.search(str(query), k=k, filters=filters, also=extra, mode=mode)  # type: ignore[arg-type]
        except ValueError as exc:  # mode "vector" over a store without vectors: the agent's observation
            return _error(f"search (mode {mode}): {exc}")
        note = ""
        if not hits and filters != SearchFilters():
            # small models fill every optional filter; an empty page teaches them nothing, so say so and relax
            used = {"modality": modality, "file_type": file_type, "path_glob": path_glob, "after": after,
                    "before": before}  # fmt: skip
            shown = ", ".join(f"{k}={v}" for k, v in used.items() if v)
            note = f"(no results with {shown}; showing results without filters)\n\n"
            hits = self.searcher.search(str(query), k=k, also=extra, mode=mode)  # type: ignore[arg-type]
        data, blocks = [], []
        for i, h in enumerate(hits, 1):
            seg = h.segment()
            where = seg.where()
            item = {"path": h.path, "locator": h.locator, "text": h.text, "where": where, "time": h.time}
            if h.meta.get("sender"):  # a message: who wrote it
                item["sender"] = str(h.meta["sender"])
            data.append(item)
            when = f" ({h.time})" if h.time else ""
            blocks.append(f"[{i}] {where}{when}\n{h.text[:700]}")
        text = note + "\n\n".join(blocks) if blocks else f"no results for {query!r}"
        clipped, cut = self._clip(text)
        return Observation(clipped, data=data, truncated=cut)

    def read(self, path: str, locator: str | dict[str, Any] | None = None) -> Observation:
        rel = self._rel(path)
        row = self.store.file(rel)
        if row is None:
            if (self.root / rel).is_dir():
                return _error(f"{rel} is a folder; use list_files")
            return _error(f"no such file: {rel}")
        loc = parse_locator_text(locator) if locator else None
        if locator and loc is None:
            return _error(f"cannot read locator {locator!r}; try 'page 3', 'slide 2', 'Sheet!A1:B9', "
                          "'lines 5-20' or '00:01:00-00:01:30'")  # fmt: skip
        segments: list[Segment] = self.store.segments_of(rel)
        if loc is not None:
            segments = [s for s in segments if s.locator is not None and overlaps(loc, s.locator, slack=1.0)]
        if not segments:
            reason = f" ({row.status}: {row.reason})" if row.reason else ""
            what = f" at {locator}" if locator else ""
            return Observation(f"{rel}: no readable content{what}{reason}", data=[])
        data = [{"path": rel, "locator": s.locator.dump() if s.locator else None, "text": s.text,
                 "where": s.where()} for s in segments]  # fmt: skip
        text = "\n\n".join(f"[{d['where']}]\n{d['text']}" for d in data)
        clipped, cut = self._clip(text)
        return Observation(clipped, data=data, truncated=cut)

    def metadata(self, path: str) -> Observation:
        rel = self._rel(path)
        row = self.store.file(rel)
        if row is None:
            return _error(f"no such file: {rel}")
        info: dict[str, Any] = {
            "path": rel,
            "size": row.size,
            "type": row.type,
            "modality": row.modality,
            "created": row.created,
            "modified": row.modified,
            "status": row.status,
            "segments": row.segments,
        }
        if row.reason:
            info["reason"] = row.reason
        segments = self.store.segments_of(rel)
        if segments and segments[0].meta:
            info["content"] = {k: v for k, v in segments[0].meta.items() if not isinstance(v, list | dict)}
        text = json.dumps(info, ensure_ascii=False, default=str, indent=1)
        return Observation(text, data=[info])

    def terminal(self, **options: Any) -> Any:
        """A fresh terminal over the same profile (its own working directory and escape counter),
        reading parsed text from this store, with this environment's `hard_links` rule: the emulated
        `Terminal` or the `JailTerminal` (``backend=`` overrides `terminal_backend`)."""
        backend = terminal_backend(options.pop("backend", self.terminal_backend))
        settings = {"hard_links": self.hard_links, "user": self.owner, **options}
        if backend == "jail":
            from hippocamp.envs.jail import JailTerminal

            return JailTerminal(self.root, texts=self.store.segments_of, **settings)
        from hippocamp.envs.terminal import Terminal

        return Terminal(self.root, texts=self.store.segments_of, **settings)


def terminal_backend(name: str) -> str:
    """``emulated`` or ``jail`` for a backend setting (``auto``: the jail when one can be made here).
    Asking for ``jail`` where none can be made is a ValueError saying why."""
    if name not in ("auto", "jail", "emulated"):
        raise ValueError(f"terminal backend {name!r}: choose auto, jail or emulated")
    if name == "emulated":
        return name
    from hippocamp.envs.jail import jail_support

    why = jail_support()
    if why is None:
        return "jail"
    if name == "jail":
        raise ValueError(f"terminal backend 'jail': {why}")
    return "emulated"


def terminal_description(setting: str) -> dict[str, Any]:
    """Which terminal a setting gives on this machine and why, for a run's manifest."""
    from dataclasses import asdict

    from hippocamp.envs.bounded import TerminalLimits
    from hippocamp.envs.jail import JailLimits, jail_support

    backend = terminal_backend(setting)
    out: dict[str, Any] = {"setting": setting, "backend": backend}
    if backend == "jail":
        out.update(engine="bubblewrap", limits=asdict(JailLimits()))
    else:
        out.update(engine="hippocamp (pure Python, read-only)", limits=asdict(TerminalLimits()))
        if setting == "auto":
            out["why"] = f"no jail here: {jail_support()}"
    return out


def _error(message: str) -> Observation:
    return Observation(f"error: {message}", ok=False, error=message)
