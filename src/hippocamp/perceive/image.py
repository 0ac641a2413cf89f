"""The image reader: photos and pictures as a metadata segment (size, EXIF time taken, camera, GPS)
and, with tesseract installed, OCR text blocks located in pixels.

Every image gets its metadata segment (no locator: the whole file) whatever is installed: size as
displayed, EXIF time taken, camera and lens, GPS as decimal degrees, a description (Pillow; HEIC/HEIF
through ``pillow-heif``, ``pip install 'hippocamp[ocr]'``). OCR (`hippocamp.perceive.ocr`) adds one
segment per text block with a `RegionLocator` (pixels of the image as displayed, EXIF orientation
applied, origin top-left) and the words, their boxes and confidences in ``meta``. A missing part, or
OCR switched off in `PerceiveOptions`, keeps the metadata segment and is noted; corrupt or truncated
images raise `ReadError`.
"""

from __future__ import annotations

import math
import re
import struct
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from PIL import ExifTags, Image, ImageOps

from hippocamp.perceive.base import Part, ReadContext, ReadError, tag_text
from hippocamp.perceive.ocr import TESSERACT, ocr_missing, ocr_or_note
from hippocamp.registry import register
from hippocamp.schema.locators import RegionLocator
from hippocamp.schema.segment import Segment

__all__ = ["PILLOW_HEIF", "ImageReader", "camera_name", "exif_time", "image_facts", "place_text"]

PILLOW_HEIF = Part("pillow_heif", "module", "HEIC/HEIF photos (iPhone)", "pip install 'hippocamp[ocr]'")

_EXIF_TIME = re.compile(r"^\s*(\d{4})[:\-](\d{2})[:\-](\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?")


def exif_time(value: Any) -> datetime | None:
    """An EXIF-style time (``2024:10:12 11:02:33``; ISO too, as video tags write it), or None."""
    if isinstance(value, bytes):
        value = value.decode("ascii", "replace")
    match = _EXIF_TIME.match(str(value or ""))
    if not match:
        return None
    try:
        return datetime(*(int(g or 0) for g in match.groups()))  # type: ignore[arg-type]
    except ValueError:  # "0000:00:00 00:00:00"
        return None


def _degrees(dms: Any, ref: Any) -> float | None:
    try:
        parts = [float(v) for v in (dms if isinstance(dms, list | tuple) else [dms])]
        value = sum(p / 60**i for i, p in enumerate(parts[:3]))
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    if not math.isfinite(value):
        return None
    if (tag_text(ref) or "").upper()[:1] in ("S", "W"):
        value = -value
    return round(value, 6)


def camera_name(make: str | None, model: str | None) -> str | None:
    """The camera as shown ("Apple iPhone 12"): the model alone when it starts with the make."""
    if make and model and model.lower().startswith(make.split()[0].lower()):
        return model
    return " ".join(p for p in (make, model) if p) or None


def place_text(lat: float, lon: float) -> str:
    """``51.918 N, 4.472 E``."""
    return f"{abs(lat):.3f} {'N' if lat >= 0 else 'S'}, {abs(lon):.3f} {'E' if lon >= 0 else 'W'}"


def image_facts(img: Image.Image) -> dict[str, Any]:
    """Size (as displayed), format, EXIF time taken, camera, lens, GPS and description of an image."""
    facts: dict[str, Any] = {"format": img.format, "mode": img.mode}
    try:
        exif = img.getexif()
    except Exception:  # a broken EXIF block must not lose the image
        exif = Image.Exif()
    sub = _safe_ifd(exif, ExifTags.IFD.Exif)
    orientation = exif.get(ExifTags.Base.Orientation)
    width, height = img.size
    if orientation in (5, 6, 7, 8):
        width, height = height, width
    facts |= {"width": width, "height": height, "orientation": orientation}
    taken = None
    for source, tag in (
        (sub, ExifTags.Base.DateTimeOriginal),
        (sub, ExifTags.Base.DateTimeDigitized),
        (exif, ExifTags.Base.DateTime),
    ):
        taken = exif_time(source.get(tag))
        if taken:
            break
    if taken:
        facts["taken"] = taken.isoformat()
        facts["taken_offset"] = tag_text(sub.get(ExifTags.Base.OffsetTimeOriginal))
    make, model = tag_text(exif.get(ExifTags.Base.Make)), tag_text(exif.get(ExifTags.Base.Model))
    facts |= {"camera_make": make, "camera_model": model, "camera": camera_name(make, model)}
    facts["lens"] = tag_text(sub.get(ExifTags.Base.LensModel))
    facts["software"] = tag_text(exif.get(ExifTags.Base.Software))
    gps = _safe_ifd(exif, ExifTags.IFD.GPSInfo)
    lat = _degrees(gps.get(ExifTags.GPS.GPSLatitude), gps.get(ExifTags.GPS.GPSLatitudeRef))
    lon = _degrees(gps.get(ExifTags.GPS.GPSLongitude), gps.get(ExifTags.GPS.GPSLongitudeRef))
    if lat is not None and lon is not None and abs(lat) <= 90 and abs(lon) <= 180 and (lat, lon) != (0.0, 0.0):
        facts |= {"gps_lat": lat, "gps_lon": lon}
        try:
            alt = float(gps[ExifTags.GPS.GPSAltitude])
            if math.isfinite(alt):
                facts["gps_alt"] = round(-alt if gps.get(ExifTags.GPS.GPSAltitudeRef) in (1, b"\x01") else alt, 1)
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            pass
    description = tag_text(exif.get(ExifTags.Base.ImageDescription))
    if not description:
        chunks = getattr(img, "text", None) or {}  # PNG tEXt/iTXt
        description = next((tag_text(chunks[k]) for k in ("Description", "Title", "Comment") if k in chunks), None)
    facts["description"] = description[:500] if description else None
    frames = getattr(img, "n_frames", 1)
    facts["frames"] = frames if frames and frames > 1 else None
    return {k: v for k, v in facts.items() if v is not None}


