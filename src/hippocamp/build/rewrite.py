"""Rewriting one file in its own format: every string through an editor, identifying metadata scrubbed.

An `Editor` maps a string to the `Edit`s to make in it (the PII module decides them). `rewrite_file`
reads a file, hands each of its strings to the editor, writes the edited file in the same format to
another path, and removes the metadata that identifies a person or a device; `texts_of` lists every
string the rewriter would hand to the editor, the metadata it would scrub included (the PII module
learns from them before rewriting and scans the output with them afterwards).

Formats, chosen by the lower-case extension:

* text (``.txt .md .csv .log .html .xml .yaml .tex .rtf ...``): decoded (the encoding and the newlines
  are kept), edited line by line; ``.jsonl`` lines that hold JSON are edited as JSON.
* ``.json``: every string value and key (``where`` is a JSON path); written back indented or compact as
  the source was. A file that does not parse is edited as text.
* ``.ics``/``.vcf``: text properties, ORGANIZER/ATTENDEE values and their CN parameters, UID; GEO and
  Apple's structured locations are removed; dates, times and rules are kept as they are.
* ``.eml``/``.mbox``: every header but dates and MIME structure (RFC 2047 words decoded, re-encoded when
  they were; Message-ID and References too, they carry addresses), text bodies in their own charset and
  transfer encoding, attachment names, and attachments by their own format, `MAX_DEPTH` levels deep;
  routing and device headers (``Received``, ``X-Mailer``, ``X-Originating-IP``, ``User-Agent``,
  ``X-Apple-*``, DKIM/ARC...) are removed. ``Date`` is kept.
* images: EXIF is rebuilt from an allow-list (GPS, make, model, serial numbers, owner, artist, copyright,
  software, maker notes go; times taken, orientation and exposure stay; the description is edited);
  XMP, IPTC and other vendor segments go. JPEG, PNG and WebP are edited at the container level (segments,
  chunks): the compressed pixels are copied byte for byte, never re-encoded. TIFF is re-saved by Pillow
  with the same (lossless) compression. GIF, BMP and HEIC are copied as they are, with a note.
* Office (``.docx .xlsx .pptx``): `hippocamp.build.rewrite_office`. PDF: `hippocamp.build.rewrite_pdf`.
* anything else (audio, video, archives...) is copied byte for byte, with a note.

A corrupt file raises `RewriteError` naming the file and the part (an attachment that cannot be rewritten
fails its message: nothing is kept un-anonymized); an editor returning edits that do not fit its string
raises `EditError`, and an exception of the editor itself passes through unchanged (bugs of the caller,
not of the file). Formats register by extension in `_HANDLERS`; `RewriteJob` is what a handler works with.
"""

from __future__ import annotations

import base64
import codecs
import dataclasses
import email
import email.errors
import email.generator
import email.header
import email.policy
import email.quoprimime
import email.utils
import io
import json
import os
import re
import shutil
import struct
import unicodedata
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import Any

__all__ = [
    "Edit",
    "EditError",
    "Editor",
    "RewriteError",
    "RewriteJob",
    "RewriteResult",
    "TextUnit",
    "apply_edits",
    "check_edits",
    "rewrite_file",
    "spread",
    "texts_of",
]

