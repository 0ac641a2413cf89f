"""PDF rewritten with pypdf: text in the content streams edited, identifying metadata removed.

Metadata: the document information dictionary loses /Author, /Creator, /Producer and any private key
(their values are listed as scrubbed); /Title, /Subject and /Keywords are edited; /CreationDate and
/ModDate are kept. XMP packets (/Metadata of the catalog, of pages and of images) are removed.

Text: each text object (BT ... ET) of every page, form XObject and annotation appearance is one string for
the editor, the strings of its Tj, TJ, ' and " operators joined (a line change counts as a newline, a wide
TJ gap as a space), so an entity split across strings is found; `hippocamp.build.rewrite.spread` puts the
edits back onto the strings, whose lengths may change. A string is decoded and re-encoded through its font:
the font's ToUnicode map when it has one (Identity-H CID fonts included), laid over the simple encodings
(WinAnsi, MacRoman, Standard, /Differences by glyph name). When new text has a character the font cannot
encode (a subset without that glyph), the text object is left as it was and a note says so; text in fonts
without any Unicode mapping (Type 3, symbolic) is left and noted too, so the caller's residual scan flags
the file. Marked-content /ActualText and /Alt, annotation contents and authors, outline titles, form values
and every other text string of the document's objects are edited as well.

The output is written twice: the second time from a fresh copy of the first, so objects that no longer
belong to the document (old content streams, the removed XMP) are not carried over.
"""

from __future__ import annotations

import io
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from pypdf import PdfReader, PdfWriter
from pypdf.errors import PdfReadError
from pypdf.generic import (
    ArrayObject,
    ByteStringObject,
    ContentStream,
    DictionaryObject,
    IndirectObject,
    NameObject,
    StreamObject,
    TextStringObject,
    create_string_object,
)

from hippocamp.build.rewrite import RewriteJob, spread

__all__ = ["rewrite_pdf"]

_INFO_EDIT = ("/Title", "/Subject", "/Keywords")
_INFO_KEEP = ("/CreationDate", "/ModDate")
#: string entries that are not prose: appearance settings, dates, identifiers, encryption, signatures
_SKIP_KEYS = frozenset("/DA /DS /M /CreationDate /ModDate /Lang /ID /O /U /OE /UE /Perms /ByteRange".split())
_STANDARD_FONTS = frozenset(
    "Courier Courier-Bold Courier-Oblique Courier-BoldOblique Helvetica Helvetica-Bold Helvetica-Oblique "
    "Helvetica-BoldOblique Times-Roman Times-Bold Times-Italic Times-BoldItalic Arial Arial,Bold Arial,Italic "
    "Arial,BoldItalic TimesNewRoman TimesNewRoman,Bold CourierNew".split()
)
#: a TJ gap wider than this (thousandths of an em) reads as a space
_GAP = 180
_CONTAINERS = (ArrayObject, DictionaryObject, IndirectObject)
_MAX_CMAP_ENTRIES = 200_000
_ACCENTS = {"acute": "ACUTE", "grave": "GRAVE", "circumflex": "CIRCUMFLEX", "dieresis": "DIAERESIS",
            "tilde": "TILDE", "ring": "RING ABOVE", "cedilla": "CEDILLA", "caron": "CARON"}  # fmt: skip
_GLYPHS = {
    "space": " ", "exclam": "!", "quotedbl": '"', "numbersign": "#", "dollar": "$", "percent": "%",
    "ampersand": "&", "quotesingle": "'", "quoteright": "’", "quoteleft": "‘", "parenleft": "(",
    "parenright": ")", "asterisk": "*", "plus": "+", "comma": ",", "hyphen": "-", "period": ".", "slash": "/",
    "colon": ":", "semicolon": ";", "less": "<", "equal": "=", "greater": ">", "question": "?", "at": "@",
    "bracketleft": "[", "backslash": "\\", "bracketright": "]", "asciicircum": "^", "underscore": "_",
    "grave": "`", "braceleft": "{", "bar": "|", "braceright": "}", "asciitilde": "~", "endash": "–",
    "emdash": "—", "bullet": "•", "quotedblleft": "“", "quotedblright": "”", "ellipsis": "…", "fi": "ﬁ",
    "fl": "ﬂ", "germandbls": "ß", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
    "six": "6", "seven": "7", "eight": "8", "nine": "9", "nbspace": "\xa0", "Euro": "€", "copyright": "©",
    "registered": "®", "degree": "°", "section": "§", "paragraph": "¶", "sterling": "£",
}  # fmt: skip


