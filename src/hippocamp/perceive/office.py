"""Office files: Word (DOCX), spreadsheets (XLSX/XLSM, XLS, CSV/TSV) and presentations (PPTX).

Locators (all numbers 1-based):

* DOCX body text: ``{"unit": "paragraph", "position": {"line": 4, "line_end": 9}}``, a run of
  body paragraphs, counted in document order over every paragraph of the body (empty ones too,
  those inside block content controls too; not those inside tables). Without content controls
  paragraph N is ``python-docx``'s ``Document.paragraphs[N - 1]``. Text is grouped under its
  heading (``meta["heading"]``, and ``meta["headings"]`` for the path when nested) into pieces of
  at most `MAX_CHARS` characters; ``meta["page"]`` (and ``"page_end"``) is the page the text was
  on when Word last laid the document out (its rendered page breaks; explicit page breaks when it
  records none), given only when the document records any break.
* DOCX tables: ``{"unit": "table", "position": {"label": "Table 2"}}`` (body tables counted in
  order), a block of rows rendered ``cell | cell``, with ``meta["table"]``, ``meta["row"]`` and
  ``meta["row_end"]``. Headers, footers, footnotes, endnotes and comments:
  ``{"unit": "part", "position": {"id": "header"}}`` (``footer``, ``footnotes``, ...).
* Spreadsheets: ``{"unit": "cells", "position": "Budget!A1:D30"}`` for a block of rows (at most
  `MAX_ROWS` rows or about `MAX_GRID_CHARS` characters), rendered tab-separated from the first to
  the last used column of the sheet; blocks after the first repeat the sheet's first row (its
  header) on their first line, with ``meta["header_row"]`` saying so. CSV/TSV have no sheet name
  (``"A1:C30"``), the validator maps such a range to the file's only sheet; rows are CSV records.
  A formula shows its cached value, its text goes to ``meta["formulas"]`` (``{"B4":
  "=SUM(B2:B3)"}``); a formula without a cached value (never calculated) shows its formula text
  and the file gets a note. XLS (``xlrd``) has cached values only.
* PPTX: ``{"unit": "slide", "position": {"slide": 3}}``: one segment per slide (title, then the
  text of its shapes top to bottom, tables ``cell | cell``), ``meta["title"]``; the speaker notes
  of a slide are a segment of their own with the same locator and ``meta["notes"] = True``.

Encrypted, legacy-binary and damaged files raise `ReadError` with the reason.
"""

from __future__ import annotations

import contextlib
import csv
import io
import re
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any, ClassVar

from hippocamp.perceive.base import Part, PerceiveOptions, ReadContext, ReadError
from hippocamp.perceive.text import MAX_CHARS, HtmlReader, _cut_long, decode_text, read_decoded
from hippocamp.registry import register
from hippocamp.schema.locators import CellRange, ItemLocator, LineLocator, RegionLocator, SlideLocator
from hippocamp.schema.segment import Segment

__all__ = [
    "MAX_GRID_CHARS",
    "MAX_ROWS",
    "CsvReader",
    "DocxReader",
    "PptxReader",
    "XlsReader",
    "XlsxReader",
    "column_letter",
]

#: a spreadsheet segment holds at most this many rows ...
MAX_ROWS = 30
#: ... and about this many characters
MAX_GRID_CHARS = 1500

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


# -- containers ------------------------------------------------------------------------------------
def _ole_encrypted(path: Path) -> bool:
    """Whether an OLE compound file holds an encrypted OOXML package (a password-protected file)."""
    data = path.read_bytes()
    return "EncryptedPackage".encode("utf-16-le") in data or "EncryptionInfo".encode("utf-16-le") in data


def _check_zip(path: Path, kind: str, noun: str, options: PerceiveOptions) -> None:
    """Raise `ReadError` unless ``path`` is a readable zip (OOXML) file; say why it is not."""
    with path.open("rb") as fh:
        head = fh.read(8)
    if head == _OLE_MAGIC:
        if _ole_encrypted(path):
            raise ReadError(f"password-protected {noun}")
        raise ReadError(f"not a valid {kind} (zip) file: a legacy binary Office file (OLE)")
    if not zipfile.is_zipfile(path):
        raise ReadError(f"not a valid {kind} (zip) file")
    try:
        with zipfile.ZipFile(path) as zf:
            members = zf.infolist()
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
        raise ReadError(f"not a valid {kind} (zip) file: {exc}") from None
    check_unpacked(members, kind, options)


