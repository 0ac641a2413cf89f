"""What the build does to one file, run behind perception's wall (`perceive.wall.ReaderPool`).

Each function here has the shape of a reader (``fn(root, rel, options)``) so the pool runs it in a worker
process under a memory limit and a deadline; a file that hangs, blows up or crashes its worker comes back
as a failed `FileResult` with the limit it hit, and the build records it and goes on.

- `extract_one` (pass 1): every string of the file (`rewrite.texts_of`, metadata included), the
  identifiers the `Detector` finds in them and in the file's path, and the dates inside the file (mail
  ``Date``, calendar starts, photo capture time, document properties). Cached by content hash in
  ``work/extract/``, so a re-run reads only new or changed files.
- `rewrite_one` (pass 2): the file rewritten in its own format with the frozen `Anonymizer`'s edits and
  its metadata scrubbed, under its new path, then scanned again: any original identifier still in the
  output's strings is a *residual* the review shows.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hippocamp.schema.filetypes import modality_of

__all__ = ["Extracted", "Rewritten", "extract_one", "rewrite_one"]

MAX_TEXT = 2_000_000  # characters of one file's strings looked at
MAX_CONTENT = 1_000_000  # characters of a file's text kept for near-duplicate detection
MAX_EXAMPLES = 300  # replacements of one file shown in context in the review
CONTEXT = 40  # characters of context either side
_MENTION = re.compile(
    r"(?<![\w/])[\w][\w ()'&-]{0,80}\.(?:pdf|docx?|xlsx?|pptx?|csv|txt|md|jpe?g|png|heic|mp3|m4a|wav|mp4|mov|ics|eml)"
    r"(?![\w])",
    re.I,
)


@dataclass
class Extracted:
    path: str
    reason: str | None = None
    status: str = "ok"
    units: list[tuple[str, str]] = field(default_factory=list)
    findings: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, text, source)
    dates: list[float] = field(default_factory=list)
    #: the file's text as hippocamp's reader gives it (numbers included): what near duplicates compare
    content: str = ""
    #: identifiers in what cannot be rewritten (text in pixels, speech): (where, kind, text)
    media: list[tuple[str, str, str]] = field(default_factory=list)


@dataclass
class Rewritten:
    path: str
    reason: str | None = None
    status: str = "ok"
    new_path: str = ""
    edits: int = 0
    changed: list[str] = field(default_factory=list)
    scrubbed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    residual: list[tuple[str, str]] = field(default_factory=list)  # (where, original identifier)
    #: replacements in context: (text before, original, pseudonym, text after)
    examples: list[tuple[str, str, str, str]] = field(default_factory=list)
    mentions: list[str] = field(default_factory=list)  # file names the output's text mentions


def _stamp(value: Any) -> float | None:
    try:
        if isinstance(value, datetime):
            return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
        if hasattr(value, "year") and hasattr(value, "month"):
            return datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp()
    except (OverflowError, ValueError, OSError):
        return None
    return None


def dates_in(path: Path) -> list[float]:
    """Dates recorded inside a file (epoch seconds): what the screen and the coherence checks compare."""
    ext = path.suffix.lower()
    out: list[float | None] = []
    try:
        if ext == ".eml":
            import email

            with path.open("rb") as fh:
                msg = email.message_from_binary_file(fh)
            if msg["Date"]:
                out.append(email.utils.parsedate_to_datetime(str(msg["Date"])).timestamp())
        elif ext == ".ics":
            import icalendar

            cal = icalendar.Calendar.from_ical(path.read_bytes())
            for comp in list(cal.walk("VEVENT"))[:5000]:
                if comp.get("DTSTART") is not None:
                    out.append(_stamp(comp.decoded("DTSTART")))
        elif ext in (".jpg", ".jpeg", ".tif", ".tiff", ".png", ".webp"):
            from PIL import Image

            with Image.open(path) as im:
                exif = im.getexif().get_ifd(0x8769)
                raw = exif.get(36867) or im.getexif().get(306)
            if raw:
                out.append(
                    datetime.strptime(str(raw).strip("\x00 "), "%Y:%m:%d %H:%M:%S").replace(tzinfo=UTC).timestamp()
                )
        elif ext in (".docx", ".xlsx", ".pptx"):
            import zipfile

            from lxml import etree  # type: ignore[import-untyped]

            with zipfile.ZipFile(path) as zf, zf.open("docProps/core.xml") as fh:
                if zf.getinfo("docProps/core.xml").file_size < 1_000_000:
                    root = etree.fromstring(fh.read(), etree.XMLParser(resolve_entities=False, no_network=True))
                    for el in root:
                        if etree.QName(el).localname in ("created", "modified") and el.text:
                            out.append(datetime.fromisoformat(el.text.strip().replace("Z", "+00:00")).timestamp())
        elif ext == ".pdf":
            from pypdf import PdfReader

            info = PdfReader(str(path)).metadata
            if info is not None and info.creation_date is not None:
                out.append(_stamp(info.creation_date))
    except Exception:  # a date is a bonus: a file whose dates cannot be read still has its file time
        return []
    return [d for d in out if d is not None]


_MEDIA = ("image", "audio", "video")


def _media_findings(root: Path, rel: str, options: Any, detector: Any) -> list[tuple[str, str, str]]:
    """Identifiers in the text of pixels (OCR) and speech (ASR) of an image, a recording or a video: the build
    cannot rewrite them, so the review lists them for the contributor."""
    from hippocamp.perceive.run import perceive_file

    result = perceive_file(root, rel, options, hash_file=False)
    out: list[tuple[str, str, str]] = []
    for seg in result.segments:
        where = json.dumps(seg.locator.model_dump(mode="json")) if seg.locator is not None else "content"
        out += [(where, f.kind, f.text) for f in detector.find(seg.text)]
    return out[:500]


def _content(root: Path, rel: str, options: Any) -> str:
    from hippocamp.perceive.run import perceive_file

    result = perceive_file(root, rel, options, hash_file=False)
    text = "\n".join(seg.text for seg in result.segments)
    return text[:MAX_CONTENT]


def extract_one(root: Path, rel: str, options: Any, *, cache: str, sha256: str, media: bool = False) -> Extracted:
    from hippocamp.build.pii import Detector
    from hippocamp.build.rewrite import texts_of

    cached = Path(cache) / f"{sha256}.json"
    if cached.is_file():
        try:
            data = json.loads(cached.read_text(encoding="utf-8"))
            units = [(str(w), str(t)) for w, t in data["units"]]
            found = [(str(k), str(t), str(s)) for k, t, s in data["findings"]]
            seen = [(str(w), str(k), str(t)) for w, k, t in data.get("media", [])]
            if (not media or "media" in data) and "content" in data:
                return Extracted(rel, units=units, findings=found, dates=[float(d) for d in data["dates"]],
                                 media=seen, content=str(data["content"]))  # fmt: skip
        except (OSError, ValueError, KeyError):
            pass
    path = root / rel
    try:
        units = [(u.where, u.text) for u in texts_of(path)]
    except Exception as exc:
        return Extracted(rel, reason=f"could not be read: {type(exc).__name__}: {exc}", status="failed")
    detector = Detector()
    findings: list[tuple[str, str, str]] = []
    budget = MAX_TEXT
    for _, text in [("path", rel.replace("_", " ").replace("/", " / ")), *units]:
        if budget <= 0:
            break
        budget -= len(text)
        findings += [(f.kind, f.text, f.source) for f in detector.find(text[:MAX_TEXT])]
    result = Extracted(rel, units=units, findings=findings, dates=dates_in(path))
    if modality_of(rel) not in _MEDIA:
        result.content = _content(root, rel, options)
    payload: dict[str, Any] = {"units": units, "findings": findings, "dates": result.dates, "content": result.content}
    if media:  # recorded for every file, so a cached extraction says whether media were looked at
        found_media = _media_findings(root, rel, options, detector) if modality_of(rel) in _MEDIA else []
        result.media = payload["media"] = found_media
    tmp = cached.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(payload), encoding="utf-8")
    os.replace(tmp, cached)
    return result


_STATE: dict[str, Any] = {}


def _anonymizer(state_path: str) -> Any:
    from hippocamp.build.anonymize import Anonymizer

    stamp = os.stat(state_path).st_mtime_ns
    if _STATE.get("key") != (state_path, stamp):
        _STATE["key"] = (state_path, stamp)
        _STATE["anonymizer"] = Anonymizer.load(Path(state_path))
        _STATE["originals"] = _STATE["anonymizer"].originals()
    return _STATE["anonymizer"]


def rewrite_one(root: Path, rel: str, options: Any, *, out: str, state: str, new_path: str) -> Rewritten:
    from hippocamp.build.rewrite import RewriteError, rewrite_file, texts_of

    anonymizer = _anonymizer(state)
    dst = Path(out) / new_path
    dst.parent.mkdir(parents=True, exist_ok=True)
    contexts: list[tuple[str, str, str, str]] = []

    def editor(text: str) -> list[Any]:
        edits = anonymizer.edits(text)
        for e in edits:
            if len(contexts) >= MAX_EXAMPLES:
                break
            left, right = text[max(0, e.start - CONTEXT) : e.start], text[e.end : e.end + CONTEXT]
            contexts.append((left, text[e.start : e.end], e.new, right))
        return edits

    try:
        result = rewrite_file(root / rel, dst, editor)
    except RewriteError as exc:
        dst.unlink(missing_ok=True)
        return Rewritten(rel, reason=str(exc), status="failed")
    except Exception as exc:
        dst.unlink(missing_ok=True)
        return Rewritten(rel, reason=f"could not be rewritten: {type(exc).__name__}: {exc}", status="failed")
    residual: list[tuple[str, str]] = []
    mentions: set[str] = set()
    originals: list[str] = _STATE["originals"]
    try:
        for unit in texts_of(dst):
            low = unit.text.lower()
            residual += [(unit.where, o) for o in originals if o in low and _whole(low, o)]
            if len(mentions) < 500:
                mentions.update(m.group(0).strip() for m in _MENTION.finditer(unit.text))
    except Exception as exc:
        residual.append(("file", f"output could not be read back: {type(exc).__name__}"))
    examples = contexts
    return Rewritten(rel, new_path=new_path, edits=result.edits, changed=list(result.changed),
                     scrubbed=list(result.scrubbed), notes=list(result.notes), residual=residual[:200],
                     examples=examples, mentions=sorted(mentions))  # fmt: skip


def _whole(text: str, word: str) -> bool:
    """``word`` occurs in ``text`` not inside a longer word."""
    start = 0
    while (i := text.find(word, start)) >= 0:
        before = text[i - 1] if i else " "
        after = text[i + len(word)] if i + len(word) < len(text) else " "
        if not before.isalpha() and not after.isalpha():
            return True
        start = i + 1
    return False
