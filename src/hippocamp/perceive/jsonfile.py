"""JSON files: record by record when the top level is an array of records, else as text.

Locators (all numbers 1-based): for JSON whose top level is an array of objects or arrays, one
segment per record, ``{"unit": "record", "position": {"index": 4}}`` (plus ``"id"`` when the record
has an ``id``, ``uid`` or ``key``), its text the record as written in the file, ``meta["line"]`` and
``meta["line_end"]`` the lines it spans. Any other JSON (and JSON that does not parse, with a note) is
read as runs of lines (`hippocamp.perceive.plaintext`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, ClassVar

from hippocamp.perceive.base import Part, ReadContext
from hippocamp.perceive.decode import encoding_meta, read_decoded
from hippocamp.perceive.plaintext import MAX_CHARS, read_lines
from hippocamp.registry import register
from hippocamp.schema.locators import ItemLocator
from hippocamp.schema.segment import Segment

__all__ = ["MAX_RECORDS", "JsonReader", "json_records"]


#: a JSON array is read record by record when it has at most this many records ...
MAX_RECORDS = 5000
_WS = re.compile(r"[ \t\n\r]*")


def json_records(text: str) -> list[tuple[Any, int, int]] | None:
    """``(value, start, end)`` offsets of each element of a top-level JSON array, or None when the
    text is not an array. Raises `ValueError` for invalid JSON."""
    decoder = json.JSONDecoder()
    pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
    if not text.startswith("[", pos):
        json.loads(text)  # validate
        return None
    pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    records: list[tuple[Any, int, int]] = []
    if text.startswith("]", pos):
        return records
    while True:
        value, end = decoder.raw_decode(text, pos)
        records.append((value, pos, end))
        pos = _WS.match(text, end).end()  # type: ignore[union-attr]
        if text.startswith(",", pos):
            pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
            continue
        if text.startswith("]", pos):
            break
        raise ValueError(f"expected ',' or ']' at offset {pos}")
    if text[pos + 1 :].strip():
        raise ValueError(f"extra data after the array at offset {pos + 1}")
    return records


def _record_id(value: Any) -> str | None:
    if isinstance(value, dict):
        for key in ("id", "uid", "key"):
            v = value.get(key)
            if isinstance(v, str | int) and not isinstance(v, bool) and str(v).strip():
                return str(v)
    return None


@register("reader", "json")
class JsonReader:
    """JSON: one segment per record of a top-level array of objects/arrays, else line chunks."""

    name: ClassVar[str] = "json"
    extensions: ClassVar[tuple[str, ...]] = ("json", "geojson")
    parts: ClassVar[tuple[Part, ...]] = ()

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        decoded = read_decoded(path, ctx)
        text = decoded.text
        try:
            records = json_records(text)
        except (ValueError, RecursionError) as exc:
            ctx.note(f"not valid JSON ({str(exc)[:120]}): read as plain text")
            return read_lines(decoded, ctx)
        if (
            not records
            or len(records) > MAX_RECORDS
            or not all(isinstance(v, dict | list) for v, _, _ in records)
            or any(end - start > 2 * MAX_CHARS for _, start, end in records)
        ):
            return read_lines(decoded, ctx)
        meta = encoding_meta(decoded)
        segments = []
        line = 1
        offset = 0
        for index, (value, start, end) in enumerate(records, start=1):
            line += text.count("\n", offset, start)
            first = line
            line += text.count("\n", start, end)
            offset = end
            locator = ItemLocator(unit="record", index=index, id=_record_id(value))
            segments.append(ctx.segment(text[start:end], locator, line=first, line_end=line, **meta))
        return segments