def check_unpacked(members: list[zipfile.ZipInfo], kind: str, options: PerceiveOptions) -> None:
    """Refuse a zip whose members would unpack past the limits (a zip bomb): in all above
    ``options.max_unpacked_bytes``, or one member above ``options.max_unpack_ratio`` times its packed
    size (and above 10 MB). The sizes are the ones the zip declares; Python's zipfile never unpacks a
    member past its declared size, so a zip cannot lie its way past this check."""
    total = 0
    for info in members:
        total += info.file_size
        packed = max(info.compress_size, 1)
        if info.file_size > 10_000_000 and info.file_size / packed > options.max_unpack_ratio:
            raise ReadError(
                f"not read: {kind} member {info.filename!r} unpacks {info.file_size / packed:,.0f} times its size "
                f"({info.file_size / 1e6:,.0f} MB; limit {options.max_unpack_ratio:,}x): a zip bomb?"
            )
    if total > options.max_unpacked_bytes:
        raise ReadError(
            f"not read: the {kind} unpacks to {total / 1e6:,.0f} MB, above the limit of "
            f"{options.max_unpacked_bytes / 1e6:,.0f} MB"
        )


def _library_error(kind: str, exc: Exception) -> ReadError:
    """A `ReadError` for an error a library raised on a zip that is not the package it expects."""
    match = re.search(r"content type is '([^']+)'", str(exc))
    if match:
        return ReadError(f"not a valid {kind} file: its main part is {match.group(1)}")
    return ReadError(f"not a valid {kind} file: {type(exc).__name__}: {exc}")


# -- DOCX ------------------------------------------------------------------------------------------
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_W_P, _W_TBL, _W_TR, _W_TC, _W_SDT = _W + "p", _W + "tbl", _W + "tr", _W + "tc", _W + "sdt"
_W_T, _W_TAB, _W_BR, _W_CR = _W + "t", _W + "tab", _W + "br", _W + "cr"
_W_TXBX, _W_LRPB = _W + "txbxContent", _W + "lastRenderedPageBreak"
_W_VAL, _W_TYPE = _W + "val", _W + "type"
#: elements whose text is not part of the paragraph's visible text (or is read separately)
_PRUNE = {_W + "del", _W + "pPr", _W + "rPr", _W + "instrText", _W + "delText", _MC_FALLBACK}


@dataclass
class _Para:
    """A paragraph's text, text boxes anchored in it, and the page breaks before / inside it."""

    text: str
    boxes: list[str] = field(default_factory=list)
    rendered_before: int = 0
    rendered_inside: int = 0
    hard_before: int = 0
    hard_inside: int = 0


def _para(p: Any) -> _Para:
    out = _Para("")
    parts: list[str] = []
    seen_text = False

    def walk(el: Any) -> None:
        nonlocal seen_text
        for child in el:
            tag = child.tag
            if tag == _W_T:
                text = child.text or ""
                parts.append(text)
                seen_text = seen_text or bool(text.strip())
            elif tag == _W_TAB:
                parts.append("\t")
            elif tag == _W_BR:
                if child.get(_W_TYPE) == "page":
                    if seen_text:
                        out.hard_inside += 1
                    else:
                        out.hard_before += 1
                parts.append("\n")
            elif tag == _W_CR:
                parts.append("\n")
            elif tag == _W + "noBreakHyphen":
                parts.append("-")
            elif tag == _W_LRPB:
                if seen_text:
                    out.rendered_inside += 1
                else:
                    out.rendered_before += 1
            elif tag == _W_TXBX:
                box = "\n".join(t for t in (_para(q).text for q in _paragraphs(child)) if t.strip())
                if box:
                    out.boxes.append(box)
            elif tag in _PRUNE or not isinstance(tag, str):
                continue
            else:
                walk(child)

    p_pr = p.find(_W + "pPr")
    if p_pr is not None and p_pr.find(_W + "pageBreakBefore") is not None:
        out.hard_before += 1
    walk(p)
    out.text = "".join(parts).strip()
    return out


