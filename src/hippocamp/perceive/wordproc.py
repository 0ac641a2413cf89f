"""Word documents (DOCX, python-docx): body text under its headings, tables, headers, footers and notes.

Locators (all numbers 1-based):

* Body text: ``{"unit": "paragraph", "position": {"line": 4, "line_end": 9}}``, a run of body
  paragraphs, counted in document order over every paragraph of the body (empty ones too, those
  inside block content controls too; not those inside tables). Without content controls paragraph N
  is ``python-docx``'s ``Document.paragraphs[N - 1]``. Text is grouped under its heading
  (``meta["heading"]``, and ``meta["headings"]`` for the path when nested) into pieces of at most
  `MAX_CHARS` characters; ``meta["page"]`` (and ``"page_end"``) is the page the text was on when Word
  last laid the document out (its rendered page breaks; explicit page breaks when it records none),
  given only when the document records any break.
* Tables: ``{"unit": "table", "position": {"label": "Table 2"}}`` (body tables counted in order), a
  block of rows rendered ``cell | cell``, with ``meta["table"]``, ``meta["row"]`` and
  ``meta["row_end"]``. Headers, footers, footnotes, endnotes and comments: ``{"unit": "part",
  "position": {"id": "header"}}`` (``footer``, ``footnotes``, ...).

Encrypted, legacy-binary and damaged files raise `ReadError` with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from hippocamp.perceive.base import Part, ReadContext, ReadError
from hippocamp.perceive.grid import MAX_GRID_CHARS, MAX_ROWS
from hippocamp.perceive.ooxml import check_zip, library_error
from hippocamp.perceive.plaintext import MAX_CHARS, cut_to_fit
from hippocamp.registry import register
from hippocamp.schema.locators import ItemLocator, LineLocator, RegionLocator
from hippocamp.schema.segment import Segment

__all__ = ["DocxReader"]


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
        check_zip(path, "DOCX", "document", ctx.options)
        try:
            import docx
        except ImportError:
            raise ReadError("python-docx is not installed") from None
        try:
            with path.open("rb") as fh:
                doc = docx.Document(fh)
        except Exception as exc:  # ValueError (a workbook renamed .docx), KeyError, lxml errors ...
            raise library_error("DOCX", exc) from None
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
        for piece in cut_to_fit(text, MAX_CHARS):
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
        for piece in cut_to_fit(row, MAX_GRID_CHARS):
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
            for piece in cut_to_fit(text, MAX_CHARS):
                if block and sum(len(t) + 1 for t in block) + len(piece) > MAX_CHARS:
                    segments.append(ctx.segment("\n".join(block), ItemLocator(unit="part", id=which), part=which))
                    block = []
                block.append(piece)
        if block:
            segments.append(ctx.segment("\n".join(block), ItemLocator(unit="part", id=which), part=which))
    return segments
