"""Evidence renderers for hippocamp studio: a file and a locator in, something a web page can show out.

Every function is pure (no state but a lock around PDFium, which is not thread-safe), takes a path the
caller has already checked to be inside an allowed root, and is bounded by `Limits` (bytes read, pixels
decoded, pages, cells, lines), so a hostile file costs at most that much. Every failure is a
`RenderError` whose message names the file and says what is wrong in words a person understands.

Locators land where hippocamp's own readers put them (`hippocamp.perceive`):

* PDF pages are 1-based (``system_page``); a region's box is in PDF points from the page's top-left
  corner (as on a rendered page), or ``norm`` (0–1); ``px`` on a PDF is read as pixels at 72 dpi (= pt).
* A picture's box is in pixels of the picture as displayed (EXIF orientation applied), origin top-left.
* Cells are A1 references, rows 1-based (CSV rows are CSV records, as `hippocamp.perceive.delimited`
  numbers them); a range without a sheet means the first (for a CSV, the only) sheet.
* Lines are numbered as an editor numbers them (`hippocamp.perceive.plaintext.split_lines`).
* Slides are 1-based, their text read in the order `hippocamp.perceive.slides` reads it.
* Everything else (mail paragraphs, calendar events, JSON records, DOCX paragraphs and tables, XLS cells)
  is shown as the text of the segments hippocamp's reader makes of the file whose locators overlap the
  one asked for (`matching_text`), so an item is found by its UID, index or time exactly as a record
  names it.

`render_plan` decides which of these fits a file and a locator; `describe` says where in one line.
"""

from __future__ import annotations

import csv
import io
import math
import re
import stat
import struct
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from PIL import Image, ImageDraw, ImageOps, UnidentifiedImageError

from hippocamp.perceive.base import PerceiveOptions, ReadError
from hippocamp.perceive.decode import decode_text
from hippocamp.perceive.delimited import sniff_delimiter
from hippocamp.perceive.grid import cell_text, column_letter
from hippocamp.perceive.ooxml import check_zip, library_error
from hippocamp.perceive.plaintext import split_lines
from hippocamp.schema.filetypes import extension, modality_of
from hippocamp.schema.locators import (
    CellRange,
    InvalidLocator,
    ItemLocator,
    LineLocator,
    Locator,
    PageLocator,
    RegionLocator,
    SlideLocator,
    TimeRange,
    UnknownLocator,
    cell_bounds,
    format_timestamp,
    overlaps,
    parse_locator,
)

__all__ = [
    "DEFAULT_LIMITS",
    "Box",
    "CellGrid",
    "GridCell",
    "GridRow",
    "Limits",
    "Passage",
    "Passages",
    "Plan",
    "PlanKind",
    "RenderError",
    "SlideText",
    "TextLine",
    "TextWindow",
    "cell_grid",
    "describe",
    "image_png",
    "matching_text",
    "media_fragment",
    "pdf_page_png",
    "render_grid",
    "render_lines",
    "render_plan",
    "render_png",
    "slide_text",
    "text_lines",
]

Box = tuple[float, float, float, float]


class RenderError(Exception):
    """Evidence that cannot be shown; the message names the file and says why (shown in the page)."""


@dataclass(frozen=True)
class Limits:
    """How much of a file a renderer reads or makes at most."""

    #: pixels a picture may have before it is decoded (checked from its header)
    max_pixels: int = 40_000_000
    #: longest side of a PNG made, in pixels
    max_side: int = 1600
    #: the last PDF page shown
    max_pdf_pages: int = 5000
    #: cells of a grid window
    max_cells: int = 400
    #: lines of a text window, passages of `matching_text`
    max_lines: int = 400
    #: characters of one line or passage shown (the rest cut, and said so)
    max_line_chars: int = 2000
    #: size of a file read at all
    max_bytes: int = 200 * 1024 * 1024

    def __post_init__(self) -> None:
        for f in fields(self):
            if getattr(self, f.name) < 1:
                raise ValueError(f"Limits.{f.name} must be at least 1, got {getattr(self, f.name)}")


DEFAULT_LIMITS = Limits()

#: rows shown above and below a cell range, columns to its left and right, lines around a line range
ROW_CONTEXT = 3
COL_CONTEXT = 1
LINE_CONTEXT = 5
#: characters of one grid cell shown
MAX_CELL_CHARS = 200

_FILL = (255, 196, 0, 80)  # translucent amber
_OUTLINE = (220, 40, 0, 255)


# -- helpers -----------------------------------------------------------------------------------------
def _error(path: Path, what: str) -> RenderError:
    return RenderError(f"{path.name}: {what}")


def _mb(size: int) -> str:
    return f"{size / 2**20:,.0f} MB" if size >= 2**20 else f"{size / 1024:,.0f} KB"


def _check_file(path: Path, limits: Limits) -> int:
    """The size of a regular, non-empty file within ``limits.max_bytes``, else a `RenderError`."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise _error(path, "no such file") from None
    except OSError as exc:
        raise _error(path, f"cannot open it ({exc.strerror or type(exc).__name__})") from None
    if stat.S_ISDIR(st.st_mode):
        raise _error(path, "a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise _error(path, "not a regular file: not opened")
    if st.st_size == 0:
        raise _error(path, "the file is empty (0 bytes)")
    if st.st_size > limits.max_bytes:
        raise _error(path, f"the file is {_mb(st.st_size)}, more than the {_mb(limits.max_bytes)} shown here")
    return st.st_size


def _num(value: float) -> str:
    """``3.0 -> "3"``, ``1.5 -> "1.5"``, at most 3 decimals."""
    text = f"{round(value, 3):.3f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _cut(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit] + "…", True)


_UNIT_NAMES = {
    **dict.fromkeys(("pt", "pts", "point", "points"), "pt"),
    **dict.fromkeys(("px", "pixel", "pixels"), "px"),
    **dict.fromkeys(("norm", "normalized", "normalised", "fraction", "fractions", "relative", "ratio"), "norm"),
    **dict.fromkeys(("percent", "%", "pct"), "percent"),
}


def _canonical_units(units: str | None, default: str) -> str:
    """``pt``, ``px``, ``norm`` or ``percent`` for a box's units as written; ValueError when unknown."""
    if units is None or not units.strip():
        return default
    try:
        return _UNIT_NAMES[units.strip().lower()]
    except KeyError:
        raise ValueError(f"box units {units!r} not understood (pt, px, norm or percent)") from None


