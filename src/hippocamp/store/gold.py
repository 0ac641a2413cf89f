"""HippoCamp's parsed-text release (``HippoCamp_Gold``): read it instead of perceiving, and write ours in
its shape.

A Gold file is one JSON per source file: ``{"file_info": {...}, "summary": "...", "segments":
[{"content": ..., "start_time": ..., "end_time": ...}, ...]}``. ``file_info`` names the file
(``file_path``, often absolute on the annotators' machine, and ``file_name``); a Gold file is matched
to a profile file by the longest path suffix they share, else by a unique file name, else by its
own place in the Gold folder (``<Gold>/<rel path>.json``).

The release writes a segment's time two ways: ``start_time``/``end_time`` (its ingestion code; ``0``
and ``0`` when a segment has no time) and ``start``/``end`` (its Gold-format example and chunkers,
as ``"MM:SS"``/``"HH:MM:SS"`` strings). Both are read on audio and video files, as seconds or
strings (`parse_timestamp`); pages come as ``page`` or ``page_number``. A value that cannot be read
is a note on the file naming the Gold JSON, the segment and the field; the segment is kept without
that locator.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError

from hippocamp.models.local_models import sha256_of
from hippocamp.perceive.run import FileResult, file_info
from hippocamp.schema.filetypes import modality_of
from hippocamp.schema.io import read_json
from hippocamp.schema.locators import Locator, PageLocator, TimeRange, parse_timestamp
from hippocamp.schema.segment import Segment

__all__ = ["GoldIndex", "export_gold", "gold_item", "gold_segments"]


def _norm(path: str) -> str:
    return path.replace("\\", "/").strip().strip("/")


@dataclass
class GoldIndex:
    by_path: dict[str, Path] = field(default_factory=dict)
    by_name: dict[str, list[Path]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, folder: Path) -> GoldIndex:
        index = cls()
        for path in sorted(folder.rglob("*.json")):
            try:
                data = read_json(path, "HippoCamp_Gold JSON")
            except ValueError as exc:  # a JsonInputError: not JSON, too deep, unreadable; names the file
                index.problems.append(f"not readable Gold JSON: {exc}")
                continue
            if not isinstance(data, dict) or "segments" not in data:
                index.problems.append(f"{path}: no 'segments' (not a HippoCamp_Gold file)")
                continue
            info = data.get("file_info") or {}
            keys = [_norm(str(info[k])) for k in ("file_path", "relative_path", "path") if info.get(k)]
            keys.append(_norm(path.relative_to(folder).as_posix().removesuffix(".json")))
            for key in keys:
                index.by_path.setdefault(key, path)
            name = info.get("file_name") or PurePosixPath(keys[0]).name
            index.by_name.setdefault(str(name), []).append(path)
        return index

    def find(self, rel: str) -> Path | None:
        rel = _norm(rel)
        best, best_len = None, -1
        for key, path in self.by_path.items():
            if key == rel or key.endswith("/" + rel) or rel.endswith("/" + key):
                shared = min(len(key), len(rel))
                if shared > best_len:
                    best, best_len = path, shared
        if best is not None:
            return best
        same_name = self.by_name.get(PurePosixPath(rel).name, [])
        return same_name[0] if len(same_name) == 1 else None

    def result_for(self, root: Path, rel: str) -> FileResult | None:
        """The file's segments from its Gold JSON, or None when Gold does not cover it."""
        gold = self.find(rel)
        if gold is None:
            return None
        data = read_json(gold, "HippoCamp_Gold JSON")
        path = root / rel
        result = FileResult(rel, file_info(path), modality_of(rel) or "other", "ok", reader="gold")
        result.sha256 = sha256_of(path)
        notes: list[str] = []
        result.segments = gold_segments(rel, data, notes, str(gold))
        result.notes.extend(notes)
        self.problems.extend(notes)
        for i, seg in enumerate(result.segments):
            seg.ordinal = i
        return result


#: a segment's start and end keys, in the order they are tried
_TIME_KEYS = (("start_time", "end_time"), ("start", "end"))
_PAGE_KEYS = ("page", "page_number")


