"""Lines of text laid out and drawn in pixels, for pictures and video stills.

Text is drawn with Pillow's bundled font (``ImageFont.load_default(size=...)``, basic layout, so the
pixels do not depend on libraqm) large enough for tesseract; long lines wrap, a two-column row (a tab
between a left and a right-aligned part) stays one row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from PIL import ImageDraw, ImageFont

from hippocamp.synth.render import Line

__all__ = ["STYLE_SCALE", "Row", "draw_rows", "layout_lines", "load_font"]


@lru_cache(maxsize=64)
def load_font(size: int) -> ImageFont.FreeTypeFont:
    font = ImageFont.load_default(size=size)
    if not isinstance(font, ImageFont.FreeTypeFont):
        raise RuntimeError("Pillow was built without FreeType: load_default(size=...) cannot scale text")
    return font.font_variant(layout_engine=ImageFont.Layout.BASIC)


STYLE_SCALE = {"title": 1.45, "heading": 1.2, "body": 1.0, "small": 0.82, "bullet": 1.0}


@dataclass(frozen=True)
class Row:
    """One drawn row of a line (long lines wrap onto several rows); ``y`` is relative to the block."""

    index: int
    text: str
    size: int
    y: int
    indent: int
    first: bool


def _wrap(text: str, font: ImageFont.FreeTypeFont, width: int) -> list[str]:
    """Greedy word wrap to ``width`` pixels; a word wider than the width is cut by characters."""
    if "\t" in text:  # a two-column row stays one row
        return [text]
    rows: list[str] = []
    current = ""
    for word in text.split():
        while font.getlength(word) > width and len(word) > 1:
            cut = max(1, next((i for i in range(len(word), 0, -1) if font.getlength(word[:i]) <= width), 1))
            if current:
                rows.append(current)
                current = ""
            rows.append(word[:cut])
            word = word[cut:]
        candidate = f"{current} {word}" if current else word
        if current and font.getlength(candidate) > width:
            rows.append(current)
            current = word
        else:
            current = candidate
    if current or not rows:
        rows.append(current)
    return rows


def layout_lines(lines: Sequence[Line], body: int, width: int, spacing: float = 0.42) -> tuple[list[Row], int]:
    """Rows of ``lines`` (body text ``body`` px) wrapped to ``width``; returns them and the block's height."""
    rows: list[Row] = []
    y = 0
    for i, line in enumerate(lines):
        if line.style not in STYLE_SCALE:
            raise ValueError(f"unknown line style {line.style!r}; known: {', '.join(STYLE_SCALE)}")
        size = max(12, round(body * STYLE_SCALE[line.style]))
        indent = round(size * 1.1) if line.style == "bullet" else 0
        if line.style in ("title", "heading") and i:
            y += round(size * 0.35)
        for j, text in enumerate(_wrap(line.text.strip(), load_font(size), width - indent)):
            rows.append(Row(i, text, size, y, indent, j == 0))
            y += round(size * (1 + spacing))
        if line.style == "title":
            y += round(size * 0.25)
    return rows, max(0, y - round(body * spacing))


def draw_rows(
    draw: ImageDraw.ImageDraw,
    rows: list[Row],
    origin: tuple[int, int],
    width: int,
    fill: Any,
    centered: Iterable[str],
    lines: Sequence[Line],
) -> dict[int, tuple[int, int, int, int]]:
    """Draw the rows at ``origin`` (left, top) in a column ``width`` wide; the ink box of each line."""
    center = set(centered)
    boxes: dict[int, tuple[int, int, int, int]] = {}
    for row in rows:
        font = load_font(row.size)
        colour = fill(row.index) if callable(fill) else fill
        left, _, right = row.text.partition("\t")
        x = origin[0] + row.indent
        y = origin[1] + row.y
        if lines[row.index].style in center and not right:
            x = origin[0] + round((width - font.getlength(left)) / 2)
        parts = [((x, y), left.strip())]
        if right.strip():
            parts.append(((origin[0] + width - round(font.getlength(right.strip())), y), right.strip()))
        for xy, text in parts:
            if not text:
                continue
            draw.text(xy, text, font=font, fill=colour)
            box = draw.textbbox(xy, text, font=font)
            old = boxes.get(row.index, box)
            boxes[row.index] = (min(old[0], box[0]), min(old[1], box[1]), max(old[2], box[2]), max(old[3], box[3]))
        if lines[row.index].style == "bullet" and row.first:
            r = max(3, row.size // 7)
            cx, cy = origin[0] + row.indent // 2, y + round(row.size * 0.55)
            draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=colour)
    return boxes