def _glyph(name: str) -> str | None:
    """The text of a glyph name (``eacute``, ``uni00E9``, ``a``), or None when unknown."""
    if len(name) == 1:
        return name
    if name in _GLYPHS:
        return _GLYPHS[name]
    m = re.fullmatch(r"uni([0-9A-Fa-f]{4})+", name) or re.fullmatch(r"u([0-9A-Fa-f]{4,6})", name)
    if m:
        hexes = re.findall(r"[0-9A-Fa-f]{4}", name[3:]) if name.startswith("uni") else [m.group(1)]
        try:
            return "".join(chr(int(h, 16)) for h in hexes)
        except ValueError:
            return None
    m = re.fullmatch(r"([A-Za-z])(acute|grave|circumflex|dieresis|tilde|ring|cedilla|caron)", name)
    if m:
        case = "CAPITAL" if m.group(1).isupper() else "SMALL"
        try:
            return unicodedata.lookup(f"LATIN {case} LETTER {m.group(1).upper()} WITH {_ACCENTS[m.group(2)]}")
        except KeyError:
            return None
    return None


def _table(name: str) -> dict[int, str] | None:
    """A simple font's base encoding as code -> text."""
    if name == "/WinAnsiEncoding":
        codec = "cp1252"
    elif name == "/MacRomanEncoding":
        codec = "mac_roman"
    elif name == "/StandardEncoding":
        table = {c: chr(c) for c in range(0x20, 0x7F)}
        table |= {0x27: "’", 0x60: "‘"}
        return table
    elif name == "/PDFDocEncoding":
        codec = "latin-1"
    else:
        return None
    out = {}
    for c in range(0x20, 0x100):
        try:
            ch = bytes([c]).decode(codec)
        except UnicodeDecodeError:
            continue
        if unicodedata.category(ch) != "Cc":
            out[c] = ch
    return out


@dataclass
class _Codec:
    """How a font's string bytes read as text, and back."""

    name: str
    width: int
    to_text: dict[int, str]
    to_code: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for code in sorted(self.to_text):
            self.to_code.setdefault(self.to_text[code], code)

    def decode(self, data: bytes) -> str:
        w = self.width
        codes = (
            list(data) if w == 1 else [int.from_bytes(data[i : i + w], "big") for i in range(0, len(data) - w + 1, w)]
        )
        return "".join(self.to_text.get(c, "\ufffd") for c in codes)

    def encode(self, text: str) -> bytes | None:
        codes, i = [], 0
        while i < len(text):
            for size in (3, 2, 1):
                code = self.to_code.get(text[i : i + size]) if i + size <= len(text) else None
                if code is not None:
                    codes.append(code)
                    i += size
                    break
            else:
                base = unicodedata.normalize("NFKD", text[i])[:1]
                if base in self.to_code and base != text[i]:
                    codes.append(self.to_code[base])
                    i += 1
                    continue
                return None
        return b"".join(c.to_bytes(self.width, "big") for c in codes)


def _utf16(hexa: str) -> str:
    if len(hexa) % 2:
        hexa += "0"
    return bytes.fromhex(hexa).decode("utf-16-be", "replace")