def _first_key(item: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    return next((k for k in keys if item.get(k) is not None and item.get(k) != ""), None)


def _time_locator(item: dict[str, Any], where: str, problems: list[str]) -> TimeRange | None:
    """The segment's time range from ``start_time``/``end_time`` or ``start``/``end``; None when it has
    none (or only the release's ``0``/``0`` placeholder) or its start cannot be read."""
    start_key = _first_key(item, tuple(pair[0] for pair in _TIME_KEYS))
    end_key = _first_key(item, tuple(pair[1] for pair in _TIME_KEYS))
    if start_key is None:
        if end_key is not None:
            problems.append(f"{where}, field {end_key!r}: an end time without a start; no time kept")
        return None
    try:
        start = parse_timestamp(item[start_key])
    except ValueError as exc:
        problems.append(f"{where}, field {start_key!r}: {exc}")
        return None
    end: float | None = None
    if end_key is not None:
        try:
            end = parse_timestamp(item[end_key])
        except ValueError as exc:
            problems.append(f"{where}, field {end_key!r}: {exc}; the start alone is kept")
        if end is not None and end < start:
            problems.append(
                f"{where}, field {end_key!r}: ends ({end:g} s) before it starts ({start:g} s); the start alone is kept"
            )
            end = None
    if start == 0 and end == 0:  # the release's ingestion writes 0, 0 for a segment without a time
        return None
    return TimeRange(start=start, end=end)


def _page_locator(item: dict[str, Any], where: str, problems: list[str]) -> PageLocator | None:
    key = _first_key(item, _PAGE_KEYS)
    if key is None:
        return None
    try:
        return PageLocator.model_validate({"unit": "page", "position": item[key]})
    except ValueError as exc:
        reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) and exc.errors() else str(exc)
        problems.append(f"{where}, field {key!r}: not a page number ({reason}): {item[key]!r}")
        return None


def gold_segments(
    rel: str, data: dict[str, Any], problems: list[str] | None = None, source: str | None = None
) -> list[Segment]:
    """The segments of one Gold JSON (``data``) for the profile file ``rel``. A locator that cannot be
    read is left off its segment and described in ``problems`` (naming ``source``, the segment and
    the field)."""
    modality = modality_of(rel) or "other"
    problems = problems if problems is not None else []
    source = source or f"HippoCamp_Gold JSON of {rel}"
    out = []
    for i, item in enumerate(data.get("segments") or []):
        if not isinstance(item, dict):
            problems.append(f"{source}: segment {i}: not an object ({type(item).__name__}); skipped")
            continue
        text = str(item.get("content") or item.get("text") or "").strip()
        if not text:
            continue
        where = f"{source}: segment {i}"
        locator: Locator | None = None
        if item.get("locator"):
            from hippocamp.schema.locators import parse_locator

            locator = parse_locator(item["locator"])
        elif modality in ("audio", "video") and any(_first_key(item, pair) for pair in _TIME_KEYS):
            locator = _time_locator(item, where, problems)
        elif _first_key(item, _PAGE_KEYS) is not None:
            locator = _page_locator(item, where, problems)
        meta = {"source": "gold", "gold_index": i}
        out.append(Segment(path=rel, modality=modality, text=text, locator=locator, meta=meta))
    summary = str(data.get("summary") or "").strip()
    if summary:
        out.append(Segment(path=rel, modality=modality, text=summary, meta={"source": "gold", "summary": True}))
    return out


def gold_item(seg: Segment) -> dict[str, Any]:
    """One segment in the Gold shape: ``content``, ``start_time``/``end_time`` (None without a time),
    ``page`` for a page, and hippocamp's own ``locator`` and ``within`` when it has them."""
    item: dict[str, Any] = {"content": seg.text, "start_time": None, "end_time": None}
    if isinstance(seg.locator, TimeRange):
        item["start_time"], item["end_time"] = seg.locator.start, seg.locator.end
    if isinstance(seg.locator, PageLocator):
        item["page"] = seg.locator.system_page
    if seg.locator is not None:
        item["locator"] = seg.locator.dump()
    if seg.within:
        item["within"] = [w.dump() for w in seg.within]
    return item


def export_gold(store: Any, out_dir: Path) -> int:
    """Write every indexed file's segments as ``<out>/<rel path>.json`` in the Gold shape; returns files written."""
    written = 0
    for rel, row in sorted(store.files().items()):
        segments = store.segments_of(rel)
        if not segments:
            continue
        items = [gold_item(seg) for seg in segments]
        doc = {
            "file_info": {
                "file_path": rel,
                "file_name": PurePosixPath(rel).name,
                "file_type": row.type,
                "modality": row.modality,
                "size": row.size,
                "created": row.created,
                "modified": row.modified,
                "sha256": row.sha256,
            },
            "summary": "",
            "segments": items,
        }
        target = out_dir / f"{rel}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
        written += 1
    return written