def _safe_ifd(exif: Image.Exif, ifd: int) -> Any:
    try:
        return exif.get_ifd(ifd)
    except Exception:
        return {}


def _image_summary(facts: dict[str, Any]) -> str:
    head = "Photo"
    if "taken" in facts:
        head += f" taken {datetime.fromisoformat(facts['taken']):%Y-%m-%d %H:%M}"
    if "camera" in facts:
        head += f" with {facts['camera']}"
    if "gps_lat" in facts:
        head += f" at {place_text(facts['gps_lat'], facts['gps_lon'])}"
    if head == "Photo":
        head = f"{facts.get('format') or 'Image'} image"
    text = f"{head}; {facts['width']}x{facts['height']} px"
    if "description" in facts:
        text += f"; {facts['description']}"
    return text


_heif_registered = False


def _register_heif() -> bool:
    global _heif_registered
    if not _heif_registered and PILLOW_HEIF.available():
        try:
            import pillow_heif

            pillow_heif.register_heif_opener()
            _heif_registered = True
        except Exception:
            return False
    return _heif_registered


def _open_image(path: Path) -> Image.Image:
    """Open and fully decode an image, or raise `ReadError` (truncated, corrupt, unknown, too large)."""
    try:
        with Image.open(path) as probe:
            probe.verify()
        img = Image.open(path)
        img.load()
        return img
    except Image.DecompressionBombError as exc:
        raise ReadError(f"image too large to decode safely: {exc}") from None
    except Image.UnidentifiedImageError:
        raise ReadError("not a readable image (unknown or corrupt format)") from None
    except (OSError, SyntaxError, ValueError, EOFError, IndexError, struct.error) as exc:
        raise ReadError(f"corrupt or truncated image: {exc}") from None


@register("reader", "image")
class ImageReader:
    """Photos and pictures: a metadata segment (size, EXIF time, camera, GPS) and OCR text blocks."""

    name: ClassVar[str] = "image"
    extensions: ClassVar[tuple[str, ...]] = ("jpg", "jpeg", "png", "heic", "heif", "gif", "bmp", "tif", "tiff", "webp")
    parts: ClassVar[tuple[Part, ...]] = (TESSERACT, PILLOW_HEIF)

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        heif = _register_heif()
        if ctx.info.type in ("heic", "heif") and not heif:
            ctx.note(f"HEIC/HEIF not decoded: pillow-heif not installed ({PILLOW_HEIF.install})")
            return []
        img = _open_image(path)
        try:
            facts = image_facts(img)
            segments = [ctx.segment(_image_summary(facts), source="metadata", **facts)]
            if ctx.options.ocr:
                missing = ocr_missing()
                if missing:
                    ctx.note(missing)
                else:
                    try:
                        shown = ImageOps.exif_transpose(img)
                    except Exception:  # an odd orientation tag: read the image as stored
                        shown = img
                    for i, block in enumerate(ocr_or_note(shown, ctx, "the image") or []):
                        segments.append(
                            ctx.segment(
                                block.text,
                                RegionLocator(box=block.box, box_units="px"),
                                source="ocr",
                                block=i + 1,
                                confidence=block.confidence,
                                lines=block.lines,
                                words=block.words,
                            )
                        )
            return segments
        finally:
            img.close()
