"""Decoding the bytes of a text file, for every reader of text.

`decode_text` tries a byte-order mark first, then strict UTF-8, then a BOM-less UTF-16 guess, then
charset-normalizer (Western files are read as cp1252 whenever that decodes cleanly, since short cp1252
texts are often mistaken for other code pages), and finally latin-1 with a note. A file that is not
text at all (NUL or other control bytes) raises ``ReadError("binary content in a text file")``.
Segments of a file not in UTF-8 carry ``meta={"encoding": ...}`` (`encoding_meta`).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hippocamp.perceive.base import ReadContext, ReadError

__all__ = ["BINARY", "SAMPLE_BYTES", "Decoded", "decode_text", "encoding_meta", "read_decoded"]

#: how much of a file the checks for binary content look at (bytes)
SAMPLE_BYTES = 64 * 1024
BINARY = "binary content in a text file"


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
    sample = data[: 4 * SAMPLE_BYTES]
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
    sample = data[:SAMPLE_BYTES]
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
    sample = decoded.text[:SAMPLE_BYTES]
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


def encoding_meta(decoded: Decoded) -> dict[str, Any]:
    return {} if decoded.utf8 else {"encoding": decoded.encoding}
