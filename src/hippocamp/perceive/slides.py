"""PowerPoint presentations (PPTX, python-pptx): one segment per slide, speaker notes apart.

Locator: ``{"unit": "slide", "position": {"slide": 3}}`` (1-based): one segment per slide (title, then
the text of its shapes top to bottom, tables ``cell | cell``), ``meta["title"]``; the speaker notes of a
slide are a segment of their own with the same locator and ``meta["notes"] = True``. Encrypted,
legacy-binary and damaged files raise `ReadError` with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from hippocamp.perceive.base import Part, ReadContext, ReadError
from hippocamp.perceive.ooxml import check_zip, library_error
from hippocamp.registry import register
from hippocamp.schema.locators import SlideLocator
from hippocamp.schema.segment import Segment

__all__ = ["PptxReader"]


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
        check_zip(path, "PPTX", "presentation", ctx.options)
        try:
            from pptx import Presentation
        except ImportError:
            raise ReadError("python-pptx is not installed") from None
        try:
            with path.open("rb") as fh:
                prs = Presentation(fh)
            slides = list(prs.slides)
        except Exception as exc:  # PackageNotFoundError, KeyError, ValueError (wrong content type), lxml
            raise library_error("PPTX", exc) from None
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