def _paragraphs(el: Any) -> Iterator[Any]:
    """Every ``w:p`` under ``el`` in order (through tables and content controls, not into paragraphs)."""
    for child in el:
        if child.tag == _W_P:
            yield child
        elif isinstance(child.tag, str) and child.tag not in _PRUNE:
            yield from _paragraphs(child)


def _is_toc(sdt: Any) -> bool:
    gallery = sdt.find(f"{_W}sdtPr/{_W}docPartObj/{_W}docPartGallery")
    return gallery is not None and "contents" in (gallery.get(_W_VAL) or "").lower()


def _body_blocks(body: Any) -> Iterator[tuple[str, Any]]:
    """``("p", el)``, ``("tbl", el)`` or ``("skip", el)`` (a paragraph of a table of contents),
    in document order, through block-level content controls."""
    for child in body:
        tag = child.tag
        if tag == _W_P:
            yield "p", child
        elif tag == _W_TBL:
            yield "tbl", child
        elif tag == _W_SDT:
            content = child.find(_W + "sdtContent")
            if content is None:
                continue
            if _is_toc(child):
                for p in _paragraphs(content):
                    yield "skip", p
            else:
                yield from _body_blocks(content)
        elif tag == _W + "customXml":
            yield from _body_blocks(child)


_HEADING_NAME = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)


class _Styles:
    """Heading level (1-9, 0 for Title) of paragraph styles, by style id."""

    def __init__(self, doc: Any) -> None:
        self.levels: dict[str, int | None] = {}
        self.by_id: dict[str, Any] = {}
        try:
            for style in doc.styles:
                if style.style_id:
                    self.by_id[style.style_id] = style
        except Exception:  # a damaged styles part must not lose the text
            self.by_id = {}

    def level(self, style_id: str | None, depth: int = 0) -> int | None:
        if not style_id or depth > 5:
            return None
        if style_id in self.levels:
            return self.levels[style_id]
        style = self.by_id.get(style_id)
        level: int | None = None
        if style is not None:
            name = (style.name or "").strip()
            match = _HEADING_NAME.match(name)
            if match:
                level = int(match.group(1))
            elif name.lower() == "title":
                level = 0
            else:
                outline = style.element.find(f"{_W}pPr/{_W}outlineLvl")
                if outline is not None and (outline.get(_W_VAL) or "").isdigit() and int(outline.get(_W_VAL)) < 9:
                    level = int(outline.get(_W_VAL)) + 1
                elif style.base_style is not None:
                    level = self.level(style.base_style.style_id, depth + 1)
        self.levels[style_id] = level
        return level

    def of(self, p: Any) -> int | None:
        p_pr = p.find(_W + "pPr")
        if p_pr is None:
            return None
        outline = p_pr.find(_W + "outlineLvl")
        if outline is not None and (outline.get(_W_VAL) or "").isdigit():
            value = int(outline.get(_W_VAL))
            return value + 1 if value < 9 else None
        style = p_pr.find(_W + "pStyle")
        return self.level(style.get(_W_VAL) if style is not None else None)


def _cut(text: str, limit: int) -> list[str]:
    """``text`` as it is when it fits ``limit``, else cut into pieces on one line each."""
    return [text] if len(text) <= limit else _cut_long(text.replace("\n", " "), limit)


_WRAPPERS = {_W_SDT, _W + "sdtContent", _W + "customXml"}


def _children(el: Any, tag: str) -> Iterator[Any]:
    """Children of ``el`` with ``tag``, looking through content controls and custom XML wrappers."""
    for child in el:
        if child.tag == tag:
            yield child
        elif child.tag in _WRAPPERS:
            yield from _children(child, tag)


def _row_texts(tbl: Any) -> list[str]:
    """The rows of a Word table as ``cell | cell`` lines (a merged cell once, nested tables inline)."""
    rows = []
    for tr in _children(tbl, _W_TR):
        cells = []
        for tc in _children(tr, _W_TC):
            text = " ".join(t for t in (_para(p).text for p in _paragraphs(tc)) if t)
            cells.append(" ".join(text.split()))
        rows.append(" | ".join(cells))
    return rows


