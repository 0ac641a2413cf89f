"""RTF documents as text: converted to text (`rtf_to_text`), one line per RTF paragraph, located as
``{"unit": "paragraph", "position": {"line": 2, "line_end": 4}}`` (paragraphs of the converted text,
every ``\\par`` counted; all numbers 1-based). A file without an RTF header is read as plain text.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from hippocamp.perceive.base import Part, ReadContext, ReadError
from hippocamp.perceive.decode import SAMPLE_BYTES, decode_text
from hippocamp.perceive.plaintext import chunk_lines, read_lines, segments_from_chunks
from hippocamp.registry import register
from hippocamp.schema.segment import Segment

__all__ = ["RtfReader", "rtf_to_text"]


_RTF_TOKEN = re.compile(
    r"\\([a-zA-Z]+)(-?\d+)? ?|\\'([0-9a-fA-F]{2})|\\([^a-zA-Z])|([{}])|([^\\{}\r\n]+)|[\r\n]+",
)
#: destinations whose content is not document text
_RTF_SKIP = frozenset(
    "annotation atnauthor atnid author bkmkend bkmkstart colortbl comment company creatim datafield "
    "datastore doccomm falt filetbl fldinst fontemb fontfile fonttbl footer footerf footerl footerr "
    "footnote ftncn ftnsep ftnsepc generator header headerf headerl headerr info keywords latentstyles "
    "listoverridetable listtable listtext manager mmathPr object operator pgdsctbl pict pntext pntxta "
    "pntxtb printim private revtbl revtim rsidtbl shppict stylesheet subject template themedata title "
    "colorschememapping userprops xmlnstbl".split()
)
_RTF_CHARS = {
    "par": "\n",
    "line": "\n",
    "sect": "\n",
    "page": "\n",
    "row": "\n",
    "cell": " | ",
    "tab": "\t",
    "emdash": "\u2014",
    "endash": "\u2013",
    "emspace": "\u2003",
    "enspace": "\u2002",
    "qmspace": "\u2005",
    "bullet": "\u2022",
    "lquote": "\u2018",
    "rquote": "\u2019",
    "ldblquote": "\u201c",
    "rdblquote": "\u201d",
    "zwj": "\u200d",
    "zwnj": "\u200c",
}
_RTF_ESCAPES = {"\\": "\\", "{": "{", "}": "}", "~": "\u00a0", "_": "\u2011", "-": "", "\n": "\n", "\r": "\n"}


def rtf_to_text(rtf: str) -> str:
    """The text of an RTF document (``rtf`` decoded as latin-1, one char per byte): paragraphs
    become lines, table cells are joined by `` | ``; fonts, styles, pictures and fields'
    instructions are dropped; ``\\'hh`` bytes are decoded with the document's ``\\ansicpg``."""
    out: list[str] = []
    pending = bytearray()  # \'hh bytes not yet decoded (a multi-byte character may span several)
    codepage = "cp1252"
    # per group: (skipping, unicode fallback length)
    stack: list[tuple[bool, int]] = []
    skipping, uc = False, 1
    to_skip = 0  # fallback characters still to skip after a \uN

    def emit_bytes() -> None:
        if pending:
            try:
                out.append(pending.decode(codepage, "replace"))
            except LookupError:
                out.append(pending.decode("cp1252", "replace"))
            pending.clear()

    for match in _RTF_TOKEN.finditer(rtf):
        word, arg, hexbyte, symbol, brace, run = match.groups()
        if to_skip and (hexbyte is not None or run is not None or symbol is not None):
            if run is not None and len(run) > to_skip:
                run = run[to_skip:]
                to_skip = 0
            else:
                to_skip -= 1 if run is None else len(run)
                to_skip = max(to_skip, 0)
                continue
        if hexbyte is None:
            emit_bytes()
        if brace == "{":
            stack.append((skipping, uc))
            continue
        if brace == "}":
            if stack:
                skipping, uc = stack.pop()
            to_skip = 0
            continue
        if symbol is not None:
            if symbol == "*":
                skipping = True  # an ignorable destination ({\\*\\name ...}): not document text
                continue
            if not skipping:
                out.append(_RTF_ESCAPES.get(symbol, ""))
            continue
        if word is not None:
            if word in _RTF_SKIP:
                skipping = True
            if word == "ansicpg" and arg:
                codepage = f"cp{arg}"
            elif word == "uc" and arg:
                uc = max(int(arg), 0)
            elif word == "u" and arg and not skipping:
                code = int(arg)
                out.append(chr(code + 65536 if code < 0 else code))
                to_skip = uc
            elif word == "bin" and arg:
                pass  # binary data follows in a skipped destination (pictures); the regex moves on
            elif not skipping and word in _RTF_CHARS:
                out.append(_RTF_CHARS[word])
            continue
        if hexbyte is not None:
            if not skipping:
                pending.append(int(hexbyte, 16))
            continue
        if run is not None and not skipping:
            if any(ord(c) > 127 for c in run):  # raw 8-bit text some writers emit
                run = run.encode("latin-1").decode(codepage, "replace")
            out.append(run)
    emit_bytes()
    text = "".join(out)
    text = _merge_surrogates(text)
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def _merge_surrogates(text: str) -> str:
    if not any("\ud800" <= c <= "\udfff" for c in text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


@register("reader", "rtf")
class RtfReader:
    """RTF as text: located by paragraph of the converted text."""

    name: ClassVar[str] = "rtf"
    extensions: ClassVar[tuple[str, ...]] = ("rtf",)
    parts: ClassVar[tuple[Part, ...]] = ()

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        data = path.read_bytes()
        if data.lstrip()[:5] != b"{\\rtf":
            decoded = decode_text(data)
            ctx.note("no RTF header: read as plain text")
            return read_lines(decoded, ctx)
        if b"\x00" in data[:SAMPLE_BYTES]:
            raise ReadError("binary content in an RTF file")
        text = rtf_to_text(data.decode("latin-1"))
        chunks = chunk_lines(text.split("\n"))
        return segments_from_chunks(chunks, ctx, unit="paragraph")
