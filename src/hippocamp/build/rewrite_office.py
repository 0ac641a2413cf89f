"""Office Open XML packages (DOCX, XLSX, PPTX) rewritten at the level of their XML parts.

Working on the parts (lxml) rather than through python-docx/openpyxl/python-pptx keeps everything the
libraries would drop on saving (charts, images, extensions) and treats the three formats alike: only the
parts that change are re-serialized, every other member of the zip is copied byte for byte.

What the editor sees, with its ``where``:

* Word paragraphs (body, tables, text boxes, headers, footers, footnotes, endnotes, comments) as whole
  strings, so a name split across runs is found ("paragraph 3", "header1 paragraph 1"); edits go back onto
  the runs (`hippocamp.build.rewrite.spread`): an edit inside one run changes that run, one spanning runs
  puts its new text in the first and trims the others, untouched runs keep their formatting. Deleted
  text of tracked changes and field codes are units of their own.
* DrawingML paragraphs (PowerPoint shapes, tables and groups, notes, chart titles, SmartArt): "slide 2
  shape 'Title 1'", "slide 2 notes shape 'Notes Placeholder 2'".
* Spreadsheet strings: shared and inline strings ("sheet Budget!B4"), formula results and formulas, comments,
  headers and footers, chart caches, pivot caches, table column names; sheet names are edited too and the
  formulas, defined names and charts that name a renamed sheet follow it.
* Authors of comments and tracked changes, shapes' names and alt text, external link targets (``mailto:``).

Metadata: core properties author, last_modified_by and comments are removed, title, subject, keywords and
category edited, dates kept; app.xml Company and Manager removed; ``docProps/custom.xml`` and the
thumbnail are removed with their relationships. Embedded images are cleaned by the image rewriter, embedded
Office files rewritten recursively; macros and OLE objects are left as they are (noted).

Hostile input: a member above `MAX_MEMBER` bytes unpacked or a package above `MAX_TOTAL`, an encrypted,
duplicated or unsafe member name (absolute, ``..``) raise `RewriteError`; nothing is ever extracted to disk.
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lxml import etree  # type: ignore[import-untyped]

from hippocamp.build.rewrite import RewriteJob

__all__ = ["MAX_MEMBER", "MAX_TOTAL", "rewrite_package"]

#: a member that unpacks to more bytes than this is refused (a zip bomb)
MAX_MEMBER = 200 * 1024 * 1024
#: and so is a package whose members unpack to more than this in all
MAX_TOTAL = 1024 * 1024 * 1024

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_KINDS = {**dict.fromkeys(("docx", "docm", "dotx", "dotm"), "docx"),
          **dict.fromkeys(("xlsx", "xlsm", "xltx", "xltm"), "xlsx"),
          **dict.fromkeys(("pptx", "pptm", "ppsx", "potx"), "pptx")}  # fmt: skip
_MAIN = {"docx": "word/document.xml", "xlsx": "xl/workbook.xml", "pptx": "ppt/presentation.xml"}

# namespaces by family, transitional and strict
_FAMILY = {
    "w": ("http://schemas.openxmlformats.org/wordprocessingml/2006/main", "http://purl.oclc.org/ooxml/wordprocessingml/main"),
    "a": ("http://schemas.openxmlformats.org/drawingml/2006/main", "http://purl.oclc.org/ooxml/drawingml/main"),
    "x": ("http://schemas.openxmlformats.org/spreadsheetml/2006/main", "http://purl.oclc.org/ooxml/spreadsheetml/main"),
    "p": ("http://schemas.openxmlformats.org/presentationml/2006/main", "http://purl.oclc.org/ooxml/presentationml/main"),
    "c": ("http://schemas.openxmlformats.org/drawingml/2006/chart", "http://purl.oclc.org/ooxml/drawingml/chart"),
    "r": ("http://schemas.openxmlformats.org/officeDocument/2006/relationships", "http://purl.oclc.org/ooxml/officeDocument/relationships"),
}  # fmt: skip
_NS_FAMILY = {uri: fam for fam, uris in _FAMILY.items() for uri in uris}
_XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
_IMAGE_EXTS = frozenset("jpg jpeg jpe png webp tif tiff".split())

_CORE_SCRUB = {"creator": "author", "lastModifiedBy": "last_modified_by", "description": "comments"}
_CORE_EDIT = {"title": "title", "subject": "subject", "keywords": "keywords", "category": "category",
              "contentStatus": "content_status", "identifier": "identifier"}  # fmt: skip
_APP_SCRUB = frozenset(("Company", "Manager"))
_APP_EDIT = frozenset(("Template", "HyperlinkBase"))
_FORMULAS = frozenset(("f", "formula", "formula1", "formula2", "definedName"))
_HEADER_FOOTER = frozenset(("oddHeader", "oddFooter", "evenHeader", "evenFooter", "firstHeader", "firstFooter"))
_WORD_TEXT = {"t": None, "tab": "\t", "br": "\n", "cr": "\n", "noBreakHyphen": "-", "softHyphen": ""}


def _parts(el: Any) -> tuple[str | None, str]:
    """(family, local name) of an element or attribute name."""
    qname = etree.QName(el)
    return _NS_FAMILY.get(qname.namespace or ""), qname.localname


def _is(el: Any, family: str, *local: str) -> bool:
    if not isinstance(el.tag, str):
        return False
    fam, loc = _parts(el)
    return fam == family and loc in local


def _tags(family: str, local: str) -> list[str]:
    return [f"{{{uri}}}{local}" for uri in _FAMILY[family]]


def _set_text(el: Any, text: str) -> None:
    el.text = text
    if text != text.strip():
        el.set(_XML_SPACE, "preserve")


@dataclass
class _Package:
    kind: str
    job: RewriteJob
    parts: dict[str, bytes]
    labels: dict[str, str] = field(default_factory=dict)
    removed: set[str] = field(default_factory=set)
    sheet_map: dict[str, str] = field(default_factory=dict)
    shared_where: dict[int, str] = field(default_factory=dict)

    def rels(self, part: str) -> Iterator[tuple[str, str, str]]:
        """(type, resolved target, mode) of each relationship of ``part``."""
        folder, base = posixpath.split(part)
        data = self.parts.get(posixpath.join(folder, "_rels", base + ".rels"))
        if data is None:
            return
        try:
            root = etree.fromstring(data, _PARSER)
        except etree.XMLSyntaxError:
            return
        for rel in root:
            if isinstance(rel.tag, str) and rel.get("Target"):
                mode = rel.get("TargetMode", "Internal")
                target = rel.get("Target", "")
                yield rel.get("Type", ""), (target if mode == "External" else _resolve(folder, target)), mode

    def rel_targets(self, part: str) -> dict[str, str]:
        """Relationship id -> resolved internal target of ``part``."""
        folder, base = posixpath.split(part)
        data = self.parts.get(posixpath.join(folder, "_rels", base + ".rels"))
        out: dict[str, str] = {}
        if data is None:
            return out
        for rel in etree.fromstring(data, _PARSER):
            if isinstance(rel.tag, str) and rel.get("TargetMode", "Internal") != "External":
                out[rel.get("Id", "")] = _resolve(folder, rel.get("Target", ""))
        return out

    def label_children(self, part: str, label: str, levels: int = 2) -> None:
        for kind, target, mode in self.rels(part):
            if mode == "External" or target in self.labels:
                continue
            self.labels[target] = f"{label} {kind.rsplit('/', 1)[-1]}".strip()
            if levels > 1:
                self.label_children(target, self.labels[target], levels - 1)


_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)


def _resolve(folder: str, target: str) -> str:
    if target.startswith("/"):
        return posixpath.normpath(target.lstrip("/"))
    return posixpath.normpath(posixpath.join(folder, target))


def rewrite_package(data: bytes, job: RewriteJob) -> bytes:
    """A DOCX, XLSX or PPTX (by ``job.ext``) with its strings edited and its identifying metadata removed."""
    kind = _KINDS.get(job.ext, "docx")
    infos, parts = _open(data, job, kind)
    if _MAIN[kind] not in parts:
        raise job.fail(f"not a valid {kind} file: no {_MAIN[kind]}")
    pkg = _Package(kind, job, parts)
    _seed_labels(pkg)
    for name in sorted(parts, key=lambda n: _priority(pkg, n)):
        new = _member(pkg, name, parts[name])
        if new is not None:
            parts[name] = new
    if job.dry:
        return data
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as out:
        for info in infos:
            if info.filename in pkg.removed or info.filename not in parts:
                continue
            zi = zipfile.ZipInfo(info.filename, max(info.date_time, (1980, 1, 1, 0, 0, 0)))
            zi.compress_type = info.compress_type if info.compress_type == zipfile.ZIP_STORED else zipfile.ZIP_DEFLATED
            zi.external_attr = info.external_attr
            out.writestr(zi, parts[info.filename])
    return buf.getvalue()


def _open(data: bytes, job: RewriteJob, kind: str) -> tuple[list[zipfile.ZipInfo], dict[str, bytes]]:
    if data[:8] == _OLE_MAGIC:
        raise job.fail(f"not a valid {kind} (zip) file: a legacy binary or password-protected Office file")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise job.fail(f"not a valid {kind} (zip) file: {exc}") from None
    total, seen = 0, set()
    for info in infos:
        name = info.filename
        if name.startswith("/") or "\\" in name or ".." in name.split("/") or ":" in name:
            raise job.fail(f"{kind} member {name!r}: unsafe name (outside the package)")
        if name in seen:
            raise job.fail(f"{kind} member {name!r} appears twice")
        seen.add(name)
        if info.flag_bits & 1:
            raise job.fail(f"{kind} member {name!r} is encrypted")
        if info.file_size > MAX_MEMBER:
            raise job.fail(f"{kind} member {name!r} unpacks to {info.file_size:,} bytes (limit {MAX_MEMBER:,})")
        total += info.file_size
        if total > MAX_TOTAL:
            raise job.fail(f"the {kind} unpacks to more than {MAX_TOTAL:,} bytes (a zip bomb?)")
    parts: dict[str, bytes] = {}
    for info in infos:
        if info.is_dir():
            continue
        try:
            parts[info.filename] = zf.read(info)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, OSError, ValueError) as exc:
            raise job.fail(f"{kind} member {info.filename!r} is damaged: {exc}") from None
    return infos, parts


def _priority(pkg: _Package, name: str) -> tuple[int, str]:
    """Metadata first, then the workbook (sheet names), sheets (shared-string cells), the rest, rels last."""
    if name.startswith("docProps/"):
        rank = 0
    elif name == _MAIN["xlsx"] and pkg.kind == "xlsx":
        rank = 1
    elif name.startswith("xl/worksheets/"):
        rank = 2
    elif name.endswith(".rels"):
        rank = 5
    elif name == "[Content_Types].xml":
        rank = 6
    else:
        rank = 3
    return rank, name


def _seed_labels(pkg: _Package) -> None:
    parts = pkg.parts
    if pkg.kind == "docx":
        pkg.labels["word/document.xml"] = ""
        for name in parts:
            m = re.fullmatch(r"word/((?:header|footer)\d*|footnotes|endnotes|comments)\.xml", name)
            if m:
                pkg.labels[name] = m.group(1)
        pkg.label_children("word/document.xml", "document", 1)
    elif pkg.kind == "pptx":
        targets = pkg.rel_targets("ppt/presentation.xml")
        root = etree.fromstring(parts["ppt/presentation.xml"], _PARSER)
        slides = [el for el in root.iter() if _is(el, "p", "sldId")]
        for n, sld in enumerate(slides, 1):
            rid = next((v for k, v in sld.attrib.items() if etree.QName(k).localname == "id" and "}" in k), None)
            if rid in targets:
                pkg.labels[targets[rid]] = f"slide {n}"
        for target, label in list(pkg.labels.items()):
            pkg.label_children(target, label)
        for name in parts:
            m = re.fullmatch(r"ppt/(slideLayout|slideMaster)s/\1(\d+)\.xml", name)
            if m:
                pkg.labels.setdefault(name, f"{'layout' if m.group(1) == 'slideLayout' else 'master'} {m.group(2)}")


def _member(pkg: _Package, name: str, data: bytes) -> bytes | None:
    """The new bytes of one member (None: unchanged)."""
    job, ext = pkg.job, name.rsplit(".", 1)[-1].lower() if "." in name.rsplit("/", 1)[-1] else ""
    if name == "docProps/custom.xml":
        root = _parse(job, name, data)
        for prop in root:
            if isinstance(prop.tag, str):
                job.scrub(f"{pkg.kind} custom property {prop.get('name', '?')}", "".join(prop.itertext()))
        pkg.removed.add(name)
        return None
    if name.startswith("docProps/thumbnail"):
        job.scrub(f"{pkg.kind} thumbnail")
        pkg.removed.add(name)
        return None
    if ext == "rels":
        return _rels(pkg, name, data)
    if name == "[Content_Types].xml":
        return _content_types(pkg, name, data)
    if ext == "xml":
        return _xml_part(pkg, name, data)
    if ext in _IMAGE_EXTS or ext in _KINDS:
        new = job.nested(name.rsplit("/", 1)[-1], data, f"part {name}")
        return new if new != data else None
    if ext == "bin":
        what = "macros" if "vbaProject" in name else "embedded object"
        job.note(f"part {name}: {what} left as is (binary OLE data is not rewritten)")
    return None


def _parse(job: RewriteJob, name: str, data: bytes) -> Any:
    try:
        return etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        raise job.fail(f"part {name}: not well-formed XML: {exc}") from None


def _serialize(root: Any) -> bytes:
    tree = root.getroottree()
    return etree.tostring(tree, xml_declaration=True, encoding="UTF-8", standalone=tree.docinfo.standalone)


def _rels(pkg: _Package, name: str, data: bytes) -> bytes | None:
    root = _parse(pkg.job, name, data)
    folder = posixpath.dirname(posixpath.dirname(name))
    source = posixpath.join(folder, posixpath.basename(name)[: -len(".rels")])
    label = pkg.labels.get(source, source) or "document"
    dirty = False
    for rel in list(root):
        if not isinstance(rel.tag, str):
            continue
        target = rel.get("Target", "")
        if rel.get("TargetMode") == "External":
            new = pkg.job.edit(f"{label} link {rel.get('Id', '')}".strip(), target)
            if new != target:
                rel.set("Target", new)
                dirty = True
        elif _resolve(folder, target) in pkg.removed:
            root.remove(rel)
            dirty = True
    return _serialize(root) if dirty else None


def _content_types(pkg: _Package, name: str, data: bytes) -> bytes | None:
    root = _parse(pkg.job, name, data)
    gone = [el for el in root if isinstance(el.tag, str) and el.get("PartName", "").lstrip("/") in pkg.removed]
    for el in gone:
        root.remove(el)
    return _serialize(root) if gone else None


def _core(pkg: _Package, root: Any) -> bool:
    job, dirty = pkg.job, False
    for el in list(root):
        if not isinstance(el.tag, str):
            continue
        loc = etree.QName(el).localname
        if loc in _CORE_SCRUB:
            if "".join(el.itertext()).strip():  # an empty field is removed without a record
                job.scrub(f"{pkg.kind} core {_CORE_SCRUB[loc]}", "".join(el.itertext()))
            root.remove(el)
            dirty = True
        elif loc in _CORE_EDIT and len(el) == 0 and el.text:
            new = job.edit(f"core property {_CORE_EDIT[loc]}", el.text)
            if new != el.text:
                _set_text(el, new)
                dirty = True
    return dirty


def _app(pkg: _Package, root: Any) -> bool:
    job, dirty = pkg.job, False
    for el in list(root):
        if not isinstance(el.tag, str):
            continue
        loc = etree.QName(el).localname
        if loc in _APP_SCRUB:
            if "".join(el.itertext()).strip():
                job.scrub(f"{pkg.kind} app {loc}", "".join(el.itertext()))
            root.remove(el)
            dirty = True
        elif loc in _APP_EDIT and el.text:
            new = job.edit(f"app property {loc}", el.text)
            dirty |= new != el.text
            _set_text(el, new)
        elif loc == "TitlesOfParts":
            for n, item in enumerate((e for e in el.iter() if etree.QName(e).localname == "lpstr"), 1):
                new = job.edit(f"app property TitlesOfParts {n}", item.text or "")
                if new != (item.text or ""):
                    _set_text(item, new)
                    dirty = True
    return dirty


def _xml_part(pkg: _Package, name: str, data: bytes) -> bytes | None:
    job = pkg.job
    root = _parse(job, name, data)
    label = pkg.labels.get(name, name)
    if name == "docProps/core.xml":
        dirty = _core(pkg, root)
    elif name == "docProps/app.xml":
        dirty = _app(pkg, root)
    elif name.startswith("customXml/"):
        dirty = _all_text(job, root, f"{name} text")
    else:
        dirty = _attributes(pkg, root, name, label)
        if pkg.kind == "xlsx" and name == _MAIN["xlsx"]:
            dirty |= _workbook(pkg, root)
        if pkg.kind == "xlsx" and name.startswith("xl/worksheets/"):
            dirty |= _worksheet(pkg, root, label)
        dirty |= _word_paragraphs(job, root, label)
        dirty |= _drawing_paragraphs(job, root, label)
        dirty |= _sheet_strings(pkg, root, name, label)
        dirty |= _leaf_texts(pkg, root, name, label)
    return _serialize(root) if dirty else None


def _all_text(job: RewriteJob, root: Any, where: str) -> bool:
    dirty = False
    for el in root.iter():
        if isinstance(el.tag, str) and el.text and el.text.strip():
            new = job.edit(where, el.text)
            if new != el.text:
                _set_text(el, new)
                dirty = True
    return dirty


def _edit_attr(job: RewriteJob, el: Any, attr: str, where: str) -> bool:
    old = el.get(attr)
    if not old:
        return False
    new = job.edit(where, old)
    if new != old:
        el.set(attr, new)
        return True
    return False


def _attributes(pkg: _Package, root: Any, name: str, label: str) -> bool:
    """People and free text kept in attributes: authors, shapes' names and alt text, field instructions..."""
    job, dirty = pkg.job, False
    where = f"{label} " if label else ""
    pivot = name.startswith("xl/pivotCache")
    for el in root.iter():
        if not isinstance(el.tag, str) or not el.attrib:
            continue
        loc = etree.QName(el).localname
        for attr in list(el.attrib):
            a = etree.QName(attr).localname
            edit = (
                a in ("author", "initials", "userId")
                or (loc in ("cNvPr", "docPr") and a in ("name", "descr", "title"))
                or (loc == "person" and a == "displayName")
                or (loc in ("cmAuthor", "author") and a == "name")
                or (loc == "docVar" and a == "val")
                or (loc == "fldSimple" and a == "instr")
                or (loc == "hyperlink" and a in ("tooltip", "display"))
                or (loc == "tableColumn" and a == "name")
                or (pivot and loc == "s" and a == "v")
            )
            if edit:
                dirty |= _edit_attr(job, el, attr, f"{where}{loc} {a}")
            elif pkg.sheet_map and (
                (loc == "worksheetSource" and a == "sheet") or (loc == "hyperlink" and a == "location")
            ):
                old = el.get(attr)
                new = pkg.sheet_map.get(old, old) if a == "sheet" else _resheet(old, pkg.sheet_map)
                if new != old:
                    el.set(attr, new)
                    dirty = True
    return dirty


