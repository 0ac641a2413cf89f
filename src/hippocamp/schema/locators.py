"""Typed evidence locators: where in a file a piece of evidence sits.

HippoCamp writes a locator as ``{"unit": ..., "position": ...}``. Units and position shapes vary
between annotators and releases, so parsing is liberal and each locator keeps the JSON it was read
from (see `hippocamp.schema._shape`). Known units become typed models:

============  ===========================================  =========================================
kind          units accepted                               position
============  ===========================================  =========================================
page          page, pages, system_page, printed_page, ...  ``{"system_page": 3, "printed_page": "iii"}``,
                                                           ``3``, ``"3-5"``, ``{"start": 3, "end": 5}``
region        region, bbox, box, table, figure, ...        ``{"page": 2, "bbox": [x0, y0, x1, y1]}``
time          timestamp, time, time_range, seconds, ...    ``{"start": "00:01:02.5", "end": "01:10"}``,
                                                           ``"01:02-01:10"``, ``[62.5, 70]``
cells         cell, cells, range, sheet, spreadsheet, ...  ``"Sheet1!A1:B4"``, ``{"sheet": ..., "range": ...}``
slide         slide, slides                                ``4``, ``{"slide": 4}``, ``"4-5"``
line          line, lines, message, paragraph, ...         ``12``, ``"12-15"``, ``{"message_id": "m3"}``
item          item, event, record, email, attachment, ...  ``{"id": "uid-1", "at": "2024-10-12T10:30"}``, ``3``
============  ===========================================  =========================================

A unit we do not know becomes an `UnknownLocator` that keeps unit and position verbatim; a known
unit whose position cannot be read becomes an `InvalidLocator` carrying the reason. Neither is
dropped: the validator reports both, and writing gives back what was read.
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar

from pydantic import Field, ValidationError, field_validator, model_validator

from hippocamp.schema._shape import Shaped, Style

__all__ = [
    "CellRange",
    "InvalidLocator",
    "ItemLocator",
    "LineLocator",
    "Locator",
    "PageLocator",
    "RegionLocator",
    "SlideLocator",
    "TimeRange",
    "UnknownLocator",
    "cell_bounds",
    "format_timestamp",
    "overlaps",
    "parse_locator",
    "parse_timestamp",
]


class Locator(Shaped):
    """Base of all locators. ``unit`` is kept exactly as written."""

    kind: ClassVar[str] = "unknown"
    canonical_unit: ClassVar[str] = "unknown"
    unit: str = ""

    def position(self) -> Any:
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.unit}: {self.position()}"

    def dump(self, style: Style | None = None) -> Any:
        if self.raw is not None and not self.changed():
            return self.raw
        return {"unit": self.unit or self.canonical_unit, "position": self.position()}


# -- time ------------------------------------------------------------------------------------------
_TS_RE = re.compile(r"^\s*(?:(\d+):)?(\d{1,2}):(\d{1,2}(?:[.,]\d+)?)\s*$")


def parse_timestamp(value: Any) -> float:
    """Seconds from ``62.5``, ``"62.5"``, ``"62.5s"``, ``"01:02.5"`` (MM:SS) or ``"00:01:02,5"`` (HH:MM:SS)."""
    if isinstance(value, bool):
        raise ValueError(f"not a timestamp: {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip().lower().removesuffix("s").strip()
        match = _TS_RE.match(text)
        if match:
            hours, minutes, secs = match.groups()
            minute_value, second_value = int(minutes), float(secs.replace(",", "."))
            if second_value >= 60 or (hours is not None and minute_value >= 60):
                raise ValueError(f"not a timestamp (minutes/seconds out of range): {value!r}")
            seconds = int(hours or 0) * 3600 + minute_value * 60 + second_value
        else:
            try:
                seconds = float(text)
            except ValueError:
                raise ValueError(f"not a timestamp (want seconds, MM:SS or HH:MM:SS(.mmm)): {value!r}") from None
    else:
        raise ValueError(f"not a timestamp: {value!r}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"timestamp must be a finite number of seconds >= 0, got {value!r}")
    return seconds


def format_timestamp(seconds: float) -> str:
    """``HH:MM:SS`` or ``HH:MM:SS.mmm`` (milliseconds only when needed)."""
    millis = round(seconds * 1000)
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    text = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{text}.{millis:03d}" if millis else text


_RANGE_SPLIT = re.compile(r"\s*(?:[-–—]|\bto\b)\s*")


def _split_range(text: str) -> list[str]:
    # "01:02-01:10", "3 - 5", "12 to 15"; never split a leading minus sign
    return [p for p in _RANGE_SPLIT.split(text.strip()) if p != ""]


class TimeRange(Locator):
    """A span of an audio or video file in seconds; ``end`` is None for a single instant."""

    kind: ClassVar[str] = "time"
    canonical_unit: ClassVar[str] = "timestamp"
    start: float
    end: float | None = None

    @classmethod
    def prepare(cls, data: Any) -> Any:
        unit, pos = _unit_position(data)
        if isinstance(pos, dict):
            start = _first(pos, "start", "start_time", "begin", "from", "timestamp", "time", "t")
            end = _first(pos, "end", "end_time", "stop", "to")
        elif isinstance(pos, list | tuple):
            if not 1 <= len(pos) <= 2:
                raise ValueError(f"a time range list needs [start] or [start, end], got {pos!r}")
            start, end = pos[0], pos[1] if len(pos) == 2 else None
        elif isinstance(pos, str):
            parts = _split_range(pos)
            if not 1 <= len(parts) <= 2:
                raise ValueError(f"cannot read a time range from {pos!r}")
            start, end = parts[0], parts[1] if len(parts) == 2 else None
        else:
            start, end = pos, None
        if start is None:
            raise ValueError(f"time range has no start: {pos!r}")
        return {"unit": unit, "start": parse_timestamp(start), "end": None if end is None else parse_timestamp(end)}

    def position(self) -> Any:
        out = {"start": format_timestamp(self.start)}
        if self.end is not None:
            out["end"] = format_timestamp(self.end)
        return out

    @property
    def stop(self) -> float:
        return self.start if self.end is None else self.end


# -- pages -----------------------------------------------------------------------------------------
def _as_page(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a page number, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip().lower()
        text = re.sub(r"^(?:page|pages|pp?\.?)\s*", "", text)
        if text.isdigit():
            return int(text)
    raise ValueError(f"{what} must be a whole page number, got {value!r}")


class PageLocator(Locator):
    """A page (or page range) of a paged document. ``system_page`` is 1-based; ``printed_page`` is
    the label printed on the page (``"iii"``, ``"A-4"``), kept as text."""

    kind: ClassVar[str] = "page"
    canonical_unit: ClassVar[str] = "page"
    system_page: int | None = None
    system_page_end: int | None = None
    printed_page: str | None = None

    @classmethod
    def prepare(cls, data: Any) -> Any:
        unit, pos = _unit_position(data)
        system = end = printed = None
        if isinstance(pos, dict):
            sp = _first(pos, "system_page", "page", "page_number", "page_index", "start", "from")
            pp = _first(pos, "printed_page", "page_label", "label")
            ep = _first(pos, "system_page_end", "end_page", "end", "to")
            system = None if sp is None else _as_page(sp, "system_page")
            end = None if ep is None else _as_page(ep, "end page")
            printed = None if pp is None else str(pp)
        elif isinstance(pos, list | tuple):
            if not 1 <= len(pos) <= 2:
                raise ValueError(f"a page list needs [page] or [first, last], got {pos!r}")
            system = _as_page(pos[0], "page")
            end = _as_page(pos[1], "page") if len(pos) == 2 else None
        elif isinstance(pos, str) and unit.lower() in {"printed_page", "page_label"}:
            printed = pos
        elif isinstance(pos, str):
            parts = _split_range(pos)
            if len(parts) == 2:
                system, end = _as_page(parts[0], "page"), _as_page(parts[1], "page")
            else:
                system = _as_page(pos, "page")
        elif pos is not None:
            if unit.lower() in {"printed_page", "page_label"}:
                printed = str(pos)
            else:
                system = _as_page(pos, "page")
        if system is None and printed is None:
            raise ValueError(f"page locator needs system_page or printed_page, got {pos!r}")
        return {"unit": unit, "system_page": system, "system_page_end": end, "printed_page": printed}

    @field_validator("system_page", "system_page_end")
    @classmethod
    def _positive(cls, v: int | None) -> int | None:
        if v is not None and v < 1:
            raise ValueError(f"page numbers are 1-based, got {v}")
        return v

    @model_validator(mode="after")
    def _ordered(self) -> PageLocator:
        if (
            self.system_page_end is not None
            and self.system_page is not None
            and self.system_page_end < self.system_page
        ):
            raise ValueError(f"page range ends ({self.system_page_end}) before it starts ({self.system_page})")
        return self

    def pages(self) -> range:
        if self.system_page is None:
            return range(0)
        return range(self.system_page, (self.system_page_end or self.system_page) + 1)

    def position(self) -> Any:
        out: dict[str, Any] = {}
        if self.system_page is not None:
            out["system_page"] = self.system_page
        if self.system_page_end is not None:
            out["system_page_end"] = self.system_page_end
        if self.printed_page is not None:
            out["printed_page"] = self.printed_page
        return out


class RegionLocator(Locator):
    """A region of a page (``page`` set) or of an image (``page`` None): a box ``[x0, y0, x1, y1]``
    and/or a label such as ``"Table 3"``. ``box_units``: ``norm`` (0–1), ``px`` or ``pt``; guessed
    as ``norm`` when every coordinate is within 0–1."""

    kind: ClassVar[str] = "region"
    canonical_unit: ClassVar[str] = "region"
    page: int | None = None
    box: tuple[float, float, float, float] | None = None
    box_units: str | None = None
    label: str | None = None

    @classmethod
    def prepare(cls, data: Any) -> Any:
        unit, pos = _unit_position(data)
        page = box = units = label = None
        if isinstance(pos, dict):
            p = _first(pos, "page", "system_page", "page_number")
            page = None if p is None else _as_page(p, "page")
            raw_box = _first(pos, "bbox", "box", "region", "coords", "xyxy")
            if raw_box is None and all(k in pos for k in ("x", "y", "w", "h")):
                raw_box = {"x": pos["x"], "y": pos["y"], "w": pos["w"], "h": pos["h"]}
            box = None if raw_box is None else _as_box(raw_box)
            units = _first(pos, "box_units", "units", "coord_units")
            lab = _first(pos, "label", "name", "caption", "table", "figure")
            label = None if lab is None else str(lab)
        elif isinstance(pos, list | tuple):
            box = _as_box(pos)
        elif isinstance(pos, str):
            label = pos
        elif pos is not None:
            page = _as_page(pos, "page")
        if box is None and label is None and page is None:
            raise ValueError(f"region locator needs a page, a box or a label, got {pos!r}")
        if box is not None and units is None and all(0 <= c <= 1 for c in box):
            units = "norm"
        return {"unit": unit, "page": page, "box": box, "box_units": units, "label": label}

    @model_validator(mode="after")
    def _well_formed(self) -> RegionLocator:
        if self.page is not None and self.page < 1:
            raise ValueError(f"page numbers are 1-based, got {self.page}")
        if self.box is not None:
            x0, y0, x1, y1 = self.box
            if not (x1 > x0 and y1 > y0):
                raise ValueError(f"box must have x1 > x0 and y1 > y0, got {list(self.box)}")
            if min(self.box) < 0:
                raise ValueError(f"box coordinates must be >= 0, got {list(self.box)}")
        return self

    def position(self) -> Any:
        out: dict[str, Any] = {}
        if self.page is not None:
            out["page"] = self.page
        if self.box is not None:
            out["bbox"] = list(self.box)
        if self.box_units is not None:
            out["box_units"] = self.box_units
        if self.label is not None:
            out["label"] = self.label
        return out


def _as_box(raw: Any) -> tuple[float, float, float, float]:
    if isinstance(raw, dict) and all(k in raw for k in ("x", "y", "w", "h")):
        x, y, w, h = (float(raw[k]) for k in ("x", "y", "w", "h"))
        return (x, y, x + w, y + h)
    if isinstance(raw, dict) and all(k in raw for k in ("x0", "y0", "x1", "y1")):
        return tuple(float(raw[k]) for k in ("x0", "y0", "x1", "y1"))  # type: ignore[return-value]
    if isinstance(raw, list | tuple) and len(raw) == 4:
        try:
            return tuple(float(v) for v in raw)  # type: ignore[return-value]
        except (TypeError, ValueError):
            pass
    raise ValueError(f"a box is [x0, y0, x1, y1] or {{x, y, w, h}}, got {raw!r}")


# -- spreadsheet cells -----------------------------------------------------------------------------
_CELL_RE = re.compile(r"^\$?([A-Za-z]{1,3})\$?(\d{1,7})$")
_COLS_RE = re.compile(r"^\$?([A-Za-z]{1,3})$")
_ROWS_RE = re.compile(r"^\$?(\d{1,7})$")


def _col_number(letters: str) -> int:
    n = 0
    for ch in letters.upper():
        n = n * 26 + (ord(ch) - 64)
    return n


def cell_bounds(ref: str) -> tuple[int, int, int, int]:
    """(first_col, first_row, last_col, last_row), 1-based, of an A1 reference such as ``B2:D10``,
    ``C7``, ``A:C`` (whole columns; rows 1..∞ as 0) or ``3:5`` (whole rows; columns as 0)."""
    parts = ref.strip().split(":")
    if not 1 <= len(parts) <= 2 or not all(parts):
        raise ValueError(f"not an A1 cell reference: {ref!r}")
    cells = [_CELL_RE.match(p) for p in parts]
    if all(cells):
        (c0, r0), (c1, r1) = ((_col_number(m.group(1)), int(m.group(2))) for m in (cells[0], cells[-1]))  # type: ignore[union-attr]
        if min(r0, r1) < 1:
            raise ValueError(f"rows are 1-based in {ref!r}")
    elif len(parts) == 2 and all(_COLS_RE.match(p) for p in parts):
        c0, c1, r0, r1 = _col_number(parts[0].strip("$")), _col_number(parts[1].strip("$")), 0, 0
    elif len(parts) == 2 and all(_ROWS_RE.match(p) for p in parts):
        r0, r1, c0, c1 = int(parts[0].strip("$")), int(parts[1].strip("$")), 0, 0
    else:
        raise ValueError(f"not an A1 cell reference: {ref!r}")
    return min(c0, c1), min(r0, r1), max(c0, c1), max(r0, r1)


class CellRange(Locator):
    """Cells of a spreadsheet: ``sheet`` (None for CSV or the only sheet) and an A1 ``ref``."""

    kind: ClassVar[str] = "cells"
    canonical_unit: ClassVar[str] = "cells"
    sheet: str | None = None
    ref: str

    @classmethod
    def prepare(cls, data: Any) -> Any:
        unit, pos = _unit_position(data)
        sheet = ref = None
        if isinstance(pos, dict):
            s = _first(pos, "sheet", "sheet_name", "worksheet", "tab")
            sheet = None if s is None else str(s)
            r = _first(pos, "range", "ref", "cells", "cell", "a1")
            ref = None if r is None else str(r)
            if ref is not None and "!" in ref and sheet is None:
                sheet, ref = _split_sheet(ref)
        elif isinstance(pos, str):
            sheet, ref = _split_sheet(pos) if "!" in pos else (None, pos)
        if not ref:
            raise ValueError(f"cell locator needs an A1 range such as 'Sheet1!B2:D9', got {pos!r}")
        cell_bounds(ref)
        return {"unit": unit, "sheet": sheet, "ref": ref.strip()}

    def bounds(self) -> tuple[int, int, int, int]:
        return cell_bounds(self.ref)

    def position(self) -> Any:
        return f"{_quote_sheet(self.sheet)}!{self.ref}" if self.sheet else self.ref


def _split_sheet(text: str) -> tuple[str, str]:
    sheet, _, ref = text.rpartition("!")
    sheet = sheet.strip()
    if len(sheet) >= 2 and sheet[0] == sheet[-1] == "'":
        sheet = sheet[1:-1].replace("''", "'")
    return sheet, ref.strip()


def _quote_sheet(sheet: str) -> str:
    return f"'{sheet.replace(chr(39), chr(39) * 2)}'" if re.search(r"[^A-Za-z0-9_]", sheet) else sheet


# -- slides and lines ------------------------------------------------------------------------------
def _number_span(pos: Any, keys: tuple[str, ...], end_keys: tuple[str, ...], what: str) -> tuple[int, int | None]:
    if isinstance(pos, dict):
        first, last = _first(pos, *keys), _first(pos, *end_keys)
    elif isinstance(pos, list | tuple) and 1 <= len(pos) <= 2:
        first, last = pos[0], pos[1] if len(pos) == 2 else None
    elif isinstance(pos, str):
        parts = _split_range(pos)
        if not 1 <= len(parts) <= 2:
            raise ValueError(f"cannot read a {what} number from {pos!r}")
        first, last = parts[0], parts[1] if len(parts) == 2 else None
    else:
        first, last = pos, None
    if first is None:
        raise ValueError(f"{what} locator needs a {what} number, got {pos!r}")
    start = _as_int(first, what)
    end = None if last is None else _as_int(last, what)
    if start < 1 or (end is not None and end < start):
        raise ValueError(f"{what} numbers are 1-based and ranges ascend, got {pos!r}")
    return start, end


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a number, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = re.sub(rf"^(?:{what}s?|#)\s*", "", value.strip().lower())
        if text.isdigit():
            return int(text)
    raise ValueError(f"{what} must be a whole number, got {value!r}")


class SlideLocator(Locator):
    """A slide (1-based) or a run of slides of a presentation."""

    kind: ClassVar[str] = "slide"
    canonical_unit: ClassVar[str] = "slide"
    slide: int
    slide_end: int | None = None

    @classmethod
    def prepare(cls, data: Any) -> Any:
        unit, pos = _unit_position(data)
        start, end = _number_span(pos, ("slide", "slide_number", "index", "start"), ("slide_end", "end"), "slide")
        return {"unit": unit, "slide": start, "slide_end": end}

    def position(self) -> Any:
        return {"slide": self.slide} | ({"slide_end": self.slide_end} if self.slide_end is not None else {})


class LineLocator(Locator):
    """A line or run of lines of a text file, or a message of a thread/log (``message_id``)."""

    kind: ClassVar[str] = "line"
    canonical_unit: ClassVar[str] = "line"
    line: int | None = None
    line_end: int | None = None
    message_id: str | None = None

    @classmethod
    def prepare(cls, data: Any) -> Any:
        unit, pos = _unit_position(data)
        message_id = None
        if isinstance(pos, dict):
            mid = _first(pos, "message_id", "msg_id", "id", "dia_id")
            message_id = None if mid is None else str(mid)
            has_line = _first(pos, "line", "line_number", "start", "index", "paragraph") is not None
        else:
            has_line = True
            if unit.lower() in {"message", "message_id", "msg"} and isinstance(pos, str) and not pos.strip().isdigit():
                message_id, has_line = pos, False
        line = end = None
        if has_line:
            line, end = _number_span(
                pos, ("line", "line_number", "start", "index", "paragraph"), ("line_end", "end"), "line"
            )
        if line is None and message_id is None:
            raise ValueError(f"line/message locator needs a line number or a message id, got {pos!r}")
        return {"unit": unit, "line": line, "line_end": end, "message_id": message_id}

    def position(self) -> Any:
        out: dict[str, Any] = {}
        if self.message_id is not None:
            out["message_id"] = self.message_id
        if self.line is not None:
            out["line"] = self.line
        if self.line_end is not None:
            out["line_end"] = self.line_end
        return out


class ItemLocator(Locator):
    """An item of a file that holds many: a calendar event (occurrence), a mail in a mailbox, a
    record of a JSON export, an attachment. ``id`` (UID, Message-ID, key), ``index`` (1-based
    position) and ``at`` (an occurrence's start, ISO 8601) are each optional; one must be given."""

    kind: ClassVar[str] = "item"
    canonical_unit: ClassVar[str] = "item"
    id: str | None = None
    index: int | None = None
    at: str | None = None

    @classmethod
    def prepare(cls, data: Any) -> Any:
        unit, pos = _unit_position(data)
        if isinstance(pos, dict):
            raw_id = _first(pos, "id", "uid", "message_id", "key", "name")
            raw_index = _first(pos, "index", "number", "n")
            raw_at = _first(pos, "at", "start", "occurrence", "date")
        elif isinstance(pos, int) and not isinstance(pos, bool):
            raw_id, raw_index, raw_at = None, pos, None
        else:
            raw_id, raw_index, raw_at = pos, None, None
        index = None if raw_index is None else _as_int(raw_index, "item")
        if index is not None and index < 1:
            raise ValueError(f"item indexes are 1-based, got {index}")
        if raw_id is None and index is None and raw_at is None:
            raise ValueError(f"item locator needs an id, an index or a time, got {pos!r}")
        return {
            "unit": unit,
            "id": None if raw_id is None else str(raw_id),
            "index": index,
            "at": None if raw_at is None else str(raw_at),
        }

    def position(self) -> Any:
        out: dict[str, Any] = {}
        for key in ("id", "index", "at"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


class UnknownLocator(Locator):
    """A unit hippocamp does not know: kept verbatim, reported by the validator."""

    kind: ClassVar[str] = "unknown"
    value: Any = Field(default=None, exclude=False)

    @classmethod
    def prepare(cls, data: Any) -> Any:
        unit, pos = _unit_position(data, strict=False)
        return {"unit": unit, "value": pos}

    def position(self) -> Any:
        return self.value


class InvalidLocator(Locator):
    """A known unit whose position could not be read: kept verbatim with the reason."""

    kind: ClassVar[str] = "invalid"
    value: Any = None
    error: str = ""

    def position(self) -> Any:
        return self.value

    def dump(self, style: Style | None = None) -> Any:
        return self.raw if self.raw is not None else {"unit": self.unit, "position": self.value}


# -- dispatch --------------------------------------------------------------------------------------
_UNIT_ALIASES: dict[str, type[Locator]] = {}


def _alias(cls: type[Locator], *units: str) -> None:
    for unit in units:
        _UNIT_ALIASES[unit] = cls


_alias(
    PageLocator, "page", "pages", "system_page", "printed_page", "page_label", "page_number", "page_range", "pdf_page"
)
_alias(RegionLocator, "region", "page_region", "bbox", "box", "table", "figure", "image_region", "area", "crop")
_alias(
    TimeRange,
    "timestamp",
    "timestamps",
    "time",
    "time_range",
    "timestamp_range",
    "timerange",
    "seconds",
    "duration",
    "clip",
    "audio_time",
    "video_time",
)
_alias(CellRange, "cell", "cells", "cell_range", "range", "sheet", "spreadsheet", "sheet_range", "a1")
_alias(SlideLocator, "slide", "slides", "slide_number")
_alias(LineLocator, "line", "lines", "line_range", "message", "message_id", "msg", "paragraph", "row_line")
_alias(ItemLocator, "item", "event", "record", "entry", "email", "mail", "attachment", "part")


def _norm_unit(unit: str) -> str:
    return re.sub(r"[\s\-]+", "_", unit.strip().lower())


def locator_class(unit: str) -> type[Locator] | None:
    """The typed locator class for a unit as written, or None when the unit is unknown."""
    return _UNIT_ALIASES.get(_norm_unit(unit))


def known_units() -> dict[str, str]:
    return {unit: cls.kind for unit, cls in sorted(_UNIT_ALIASES.items())}


def parse_locator(raw: Any) -> Locator:
    """Read one locator; never raises for odd input (see `UnknownLocator`, `InvalidLocator`)."""
    if isinstance(raw, Locator):
        return raw
    unit = _guess_unit(raw)
    cls = locator_class(unit) if unit is not None else None
    if cls is None:
        return UnknownLocator.model_validate(raw)
    try:
        return cls.model_validate(raw)
    except (ValidationError, ValueError, TypeError) as exc:
        reason = _reason(exc)
        loc = InvalidLocator.model_validate(
            {"unit": unit, "value": _unit_position(raw, strict=False)[1], "error": reason}
        )
        loc._raw = raw
        loc._snapshot = loc._fields_json()
        return loc


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(str(e.get("msg", "")).removeprefix("Value error, ") for e in exc.errors())
    return str(exc)


def _guess_unit(raw: Any) -> str | None:
    """The unit of a raw locator; infer it from position keys when ``unit`` is absent."""
    if isinstance(raw, dict):
        unit = raw.get("unit", raw.get("type"))
        if isinstance(unit, str) and unit.strip():
            return unit
        keys = set(raw) - {"unit", "type"}
        inner = raw.get("position")
        if isinstance(inner, dict):
            keys |= set(inner)
        if keys & {"system_page", "printed_page", "page"} and not keys & {"bbox", "box"}:
            return "page"
        if keys & {"bbox", "box"}:
            return "region"
        if keys & {"start", "end", "start_time", "end_time", "timestamp"}:
            return "timestamp"
        if keys & {"sheet", "range", "cell", "cells"}:
            return "cells"
        if keys & {"slide"}:
            return "slide"
        if keys & {"line", "message_id"}:
            return "line"
    return None


_POSITION_KEYS = ("position", "value", "pos", "location", "loc")


def _unit_position(data: Any, strict: bool = True) -> tuple[str, Any]:
    """Split a raw locator into (unit as written, position)."""
    if not isinstance(data, dict):
        if strict:
            raise ValueError(f"a locator is an object {{unit, position}}, got {data!r}")
        return "", data
    unit = data.get("unit", data.get("type", ""))
    unit = unit if isinstance(unit, str) else str(unit)
    for key in _POSITION_KEYS:
        if key in data:
            return unit, data[key]
    rest = {k: v for k, v in data.items() if k not in ("unit", "type")}
    if len(rest) == 1 and _norm_unit(next(iter(rest))) == _norm_unit(unit or "-"):
        return unit, next(iter(rest.values()))
    return unit, rest or None


def _first(mapping: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in mapping and mapping[key] is not None and mapping[key] != "":
            return mapping[key]
    return None


# -- overlap -------------------------------------------------------------------------------------
def _spans(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _cells_overlap(a: CellRange, b: CellRange) -> bool:
    if a.sheet and b.sheet and a.sheet.lower() != b.sheet.lower():
        return False
    try:
        ac0, ar0, ac1, ar1 = cell_bounds(a.ref)
        bc0, br0, bc1, br1 = cell_bounds(b.ref)
    except ValueError:
        return False
    inf = float("inf")
    rows = _spans((ar0 or 1, ar1 or inf), (br0 or 1, br1 or inf))
    cols = _spans((ac0 or 1, ac1 or inf), (bc0 or 1, bc1 or inf))
    return rows and cols


def overlaps(a: Locator, b: Locator, slack: float = 0.0) -> bool:
    """Whether two locators of the same kind point at overlapping content: the same page, slides,
    cells, lines or paragraphs of the same unit, boxes that intersect (on the same page when both
    say), time ranges that meet within ``slack`` seconds, or items with the same id or index.
    Locators of different kinds never overlap."""
    if isinstance(a, PageLocator) and isinstance(b, PageLocator):
        if a.system_page is not None and b.system_page is not None:
            return _spans((a.system_page, a.system_page_end or a.system_page),
                          (b.system_page, b.system_page_end or b.system_page))  # fmt: skip
        return a.printed_page is not None and a.printed_page == b.printed_page
    if isinstance(a, SlideLocator) and isinstance(b, SlideLocator):
        return _spans((a.slide, a.slide_end or a.slide), (b.slide, b.slide_end or b.slide))
    if isinstance(a, CellRange) and isinstance(b, CellRange):
        return _cells_overlap(a, b)
    if isinstance(a, LineLocator) and isinstance(b, LineLocator):
        if a.message_id is not None or b.message_id is not None:
            return a.message_id == b.message_id
        if a.line is None or b.line is None or (a.unit or "line") != (b.unit or "line"):
            return False
        return _spans((a.line, a.line_end or a.line), (b.line, b.line_end or b.line))
    if isinstance(a, RegionLocator) and isinstance(b, RegionLocator):
        if a.page is not None and b.page is not None and a.page != b.page:
            return False
        if a.box is not None and b.box is not None:
            return _spans((a.box[0], a.box[2]), (b.box[0], b.box[2])) and _spans(
                (a.box[1], a.box[3]), (b.box[1], b.box[3])
            )
        return a.label is not None and a.label == b.label
    if isinstance(a, TimeRange) and isinstance(b, TimeRange):
        a_end = a.end if a.end is not None else a.start
        b_end = b.end if b.end is not None else b.start
        return _spans((a.start - slack, a_end + slack), (b.start, b_end))
    if isinstance(a, ItemLocator) and isinstance(b, ItemLocator):
        if a.id is not None and b.id is not None:
            return a.id == b.id and (a.at is None or b.at is None or a.at == b.at)
        return a.index is not None and a.index == b.index
    return False