@register("reader", "docx")
class DocxReader:
    """Word documents (python-docx): body text under its headings, tables, headers, footers and notes."""

    name: ClassVar[str] = "docx"
    extensions: ClassVar[tuple[str, ...]] = ("docx",)
    parts: ClassVar[tuple[Part, ...]] = ()

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        _check_zip(path, "DOCX", "document", ctx.options)
        try:
            import docx
        except ImportError:
            raise ReadError("python-docx is not installed") from None
        try:
            with path.open("rb") as fh:
                doc = docx.Document(fh)
        except Exception as exc:  # ValueError (a workbook renamed .docx), KeyError, lxml errors ...
            raise _library_error("DOCX", exc) from None
        segments = _docx_body(doc, ctx)
        segments += _docx_parts(doc, ctx)
        return segments


def _docx_body(doc: Any, ctx: ReadContext) -> list[Segment]:
    body = doc.element.body
    blocks = list(_body_blocks(body))
    paras = {id(el): _para(el) for kind, el in blocks if kind in ("p", "skip")}
    rendered = any(p.rendered_before or p.rendered_inside for p in paras.values())
    hard = any(p.hard_before or p.hard_inside for p in paras.values())
    use_pages = rendered or hard
    styles = _Styles(doc)

    segments: list[Segment] = []
    path_: list[tuple[int, str]] = []  # open headings (level, text)
    current: list[tuple[int, str]] = []  # (paragraph number, text)
    pages: list[int] = []
    page = 1
    number = 0
    tables = 0

    def heading_meta() -> dict[str, Any]:
        if not path_:
            return {}
        meta: dict[str, Any] = {"heading": path_[-1][1]}
        if len(path_) > 1:
            meta["headings"] = [t for _, t in path_]
        return meta

    def page_meta(first: int, last: int) -> dict[str, Any]:
        if not use_pages:
            return {}
        return {"page": first} | ({"page_end": last} if last > first else {})

    def flush() -> None:
        nonlocal current, pages
        if current:
            text = "\n".join(t for _, t in current)
            first, last = current[0][0], current[-1][0]
            locator = LineLocator(unit="paragraph", line=first, line_end=last if last > first else None)
            segments.append(ctx.segment(text, locator, **heading_meta(), **page_meta(min(pages), max(pages))))
        current, pages = [], []

    for kind, el in blocks:
        if kind == "tbl":
            flush()
            tables += 1
            segments += _docx_table(el, tables, ctx, heading_meta() | page_meta(page, page))
            continue
        number += 1
        para = paras[id(el)]
        page += para.rendered_before if rendered else para.hard_before
        start_page = page
        page += para.rendered_inside if rendered else para.hard_inside
        if kind == "skip":  # a table of contents: headings said again
            continue
        texts = [t for t in (para.text, *para.boxes) if t.strip()]
        if not texts:
            continue
        text = "\n".join(texts)
        level = styles.of(el)
        if level is not None:
            flush()
            while path_ and path_[-1][0] >= level:
                path_.pop()
            path_.append((level, " ".join(para.text.split()) or text[:200]))
        for piece in _cut(text, MAX_CHARS):
            size = sum(len(t) + 1 for _, t in current)
            if current and size + len(piece) > MAX_CHARS:
                flush()
            current.append((number, piece))
            pages += [start_page, page]
    flush()
    return segments


def _docx_table(tbl: Any, index: int, ctx: ReadContext, meta: dict[str, Any]) -> list[Segment]:
    rows = _row_texts(tbl)
    segments = []
    block: list[tuple[int, str]] = []

    def flush() -> None:
        nonlocal block
        kept = [(n, t) for n, t in block if t.replace("|", "").strip()]
        if kept:
            first, last = kept[0][0], kept[-1][0]
            locator = RegionLocator(unit="table", label=f"Table {index}")
            text = "\n".join(t for _, t in kept)
            row_meta = {"table": index, "row": first} | ({"row_end": last} if last > first else {})
            segments.append(ctx.segment(text, locator, **row_meta, **meta))
        block = []

    for n, row in enumerate(rows, start=1):
        for piece in _cut(row, MAX_GRID_CHARS):
            if block and (sum(len(t) + 1 for _, t in block) + len(piece) > MAX_GRID_CHARS or len(block) >= MAX_ROWS):
                flush()
            block.append((n, piece))
    flush()
    return segments


_NOTE_PARTS = {
    "/footnotes": ("footnotes", _W + "footnote"),
    "/endnotes": ("endnotes", _W + "endnote"),
    "/comments": ("comments", _W + "comment"),
}