def _pieces(job: RewriteJob, where: str, nodes: list[tuple[Any, str, bool]]) -> bool:
    """Edit a string made of nodes (element, text, fixed) and write the new texts back onto them."""
    new = job.edit_pieces(where, [t for _, t, _ in nodes], [f for _, _, f in nodes])
    dirty = False
    for (el, old, fixed), text in zip(nodes, new, strict=True):
        if text == old:
            continue
        dirty = True
        if fixed:
            if not text:
                el.getparent().remove(el)
        else:
            _set_text(el, text)
    return dirty


def _word_paragraphs(job: RewriteJob, root: Any, label: str) -> bool:
    """Every Word paragraph as one string (runs, tabs and breaks), deleted text and field codes apart."""
    paragraphs: dict[Any, dict[str, list[tuple[Any, str, bool]]]] = {}
    order: list[Any] = []
    p_tags = _tags("w", "p")
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        fam, loc = _parts(el)
        if fam != "w":
            continue
        if loc == "p":
            order.append(el)
            continue
        if loc not in _WORD_TEXT and loc not in ("delText", "instrText"):
            continue
        parent = el.getparent()
        if parent is None or not _is(parent, "w", "r"):
            continue
        p = next(el.iterancestors(*p_tags), None)
        if p is None:
            continue
        group = "text" if loc in _WORD_TEXT else loc
        fixed = _WORD_TEXT.get(loc)
        text = (el.text or "") if fixed is None else fixed
        paragraphs.setdefault(p, {}).setdefault(group, []).append((el, text, fixed is not None))
    dirty = False
    prefix = f"{label} " if label else ""
    for n, p in enumerate(order, 1):
        groups = paragraphs.get(p)
        if not groups:
            continue
        for group, suffix in (("text", ""), ("delText", " deleted text"), ("instrText", " field code")):
            if group in groups:
                dirty |= _pieces(job, f"{prefix}paragraph {n}{suffix}", groups[group])
    return dirty


