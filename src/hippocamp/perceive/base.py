"""Readers: one per format family, registered under kind ``reader``, each turning a file into `Segment`s.

A reader is a class with a ``name``, the ``extensions`` it reads, the optional ``parts`` it needs
(modules or programs; `hippocamp doctor` reports them), and ``read(path, ctx) -> list[Segment]``.
It raises `ReadError` for a file it cannot read (corrupt, encrypted, truncated): the dispatcher
records the reason and the file keeps its metadata. When an optional part is missing (OCR, speech
recognition) it reads what it can and says so with ``ctx.note(...)``. Files nested inside others
(mail attachments) are read by their own readers through ``ctx.read_nested``.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from hippocamp.schema.filetypes import extension, modality_of
from hippocamp.schema.locators import Locator
from hippocamp.schema.segment import FileInfo, Segment

__all__ = [
    "Part",
    "PerceiveOptions",
    "ReadContext",
    "ReadError",
    "Reader",
    "part_available",
    "tag_text",
]


class ReadError(Exception):
    """A file that cannot be read: the message says why (recorded, never fatal to a run)."""


@dataclass(frozen=True)
class Part:
    """An optional piece a reader uses: a Python module or a program, and what it enables."""

    name: str
    kind: str  # "module" or "program"
    purpose: str
    install: str

    def available(self) -> bool:
        return part_available(self)


def part_available(part: Part) -> bool:
    if part.kind == "module":
        return importlib.util.find_spec(part.name) is not None
    return shutil.which(part.name) is not None


@dataclass(frozen=True)
class PerceiveOptions:
    """Settings of perception; the defaults suit a personal computer on a 2-core machine."""

    #: files above this many bytes get metadata only (a recorded reason), never read
    max_bytes: int = 200 * 1024 * 1024
    #: OCR images and video frames when tesseract is installed
    ocr: bool = True
    #: transcribe audio and video when faster-whisper and a bundled model are installed
    asr: bool = True
    #: which Whisper model: "tiny.en" (fast) or "base" (better); see hippocamp.perceive.media
    asr_model: str = "tiny.en"
    #: seconds between sampled video frames for OCR
    frame_interval: float = 10.0
    #: recurring calendar events are expanded over this many days around the first occurrence
    ics_window_days: int = 400
    #: depth of nested containers (attachments of attachments)
    max_depth: int = 3
    #: a zip-based file (DOCX, XLSX, PPTX) whose members unpack to more bytes than this is not read
    max_unpacked_bytes: int = 256 * 1024 * 1024
    #: nor one with a member (above 10 MB) that unpacks to more than this many times its packed size
    max_unpack_ratio: int = 200
    #: pages of a PDF read at most (the rest noted)
    max_pages: int = 10_000
    #: calendar events (occurrences included) of one file kept at most (the rest noted)
    max_events: int = 100_000


class Reader(Protocol):
    name: ClassVar[str]
    extensions: ClassVar[tuple[str, ...]]
    parts: ClassVar[tuple[Part, ...]]

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]: ...


NestedReader = Callable[[str, bytes, list[Locator], "ReadContext"], list[Segment]]


@dataclass
class ReadContext:
    """What a reader knows of the file it reads, and how it reports notes and nested files."""

    rel_path: str
    info: FileInfo
    options: PerceiveOptions = field(default_factory=PerceiveOptions)
    #: containers this content sits in (outermost first); set for nested reads
    within: list[Locator] = field(default_factory=list)
    depth: int = 0
    notes: list[str] = field(default_factory=list)
    _nested: NestedReader | None = None

    @property
    def modality(self) -> str:
        # asked for every segment: worked out once per file (the path does not change)
        cached = self.__dict__.get("_modality")
        if cached is None or cached[0] != self.rel_path:
            cached = (self.rel_path, modality_of(self.rel_path) or "other")
            self.__dict__["_modality"] = cached
        return cached[1]

    def note(self, message: str) -> None:
        """Record something the reader could not do (a missing part, a skipped piece)."""
        if message not in self.notes:
            self.notes.append(message)

    def segment(self, text: str, locator: Locator | None = None, modality: str | None = None, **meta: Any) -> Segment:
        """A segment of this file, placed inside ``within`` when the file is nested."""
        return Segment.trusted(  # validation skipped only for values already of the fields' types
            self.rel_path,
            modality or self.modality,
            text,
            locator,
            list(self.within),
            {k: v for k, v in meta.items() if v is not None},
        )

    def read_nested(self, name: str, data: bytes, within: Iterable[Locator]) -> list[Segment]:
        """Read an embedded file (an attachment) with the reader of its own type."""
        if self._nested is None or self.depth >= self.options.max_depth:
            self.note(f"nested file {name!r} not read (depth limit {self.options.max_depth})")
            return []
        return self._nested(name, data, [*self.within, *within], self)


def tag_text(value: Any) -> str | None:
    """A metadata tag's value as text (bytes decoded, NULs dropped, blanks trimmed), or None when empty."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if value is None:
        return None
    text = str(value).replace("\x00", "").strip()
    return text or None


def ext_of(path: str | Path) -> str:
    return extension(str(path))
