"""Reading and writing files of HippoCamp records.

A records file is a JSON array of records (the release), a JSON object holding such an array
under ``records``/``data``/``questions``, a single record object, or JSON Lines. Reading never
stops at a bad record: each unreadable record becomes a `Problem` naming the file, the record and
the field, and the rest are read. A file that is not JSON at all raises `RecordsFileError` with the
line and column.

Every JSON a user hands hippocamp is read through `loads_json` / `read_json` / `json_objects`: the
text is first scanned (strings skipped) for nesting deeper than `max_json_depth` (200 levels, or
``HIPPOCAMP_MAX_JSON_DEPTH``) and for integers longer than Python converts
(``sys.get_int_max_str_digits``), so a hostile file becomes a `JsonInputError` naming the file, line,
column and field, never a RecursionError or a bare ValueError.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from hippocamp.schema.problems import Problem, short_repr
from hippocamp.schema.record import HippoCampRecord

__all__ = [
    "DEFAULT_MAX_JSON_DEPTH",
    "JsonInputError",
    "RecordsFile",
    "RecordsFileError",
    "check_json",
    "dump_records",
    "json_objects",
    "loads_json",
    "max_json_depth",
    "read_json",
    "read_records",
    "write_records",
]

Container = Literal["array", "object", "single", "jsonl"]
_LIST_KEYS = ("records", "data", "questions", "items")


class RecordsFileError(Exception):
    """A records file that cannot be read at all (missing, not JSON, wrong top-level shape)."""

    def __init__(self, path: str | Path, message: str, line: int | None = None, column: int | None = None):
        self.path, self.line, self.column, self.message = str(path), line, column, message
        where = f"{path}" + (f":{line}" if line is not None else "") + (f":{column}" if column is not None else "")
        super().__init__(f"{where}: {message}")


class JsonInputError(RecordsFileError, ValueError):
    """JSON that cannot be read safely: not JSON, nested too deep, a number too long, not text.
    Names the file, the line and column, and the field where known."""


#: the deepest nesting of arrays and objects read from a user's JSON (HIPPOCAMP_MAX_JSON_DEPTH overrides)
DEFAULT_MAX_JSON_DEPTH = 200

_STRING = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"')
_KEY_BEFORE = re.compile(r'"((?:[^"\\\n]|\\.){0,200})"\s*:\s*$')


def max_json_depth() -> int:
    """The nesting limit: ``HIPPOCAMP_MAX_JSON_DEPTH`` when set to a positive integer, else 200."""
    raw = os.environ.get("HIPPOCAMP_MAX_JSON_DEPTH", "").strip()
    return int(raw) if raw.isdigit() and 0 < int(raw) <= 100_000 else DEFAULT_MAX_JSON_DEPTH


def _int_limit() -> int:
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
    return limit or 0


def _long_int(limit: int) -> re.Pattern[str]:
    return re.compile(r"(?<![\w.+\-])-?\d{" + str(limit + 1) + r",}(?![\d.eE])")


def _where(text: str, pos: int, line: int | None) -> tuple[int, int]:
    """1-based (line, column) of ``pos``; ``line`` is the line the text starts on (JSON Lines)."""
    start = text.rfind("\n", 0, pos) + 1
    return (line or 1) + text.count("\n", 0, pos), pos - start + 1


def _field_at(text: str, pos: int) -> str | None:
    m = _KEY_BEFORE.search(text[max(0, pos - 400) : pos])
    return m.group(1) if m else None


def check_json(
    text: str, path: str | Path = "<json>", line: int | None = None, depth: int | None = None, numbers: bool = True
) -> None:
    """Raise `JsonInputError` if ``text`` nests arrays/objects deeper than ``depth`` (default
    `max_json_depth`) or (with ``numbers``) holds an integer longer than Python converts; strings are
    skipped. Fast: strings are removed by one regular expression, then only brackets are counted."""
    limit = depth or max_json_depth()
    digits = _int_limit() if numbers else 0
    if "[" not in text and "{" not in text and not digits:
        return
    bare = _STRING.sub("", text) if '"' in text else text
    if bare.count("[") + bare.count("{") > limit:
        brackets = _NOT_BRACKET.sub("", bare)
        if max(accumulate(map(_DELTA.__getitem__, brackets)), default=0) > limit:
            _raise_deep(text, path, line, limit)
    if digits and len(bare) > digits and _long_int(digits).search(bare):
        _raise_long_int(text, path, line, digits)


_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_DELTA = {"[": 1, "{": 1, "]": -1, "}": -1}


def _tokens(text: str, extra: str = "") -> Iterator[re.Match[str]]:
    return re.finditer(_STRING.pattern + r"|[\[\]{}]" + extra, text)


def _raise_deep(text: str, path: str | Path, line: int | None, limit: int) -> None:
    message = f"nested deeper than {limit} levels (HIPPOCAMP_MAX_JSON_DEPTH); refused"
    level = 0
    for m in _tokens(text):
        tok = m.group(0)
        if tok in "[{":
            level += 1
            if level > limit:
                ln, col = _where(text, m.start(), line)
                raise JsonInputError(path, message, ln, col)
        elif tok in "]}":
            level -= 1
    raise JsonInputError(path, message, line)


def _raise_long_int(text: str, path: str | Path, line: int | None, digits: int) -> None:
    pattern = _long_int(digits).pattern
    for m in _tokens(text, "|" + pattern):
        tok = m.group(0)
        if tok[:1] in "-0123456789":
            ln, col = _where(text, m.start(), line)
            key = _field_at(text, m.start())
            where = f"field {key!r}: " if key is not None else ""
            raise JsonInputError(path, f"{where}{_long_int_message(len(tok.lstrip('-')), digits)}", ln, col)


def _long_int_message(n: int, digits: int) -> str:
    return f"a number of {n} digits, more than the {digits} Python converts; write it as a string"


def loads_json(
    text: str | bytes, path: str | Path = "<json>", line: int | None = None, depth: int | None = None
) -> Any:
    """``json.loads`` for a user's JSON: `check_json` first; any failure is a `JsonInputError` naming
    ``path`` (and ``line``, the line the text starts on, for JSON Lines) with the line and column."""
    if isinstance(text, bytes | bytearray):
        raw = bytes(text)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            ln = (line or 1) + raw[: exc.start].count(b"\n")
            raise JsonInputError(path, f"not UTF-8 text (byte {exc.start})", ln) from None
    check_json(text, path, line, depth)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonInputError(path, f"not valid JSON: {exc.msg}", (line or 1) + exc.lineno - 1, exc.colno) from None
    except (ValueError, RecursionError) as exc:  # what the scan missed: never a traceback
        raise JsonInputError(path, f"not readable JSON: {type(exc).__name__}: {str(exc)[:200]}", line) from None


def read_json(path: str | Path, what: str = "JSON file", depth: int | None = None) -> Any:
    """The JSON value of the file at ``path``; a missing file, a folder, unreadable bytes or bad JSON
    is a `JsonInputError` naming the file (``what`` says what was expected there)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise JsonInputError(path, "no such file") from None
    except IsADirectoryError:
        raise JsonInputError(path, f"is a directory, not a {what}") from None
    except OSError as exc:
        raise JsonInputError(path, f"cannot read: {exc.strerror or exc}") from None
    return loads_json(data, path, depth=depth)