def _shape_name(el: Any) -> str | None:
    for anc in el.iterancestors():
        if not isinstance(anc.tag, str):
            continue
        c_nv = anc.find("./*/{*}cNvPr")
        if c_nv is not None:
            return c_nv.get("name")
    return None


def _drawing_paragraphs(job: RewriteJob, root: Any, label: str) -> bool:
    """Every DrawingML paragraph (shapes, tables, charts, diagrams) as one string."""
    paragraphs: dict[Any, list[tuple[Any, str, bool]]] = {}
    order: list[Any] = []
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        fam, loc = _parts(el)
        if fam != "a":
            continue
        if loc == "p":
            order.append(el)
        elif loc in ("t", "br"):
            parent = el.getparent()
            if loc == "t" and (parent is None or not _is(parent, "a", "r", "fld")):
                continue
            p = parent.getparent() if loc == "t" else parent
            if p is not None and _is(p, "a", "p"):
                node = (el, el.text or "", False) if loc == "t" else (el, "\n", True)
                paragraphs.setdefault(p, []).append(node)
    dirty = False
    prefix = f"{label} " if label else ""
    for p in order:
        if p in paragraphs:
            shape = _shape_name(p)
            where = f"{prefix}shape {shape!r}" if shape else f"{prefix}text"
            dirty |= _pieces(job, where, paragraphs[p])
    return dirty


