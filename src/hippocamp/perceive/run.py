"""Perceiving one file: pick its reader, guard against bad input, record what happened.

`perceive_file` never raises for a bad file. Zero-byte files, files above the size cap, symlinks
leaving the profile (never followed), unreadable permissions, corrupt content and crashing readers
each become a `FileResult` with status ``failed`` or ``skipped`` and the reason; files without a
reader get metadata only (modality ``other`` when the type is unknown).
"""

from __future__ import annotations

import errno
import functools
import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from hippocamp import registry
from hippocamp.models.local_models import sha256_of
from hippocamp.perceive.base import PerceiveOptions, ReadContext, Reader, ReadError, ext_of
from hippocamp.schema.filetypes import modality_of
from hippocamp.schema.locators import Locator
from hippocamp.schema.segment import FileInfo, Segment

__all__ = ["FileResult", "Status", "perceive_file", "reader_for", "readers"]

Status = Literal["ok", "partial", "metadata", "failed", "skipped"]


@dataclass
class FileResult:
    """What perception made of one file."""

    path: str
    info: FileInfo | None
    modality: str
    status: Status
    reader: str | None = None
    segments: list[Segment] = field(default_factory=list)
    reason: str | None = None
    notes: list[str] = field(default_factory=list)
    sha256: str | None = None


def readers() -> dict[str, Reader]:
    """Every registered reader by name (instances)."""
    return {name: cls() for name, cls in registry.items("reader")}


_by_ext: dict[str, Reader] | None = None


def reader_for(ext: str) -> Reader | None:
    """The reader registered for an extension (later registrations win, so plug-ins can override)."""
    global _by_ext
    if _by_ext is None or len(_by_ext) == 0:
        _by_ext = {}
        for reader in readers().values():
            for e in reader.extensions:
                _by_ext[e] = reader
    return _by_ext.get(ext.lower())


@functools.lru_cache(maxsize=256)
def _modality_of_type(ext: str) -> str:
    """``modality_of(path) or "other"`` from the extension alone (the same for every file of a type)."""
    return (modality_of(f"file.{ext}") if ext else None) or "other"


def _stamp(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC).replace(tzinfo=None)


def file_info(path: Path, st: os.stat_result | None = None, ext: str | None = None) -> FileInfo:
    """Size, type and times of a file (``st`` and ``ext`` when the caller already has them)."""
    st = path.stat() if st is None else st
    created = getattr(st, "st_birthtime", None) or st.st_ctime
    return FileInfo(
        size=st.st_size,
        type=ext_of(path) if ext is None else ext,
        created=_stamp(created),
        modified=_stamp(st.st_mtime),
    )


#: files up to this size are hashed from one read of the whole file; larger ones block by block
HASH_WHOLE_BYTES = 16 * 1024 * 1024


def _sha256(path: Path, size: int) -> str:
    """sha256 of a file, the same digest as `sha256_of`; a small file is read in one call instead of
    through a fresh 1 MB buffer per block (most files of a personal computer are small)."""
    if size > HASH_WHOLE_BYTES:
        return sha256_of(path)
    with path.open("rb") as fh:
        digest = hashlib.sha256(fh.read())
        while block := fh.read(1 << 20):  # the file grew since it was stat'ed
            digest.update(block)
    return digest.hexdigest()


def _outside(root: Path, path: Path) -> bool:
    target = os.path.realpath(path)  # never raises: a loop resolves to some path, checked below
    base = os.path.realpath(root)
    return not (target == base or target.startswith(base.rstrip(os.sep) + os.sep))


_SPECIAL = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"))  # fmt: skip


def _special(mode: int) -> str | None:
    """What a file that is not a regular file is (never opened: reading a FIFO waits forever)."""
    for test, what in _SPECIAL:
        if test(mode):
            return what
    return None if stat.S_ISREG(mode) else "not a regular file"


