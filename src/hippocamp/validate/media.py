"""Measuring files so that locators can be checked against them: page counts and labels of PDFs
(and office documents that record them), slide counts, sheets and their extents, line counts,
image sizes, and durations of audio and video (hippocamp's own header probing,
`hippocamp.perceive.avprobe`, for WAV, MP3, MP4/M4A/MOV, FLAC and Ogg; ffprobe for the rest).

`probe` never raises for a bad file: what it could not measure is None and ``error`` says why.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from hippocamp.schema.filetypes import extension, modality_of

__all__ = ["MediaInfo", "probe"]


@dataclass
class MediaInfo:
    """What could be measured of one file (None: not applicable or not measurable)."""

    kind: str
    pages: int | None = None
    #: the PDF's own page labels, only when the PDF defines them (/PageLabels)
    page_labels: list[str] | None = None
    #: width and height of each PDF page in points
    page_sizes: list[tuple[float, float]] | None = None
    #: True when the page count comes from metadata a program saved (DOCX), not the file's structure
    pages_approximate: bool = False
    slides: int | None = None
    sheets: dict[str, tuple[int, int]] | None = None  # sheet -> (max_col, max_row)
    lines: int | None = None
    size_px: tuple[int, int] | None = None
    duration: float | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    _pdf_path: Path | None = None

    def page_text(self, page: int) -> str | None:
        """Text of a 1-based PDF page (for checking printed page numbers), None if unavailable."""
        if self._pdf_path is None:
            return None
        try:
            from pypdf import PdfReader

            reader = PdfReader(str(self._pdf_path), strict=False)
            return reader.pages[page - 1].extract_text() or ""
        except Exception:  # pypdf raises a wide range of errors on damaged pages
            return None


def probe(path: Path) -> MediaInfo:
    """Measure one file by its extension; unknown types get an empty MediaInfo."""
    ext = extension(path.name)
    reader = _PROBES.get(ext)
    if reader is None:
        modality = modality_of(path.name)
        if modality in ("audio", "video"):
            return _probe_av(path, modality)
        return MediaInfo(kind=modality or "other")
    try:
        return reader(path)
    except Exception as exc:  # a corrupt file is a finding, not a crash
        return MediaInfo(kind=modality_of(path.name) or "other", error=f"{type(exc).__name__}: {exc}")


def _probe_pdf(path: Path) -> MediaInfo:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(str(path), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            return MediaInfo(kind="document", error="encrypted PDF: cannot count pages")
        pages = len(reader.pages)
    except (PdfReadError, ValueError, OSError, KeyError) as exc:
        return MediaInfo(kind="document", error=f"not a readable PDF: {exc}")
    labels = None
    try:
        root = reader.trailer["/Root"]
        if "/PageLabels" in root:
            labels = list(reader.page_labels)
    except Exception:  # malformed label trees are common; labels are optional
        labels = None
    sizes = []
    for page in reader.pages:
        box = page.mediabox
        sizes.append((float(box.width), float(box.height)))
    return MediaInfo(kind="document", pages=pages, page_labels=labels, page_sizes=sizes, _pdf_path=path)


def _zip_text(path: Path, member: str) -> str | None:
    with zipfile.ZipFile(path) as zf:
        try:
            return zf.read(member).decode("utf-8", "replace")
        except KeyError:
            return None


def _app_count(xml: str | None, tag: str) -> int | None:
    if not xml:
        return None
    match = re.search(rf"<(?:\w+:)?{tag}>(\d+)</(?:\w+:)?{tag}>", xml)
    return int(match.group(1)) if match else None


def _probe_docx(path: Path) -> MediaInfo:
    pages = _app_count(_zip_text(path, "docProps/app.xml"), "Pages")
    info = MediaInfo(kind="document", pages=pages, pages_approximate=True)
    if pages is None:
        info.notes.append("the document does not record its page count")
    return info


def _probe_pptx(path: Path) -> MediaInfo:
    with zipfile.ZipFile(path) as zf:
        slides = sum(1 for n in zf.namelist() if re.fullmatch(r"ppt/slides/slide\d+\.xml", n))
    return MediaInfo(kind="document", slides=slides, pages=slides)


def _probe_xlsx(path: Path) -> MediaInfo:
    from openpyxl import load_workbook

    wb = load_workbook(path, read_only=True, data_only=False)
    try:
        sheets = {}
        for ws in wb.worksheets:
            sheets[ws.title] = (ws.max_column or 0, ws.max_row or 0)
    finally:
        wb.close()
    return MediaInfo(kind="document", sheets=sheets)


def _probe_text(path: Path) -> MediaInfo:
    # \n, \r\n and a lone \r each end a line, as the text reader numbers them
    return MediaInfo(kind=modality_of(path.name) or "text", lines=len(path.read_bytes().splitlines()))


def _probe_csv(path: Path) -> MediaInfo:
    import csv
    import io

    text = path.read_bytes().decode("utf-8", "replace")
    rows = list(csv.reader(io.StringIO(text)))
    width = max((len(r) for r in rows), default=0)
    return MediaInfo(kind="text", sheets={path.stem: (width, len(rows))}, lines=len(rows))


def _probe_image(path: Path) -> MediaInfo:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as img:
            return MediaInfo(kind="image", size_px=(int(img.width), int(img.height)))
    except UnidentifiedImageError:
        if extension(path.name) in ("heic", "heif"):
            return MediaInfo(kind="image", notes=["HEIC size not measured (no HEIF decoder installed)"])
        return MediaInfo(kind="image", error="not a readable image")


def _probe_av(path: Path, modality: str | None = None) -> MediaInfo:
    from hippocamp.perceive.avprobe import probe_media
    from hippocamp.perceive.base import ReadError

    kind = modality or modality_of(path.name) or "other"
    duration = None
    error = None
    try:
        facts = probe_media(path) or {}
        duration = float(facts["duration"]) if facts.get("duration") else None
    except (ReadError, OSError) as exc:
        error = f"cannot read media headers: {exc}"
    if duration is None:
        duration, ff_error = _ffprobe_duration(path)
        if duration is not None:
            error = None
        elif error is None:
            error = ff_error
    return MediaInfo(kind=kind, duration=duration, error=error)


def _ffprobe_duration(path: Path) -> tuple[float | None, str | None]:
    exe = shutil.which("ffprobe")
    if exe is None:
        return None, "duration unknown (format not readable without ffprobe, which is not installed)"
    try:
        out = subprocess.run(
            [exe, "-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1", str(path)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"ffprobe failed: {exc}"
    text = out.stdout.strip().splitlines()
    try:
        return float(text[0]), None
    except (IndexError, ValueError):
        return None, f"ffprobe could not read a duration: {out.stderr.strip()[:200] or 'no output'}"


_PROBES = {
    "pdf": _probe_pdf,
    "docx": _probe_docx,
    "pptx": _probe_pptx,
    "xlsx": _probe_xlsx,
    "xlsm": _probe_xlsx,
    "csv": _probe_csv,
    "tsv": _probe_text,
    "txt": _probe_text,
    "md": _probe_text,
    "markdown": _probe_text,
    "log": _probe_text,
    "json": _probe_text,
    "eml": _probe_text,
    "ics": _probe_text,
    "html": _probe_text,
    "htm": _probe_text,
    "jpg": _probe_image,
    "jpeg": _probe_image,
    "png": _probe_image,
    "gif": _probe_image,
    "bmp": _probe_image,
    "tif": _probe_image,
    "tiff": _probe_image,
    "webp": _probe_image,
    "heic": _probe_image,
    "heif": _probe_image,
}