def _workbook(pkg: _Package, root: Any) -> bool:
    """Sheet names edited (valid, unique); the sheets' parts labelled with their new names."""
    job, dirty = pkg.job, False
    targets = pkg.rel_targets(_MAIN["xlsx"])
    used: set[str] = set()
    for n, sheet in enumerate((el for el in root.iter() if _is(el, "x", "sheet")), 1):
        old = sheet.get("name", "")
        new = re.sub(r"[\[\]:*?/\\]", "", job.edit(f"sheet {n} name", old)).strip("'")[:31] or f"Sheet{n}"
        base, k = new, 2
        while new.lower() in used:
            suffix = f" ({k})"
            new, k = base[: 31 - len(suffix)] + suffix, k + 1
        used.add(new.lower())
        if new != old:
            sheet.set("name", new)
            pkg.sheet_map[old] = new
            dirty = True
        rid = next((v for a, v in sheet.attrib.items() if etree.QName(a).localname == "id" and "}" in a), None)
        if rid in targets:
            pkg.labels[targets[rid]] = f"sheet {new}"
            pkg.label_children(targets[rid], f"sheet {new}")
    return dirty


def _worksheet(pkg: _Package, root: Any, label: str) -> bool:
    """Which cells use which shared string (for ``where``), and formula results that are strings."""
    job, dirty = pkg.job, False
    sheet = label.removeprefix("sheet ")
    for cell in (el for el in root.iter() if _is(el, "x", "c")):
        kind, ref = cell.get("t"), cell.get("r", "?")
        value = next((v for v in cell if _is(v, "x", "v")), None)
        if kind == "s" and value is not None and (value.text or "").strip().isdigit():
            pkg.shared_where.setdefault(int(value.text), f"sheet {sheet}!{ref}")
        elif kind == "str" and value is not None and value.text:
            new = job.edit(f"sheet {sheet}!{ref}", value.text)
            if new != value.text:
                _set_text(value, new)
                dirty = True
    return dirty