def _box_text(box: Box, units: str) -> str:
    x0, y0, x1, y1 = box
    if units in ("norm", "percent"):
        k = 100 if units == "norm" else 1
        return f"{_num(x0 * k)}%-{_num(x1 * k)}% x {_num(y0 * k)}%-{_num(y1 * k)}%"
    return f"{_num(x0)}-{_num(x1)} x {_num(y0)}-{_num(y1)} {units}"


def _to_pixels(path: Path, box: Box, units: str, space: tuple[float, float], image: tuple[int, int], where: str) -> Box:
    """A box in ``units`` of a ``space`` (page in pt, picture in px) as pixels of the rendered image,
    clipped to it; a `RenderError` when it is malformed or lies wholly outside."""
    if len(box) != 4 or not all(isinstance(v, int | float) and math.isfinite(v) for v in box):
        raise _error(path, f"a region is four numbers [x0, y0, x1, y1], got {list(box)!r}")
    x0, y0, x1, y1 = box
    if not (x1 > x0 and y1 > y0):
        raise _error(path, f"the region {list(box)!r} is empty (it needs x1 > x0 and y1 > y0)")
    img_w, img_h = image
    kx: float
    ky: float
    if units == "norm":
        kx, ky = img_w, img_h
    elif units == "percent":
        kx, ky = img_w / 100, img_h / 100
    else:
        kx, ky = img_w / space[0], img_h / space[1]
    px = (x0 * kx, y0 * ky, x1 * kx, y1 * ky)
    if px[0] >= img_w or px[1] >= img_h or px[2] <= 0 or px[3] <= 0:
        size = f"{_num(space[0])}x{_num(space[1])} {'pt' if units == 'pt' else 'px'}"
        raise _error(path, f"the region {_box_text(box, units)} lies outside {where} ({size})")
    return (max(px[0], 0.0), max(px[1], 0.0), min(px[2], img_w - 1.0), min(px[3], img_h - 1.0))


