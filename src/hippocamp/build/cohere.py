"""Coherence checks of an anonymized profile (HippoCamp appendix A.3), each violation with the files to fix.

- **time**: a date inside a file (mail sent, event start, photo taken, document created) later than the
  file's last modification by more than a day, or before 1990 / in the future; dates across files are
  compared through the files' own times, which the build never changes.
- **identity**: one pseudonym per entity and one entity per pseudonym (no collision), and no pseudonym
  that is also a name found in the source (it would merge two people).
- **identity** also: a question whose evidence is an image, a recording or a video that still shows or
  says an identifier its rewritten texts no longer do (pixels and speech are not rewritten).
- **references**: a question citing a file that is not released; a file name that an output's text
  mentions which existed in the source but is not in the release under that name (removed, or renamed
  without the mention following).

Every violation lists the minimal set of files whose repair or removal resolves it.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocamp.build.anonymize import Anonymizer

__all__ = ["Violation", "check", "report"]

DAY = 86_400.0
EARLIEST = 631_152_000.0  # 1990-01-01


@dataclass(frozen=True)
class Violation:
    check: str
    message: str
    files: list[str] = field(default_factory=list)


def check(
    tree: Path,
    released: Mapping[str, str],
    inner_dates: Mapping[str, list[float]],
    mtimes: Mapping[str, float],
    anonymizer: Anonymizer,
    questions: list[dict[str, Any]] | None,
    removed: Mapping[str, str],
    mentions: Mapping[str, list[str]] | None = None,
    media: Mapping[str, list[str]] | None = None,
    original_questions: list[dict[str, Any]] | None = None,
) -> list[Violation]:
    """All violations; ``released`` maps source paths to released paths, ``removed`` source paths to why."""
    out: list[Violation] = []
    now = time.time()
    for src, new in sorted(released.items()):
        for d in inner_dates.get(src, []):
            if d < EARLIEST or d > now + DAY:
                out.append(Violation("time", f"a date inside the file is implausible ({_day(d)})", [new]))
            elif d > mtimes.get(src, now) + DAY:
                out.append(Violation("time", f"dated {_day(d)}, after the file was last modified "
                                             f"({_day(mtimes[src])})", [new]))  # fmt: skip

    table = anonymizer.pseudonyms.table
    for kind, mapping in table.items():
        if kind in ("initial",):
            continue
        inverse: dict[str, list[str]] = defaultdict(list)
        for original, new in mapping.items():
            inverse[new.lower()].append(original)
        for originals in inverse.values():
            if len(originals) > 1:
                out.append(Violation("identity", f"{kind}: {len(originals)} entities share one pseudonym", []))
    names = set(anonymizer.name_tokens)
    for new in table.get("name", {}).values():
        if new.lower() in names:
            out.append(Violation("identity", "a pseudonym is also a name in the source", []))

    released_paths = set(released.values())
    for record in questions or []:
        cited = set(record.get("file_path") or []) | {
            e.get("file_path") for e in record.get("evidence") or [] if isinstance(e, dict) and e.get("file_path")
        }
        missing = sorted(p for p in cited if p and p not in released_paths)
        if missing:
            out.append(Violation("references", f"question {record.get('id')} cites files that are not released",
                                 missing))  # fmt: skip

    # a question whose evidence is in pixels or speech that still say an identifier the texts no longer say
    if media and questions and original_questions:
        back = {new: src for src, new in released.items()}
        for old, new_record in zip(original_questions, questions, strict=False):
            said = " ".join(_texts(old)).lower()
            says = " ".join(_texts(new_record)).lower()
            for path in {
                str(e.get("file_path") or "") for e in new_record.get("evidence") or [] if isinstance(e, dict)
            }:
                stale = sorted({t for t in media.get(back.get(path, ""), []) if t.lower() in said
                                and t.lower() not in says})  # fmt: skip
                if stale:
                    out.append(Violation("identity", f"question {new_record.get('id')}: its evidence in {path} "
                                         f"still shows or says {', '.join(stale)}, which the texts no longer do "
                                         "(re-record or remove the file, or drop the question)", [path]))  # fmt: skip

    if mentions:
        source_names = {p.rsplit("/", 1)[-1].lower() for p in [*released, *removed]}
        released_names = {p.rsplit("/", 1)[-1].lower() for p in released_paths}
        for new, named in sorted(mentions.items()):
            broken = sorted({m for m in named if m.lower() in source_names and m.lower() not in released_names})
            if broken:
                out.append(Violation("references", f"mentions {', '.join(broken)}, which the release does not "
                                                   "hold under that name", [new]))  # fmt: skip
    return out


def _texts(record: dict[str, Any]) -> list[str]:
    out = [str(record.get("question") or ""), str(record.get("answer") or "")]
    out += [str(e.get("evidence_text") or "") for e in record.get("evidence") or [] if isinstance(e, dict)]
    return out


def _day(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def report(violations: list[Violation]) -> str:
    lines = ["# Coherence", "", f"{len(violations)} violations.", ""]
    for v in violations:
        files = ", ".join(f"`{f}`" for f in v.files)
        lines.append(f"- {v.check}: {v.message}" + (f" — {files}" if files else ""))
    return "\n".join(lines) + "\n"
