"""The source folder as a list of files: walked without following links, hashed, never modified.

`inventory(source)` returns one `SourceFile` per regular file (posix path relative to the source, size,
modification time, sha256, first bytes) and the entries it left out with why (a symbolic link, a special
file, an unreadable folder, a path deeper than `max_depth`). Walking is iterative and sorted, so two runs
over the same folder list the same files in the same order.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hippocamp.schema.filetypes import extension, modality_of

__all__ = ["SourceFile", "inventory"]

HEAD_BYTES = 16


@dataclass(frozen=True)
class SourceFile:
    rel: str
    size: int
    mtime: float
    sha256: str
    head: bytes

    @property
    def ext(self) -> str:
        return extension(self.rel)

    @property
    def modality(self) -> str | None:
        return modality_of(self.rel)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["head"] = self.head.hex()
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SourceFile:
        return cls(data["rel"], int(data["size"]), float(data["mtime"]), data["sha256"], bytes.fromhex(data["head"]))


def _hash(path: Path) -> tuple[str, bytes]:
    digest = hashlib.sha256()
    head = b""
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            if not head:
                head = chunk[:HEAD_BYTES]
            digest.update(chunk)
    return digest.hexdigest(), head


def inventory(
    source: Path, *, max_files: int = 500_000, max_depth: int = 64
) -> tuple[list[SourceFile], list[tuple[str, str]]]:
    """Every regular file under ``source`` (sorted) and what was left out, as ``(relpath, reason)``."""
    source = Path(source)
    if not source.is_dir():
        raise NotADirectoryError(f"{source}: the source must be a folder")
    files: list[SourceFile] = []
    skipped: list[tuple[str, str]] = []
    stack: list[tuple[str, int]] = [("", 0)]
    while stack:
        rel_dir, depth = stack.pop()
        try:
            entries = sorted(os.scandir(source / rel_dir if rel_dir else source), key=lambda e: e.name)
        except OSError as exc:
            skipped.append((rel_dir or ".", f"folder could not be read: {exc.strerror or exc}"))
            continue
        subdirs = []
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as exc:
                skipped.append((rel, f"could not be read: {exc.strerror or exc}"))
                continue
            if stat.S_ISLNK(st.st_mode):
                skipped.append((rel, "symbolic link (not followed)"))
            elif stat.S_ISDIR(st.st_mode):
                if depth + 1 > max_depth:
                    skipped.append((rel, f"deeper than {max_depth} folders"))
                else:
                    subdirs.append((rel, depth + 1))
            elif not stat.S_ISREG(st.st_mode):
                skipped.append((rel, "not a regular file (device, socket or pipe)"))
            elif len(files) >= max_files:
                skipped.append((rel, f"more than {max_files} files"))
            else:
                try:
                    sha, head = _hash(Path(entry.path))
                except OSError as exc:
                    skipped.append((rel, f"could not be read: {exc.strerror or exc}"))
                    continue
                files.append(SourceFile(rel, st.st_size, st.st_mtime, sha, head))
        stack.extend(reversed(subdirs))
    files.sort(key=lambda f: f.rel)
    return files, skipped
