"""Plain text, Markdown, logs, YAML, XML, JSON Lines, config and source files as chunks of lines,
the reading every text reader falls back to.

Locators (all numbers 1-based): runs of whole lines, ``{"unit": "lines", "position": {"line": 3,
"line_end": 9}}`` (``line_end`` only when the run is longer than one line). Lines are counted as an
editor counts them (``\\n``, ``\\r\\n`` or a lone ``\\r`` each end one). Text is chunked at blank
lines (and at Markdown headings, whose text goes to ``meta["heading"]``) into pieces of at most
`MAX_CHARS` characters; a longer paragraph is cut between lines, a longer line within itself (each
piece keeps the line's number).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from hippocamp.perceive.base import Part, ReadContext
from hippocamp.perceive.decode import Decoded, encoding_meta, read_decoded
from hippocamp.registry import register
from hippocamp.schema.locators import LineLocator
from hippocamp.schema.segment import Segment

__all__ = [
    "MAX_CHARS",
    "Chunk",
    "TextReader",
    "chunk_lines",
    "cut_long",
    "cut_to_fit",
    "line_locator",
    "read_lines",
    "segments_from_chunks",
    "split_lines",
]

#: the longest segment text a text reader makes (characters)
MAX_CHARS = 1000


_NEWLINE_RE = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The lines of a text as an editor numbers them (line N is ``lines[N - 1]``), without line ends."""
    lines = _NEWLINE_RE.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


@dataclass
class Chunk:
    """A run of lines ``first..last`` (1-based) and the text made of them."""

    first: int
    last: int
    text: str
    heading: str | None = None


def cut_long(line: str, limit: int) -> list[str]:
    """A line longer than ``limit`` cut into pieces, at whitespace when there is some."""
    pieces = []
    rest = line
    while len(rest) > limit:
        cut = rest.rfind(" ", limit // 2, limit)
        cut = limit if cut <= 0 else cut + 1
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:]
    if rest.strip():
        pieces.append(rest)
    return pieces


def cut_to_fit(text: str, limit: int) -> list[str]:
    """``text`` as it is when it fits ``limit``, else cut into pieces on one line each."""
    return [text] if len(text) <= limit else cut_long(text.replace("\n", " "), limit)


def chunk_lines(
    lines: list[str],
    limit: int = MAX_CHARS,
    heading: Callable[[str], str | None] | None = None,
    first_line: int = 1,
) -> list[Chunk]:
    """Pack the paragraphs (runs of non-blank lines) of ``lines`` into chunks of at most ``limit``
    characters. ``heading(line)`` returns a heading's text for a line that starts a section (a new
    chunk always starts there), else None. Runs of blank lines inside a chunk become one."""
    blocks: list[tuple[int, int, str | None]] = []  # (first index, last index, heading that opens it)
    start: int | None = None
    opens: str | None = None
    for i, line in enumerate(lines):
        title = heading(line) if heading is not None and line.strip() else None
        if title is not None and start is not None:
            blocks.append((start, i - 1, opens))
            start = None
        if not line.strip():
            if start is not None:
                blocks.append((start, i - 1, opens))
                start = None
            continue
        if start is None:
            start, opens = i, title
    if start is not None:
        blocks.append((start, len(lines) - 1, opens))

    chunks: list[Chunk] = []
    current: list[tuple[int, str]] = []  # (index, text) of lines; "" between paragraphs
    size = 0  # len("\n".join(texts of current))
    section: str | None = None
    chunk_section: str | None = None

    def add(index: int, text: str) -> None:
        nonlocal size, chunk_section
        if not current:
            chunk_section = section
        size += len(text) + (1 if current else 0)
        current.append((index, text))

    def flush() -> None:
        nonlocal current, size
        while current and current[-1][1] == "":
            current.pop()
        if current:
            text = "\n".join(t for _, t in current)
            chunks.append(Chunk(current[0][0] + first_line, current[-1][0] + first_line, text, chunk_section))
        current, size = [], 0

    for first, last, opens in blocks:
        if opens is not None:
            flush()
            section = opens
        body = [(i, lines[i].rstrip()) for i in range(first, last + 1)]
        length = sum(len(t) for _, t in body) + len(body) - 1
        if current and size + 2 + length > limit and length <= limit:
            flush()
        if current:
            add(first - 1, "")  # one blank line between paragraphs
        for i, text in body:
            for piece in cut_long(text, limit) if len(text) > limit else [text]:
                if current and size + 1 + len(piece) > limit:
                    flush()
                add(i, piece)
    flush()
    return chunks


def line_locator(first: int, last: int, unit: str = "lines") -> LineLocator:
    return LineLocator(unit=unit, line=first, line_end=last if last > first else None)


def segments_from_chunks(chunks: Iterable[Chunk], ctx: ReadContext, unit: str = "lines", **meta: Any) -> list[Segment]:
    return [ctx.segment(c.text, line_locator(c.first, c.last, unit), heading=c.heading, **meta) for c in chunks]


_MD_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def _markdown_heading(line: str) -> str | None:
    match = _MD_HEADING.match(line)
    return match.group(2) if match else None


_MARKDOWN = ("md", "markdown", "mdown", "mkd")


@register("reader", "text")
class TextReader:
    """Plain text, Markdown, logs, YAML, XML, JSON Lines, config and source files: line chunks."""

    name: ClassVar[str] = "text"
    extensions: ClassVar[tuple[str, ...]] = (
        *("txt", "text", *_MARKDOWN, "log", "jsonl", "ndjson", "yaml", "yml", "xml", "toml", "ini", "cfg", "conf"),
        *("tex", "srt", "vtt", "py", "js", "sh"),
    )
    parts: ClassVar[tuple[Part, ...]] = ()

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        decoded = read_decoded(path, ctx)
        return read_lines(decoded, ctx, markdown=ctx.info.type in _MARKDOWN)


def read_lines(decoded: Decoded, ctx: ReadContext, markdown: bool = False) -> list[Segment]:
    """Line chunks of decoded text (the plain-text reading that every text reader falls back to)."""
    chunks = chunk_lines(split_lines(decoded.text), heading=_markdown_heading if markdown else None)
    return segments_from_chunks(chunks, ctx, **encoding_meta(decoded))
