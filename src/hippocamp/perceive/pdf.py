"""PDF: text per page, printed page labels and the page count (pypdfium2); regions snap to lines.

Each page becomes one segment located by ``{"unit": "page", "position": {"system_page": N,
"printed_page": LABEL}}`` (the label only when the PDF defines page labels). Pages without a text
layer are noted (a scan). `region_text` reads a box of a page as whole lines, which is what a
citation of a region points at. Boxes are in PDF points from the page's top-left corner (as on a
rendered page image), or normalized 0–1 with ``units="norm"``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from hippocamp.perceive.base import Part, ReadContext, ReadError
from hippocamp.registry import register
from hippocamp.schema.locators import PageLocator
from hippocamp.schema.segment import Segment

__all__ = ["PdfReader", "page_labels", "region_text"]


def _open(path: Path):  # type: ignore[no-untyped-def]
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        message = str(exc).lower()
        if "password" in message:
            raise ReadError("encrypted PDF: needs a password") from None
        raise ReadError(f"not a readable PDF: {exc}") from None


def page_labels(doc: Any) -> list[str] | None:
    """The PDF's own page labels when it defines them (/PageLabels), else None (read by PDFium from
    the open document: no second parse of the file)."""
    try:
        labels = [doc.get_page_label(i) for i in range(len(doc))]
    except Exception:  # labels are optional; a broken label tree must not lose the text
        return None
    return labels if any(labels) else None


def _clean(text: str) -> str:
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return "\n".join(lines).strip()


@register("reader", "pdf")
class PdfReader:
    name: ClassVar[str] = "pdf"
    extensions: ClassVar[tuple[str, ...]] = ("pdf",)
    parts: ClassVar[tuple[Part, ...]] = ()

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        doc = _open(path)
        try:
            count = len(doc)
            labels = page_labels(doc)
            segments = []
            empty = []
            read = min(count, ctx.options.max_pages)
            if read < count:
                ctx.note(f"{count:,} pages: the first {read:,} read (max_pages)")
            for index in range(read):
                page = doc[index]
                try:
                    textpage = page.get_textpage()
                    text = _clean(textpage.get_text_range())
                    width, height = page.get_size()
                finally:
                    page.close()
                label = labels[index] if labels and index < len(labels) else None
                if not text:
                    empty.append(index + 1)
                    continue
                locator = PageLocator(system_page=index + 1, printed_page=label)
                seg = ctx.segment(
                    text, locator, modality="document", pages=count, size_pt=[round(width), round(height)]
                )
                segments.append(seg)
        finally:
            doc.close()
        if count == 0:
            raise ReadError("PDF has no pages")
        if empty:
            shown = ", ".join(map(str, empty[:10])) + (" ..." if len(empty) > 10 else "")
            ctx.note(f"{len(empty)} of {count} page(s) have no text layer (scanned?): {shown}")
        return segments


def region_text(path: Path, page: int, box: tuple[float, float, float, float], units: str = "pt") -> str:
    """The whole lines of a 1-based ``page`` that a box touches (box from the top-left corner)."""
    doc = _open(path)
    try:
        if not 1 <= page <= len(doc):
            raise ReadError(f"page {page} is outside the document (1..{len(doc)})")
        pdf_page = doc[page - 1]
        width, height = pdf_page.get_size()
        x0, y0, x1, y1 = box
        if units == "norm":
            x0, x1, y0, y1 = x0 * width, x1 * width, y0 * height, y1 * height
        # to PDF space (origin bottom-left)
        top, bottom = height - y0, height - y1
        textpage = pdf_page.get_textpage()
        lines = []
        for i in range(textpage.count_rects()):
            left, rb, right, rt = textpage.get_rect(i)
            if right < x0 or left > x1 or rt < bottom or rb > top:
                continue
            line = textpage.get_text_bounded(0, rb, width, rt).strip()
            if line and (not lines or lines[-1] != line):
                lines.append(line)
        pdf_page.close()
        return _clean("\n".join(lines))
    finally:
        doc.close()
