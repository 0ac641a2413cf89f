"""File names and text of any bytes, kept losslessly and shown safely.

POSIX file names are bytes; Python hands names that are not valid UTF-8 to us as strings with lone
surrogates (PEP 383: byte 0xff becomes U+DCFF). Such strings cannot be written as UTF-8 (SQLite,
JSON Lines, terminals), so everything that leaves the process shows them escaped: ``bad\\xff.txt``.
`raw_name` gives back the exact bytes, so nothing is lost.
"""

from __future__ import annotations

import re

__all__ = ["clean_text", "has_surrogates", "raw_name", "shown_name", "unshown_name"]


def has_surrogates(text: str) -> bool:
    """Whether ``text`` holds lone surrogates (undecodable bytes of a name, or broken text)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def raw_name(name: str) -> bytes:
    """The bytes of a name as the file system holds them."""
    return name.encode("utf-8", "surrogateescape")


def shown_name(name: str) -> str:
    """``name`` as valid UTF-8 text: each byte that was not UTF-8 (U+DC80..U+DCFF) written ``\\xNN``,
    any other lone surrogate ``\\uDXXX``; valid text is returned unchanged (the same object)."""
    if not has_surrogates(name):
        return name
    return _SURROGATE.sub(_escape, name)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def unshown_name(text: str) -> str:
    """A name as `shown_name` shows it, back as Python spells it: ``\\xNN`` for a byte from 0x80 up
    becomes that byte again (a lone surrogate). ASCII escapes are left as typed."""
    if "\\x" not in text:
        return text
    return _ESCAPED_BYTE.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), text)


_ESCAPED_BYTE = re.compile(r"\\x([89a-fA-F][0-9a-fA-F])")


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate written as an escape (``\\udcff``), so it encodes as UTF-8;
    valid text is returned unchanged (the same object)."""
    if not has_surrogates(text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
