"""CSV and TSV files: encoding detected, delimiter sniffed, blocks of records as cell ranges
(``{"unit": "cells", "position": "A1:C30"}``, no sheet name: the validator maps such a range to the
file's only sheet; rows are CSV records; see `hippocamp.perceive.grid`).
"""

from __future__ import annotations

import contextlib
import csv
import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from hippocamp.perceive.base import Part, ReadContext, ReadError
from hippocamp.perceive.decode import read_decoded
from hippocamp.perceive.grid import Grid, cell_text, grid_segments
from hippocamp.registry import register
from hippocamp.schema.segment import Segment

__all__ = ["CsvReader", "sniff_delimiter"]


_DELIMITERS = ",;\t|"


def sniff_delimiter(sample: str, default: str = ",") -> str:
    """The delimiter of a CSV sample: csv.Sniffer among ``, ; TAB |``, else the most regular one."""
    lines = [ln for ln in sample.splitlines()[:50] if ln.strip()]
    if len(lines) > 1 and sample:
        with contextlib.suppress(csv.Error):
            return csv.Sniffer().sniff("\n".join(lines), delimiters=_DELIMITERS).delimiter
    best, best_score = default, 0.0
    for d in _DELIMITERS:
        counts = [ln.count(d) for ln in lines]
        if not counts or max(counts) == 0:
            continue
        # the share of lines with the most common count, weighted by that count
        common = max(set(counts), key=counts.count)
        score = counts.count(common) / len(counts) * (1 if common else 0) + min(common, 10) / 100
        if score > best_score:
            best, best_score = d, score
    return best


@register("reader", "csv")
class CsvReader:
    """CSV and TSV: encoding detected, delimiter sniffed, blocks of records as cell ranges."""

    name: ClassVar[str] = "csv"
    extensions: ClassVar[tuple[str, ...]] = ("csv", "tsv", "tab")
    parts: ClassVar[tuple[Part, ...]] = ()

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        decoded = read_decoded(path, ctx)
        text = decoded.text
        default = "\t" if ctx.info.type in ("tsv", "tab") else ","
        delimiter = sniff_delimiter(text[:65536], default)
        meta: dict[str, Any] = {"delimiter": delimiter}
        if not decoded.utf8:
            meta["encoding"] = decoded.encoding
        grid = Grid(None, meta=meta)
        try:
            for number, row in enumerate(_csv_rows(text, delimiter), start=1):
                grid.add(number, [cell_text(v) for v in row])
        except csv.Error as exc:
            raise ReadError(f"malformed CSV: {exc}") from None
        return grid_segments(grid, ctx)


def _csv_rows(text: str, delimiter: str) -> Iterable[list[str]]:
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, 16 * 1024 * 1024))
    try:
        yield from csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    finally:
        csv.field_size_limit(limit)
