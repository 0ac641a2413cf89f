"""Spreadsheet grids (XLSX, XLS, CSV/TSV) as segments, block of rows by block of rows.

Locators: ``{"unit": "cells", "position": "Budget!A1:D30"}`` for a block of rows (at most `MAX_ROWS`
rows or about `MAX_GRID_CHARS` characters, all numbers 1-based), rendered tab-separated from the first
to the last used column of the sheet; blocks after the first repeat the sheet's first row (its header)
on their first line, with ``meta["header_row"]`` saying so. A grid without a sheet name (CSV/TSV) gives
``"A1:C30"``. Formulas of a block's rows go to ``meta["formulas"]`` (``{"B4": "=SUM(B2:B3)"}``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

from hippocamp.perceive.base import ReadContext
from hippocamp.perceive.plaintext import cut_to_fit
from hippocamp.schema.locators import CellRange
from hippocamp.schema.segment import Segment

__all__ = ["MAX_COLUMNS", "MAX_GRID_CHARS", "MAX_ROWS", "Grid", "cell_text", "column_letter", "grid_segments"]


#: a spreadsheet segment holds at most this many rows ...
MAX_ROWS = 30
#: ... and about this many characters
MAX_GRID_CHARS = 1500


def column_letter(index: int) -> str:
    """``1 -> "A"``, ``27 -> "AA"``."""
    letters = ""
    while index > 0:
        index, rem = divmod(index - 1, 26)
        letters = chr(65 + rem) + letters
    return letters


def cell_text(value: Any) -> str:
    """A cell value as a spreadsheet shows it, on one line."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.15g}"
    if isinstance(value, datetime):
        if value.time() == time(0):
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec="seconds" if not value.microsecond else "auto")
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return str(value)
    text = str(value)
    return " ".join(text.split()) if any(c in text for c in "\t\r\n") else text


@dataclass
class Grid:
    """The non-empty rows of one sheet: ``(row number, cell texts from column 1)``, and formulas."""

    sheet: str | None
    rows: list[tuple[int, list[str]]] = field(default_factory=list)
    formulas: dict[int, list[tuple[int, str]]] = field(default_factory=dict)  # row -> [(column, formula)]
    meta: dict[str, Any] = field(default_factory=dict)

    #: cells past the last column a spreadsheet can have (XFD) are dropped, and counted
    cut: int = 0

    def add(self, number: int, values: list[str]) -> None:
        if len(values) > MAX_COLUMNS:
            self.cut += 1
            del values[MAX_COLUMNS:]
        while values and not values[-1].strip():
            values.pop()
        if values:
            self.rows.append((number, values))


#: columns of a sheet (A..XFD): a CSV row with more cells is cut there, with a note
MAX_COLUMNS = 16384


def grid_segments(grid: Grid, ctx: ReadContext) -> list[Segment]:
    if grid.cut:
        where = f"sheet {grid.sheet!r}: " if grid.sheet else ""
        ctx.note(f"{where}{grid.cut} row(s) longer than {MAX_COLUMNS:,} columns (XFD): the cells past XFD not read")
    if not grid.rows:
        return []
    first_col = min(next(i for i, v in enumerate(vals) if v.strip()) for _, vals in grid.rows) + 1
    last_col = max(len(vals) for _, vals in grid.rows)
    letters = (column_letter(first_col), column_letter(last_col))

    def render(vals: list[str]) -> str:
        return "\t".join(vals[first_col - 1 : last_col]).rstrip("\t")

    header_row, header_vals = grid.rows[0]
    header = render(header_vals)
    segments: list[Segment] = []
    block: list[tuple[int, str]] = []

    def flush() -> None:
        nonlocal block
        if not block:
            return
        first, last = block[0][0], block[-1][0]
        ref = f"{letters[0]}{first}:{letters[1]}{last}"
        if first == last and first_col == last_col:
            ref = f"{letters[0]}{first}"
        lines = [t for _, t in block]
        meta = dict(grid.meta)
        if first > header_row:
            lines.insert(0, header)
            meta["header_row"] = header_row
        rows = dict.fromkeys(n for n, _ in block)  # a long row cut in pieces is in the block several times
        formulas = {f"{column_letter(c)}{r}": f for r in rows for c, f in grid.formulas.get(r, ())}
        if formulas:
            meta["formulas"] = formulas
        segments.append(ctx.segment("\n".join(lines), CellRange(unit="cells", sheet=grid.sheet, ref=ref), **meta))
        block = []

    size = 0
    for number, vals in grid.rows:
        for piece in cut_to_fit(render(vals), MAX_GRID_CHARS):
            if block and (size + len(piece) + 1 > MAX_GRID_CHARS or len(block) >= MAX_ROWS):
                flush()
                size = len(header) + 1
            block.append((number, piece))
            size += len(piece) + 1
    flush()
    return segments