def perceive_file(root: Path, rel: str, options: PerceiveOptions | None = None, hash_file: bool = True) -> FileResult:
    """Read ``root/rel`` into segments; every problem is recorded in the result, never raised."""
    options = options or PerceiveOptions()
    path = root / rel
    ext = ext_of(rel)
    modality = _modality_of_type(ext)
    try:
        st = os.lstat(path)  # one system call for both questions when the file is not a symlink
    except OSError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        if _outside(root, path):
            return FileResult(
                rel, None, modality, "skipped", reason="symlink pointing outside the profile (not followed)"
            )
        try:
            st = os.stat(path)  # a symlink inside the profile: what it points at is read
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return FileResult(rel, None, modality, "skipped", reason="symlink loop (not followed)")
            return FileResult(rel, None, modality, "failed", reason=f"cannot stat: {exc.strerror or 'error'}")
    if st is not None and (what := _special(st.st_mode)) is not None:
        return FileResult(rel, None, modality, "skipped", reason=f"{what}, not a file: not opened")
    try:
        info = file_info(path, st, ext)
    except OSError as exc:
        return FileResult(rel, None, modality, "failed", reason=f"cannot stat: {exc.strerror or type(exc).__name__}")
    result = FileResult(rel, info, modality, "ok")
    if not os.access(path, os.R_OK):
        result.status, result.reason = "failed", "permission denied"
        return result
    if info.size == 0:
        result.status, result.reason = "failed", "empty file (0 bytes)"
        return result
    if hash_file:
        try:
            result.sha256 = _sha256(path, info.size)
        except OSError as exc:
            result.status, result.reason = "failed", f"cannot read: {exc.strerror or type(exc).__name__}"
            return result
    if info.size > options.max_bytes:
        result.status = "skipped"
        result.reason = f"larger than the cap ({info.size} > {options.max_bytes} bytes): metadata only"
        return result
    reader = reader_for(info.type)
    if reader is None:
        result.status, result.reason = "metadata", f"no reader for .{info.type or '(no extension)'}: metadata only"
        return result
    result.reader = reader.name
    ctx = ReadContext(rel_path=rel, info=info, options=options, _nested=_read_nested)
    try:
        segments = reader.read(path, ctx)
    except ReadError as exc:
        result.status, result.reason, result.notes = "failed", str(exc), ctx.notes
        return _unrooted(result, root)
    except MemoryError:
        result.status, result.reason = "failed", "out of memory while reading"
        return result
    except Exception as exc:  # a reader bug or a library choking on odd input: recorded, the run goes on
        result.status, result.reason = "failed", f"{reader.name} reader failed: {type(exc).__name__}: {exc}"
        result.notes = ctx.notes
        return _unrooted(result, root)
    result.segments = _number([s for s in segments if s.text.strip() or s.meta])
    result.notes = ctx.notes
    if ctx.notes:
        result.status = "partial"
    return _unrooted(result, root)


def _unrooted(result: FileResult, root: Path) -> FileResult:
    """The result with the host's path of the profile taken out of its reason and notes (libraries
    name the file they choked on by its absolute path): ``/home/ann/profile/Audio/x.mp3`` becomes
    ``Audio/x.mp3``."""
    base = str(root).rstrip(os.sep) + os.sep
    resolved = os.path.realpath(root).rstrip(os.sep) + os.sep
    if result.reason and (base in result.reason or resolved in result.reason):
        result.reason = result.reason.replace(base, "").replace(resolved, "")
    if any(base in n or resolved in n for n in result.notes):
        result.notes = [n.replace(base, "").replace(resolved, "") for n in result.notes]
    return result


def _number(segments: list[Segment]) -> list[Segment]:
    for i, seg in enumerate(segments):
        seg.ordinal = i
    return segments


def _read_nested(name: str, data: bytes, within: list[Locator], parent: ReadContext) -> list[Segment]:
    """Read an embedded file (attachment) with its own reader; its segments stay on the container's path."""
    ext = ext_of(name)
    reader = reader_for(ext)
    if reader is None:
        parent.note(f"attachment {name!r}: no reader for .{ext or '(none)'}")
        return []
    info = FileInfo(size=len(data), type=ext, created=parent.info.created, modified=parent.info.modified)
    ctx = ReadContext(
        rel_path=parent.rel_path,
        info=info,
        options=parent.options,
        within=within,
        depth=parent.depth + 1,
        _nested=_read_nested,
    )
    with tempfile.TemporaryDirectory(prefix="hippocamp-nested-") as tmp:
        target = Path(tmp) / (Path(name).name or f"attachment.{ext}")
        target.write_bytes(data)
        here = str(target)

        def said(text: object) -> str:  # the temporary copy's path is nobody's business
            return str(text).replace(here, name)

        try:
            segments = reader.read(target, ctx)
        except ReadError as exc:
            parent.note(f"attachment {name!r} could not be read: {said(exc)}")
            return []
        except Exception as exc:  # same policy as top-level files
            parent.note(f"attachment {name!r}: {reader.name} reader failed: {type(exc).__name__}: {said(exc)}")
            return []
    for note in ctx.notes:
        parent.note(f"attachment {name!r}: {said(note)}")
    modality = modality_of(name) or "other"
    for seg in segments:
        seg.meta.setdefault("attachment", name)
        if seg.modality == "other":
            seg.modality = modality
    return segments
