"""The checks every zip-based Office file (DOCX, XLSX, PPTX) passes before a library opens it.

A legacy binary Office file (OLE) or a password-protected one (an OLE file holding an encrypted
package), a file that is not a zip, and a zip whose members would unpack past the limits (a zip
bomb) raise `ReadError` with the reason; `library_error` says what a library's error on a zip that is
not the package it expects means.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from hippocamp.perceive.base import PerceiveOptions, ReadError

__all__ = ["OLE_MAGIC", "check_unpacked", "check_zip", "library_error", "ole_encrypted"]

#: the first bytes of an OLE compound file (legacy .doc/.xls/.ppt, or an encrypted OOXML package)
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def ole_encrypted(path: Path) -> bool:
    """Whether an OLE compound file holds an encrypted OOXML package (a password-protected file)."""
    data = path.read_bytes()
    return "EncryptedPackage".encode("utf-16-le") in data or "EncryptionInfo".encode("utf-16-le") in data


def check_zip(path: Path, kind: str, noun: str, options: PerceiveOptions) -> None:
    """Raise `ReadError` unless ``path`` is a readable zip (OOXML) file; say why it is not."""
    with path.open("rb") as fh:
        head = fh.read(8)
    if head == OLE_MAGIC:
        if ole_encrypted(path):
            raise ReadError(f"password-protected {noun}")
        raise ReadError(f"not a valid {kind} (zip) file: a legacy binary Office file (OLE)")
    if not zipfile.is_zipfile(path):
        raise ReadError(f"not a valid {kind} (zip) file")
    try:
        with zipfile.ZipFile(path) as zf:
            members = zf.infolist()
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
        raise ReadError(f"not a valid {kind} (zip) file: {exc}") from None
    check_unpacked(members, kind, options)


def check_unpacked(members: list[zipfile.ZipInfo], kind: str, options: PerceiveOptions) -> None:
    """Refuse a zip whose members would unpack past the limits (a zip bomb): in all above
    ``options.max_unpacked_bytes``, or one member above ``options.max_unpack_ratio`` times its packed
    size (and above 10 MB). The sizes are the ones the zip declares; Python's zipfile never unpacks a
    member past its declared size, so a zip cannot lie its way past this check."""
    total = 0
    for info in members:
        total += info.file_size
        packed = max(info.compress_size, 1)
        if info.file_size > 10_000_000 and info.file_size / packed > options.max_unpack_ratio:
            raise ReadError(
                f"not read: {kind} member {info.filename!r} unpacks {info.file_size / packed:,.0f} times its size "
                f"({info.file_size / 1e6:,.0f} MB; limit {options.max_unpack_ratio:,}x): a zip bomb?"
            )
    if total > options.max_unpacked_bytes:
        raise ReadError(
            f"not read: the {kind} unpacks to {total / 1e6:,.0f} MB, above the limit of "
            f"{options.max_unpacked_bytes / 1e6:,.0f} MB"
        )


def library_error(kind: str, exc: Exception) -> ReadError:
    """A `ReadError` for an error a library raised on a zip that is not the package it expects."""
    match = re.search(r"content type is '([^']+)'", str(exc))
    if match:
        return ReadError(f"not a valid {kind} file: its main part is {match.group(1)}")
    return ReadError(f"not a valid {kind} file: {type(exc).__name__}: {exc}")
