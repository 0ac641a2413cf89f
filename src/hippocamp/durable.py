"""Append-only JSON Lines files that survive ``kill -9``: runs' episodes, scores.

A writer appends each record as one whole line in one ``write``, then ``flush`` and ``os.fsync``,
so after a kill at any moment the file holds whole lines plus, at worst, one cut last line.
`read_lines` drops that cut line (and reports it, so the next writer first rewrites the file without
it, atomically) and keeps the first occurrence of each key; a bad line anywhere else is real damage
and is refused with its file and line number.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

__all__ = ["DurableLog", "JsonlError", "ReadResult", "read_lines"]

T = TypeVar("T")


class JsonlError(Exception):
    """A JSON Lines file that cannot be trusted: names the file and the line."""


@dataclass
class ReadResult(Generic[T]):
    items: list[T]
    #: the last line was cut (or lacks its newline): rewrite the file before appending
    damaged_tail: bool
    duplicates: int


def read_lines(
    path: Path, parse: Callable[[Any], T], key: Callable[[T], Hashable], what: str = "record"
) -> ReadResult[T]:
    """The records of ``path`` (none when it does not exist), first occurrence of each key kept.
    ``parse`` turns a decoded JSON value into a record (raising ValueError for a bad one)."""
    if not path.is_file():
        return ReadResult([], False, 0)
    lines = path.read_bytes().split(b"\n")
    tail_cut = lines[-1] != b""
    if not tail_cut:
        lines.pop()
    items: list[T] = []
    seen: set[Hashable] = set()
    duplicates, damaged = 0, False
    for number, raw in enumerate(lines, start=1):
        is_last = number == len(lines)
        if not raw.strip():
            if is_last:
                damaged = True
                continue
            raise JsonlError(f"{path}: line {number} is empty; only the last line may be damaged (by a kill)")
        try:
            item = parse(json.loads(raw))
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            if is_last:
                damaged = True
                continue
            reason = str(exc).splitlines()[0][:200]
            raise JsonlError(
                f"{path}: line {number} is not {what} ({reason}); only the last line may be damaged (by a kill): "
                "repair or remove it by hand"
            ) from None
        if is_last and tail_cut:
            damaged = True  # whole JSON but no newline: keep it, rewrite the file with its newline
        k = key(item)
        if k in seen:
            duplicates += 1
            continue
        seen.add(k)
        items.append(item)
    return ReadResult(items, damaged, duplicates)


class DurableLog:
    """Appends lines (bytes ending in ``\\n``) to one file; one writer at a time."""

    def __init__(self, path: Path):
        self.path = path
        self._fh: Any = None

    def open(self, keep: list[bytes] | None = None, rewrite: bool = False) -> None:
        """Open for appending; with ``rewrite`` first replace the file (atomically) by the lines ``keep``."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if rewrite:
            tmp = self.path.with_name(self.path.name + ".tmp")
            with tmp.open("wb") as fh:
                fh.write(b"".join(keep or []))
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
        self._fh.write(line)
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> DurableLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