def _sheet_strings(pkg: _Package, root: Any, name: str, label: str) -> bool:
    """Shared strings, inline strings and comment texts, each one string of rich-text runs."""
    job, dirty, index = pkg.job, False, -1
    for item in root.iter():
        if not _is(item, "x", "si", "is", "text"):
            continue
        loc = etree.QName(item).localname
        if loc == "si":
            index += 1
            where = pkg.shared_where.get(index, f"shared string {index + 1}")
        elif loc == "is":
            cell = item.getparent()
            where = f"{label}!{cell.get('r', '?') if cell is not None else '?'}"
        else:
            comment = item.getparent()
            where = f"{label} comment {comment.get('ref', '') if comment is not None else ''}".strip()
        nodes = []
        for child in item:
            if _is(child, "x", "t"):
                nodes.append((child, child.text or "", False))
            elif _is(child, "x", "r"):
                nodes += [(t, t.text or "", False) for t in child if _is(t, "x", "t")]
            elif _is(child, "x", "rPh"):
                for t in (t for t in child if _is(t, "x", "t") and t.text):
                    new = job.edit(f"{where} phonetic", t.text)
                    if new != t.text:
                        _set_text(t, new)
                        dirty = True
        if nodes:
            dirty |= _pieces(job, where, nodes)
    return dirty