def _cmap(obj: Any) -> tuple[dict[int, str], int] | None:
    """A ToUnicode CMap as code -> text, and the code width in bytes."""
    stream = obj.get_object() if obj is not None else None
    if not isinstance(stream, StreamObject):
        return None
    text = stream.get_data().decode("latin-1")
    m = re.search(r"begincodespacerange\s*<([0-9A-Fa-f]+)>", text)
    width = max(1, len(m.group(1)) // 2) if m else 1
    table: dict[int, str] = {}
    for block in re.finditer(r"beginbfchar(.*?)endbfchar", text, re.S):
        for src, dst in re.findall(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]*)>", block.group(1)):
            table[int(src, 16)] = _utf16(dst)
    for block in re.finditer(r"beginbfrange(.*?)endbfrange", text, re.S):
        ranges = re.findall(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*(\[[^\]]*\]|<[0-9A-Fa-f]*>)", block.group(1))
        for lo, hi, dst in ranges:
            a, b = int(lo, 16), int(hi, 16)
            if not 0 <= b - a < 65536 or len(table) > _MAX_CMAP_ENTRIES:
                continue
            if dst.startswith("["):
                for k, item in enumerate(re.findall(r"<([0-9A-Fa-f]*)>", dst)[: b - a + 1]):
                    table[a + k] = _utf16(item)
            else:
                start, size = int(dst[1:-1] or "0", 16), max(2, len(dst[1:-1]) // 2)
                for k in range(b - a + 1):
                    try:
                        table[a + k] = (start + k).to_bytes(size, "big").decode("utf-16-be", "replace")
                    except OverflowError:
                        break
    return table, width


def _simple_base(font: Any) -> dict[int, str] | None:
    enc = font.get("/Encoding")
    enc = enc.get_object() if enc is not None else None
    base_name, diffs = None, None
    if isinstance(enc, DictionaryObject):
        base_name, diffs = enc.get("/BaseEncoding"), enc.get("/Differences")
    elif enc is not None:
        base_name = str(enc)
    if base_name is not None:
        table = _table(str(base_name)) or {}
    else:
        descriptor = font.get("/FontDescriptor")
        descriptor = descriptor.get_object() if descriptor is not None else {}
        embedded = any(k in descriptor for k in ("/FontFile", "/FontFile2", "/FontFile3"))
        basefont = str(font.get("/BaseFont", "")).lstrip("/").split("+")[-1]
        if basefont in ("Symbol", "ZapfDingbats") or (embedded and diffs is None):
            return None
        table = {} if embedded else (_table("/StandardEncoding") or {})
    if diffs is not None:
        code = 0
        for item in diffs.get_object():
            if isinstance(item, int):
                code = int(item)
                continue
            glyph = _glyph(str(item).lstrip("/"))
            if glyph is None:
                table.pop(code, None)
            else:
                table[code] = glyph
            code += 1
    return table


def _codec(ref: Any) -> _Codec | None:
    font = ref.get_object() if ref is not None else None
    if not isinstance(font, DictionaryObject):
        return None
    name = str(font.get("/BaseFont", font.get("/Name", "?"))).lstrip("/")
    unicode_map = _cmap(font.get("/ToUnicode"))
    if font.get("/Subtype") == "/Type0":
        if font.get("/Encoding") not in ("/Identity-H", "/Identity-V") or unicode_map is None:
            return None
        return _Codec(name, 2, unicode_map[0])
    base = _simple_base(font) if font.get("/Subtype") != "/Type3" else None
    if base is None and unicode_map is None:
        return None
    table = dict(base or {})
    if unicode_map is not None:
        table.update(unicode_map[0])
    return _Codec(name, 1, table) if table else None


@dataclass
class _Piece:
    text: str
    fixed: bool
    codec: _Codec | None = None
    slot: tuple[Any, int] | None = None


@dataclass
class _Pdf:
    job: RewriteJob
    writer: Any
    codecs: dict[int, _Codec | None] = field(default_factory=dict)
    done_forms: set[int] = field(default_factory=set)

    def codec(self, ref: Any) -> _Codec | None:
        key = ref.idnum if hasattr(ref, "idnum") else id(ref)
        if key not in self.codecs:
            self.codecs[key] = _codec(ref)
        return self.codecs[key]


def rewrite_pdf(data: bytes, job: RewriteJob) -> bytes:
    """A PDF with its text edited and its identifying metadata removed."""
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise job.fail("encrypted PDF: needs a password")
        writer = PdfWriter(clone_from=reader)
        pages = list(writer.pages)
    except PdfReadError as exc:
        raise job.fail(f"not a readable PDF: {exc}") from None
    pdf = _Pdf(job, writer)
    _info(reader, writer, job)
    root: Any = writer.root_object
    if "/Metadata" in root:
        job.scrub("pdf XMP", _stream_text(root["/Metadata"]))
        del root["/Metadata"]
    if "/Names" in root and "/EmbeddedFiles" in root["/Names"].get_object():
        job.note("files embedded in the PDF were left as they are")
    for n, page in enumerate(pages, 1):
        _page(pdf, page, n)
    _strings(root, job)
    if job.dry:
        return data
    first = io.BytesIO()
    writer.write(first)
    again = PdfWriter(clone_from=PdfReader(io.BytesIO(first.getvalue())))
    out = io.BytesIO()
    again.write(out)
    return out.getvalue()


def _stream_text(ref: Any) -> str | None:
    try:
        return ref.get_object().get_data().decode("utf-8", "replace")
    except Exception:  # an unreadable XMP stream is removed all the same
        return None


def _info(reader: Any, writer: Any, job: RewriteJob) -> None:
    info = reader.metadata
    if info is None:
        return
    kept: dict[str, str] = {}
    for key in list(info.keys()):
        value = info[key]
        text = str(value.get_object() if hasattr(value, "get_object") else value)
        if key in _INFO_KEEP:
            kept[key] = text
        elif key in _INFO_EDIT:
            kept[key] = job.edit(f"pdf {key}", text)
        elif key != "/Trapped":
            job.scrub(f"pdf {key}", text)
    writer.metadata = kept if kept else None


def _resources(obj: Any) -> Any:
    """The /Resources of a page or form, inherited from the page tree when the page has none."""
    node, hops = obj, 0
    while node is not None and hops < 64:
        res = node.get("/Resources")
        if res is not None:
            res = res.get_object()
            return res if isinstance(res, DictionaryObject) else DictionaryObject()
        parent = node.get("/Parent")
        node = parent.get_object() if parent is not None else None
        hops += 1
    return DictionaryObject()


def _page(pdf: _Pdf, page: Any, n: int) -> None:
    try:
        content = page.get_contents()
        operations = content.operations if content is not None else []
    except (PdfReadError, ValueError, KeyError, TypeError) as exc:
        pdf.job.note(f"page {n}: its content could not be parsed ({type(exc).__name__}); text left as is")
        operations = []
    if operations and _content(pdf, operations, _resources(page), f"page {n}"):
        page.replace_contents(content)
    annots = page.get("/Annots")
    for annot in annots.get_object() if annots is not None else []:
        annot = annot.get_object()
        if not isinstance(annot, DictionaryObject) or "/AP" not in annot:
            continue
        appearance: Any = annot["/AP"].get_object()
        for state in appearance.values():
            state = state.get_object()
            forms = (
                state.values()
                if isinstance(state, DictionaryObject) and not isinstance(state, StreamObject)
                else [state]
            )
            for form in forms:
                _form(pdf, form, _resources(page), f"page {n} annotation")


def _form(pdf: _Pdf, ref: Any, parent_resources: Any, where: str) -> None:
    """A form XObject's text edited in place (once, however many pages show it)."""
    key = ref.idnum if hasattr(ref, "idnum") else id(ref)
    form = ref.get_object()
    if key in pdf.done_forms or not isinstance(form, StreamObject) or form.get("/Subtype") != "/Form":
        return
    pdf.done_forms.add(key)
    resources = form["/Resources"].get_object() if "/Resources" in form else parent_resources
    stream = ContentStream(form, pdf.writer)
    if _content(pdf, stream.operations, resources, where):
        try:
            form.set_data(stream.get_data())
        except PdfReadError:
            pdf.job.note(f"{where}: a form whose compression pypdf cannot write was left as is")


def _content(pdf: _Pdf, ops: list[tuple[Any, bytes]], resources: Any, where: str) -> bool:
    """Edit the text objects of a content stream's operations in place; True when something changed."""
    fonts = resources.get("/Font")
    fonts = fonts.get_object() if fonts is not None else DictionaryObject()
    xobjects = resources.get("/XObject")
    xobjects = xobjects.get_object() if xobjects is not None else DictionaryObject()
    font: _Codec | None = None
    font_name = "?"
    pieces: list[_Piece] = []
    changed = False

    def gap(ch: str) -> None:
        if pieces and not pieces[-1].fixed:
            pieces.append(_Piece(ch, True))

    def add(container: Any, index: int) -> None:
        raw = container[index]
        if not isinstance(raw, ByteStringObject | TextStringObject):
            return
        if font is None:
            pdf.job.note(f"{where}: text in font {font_name} (without a Unicode map) was left as is")
            return
        pieces.append(_Piece(font.decode(raw.original_bytes), False, font, (container, index)))

    def flush() -> None:
        nonlocal changed
        if pieces:
            changed |= _text_object(pdf.job, pieces, where)
            pieces.clear()

    for operands, op in ops:
        if op in (b"BT", b"ET"):
            flush()
        elif op == b"Tf" and operands:
            font_name = str(operands[0]).lstrip("/")
            font = pdf.codec(fonts.get(operands[0])) if isinstance(operands[0], NameObject) else None
        elif op in (b"Td", b"TD"):
            gap(" " if len(operands) == 2 and float(operands[1]) == 0 else "\n")
        elif op in (b"T*", b"Tm"):
            gap("\n")
        elif op == b"Tj" and operands:
            add(operands, 0)
        elif op == b"'" and operands:
            gap("\n")
            add(operands, 0)
        elif op == b'"' and len(operands) >= 3:
            gap("\n")
            add(operands, 2)
        elif op == b"TJ" and operands and isinstance(operands[0], ArrayObject | list):
            for k, item in enumerate(operands[0]):
                if isinstance(item, ByteStringObject | TextStringObject):
                    add(operands[0], k)
                elif isinstance(item, int | float) and float(item) < -_GAP:
                    gap(" ")
        elif op in (b"BDC", b"DP") and len(operands) >= 2 and isinstance(operands[1], DictionaryObject):
            changed |= _edit_dict_strings(pdf.job, operands[1], f"{where} marked content")
        elif op == b"Do" and operands and operands[0] in xobjects:
            _form(pdf, xobjects[operands[0]], resources, f"{where} form {str(operands[0]).lstrip('/')}")
    flush()
    return changed


def _text_object(job: RewriteJob, pieces: list[_Piece], where: str) -> bool:
    texts = [p.text for p in pieces]
    edits = job.ask(where, "".join(texts))
    if not edits:
        return False
    new = spread(texts, edits, [p.fixed for p in pieces])
    if new is None:
        job.note(f"{where}: an edit could not be placed in the text; left as is")
        return False
    encoded: list[tuple[tuple[Any, int], bytes]] = []
    for piece, text in zip(pieces, new, strict=True):
        if piece.fixed or text == piece.text or piece.codec is None or piece.slot is None:
            continue
        data = piece.codec.encode(text)
        if data is None:
            job.note(f"{where}: replacement text cannot be written in font {piece.codec.name}; text left as is")
            return False
        encoded.append((piece.slot, data))
    if not encoded:
        return False
    for (container, index), data in encoded:
        container[index] = ByteStringObject(data)
    job.done(where, len(edits), True)
    return True


def _edit_dict_strings(job: RewriteJob, obj: Any, where: str) -> bool:
    changed = False
    for key, value in list(obj.items()):
        if isinstance(value, TextStringObject) and key not in _SKIP_KEYS:
            new = job.edit(f"{where} {key}", str(value))
            if new != str(value):
                obj[NameObject(key)] = create_string_object(new)
                changed = True
    return changed


def _strings(root: Any, job: RewriteJob) -> None:
    """Every text string of the document's objects (annotations, outlines, form values, structure)
    edited; XMP streams of pages and images removed."""

    stack: list[tuple[Any, str]] = [(root, "catalog")]
    seen: set[int] = set()
    while stack:
        obj, where = stack.pop()
        if isinstance(obj, IndirectObject):
            if obj.idnum in seen:
                continue
            seen.add(obj.idnum)
            where = f"object {obj.idnum}"
            obj = obj.get_object()
        if isinstance(obj, DictionaryObject):
            meta = obj.get("/Metadata")
            if meta is not None and isinstance(meta.get_object(), StreamObject):
                job.scrub("pdf XMP", _stream_text(meta))
                del obj["/Metadata"]
            _edit_dict_strings(job, obj, f"pdf {where}")
            stack += [(v, where) for k, v in obj.items() if k != "/Parent" and isinstance(v, _CONTAINERS)]
        elif isinstance(obj, ArrayObject):
            for i, value in enumerate(obj):
                if isinstance(value, TextStringObject):
                    new = job.edit(f"pdf {where}", str(value))
                    if new != str(value):
                        obj[i] = create_string_object(new)
                elif isinstance(value, _CONTAINERS):
                    stack.append((value, where))
