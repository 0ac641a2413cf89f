"""HTML pages: the visible text (no scripts, styles, templates), block by block, located by the
lines of the HTML source the text stands on (``{"unit": "lines", "position": {"line": 3, "line_end":
9}}``); the page title goes to ``meta["title"]``. An encoding the page declares (``<meta charset>``)
is tried after a BOM and UTF-8.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar

from hippocamp.perceive.base import Part, ReadContext
from hippocamp.perceive.decode import decode_text, encoding_meta
from hippocamp.perceive.plaintext import MAX_CHARS, cut_long, line_locator
from hippocamp.registry import register
from hippocamp.schema.segment import Segment

__all__ = ["HtmlBlock", "HtmlReader", "html_blocks"]


_HIDDEN = {"script", "style", "noscript", "template", "svg", "math", "iframe", "object"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
_BLOCKS = frozenset(
    "address article aside blockquote body br caption dd details div dl dt fieldset figcaption figure "
    "footer form h1 h2 h3 h4 h5 h6 header hr html li main nav ol p pre section summary table tbody td "
    "tfoot th thead title tr ul".split()
)
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}


_SPACES = re.compile(r"[ \t\n\r\f]+")  # HTML white space (not the no-break space)


@dataclass
class HtmlBlock:
    """Visible text of one block element and the source lines it stands on."""

    text: str
    first: int
    last: int
    heading: bool = False


class _Visible(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[HtmlBlock] = []
        self.title: str | None = None
        self._parts: list[str] = []
        self._first = self._last = 0
        self._hidden: list[str] = []  # open hidden elements
        self._in_title = False
        self._title_parts: list[str] = []
        self._pre = 0
        self._heading = 0
        self._cells = 0  # cells so far in the current table row
        self._has_text = False

    def _flush(self) -> None:
        raw = "".join(self._parts)
        text = raw.strip("\n") if self._pre else _SPACES.sub(" ", raw).strip(" ")
        if text.strip():
            self.blocks.append(HtmlBlock(text, self._first, self._last, heading=self._heading > 0))
        self._parts = []
        self._has_text = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
            return
        if tag in _HIDDEN and tag not in _VOID:
            self._hidden.append(tag)
            return
        if self._hidden:
            return
        if tag in ("td", "th") and self._cells:
            self._parts.append(" | ")  # cells of a row stay on one line
            self._cells += 1
            return
        if tag in ("td", "th"):
            self._cells = 1
        elif tag in _BLOCKS:
            self._flush()
            if tag == "tr":
                self._cells = 0
        if tag == "pre":
            self._pre += 1
        if tag in _HEADINGS:
            self._heading += 1
        if tag == "img":
            alt = dict(attrs).get("alt")
            if alt and alt.strip():
                self.handle_data(f"[{alt.strip()}]")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            title = _SPACES.sub(" ", "".join(self._title_parts)).strip(" ")
            self.title = self.title or title or None
            return
        if self._hidden:
            if tag in self._hidden:
                while self._hidden and self._hidden.pop() != tag:
                    pass
            return
        if tag in ("td", "th"):
            return
        if tag in _BLOCKS:
            self._flush()
            if tag == "tr":
                self._cells = 0
        if tag == "pre" and self._pre:
            self._pre -= 1
        if tag in _HEADINGS and self._heading:
            self._heading -= 1

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title_parts.append(data)
            return
        if self._hidden:
            return
        line = self.getpos()[0]
        if data.strip():
            if not self._has_text:  # the block starts at the first line that has visible text
                self._first = line + data.count("\n", 0, len(data) - len(data.lstrip()))
                self._has_text = True
            self._last = line + data.count("\n", 0, len(data.rstrip()))
        self._parts.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def html_blocks(text: str) -> tuple[list[HtmlBlock], str | None]:
    """The visible text blocks of an HTML page (with their source lines) and its title."""
    parser = _Visible()
    parser.feed(text)
    parser.close()
    return parser.blocks, parser.title


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


@register("reader", "html")
class HtmlReader:
    """HTML: the visible text, block by block, located by the lines of the source."""

    name: ClassVar[str] = "html"
    extensions: ClassVar[tuple[str, ...]] = ("html", "htm", "xhtml")
    parts: ClassVar[tuple[Part, ...]] = ()

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        data = path.read_bytes()
        match = _META_CHARSET.search(data[:4096])
        declared = match.group(1).decode("ascii") if match else None
        decoded = decode_text(data, declared)
        if decoded.note:
            ctx.note(decoded.note)
        blocks, title = html_blocks(decoded.text)
        meta = encoding_meta(decoded) | ({"title": title} if title else {})
        segments: list[Segment] = []
        current: list[HtmlBlock] = []
        section: str | None = None
        chunk_section: str | None = None

        def flush() -> None:
            nonlocal current
            if current:
                text = "\n".join(b.text for b in current)
                locator = line_locator(current[0].first, max(b.last for b in current))
                segments.append(ctx.segment(text, locator, heading=chunk_section, **meta))
            current = []

        for block in _split_blocks(blocks):
            size = sum(len(b.text) + 1 for b in current)
            if block.heading or (current and size + len(block.text) > MAX_CHARS):
                flush()
            if block.heading:
                section = block.text
            if not current:
                chunk_section = section
            current.append(block)
        flush()
        if not segments and title:
            segments.append(ctx.segment(title, None, **meta))
        return segments


def _split_blocks(blocks: list[HtmlBlock]) -> Iterable[HtmlBlock]:
    """Blocks longer than `MAX_CHARS` cut into pieces (each keeps the block's lines)."""
    for block in blocks:
        if len(block.text) <= MAX_CHARS:
            yield block
            continue
        for piece in cut_long(block.text.replace("\n", " "), MAX_CHARS):
            yield HtmlBlock(piece, block.first, block.last, block.heading)