#: attachments inside attachments are rewritten this many levels deep; deeper ones fail the file
MAX_DEPTH = 3


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` with ``new``."""

    start: int
    end: int
    new: str


#: given a string, the edits to make in it (sorted, not overlapping); [] leaves it unchanged
Editor = Callable[[str], list[Edit]]


@dataclass(frozen=True)
class TextUnit:
    """One string of a file and where it is ("paragraph 3", "sheet Budget!B4", "EXIF Artist", "line 12")."""

    where: str
    text: str


@dataclass(frozen=True)
class RewriteResult:
    """What a rewrite did: edits applied, units changed, metadata removed, and what it could not do."""

    edits: int
    changed: tuple[str, ...]
    scrubbed: tuple[str, ...]
    notes: tuple[str, ...]


class RewriteError(Exception):
    """A file that cannot be rewritten (corrupt, encrypted, too big): the message names the file and the part."""


class EditError(ValueError):
    """An editor returned edits that do not fit its string (unsorted, overlapping or out of range)."""


class _EditorFailed(Exception):
    """Carries an exception raised by the editor itself past the handlers (re-raised as it was)."""


def check_edits(text: str, edits: Sequence[Edit]) -> None:
    """Raise `EditError` unless ``edits`` are sorted, do not overlap and lie inside ``text``."""
    pos = 0
    for e in edits:
        if not (pos <= e.start <= e.end <= len(text)):
            raise EditError(f"edit {e.start}:{e.end} does not fit (string of {len(text)}, previous edit ends at {pos})")
        pos = e.end


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """``text`` with ``edits`` made."""
    check_edits(text, edits)
    out, pos = [], 0
    for e in edits:
        out += [text[pos : e.start], e.new]
        pos = e.end
    out.append(text[pos:])
    return "".join(out)


def spread(pieces: Sequence[str], edits: Sequence[Edit], fixed: Sequence[bool] = ()) -> list[str] | None:
    """The new text of each piece of a string cut into pieces (runs of a paragraph, strings of a PDF text
    object), after ``edits`` made on the whole string.

    A character that no edit touches stays in its piece. An edit's new text goes into the piece holding
    its first character; when that piece is ``fixed`` (a tab, a line break, a gap: it can lose characters
    but not take new ones) into the next editable piece the edit covers, else the previous editable one,
    else the next one. Characters an edit removes are taken out of every piece they were in. None when
    an edit has new text and no editable piece to put it in.
    """
    fixed = list(fixed) or [False] * len(pieces)
    starts, pos = [], 0
    for p in pieces:
        starts.append(pos)
        pos += len(p)
    total = pos
    out: list[list[str]] = [[] for _ in pieces]

    def copy(a: int, b: int) -> None:
        for i, p in enumerate(pieces):
            s = starts[i]
            lo, hi = max(a, s), min(b, s + len(p))
            if lo < hi:
                out[i].append(p[lo - s : hi - s])

    def owner(start: int, end: int) -> int | None:
        holder = next((i for i, p in enumerate(pieces) if starts[i] <= start < starts[i] + len(p)), None)
        if holder is None:  # at the very end, or the string is empty
            holder = len(pieces) - 1 if start >= total else 0
        if not pieces or (0 <= holder < len(pieces) and not fixed[holder]):
            return holder if pieces else None
        ahead = [i for i in range(holder, len(pieces)) if starts[i] < max(end, start + 1) and not fixed[i]]
        behind = [i for i in range(holder - 1, -1, -1) if not fixed[i]]
        later = [i for i in range(holder, len(pieces)) if not fixed[i]]
        for choice in (ahead, behind, later):
            if choice:
                return choice[0]
        return None

    pos = 0
    for e in edits:
        copy(pos, e.start)
        if e.new:
            i = owner(e.start, e.end)
            if i is None:
                return None
            out[i].append(e.new)
        pos = e.end
    copy(pos, total)
    return ["".join(parts) for parts in out]


@dataclass
class _Tally:
    units: list[TextUnit] = field(default_factory=list)
    edits: int = 0
    changed: list[str] = field(default_factory=list)
    scrubbed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class RewriteJob:
    """One file being rewritten: hands strings to the editor and records what happened.

    Handlers of every format share it (`hippocamp.build.rewrite_office`, `hippocamp.build.rewrite_pdf`).
    ``dry`` is set when only the strings are wanted (`texts_of`): a handler may then skip writing.
    A nested file (an attachment, an image inside a presentation) gets a child job whose ``prefix`` is
    put before every ``where`` it records.
    """

    editor: Editor
    name: str
    ext: str = ""
    dry: bool = False
    depth: int = 0
    prefix: str = ""
    tally: _Tally = field(default_factory=_Tally)

    def ask(self, where: str, text: str) -> list[Edit]:
        """The editor's edits for ``text`` (recorded as a unit of the file); [] for blank text."""
        if not text or not text.strip():
            return []
        self.tally.units.append(TextUnit(self.prefix + where, text))
        try:
            edits = list(self.editor(text))
        except Exception as exc:
            raise _EditorFailed() from exc
        check_edits(text, edits)
        return edits

    def done(self, where: str, edits: int, changed: bool) -> None:
        """Count ``edits`` made in the unit at ``where``."""
        self.tally.edits += edits
        label = self.prefix + where
        if changed and label not in self.tally.changed:
            self.tally.changed.append(label)

    def edit(self, where: str, text: str, fit: Callable[[str], str] | None = None) -> str:
        """``text`` through the editor; ``fit`` adapts new text to what the format can hold."""
        edits = self.ask(where, text)
        if not edits:
            return text
        if fit is not None:
            fitted = [Edit(e.start, e.end, fit(e.new)) for e in edits]
            if fitted != edits:
                self.note(f"{where}: characters the file's encoding cannot hold were replaced")
            edits = fitted
        new = apply_edits(text, edits)
        self.done(where, len(edits), new != text)
        return new

    def edit_pieces(self, where: str, pieces: Sequence[str], fixed: Sequence[bool] = ()) -> list[str]:
        """The pieces of one string (runs of a paragraph) after the editor saw them joined (see `spread`)."""
        text = "".join(pieces)
        edits = self.ask(where, text)
        if not edits:
            return list(pieces)
        new = spread(pieces, edits, fixed)
        if new is None:
            self.note(f"{where}: an edit could not be placed in the text; left as is")
            return list(pieces)
        self.done(where, len(edits), new != list(pieces))
        return new

    def scrub(self, what: str, value: object = None) -> None:
        """Record that the metadata field ``what`` was removed (its text, if any, is a unit of the file)."""
        label = self.prefix + what
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if isinstance(value, str) and value.strip():
            self.tally.units.append(TextUnit(label, value))
        if label not in self.tally.scrubbed:
            self.tally.scrubbed.append(label)

    def note(self, message: str) -> None:
        message = self.prefix + message
        if message not in self.tally.notes:
            self.tally.notes.append(message)

    def fail(self, message: str) -> RewriteError:
        return RewriteError(f"{self.name}: {self.prefix}{message}")

    def nested(self, name: str, data: bytes, label: str) -> bytes:
        """An embedded file (``name`` gives its format) rewritten by its own handler; ``label`` prefixes
        its units ("attachment 2 (notes.docx): ")."""
        if self.depth >= MAX_DEPTH:
            raise self.fail(f"{label}: nested more than {MAX_DEPTH} levels deep")
        ext = _ext(name)
        child = dataclasses.replace(self, ext=ext, depth=self.depth + 1, prefix=f"{self.prefix}{label}: ")
        handler = _handler(ext)
        if handler is None:
            child.note(_copied(ext))
            return data
        return handler(data, child)

    def result(self) -> RewriteResult:
        t = self.tally
        return RewriteResult(t.edits, tuple(t.changed), tuple(t.scrubbed), tuple(t.notes))


Handler = Callable[[bytes, RewriteJob], bytes]


def _ext(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[-1].lower() if "." in base else ""


def _run(handler: Handler, data: bytes, job: RewriteJob) -> bytes:
    try:
        return handler(data, job)
    except (RewriteError, EditError):
        raise
    except _EditorFailed as exc:
        raise exc.__cause__ from None  # type: ignore[misc]
    except MemoryError:
        raise job.fail("out of memory while rewriting") from None
    except RecursionError:
        raise job.fail("nested too deeply to rewrite") from None
    except Exception as exc:  # a library choking on a damaged file: the caller records it and goes on
        raise job.fail(f"cannot be rewritten: {type(exc).__name__}: {exc}") from None


def texts_of(path: Path) -> list[TextUnit]:
    """Every string `rewrite_file` would hand to the editor, and the metadata it would remove, in order."""
    path = Path(path)
    handler = _handler(_ext(path.name))
    if handler is None:
        return []
    job = RewriteJob(lambda text: [], path.name, _ext(path.name), dry=True)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RewriteError(f"{path.name}: cannot read: {exc.strerror or exc}") from None
    _run(handler, data, job)
    return list(dict.fromkeys(job.tally.units))


def rewrite_file(src: Path, dst: Path, editor: Editor) -> RewriteResult:
    """Write ``src`` rewritten through ``editor`` to ``dst`` (same format; ``src`` is never changed)."""
    src, dst = Path(src), Path(dst)
    if dst.exists() and os.path.samefile(src, dst):
        raise ValueError(f"{src.name}: the output would overwrite the source")
    ext = _ext(src.name)
    handler = _handler(ext)
    job = RewriteJob(editor, src.name, ext)
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    try:
        if handler is None:
            shutil.copyfile(src, tmp)
            job.note(_copied(ext))
        else:
            try:
                data = src.read_bytes()
            except OSError as exc:
                raise RewriteError(f"{src.name}: cannot read: {exc.strerror or exc}") from None
            tmp.write_bytes(_run(handler, data, job))
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)
    return job.result()


# -- text -------------------------------------------------------------------------------------------------
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_LINES = re.compile(r"(\r\n|\r|\n)")


@dataclass(frozen=True)
class _Decoded:
    text: str
    codec: str
    bom: bytes

    def encode(self, text: str) -> bytes:
        return self.bom + text.encode(self.codec, "surrogateescape")

    def fitter(self, markup: bool = False) -> Callable[[str], str]:
        """New text made to fit the file's encoding: character references in markup; else accents
        dropped where that helps (``ặ`` to ``a``), and ``?`` for what is left."""

        def fit(text: str) -> str:
            try:
                text.encode(self.codec)
                return text
            except UnicodeEncodeError:
                pass
            if not markup:
                text = "".join(c if _encodable(c, self.codec) else _base_letter(c) for c in text)
            return text.encode(self.codec, "xmlcharrefreplace" if markup else "replace").decode(self.codec)

        return fit


def _encodable(char: str, codec: str) -> bool:
    try:
        char.encode(codec)
        return True
    except UnicodeEncodeError:
        return False


def _base_letter(char: str) -> str:
    return unicodedata.normalize("NFKD", char)[:1] or char


def _decode(data: bytes, job: RewriteJob) -> _Decoded:
    """Text of a file and how to write it back byte for byte (undecodable bytes survive the round trip)."""
    from hippocamp.perceive.base import ReadError
    from hippocamp.perceive.decode import decode_text

    try:
        found = decode_text(data)
    except ReadError as exc:
        raise job.fail(str(exc)) from None
    bom = next((b for b, codec in _BOMS if codec == found.encoding and data.startswith(b)), b"")
    try:
        text = data[len(bom) :].decode(found.encoding, "surrogateescape")
    except (UnicodeDecodeError, LookupError):
        job.note(f"bytes that are not {found.encoding} were replaced")
        return _Decoded(found.text, found.encoding, bom)
    return _Decoded(text, found.encoding, bom)


def _edit_lines(text: str, job: RewriteJob, fit: Callable[[str], str] | None, line: Callable[..., str]) -> str:
    parts = _LINES.split(text)
    for i in range(0, len(parts), 2):
        parts[i] = line(f"line {i // 2 + 1}", parts[i], job, fit)
    return "".join(parts)


def _plain_line(where: str, text: str, job: RewriteJob, fit: Callable[[str], str] | None) -> str:
    return job.edit(where, text, fit)


def _rewrite_text(data: bytes, job: RewriteJob) -> bytes:
    decoded = _decode(data, job)
    markup = job.ext in ("html", "htm", "xhtml", "xml", "svg")
    if job.ext == "rtf":
        job.note("rtf edited as markup: words split by control words or escaped characters may be missed")
    new = _edit_lines(decoded.text, job, decoded.fitter(markup), _plain_line)
    return data if new == decoded.text else decoded.encode(new)


# -- JSON -------------------------------------------------------------------------------------------------
class _Pairs(list[tuple[str, Any]]):
    """A JSON object as its (key, value) pairs, in order (duplicate keys kept until written)."""


def _json_walk(value: Any, path: str, job: RewriteJob, fit: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return job.edit(f"value {path}", value, fit)
    if isinstance(value, _Pairs):
        out = _Pairs()
        for n, (key, item) in enumerate(value, 1):
            new_key = job.edit(f"key #{n} of {path}"[:200], key, fit) if isinstance(key, str) else key
            out.append((new_key, _json_walk(item, f"{path}.{new_key}", job, fit)))
        return out
    if isinstance(value, list):
        return [_json_walk(item, f"{path}[{i}]", job, fit) for i, item in enumerate(value)]
    return value


def _json_plain(value: Any, job: RewriteJob) -> Any:
    if isinstance(value, _Pairs):
        out = {k: _json_plain(v, job) for k, v in value}
        if len(out) < len(value):
            job.note("an object had two keys of the same name after editing: the last one kept")
        return out
    if isinstance(value, list):
        return [_json_plain(v, job) for v in value]
    return value


def _json_dump(value: Any, source: str, job: RewriteJob) -> str:
    indent = re.search(r"[\[{][ \t]*\r?\n([ \t]+)\S", source)
    spaced = re.search(r"\"\s*:\s", source) is not None
    seps = (",", ": ") if indent else ((", ", ": ") if spaced else (",", ":"))
    ascii_only = all(ord(c) < 128 for c in source)
    text = json.dumps(_json_plain(value, job), indent=indent.group(1) if indent else None, separators=seps,
                      ensure_ascii=ascii_only)  # fmt: skip
    newline = "\r\n" if "\r\n" in source else "\n"
    text = text.replace("\n", newline)
    return text + newline if source.rstrip(" \t") != source.rstrip() else text


def _json_line(where: str, text: str, job: RewriteJob, fit: Callable[[str], str] | None) -> str:
    if text.lstrip()[:1] in ("{", "["):
        try:
            doc = json.loads(text, object_pairs_hook=_Pairs)
        except (ValueError, RecursionError):
            doc = None
        if doc is not None:
            child = dataclasses.replace(job, prefix=f"{job.prefix}{where} ")
            before = job.tally.edits
            new = _json_walk(doc, "$", child, fit or str)
            return text if job.tally.edits == before else _json_dump(new, text, job).rstrip("\r\n")
    return job.edit(where, text, fit)


def _rewrite_jsonl(data: bytes, job: RewriteJob) -> bytes:
    decoded = _decode(data, job)
    new = _edit_lines(decoded.text, job, decoded.fitter(), _json_line)
    return data if new == decoded.text else decoded.encode(new)


def _rewrite_json(data: bytes, job: RewriteJob) -> bytes:
    decoded = _decode(data, job)
    try:
        doc = json.loads(decoded.text, object_pairs_hook=_Pairs)
    except (ValueError, RecursionError):
        job.note("not valid JSON: edited line by line as text")
        return _rewrite_text(data, job)
    before = job.tally.edits
    new = _json_walk(doc, "$", job, decoded.fitter())
    if job.tally.edits == before:
        return data
    return decoded.encode(_json_dump(new, decoded.text, job))


# -- iCalendar and vCard ----------------------------------------------------------------------------------
_PARAM = re.compile(r';([A-Za-z0-9-]+)=((?:"[^"]*"|[^";:,]*)(?:,(?:"[^"]*"|[^";:,]*))*)')
#: never edited: dates, times, rules and structure
_ICAL_KEEP = frozenset(
    "BEGIN END VERSION PRODID CALSCALE METHOD DTSTART DTEND DUE DURATION DTSTAMP CREATED LAST-MODIFIED RRULE "
    "RDATE EXDATE EXRULE RECURRENCE-ID SEQUENCE STATUS TRANSP CLASS PRIORITY TZID TZOFFSETFROM TZOFFSETTO TZNAME "
    "TZURL ACTION TRIGGER REPEAT FREEBUSY PERCENT-COMPLETE COMPLETED REV KIND X-WR-TIMEZONE "
    "X-MICROSOFT-CDO-BUSYSTATUS X-MICROSOFT-CDO-INTENDEDSTATUS X-MICROSOFT-CDO-ALLDAYEVENT".split()
)
#: removed with their values: places and pictures
_ICAL_SCRUB = frozenset("GEO X-APPLE-STRUCTURED-LOCATION X-APPLE-MAPKIT-HANDLE PHOTO LOGO SOUND KEY".split())
#: values that are addresses or identifiers, edited as they are (no text escapes)
_ICAL_RAW = frozenset("ORGANIZER ATTENDEE UID RELATED-TO URL ATTACH N ADR ORG GENDER SOURCE MEMBER IMPP".split())
#: parameters that name or address people
_ICAL_PARAMS = frozenset("CN SENT-BY DELEGATED-TO DELEGATED-FROM MEMBER EMAIL DIR ALTREP X-TITLE LABEL".split())
_UNESCAPE = re.compile(r"\\([nN,;\\])")


def _ical_unescape(value: str) -> str:
    return _UNESCAPE.sub(lambda m: "\n" if m.group(1) in "nN" else m.group(1), value)


def _ical_escape(value: str) -> str:
    return (
        value.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,").replace("\r\n", "\\n").replace("\n", "\\n")
    )


def _fold(line: str, newline: str) -> str:
    """A content line folded at 75 octets (never inside a UTF-8 character)."""
    out: list[str] = []
    current: list[str] = []
    size, limit = 0, 75
    for ch in line:
        width = len(ch.encode("utf-8", "surrogateescape"))
        if size + width > limit:
            out.append("".join(current))
            current, size, limit = [" "], 1, 75
        current.append(ch)
        size += width
    out.append("".join(current))
    return newline.join(out)


def _ical_line(line: str, job: RewriteJob, where: str, kind: str) -> str | None:
    """One unfolded content line edited (None: remove it)."""
    m = re.match(r"[A-Za-z0-9-]+", line)
    if not m:
        return line
    name, i, params = m.group(0).upper(), m.end(), []
    while i < len(line) and line[i] == ";":
        p = _PARAM.match(line, i)
        if p is None:
            return line
        params.append([p.group(1), p.group(2)])
        i = p.end()
    if i >= len(line) or line[i] != ":":
        return line
    value = line[i + 1 :]
    label = f"{where} {name}"
    if name in _ICAL_SCRUB or name.startswith("X-APPLE-STRUCTURED"):
        job.scrub(f"{kind} {name}", value if not name.startswith(("PHOTO", "LOGO", "SOUND", "KEY")) else None)
        return None
    if name in _ICAL_KEEP:
        return line
    for param in params:
        if param[0].upper() in _ICAL_PARAMS:
            quoted = param[1].startswith('"') and param[1].endswith('"') and len(param[1]) > 1
            raw = param[1][1:-1] if quoted else param[1]
            new = job.edit(f"{label} {param[0].upper()}", raw).replace('"', "'")
            if new != raw:
                param[1] = f'"{new}"' if quoted or re.search(r"[:;,]", new) else new
    upper = {p[0].upper(): p[1].upper() for p in params}
    if upper.get("VALUE") == "BINARY" or upper.get("ENCODING") in ("B", "BASE64"):
        pass
    elif upper.get("ENCODING") == "QUOTED-PRINTABLE":
        charset = upper.get("CHARSET", "UTF-8").strip('"')
        text = email.quoprimime.header_decode(value.replace("_", "=5F")).encode("latin-1").decode(charset, "replace")
        new = job.edit(label, text)
        if new != text:
            value = email.quoprimime.body_encode(new.encode(charset, "replace").decode("latin-1"), maxlinelen=10**6)
    elif name in _ICAL_RAW:
        value = job.edit(label, value)
    else:
        text = _ical_unescape(value)
        new = job.edit(label, text)
        if new != text:
            value = _ical_escape(new)
    return m.group(0) + "".join(f";{k}={v}" for k, v in params) + ":" + value


def _rewrite_ical(data: bytes, job: RewriteJob) -> bytes:
    decoded = _decode(data, job)
    kind = "vCard" if job.ext == "vcf" else "iCalendar"
    if not re.search(r"(?im)^BEGIN:V(CALENDAR|CARD|EVENT|TODO)", decoded.text):
        raise job.fail(f"not {'a vCard' if kind == 'vCard' else 'an iCalendar'} file: no BEGIN line")
    newline = "\r\n" if "\r\n" in decoded.text else "\n"
    physical = _LINES.split(decoded.text)[::2]
    logical: list[tuple[str, list[str]]] = []
    for raw in physical:
        prev = logical[-1] if logical else None
        soft_qp = prev is not None and "QUOTED-PRINTABLE" in prev[0].upper() and prev[0].endswith("=")
        if prev is not None and (raw[:1] in (" ", "\t") or soft_qp):
            joined = prev[0][:-1] + raw if soft_qp else prev[0] + raw[1:]
            logical[-1] = (joined, [*prev[1], raw])
        else:
            logical.append((raw, [raw]))
    out: list[str] = []
    event = 0
    for text, raws in logical:
        if text.upper().startswith(("BEGIN:VEVENT", "BEGIN:VTODO", "BEGIN:VJOURNAL", "BEGIN:VCARD")):
            event += 1
        where = f"{'card' if kind == 'vCard' else 'item'} {event}" if event else "calendar"
        new = _ical_line(text, job, where, kind)
        if new is None:
            continue
        out += raws if new == text else [_fold(new, newline)]
    result = newline.join(out)
    return data if result == newline.join(physical) else decoded.encode(result)


# -- mail -------------------------------------------------------------------------------------------------
#: headers removed: routes, addresses of machines, mail programs and devices
_MAIL_SCRUB = frozenset(
    "received x-received x-originating-ip x-sender-ip x-client-ip x-source-ip x-forwarded-for x-mailer "
    "user-agent x-mimeole x-newsreader dkim-signature x-google-dkim-signature authentication-results "
    "received-spf thread-index x-universally-unique-identifier x-uniform-type-identifier x-originating-client "
    "x-mail-created-date x-ms-has-attach x-ms-tnef-correlator".split()
)
_MAIL_SCRUB_PREFIXES = ("x-apple-", "x-ms-exchange-", "x-microsoft-", "x-google-", "x-gm-", "arc-", "x-icloud-",
                        "x-proofpoint-", "x-mimecast-", "x-forefront-", "x-ms-office365-")  # fmt: skip
#: headers kept as they are (dates and MIME structure; attachment names are edited separately)
_MAIL_KEEP = frozenset(
    "date resent-date mime-version content-type content-transfer-encoding content-disposition content-length "
    "importance priority x-priority content-language lines status".split()
)
_MAIL_ADDRESSES = frozenset(
    "from to cc bcc reply-to sender return-path delivered-to x-original-to resent-from resent-to resent-cc "
    "resent-sender disposition-notification-to errors-to envelope-to x-sender x-receiver".split()
)


def _header_text(value: str) -> tuple[str, bool]:
    """A raw header value decoded (RFC 2047 words), and whether it held encoded words."""
    try:
        parts = email.header.decode_header(value)
        encoded = any(charset is not None for _, charset in parts)
        return (str(email.header.make_header(parts)) if encoded else value), encoded
    except (email.errors.HeaderParseError, LookupError, UnicodeDecodeError):
        return value, False


def _encode_words(text: str, force: bool) -> str:
    if force or not text.isascii():
        return email.header.Header(text, "utf-8").encode()
    return text


def _address_header(text: str, encoded: bool) -> str:
    pairs = email.utils.getaddresses([text])
    if not pairs or all(not addr and not name for name, addr in pairs):
        return _encode_words(text, encoded)
    out = []
    for name, addr in pairs:
        if name and (encoded or not name.isascii()):
            out.append(f"{_encode_words(name, True)} <{addr}>")
        elif name:
            out.append(email.utils.formataddr((name, addr)))
        else:
            out.append(f"<{addr}>" if "<" in text else addr)
    return ", ".join(out)


def _scrubbed_header(name: str) -> bool:
    low = name.lower()
    return low in _MAIL_SCRUB or low.startswith(_MAIL_SCRUB_PREFIXES)


def _rewrite_headers(msg: Message, job: RewriteJob, where: str) -> None:
    items = msg.items()
    new_items: list[tuple[str, str]] = []
    changed = False
    for name, value in items:
        low = name.lower()
        if _scrubbed_header(name):
            job.scrub(f"mail header {name}", _header_text(str(value))[0])
            changed = True
            continue
        if low in _MAIL_KEEP or not isinstance(value, str):
            new_items.append((name, value))
            continue
        text, encoded = _header_text(value)
        flat = re.sub(r"\r?\n[ \t]", " ", text)
        new = job.edit(f"{where}header {name}", flat)
        if new == flat:
            new_items.append((name, value))
            continue
        changed = True
        new_items.append(
            (name, _address_header(new, encoded) if low in _MAIL_ADDRESSES else _encode_words(new, encoded))
        )
    if changed:
        for name in {n for n, _ in items}:
            del msg[name]
        for name, value in new_items:
            msg[name] = value


def _cte(part: Message) -> str:
    return str(part.get("Content-Transfer-Encoding", "7bit")).strip().lower()


def _set_body(part: Message, raw: bytes) -> None:
    """Put ``raw`` back as the part's body in its own transfer encoding (7bit becomes quoted-printable
    when the new text is not ASCII)."""
    cte = _cte(part)
    if cte == "7bit" and not raw.isascii():
        cte = "quoted-printable"
        del part["Content-Transfer-Encoding"]
        part["Content-Transfer-Encoding"] = cte
    if cte == "base64":
        payload = base64.encodebytes(raw).decode("ascii")
    elif cte == "quoted-printable":
        payload = email.quoprimime.body_encode(raw.decode("latin-1"))
    else:
        payload = raw.decode("ascii", "surrogateescape")
    part.set_payload(payload)


def _body_text(part: Message, raw: bytes, job: RewriteJob) -> _Decoded:
    charset = part.get_content_charset()
    if charset:
        try:
            return _Decoded(raw.decode(charset, "surrogateescape"), charset, b"")
        except (LookupError, UnicodeDecodeError):
            pass
    return _decode(raw, job) if raw else _Decoded("", "utf-8", b"")


def _attachment_name(part: Message) -> str | None:
    """The attachment's file name, decoded (RFC 2231, and the RFC 2047 words some mailers put there)."""
    try:
        name = part.get_filename()
    except (LookupError, UnicodeError, ValueError):
        return None
    return _header_text(name)[0] if name and "=?" in name else name


def _rewrite_part(part: Message, job: RewriteJob, where: str, counter: list[int]) -> None:
    ctype = part.get_content_type()
    if part.is_multipart():
        children = part.get_payload()
        if ctype == "message/rfc822" and isinstance(children, list):
            for inner in children:
                if isinstance(inner, Message):
                    counter[0] += 1
                    label = f"{where}attachment {counter[0]} (message)"
                    if job.depth + 1 > MAX_DEPTH:
                        raise job.fail(f"{label}: nested more than {MAX_DEPTH} levels deep")
                    child = dataclasses.replace(job, depth=job.depth + 1, prefix=f"{job.prefix}{label}: ")
                    _rewrite_message(inner, child, "")
            return
        for sub in children if isinstance(children, list) else []:
            if isinstance(sub, Message):
                _rewrite_headers_of_part(sub, job, where)
                _rewrite_part(sub, job, where, counter)
        return
    name = _attachment_name(part)
    disposition = str(part.get("Content-Disposition", "")).split(";")[0].strip().lower()
    if name is None and disposition != "attachment" and ctype in ("text/plain", "text/html", "text/enriched"):
        raw = part.get_payload(decode=True)
        decoded = _body_text(part, raw if isinstance(raw, bytes) else b"", job)
        label = f"{where}body {ctype}"
        new = job.edit(label, decoded.text, decoded.fitter(ctype == "text/html"))
        if new != decoded.text:
            _set_body(part, new.encode(decoded.codec, "surrogateescape"))
        return
    counter[0] += 1
    index = counter[0]
    shown = name
    if name:
        shown = job.edit(f"{where}attachment {index} name", name)
        if shown != name:
            for header, param in (("Content-Disposition", "filename"), ("Content-Type", "name")):
                if part.get_param(param, header=header) is not None:
                    part.set_param(param, shown, header=header, charset=None if shown.isascii() else "utf-8")
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes) or not data:
        return
    label = f"{where}attachment {index} ({shown or ctype})"
    rewritten = job.nested(name or f"attachment.{ctype.split('/')[-1]}", data, label)
    if rewritten != data:
        _set_body(part, rewritten)


def _rewrite_headers_of_part(part: Message, job: RewriteJob, where: str) -> None:
    """Headers of a MIME part other than structure (Content-Description...)."""
    for name in ("Content-Description", "Content-ID"):
        value = part.get(name)
        if isinstance(value, str):
            text, encoded = _header_text(value)
            new = job.edit(f"{where}part header {name}", text)
            if new != text:
                part.replace_header(name, _encode_words(new, encoded))


def _rewrite_message(msg: Message, job: RewriteJob, where: str) -> None:
    _rewrite_headers(msg, job, where)
    _rewrite_part(msg, job, where, [0])


_MAIL_HEADER_NAMES = frozenset("from to cc subject date message-id received mime-version sender reply-to".split())


def _parse_mail(data: bytes, job: RewriteJob, label: str) -> Message:
    msg = email.message_from_bytes(data, policy=email.policy.compat32)
    if not any(k.lower() in _MAIL_HEADER_NAMES for k in msg):
        raise job.fail(f"{label}not a mail message: no mail headers")
    return msg


def _mail_bytes(msg: Message, newline: str, mbox: bool) -> bytes:
    buf = io.BytesIO()
    policy = email.policy.compat32.clone(linesep=newline)
    email.generator.BytesGenerator(buf, mangle_from_=mbox, policy=policy).flatten(msg)
    return buf.getvalue()


def _rewrite_eml(data: bytes, job: RewriteJob) -> bytes:
    msg = _parse_mail(data, job, "")
    _rewrite_message(msg, job, "")
    if job.dry:
        return data
    return _mail_bytes(msg, "\r\n" if b"\r\n" in data[:4096] else "\n", mbox=False)


def _rewrite_mbox(data: bytes, job: RewriteJob) -> bytes:
    starts = [m.start() for m in re.finditer(rb"(?:\A|(?<=\n\n)|(?<=\r\n\r\n))From ", data)]
    if not starts:
        raise job.fail("not an mbox file: no 'From ' line")
    out = [data[: starts[0]]]
    for n, (a, b) in enumerate(zip(starts, [*starts[1:], len(data)], strict=True), 1):
        chunk = data[a:b]
        head, sep, body = chunk.partition(b"\n")
        envelope = head.decode("utf-8", "surrogateescape")
        new_env = job.edit(f"message {n} envelope", envelope)
        msg = _parse_mail(body, job, f"message {n}: ")
        child = dataclasses.replace(job, prefix=f"{job.prefix}message {n}: ")
        _rewrite_message(msg, child, "")
        if job.dry:
            continue
        newline = "\r\n" if b"\r\n" in body[:4096] else "\n"
        tail = body[len(body.rstrip(b"\r\n")) :]
        text = _mail_bytes(msg, newline, mbox=True).rstrip(b"\r\n") + tail
        out.append(new_env.encode("utf-8", "surrogateescape") + sep + text)
    return data if job.dry else b"".join(out)


# -- images -----------------------------------------------------------------------------------------------
# EXIF is rebuilt from an allow-list: IFD0 keeps layout, orientation and time; the Exif IFD keeps exposure
# and the times taken; everything else (GPS, make, model, serial numbers, owner, maker notes...) goes.
_EXIF_KEEP_IFD0 = frozenset(
    [0x0100, 0x0101, 0x0102, 0x0103, 0x0106, 0x0112, 0x0115, 0x011A, 0x011B, 0x0128, 0x0132, 0x013E, 0x013F,
     0x0211, 0x0212, 0x0213, 0x0214, 0x012D]
)  # fmt: skip
_EXIF_EDIT_IFD0 = frozenset([0x010E, 0x010D, 0x011D])  # ImageDescription, DocumentName, PageName
_EXIF_KEEP_SUB = frozenset(
    [0x829A, 0x829D, 0x8822, 0x8827, 0x8830, 0x8832, 0x9000, 0x9003, 0x9004, 0x9010, 0x9011, 0x9012, 0x9101,
     0x9102, 0x9201, 0x9202, 0x9203, 0x9204, 0x9205, 0x9206, 0x9207, 0x9208, 0x9209, 0x920A, 0x9290, 0x9291,
     0x9292, 0xA000, 0xA001, 0xA002, 0xA003, 0xA217, 0xA300, 0xA301, 0xA401, 0xA402, 0xA403, 0xA404, 0xA405,
     0xA406, 0xA407, 0xA408, 0xA409, 0xA40A, 0xA40C, 0xA432]
)  # fmt: skip
_EXIF_IFD, _GPS_IFD, _INTEROP_IFD = 0x8769, 0x8825, 0xA005
#: a TIFF's own layout tags (strips, tiles, samples...), which Pillow writes itself when saving
_TIFF_LAYOUT = frozenset(
    [0x0100, 0x0101, 0x0102, 0x0103, 0x0106, 0x0111, 0x0115, 0x0116, 0x0117, 0x011A, 0x011B, 0x011C, 0x0128,
     0x013D, 0x0140, 0x0142, 0x0143, 0x0144, 0x0145, 0x014A, 0x0152, 0x0153, 0x8773]
)  # fmt: skip


def _tag_name(tag: int) -> str:
    from PIL import ExifTags

    return ExifTags.TAGS.get(tag, f"tag 0x{tag:04X}")


def _tag_text(tag: int, value: Any) -> str | None:
    if isinstance(value, str):
        return value.replace("\x00", "").strip() or None
    if isinstance(value, bytes) and 0x9C9B <= tag <= 0x9C9F:  # Windows XP* fields: UTF-16-LE
        return value.decode("utf-16-le", "replace").replace("\x00", "").strip() or None
    if isinstance(value, bytes) and tag == 0x9286:  # UserComment: 8 bytes naming the code, then the text
        return value[8:].decode("utf-16" if value[:8].startswith(b"UNICODE") else "latin-1", "replace").strip("\x00 ")
    return None


def _clean_exif(raw: bytes, job: RewriteJob, quiet: frozenset[int] = frozenset()) -> bytes | None:
    """EXIF (with or without its ``Exif\\0\\0`` header) rebuilt from the allow-list; None when unreadable or
    empty. Tags in ``quiet`` (a TIFF's own layout, which its writer sets) are dropped without a record."""
    label = "EXIF"
    from PIL import Image

    try:
        old = Image.Exif()
        old.load(raw)
        sub = dict(old.get_ifd(_EXIF_IFD)) if _EXIF_IFD in old else {}
        gps = dict(old.get_ifd(_GPS_IFD)) if _GPS_IFD in old else {}
    except Exception:  # a damaged EXIF block: dropped whole (the image itself is untouched)
        job.scrub(f"{label} (unreadable: removed whole)")
        return None
    new = Image.Exif()
    for tag, value in old.items():
        if tag in (_EXIF_IFD, _GPS_IFD):
            continue
        if tag in quiet:
            continue
        if tag in _EXIF_KEEP_IFD0:
            new[tag] = value
        elif tag in _EXIF_EDIT_IFD0 and isinstance(value, str):
            new[tag] = job.edit(f"{label} {_tag_name(tag)}", value.replace("\x00", ""))
        else:
            job.scrub(f"{label} {_tag_name(tag)}", _tag_text(tag, value))
    if gps:
        job.scrub(f"{label} GPSInfo", "; ".join(f"{_gps_name(k)}={v}" for k, v in gps.items()))
    kept_sub = {}
    for tag, value in sub.items():
        if tag in _EXIF_KEEP_SUB:
            kept_sub[tag] = value
        elif tag != _INTEROP_IFD:
            job.scrub(f"{label} {_tag_name(tag)}", _tag_text(tag, value))
    if kept_sub:
        new.get_ifd(_EXIF_IFD).update(kept_sub)
    if not len(new) and not kept_sub:
        return None
    return new.tobytes()


def _gps_name(tag: int) -> str:
    from PIL import ExifTags

    return ExifTags.GPSTAGS.get(tag, str(tag))


_IPTC_NAMES = {5: "ObjectName", 25: "Keywords", 80: "By-line", 85: "By-lineTitle", 90: "City", 92: "Sublocation",
               95: "Province-State", 101: "Country", 105: "Headline", 110: "Credit", 115: "Source",
               116: "CopyrightNotice", 118: "Contact", 120: "Caption-Abstract", 122: "Writer-Editor"}  # fmt: skip


def _scrub_iptc(payload: bytes, job: RewriteJob) -> None:
    for m in re.finditer(rb"\x1c\x02(.)(..)", payload, re.S):
        size = struct.unpack(">H", m.group(2))[0]
        if size < 0x8000:
            text = payload[m.end() : m.end() + size].decode("utf-8", "replace")
            job.scrub(f"IPTC {_IPTC_NAMES.get(m.group(1)[0], f'2:{m.group(1)[0]}')}", text)
    job.scrub("IPTC")


def _rewrite_jpeg(data: bytes, job: RewriteJob) -> bytes:
    """JPEG metadata edited at the segment level: the compressed image data is copied byte for byte (no
    re-encoding, so the pixels are exactly the same)."""
    if not data.startswith(b"\xff\xd8"):
        raise job.fail("not a JPEG file")
    out, i, n = [b"\xff\xd8"], 2, len(data)
    while True:
        if i >= n:
            job.note("JPEG ends without an end-of-image marker")
            break
        if data[i] != 0xFF:
            raise job.fail(f"damaged JPEG: no marker at byte {i}")
        while i < n and data[i] == 0xFF:
            i += 1
        if i >= n:
            break
        marker = data[i]
        i += 1
        if marker == 0xD9:
            out.append(b"\xff\xd9")
            break
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:
            out.append(bytes([0xFF, marker]))
            continue
        if i + 2 > n:
            raise job.fail("damaged JPEG: truncated segment")
        length = struct.unpack(">H", data[i : i + 2])[0]
        if length < 2 or i + length > n:
            raise job.fail(f"damaged JPEG: segment 0x{marker:02X} overruns the file")
        payload = data[i + 2 : i + length]
        i += length
        if marker == 0xDA:  # start of scan: the entropy-coded data runs to the next real marker
            j = i
            while True:
                k = data.find(b"\xff", j)
                if k < 0 or k + 1 >= n:
                    k = n
                    break
                if data[k + 1] == 0 or 0xD0 <= data[k + 1] <= 0xD7 or data[k + 1] == 0xFF:
                    j = k + 1
                    continue
                break
            out.append(b"\xff\xda" + struct.pack(">H", length) + payload + data[i:k])
            i = k
            continue
        kept = _jpeg_segment(marker, payload, job)
        if kept is not None:
            if len(kept) > 65533:
                job.scrub(f"JPEG APP{marker - 0xE0} (too large once rewritten)")
                continue
            out.append(bytes([0xFF, marker]) + struct.pack(">H", len(kept) + 2) + kept)
    if i < n and data[i:].strip(b"\x00"):
        job.scrub(f"JPEG data after the image ({n - i} bytes: secondary images, maker trailers)")
    return b"".join(out)


def _jpeg_segment(marker: int, payload: bytes, job: RewriteJob) -> bytes | None:
    """A JPEG segment's payload as kept (None: removed)."""
    if marker == 0xE1 and payload.startswith(b"Exif\x00\x00"):
        return _clean_exif(payload, job)
    if marker == 0xE1 and payload.startswith((b"http://ns.adobe.com/xap/1.0/\x00", b"http://ns.adobe.com/xmp/")):
        job.scrub("XMP", payload.split(b"\x00", 1)[-1].decode("utf-8", "replace"))
        return None
    if marker == 0xED:
        _scrub_iptc(payload, job)
        return None
    if marker == 0xFE:
        text = payload.decode("utf-8") if _utf8(payload) else payload.decode("latin-1")
        return job.edit("JPEG comment", text.rstrip("\x00")).encode("utf-8")
    keep = (marker == 0xE0 or (marker == 0xE2 and payload.startswith(b"ICC_PROFILE\x00"))
            or (marker == 0xEE and payload.startswith(b"Adobe")))  # fmt: skip
    if 0xE0 <= marker <= 0xEF and not keep:
        tag = payload.split(b"\x00", 1)[0][:24].decode("latin-1", "replace")
        job.scrub(f"JPEG APP{marker - 0xE0} {tag}".rstrip())
        return None
    return payload


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


_PNG_SIG = b"\x89PNG\r\n\x1a\n"
#: chunks that display the image (kept as they are); text is judged by keyword, eXIf rebuilt
_PNG_KEEP = frozenset(
    b"IHDR PLTE IDAT IEND tRNS gAMA cHRM sRGB iCCP sBIT bKGD pHYs sPLT hIST tIME acTL fcTL fdAT cICP mDCv cLLi "
    b"oFFs sCAL".split()
)
_PNG_EDIT_KEYS = frozenset(("Title", "Description", "Comment"))
_PNG_KEEP_KEYS = frozenset(("Creation Time",))
#: a text chunk is decompressed to at most this many bytes
_PNG_TEXT_MAX = 8 * 1024 * 1024


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def _inflate(data: bytes, job: RewriteJob) -> bytes:
    d = zlib.decompressobj()
    out = d.decompress(data, _PNG_TEXT_MAX)
    if d.unconsumed_tail:
        raise job.fail(f"PNG text chunk unpacks to more than {_PNG_TEXT_MAX} bytes")
    return out


def _png_text(kind: bytes, body: bytes, job: RewriteJob) -> bytes | None:
    key, _, rest = body.partition(b"\x00")
    keyword = key.decode("latin-1", "replace")
    if kind == b"tEXt":
        text = rest.decode("latin-1")
    elif kind == b"zTXt":
        text = _inflate(rest[1:], job).decode("latin-1")
    else:  # iTXt: flag, method, language\0, translated keyword\0, text
        flag = rest[:1] == b"\x01"
        _lang, _, rest2 = rest[2:].partition(b"\x00")
        _, _, payload = rest2.partition(b"\x00")
        text = (_inflate(payload, job) if flag else payload).decode("utf-8", "replace")
    if keyword in _PNG_KEEP_KEYS:
        return _png_chunk(kind, body)
    if keyword not in _PNG_EDIT_KEYS:
        value = None if keyword.startswith("Raw profile") else text  # hex of EXIF/IPTC: nothing to read
        job.scrub("XMP" if "xmp" in keyword.lower() else f"PNG text {keyword}", value)
        return None
    new = job.edit(f"PNG text {keyword}", text)
    if new == text:
        return _png_chunk(kind, body)
    try:
        return _png_chunk(b"tEXt", key + b"\x00" + new.encode("latin-1"))
    except UnicodeEncodeError:
        return _png_chunk(b"iTXt", key + b"\x00\x00\x00\x00\x00" + new.encode("utf-8"))


def _rewrite_png(data: bytes, job: RewriteJob) -> bytes:
    """PNG chunks: display chunks and pixels copied as they are, text judged by keyword, EXIF rebuilt."""
    if not data.startswith(_PNG_SIG):
        raise job.fail("not a PNG file")
    out, i, n = [_PNG_SIG], len(_PNG_SIG), len(data)
    while i + 8 <= n:
        size, kind = struct.unpack(">I", data[i : i + 4])[0], data[i + 4 : i + 8]
        if i + 12 + size > n:
            raise job.fail(f"damaged PNG: chunk {kind!r} overruns the file")
        body, whole = data[i + 8 : i + 8 + size], data[i : i + 12 + size]
        i += 12 + size
        if kind in _PNG_KEEP:
            out.append(whole)
        elif kind in (b"tEXt", b"zTXt", b"iTXt"):
            kept = _png_text(kind, body, job)
            if kept is not None:
                out.append(kept)
        elif kind == b"eXIf":
            exif = _clean_exif(body, job)
            if exif is not None:
                out.append(_png_chunk(kind, exif[6:]))
        elif kind[:1].isupper():  # an unknown critical chunk is needed to display the image
            out.append(whole)
        else:
            job.scrub(f"PNG chunk {kind.decode('latin-1')}")
        if kind == b"IEND":
            break
    return b"".join(out)


def _rewrite_webp(data: bytes, job: RewriteJob) -> bytes:
    """WebP (RIFF) chunks: EXIF rebuilt, XMP removed, the VP8X flags and the RIFF size set to match."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        raise job.fail("not a WebP file")
    chunks: list[list[bytes]] = []
    i, n = 12, len(data)
    while i + 8 <= n:
        kind, size = data[i : i + 4], struct.unpack("<I", data[i + 4 : i + 8])[0]
        if i + 8 + size > n:
            raise job.fail(f"damaged WebP: chunk {kind!r} overruns the file")
        body = data[i + 8 : i + 8 + size]
        i += 8 + size + (size & 1)
        if kind == b"EXIF":
            exif = _clean_exif(body, job)
            if exif is not None:
                chunks.append([kind, exif[6:]])
        elif kind == b"XMP ":
            job.scrub("XMP", body.decode("utf-8", "replace"))
        else:
            chunks.append([kind, body])
    kinds = {c[0] for c in chunks}
    for c in chunks:
        if c[0] == b"VP8X" and c[1]:
            flags = c[1][0] & ~0x0C | (0x08 if b"EXIF" in kinds else 0) | (0x04 if b"XMP " in kinds else 0)
            c[1] = bytes([flags]) + c[1][1:]
    body = b"".join(k + struct.pack("<I", len(b)) + b + (b"\x00" if len(b) & 1 else b"") for k, b in chunks)
    return b"RIFF" + struct.pack("<I", len(body) + 4) + b"WEBP" + body


def _rewrite_tiff(data: bytes, job: RewriteJob) -> bytes:
    """TIFF re-saved by Pillow with the same compression (lossless codecs keep every pixel) and the
    cleaned tags; XMP, IPTC and Photoshop blocks are not carried over."""
    from PIL import Image, ImageSequence

    try:
        img: Any = Image.open(io.BytesIO(data))
        img.load()
    except Exception as exc:
        raise job.fail(f"not a readable TIFF: {exc}") from None
    for tag, what in ((700, "XMP"), (33723, "IPTC"), (34377, "Photoshop metadata")):
        if tag in img.tag_v2:
            job.scrub(what, img.tag_v2[tag] if isinstance(img.tag_v2[tag], bytes | str) else None)
    exif = _clean_exif(img.getexif().tobytes(), job, _TIFF_LAYOUT) or b""
    if job.dry:
        return data
    frames = []
    for frame in ImageSequence.Iterator(img):
        tags: Any = getattr(frame, "tag_v2", {})
        for tag in (700, 33723, 34377):
            tags.pop(tag, None)
        frames.append(frame.copy())
    compression = img.info.get("compression", "raw")
    if compression in ("jpeg", "tiff_jpeg"):
        job.note("TIFF with JPEG compression re-encoded (pixels may differ slightly)")
    buf = io.BytesIO()
    frames[0].save(buf, format="TIFF", compression=compression, exif=exif, save_all=len(frames) > 1,
                   append_images=frames[1:])  # fmt: skip
    return buf.getvalue()


# -- dispatch ---------------------------------------------------------------------------------------------
def _office(data: bytes, job: RewriteJob) -> bytes:
    from hippocamp.build.rewrite_office import rewrite_package

    return rewrite_package(data, job)


def _pdf(data: bytes, job: RewriteJob) -> bytes:
    from hippocamp.build.rewrite_pdf import rewrite_pdf

    return rewrite_pdf(data, job)


_TEXT_EXTS = (
    "txt text md markdown csv tsv tab log html htm xhtml xml svg yaml yml tex rtf srt vtt ini cfg conf toml "
    "url opml rst org"
).split()
_HANDLERS: dict[str, Handler] = {
    **dict.fromkeys(_TEXT_EXTS, _rewrite_text),
    **dict.fromkeys(("json", "geojson"), _rewrite_json),
    **dict.fromkeys(("jsonl", "ndjson"), _rewrite_jsonl),
    **dict.fromkeys(("ics", "ical", "ifb", "vcs", "vcf"), _rewrite_ical),
    "eml": _rewrite_eml,
    "mbox": _rewrite_mbox,
    **dict.fromkeys(("jpg", "jpeg", "jpe", "jfif"), _rewrite_jpeg),
    "png": _rewrite_png,
    "webp": _rewrite_webp,
    **dict.fromkeys(("tif", "tiff"), _rewrite_tiff),
    **dict.fromkeys("docx docm dotx dotm xlsx xlsm xltx xltm pptx pptm ppsx potx".split(), _office),
    "pdf": _pdf,
}


def _handler(ext: str) -> Handler | None:
    return _HANDLERS.get(ext)


def _copied(ext: str) -> str:
    note = f"copied as is: no text rewriter for .{ext or '(none)'}"
    if ext in ("heic", "heif", "avif", "gif", "bmp", "dng", "cr2", "nef", "arw"):
        note += " (its metadata, EXIF and GPS included, was not removed)"
    return note
