"""Renderers: turn a content spec into a real file and say where each keyed piece of content landed.

Every renderer takes a spec built from plain dataclasses (below) and returns ``Placements``: for
each ``key`` that appears in the spec, the locator (JSON form, as ``schema.locators.parse_locator``
reads it) and the exact text rendered there. The generator never guesses a locator: it asks the
renderer, which knows the page, cell, slide, pixel box or second it drew the content at.

Rules every renderer keeps:

* **Deterministic.** The same spec gives byte-identical output: fixed document metadata (creation
  dates from the spec, never the clock), fixed zip entry dates (``normalize_zip``), bit-exact
  encoder flags for audio and video, no randomness except from a seed in the spec.
* **Readable back.** Content must come back out through ``hippocamp.perceive``'s readers at the
  locator the renderer reports (the tests check this for every renderer).
* One key may mark several consecutive lines/rows/utterances; they must stay within one locatable
  unit (one page, one slide, one contiguous cell range, one time range, one box).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = [
    "Exif",
    "Line",
    "Page",
    "Placed",
    "Placements",
    "Scene",
    "Sheet",
    "Slide",
    "Table",
    "Utterance",
    "merge_placed",
]


@dataclass(frozen=True)
class Placed:
    """Where a keyed piece of content landed: a JSON locator and the exact text rendered there."""

    locator: dict[str, Any]
    text: str


Placements = dict[str, Placed]


def merge_placed(placements: Placements, key: str, locator: dict[str, Any], text: str, sep: str = " ") -> None:
    """Record ``text`` under ``key``; a key already placed at the same locator gets the text appended."""
    old = placements.get(key)
    if old is None:
        placements[key] = Placed(locator, text)
    elif old.locator == locator:
        placements[key] = Placed(locator, old.text + sep + text)
    else:
        raise ValueError(f"key {key!r} spans two locators: {old.locator} and {locator}")


@dataclass(frozen=True)
class Line:
    """One line or paragraph of text. ``style``: title | heading | body | small | bullet."""

    text: str
    key: str | None = None
    style: str = "body"


@dataclass(frozen=True)
class Page:
    """One page of a PDF (the renderer wraps long lines but never breaks a page on its own)."""

    lines: list[Line]


@dataclass(frozen=True)
class Table:
    """A table in a word-processor document: rows of cell texts, the first row a header."""

    rows: list[list[str]]
    key: str | None = None


@dataclass(frozen=True)
class Sheet:
    """One worksheet. ``rows`` hold values or formulas (strings starting with ``=``); ``cached``
    gives the value a formula cell shows, by A1 reference (``{"B6": 1885.25}``). ``keys`` maps a key
    to the A1 range it marks (``{"oct-total": "A6:B6"}``); the locator is ``Sheet!A6:B6``."""

    name: str
    rows: list[list[Any]]
    cached: dict[str, Any] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    widths: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Slide:
    """One slide: a title, bullet lines and speaker notes (lines may carry keys)."""

    title: str
    bullets: list[Line] = field(default_factory=list)
    notes: list[Line] = field(default_factory=list)
    key: str | None = None


@dataclass(frozen=True)
class Exif:
    """What a camera writes: capture time, GPS (decimal degrees), make and model."""

    time: datetime | None = None
    lat: float | None = None
    lon: float | None = None
    make: str | None = None
    model: str | None = None


@dataclass(frozen=True)
class Utterance:
    """One spoken sentence (espeak-ng) followed by ``pause`` seconds of silence."""

    text: str
    key: str | None = None
    pause: float = 0.4


@dataclass(frozen=True)
class Scene:
    """``seconds`` of video showing ``lines`` as on-screen text, with optional narration ``speech``."""

    lines: list[Line]
    seconds: float = 3.0
    speech: str | None = None
    key: str | None = None
    background: str = "#20303c"
