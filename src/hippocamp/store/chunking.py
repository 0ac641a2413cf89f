"""Chunkers: how a file's segments are re-cut before they go into the store.

A chunker takes the segments perception made of one file and returns the segments to store. It is
part of an index's identity: the store records it (meta ``chunker``), every file's signature carries
it, and indexing with another chunker reads and chunks every file again, as a change of perception
options does (see `hippocamp.store.indexer`). Chunkers are found by name in the registry (kind
``chunker``) from a spec ``NAME[:ARG...]``:

``native`` (the default)
    the segments as the readers made them (a page, a cell range, a time range, a message).
``release[:MAX:MIN]`` (default ``release:1000:200``)
    the HippoCamp release's *shipped default* chunking: its ``configs/pipelines/indexing.yaml`` selects
    ``mode: "default"`` (lines 20-29): ``method: "semantic"``, ``max_chars: 1000``, ``min_chars: 200``,
    ``overlap: 0``, ``token_limit: 1000``, ``section_split_all: true``, for every file type (the
    mode has no ``by_type``). Its ``FileTypeChunkRouter`` (``src/rag/chunking/router.py:207-241``)
    then chunks each segment alone with the structural ``SemanticChunker`` of ``semantic.py`` (no
    embeddings, despite the name), whose rules are written here from that code:

    * sections (``chunk_text``, semantic.py:639-650; ``split_sections``, 554-595): the text is cut
      before every markdown heading (a line starting with ``#``s and white space); text before the
      first heading goes with it unless it is longer than 300 characters. Sections are chunked,
      merged and capped each on its own: no chunk spans two sections.
    * blocks (``_parse_semantic_blocks`` and helpers, 143-312): fenced code blocks (```` ``` ````
      to ```` ``` ````) and tables (runs of lines starting with ``|`` with another ``|``, or from
      ``[TABLE]`` to ``[/TABLE]``) are blocks; the text between them is cut at blank lines into
      paragraphs, and a paragraph starting like a list item (``-``, ``*``, ``+``, ``1.``) takes the
      following ones that do too into one list block.
    * packing (``semantic_chunk``, 44-141): blocks are joined with a blank line while the chunk stays
      within MAX characters. A block that does not fit ends the chunk, unless the chunk is under MIN
      characters: then the chunk takes the block's head (cut before its last line break within the
      room left, else its last ``|``, else its last space, else at the room's end) and the rest starts
      the next chunk.
    * a block longer than MAX (``_split_large_block``, 314-338) is cut on its own: code and tables at
      their blank lines, anything else at its sentences (after every run of ``.!?。！？；`` and the
      white space after it; ``3.5`` ends a sentence too), pieces gathered while they fit in MAX (a
      piece under MIN takes the next one even past MAX); if any piece is still longer than MAX, the
      whole block is cut by length instead (``_split_by_length``, 445-505): windows of MAX cut before
      the last line break (which is skipped), else ``|``, else space, and a piece under MIN joined
      to the one before when both fit.
    * merging (``_merge_small_chunks``, 664-682): each chunk of a section is joined to the one before
      while both and a blank line fit in MAX, whatever their sizes; so a small tail merges with its
      neighbour when they fit, and stays small when they do not.
    * the token cap (``_enforce_token_limit``, 704-815): a chunk over 1,000 tokens is re-cut at its
      blocks, and a block over the cap at the longest prefix within it. The release counts tokens
      with tiktoken's ``cl100k_base``, which hippocamp does not depend on; here the count is the
      estimate the release itself falls back to (semantic.py:691-702: a token per CJK character
      and per 2.7 other characters, or 1.2 per word if more). That estimate never exceeds a text's
      length, and every chunk is at most MAX characters (packing, cutting and merging all keep to
      MAX), so with MAX <= 1,000 the cap never binds here. With tiktoken it never binds either on
      ASCII text (a token is at least one byte); it can on text whose characters take more than a
      token each (rarer CJK characters, emoji), which the release then cuts further and hippocamp
      does not.

    Differences, besides the token count: the stored chunk is the segment's own text from the
    chunk's first character to its last, so where the release joins pieces with ``"\\n\\n"`` (blocks
    of a chunk, list items, merged chunks) or drops a line break it cut at, the original white
    space is kept; the words, their order and every length the rules compare are the release's
    (`release_pieces` gives the release's own strings; where a code fence starts inside a table row
    the release repeats the overlapping text, the stored chunk has it once). The router then drops every chunk shorter
    than MIN characters (router.py:221-223): whole segments and markdown sections under 200
    characters, and tails that could not merge. hippocamp keeps them: the release also indexes a
    summary of each file as a chunk of its own (router.py:115-131), through which its short files
    stay findable, and hippocamp has none. Blank segments are kept as they are (the release skips
    them, router.py:208-210).
``recursive[:SIZE:OVERLAP]`` (default ``recursive:512:0``)
    the release's *other* chunker, ``ChonkieRecursiveChunker``
    (``benchmark/src/rag/chunking/recursive.py``), not its shipped default: the router uses it
    only for ``method: "recursive"`` (router.py:102-108), and its ``pipeline/indexing.py:74`` with
    SIZE 400 (line 36) and overlap 50. It runs chonkie's ``RecursiveChunker`` with
    ``min_characters_per_chunk=10`` (recursive.py:42-45) and, for an overlap,
    ``OverlapRefinery(tokenizer="character", method="suffix", merge=True)`` (52-58); the defaults
    are the class's own, ``chunk_size=512, min_chars=10, overlap=0`` (recursive.py:25), and
    ``recursive:1000:200`` and any other SIZE:OVERLAP can be asked for. Written here from that
    behaviour as chonkie 1.6.1 with chonkie-core 0.10 (current when the release was published) has
    it; chonkie 1.4-1.5.2 cut a two-character separator such as ``"\\r\\n"`` between its characters.

    * each segment is chunked on its own, so a chunk never spans two segments;
    * a text longer than SIZE characters is split at the separators of the first level that has
      any, in order: paragraphs (``"\\n\\n"``, ``"\\r\\n"``, ``"\\n"``, ``"\\r"``), sentences
      (``". "``, ``"! "``, ``"? "``), pauses (brackets, quotes, ``:;,|~-`` and the like), words
      (``" "``), and at last fixed windows of SIZE characters. A separator stays at the end of the
      piece before it, pieces shorter than 10 bytes (UTF-8) are joined to their neighbours, and
      consecutive pieces are merged greedily while their total stays within SIZE; a merged piece
      still longer than SIZE goes down to the next level. Lengths are counted in characters.
    * the overlap is a *suffix*: every piece but the last is followed by the first OVERLAP
      characters of the next piece (the whole next piece when it is shorter), so a chunk holds at
      most SIZE + OVERLAP characters, and a file read whole from the store shows each overlap
      twice. Chunks are stripped of surrounding whitespace and empty ones dropped.
``semantic[:THRESHOLD]`` (default ``semantic:0.2``)
    hippocamp's own embedding-based chunker, not the release's (the release's ``semantic`` method,
    despite its name, is the structural splitter above, ``release``): each segment is split into
    sentences, the sentences are embedded with the index's embedder, and a sentence joins the chunk
    before it while its cosine similarity to that chunk's centroid (the normalised mean of its
    sentences' vectors) is at least THRESHOLD and the chunk stays within 1,000 characters; a
    sentence longer than that is cut as
    ``recursive:1000:0`` would cut it. Comparing with the centroid rather than with the previous
    sentence alone keeps a chunk together across one off-topic-looking sentence. The default was
    chosen by eye on a few texts with ``minilm-l6-int8`` (same-topic sentences 0.2-0.65, a change of
    topic 0.0-0.15); another embedder may want another. It needs an embedder: asking for it with
    embeddings off is an error (`ChunkerError`), never a silent fallback to another chunker.

Every chunk keeps its segment's path, modality, locator, ``within`` route and meta, plus
``meta["chunk"] = {"start": s, "end": e}``: ``segment.text[s:e]`` is the chunk's text. A locator is
never invented or narrowed: a chunk cut from page 3 says page 3. Segments whose text is blank are
kept as they are (they may carry metadata such as a photo's time and place).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from hippocamp import registry
from hippocamp.schema.segment import Segment

if TYPE_CHECKING:
    from hippocamp.models.embedding import Embedder

__all__ = [
    "DEFAULT_CHUNKER",
    "Chunker",
    "ChunkerError",
    "NativeChunker",
    "RecursiveChunker",
    "ReleaseChunker",
    "SemanticChunker",
    "chunker_identity",
    "parse_chunker",
    "recursive_pieces",
    "release_pieces",
    "sentence_spans",
]

DEFAULT_CHUNKER = "native"


class ChunkerError(ValueError):
    """A chunker spec that cannot be used: an unknown name, bad numbers, or no embedder for one that needs it."""


@runtime_checkable
class Chunker(Protocol):
    """Re-cuts the segments of one file. Registered under kind ``chunker`` as a class with
    ``from_args(args: list[str]) -> Chunker`` (the spec's ``:``-separated arguments)."""

    @property
    def spec(self) -> str:
        """The canonical spec (``recursive:1000:200``): with the embedder's id, when it uses one, what
        the store records as the index's chunker."""

    @property
    def needs_embedder(self) -> bool:
        """Whether `chunk` needs the index's embedder."""

    def chunk(self, segments: Sequence[Segment], embedder: Embedder | None = None) -> list[Segment]: ...


def parse_chunker(spec: str) -> Chunker:
    """The chunker a spec names (``native``, ``recursive:800:100``, ``semantic:0.4``); `ChunkerError`
    with the reason for a spec that cannot be used."""
    name, *args = spec.strip().split(":")
    try:
        factory = registry.get("chunker", name.strip().lower())
    except registry.UnknownPluginError as exc:
        known = ", ".join(exc.known)
        raise ChunkerError(f"unknown chunker {name!r} in {spec!r}; known: {known}") from None
    chunker: Chunker = factory.from_args([a.strip() for a in args])
    return chunker


def chunker_identity(chunker: Chunker, embedder: Embedder | None = None) -> str:
    """What the store records for the chunker: its spec, and the embedder's id when it embeds (another
    embedder would cut elsewhere)."""
    if chunker.needs_embedder and embedder is not None:
        return f"{chunker.spec}@{embedder.id}"
    return chunker.spec


def _number(spec: str, what: str, value: str, kind: type[int] | type[float]) -> Any:
    try:
        return kind(value)
    except ValueError:
        noun = "a whole number" if kind is int else "a number"
        raise ChunkerError(f"{spec}: {what} must be {noun}, not {value!r}") from None


# -- native --------------------------------------------------------------------------------------------
@registry.register("chunker", "native")
@dataclass(frozen=True)
class NativeChunker:
    """The segments as the readers made them."""

    needs_embedder: ClassVar[bool] = False

    @property
    def spec(self) -> str:
        return "native"

    @classmethod
    def from_args(cls, args: Sequence[str]) -> NativeChunker:
        if args:
            raise ChunkerError(f"native:{':'.join(args)}: the native chunker takes no arguments")
        return cls()

    def chunk(self, segments: Sequence[Segment], embedder: Embedder | None = None) -> list[Segment]:
        return list(segments)


# -- recursive -----------------------------------------------------------------------------------------
#: the release's separators, level by level (chonkie's default ``RecursiveRules``); after the last
#: level, fixed windows of SIZE characters
SEPARATORS: tuple[tuple[str, ...], ...] = (
    ("\n\n", "\r\n", "\n", "\r"),
    (". ", "! ", "? "),
    ("{", "}", '"', "[", "]", "<", ">", "(", ")", ":", ";", ",", "—", "|", "~", "-", "...", "`", "'"),
    (" ",),
)
#: at each position the first separator of the list that matches is taken (leftmost first), as the
#: release's Aho-Corasick matcher does; a regex alternation in the same order does the same
_LEVELS = tuple(re.compile("|".join(re.escape(s) for s in level)) for level in SEPARATORS)
#: pieces shorter than this many UTF-8 bytes are joined to their neighbours (the release's min_chars)
MIN_PIECE_BYTES = 10
#: ``recursive`` without arguments: the release's ``ChonkieRecursiveChunker`` defaults (recursive.py:25)
RECURSIVE_SIZE = 512
RECURSIVE_OVERLAP = 0


def _bytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _split(text: str, level: re.Pattern[str]) -> list[str]:
    """``text`` cut after every separator of ``level``; a piece shorter than `MIN_PIECE_BYTES` grows
    into the next (and a short run into the piece after it)."""
    pieces: list[str] = []
    run, run_bytes = "", 0
    start = 0
    for end in [m.end() for m in level.finditer(text)] + [len(text)]:
        if end <= start:
            continue
        piece = text[start:end]
        piece_bytes = _bytes(piece)
        start = end
        if run and (run_bytes < MIN_PIECE_BYTES or piece_bytes < MIN_PIECE_BYTES):
            run, run_bytes = run + piece, run_bytes + piece_bytes
            continue
        if run:
            pieces.append(run)
        run, run_bytes = piece, piece_bytes
    if run:
        pieces.append(run)
    return pieces


def _merge(pieces: list[str], size: int) -> list[str]:
    """Consecutive pieces joined greedily while the total stays within ``size`` characters (a piece
    longer than ``size`` stands alone)."""
    merged: list[str] = []
    i = 0
    while i < len(pieces):
        j, total = i + 1, len(pieces[i])
        while j < len(pieces) and total + len(pieces[j]) <= size:
            total += len(pieces[j])
            j += 1
        merged.append("".join(pieces[i:j]))
        i = j
    return merged


def recursive_pieces(text: str, size: int, level: int = 0) -> list[str]:
    """The release's recursive cut of ``text`` into pieces of at most ``size`` characters, before any
    overlap and without stripping: the pieces joined give ``text`` back."""
    if not text:
        return []
    if level == len(_LEVELS):
        return [text[i : i + size] for i in range(0, len(text), size)]
    pieces: list[str] = []
    for piece in _merge(_split(text, _LEVELS[level]), size):
        pieces.extend(recursive_pieces(piece, size, level + 1) if len(piece) > size else [piece])
    return pieces


def _spans(text: str, size: int, overlap: int) -> list[tuple[int, int]]:
    """Where each chunk of ``text`` lies: (start, end) offsets, overlap added and whitespace stripped."""
    pieces = recursive_pieces(text, size)
    starts = [0]
    for piece in pieces:
        starts.append(starts[-1] + len(piece))
    spans = []
    for i in range(len(pieces)):
        start, end = starts[i], starts[i + 1]
        if overlap and i + 1 < len(pieces):
            end += min(overlap, len(pieces[i + 1]))
        spans.append(_stripped(text, start, end))
    return [(s, e) for s, e in spans if e > s]


def _stripped(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _chunk_of(seg: Segment, start: int, end: int) -> Segment:
    """The part ``seg.text[start:end]`` as a segment of its own, with the segment's locator and route."""
    meta = dict(seg.meta)
    meta["chunk"] = {"start": start, "end": end}
    return Segment.trusted(seg.path, seg.modality, seg.text[start:end], seg.locator, list(seg.within), meta)


def _renumbered(chunks: list[Segment]) -> list[Segment]:
    for i, chunk in enumerate(chunks):
        chunk.ordinal = i
    return chunks


@registry.register("chunker", "recursive")
@dataclass(frozen=True)
class RecursiveChunker:
    """The release's recursive character chunking (see the module's description)."""

    size: int = RECURSIVE_SIZE
    overlap: int = RECURSIVE_OVERLAP
    needs_embedder: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ChunkerError(f"{self.spec}: SIZE must be at least 1 character")
        if not 0 <= self.overlap < self.size:
            raise ChunkerError(f"{self.spec}: OVERLAP must be at least 0 and less than SIZE ({self.size})")

    @property
    def spec(self) -> str:
        return f"recursive:{self.size}:{self.overlap}"

    @classmethod
    def from_args(cls, args: Sequence[str]) -> RecursiveChunker:
        if not args:
            return cls()
        spec = "recursive:" + ":".join(args)
        if len(args) != 2:
            raise ChunkerError(f"{spec}: write recursive:SIZE:OVERLAP, e.g. recursive:1000:200")
        return cls(_number(spec, "SIZE", args[0], int), _number(spec, "OVERLAP", args[1], int))

    def chunk(self, segments: Sequence[Segment], embedder: Embedder | None = None) -> list[Segment]:
        chunks: list[Segment] = []
        for seg in segments:
            if not seg.text.strip():
                chunks.append(seg.model_copy())
                continue
            chunks.extend(_chunk_of(seg, s, e) for s, e in _spans(seg.text, self.size, self.overlap))
        return _renumbered(chunks)


# -- release -------------------------------------------------------------------------------------------
#: the release's shipped chunking settings (``configs/pipelines/indexing.yaml``, mode ``default``)
RELEASE_MAX_CHARS = 1000
RELEASE_MIN_CHARS = 200
RELEASE_TOKEN_LIMIT = 1000
#: a text before the first heading longer than this is a section of its own, else part of the first
_PREAMBLE_CHARS = 300
#: the blank line the release puts between the pieces it joins
_JOIN = "\n\n"
#: a markdown heading: at a line's start one or more ``#``, white space, the rest of the line. The white
#: space may be line breaks, so after a line of bare ``#``s the next line is part of the heading (and
#: is not a heading of its own even if it starts with ``#``)
_HEADING = re.compile(r"^#+\s+.*$", re.MULTILINE)
#: a fenced code block, from one triple backtick to the next, over lines
_FENCE = re.compile(r"```.*?```", re.DOTALL)
#: a blank line: two line breaks with only white space between them
_BLANK_LINE = re.compile(r"\n\s*\n")
#: a list item starts with (white space and) ``-``, ``*``, ``+`` or ``12.``, then white space
_LIST_ITEM = re.compile(r"\s*(?:[-*+]|\d+\.)\s")
#: a sentence ends at a run of ``.!?`` (or CJK end marks, or ``；``) with the white space after it
_SENTENCE = re.compile(r"[.!?。！？；]+\s*")
_WORD = re.compile(r"\S+")
#: the characters the release's token estimate counts as one token each (CJK ideographs, kana)
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")


class _Text:
    """A string the release's method makes from a segment's text by cutting and joining, with the offset
    in the segment of each of its characters (-1 for a blank line a join added), so that a chunk can be
    stored as the part of the segment it came from."""

    __slots__ = ("at", "s")

    def __init__(self, s: str, at: np.ndarray) -> None:
        self.s, self.at = s, at

    @classmethod
    def whole(cls, text: str) -> _Text:
        return cls(text, np.arange(len(text), dtype=np.int64))

    def __len__(self) -> int:
        return len(self.s)

    def __add__(self, other: _Text) -> _Text:
        return _Text(self.s + other.s, np.concatenate((self.at, other.at)))

    def cut(self, start: int, end: int | None = None) -> _Text:
        return _Text(self.s[start:end], self.at[start:end])

    def then(self, other: _Text) -> _Text:
        """``self``, a blank line, ``other`` (the release's ``a + "\\n\\n" + b``)."""
        return _Text(self.s + _JOIN + other.s, np.concatenate((self.at, _GAP, other.at)))

    def blank(self) -> bool:
        return not self.s.strip()

    def stripped_len(self) -> int:
        return len(self.s.strip())

    def strip(self) -> _Text:
        inner = self.s.strip()
        start = len(self.s) - len(self.s.lstrip()) if inner else 0
        return self.cut(start, start + len(inner))

    def span(self) -> tuple[int, int]:
        """Where in the segment the (stripped, non-blank) text lies, first character to last."""
        at = self.at[self.at >= 0]
        return int(at.min()), int(at.max()) + 1


_GAP = np.full(len(_JOIN), -1, dtype=np.int64)
_NOTHING = _Text("", np.zeros(0, dtype=np.int64))


def _joined(parts: Sequence[_Text]) -> _Text:
    out = parts[0]
    for part in parts[1:]:
        out = out.then(part)
    return out


def _estimated_tokens(text: str) -> int:
    """The release's estimate of a text's tokens, the one it falls back to when tiktoken cannot encode
    (semantic.py:691-702): one per CJK character, one per 2.7 other characters, or 1.2 per word if that
    is more. It never exceeds ``len(text)``: 2.7 characters per token, and a word and its white space
    take at least two characters (1.2 tokens), a last one at least one."""
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    return max(int((len(text) - cjk) / 2.7) + cjk, int(len(_WORD.findall(text)) * 1.2))


def _table_ranges(text: str) -> list[tuple[int, int]]:
    """Where the tables are: runs of lines that start with ``|`` and have another ``|`` (a ``---`` line with
    a ``|`` continues one), or lines from ``[TABLE]`` to ``[/TABLE]`` while they are such rows."""
    ranges: list[tuple[int, int]] = []
    start: int | None = None
    pos = 0
    for line in text.split("\n"):
        bare = line.strip()
        if bare == "[TABLE]":
            start = pos if start is None else start
        elif bare == "[/TABLE]":
            if start is not None:
                ranges.append((start, pos + len(line) + 1))  # the line break after the marker too
                start = None
        elif bare.startswith("|") and "|" in bare[1:]:
            start = pos if start is None else start
        elif start is not None and not ("---" in bare and "|" in bare):
            ranges.append((start, pos))
            start = None
        pos += len(line) + 1
    if start is not None:
        ranges.append((start, len(text)))
    return ranges


def _paragraphs(text: _Text, start: int, end: int) -> list[tuple[_Text, bool]]:
    """The paragraphs of ``text[start:end]`` (parts between blank lines); a part that starts like a list
    item takes the parts after it that do too, joined with blank lines, as one block."""
    if not text.s[start:end].strip():
        return []
    parts: list[tuple[int, int]] = []
    last = start
    for match in _BLANK_LINE.finditer(text.s, start, end):
        parts.append((last, match.start()))
        last = match.end()
    parts.append((last, end))
    blocks: list[tuple[_Text, bool]] = []
    i = 0
    while i < len(parts):
        a, b = parts[i]
        part = text.s[a:b]
        if not part.strip():
            i += 1
            continue
        j = i + 1
        if _LIST_ITEM.match(part):
            # the release tests the following parts stripped: a part that is only a marker ends the list
            while j < len(parts) and _LIST_ITEM.match(text.s[parts[j][0] : parts[j][1]].strip()):
                j += 1
        blocks.append((_joined([text.cut(a, b) for a, b in parts[i:j]]), False))
        i = j
    return blocks


def _blocks(text: _Text) -> list[tuple[_Text, bool]]:
    """``text`` as the release's blocks, each with whether it is a code block or a table (those are cut at
    blank lines when too long, the others at sentences)."""
    code = [(m.start(), m.end()) for m in _FENCE.finditer(text.s)]
    guarded = sorted(code + _table_ranges(text.s), key=lambda r: r[0])  # stable: code first at a tie
    blocks: list[tuple[_Text, bool]] = []
    pos, k = 0, 0
    while pos < len(text):
        while k < len(guarded) and guarded[k][1] <= pos:  # ranges behind us (or inside the last one) are passed
            k += 1
        if k == len(guarded):
            blocks.extend(_paragraphs(text, pos, len(text)))
            break
        a, b = guarded[k]
        if a <= pos:  # inside a code block or table: all of it, from its start even if it overlaps the last one
            blocks.append((text.cut(a, b), True))
            pos = b
        else:
            blocks.extend(_paragraphs(text, pos, a))
            pos = a
    return blocks


def _sections(text: _Text) -> list[_Text]:
    """``text`` cut before every markdown heading; what comes before the first heading goes with it,
    unless it is longer than 300 characters (and not blank)."""
    starts = [m.start() for m in _HEADING.finditer(text.s)]
    if not starts:
        return [text]
    preamble = text.s[: starts[0]]
    own = bool(preamble.strip()) and len(preamble) > _PREAMBLE_CHARS
    bounds = [0, *starts[1:], len(text)] if not own else [0, *starts, len(text)]
    return [text.cut(a, b) for a, b in pairwise(bounds)]


def release_pieces(text: str, max_chars: int = RELEASE_MAX_CHARS, min_chars: int = RELEASE_MIN_CHARS) -> list[str]:
    """The chunks the release's shipped method makes of ``text`` (one segment's), as the release writes
    them: joined pieces separated by ``"\\n\\n"``, stripped. The ``release`` chunker stores, for each, the
    segment's own text from its first character to its last."""
    return [piece.s for piece in ReleaseChunker(max_chars, min_chars).pieces(text)]


@registry.register("chunker", "release")
@dataclass(frozen=True)
class ReleaseChunker:
    """The release's shipped structural chunking (see the module's description)."""

    max_chars: int = RELEASE_MAX_CHARS
    min_chars: int = RELEASE_MIN_CHARS
    needs_embedder: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.max_chars < 1:
            raise ChunkerError(f"{self.spec}: MAX must be at least 1 character")
        if not 0 <= self.min_chars <= self.max_chars:
            raise ChunkerError(f"{self.spec}: MIN must be at least 0 and at most MAX ({self.max_chars})")

    @property
    def spec(self) -> str:
        return f"release:{self.max_chars}:{self.min_chars}"

    @classmethod
    def from_args(cls, args: Sequence[str]) -> ReleaseChunker:
        if not args:
            return cls()
        spec = "release:" + ":".join(args)
        if len(args) != 2:
            raise ChunkerError(f"{spec}: write release:MAX:MIN, e.g. release:1000:200")
        return cls(_number(spec, "MAX", args[0], int), _number(spec, "MIN", args[1], int))

    def chunk(self, segments: Sequence[Segment], embedder: Embedder | None = None) -> list[Segment]:
        chunks: list[Segment] = []
        for seg in segments:
            if not seg.text.strip():
                chunks.append(seg.model_copy())
                continue
            chunks.extend(_chunk_of(seg, *piece.span()) for piece in self.pieces(seg.text))
        return _renumbered(chunks)

    def pieces(self, text: str) -> list[_Text]:
        """The chunks of one segment's text: each section's blocks packed, small chunks merged, the token
        cap applied; stripped, blank ones dropped."""
        chunks: list[_Text] = []
        for section in _sections(_Text.whole(text)):
            packed = [c for c in self._packed(section) if not c.blank()]
            chunks.extend(self._token_capped(self._merged(packed)))
        return [c.strip() for c in chunks if not c.blank()]

    def _packed(self, section: _Text) -> list[_Text]:
        """The section's blocks packed into chunks of at most `max_chars` (semantic.py:44-141, no overlap)."""
        blocks = _blocks(section)
        if not blocks:
            return [section]
        chunks: list[_Text] = []
        current = _NOTHING
        for block, guarded in blocks:
            if len(block) > self.max_chars:  # the chunk so far ends; the block is cut on its own
                if not current.blank():
                    chunks.append(current)
                    current = _NOTHING
                chunks.extend(self._cut_block(block, guarded))
                continue
            if not current or len(current) + len(_JOIN) + len(block) <= self.max_chars:
                current = current.then(block) if current else block
                continue
            room = self.max_chars - len(current) - len(_JOIN)
            if current.stripped_len() >= self.min_chars or room <= 0:
                chunks.append(current)
                current = block
                continue
            # the chunk so far is too small: it takes the head of the block that fits
            head, tail = self._head(block, room)
            if head.blank():
                chunks.append(current)
                current = block
                continue
            chunks.append(current.then(head))
            # the rest starts the next chunk, without a line break the cut was made before
            current = _NOTHING if tail.blank() else tail.cut(1) if tail.s.startswith("\n") else tail
        if not current.blank():
            chunks.append(current)
        return chunks or [section]

    @staticmethod
    def _head(block: _Text, room: int) -> tuple[_Text, _Text]:
        """``block`` cut before its last line break within ``room`` characters, else its last ``|``, else
        its last space, else at ``room`` (a break at the very start does not count)."""
        if len(block) <= room:
            return block, _NOTHING
        cut = block.s.rfind("\n", 0, room)
        if cut <= 0:
            cut = block.s.rfind("|", 0, room)
        if cut <= 0:
            cut = block.s.rfind(" ", 0, room)
        if cut <= 0:
            cut = room
        return block.cut(0, cut), block.cut(cut)

    def _cut_block(self, block: _Text, guarded: bool) -> list[_Text]:
        """A block longer than `max_chars`: a code block or table at its blank lines, anything else at its
        sentences; if a piece is still too long, the whole block by length."""
        pieces = self._at_blank_lines(block) if guarded else self._at_sentences(block)
        if any(len(piece) > self.max_chars for piece in pieces):
            return self._by_length(block)
        return pieces

    def _gathered(self, parts: list[_Text], strip: bool) -> list[_Text]:
        """Consecutive parts gathered while they fit in `max_chars`; a part that does not fit starts a new
        piece, unless the piece so far is under `min_chars` (stripped): then it takes the part anyway."""
        pieces: list[_Text] = []
        current = _NOTHING
        for part in parts:
            if current and len(current) + len(part) > self.max_chars and current.stripped_len() >= self.min_chars:
                pieces.append(current.strip() if strip else current)
                current = part
            else:
                current = current + part
        if not current.blank():
            pieces.append(current.strip() if strip else current)
        return pieces

    def _at_sentences(self, block: _Text) -> list[_Text]:
        ends = [m.end() for m in _SENTENCE.finditer(block.s)]
        bounds = [0, *ends] + ([len(block)] if not ends or ends[-1] < len(block) else [])
        sentences = [block.cut(a, b) for a, b in pairwise(bounds)]
        return self._gathered([s for s in sentences if not s.blank()], strip=True) or [block]

    def _at_blank_lines(self, block: _Text) -> list[_Text]:
        bounds = [0]
        for match in _BLANK_LINE.finditer(block.s):
            bounds += [match.start(), match.end()]
        bounds.append(len(block))
        # the text between blank lines and the blank lines themselves, alternately (empty at either end)
        parts = [block.cut(a, b) for a, b in pairwise(bounds)]
        return self._gathered(parts, strip=False) or [block]

    def _by_length(self, block: _Text) -> list[_Text]:
        """``block`` cut into pieces of at most `max_chars`: before the last line break in the window (which
        is then skipped), else the last ``|``, else the last space, else at the window's end; a cut that
        would leave a piece under `min_chars` is made at the window's end. A following piece under
        `min_chars` (stripped) is then appended to the one before when both fit in `max_chars`."""
        text, n = block.s, len(block)
        pieces: list[_Text] = []
        start = 0
        while start < n:
            end = min(n, start + self.max_chars)
            if end < n:
                cut = text.rfind("\n", start, end)
                if cut <= start:
                    cut = text.rfind("|", start, end)
                if cut <= start:
                    cut = text.rfind(" ", start, end)
                end = end if cut <= start or cut - start < self.min_chars else cut
            piece = block.cut(start, end)
            if not piece.blank():
                pieces.append(piece)
            start = end + 1 if end < n and text[end] == "\n" else end
        if not pieces:
            return [block]
        merged = [pieces[0]]
        for piece in pieces[1:]:
            if piece.stripped_len() < self.min_chars and len(merged[-1]) + len(piece) <= self.max_chars:
                merged[-1] = merged[-1] + piece  # joined as they are: a skipped line break stays out
            else:
                merged.append(piece)
        return merged

    def _merged(self, chunks: list[_Text]) -> list[_Text]:
        """Each chunk joined to the one before while both, and a blank line, fit in `max_chars`
        (semantic.py:664-682: any two chunks, not only small ones)."""
        merged: list[_Text] = []
        for chunk in chunks:
            if merged and len(merged[-1]) + len(_JOIN) + len(chunk) <= self.max_chars:
                merged[-1] = merged[-1].then(chunk)
            else:
                merged.append(chunk)
        return merged

    def _token_capped(self, chunks: list[_Text]) -> list[_Text]:
        """Chunks over `RELEASE_TOKEN_LIMIT` estimated tokens re-cut (semantic.py:704-815): their blocks
        packed up to the limit, a block over it cut at the longest prefix within it, and so on. A text's
        estimate never exceeds its length, so with MAX at most 1,000 this changes nothing."""
        out: list[_Text] = []
        for chunk in chunks:
            if len(chunk) <= RELEASE_TOKEN_LIMIT or _estimated_tokens(chunk.s) <= RELEASE_TOKEN_LIMIT:
                out.append(chunk)
                continue
            parts: list[_Text] = []
            total = 0
            for block, _guarded in _blocks(chunk) or [(chunk, False)]:
                if block.blank():
                    continue
                tokens = _estimated_tokens(block.s)
                if tokens > RELEASE_TOKEN_LIMIT:
                    if parts:
                        out.append(_joined(parts))
                        parts, total = [], 0
                    out.extend(self._token_prefixes(block))
                    continue
                extra = tokens + (_estimated_tokens(_JOIN) if parts else 0)
                if total + extra <= RELEASE_TOKEN_LIMIT:
                    parts.append(block)
                    total += extra
                else:
                    if parts:
                        out.append(_joined(parts))
                    parts, total = [block], tokens
            if parts:
                out.append(_joined(parts))
        return out

    @staticmethod
    def _token_prefixes(text: _Text) -> list[_Text]:
        """``text`` cut into the longest prefixes within the token limit (the estimate grows with the
        prefix, so a binary search finds each), at least one character at a time."""
        out: list[_Text] = []
        rest = text
        while not rest.blank():
            if _estimated_tokens(rest.s) <= RELEASE_TOKEN_LIMIT:
                out.append(rest)
                break
            low, high, best = 1, len(rest), 0
            while low <= high:
                mid = (low + high) // 2
                if _estimated_tokens(rest.s[:mid]) <= RELEASE_TOKEN_LIMIT:
                    best, low = mid, mid + 1
                else:
                    high = mid - 1
            best = max(best, 1)
            if not rest.cut(0, best).blank():
                out.append(rest.cut(0, best))
            rest = rest.cut(best)
        return out


# -- semantic ------------------------------------------------------------------------------------------
#: a sentence ends after ``.!?`` followed by white space (or the end), or after CJK end marks
_SENTENCE_END = re.compile(r"(?:[.!?]+(?=\s|$)|[。！？；]+)\s*")
#: the longest semantic chunk, in characters (the release's structural ``semantic`` method's max_chars too)
SEMANTIC_MAX_CHARS = 1000
_ONE = np.ones((1, 1), dtype=np.float32)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of ``text``, trailing white space included; they tile the text."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if match.end() > start:
            spans.append((start, match.end()))
            start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


@registry.register("chunker", "semantic")
@dataclass(frozen=True)
class SemanticChunker:
    """Sentences grouped while consecutive ones stay similar (see the module's description)."""

    threshold: float = 0.2
    max_chars: int = SEMANTIC_MAX_CHARS
    needs_embedder: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ChunkerError(f"{self.spec}: THRESHOLD is a cosine similarity between 0 and 1")

    @property
    def spec(self) -> str:
        return f"semantic:{self.threshold:g}"

    @classmethod
    def from_args(cls, args: Sequence[str]) -> SemanticChunker:
        if not args:
            return cls()
        spec = "semantic:" + ":".join(args)
        if len(args) != 1:
            raise ChunkerError(f"{spec}: write semantic:THRESHOLD, e.g. semantic:0.2")
        return cls(float(_number(spec, "THRESHOLD", args[0], float)))

    def chunk(self, segments: Sequence[Segment], embedder: Embedder | None = None) -> list[Segment]:
        if embedder is None:
            raise ChunkerError(f"{self.spec}: semantic chunking needs an embedder")
        sentences = [sentence_spans(seg.text) if seg.text.strip() else [] for seg in segments]
        texts = [seg.text[s:e] for seg, spans in zip(segments, sentences, strict=True) if len(spans) > 1
                 for s, e in spans]  # fmt: skip
        vectors = np.asarray(embedder.embed(texts, side="passage"), dtype=np.float32) if texts else None
        row = 0
        chunks: list[Segment] = []
        for seg, spans in zip(segments, sentences, strict=True):
            if not spans:
                chunks.append(seg.model_copy())
                continue
            block = _ONE  # a single sentence is compared with nothing
            if len(spans) > 1 and vectors is not None:
                block = vectors[row : row + len(spans)]
                row += len(spans)
            for start, end in self._groups(seg.text, spans, block):
                chunks.append(_chunk_of(seg, start, end))
        return _renumbered(chunks)

    def _groups(self, text: str, spans: list[tuple[int, int]], vectors: np.ndarray) -> list[tuple[int, int]]:
        """Sentences (``spans``, one row of ``vectors`` each) joined while close to their chunk's
        centroid and within `max_chars`; a sentence longer than that is cut."""
        groups: list[tuple[int, int]] = []
        start, end = spans[0]
        total = vectors[0].astype(np.float64)  # the sum of the chunk's vectors: its centroid's direction
        for i, (s, e) in enumerate(spans[1:], start=1):
            norm = float(np.linalg.norm(total))
            close = norm > 0 and float(total @ vectors[i]) / norm >= self.threshold
            if close and e - start <= self.max_chars:
                end = e
                total += vectors[i]
            else:
                groups.append((start, end))
                start, end = s, e
                total = vectors[i].astype(np.float64)
        groups.append((start, end))
        out: list[tuple[int, int]] = []
        for start, end in groups:
            if end - start > self.max_chars:
                out.extend((start + s, start + e) for s, e in _spans(text[start:end], self.max_chars, 0))
            else:
                out.append(_stripped(text, start, end))
        return [(s, e) for s, e in out if e > s]