def _highlight(img: Image.Image, boxes: Sequence[Box]) -> Image.Image:
    """``img`` with each box (in its pixels) drawn as a translucent rectangle with an outline."""
    base = img.convert("RGBA")
    overlay = Image.new("RGBA", base.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    width = max(2, round(max(base.size) / 400))
    for box in boxes:
        draw.rectangle(box, fill=_FILL, outline=_OUTLINE, width=width)
    return Image.alpha_composite(base, overlay).convert("RGB")


def _png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def _perceive_options(limits: Limits) -> PerceiveOptions:
    return PerceiveOptions(max_bytes=limits.max_bytes, ocr=False, asr=False)


# -- PDF -----------------------------------------------------------------------------------------------
#: PDFium must never be called from two threads at once (the web layer runs handlers in a thread pool)
_PDFIUM = threading.Lock()


def _pdfium() -> Any:
    import pypdfium2  # type: ignore[import-untyped]

    return pypdfium2


def _open_pdf(path: Path) -> Any:
    pdfium = _pdfium()
    try:
        return pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise _error(path, "the PDF is encrypted (it needs a password)") from None
        raise _error(path, f"not a readable PDF ({exc})") from None


def pdf_page_png(
    path: Path,
    page: int,
    box: Box | None = None,
    box_units: str = "pt",
    scale: float = 1.5,
    limits: Limits = DEFAULT_LIMITS,
) -> bytes:
    """Page ``page`` (1-based) of a PDF as PNG, ``scale`` times 72 dpi (less when the page would pass
    ``max_side`` or ``max_pixels``), with ``box`` drawn on it (pt from the page's top-left corner, ``norm``
    0–1, ``percent``, or ``px`` read as pt)."""
    pdfium = _pdfium()
    _check_file(path, limits)
    if isinstance(page, bool) or not isinstance(page, int) or page < 1:
        raise _error(path, f"pages are numbered from 1, got {page!r}")
    if page > limits.max_pdf_pages:
        raise _error(path, f"page {page} is past the first {limits.max_pdf_pages:,} pages shown here")
    if not (math.isfinite(scale) and 0 < scale <= 8):
        raise _error(path, f"a page is drawn at a scale between 0 and 8, got {scale}")
    try:
        units = _canonical_units(box_units, "pt") if box is not None else "pt"
    except ValueError as exc:
        raise _error(path, str(exc)) from None
    with _PDFIUM:
        doc = _open_pdf(path)
        try:
            count = len(doc)
            if page > count:
                raise _error(path, f"page {page} is outside the document (it has {count} page{'s' * (count != 1)})")
            pdf_page = doc[page - 1]
            try:
                width, height = pdf_page.get_size()
                if not (math.isfinite(width) and math.isfinite(height) and width > 0 and height > 0):
                    raise _error(path, f"page {page} has no size ({width} x {height} pt)")
                fit = min(scale, limits.max_side / max(width, height), math.sqrt(limits.max_pixels / (width * height)))
                bitmap = pdf_page.render(scale=fit, may_draw_forms=True)
                try:
                    img = bitmap.to_pil().convert("RGB")  # a copy: the bitmap's buffer is freed below
                finally:
                    bitmap.close()
            finally:
                pdf_page.close()
        except pdfium.PdfiumError as exc:
            raise _error(path, f"page {page} could not be drawn ({exc})") from None
        finally:
            doc.close()
    if box is not None:
        img = _highlight(img, [_to_pixels(path, box, units, (width, height), img.size, f"page {page}")])
    return _png(img)


def _page_of_label(path: Path, label: str) -> int | None:
    """The 1-based page whose printed label (/PageLabels) is ``label``, or None."""
    from hippocamp.perceive.pdf import page_labels

    with _PDFIUM:
        doc = _open_pdf(path)
        try:
            labels = page_labels(doc) or []
        finally:
            doc.close()
    wanted = label.strip().lower()
    return next((i + 1 for i, lab in enumerate(labels) if lab.strip().lower() == wanted), None)


# -- pictures ------------------------------------------------------------------------------------------
#: formats a picture is opened as, whatever its name says: never EPS/PS (Pillow runs Ghostscript for them)
_PICTURE_FORMATS = ("JPEG", "MPO", "PNG", "GIF", "BMP", "TIFF", "WEBP", "HEIF", "AVIF")


def _picture_formats() -> list[str]:
    """The formats of `_PICTURE_FORMATS` this Pillow opens (HEIF/AVIF only with their plug-ins)."""
    Image.init()
    return [name for name in _PICTURE_FORMATS if name in Image.OPEN]


_BOMB_SIZE = re.compile(r"\((\d+) pixels\)")


def image_png(path: Path, boxes: Sequence[Box] = (), box_units: str = "px", limits: Limits = DEFAULT_LIMITS) -> bytes:
    """A picture as PNG: EXIF-upright, its longest side at most ``max_side``, ``boxes`` (pixels of the
    picture as displayed, or ``norm``/``percent``) scaled along and drawn. A picture whose header claims
    more than ``max_pixels`` is refused before it is decoded."""
    _check_file(path, limits)
    try:
        units = _canonical_units(box_units, "px")
    except ValueError as exc:
        raise _error(path, str(exc)) from None
    if boxes and units == "pt":
        raise _error(path, "a region in pt does not fit a picture: give it in px or as fractions (norm)")
    if extension(path.name) in ("heic", "heif", "avif"):
        from hippocamp.perceive.image import _register_heif  # pillow-heif, when installed

        _register_heif()
    try:
        with Image.open(path, formats=_picture_formats()) as img:
            width, height = img.size
            if width * height > limits.max_pixels:
                raise _error(
                    path,
                    f"the picture is {width}x{height} pixels, more than the {limits.max_pixels / 1e6:g} MP shown here",
                )
            ratio = limits.max_side / max(width, height)
            if ratio < 1:  # JPEG decodes at 1/2, 1/4 or 1/8 directly: less memory and time
                img.draft(None, (max(1, math.ceil(width * ratio)), max(1, math.ceil(height * ratio))))
            img.load()
            loaded = img.size
            try:
                shown = ImageOps.exif_transpose(img)
            except Exception:  # an odd orientation tag: show the picture as stored
                shown = img.copy()
            turned = shown.size != loaded and shown.size == (loaded[1], loaded[0])
            shown.thumbnail((limits.max_side, limits.max_side))
            frame = shown.convert("RGBA").convert("RGB")
    except RenderError:
        raise
    except Image.DecompressionBombError as exc:
        match = _BOMB_SIZE.search(str(exc))
        claimed = f"{int(match.group(1)):,} pixels" if match else "too many pixels"
        raise _error(
            path, f"the picture claims {claimed}, more than the {limits.max_pixels / 1e6:g} MP shown here"
        ) from None
    except UnidentifiedImageError:
        raise _error(path, "not a picture that can be shown (unknown, unsupported or damaged format)") from None
    except MemoryError:
        raise _error(path, "out of memory while decoding the picture") from None
    except (OSError, SyntaxError, ValueError, EOFError, IndexError, struct.error, ZeroDivisionError) as exc:
        raise _error(path, f"corrupt or truncated picture ({exc})") from None
    if boxes:
        space = (float(height), float(width)) if turned else (float(width), float(height))
        frame = _highlight(frame, [_to_pixels(path, b, units, space, frame.size, "the picture") for b in boxes])
    return _png(frame)


# -- spreadsheets --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GridCell:
    ref: str  # "B2"
    text: str  # the value as a spreadsheet shows it (cut at MAX_CELL_CHARS)
    highlighted: bool


@dataclass(frozen=True)
class GridRow:
    number: int
    cells: tuple[GridCell, ...]
    #: the sheet's first row, repeated above a window that starts lower down
    header: bool = False

    def __iter__(self) -> Iterator[GridCell]:
        return iter(self.cells)


@dataclass(frozen=True)
class CellGrid:
    """A window of a sheet around a cell range: column letters, rows with their cells, what is highlighted."""

    sheet: str | None
    sheets: tuple[str, ...]
    columns: tuple[str, ...]
    rows: tuple[GridRow, ...]
    target: str | None
    note: str | None = None

    def highlighted(self) -> list[str]:
        return [cell.ref for row in self.rows for cell in row.cells if cell.highlighted]


_XLSX_EXTS = ("xlsx", "xlsm", "xltx", "xltm")
_CSV_EXTS = ("csv", "tsv", "tab")


@dataclass(frozen=True)
class _Window:
    col_lo: int
    col_hi: int
    row_lo: int
    row_hi: int
    notes: tuple[str, ...]


def _window(bounds: tuple[int, int, int, int] | None, limits: Limits) -> _Window:
    """Rows and columns to read around ``bounds`` (0 for an open side, as `cell_bounds` gives them)."""
    c0, r0, c1, r1 = bounds if bounds is not None else (1, 1, 0, 0)
    notes = []
    col_lo = 1 if c0 <= 3 else c0 - COL_CONTEXT
    col_hi = c1 + COL_CONTEXT if c1 else col_lo + 25  # an open side is trimmed to the data later
    row_lo = max(1, r0 - ROW_CONTEXT) if r0 else 1
    row_hi = r1 + ROW_CONTEXT if r1 else 10**9
    widest = max(1, limits.max_cells // 2)
    if col_hi - col_lo + 1 > widest:
        col_hi = col_lo + widest - 1
        if c1 > col_hi:
            notes.append(f"columns {column_letter(col_lo)}-{column_letter(col_hi)} shown")
    ncols = col_hi - col_lo + 1
    tallest = max(1, limits.max_cells // ncols - (1 if row_lo > 1 else 0))
    if row_hi - row_lo + 1 > tallest:
        row_hi = row_lo + tallest - 1
        if not r1 or r1 > row_hi:
            notes.append(f"rows {row_lo}-{row_hi} shown")
    return _Window(col_lo, col_hi, row_lo, row_hi, tuple(notes))


def cell_grid(
    path: Path, cell_range: str | None = None, sheet: str | None = None, limits: Limits = DEFAULT_LIMITS
) -> CellGrid:
    """A window of a workbook (XLSX, cached values) or CSV/TSV around ``cell_range`` (A1, e.g. ``B2:C3``,
    ``A:C``, ``3:5``): a few rows and columns of context, the sheet's first row on top, at most
    ``max_cells`` cells; the cells of the range are highlighted. No range: the sheet's top-left corner."""
    _check_file(path, limits)
    bounds = None
    if cell_range is not None and cell_range.strip():
        try:
            bounds = cell_bounds(cell_range)
        except ValueError:
            raise _error(path, f"{cell_range!r} is not a cell range (want A1 notation such as B2:D9)") from None
    win = _window(bounds, limits)
    ext = extension(path.name)
    title: str | None = None
    sheets: tuple[str, ...] = ()
    note: str | None = None
    if ext in _XLSX_EXTS:
        title, sheets, data, note = _xlsx_rows(path, sheet, win, limits)
    elif ext in _CSV_EXTS:
        data = _csv_rows(path, win, "\t" if ext in ("tsv", "tab") else ",")
    else:
        raise _error(path, "not a spreadsheet shown as cells here (.xlsx, .xlsm, .csv or .tsv)")
    notes = ([note] if note else []) + list(win.notes)
    return _grid(title, sheets, data, bounds, cell_range, win, notes)


def _pick_sheet(path: Path, worksheets: list[Any], sheet: str | None) -> tuple[Any, str | None]:
    if not worksheets:
        raise _error(path, "the workbook has no worksheet")
    if sheet is None:
        note = "no sheet named: the first sheet shown" if len(worksheets) > 1 else None
        return worksheets[0], note
    for match in (lambda t: t == sheet, lambda t: t.strip().lower() == sheet.strip().lower()):
        for ws in worksheets:
            if match(ws.title):
                return ws, None
    names = ", ".join(repr(ws.title) for ws in worksheets)
    raise _error(path, f"no sheet {sheet!r} (the workbook has {names})")


def _xlsx_rows(
    path: Path, sheet: str | None, win: _Window, limits: Limits
) -> tuple[str, tuple[str, ...], dict[int, list[str]], str | None]:
    try:
        check_zip(path, "XLSX", "workbook", _perceive_options(limits))
    except ReadError as exc:
        raise _error(path, str(exc)) from None
    from openpyxl import load_workbook  # type: ignore[import-untyped]

    with path.open("rb") as fh:
        try:
            wb = load_workbook(fh, read_only=True, data_only=True)
        except Exception as exc:  # openpyxl raises KeyError, InvalidFileException, lxml and zip errors
            raise _error(path, str(library_error("XLSX", exc))) from None
        try:
            worksheets = list(wb.worksheets)
            ws, note = _pick_sheet(path, worksheets, sheet)
            ws.reset_dimensions()  # a stale <dimension> would cut rows and columns off
            data: dict[int, list[str]] = {}
            spans = [(1, 1)] if win.row_lo > 1 else []
            for lo, hi in [*spans, (win.row_lo, win.row_hi)]:
                rows = ws.iter_rows(min_row=lo, max_row=hi, min_col=win.col_lo, max_col=win.col_hi, values_only=True)
                for number, values in enumerate(rows, start=lo):  # read-only sheets stop at their last row
                    data[number] = [cell_text(v) for v in values]
        except RenderError:
            raise
        except Exception as exc:  # a damaged sheet part: lxml, zip or value errors
            raise _error(path, f"the sheet could not be read ({type(exc).__name__}: {exc})") from None
        finally:
            wb.close()
    return ws.title, tuple(w.title for w in worksheets), data, note


def _csv_rows(path: Path, win: _Window, default: str) -> dict[int, list[str]]:
    try:
        text = decode_text(path.read_bytes()).text
    except ReadError as exc:
        raise _error(path, f"not a text table ({exc})") from None
    delimiter = sniff_delimiter(text[:65536], default)
    data: dict[int, list[str]] = {}
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        for number, row in enumerate(reader, start=1):  # records, numbered as the CSV reader numbers them
            if number == 1 or win.row_lo <= number <= win.row_hi:
                data[number] = [cell_text(v) for v in row[win.col_lo - 1 : win.col_hi]]
            if number >= win.row_hi:
                break
    except csv.Error as exc:
        raise _error(path, f"malformed CSV near line {reader.line_num} ({exc})") from None
    return data


def _grid(
    title: str | None,
    sheets: tuple[str, ...],
    data: dict[int, list[str]],
    bounds: tuple[int, int, int, int] | None,
    cell_range: str | None,
    win: _Window,
    notes: list[str],
) -> CellGrid:
    c0, r0, c1, r1 = bounds if bounds is not None else (0, 0, 0, 0)
    window_rows = [n for n in data if n >= win.row_lo]
    used_cols = [win.col_lo + i for values in data.values() for i, v in enumerate(values) if v != ""]
    last_row = max(window_rows, default=win.row_lo - 1)
    if bounds is not None and r1 and last_row < min(r1, win.row_hi):
        notes.append(f"the data ends at row {last_row}" if window_rows else "the range lies past the data")
        last_row = min(r1, win.row_hi)
    col_hi = max(min(win.col_hi, max(used_cols, default=win.col_lo)), min(c1, win.col_hi))

    def lit(row: int, col: int) -> bool:
        if bounds is None:
            return False
        return (not c0 or c0 <= col <= c1) and (not r0 or r0 <= row <= r1)

    def make(number: int, header: bool) -> GridRow:
        values = data.get(number, [])
        cells = []
        for col in range(win.col_lo, col_hi + 1):
            i = col - win.col_lo
            text, _ = _cut(values[i] if i < len(values) else "", MAX_CELL_CHARS)
            cells.append(GridCell(f"{column_letter(col)}{number}", text, not header and lit(number, col)))
        return GridRow(number, tuple(cells), header)

    rows = [make(1, True)] if win.row_lo > 1 and 1 in data else []
    rows += [make(n, False) for n in range(win.row_lo, last_row + 1)]
    target = None
    if cell_range is not None and cell_range.strip():
        target = cell_range.strip()
    return CellGrid(
        sheet=title,
        sheets=sheets,
        columns=tuple(column_letter(c) for c in range(win.col_lo, col_hi + 1)),
        rows=tuple(rows),
        target=target,
        note="; ".join(notes) or None,
    )


# -- text ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TextLine:
    number: int
    text: str
    highlighted: bool
    cut: bool = False  # longer than max_line_chars: the rest not shown
    #: what to print beside the line: its number in the file, or "title"/"notes" (a slide), where a passage is
    label: str = ""


@dataclass(frozen=True)
class TextWindow:
    lines: tuple[TextLine, ...]
    total: int  # lines in the file
    encoding: str
    note: str | None = None


def text_lines(
    path: Path,
    start: int | None = None,
    end: int | None = None,
    limits: Limits = DEFAULT_LIMITS,
    context: int = LINE_CONTEXT,
) -> TextWindow:
    """Lines ``start..end`` (1-based, as an editor numbers them) of a text file with ``context`` lines
    around, highlighted; no ``start``: the file's first lines. At most ``max_lines`` lines."""
    _check_file(path, limits)
    try:
        decoded = decode_text(path.read_bytes())
    except ReadError as exc:
        raise _error(path, f"not a text file ({exc})") from None
    lines = split_lines(decoded.text)
    total = len(lines)
    notes = [decoded.note] if decoded.note else []
    if start is None:
        first, last, lo, hi = 0, -1, 1, min(total, limits.max_lines)
        if total > hi:
            notes.append(f"the first {hi:,} of {total:,} lines shown")
    else:
        last = start if end is None else end
        if start < 1 or last < start:
            raise _error(path, f"lines are numbered from 1 and a range ascends, got {start}-{last}")
        if start > total:
            raise _error(path, f"line {start} is past the end of the file (it has {total:,} lines)")
        if last > total:
            notes.append(f"the file ends at line {total:,}")
            last = total
        first = start
        lo, hi = max(1, start - max(context, 0)), min(total, last + max(context, 0))
        if hi - lo + 1 > limits.max_lines:
            lo = max(1, start - min(max(context, 0), limits.max_lines // 4))
            hi = lo + limits.max_lines - 1
            notes.append(f"lines {lo:,}-{hi:,} shown (at most {limits.max_lines:,})")
    shown = []
    for number in range(lo, hi + 1):
        text, cut = _cut(lines[number - 1], limits.max_line_chars)
        shown.append(TextLine(number, text, first <= number <= last, cut, str(number)))
    return TextWindow(tuple(shown), total, decoded.encoding, "; ".join(notes) or None)


# -- slides --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SlideText:
    number: int
    count: int  # slides in the presentation
    title: str | None
    lines: tuple[str, ...]  # the text of its shapes, top to bottom (tables as "cell | cell")
    notes: tuple[str, ...]  # the speaker notes
    hidden: bool = False


def slide_text(path: Path, number: int, limits: Limits = DEFAULT_LIMITS) -> SlideText:
    """The text of slide ``number`` (1-based) of a PPTX, as `hippocamp.perceive.slides` reads it."""
    # the reader's own shape walk, so a slide shows the text its segment holds, in the same order
    from hippocamp.perceive.slides import _reading_order, _shape_lines

    _check_file(path, limits)
    try:
        check_zip(path, "PPTX", "presentation", _perceive_options(limits))
    except ReadError as exc:
        raise _error(path, str(exc)) from None
    from pptx import Presentation

    try:
        with path.open("rb") as fh:
            prs = Presentation(fh)
        slides = list(prs.slides)
    except Exception as exc:  # PackageNotFoundError, KeyError, ValueError (wrong content type), lxml
        raise _error(path, str(library_error("PPTX", exc))) from None
    count = len(slides)
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= count:
        raise _error(path, f"slide {number} is outside the presentation (it has {count} slide{'s' * (count != 1)})")
    slide = slides[number - 1]
    try:
        title_shape = slide.shapes.title
        title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
        lines: list[str] = []
        for shape in _reading_order(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            lines += _shape_lines(shape)
        notes: list[str] = []
        if slide.has_notes_slide:
            frame = slide.notes_slide.notes_text_frame
            text = frame.text.replace("\v", "\n").strip() if frame is not None else ""
            notes = [ln for ln in text.split("\n") if ln.strip()]
    except Exception as exc:  # a damaged slide part
        raise _error(path, f"slide {number} could not be read ({type(exc).__name__}: {exc})") from None
    hidden = slide.element.get("show") in ("0", "false")
    cap = limits.max_lines
    return SlideText(
        number,
        count,
        title or None,
        tuple(_cut(ln, limits.max_line_chars)[0] for ln in lines[:cap]),
        tuple(_cut(ln, limits.max_line_chars)[0] for ln in notes[:cap]),
        hidden,
    )


# -- everything else: the reader's own segments --------------------------------------------------------
@dataclass(frozen=True)
class Passage:
    where: str  # `describe` of the segment's locator ("paragraphs 2-4", "event uid-1 at ...")
    text: str
    cut: bool = False


@dataclass(frozen=True)
class Passages:
    items: tuple[Passage, ...]
    note: str | None = None


def _hits(segment: Any, target: Locator) -> bool:
    located = [segment.locator] if segment.locator is not None else []
    return any(overlaps(loc, target) for loc in [*located, *segment.within])


def matching_text(path: Path, locator: Locator | Any = None, limits: Limits = DEFAULT_LIMITS) -> Passages:
    """The text of the segments hippocamp's reader makes of a file (OCR and speech recognition off) whose
    locator, or a container they sit within, overlaps ``locator``: a mail's paragraphs, a calendar
    event's occurrences, a JSON record, a message of an mbox with its attachments, DOCX paragraphs and
    tables, XLS cells. No locator: the whole file's segments. At most ``max_lines`` passages."""
    from hippocamp.perceive.run import perceive_file

    _check_file(path, limits)
    target = None if locator is None else parse_locator(locator)
    if isinstance(target, UnknownLocator | InvalidLocator):
        raise _error(path, f"the locator cannot be placed: {describe(target)}")
    result = perceive_file(path.parent, path.name, _perceive_options(limits), hash_file=False)
    if result.status in ("failed", "skipped"):
        raise _error(path, result.reason or "the file could not be read")
    segments = result.segments if target is None else [s for s in result.segments if _hits(s, target)]
    if not segments:
        if target is None:
            raise _error(path, result.reason or "the file's reader found no text in it")
        raise _error(path, f"no text found at {describe(target)} ({len(result.segments)} piece(s) read from the file)")
    cap = limits.max_lines
    chars = limits.max_line_chars * 4
    items = []
    for seg in segments[:cap]:
        where_loc = seg.locator if seg.locator is not None else (seg.within[-1] if seg.within else None)
        text, cut = _cut(seg.text, chars)
        items.append(Passage(describe(where_loc), text, cut))
    note = f"the first {cap:,} of {len(segments):,} passages shown" if len(segments) > cap else None
    return Passages(tuple(items), note)


# -- media ---------------------------------------------------------------------------------------------
def media_fragment(locator: TimeRange | str) -> str:
    """The media fragment (``#t=1.5,3``, ``#t=65``) that starts an ``<audio>``/``<video>`` at a time range
    (a `TimeRange`, or its text such as ``"1.5-3"`` or ``"00:01:05-00:01:12"``)."""
    if isinstance(locator, str):
        parsed = parse_locator({"unit": "time_range", "position": locator})
        if not isinstance(parsed, TimeRange):
            reason = parsed.error if isinstance(parsed, InvalidLocator) else "not a time range"
            raise RenderError(f"not a time range: {locator!r} ({reason})")
        locator = parsed
    end = f",{_num(locator.end)}" if locator.end is not None else ""
    return f"#t={_num(locator.start)}{end}"


WAVE_RATE = 2000  # samples per second of the decoded mono signal a waveform is drawn from
WAVE_MAX_SECONDS = 4 * 3600
WAVE_TIMEOUT = 60.0


def waveform_png(
    path: Path, width: int = 1000, height: int = 120, limits: Limits = DEFAULT_LIMITS
) -> tuple[bytes, float]:
    """The recording (or a video's sound) drawn as a waveform (the min-max envelope per column) and its
    duration in seconds. ffmpeg decodes it to mono at `WAVE_RATE` under a time limit; no sound, a missing
    ffmpeg or a failure is a `RenderError`."""
    import shutil
    import subprocess

    import numpy as np

    _check_file(path, limits)
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        raise _error(path, "drawing a waveform needs ffmpeg (Debian package ffmpeg)")
    command = [ffmpeg, "-nostdin", "-v", "error", "-i", str(path), "-t", str(WAVE_MAX_SECONDS), "-vn", "-ac", "1",
               "-ar", str(WAVE_RATE), "-f", "s16le", "-"]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, timeout=WAVE_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise _error(path, f"decoding the sound took more than {WAVE_TIMEOUT:.0f} s") from None
    samples = np.frombuffer(done.stdout[: len(done.stdout) // 2 * 2], dtype="<i2")
    if done.returncode != 0 or samples.size == 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no sound"]
        raise _error(path, f"no sound could be decoded ({why[0][:200]})")
    duration = samples.size / WAVE_RATE
    columns = np.array_split(samples.astype(np.float32) / 32768.0, min(width, samples.size))
    img = Image.new("RGB", (len(columns), height), (250, 250, 250))
    draw = ImageDraw.Draw(img)
    middle = height / 2
    for x, col in enumerate(columns):
        low, high = float(col.min()), float(col.max())
        draw.line([(x, middle - high * middle), (x, middle - low * middle)], fill=(40, 90, 160))
    return _png(img), duration


# -- describe ------------------------------------------------------------------------------------------
def _plural(noun: str, first: int, last: int | None) -> str:
    return f"{noun} {first}" if last is None or last == first else f"{noun}s {first}-{last}"


def describe(locator: Locator | Any) -> str:
    """Where a locator points, in one plain line: ``page 3 (printed 1)``, ``page 2, region 72-300 x
    100-220 pt``, ``00:01:05-00:01:12``, ``Sheet1!B4:C6``, ``slide 4``, ``lines 12-15``, ``event uid-1 at
    2024-10-12T10:30``. Raw JSON is parsed first; None is the whole file."""
    if locator is None:
        return "the whole file"
    loc = parse_locator(locator)
    if isinstance(loc, PageLocator):
        if loc.system_page is None:
            return f"printed page {loc.printed_page}"
        text = _plural("page", loc.system_page, loc.system_page_end)
        return f"{text} (printed {loc.printed_page})" if loc.printed_page else text
    if isinstance(loc, RegionLocator):
        parts = [] if loc.page is None else [f"page {loc.page}"]
        if loc.box is not None:
            try:
                units = _canonical_units(loc.box_units, "pt" if loc.page is not None else "px")
            except ValueError:
                units = str(loc.box_units)
            parts.append(f"region {_box_text(loc.box, units)}")
        if loc.label:
            parts.append(loc.label)
        return ", ".join(parts)
    if isinstance(loc, TimeRange):
        start = format_timestamp(loc.start)
        return start if loc.end is None else f"{start}-{format_timestamp(loc.end)}"
    if isinstance(loc, CellRange):
        return str(loc.position())
    if isinstance(loc, SlideLocator):
        return _plural("slide", loc.slide, loc.slide_end)
    if isinstance(loc, LineLocator):
        noun = "paragraph" if loc.unit.strip().lower().startswith("paragraph") else "line"
        parts = [] if loc.message_id is None else [f"message {loc.message_id}"]
        if loc.line is not None:
            parts.append(_plural(noun, loc.line, loc.line_end))
        return ", ".join(parts)
    if isinstance(loc, ItemLocator):
        parts = [loc.unit or "item"]
        if loc.index is not None:
            parts.append(f"#{loc.index}")
        if loc.id is not None:
            parts.append(loc.id)
        if loc.at is not None:
            parts.append(f"at {loc.at}")
        return " ".join(parts)
    if isinstance(loc, InvalidLocator):
        return f"unreadable {loc.unit or 'locator'}: {loc.error}"
    value = _cut(repr(loc.position()), 80)[0]
    return f"unknown unit {loc.unit!r}: {value}" if loc.unit else f"unknown locator: {value}"


# -- the plan ------------------------------------------------------------------------------------------
PlanKind = Literal["pdf-page", "image", "media", "grid", "lines", "slide", "text", "none"]


@dataclass(frozen=True)
class Plan:
    """Which renderer fits a file and a locator, and its arguments:

    ==========  ======================================================================
    kind        call
    ==========  ======================================================================
    pdf-page    ``pdf_page_png(path, page, box, box_units)``
    image       ``image_png(path, [box] if box else [], box_units)``
    media       an ``<audio>``/``<video>`` (``media``) with ``src=... + fragment``
    grid        ``cell_grid(path, cells, sheet)``
    lines       ``text_lines(path, start, end)``
    slide       ``slide_text(path, slide)``
    text        ``matching_text(path, locator)``
    none        nothing fits; ``message`` says why
    ==========  ======================================================================
    """

    kind: PlanKind
    description: str
    message: str | None = None
    page: int | None = None
    box: Box | None = None
    box_units: str | None = None
    media: Literal["audio", "video"] | None = None
    fragment: str = ""
    sheet: str | None = None
    cells: str | None = None
    start: int | None = None
    end: int | None = None
    slide: int | None = None
    locator: Locator | None = None


_IMAGE_EXTS = frozenset("jpg jpeg png gif bmp tif tiff webp heic heif avif".split())
_SLIDE_EXTS = frozenset(("pptx", "pptm", "ppsx"))
#: files whose line locators count the file's own lines (plain text, and HTML by its source lines)
_LINE_EXTS = frozenset(
    "txt text md markdown mdown mkd log jsonl ndjson yaml yml xml toml ini cfg conf tex srt vtt py js sh "
    "html htm xhtml json geojson".split()
)
_LINE_UNITS = frozenset(("", "line", "lines", "line_range", "row_line"))


def _mismatch(loc: Locator, desc: str, what: str) -> Plan:
    return Plan("none", desc, message=f"a {loc.kind} locator does not point into {what}")


def _region_box(loc: RegionLocator, default: str) -> tuple[Box | None, str | None, str | None]:
    """(box, canonical units, message) of a region."""
    if loc.box is None:
        return None, None, (f"{loc.label}: no box given" if loc.label else None)
    try:
        return loc.box, _canonical_units(loc.box_units, default), None
    except ValueError as exc:
        return None, None, f"{exc}: shown without the region"


def _pdf_plan(path: Path, loc: Locator | None, desc: str) -> Plan:
    if loc is None:
        return Plan("pdf-page", desc, message="the whole document: its first page shown", page=1)
    if isinstance(loc, PageLocator):
        message = None
        page = loc.system_page
        if page is None and loc.printed_page is not None:
            try:
                page = _page_of_label(path, loc.printed_page)
            except RenderError as exc:
                return Plan("none", desc, message=str(exc), locator=loc)
            if page is None:
                return Plan("none", desc, message=f"no page is labelled {loc.printed_page!r} in the PDF")
        if loc.system_page_end is not None and loc.system_page_end != loc.system_page:
            message = f"{desc}: the first page shown"
        return Plan("pdf-page", desc, message=message, page=page, locator=loc)
    if isinstance(loc, RegionLocator):
        box, units, message = _region_box(loc, "pt")
        page = loc.page
        if page is None:
            if box is None:
                return Plan("none", desc, message="the region names no page and no box to show in a PDF")
            page, message = 1, "the region names no page: page 1 shown"
        return Plan("pdf-page", desc, message=message, page=page, box=box, box_units=units, locator=loc)
    return _mismatch(loc, desc, "a PDF")


def render_plan(path: Path, locator: Locator | Any = None) -> Plan:
    """Which renderer fits ``path`` (by its extension) and ``locator`` (a `Locator`, its raw JSON, or
    None for the whole file). Never raises: what cannot be shown is kind ``none`` with a ``message``."""
    loc = None if locator is None else parse_locator(locator)
    desc = describe(loc)
    if isinstance(loc, InvalidLocator):
        return Plan("none", desc, message=f"the locator cannot be read: {loc.error}", locator=loc)
    if isinstance(loc, UnknownLocator):
        return Plan("none", desc, message=f"hippocamp does not know the unit {loc.unit!r}", locator=loc)
    ext = extension(path.name)
    modality = modality_of(path.name)
    if ext == "pdf":
        return _pdf_plan(path, loc, desc)
    if ext in _IMAGE_EXTS:
        if loc is None or isinstance(loc, RegionLocator):
            box, units, message = _region_box(loc, "px") if loc is not None else (None, None, None)
            return Plan("image", desc, message=message, box=box, box_units=units, locator=loc)
        return _mismatch(loc, desc, "a picture")
    if modality in ("audio", "video"):
        media: Literal["audio", "video"] = "video" if modality == "video" else "audio"
        if loc is None:
            return Plan("media", desc, media=media)
        if isinstance(loc, TimeRange):
            return Plan("media", desc, media=media, fragment=media_fragment(loc), locator=loc)
        return _mismatch(loc, desc, f"an {media} file" if media == "audio" else "a video")
    if ext in _XLSX_EXTS or ext in _CSV_EXTS:
        if loc is None:
            return Plan("grid", desc)
        if isinstance(loc, CellRange):
            return Plan("grid", desc, sheet=loc.sheet, cells=loc.ref, locator=loc)
        return _mismatch(loc, desc, "a spreadsheet")
    if ext in _SLIDE_EXTS:
        if loc is None:
            return Plan("slide", desc, message="the whole presentation: its first slide shown", slide=1)
        if isinstance(loc, SlideLocator):
            message = f"{desc}: the first slide shown" if loc.slide_end not in (None, loc.slide) else None
            return Plan("slide", desc, message=message, slide=loc.slide, locator=loc)
        return _mismatch(loc, desc, "a presentation")
    if ext in _LINE_EXTS:
        if loc is None:
            return Plan("lines", desc)
        if (
            isinstance(loc, LineLocator)
            and loc.line is not None
            and loc.message_id is None
            and loc.unit.strip().lower() in _LINE_UNITS
        ):
            return Plan("lines", desc, start=loc.line, end=loc.line_end, locator=loc)
    from hippocamp.perceive.run import reader_for

    if reader_for(ext) is not None:
        return Plan("text", desc, locator=loc)
    return Plan("none", desc, message=f"no view for .{ext} files" if ext else "no view for files without an extension")


# -- a plan carried out ------------------------------------------------------------------------------
def render_png(path: Path, plan: Plan, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """The PNG of a ``pdf-page`` or ``image`` plan."""
    if plan.kind == "pdf-page":
        return pdf_page_png(path, plan.page or 1, plan.box, plan.box_units or "pt", limits=limits)
    if plan.kind == "image":
        return image_png(path, [plan.box] if plan.box is not None else [], plan.box_units or "px", limits)
    raise _error(path, f"{plan.description}: not shown as a picture ({plan.message or plan.kind})")


def render_grid(path: Path, plan: Plan, limits: Limits = DEFAULT_LIMITS) -> CellGrid:
    """The cell window of a ``grid`` plan."""
    if plan.kind != "grid":
        raise _error(path, f"{plan.description}: not shown as cells ({plan.message or plan.kind})")
    return cell_grid(path, plan.cells, plan.sheet, limits)


def render_lines(path: Path, plan: Plan, limits: Limits = DEFAULT_LIMITS) -> tuple[TextLine, ...]:
    """The lines of a ``lines``, ``slide`` or ``text`` plan, one `TextLine` each, what the locator points
    at highlighted (a slide's lines are labelled ``title``, ``slide`` or ``notes``; a passage's lines by
    `describe` of where the passage is)."""
    if plan.kind == "lines":
        return text_lines(path, plan.start, plan.end, limits).lines
    out: list[tuple[str, str]] = []
    if plan.kind == "slide":
        slide = slide_text(path, plan.slide or 1, limits)
        out += [("title", slide.title)] if slide.title else []
        out += [("slide", line) for line in slide.lines] + [("notes", line) for line in slide.notes]
        if not out:
            out.append(("slide", f"(slide {slide.number} of {slide.count} has no text)"))
    elif plan.kind == "text":
        for passage in matching_text(path, plan.locator, limits).items:
            out += [(passage.where, line) for line in split_lines(passage.text)]
    else:
        raise _error(path, f"{plan.description}: not shown as text ({plan.message or plan.kind})")
    lit = plan.locator is not None
    return tuple(TextLine(i, text, lit, False, label) for i, (label, text) in enumerate(out[: limits.max_lines], 1))
