"""Excel workbooks: XLSX/XLSM (openpyxl) and legacy XLS (xlrd), as cell ranges (`hippocamp.perceive.grid`).

A formula shows its cached value, its text goes to ``meta["formulas"]`` (``{"B4": "=SUM(B2:B3)"}``); a
formula without a cached value (never calculated) shows its formula text and the file gets a note. XLS
has cached values only. A workbook under the other one's name is read as what it is; an .xls that is
really an HTML or tab-separated export is read as HTML or CSV. Encrypted, legacy-binary and damaged
files raise `ReadError` with the reason.
"""

from __future__ import annotations

import contextlib
import io
import re
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from hippocamp.perceive.base import Part, ReadContext, ReadError
from hippocamp.perceive.decode import decode_text
from hippocamp.perceive.delimited import CsvReader
from hippocamp.perceive.grid import Grid, cell_text, grid_segments
from hippocamp.perceive.htmlpage import HtmlReader
from hippocamp.perceive.ooxml import OLE_MAGIC, check_zip, library_error, ole_encrypted
from hippocamp.registry import register
from hippocamp.schema.segment import Segment

__all__ = ["XlsReader", "XlsxReader"]


@register("reader", "xlsx")
class XlsxReader:
    """Excel workbooks (openpyxl): cached values and formulas, block of rows by block of rows."""

    name: ClassVar[str] = "xlsx"
    extensions: ClassVar[tuple[str, ...]] = ("xlsx", "xlsm", "xltx", "xltm")
    parts: ClassVar[tuple[Part, ...]] = ()

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        with path.open("rb") as fh:
            head = fh.read(8)
        if head == OLE_MAGIC and not ole_encrypted(path):
            ctx.note("a legacy .xls workbook under an .xlsx name: read as XLS")
            return XlsReader().read(path, ctx)
        check_zip(path, "XLSX", "workbook", ctx.options)
        grids, missing = _xlsx_grids(path)
        if missing:
            ctx.note(f"{missing} formula cell(s) have no cached value (never calculated): formula text kept")
        segments: list[Segment] = []
        for grid in grids:
            segments += grid_segments(grid, ctx)
        return segments


def _load_workbook(fh: Any, data_only: bool) -> Any:
    from openpyxl import load_workbook

    try:
        return load_workbook(fh, read_only=True, data_only=data_only)
    except Exception as exc:  # openpyxl raises KeyError, InvalidFileException, lxml and zip errors
        raise library_error("XLSX", exc) from None


_FORMULA_TAG = re.compile(rb"<(?:\w+:)?f[\s>/]")


def _has_formulas(path: Path) -> bool:
    """Whether any worksheet of an XLSX package holds a formula (a ``<f>`` element); True when unsure."""
    try:
        with zipfile.ZipFile(path) as zf:
            for name in zf.namelist():
                if not (name.startswith("xl/worksheets/") and name.endswith(".xml")):
                    continue
                with zf.open(name) as fh:
                    tail = b""
                    while block := fh.read(1 << 20):
                        if _FORMULA_TAG.search(tail + block):
                            return True
                        tail = block[-16:]
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError):
        return True
    return False


