"""Text files: plain text, Markdown, logs, JSON, YAML, XML, HTML (visible text) and RTF (as text).

Every reader decodes with `decode_text`: a byte-order mark wins, then strict UTF-8, then a
BOM-less UTF-16 guess, then charset-normalizer (Western files are read as cp1252 whenever that
decodes cleanly, since short cp1252 texts are often mistaken for other code pages), and finally
latin-1 with a note. A file that is not text at all (NUL or other control bytes) raises
``ReadError("binary content in a text file")``. Segments of a file not in UTF-8 carry
``meta={"encoding": ...}``.

Locators (all numbers 1-based):

* plain text, Markdown, logs, YAML, XML, JSON Lines and JSON that is not a list of records: runs
  of whole lines, ``{"unit": "lines", "position": {"line": 3, "line_end": 9}}`` (``line_end``
  only when the run is longer than one line). Lines are counted as an editor counts them
  (``\\n``, ``\\r\\n`` or a lone ``\\r`` each end one). Text is chunked at blank lines (and at
  Markdown headings, whose text goes to ``meta["heading"]``) into pieces of at most
  `MAX_CHARS` characters; a longer paragraph is cut between lines, a longer line within itself
  (each piece keeps the line's number).
* JSON whose top level is an array of objects or arrays: one segment per record,
  ``{"unit": "record", "position": {"index": 4}}`` (plus ``"id"`` when the record has an ``id``,
  ``uid`` or ``key``), its text the record as written in the file, ``meta["line"]`` and
  ``meta["line_end"]`` the lines it spans.
* HTML: visible text only (no scripts, styles, templates), block by block, located by the lines
  of the HTML source the text stands on; the page title goes to ``meta["title"]``.
* RTF: converted to text, one line per RTF paragraph, located as
  ``{"unit": "paragraph", "position": {"line": 2, "line_end": 4}}`` (paragraphs of the converted
  text, every ``\\par`` counted).
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

from hippocamp.perceive.base import Part, ReadContext, ReadError
from hippocamp.registry import register
from hippocamp.schema.locators import ItemLocator, LineLocator
from hippocamp.schema.segment import Segment

__all__ = [
    "MAX_CHARS",
    "Decoded",
    "HtmlReader",
    "JsonReader",
    "RtfReader",
    "TextReader",
    "chunk_lines",
    "decode_text",
    "html_blocks",
    "rtf_to_text",
    "split_lines",
]

#: the longest segment text a text reader makes (characters)
MAX_CHARS = 1000
_SAMPLE = 64 * 1024
BINARY = "binary content in a text file"


# -- decoding --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Decoded:
    """Text decoded from bytes, the codec that decoded it, and a note when decoding was a guess."""

    text: str
    encoding: str
    note: str | None = None

    @property
    def utf8(self) -> bool:
        return self.encoding in ("utf-8", "ascii")


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# bytes that plain text uses: TAB, LF, FF, CR, ESC (ANSI colours in logs) and everything from space up
_TEXT_BYTES = bytes([9, 10, 12, 13, 27, *range(32, 127), *range(128, 256)])
# C0 controls other than TAB/LF/CR/FF, and DEL: never in real text
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f\x7f]")


def _control_ratio(sample: bytes) -> float:
    if not sample:
        return 0.0
    return len(sample.translate(None, _TEXT_BYTES)) / len(sample)


def _utf16_guess(sample: bytes) -> str | None:
    """``utf-16-le``/``-be`` for BOM-less UTF-16 of mostly Latin text (every other byte NUL)."""
    half = len(sample) // 2
    if half < 2:
        return None
    even, odd = sample[0 : 2 * half : 2].count(0), sample[1 : 2 * half : 2].count(0)
    if odd >= 0.3 * half and even <= 0.02 * half:
        return "utf-16-le"
    if even >= 0.3 * half and odd <= 0.02 * half:
        return "utf-16-be"
    return None


def _normalize_codec(name: str) -> str:
    try:
        canonical = codecs.lookup(name).name
    except LookupError:
        return name
    return {"windows-1252": "cp1252", "iso8859-1": "latin-1"}.get(canonical, canonical)


def _detect(data: bytes) -> tuple[str | None, str | None]:
    """(codec, note) for bytes that are not UTF-8, by charset-normalizer with a cp1252 preference."""
    sample = data[: 4 * _SAMPLE]
    if len(data) > len(sample):  # do not cut a multi-byte character in two at the end of the sample
        sample = sample[: max(len(sample) - 4, 1)]
    try:
        import charset_normalizer
    except ImportError:  # a core dependency; degrade rather than fail if it is missing
        return None, "charset-normalizer not installed: encoding not detected"
    best = charset_normalizer.from_bytes(sample).best()
    guess = _normalize_codec(best.encoding) if best is not None else None
    if guess != "cp1252" and _clean_cp1252(sample):
        return "cp1252", None
    return guess, None


def _clean_cp1252(sample: bytes) -> bool:
    """Whether ``sample`` reads as sensible cp1252 (no undefined bytes, a low mess ratio)."""
    try:
        text = sample.decode("cp1252")
    except UnicodeDecodeError:
        return False
    try:
        from charset_normalizer.md import mess_ratio
    except ImportError:
        return False
    return mess_ratio(text, 0.2) <= 0.1


def decode_text(data: bytes, declared: str | None = None) -> Decoded:
    """Decode the bytes of a text file; raises `ReadError` when they are not text.

    ``declared`` is an encoding the file names itself (an HTML ``<meta charset>``), tried after
    a BOM and UTF-8.
    """
    for bom, codec in _BOMS:
        if data.startswith(bom):
            body = data[len(bom) :]
            text, note = _decode(body, codec)
            return _checked(Decoded(text, codec, note))
    sample = data[:_SAMPLE]
    if b"\x00" in sample:
        codec = _utf16_guess(sample)
        if codec is None:
            raise ReadError(BINARY)
        text, note = _decode(data, codec)
        return _checked(Decoded(text, codec, note))
    if _control_ratio(sample) > 0.05:
        raise ReadError(BINARY)
    try:
        return _checked(Decoded(data.decode("utf-8"), "utf-8"))
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", "replace")
    if _mostly_utf8(text):  # UTF-8 with a few damaged bytes (a file cut mid-character, a bad paste)
        return _checked(Decoded(text, "utf-8", "invalid utf-8 bytes replaced"))
    if declared:
        codec = _normalize_codec(declared)
        try:
            return _checked(Decoded(data.decode(codec), codec))
        except (LookupError, UnicodeDecodeError):
            pass
    codec, note = _detect(data)
    if codec is not None:
        try:
            return _checked(Decoded(data.decode(codec), codec, note))
        except (LookupError, UnicodeDecodeError):
            pass
    return _checked(Decoded(data.decode("latin-1"), "latin-1", note or "encoding not recognised: read as latin-1"))


def _mostly_utf8(text: str) -> bool:
    """Whether text decoded from UTF-8 with replacements is UTF-8 after all: few bad bytes, and
    many more well-formed non-ASCII characters than bad ones."""
    bad = text.count("\ufffd")
    good = sum(1 for c in text if c > "\x7f") - bad
    return bad <= max(3, len(text) // 1000) and good >= 10 * bad


def _decode(data: bytes, codec: str) -> tuple[str, str | None]:
    try:
        return data.decode(codec), None
    except UnicodeDecodeError:
        return data.decode(codec, "replace"), f"invalid {codec} bytes replaced"


def _checked(decoded: Decoded) -> Decoded:
    """Refuse decoded text full of control characters or replacement marks (binary after all)."""
    sample = decoded.text[:_SAMPLE]
    if sample:
        bad = len(_CONTROL_RE.findall(sample)) + sample.count("\ufffd")
        if bad > 0.05 * len(sample):
            raise ReadError(BINARY)
    if _CONTROL_RE.search(decoded.text):
        text = _CONTROL_RE.sub("", decoded.text)
        note = decoded.note or "control characters removed"
        return Decoded(text, decoded.encoding, note)
    return decoded


def read_decoded(path: Path, ctx: ReadContext, declared: str | None = None) -> Decoded:
    """Read and decode a text file, recording a note when the encoding was guessed."""
    decoded = decode_text(path.read_bytes(), declared)
    if decoded.note:
        ctx.note(decoded.note)
    return decoded


def _encoding_meta(decoded: Decoded) -> dict[str, Any]:
    return {} if decoded.utf8 else {"encoding": decoded.encoding}


# -- lines and chunks ------------------------------------------------------------------------------
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


def _cut_long(line: str, limit: int) -> list[str]:
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
            for piece in _cut_long(text, limit) if len(text) > limit else [text]:
                if current and size + 1 + len(piece) > limit:
                    flush()
                add(i, piece)
    flush()
    return chunks


def line_locator(first: int, last: int, unit: str = "lines") -> LineLocator:
    return LineLocator(unit=unit, line=first, line_end=last if last > first else None)


def _segments_from_chunks(chunks: Iterable[Chunk], ctx: ReadContext, unit: str = "lines", **meta: Any) -> list[Segment]:
    return [ctx.segment(c.text, line_locator(c.first, c.last, unit), heading=c.heading, **meta) for c in chunks]


# -- plain text and Markdown -----------------------------------------------------------------------
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
    return _segments_from_chunks(chunks, ctx, **_encoding_meta(decoded))


# -- JSON ------------------------------------------------------------------------------------------
#: a JSON array is read record by record when it has at most this many records ...
MAX_RECORDS = 5000
_WS = re.compile(r"[ \t\n\r]*")


def json_records(text: str) -> list[tuple[Any, int, int]] | None:
    """``(value, start, end)`` offsets of each element of a top-level JSON array, or None when the
    text is not an array. Raises `ValueError` for invalid JSON."""
    decoder = json.JSONDecoder()
    pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
    if not text.startswith("[", pos):
        json.loads(text)  # validate
        return None
    pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    records: list[tuple[Any, int, int]] = []
    if text.startswith("]", pos):
        return records
    while True:
        value, end = decoder.raw_decode(text, pos)
        records.append((value, pos, end))
        pos = _WS.match(text, end).end()  # type: ignore[union-attr]
        if text.startswith(",", pos):
            pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
            continue
        if text.startswith("]", pos):
            break
        raise ValueError(f"expected ',' or ']' at offset {pos}")
    if text[pos + 1 :].strip():
        raise ValueError(f"extra data after the array at offset {pos + 1}")
    return records


def _record_id(value: Any) -> str | None:
    if isinstance(value, dict):
        for key in ("id", "uid", "key"):
            v = value.get(key)
            if isinstance(v, str | int) and not isinstance(v, bool) and str(v).strip():
                return str(v)
    return None


@register("reader", "json")
class JsonReader:
    """JSON: one segment per record of a top-level array of objects/arrays, else line chunks."""

    name: ClassVar[str] = "json"
    extensions: ClassVar[tuple[str, ...]] = ("json", "geojson")
    parts: ClassVar[tuple[Part, ...]] = ()

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        decoded = read_decoded(path, ctx)
        text = decoded.text
        try:
            records = json_records(text)
        except (ValueError, RecursionError) as exc:
            ctx.note(f"not valid JSON ({str(exc)[:120]}): read as plain text")
            return read_lines(decoded, ctx)
        if (
            not records
            or len(records) > MAX_RECORDS
            or not all(isinstance(v, dict | list) for v, _, _ in records)
            or any(end - start > 2 * MAX_CHARS for _, start, end in records)
        ):
            return read_lines(decoded, ctx)
        meta = _encoding_meta(decoded)
        segments = []
        line = 1
        offset = 0
        for index, (value, start, end) in enumerate(records, start=1):
            line += text.count("\n", offset, start)
            first = line
            line += text.count("\n", start, end)
            offset = end
            locator = ItemLocator(unit="record", index=index, id=_record_id(value))
            segments.append(ctx.segment(text[start:end], locator, line=first, line_end=line, **meta))
        return segments


# -- HTML ------------------------------------------------------------------------------------------
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
        meta = _encoding_meta(decoded) | ({"title": title} if title else {})
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
        for piece in _cut_long(block.text.replace("\n", " "), MAX_CHARS):
            yield HtmlBlock(piece, block.first, block.last, block.heading)


# -- RTF -------------------------------------------------------------------------------------------
_RTF_TOKEN = re.compile(
    r"\\([a-zA-Z]+)(-?\d+)? ?|\\'([0-9a-fA-F]{2})|\\([^a-zA-Z])|([{}])|([^\\{}\r\n]+)|[\r\n]+",
)
#: destinations whose content is not document text
_RTF_SKIP = frozenset(
    "annotation atnauthor atnid author bkmkend bkmkstart colortbl comment company creatim datafield "
    "datastore doccomm falt filetbl fldinst fontemb fontfile fonttbl footer footerf footerl footerr "
    "footnote ftncn ftnsep ftnsepc generator header headerf headerl headerr info keywords latentstyles "
    "listoverridetable listtable listtext manager mmathPr object operator pgdsctbl pict pntext pntxta "
    "pntxtb printim private revtbl revtim rsidtbl shppict stylesheet subject template themedata title "
    "colorschememapping userprops xmlnstbl".split()
)
_RTF_CHARS = {
    "par": "\n",
    "line": "\n",
    "sect": "\n",
    "page": "\n",
    "row": "\n",
    "cell": " | ",
    "tab": "\t",
    "emdash": "\u2014",
    "endash": "\u2013",
    "emspace": "\u2003",
    "enspace": "\u2002",
    "qmspace": "\u2005",
    "bullet": "\u2022",
    "lquote": "\u2018",
    "rquote": "\u2019",
    "ldblquote": "\u201c",
    "rdblquote": "\u201d",
    "zwj": "\u200d",
    "zwnj": "\u200c",
}
_RTF_ESCAPES = {"\\": "\\", "{": "{", "}": "}", "~": "\u00a0", "_": "\u2011", "-": "", "\n": "\n", "\r": "\n"}


def rtf_to_text(rtf: str) -> str:
    """The text of an RTF document (``rtf`` decoded as latin-1, one char per byte): paragraphs
    become lines, table cells are joined by `` | ``; fonts, styles, pictures and fields'
    instructions are dropped; ``\\'hh`` bytes are decoded with the document's ``\\ansicpg``."""
    out: list[str] = []
    pending = bytearray()  # \'hh bytes not yet decoded (a multi-byte character may span several)
    codepage = "cp1252"
    # per group: (skipping, unicode fallback length)
    stack: list[tuple[bool, int]] = []
    skipping, uc = False, 1
    to_skip = 0  # fallback characters still to skip after a \uN

    def emit_bytes() -> None:
        if pending:
            try:
                out.append(pending.decode(codepage, "replace"))
            except LookupError:
                out.append(pending.decode("cp1252", "replace"))
            pending.clear()

    for match in _RTF_TOKEN.finditer(rtf):
        word, arg, hexbyte, symbol, brace, run = match.groups()
        if to_skip and (hexbyte is not None or run is not None or symbol is not None):
            if run is not None and len(run) > to_skip:
                run = run[to_skip:]
                to_skip = 0
            else:
                to_skip -= 1 if run is None else len(run)
                to_skip = max(to_skip, 0)
                continue
        if hexbyte is None:
            emit_bytes()
        if brace == "{":
            stack.append((skipping, uc))
            continue
        if brace == "}":
            if stack:
                skipping, uc = stack.pop()
            to_skip = 0
            continue
        if symbol is not None:
            if symbol == "*":
                skipping = True  # an ignorable destination ({\\*\\name ...}): not document text
                continue
            if not skipping:
                out.append(_RTF_ESCAPES.get(symbol, ""))
            continue
        if word is not None:
            if word in _RTF_SKIP:
                skipping = True
            if word == "ansicpg" and arg:
                codepage = f"cp{arg}"
            elif word == "uc" and arg:
                uc = max(int(arg), 0)
            elif word == "u" and arg and not skipping:
                code = int(arg)
                out.append(chr(code + 65536 if code < 0 else code))
                to_skip = uc
            elif word == "bin" and arg:
                pass  # binary data follows in a skipped destination (pictures); the regex moves on
            elif not skipping and word in _RTF_CHARS:
                out.append(_RTF_CHARS[word])
            continue
        if hexbyte is not None:
            if not skipping:
                pending.append(int(hexbyte, 16))
            continue
        if run is not None and not skipping:
            if any(ord(c) > 127 for c in run):  # raw 8-bit text some writers emit
                run = run.encode("latin-1").decode(codepage, "replace")
            out.append(run)
    emit_bytes()
    text = "".join(out)
    text = _merge_surrogates(text)
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def _merge_surrogates(text: str) -> str:
    if not any("\ud800" <= c <= "\udfff" for c in text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


@register("reader", "rtf")
class RtfReader:
    """RTF as text: located by paragraph of the converted text."""

    name: ClassVar[str] = "rtf"
    extensions: ClassVar[tuple[str, ...]] = ("rtf",)
    parts: ClassVar[tuple[Part, ...]] = ()

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        data = path.read_bytes()
        if data.lstrip()[:5] != b"{\\rtf":
            decoded = decode_text(data)
            ctx.note("no RTF header: read as plain text")
            return read_lines(decoded, ctx)
        if b"\x00" in data[:_SAMPLE]:
            raise ReadError("binary content in an RTF file")
        text = rtf_to_text(data.decode("latin-1"))
        chunks = chunk_lines(text.split("\n"))
        return _segments_from_chunks(chunks, ctx, unit="paragraph")
