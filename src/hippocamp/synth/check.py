"""Brute-force check of a generated profile: is every gold fact really readable at its locator?

For each record, the cited locators are read back independently of the generator: text files by
slicing the raw lines, everything else through ``hippocamp.perceive`` (PDF pages, DOCX paragraphs,
cell ranges, slides, OCR word boxes overlapping an image region, transcript segments overlapping a
time range). A record passes when each of its facts (from ``<Name>.synth``) occurs in the text read
at its locators, compared loosely (case, punctuation, spacing and thousands separators ignored) so
OCR and speech recognition may differ in form but not in content.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from hippocamp.dataset.profile import load_profile
from hippocamp.perceive.base import PerceiveOptions
from hippocamp.schema.locators import LineLocator, Locator, overlaps, parse_locator
from hippocamp.schema.segment import Segment

__all__ = ["CheckReport", "RecordCheck", "check_profile", "loose"]

_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9",
}  # fmt: skip
# a spoken digit, whatever punctuation speech recognition put beside it ("level two." is "level 2")
_NUMBER_WORD = re.compile(r"\b(?:" + "|".join(_NUMBER_WORDS) + r")\b")


def loose(text: str) -> str:
    """Lower case, digits joined across thousands separators, punctuation and spaces dropped."""
    text = text.lower()
    text = re.sub(r"(?<=\d)[,.](?=\d{3}\b)", "", text)
    text = _NUMBER_WORD.sub(lambda m: _NUMBER_WORDS[m.group(0)], text)
    return re.sub(r"[^a-z0-9.]+", "", text).replace(".", "")


@dataclass
class RecordCheck:
    id: str
    ok: bool
    missing: list[str] = field(default_factory=list)
    read: dict[str, str] = field(default_factory=dict)  # file path -> text read at its locators


@dataclass
class CheckReport:
    records: list[RecordCheck]

    @property
    def failed(self) -> list[RecordCheck]:
        return [r for r in self.records if not r.ok]


def _raw_lines(path: Path, loc: LineLocator) -> str:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    first = loc.line or 1
    return "\n".join(lines[first - 1 : (loc.line_end or first)])


def check_profile(folder: str | Path, options: PerceiveOptions | None = None) -> CheckReport:
    """Read every cited locator of a generated profile and check its facts (see the module doc)."""
    from hippocamp.perceive.run import perceive_file

    folder = Path(folder)
    profile = load_profile(folder)
    if profile.root is None or profile.records_file is None:
        raise ValueError(f"{folder}: not a generated profile (no file tree or records)")
    manifests = sorted(folder.glob("*.synth"))
    if not manifests:
        raise ValueError(f"{folder}: no .synth manifest; is this a generated profile?")
    facts = {q["id"]: q["facts"] for q in json.loads(manifests[0].read_text(encoding="utf-8"))["questions"]}
    options = options or PerceiveOptions(frame_interval=1.0)
    segments: dict[str, list[Segment]] = {}
    out: list[RecordCheck] = []
    for rec in profile.records:
        read: dict[str, str] = {}
        for ev in rec.evidence:
            path = profile.root / ev.file_path
            texts = []
            for loc in ev.locators:
                loc = parse_locator(loc.dump()) if not isinstance(loc, Locator) else loc
                if isinstance(loc, LineLocator) and loc.unit == "line":
                    texts.append(_raw_lines(path, loc))
                    continue
                if ev.file_path not in segments:
                    segments[ev.file_path] = perceive_file(
                        profile.root, ev.file_path, options, hash_file=False
                    ).segments
                texts += [s.text for s in segments[ev.file_path] if s.locator is not None and overlaps(loc, s.locator)]
            read[ev.file_path] = (read.get(ev.file_path, "") + "\n" + "\n".join(texts)).strip()
        haystack = loose(" ".join(read.values()))
        missing = [f for f in facts.get(rec.id, []) if loose(f) not in haystack]
        out.append(RecordCheck(rec.id, not missing, missing, read))
    return CheckReport(out)
