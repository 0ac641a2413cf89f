"""Perception: every file of a profile turned into located `Segment`s by a reader of its format."""

from hippocamp.perceive.base import Part, PerceiveOptions, ReadContext, Reader, ReadError
from hippocamp.perceive.run import FileResult, perceive_file, reader_for, readers

__all__ = [
    "FileResult",
    "Part",
    "PerceiveOptions",
    "ReadContext",
    "ReadError",
    "Reader",
    "perceive_file",
    "reader_for",
    "readers",
]
