"""Append-only JSON Lines files that survive ``kill -9``: runs' episodes, scores.

A writer appends each record as one whole line in one ``write``, then ``flush`` and ``os.fsync``,
so after a kill at any moment the file holds whole lines plus, at worst, one cut last line.
`read_lines` drops that cut line (and reports it, so the next writer first rewrites the file without
it, atomically) and keeps the first occurrence of each key. A bad line anywhere else is real damage:
it is skipped, reported with its file and line number (`ReadResult.bad`, and a warning on the
``hippocamp`` logger), and kept verbatim when the file is rewritten, so nothing is lost and the rest
is still read. JSON is read through `hippocamp.schema.io.loads_json` (nesting and number limits).

Every line written goes through `hippocamp.redact.redact_text`: no secret reaches these files.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from hippocamp.redact import redact_text

__all__ = ["BadLine", "DurableLog", "JsonlError", "ReadResult", "read_lines"]

T = TypeVar("T")
log = logging.getLogger("hippocamp.durable")
_warned: set[tuple[Path, int, bytes]] = set()


class JsonlError(Exception):
    """A JSON Lines file that cannot be read at all (a folder, unreadable): names the file."""


@dataclass(frozen=True)
class BadLine:
    """A damaged line that is not the last: skipped when reading, kept when the file is rewritten."""

    path: Path
    number: int
    reason: str
    raw: bytes

    def __str__(self) -> str:
        return f"{self.path}: line {self.number}: {self.reason}; skipped (kept in the file: repair or remove it)"


@dataclass
class ReadResult(Generic[T]):
    items: list[T]
    #: the last line was cut (or lacks its newline): rewrite the file before appending
    damaged_tail: bool
    duplicates: int
    #: damaged lines before the last, skipped
    bad: list[BadLine] = field(default_factory=list)

    def kept_bad_lines(self) -> list[bytes]:
        """The bad lines as they were, to keep when the file is rewritten."""
        return [b.raw + b"\n" for b in self.bad if b.raw.strip()]


def _reason(what: str, exc: Exception) -> str:
    """``not WHAT (column C): why`` for a line that failed to parse."""
    message = getattr(exc, "message", None)  # a JsonInputError: its message without the file and line
    column = getattr(exc, "column", None) if isinstance(message, str) else None
    if not isinstance(message, str):
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    where = f" (column {column})" if column else ""
    return f"not {what}{where}: {redact_text(message)[:300]}"


def read_lines(
    path: Path, parse: Callable[[Any], T], key: Callable[[T], Hashable], what: str = "record"
) -> ReadResult[T]:
    """The records of ``path`` (none when it does not exist), first occurrence of each key kept.
    ``parse`` turns a decoded JSON value into a record (raising ValueError for a bad one). Damaged
    lines before the last are skipped and listed in ``bad`` (each also logged as a warning)."""
    from hippocamp.schema.io import loads_json

    if not path.exists():
        return ReadResult([], False, 0)
    if not path.is_file():
        raise JsonlError(f"{path}: is a directory, not a JSON Lines file; move it aside")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise JsonlError(f"{path}: cannot read: {exc.strerror or exc}") from None
    lines = data.split(b"\n")
    tail_cut = lines[-1] != b""
    if not tail_cut:
        lines.pop()
    items: list[T] = []
    seen: set[Hashable] = set()
    bad: list[BadLine] = []
    duplicates, damaged = 0, False
    for number, raw in enumerate(lines, start=1):
        is_last = number == len(lines)
        if not raw.strip():
            if is_last:
                damaged = True
            else:
                bad.append(BadLine(path, number, "empty line", raw))
            continue
        try:
            item = parse(loads_json(raw, path, number))
        except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
            if is_last:
                damaged = True
                continue
            bad.append(BadLine(path, number, _reason(what, exc), raw))
            continue
        if is_last and tail_cut:
            damaged = True  # whole JSON but no newline: keep it, rewrite the file with its newline
        k = key(item)
        if k in seen:
            duplicates += 1
            continue
        seen.add(k)
        items.append(item)
    for b in bad:
        if (b.path, b.number, b.raw) not in _warned:  # once per process (a file is often read twice)
            _warned.add((b.path, b.number, b.raw))
            log.warning("%s", b)
    return ReadResult(items, damaged, duplicates, bad)


def _redacted(line: bytes) -> bytes:
    """The line with every secret blanked (`redact_text` keeps JSON valid); bytes that are not UTF-8
    (a damaged line kept verbatim) are redacted as far as they decode."""
    text = line.decode("utf-8", errors="surrogateescape")
    clean = redact_text(text)
    return line if clean == text else clean.encode("utf-8", errors="surrogateescape")


class DurableLog:
    """Appends lines (bytes ending in ``\\n``) to one file; one writer at a time. Every line is redacted
    (`hippocamp.redact.redact_text`) unless ``redact=False`` (content that holds no secret and must be
    kept byte for byte, e.g. generated data)."""

    def __init__(self, path: Path, redact: bool = True):
        self.path = path
        self.redact = redact
        self._fh: Any = None

    def open(self, keep: list[bytes] | None = None, rewrite: bool = False) -> None:
        """Open for appending; with ``rewrite`` first replace the file (atomically) by the lines ``keep``."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists() and not self.path.is_file():
            raise JsonlError(f"{self.path}: is a directory, not a JSON Lines file; move it aside")
        if rewrite:
            tmp = self.path.with_name(self.path.name + ".tmp")
            with tmp.open("wb") as fh:
                fh.write(b"".join(self._clean(line) for line in keep or []))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        self._fh = self.path.open("ab")

    def append(self, line: bytes) -> None:
        """The whole line in one write, then flush and fsync: a kill leaves at most a cut last line."""
        if self._fh is None:
            raise RuntimeError(f"{self.path}: not open")
        if not line.endswith(b"\n"):
            raise ValueError("a line must end with a newline")
        self._fh.write(self._clean(line))
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def _clean(self, line: bytes) -> bytes:
        return _redacted(line) if self.redact else line

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> DurableLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