class _TooLong:
    """An integer too long to convert, kept in place so the record holding it is reported, not the file."""

    def __init__(self, text: str):
        self.digits = len(text.lstrip("-"))

    def __repr__(self) -> str:
        return f"<a number of {self.digits} digits>"

    __str__ = __repr__


def _too_long_path(value: Any, prefix: str = "") -> tuple[str, _TooLong] | None:
    if isinstance(value, _TooLong):
        return prefix, value
    if isinstance(value, dict):
        items: Any = ((f"{prefix}.{k}" if prefix else str(k), v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{prefix}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for sub, v in items:
        if (found := _too_long_path(v, sub)) is not None:
            return found
    return None


def _lenient_int(text: str) -> int | _TooLong:
    digits = _int_limit()
    return _TooLong(text) if digits and len(text.lstrip("-")) > digits else int(text)


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
        try:
            text = Path(path).read_bytes().decode("utf-8-sig")
        except IsADirectoryError:
            raise JsonInputError(path, "is a directory, not a JSON Lines file") from None
        except UnicodeDecodeError as exc:
            raise JsonInputError(path, f"not UTF-8 text (byte {exc.start})") from None
        except OSError as exc:
            raise JsonInputError(path, f"cannot read: {exc.strerror or exc}") from None
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        item = loads_json(line, path, n)
        if not isinstance(item, dict):
            raise RecordsFileError(path, "expected a JSON object", n)
        yield n, item


def _decode(path: Path, text: str) -> tuple[Any, Container]:
    """The file's JSON (or JSON Lines) value; integers too long to convert are kept as `_TooLong`
    so that the record holding one is reported with its field, and the others are read."""
    check_json(text, path, numbers=False)  # long integers are reported per record
    try:
        return json.loads(text, parse_int=_lenient_int), "array"
    except json.JSONDecodeError as exc:
        first_error = exc
    # JSON Lines: every non-blank line a JSON object
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if len(lines) > 1 and lines[0][1].lstrip().startswith("{"):
        items = []
        for n, line in lines:
            try:
                items.append(json.loads(line, parse_int=_lenient_int))
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
        if (too_long := _too_long_path(item)) is not None:
            where, number = too_long
            out.problems.append(
                Problem(
                    severity="error",
                    rule="schema",
                    file=str(path),
                    record_id=None if rid is None or isinstance(rid, _TooLong) else str(rid),
                    record_index=index,
                    field=where,
                    message=f"record cannot be read: {_long_int_message(number.digits, _int_limit())}",
                    found=repr(number),
                )
            )
            continue
        shown_id = None if rid is None else _short_id(rid)
        try:
            record = HippoCampRecord.model_validate(item)
        except ValidationError as exc:
            for err in exc.errors():
                out.problems.append(
                    Problem(
                        severity="error",
                        rule="schema",
                        file=str(path),
                        record_id=shown_id,
                        record_index=index,
                        field=_loc(err.get("loc", ())),
                        message=f"record cannot be read: {_readable(str(err.get('msg', '')))}",
                        found=short_repr(err.get("input")),
                    )
                )
            continue
        except (ValueError, TypeError, RecursionError) as exc:  # e.g. agent_cap: a JSON string nested too deep
            where, why = _deep_string(item) or ("", f"{type(exc).__name__}: {_readable(str(exc))[:300]}")
            out.problems.append(
                Problem(
                    severity="error",
                    rule="schema",
                    file=str(path),
                    record_id=shown_id,
                    record_index=index,
                    field=where,
                    message=f"record cannot be read: {why}",
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


def _deep_string(item: Any) -> tuple[str, str] | None:
    """(field, reason) of a top-level string field holding JSON that cannot be read safely."""
    if not isinstance(item, dict):
        return None
    for key, value in item.items():
        if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
            try:
                check_json(value)
            except JsonInputError as exc:
                return str(key), f"the JSON in this string is {str(exc).split(': ', 1)[-1]}"
    return None


def _short_id(rid: Any) -> str:
    text = str(rid)
    return text if len(text) <= 80 else f"{text[:40]}…({len(text)} characters)"


def _readable(message: str) -> str:
    message = message.removeprefix("Value error, ")
    if "integer string conversion" in message:
        digits = re.search(r"value has (\d+) digits", message)
        return _long_int_message(int(digits.group(1)) if digits else 0, _int_limit())
    return message


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
