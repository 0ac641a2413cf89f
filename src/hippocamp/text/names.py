"""File names and text of any bytes, kept losslessly and shown safely.

POSIX file names are bytes; Python hands names that are not valid UTF-8 to us as strings with lone
surrogates (PEP 383: byte 0xff becomes U+DCFF). Such strings cannot be written as UTF-8 (SQLite,
JSON Lines, terminals), so everything that leaves the process shows them escaped: ``bad\\xff.txt``.
`raw_name` gives back the exact bytes, so nothing is lost.
"""

from __future__ import annotations

__all__ = ["clean_text", "has_surrogates", "raw_name", "shown_name"]


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
    """``name`` as valid UTF-8 text: each byte that was not UTF-8 written ``\\xNN``; names that are
    valid UTF-8 are returned unchanged (the same object)."""
    if not has_surrogates(name):
        return name
    try:
        data = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that no byte could have made (U+D800..U+DC7F): not a name
        return clean_text(name)
    return data.decode("utf-8", "backslashreplace")


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate written as an escape (``\\udcff``), so it encodes as UTF-8;
    valid text is returned unchanged (the same object)."""
    if not has_surrogates(text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