def _resheet(text: str, sheet_map: dict[str, str]) -> str:
    """A formula with references to renamed sheets following them (``'Old name'!A1``, ``Old!A1``)."""
    for old, new in sheet_map.items():
        quoted = "'" + new.replace("'", "''") + "'!"
        plain = new + "!" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", new) else quoted
        text = text.replace("'" + old.replace("'", "''") + "'!", quoted)
        text = re.sub(r"(?<![A-Za-z0-9_.'])" + re.escape(old) + "!", plain.replace("\\", "\\\\"), text)
    return text


def _leaf_texts(pkg: _Package, root: Any, name: str, label: str) -> bool:
    """Texts held by single elements: formulas, chart caches, comment authors, headers and footers,
    threaded comments, legacy PowerPoint comments."""
    job, dirty = pkg.job, False
    prefix = f"{label} " if label else ""
    in_xl = name.startswith("xl/")
    for el in root.iter():
        if not isinstance(el.tag, str) or len(el) or not el.text:
            continue
        fam, loc = _parts(el)
        parent = el.getparent()
        where = None
        if in_xl and loc in _FORMULAS and fam in ("x", "c"):
            text = _resheet(el.text, pkg.sheet_map) if pkg.sheet_map else el.text
            if text != el.text:
                _set_text(el, text)
                dirty = True
            cell = parent.get("r") if parent is not None and _is(parent, "x", "c") else None
            where = f"{prefix.rstrip()}!{cell} formula" if cell else f"{prefix}formula"
        elif fam == "c" and loc == "v" and parent is not None and _is(parent, "c", "pt"):
            holder = parent.getparent()
            if holder is None or not _is(holder, "c", "strCache", "strLit"):
                continue
            where = f"{prefix}value"
        elif fam == "x" and loc == "author":
            where = f"{prefix}comment author"
        elif fam == "x" and loc in _HEADER_FOOTER:
            where = f"{prefix}{loc}"
        elif (
            loc == "text" and fam is None and parent is not None and etree.QName(parent).localname == "threadedComment"
        ):
            where = f"{prefix}comment {parent.get('ref', '')}".strip()
        elif fam == "p" and loc == "text":
            where = f"{prefix}comment"
        if where is None:
            continue
        new = job.edit(where, el.text)
        if new != el.text:
            _set_text(el, new)
            dirty = True
    return dirty
