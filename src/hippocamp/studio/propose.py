"""Question proposals from bounded metadata (HippoCamp appendix B: bounded model assistance).

A model sees only what `bounded_view` builds: the profile's file paths with their modification dates, the
folders with how many files each holds, and a few seed questions (question text only). It never sees a
file's content, and the paths pass through `redact_identifiers` first: e-mail addresses, phone numbers and
long digit runs are masked. What it returns are suggestions: the studio shows them and a person who takes
one edits every field before saving it as their own draft.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["Proposal", "bounded_view", "propose", "redact_identifiers"]

MAX_FILES = 300

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
_PHONE = re.compile(r"\+?\d[\d ()-]{7,}\d")
_DIGITS = re.compile(r"\d{6,}")


@dataclass(frozen=True)
class Proposal:
    question: str
    files: tuple[str, ...]
    family: str = "factual_retention"


def redact_identifiers(text: str) -> str:
    """E-mail addresses, phone-like numbers and long digit runs masked."""
    return _DIGITS.sub("<digits>", _PHONE.sub("<phone>", _EMAIL.sub("<email>", text)))


def bounded_view(root: Path, seeds: Sequence[str], max_files: int = MAX_FILES) -> str:
    """The only text the proposing model sees (paths, dates, folder counts, seed questions)."""
    files = sorted(p for p in Path(root).rglob("*") if p.is_file())
    folders = Counter(p.parent.relative_to(root).as_posix() for p in files)
    lines = ["Folders (files in each):"]
    lines += [f"- {redact_identifiers(f or '.')} ({n})" for f, n in sorted(folders.items())]
    lines.append(f"Files (path, last modified), {min(len(files), max_files)} of {len(files)}:")
    for p in files[:max_files]:
        day = datetime.fromtimestamp(p.stat().st_mtime, UTC).date().isoformat()
        lines.append(f"- {redact_identifiers(p.relative_to(root).as_posix())} ({day})")
    if seeds:
        lines.append("Example questions written for this profile:")
        lines += [f"- {redact_identifiers(s)}" for s in seeds[:5]]
    return "\n".join(lines)


_PROMPT = (
    "You help people write benchmark questions about one person's computer. You see only file paths, "
    "dates and folder names, never file contents. Propose {n} questions the files could answer, each needing "
    "one to three files, varied in folders and file types. Answer with JSON only: a list of objects "
    '{{"question": "...", "files": ["path", ...], "family": "factual_retention" or "profiling"}}.\n\n{view}'
)


async def propose(model: Any, root: Path, seeds: Sequence[str], n: int = 5) -> tuple[list[Proposal], str]:
    """Up to ``n`` proposals and a note (empty, or why there are none); never raises for a model's answer."""
    view = bounded_view(root, seeds)
    try:
        gen = await model.generate([{"role": "user", "content": _PROMPT.format(n=n, view=view)}], max_tokens=800)
    except Exception as exc:  # an outage: no proposals, said plainly
        return [], f"the model could not be reached: {type(exc).__name__}: {exc}"
    text = str(getattr(gen, "text", "") or "")
    start, end = text.find("["), text.rfind("]")
    try:
        raw = json.loads(text[start : end + 1]) if start >= 0 and end > start else []
    except ValueError:
        return [], "the model's answer was not a JSON list"
    known = {p.relative_to(root).as_posix() for p in Path(root).rglob("*") if p.is_file()}
    out = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict) or not str(item.get("question") or "").strip():
            continue
        files = tuple(f for f in item.get("files") or [] if isinstance(f, str) and f in known)
        family = "profiling" if item.get("family") == "profiling" else "factual_retention"
        out.append(Proposal(str(item["question"]).strip()[:500], files, family))
    return out[:n], "" if out else "the model proposed nothing usable"