def _docx_parts(doc: Any, ctx: ReadContext) -> list[Segment]:
    """Headers and footers (each distinct text once), footnotes, endnotes and comments."""
    from lxml import etree

    found: dict[str, list[str]] = {}
    for rel in doc.part.rels.values():
        if rel.is_external:
            continue
        reltype = rel.reltype
        try:
            part = rel.target_part
            element = getattr(part, "element", None)
            if element is None:
                element = etree.fromstring(part.blob)
        except Exception:  # a damaged side part must not lose the body
            ctx.note(f"could not read the document part {reltype.rsplit('/', 1)[-1]}")
            continue
        if reltype.endswith(("/header", "/footer")):
            which = reltype.rsplit("/", 1)[-1]
            text = "\n".join(t for t in (_para(p).text for p in _paragraphs(element)) if t)
            if text and text not in found.setdefault(which, []):
                found[which].append(text)
            continue
        for suffix, (which, tag) in _NOTE_PARTS.items():
            if reltype.endswith(suffix):
                for note in element.iter(tag):
                    if note.get(_W_TYPE) in ("separator", "continuationSeparator", "continuationNotice"):
                        continue
                    text = " ".join(t for t in (_para(p).text for p in _paragraphs(note)) if t)
                    if text:
                        found.setdefault(which, []).append(text)
    segments = []
    for which in ("header", "footer", "footnotes", "endnotes", "comments"):
        texts = found.get(which, [])
        block: list[str] = []
        for text in texts:
            for piece in _cut(text, MAX_CHARS):
                if block and sum(len(t) + 1 for t in block) + len(piece) > MAX_CHARS:
                    segments.append(ctx.segment("\n".join(block), ItemLocator(unit="part", id=which), part=which))
                    block = []
                block.append(piece)
        if block:
            segments.append(ctx.segment("\n".join(block), ItemLocator(unit="part", id=which), part=which))
    return segments


# -- spreadsheets ----------------------------------------------------------------------------------
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
class _Grid:
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


def _grid_segments(grid: _Grid, ctx: ReadContext) -> list[Segment]:
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
        for piece in _cut(render(vals), MAX_GRID_CHARS):
            if block and (size + len(piece) + 1 > MAX_GRID_CHARS or len(block) >= MAX_ROWS):
                flush()
                size = len(header) + 1
            block.append((number, piece))
            size += len(piece) + 1
    flush()
    return segments


@register("reader", "xlsx")
class XlsxReader:
    """Excel workbooks (openpyxl): cached values and formulas, block of rows by block of rows."""

    name: ClassVar[str] = "xlsx"
    extensions: ClassVar[tuple[str, ...]] = ("xlsx", "xlsm", "xltx", "xltm")
    parts: ClassVar[tuple[Part, ...]] = ()

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        with path.open("rb") as fh:
            head = fh.read(8)
        if head == _OLE_MAGIC and not _ole_encrypted(path):
            ctx.note("a legacy .xls workbook under an .xlsx name: read as XLS")
            return XlsReader().read(path, ctx)
        _check_zip(path, "XLSX", "workbook", ctx.options)
        grids, missing = _xlsx_grids(path)
        if missing:
            ctx.note(f"{missing} formula cell(s) have no cached value (never calculated): formula text kept")
        segments: list[Segment] = []
        for grid in grids:
            segments += _grid_segments(grid, ctx)
        return segments


def _load_workbook(fh: Any, data_only: bool) -> Any:
    from openpyxl import load_workbook

    try:
        return load_workbook(fh, read_only=True, data_only=data_only)
    except Exception as exc:  # openpyxl raises KeyError, InvalidFileException, lxml and zip errors
        raise _library_error("XLSX", exc) from None


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


def _xlsx_grids(path: Path) -> tuple[list[_Grid], int]:
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
            grid = _Grid(ws_values.title, meta=meta)
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
        if head != _OLE_MAGIC:
            return _xls_as_text(path, ctx)
        try:
            import xlrd
        except ImportError:
            raise ReadError("xlrd is not installed") from None
        try:
            book = xlrd.open_workbook(str(path), logfile=io.StringIO(), on_demand=True)
        except Exception as exc:  # xlrd raises XLRDError, CompDocError, struct and assertion errors
            if "encrypt" in str(exc).lower() or _ole_encrypted(path):
                raise ReadError("password-protected workbook") from None
            raise ReadError(f"not a valid XLS file: {type(exc).__name__}: {exc}") from None
        segments: list[Segment] = []
        try:
            for index in range(book.nsheets):
                sheet = book.sheet_by_index(index)
                meta: dict[str, Any] = {"sheet": sheet.name}
                if getattr(sheet, "visibility", 0):
                    meta["hidden"] = True
                grid = _Grid(sheet.name, meta=meta)
                for r in range(sheet.nrows):
                    grid.add(r + 1, [_xls_cell(cell, book.datemode) for cell in sheet.row(r)])
                segments += _grid_segments(grid, ctx)
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