def _xlsx_grids(path: Path) -> tuple[list[Grid], int]:
    """The grids of every worksheet and the number of formulas without a cached value."""
    from itertools import zip_longest

    grids = []
    missing = 0
    with contextlib.ExitStack() as stack:
        values_wb = _load_workbook(stack.enter_context(path.open("rb")), data_only=True)
        stack.callback(values_wb.close)
        formula_sheets: list[Any] = []
        if _has_formulas(path):  # the second reading (formula text) only when there is a formula
            formulas_wb = _load_workbook(stack.enter_context(path.open("rb")), data_only=False)
            stack.callback(formulas_wb.close)
            formula_sheets = list(formulas_wb.worksheets)
        for index, ws_values in enumerate(values_wb.worksheets):
            meta: dict[str, Any] = {"sheet": ws_values.title}
            if getattr(ws_values, "sheet_state", "visible") != "visible":
                meta["hidden"] = True
            grid = Grid(ws_values.title, meta=meta)
            ws_values.reset_dimensions()  # a stale <dimension> would cut rows and columns off
            formula_rows: Iterable[Any] = ()
            if index < len(formula_sheets):
                formula_sheets[index].reset_dimensions()
                formula_rows = formula_sheets[index].iter_rows()
            rows = zip_longest(ws_values.iter_rows(values_only=True), formula_rows, fillvalue=())
            for number, (values, cells) in enumerate(rows, start=1):
                texts = [cell_text(v) for v in values]
                for col, cell in enumerate(cells, start=1):
                    if getattr(cell, "data_type", None) != "f":
                        continue
                    formula = cell.value
                    formula = getattr(formula, "text", formula)  # array formulas
                    formula = str(formula) if formula is not None else ""
                    if not formula.startswith("="):
                        formula = "=" + formula
                    grid.formulas.setdefault(number, []).append((col, formula))
                    while len(texts) < col:
                        texts.append("")
                    if not texts[col - 1]:
                        texts[col - 1] = formula
                        missing += 1
                grid.add(number, texts)
            grids.append(grid)
    return grids, missing


@register("reader", "xls")
class XlsReader:
    """Legacy Excel workbooks (xlrd): cached values (xlrd does not read formulas)."""

    name: ClassVar[str] = "xls"
    extensions: ClassVar[tuple[str, ...]] = ("xls",)
    parts: ClassVar[tuple[Part, ...]] = ()

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        with path.open("rb") as fh:
            head = fh.read(8)
        if head.startswith(b"PK"):
            ctx.note("an .xlsx workbook under an .xls name: read as XLSX")
            return XlsxReader().read(path, ctx)
        if head != OLE_MAGIC:
            return _xls_as_text(path, ctx)
        try:
            import xlrd
        except ImportError:
            raise ReadError("xlrd is not installed") from None
        try:
            book = xlrd.open_workbook(str(path), logfile=io.StringIO(), on_demand=True)
        except Exception as exc:  # xlrd raises XLRDError, CompDocError, struct and assertion errors
            if "encrypt" in str(exc).lower() or ole_encrypted(path):
                raise ReadError("password-protected workbook") from None
            raise ReadError(f"not a valid XLS file: {type(exc).__name__}: {exc}") from None
        segments: list[Segment] = []
        try:
            for index in range(book.nsheets):
                sheet = book.sheet_by_index(index)
                meta: dict[str, Any] = {"sheet": sheet.name}
                if getattr(sheet, "visibility", 0):
                    meta["hidden"] = True
                grid = Grid(sheet.name, meta=meta)
                for r in range(sheet.nrows):
                    grid.add(r + 1, [_xls_cell(cell, book.datemode) for cell in sheet.row(r)])
                segments += grid_segments(grid, ctx)
                book.unload_sheet(index)
        finally:
            book.release_resources()
        return segments


def _xls_cell(cell: Any, datemode: int) -> str:
    import xlrd

    if cell.ctype == xlrd.XL_CELL_DATE:
        try:
            return cell_text(xlrd.xldate.xldate_as_datetime(cell.value, datemode))
        except Exception:  # an out-of-range date: show the number
            return cell_text(cell.value)
    if cell.ctype == xlrd.XL_CELL_BOOLEAN:
        return cell_text(bool(cell.value))
    if cell.ctype == xlrd.XL_CELL_ERROR:
        return xlrd.error_text_from_code.get(cell.value, "#ERR")
    if cell.ctype in (xlrd.XL_CELL_EMPTY, xlrd.XL_CELL_BLANK):
        return ""
    return cell_text(cell.value)


def _xls_as_text(path: Path, ctx: ReadContext) -> list[Segment]:
    """An .xls that is really an HTML or tab-separated export (as many banks and web apps write)."""
    head = path.read_bytes()[:4096]
    try:
        sample = decode_text(head).text.lower()
    except ReadError:
        raise ReadError("not a valid XLS file: neither a workbook nor text") from None
    if "<html" in sample or "<table" in sample:
        ctx.note("an HTML table under an .xls name: read as HTML")
        return HtmlReader().read(path, ctx)
    ctx.note("a text table under an .xls name: read as CSV/TSV")
    return CsvReader().read(path, ctx)
