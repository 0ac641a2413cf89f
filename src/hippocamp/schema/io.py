"""Reading and writing files of HippoCamp records.

A records file is a JSON array of records (the release), a JSON object holding such an array
under ``records``/``data``/``questions``, a single record object, or JSON Lines. Reading never
stops at a bad record: each unreadable record becomes a `Problem` naming the file, the record and
the field, and the rest are read. A file that is not JSON at all raises `RecordsFileError` with the
line and column.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from hippocamp.schema.problems import Problem, short_repr
from hippocamp.schema.record import HippoCampRecord

__all__ = ["RecordsFile", "RecordsFileError", "dump_records", "json_objects", "read_records", "write_records"]

Container = Literal["array", "object", "single", "jsonl"]
_LIST_KEYS = ("records", "data", "questions", "items")


class RecordsFileError(Exception):
    """A records file that cannot be read at all (missing, not JSON, wrong top-level shape)."""

    def __init__(self, path: str | Path, message: str, line: int | None = None, column: int | None = None):
        self.path, self.line, self.column = str(path), line, column
        where = f"{path}" + (f":{line}" if line is not None else "") + (f":{column}" if column is not None else "")
        super().__init__(f"{where}: {message}")


@dataclass
class RecordsFile:
    """The records of one file, the problems met reading them, and how the file was laid out."""

    path: Path
    records: list[HippoCampRecord]
    problems: list[Problem] = field(default_factory=list)
    container: Container = "array"
    list_key: str | None = None
    raw: Any = None
    #: index in the file of each read record (records that failed to read are skipped)
    indices: list[int] = field(default_factory=list)
    total: int = 0

    @property
    def name(self) -> str:
        return self.path.stem


def json_objects(path: str | Path, text: str | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of a JSON Lines file with their 1-based line numbers (blank lines skipped).
    A line that is not JSON, or not an object, raises `RecordsFileError` naming the file, line and column."""
    if text is None:
        text = Path(path).read_text(encoding="utf-8")
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RecordsFileError(path, f"not JSON ({exc.msg})", n, exc.colno) from None
        if not isinstance(item, dict):
            raise RecordsFileError(path, "expected a JSON object", n)
        yield n, item


def _decode(path: Path, text: str) -> tuple[Any, Container]:
    try:
        return json.loads(text), "array"
    except json.JSONDecodeError as exc:
        first_error = exc
    # JSON Lines: every non-blank line a JSON object
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if len(lines) > 1 and lines[0][1].lstrip().startswith("{"):
        items = []
        for n, line in lines:
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise RecordsFileError(path, f"not valid JSON Lines: {exc.msg}", n, exc.colno) from None
        return items, "jsonl"
    raise RecordsFileError(path, f"not valid JSON: {first_error.msg}", first_error.lineno, first_error.colno)


def read_records(path: str | Path) -> RecordsFile:
    """Read a records file. Raises `RecordsFileError` only when the file as a whole is unreadable."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RecordsFileError(path, "no such file") from None
    except IsADirectoryError:
        raise RecordsFileError(path, "is a directory, not a records file") from None
    except OSError as exc:
        raise RecordsFileError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise RecordsFileError(path, f"not UTF-8 text (byte {exc.start})", line, None) from None
    raw, container = _decode(path, text)
    list_key = None
    if container != "jsonl":
        if isinstance(raw, list):
            container = "array"
        elif isinstance(raw, dict):
            list_key = next((k for k in _LIST_KEYS if isinstance(raw.get(k), list)), None)
            container = "object" if list_key else "single"
        else:
            raise RecordsFileError(path, f"top level must be an array of records, got {type(raw).__name__}")
    items = raw[list_key] if list_key else [raw] if container == "single" else raw
    out = RecordsFile(path=path, records=[], container=container, list_key=list_key, raw=raw, total=len(items))
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        rid = item.get("id") if isinstance(item, dict) else None
        try:
            record = HippoCampRecord.model_validate(item)
        except ValidationError as exc:
            for err in exc.errors():
                out.problems.append(
                    Problem(
                        severity="error",
                        rule="schema",
                        file=str(path),
                        record_id=None if rid is None else str(rid),
                        record_index=index,
                        field=_loc(err.get("loc", ())),
                        message=f"record cannot be read: {str(err.get('msg', '')).removeprefix('Value error, ')}",
                        found=short_repr(err.get("input")),
                    )
                )
            continue
        if record.key in seen:
            out.problems.append(
                Problem(
                    severity="error",
                    rule="schema",
                    file=str(path),
                    record_id=record.key,
                    record_index=index,
                    field="id",
                    message=f"duplicate record id (also record #{seen[record.key]})",
                    expected="ids unique within a file",
                )
            )
        seen.setdefault(record.key, index)
        out.records.append(record)
        out.indices.append(index)
    return out


def _loc(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif str(part).startswith("function-") or part in ("str", "int", "list[str]"):
            continue
        else:
            text += ("." if text else "") + str(part)
    return text


def dump_records(source: RecordsFile | list[HippoCampRecord], records: list[HippoCampRecord] | None = None) -> Any:
    """JSON-ready data: the records in the container they were read from (or an array)."""
    if isinstance(source, list):
        return [r.dump() for r in source]
    records = source.records if records is None else records
    dumped = [r.dump() for r in records]
    if source.container == "object" and source.list_key:
        return {**source.raw, source.list_key: dumped}
    if source.container == "single" and len(dumped) == 1:
        return dumped[0]
    return dumped


def write_records(path: str | Path, data: Any, container: Container = "array", indent: int | None = 2) -> None:
    """Write what `dump_records` gave; JSON Lines when ``container == "jsonl"``."""
    path = Path(path)
    if container == "jsonl":
        text = "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in data)
    else:
        text = json.dumps(data, ensure_ascii=False, indent=indent) + "\n"
    path.write_text(text, encoding="utf-8")