# -- CSV -------------------------------------------------------------------------------------------
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
        grid = _Grid(None, meta=meta)
        try:
            for number, row in enumerate(_csv_rows(text, delimiter), start=1):
                grid.add(number, [cell_text(v) for v in row])
        except csv.Error as exc:
            raise ReadError(f"malformed CSV: {exc}") from None
        return _grid_segments(grid, ctx)


def _csv_rows(text: str, delimiter: str) -> Iterable[list[str]]:
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, 16 * 1024 * 1024))
    try:
        yield from csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    finally:
        csv.field_size_limit(limit)


# -- PPTX ------------------------------------------------------------------------------------------
def _shape_lines(shape: Any) -> list[str]:
    """The text of a shape (text frame, table, group), one line per paragraph or table row."""
    from pptx.shapes.group import GroupShape

    lines: list[str] = []
    if isinstance(shape, GroupShape):
        for child in _reading_order(shape.shapes):
            lines += _shape_lines(child)
        return lines
    if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        for paragraph in shape.text_frame.paragraphs:
            text = paragraph.text.replace("\v", "\n").strip()
            if text:
                lines.append(text)
    if getattr(shape, "has_table", False) and shape.has_table:
        for row in shape.table.rows:
            cells = [" ".join(cell.text.split()) for cell in row.cells]
            if any(cells):
                lines.append(" | ".join(cells))
    if getattr(shape, "has_chart", False) and shape.has_chart:
        chart = shape.chart
        if chart.has_title and chart.chart_title.has_text_frame:
            title = chart.chart_title.text_frame.text.strip()
            if title:
                lines.append(title)
    return lines


def _reading_order(shapes: Iterable[Any]) -> list[Any]:
    """Shapes top to bottom, then left to right (shapes without a position keep their order)."""
    indexed = list(enumerate(shapes))
    indexed.sort(key=lambda item: (item[1].top if item[1].top is not None else -1, item[1].left or 0, item[0]))
    return [shape for _, shape in indexed]


@register("reader", "pptx")
class PptxReader:
    """PowerPoint presentations (python-pptx): one segment per slide, speaker notes apart."""

    name: ClassVar[str] = "pptx"
    extensions: ClassVar[tuple[str, ...]] = ("pptx", "pptm", "ppsx")
    parts: ClassVar[tuple[Part, ...]] = ()

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        _check_zip(path, "PPTX", "presentation", ctx.options)
        try:
            from pptx import Presentation
        except ImportError:
            raise ReadError("python-pptx is not installed") from None
        try:
            with path.open("rb") as fh:
                prs = Presentation(fh)
            slides = list(prs.slides)
        except Exception as exc:  # PackageNotFoundError, KeyError, ValueError (wrong content type), lxml
            raise _library_error("PPTX", exc) from None
        segments: list[Segment] = []
        for number, slide in enumerate(slides, start=1):
            locator = SlideLocator(unit="slide", slide=number)
            title_shape = slide.shapes.title
            title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
            lines = [title] if title else []
            for shape in _reading_order(slide.shapes):
                if title_shape is not None and shape.shape_id == title_shape.shape_id:
                    continue
                lines += _shape_lines(shape)
            meta: dict[str, Any] = {"title": title or None}
            if slide.element.get("show") in ("0", "false"):
                meta["hidden"] = True
            if lines:
                segments.append(ctx.segment("\n".join(lines), locator, **meta))
            if slide.has_notes_slide:
                frame = slide.notes_slide.notes_text_frame
                notes = frame.text.replace("\v", "\n").strip() if frame is not None else ""
                if notes:
                    segments.append(ctx.segment(notes, locator, notes=True, title=title or None))
        return segments
