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
* calendar and mail (``.ics .vcf .eml .mbox``): `hippocamp.build.rewrite_mail`; attachments are rewritten
  by their own format, `MAX_DEPTH` levels deep.
* images (``.jpg .png .webp .tif``): `hippocamp.build.rewrite_image` (EXIF rebuilt from an allow-list, XMP
  and IPTC removed, the pixels left as they are). GIF, BMP and HEIC are copied as they are, with a note.
* Office (``.docx .xlsx .pptx``): `hippocamp.build.rewrite_office`. PDF: `hippocamp.build.rewrite_pdf`.
* anything else (audio, video, archives...) is copied byte for byte, with a note.

A corrupt file raises `RewriteError` naming the file and the part (an attachment that cannot be rewritten
fails its message: nothing is kept un-anonymized); an editor returning edits that do not fit its string
raises `EditError`, and an exception of the editor itself passes through unchanged (bugs of the caller,
not of the file). Formats register by extension in `_HANDLERS`; `RewriteJob` is what a handler works with.
The handler modules (mail, image, Office, PDF) import it from here; this module reaches their handlers
through handlers that import their module when first called (`_later`), so nothing imports in a circle.
"""

from __future__ import annotations

import codecs
import dataclasses
import importlib
import json
import os
import re
import shutil
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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

    Handlers of every format share it (`hippocamp.build.rewrite_mail`, `hippocamp.build.rewrite_image`,
    `hippocamp.build.rewrite_office`, `hippocamp.build.rewrite_pdf`).
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


# -- dispatch ---------------------------------------------------------------------------------------------
def _later(module: str, name: str) -> Handler:
    """A handler that lives in another module, imported when first called (so nothing imports in a circle)."""

    def handler(data: bytes, job: RewriteJob) -> bytes:
        found: Handler = getattr(importlib.import_module(f"hippocamp.build.{module}"), name)
        return found(data, job)

    return handler


_ical, _eml, _mbox = (_later("rewrite_mail", f"rewrite_{n}") for n in ("ical", "eml", "mbox"))
_jpeg, _png, _webp, _tiff = (_later("rewrite_image", f"rewrite_{n}") for n in ("jpeg", "png", "webp", "tiff"))
_office = _later("rewrite_office", "rewrite_package")
_pdf = _later("rewrite_pdf", "rewrite_pdf")


_TEXT_EXTS = (
    "txt text md markdown csv tsv tab log html htm xhtml xml svg yaml yml tex rtf srt vtt ini cfg conf toml "
    "url opml rst org"
).split()
_HANDLERS: dict[str, Handler] = {
    **dict.fromkeys(_TEXT_EXTS, _rewrite_text),
    **dict.fromkeys(("json", "geojson"), _rewrite_json),
    **dict.fromkeys(("jsonl", "ndjson"), _rewrite_jsonl),
    **dict.fromkeys(("ics", "ical", "ifb", "vcs", "vcf"), _ical),
    "eml": _eml,
    "mbox": _mbox,
    **dict.fromkeys(("jpg", "jpeg", "jpe", "jfif"), _jpeg),
    "png": _png,
    "webp": _webp,
    **dict.fromkeys(("tif", "tiff"), _tiff),
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
