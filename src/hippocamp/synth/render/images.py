"""Pictures with EXIF (receipt, sign, whiteboard, screenshot, photo), each saying where its keyed lines landed.

A key's locator is the pixel box around its lines (``{"unit": "region", "position": {"bbox": [x0, y0,
x1, y1], "box_units": "px"}}``, origin top-left, a few pixels of padding); the text is the key's lines
joined by a space (a tab, which splits a receipt or screen row into a left and a right-aligned column,
counts as a space).
"""

from __future__ import annotations

import colorsys
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import ExifTags, Image, ImageDraw
from PIL.TiffImagePlugin import IFDRational

from hippocamp.synth.render import Exif, Line, Placed, Placements
from hippocamp.synth.render.keys import clean, key_runs
from hippocamp.synth.render.layout import STYLE_SCALE, draw_rows, layout_lines

__all__ = ["IMAGE_KINDS", "render_image"]

#: kinds of picture `render_image` draws
IMAGE_KINDS = ("receipt", "sign", "whiteboard", "screenshot", "photo")

_PAD = 6  # pixels around a key's box
_JPEG_QUALITY = 92


def _region_placements(
    lines: Sequence[Line], boxes: dict[int, tuple[int, int, int, int]], size: tuple[int, int]
) -> Placements:
    """One region locator per key: the union of its lines' boxes, padded and kept inside the image."""
    placements: Placements = {}
    for key, (first, last) in key_runs([[line.key] for line in lines], "lines").items():
        drawn = [boxes[i] for i in range(first, last + 1) if i in boxes]
        if not drawn:
            raise ValueError(f"key {key!r} marks only empty lines")
        box = [
            max(0, min(b[0] for b in drawn) - _PAD),
            max(0, min(b[1] for b in drawn) - _PAD),
            min(size[0], max(b[2] for b in drawn) + _PAD),
            min(size[1], max(b[3] for b in drawn) + _PAD),
        ]
        text = " ".join(clean(lines[i].text.replace("\t", " ")) for i in range(first, last + 1))
        placements[key] = Placed({"unit": "region", "position": {"bbox": box, "box_units": "px"}}, text)
    return placements


def _hsv(h: float, s: float, v: float) -> tuple[int, int, int]:
    r, g, b = colorsys.hsv_to_rgb(h % 1.0, s, v)
    return round(r * 255), round(g * 255), round(b * 255)


def _gradient(size: tuple[int, int], top: tuple[int, int, int], bottom: tuple[int, int, int]) -> Image.Image:
    """A vertical gradient from ``top`` to ``bottom``."""
    column = Image.new("RGB", (1, 256))
    column.putdata([tuple(round(a + (b - a) * i / 255) for a, b in zip(top, bottom, strict=True)) for i in range(256)])
    return column.resize(size, Image.BILINEAR)


def _grain(img: Image.Image, rng: random.Random, amount: float = 0.05) -> Image.Image:
    """Blend in a little seeded grey noise (a camera's grain), never enough to trouble OCR."""
    noise = Image.frombytes("L", img.size, rng.randbytes(img.width * img.height)).convert("RGB")
    return Image.blend(img, noise, amount)


def _fit(kind: str, size: tuple[int, int] | None, default: tuple[int, int], needed: int) -> tuple[int, int]:
    """The image size: ``size`` if the content fits it, else the default grown to the content."""
    if size is None:
        return default[0], max(default[1], needed)
    if needed > size[1]:
        raise ValueError(f"the lines need {needed} px of height but the {kind} is {size[0]}x{size[1]} px")
    return size


def _receipt(lines: Sequence[Line], size: tuple[int, int] | None, rng: random.Random) -> tuple[Image.Image, dict]:
    width = size[0] if size else 520
    margin, inner, body = 28, 26, 22
    rows, height = layout_lines(lines, body, width - 2 * (margin + inner))
    w, h = _fit("receipt", size, (width, 0), height + 2 * (margin + inner) + 30)
    table = _hsv(rng.uniform(0.05, 0.12), rng.uniform(0.35, 0.55), rng.uniform(0.35, 0.55))
    img = _gradient((w, h), table, tuple(round(c * 0.8) for c in table))  # type: ignore[arg-type]
    draw = ImageDraw.Draw(img)
    paper = (252, 251, 246)
    bottom = h - margin
    teeth = [(x, bottom - (6 if (x // 12) % 2 else 0)) for x in range(margin, w - margin + 1, 12)]
    draw.polygon([(margin, margin), (w - margin, margin), (w - margin, bottom), *reversed(teeth)], fill=paper)
    boxes = draw_rows(
        draw, rows, (margin + inner, margin + inner), w - 2 * (margin + inner), (28, 28, 30), ("title",), lines
    )
    return img, boxes


_SIGN_COLOURS = [
    ((24, 52, 96), (250, 246, 232)),
    ((20, 84, 56), (255, 255, 255)),
    ((120, 24, 30), (255, 246, 230)),
    ((246, 204, 60), (20, 20, 24)),
    ((236, 236, 228), (30, 36, 60)),
]


def _sign(lines: Sequence[Line], size: tuple[int, int] | None, rng: random.Random) -> tuple[Image.Image, dict]:
    width = size[0] if size else 960
    border, body = 48, 42
    rows, height = layout_lines(lines, body, width - 2 * border - 40)
    w, h = _fit("sign", size, (width, 540), height + 2 * border + 60)
    board, ink = rng.choice(_SIGN_COLOURS)
    wall = _hsv(rng.uniform(0, 1), rng.uniform(0.05, 0.2), rng.uniform(0.55, 0.75))
    img = Image.new("RGB", (w, h), wall)
    draw = ImageDraw.Draw(img)
    draw.rounded_rectangle((16, 16, w - 17, h - 17), radius=18, fill=board)
    draw.rounded_rectangle((30, 30, w - 31, h - 31), radius=12, outline=ink, width=3)
    top = (h - height) // 2
    boxes = draw_rows(draw, rows, (border + 20, top), w - 2 * border - 40, ink, tuple(STYLE_SCALE), lines)
    return img, boxes


_MARKERS = [(24, 40, 140), (28, 28, 30), (150, 24, 24), (20, 110, 52)]


def _whiteboard(lines: Sequence[Line], size: tuple[int, int] | None, rng: random.Random) -> tuple[Image.Image, dict]:
    width = size[0] if size else 1024
    frame, inner, body = 18, 44, 32
    rows, height = layout_lines(lines, body, width - 2 * (frame + inner))
    w, h = _fit("whiteboard", size, (width, 768), height + 2 * (frame + inner) + 30)
    img = Image.new("RGB", (w, h), (168, 172, 178))
    draw = ImageDraw.Draw(img)
    draw.rectangle((frame, frame, w - frame - 1, h - frame - 1), fill=(244, 245, 247))
    for _ in range(rng.randint(2, 5)):  # faint smudges of old writing
        x, y = rng.randrange(frame, w - frame), rng.randrange(frame, h - frame)
        rx, ry = rng.randint(40, 160), rng.randint(10, 40)
        draw.ellipse((x - rx, y - ry, x + rx, y + ry), fill=(234, 236, 239))
    draw.rectangle((frame, frame, w - frame - 1, h - frame - 1), outline=(120, 124, 130), width=2)
    draw.rectangle((w // 3, h - frame, 2 * w // 3, h - 4), fill=(140, 144, 150))  # marker tray
    first = rng.randrange(len(_MARKERS))
    heads = {i for i, line in enumerate(lines) if line.style in ("title", "heading")}
    colours = {i: _MARKERS[(first + (i in heads)) % len(_MARKERS)] for i in range(len(lines))}
    boxes = draw_rows(draw, rows, (frame + inner, frame + inner), w - 2 * (frame + inner), colours.get, (), lines)
    return img, boxes


def _screenshot(lines: Sequence[Line], size: tuple[int, int] | None, rng: random.Random) -> tuple[Image.Image, dict]:
    width = size[0] if size else 540
    side, body, status = 28, 26, 44
    header = [line for line in lines[:1] if line.style == "title"]
    rest = lines[len(header) :]
    head_rows, head_h = layout_lines(header, 22, width - 2 * side)
    row_gap = 2 * round(body * 0.6)
    laid = [layout_lines([line], body, width - 2 * side) for line in rest]
    bar = max(72, head_h + 36) if header else 20
    needed = status + bar + sum(h + row_gap for _, h in laid) + 40
    w, h = _fit("screenshot", size, (width, 960), needed)
    accent = _hsv(rng.uniform(0, 1), rng.uniform(0.55, 0.8), rng.uniform(0.45, 0.7))
    img = Image.new("RGB", (w, h), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    draw.rectangle((0, 0, w, status - 1), fill=tuple(round(c * 0.8) for c in accent))
    draw.rectangle((w - 64, 14, w - 28, 30), outline=(255, 255, 255), width=2)  # battery
    draw.rectangle((w - 62, 16, w - 62 + rng.randint(12, 32), 28), fill=(255, 255, 255))
    for i in range(4):  # signal bars
        draw.rectangle((20 + 8 * i, 30 - 4 * (i + 1), 25 + 8 * i, 30), fill=(255, 255, 255))
    boxes: dict[int, tuple[int, int, int, int]] = {}
    if header:
        draw.rectangle((0, status, w, status + bar), fill=accent)
        boxes |= draw_rows(draw, head_rows, (side, status + (bar - head_h) // 2), w - 2 * side, "white", (), header)
    y = status + bar + row_gap // 2
    for i, (rows, height) in enumerate(laid):
        found = draw_rows(draw, rows, (side, y), w - 2 * side, (32, 33, 36), (), [rest[i]])
        boxes |= {len(header) + i: box for box in found.values()}
        y += height + row_gap
        draw.line((side, y - row_gap // 2, w - side, y - row_gap // 2), fill=(226, 228, 232), width=1)
    return img, boxes


def _photo(lines: Sequence[Line], size: tuple[int, int] | None, rng: random.Random) -> tuple[Image.Image, dict]:
    w, h = size or (1024, 768)
    hue = rng.uniform(0.52, 0.66)
    img = _gradient((w, h), _hsv(hue, 0.55, 0.95), _hsv(hue + 0.05, 0.25, 1.0))
    draw = ImageDraw.Draw(img)
    sun = (rng.randrange(w // 8, 7 * w // 8), rng.randrange(h // 10, h // 3), rng.randint(h // 20, h // 10))
    draw.ellipse((sun[0] - sun[2], sun[1] - sun[2], sun[0] + sun[2], sun[1] + sun[2]), fill=(255, 236, 170))
    horizon = rng.randrange(h // 2, 2 * h // 3)
    for layer in range(3):  # hills, far to near
        base = horizon + layer * h // 12
        points = [(0, h)]
        for x in range(0, w + 80, 80):
            points.append((x, base - rng.randint(0, h // 8)))
        points.append((w, h))
        draw.polygon(points, fill=_hsv(rng.uniform(0.22, 0.36), 0.5, 0.55 - 0.12 * layer))
    for _ in range(rng.randint(3, 9)):  # trees
        x, y = rng.randrange(0, w), rng.randrange(horizon, h)
        r = rng.randint(h // 40, h // 14)
        draw.rectangle((x - r // 5, y, x + r // 5, y + 2 * r), fill=(92, 64, 40))
        draw.ellipse((x - r, y - 2 * r, x + r, y + r // 2), fill=_hsv(rng.uniform(0.25, 0.38), 0.6, 0.4))
    boxes: dict[int, tuple[int, int, int, int]] = {}
    if lines:  # text only on a placard standing in the scene
        rows, height = layout_lines(lines, 30, w // 2 - 48)
        top, left = max(8, h - height - 96), w // 4
        if height + 48 > h - 16:
            raise ValueError(f"the lines need {height + 48} px of height but the photo is {w}x{h} px")
        draw.rectangle((left, top, left + w // 2, top + height + 48), fill=(248, 246, 238), outline=(60, 60, 60))
        boxes = draw_rows(draw, rows, (left + 24, top + 24), w // 2 - 48, (24, 24, 28), tuple(STYLE_SCALE), lines)
    return img, boxes


_PAINTERS = {
    "receipt": _receipt,
    "sign": _sign,
    "whiteboard": _whiteboard,
    "screenshot": _screenshot,
    "photo": _photo,
}


def _rational(value: float, denominator: int = 10_000) -> IFDRational:
    return IFDRational(round(value * denominator), denominator)


def _dms(value: float) -> tuple[IFDRational, IFDRational, IFDRational]:
    """Decimal degrees as EXIF degrees, minutes, seconds (seconds to 1/10000)."""
    value = abs(value)
    degrees = int(value)
    minutes = int((value - degrees) * 60)
    seconds = (value - degrees - minutes / 60) * 3600
    return IFDRational(degrees, 1), IFDRational(minutes, 1), _rational(seconds)


def _exif_block(exif: Exif) -> Image.Exif:
    """The EXIF a camera would write: make, model, capture time (and offset), GPS position."""
    block = Image.Exif()
    if exif.make:
        block[ExifTags.Base.Make] = exif.make
    if exif.model:
        block[ExifTags.Base.Model] = exif.model
    if exif.time is not None:
        stamp = exif.time.strftime("%Y:%m:%d %H:%M:%S")
        block[ExifTags.Base.DateTime] = stamp
        sub = block.get_ifd(ExifTags.IFD.Exif)
        sub[ExifTags.Base.DateTimeOriginal] = stamp
        sub[ExifTags.Base.DateTimeDigitized] = stamp
        offset = exif.time.utcoffset()
        if offset is not None:
            minutes = round(offset.total_seconds() / 60)
            sign = "-" if minutes < 0 else "+"
            text = f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
            sub[ExifTags.Base.OffsetTime] = text
            sub[ExifTags.Base.OffsetTimeOriginal] = text
    if (exif.lat is None) != (exif.lon is None):
        raise ValueError("EXIF GPS needs both lat and lon")
    if exif.lat is not None and exif.lon is not None:
        if not (abs(exif.lat) <= 90 and abs(exif.lon) <= 180):
            raise ValueError(f"GPS position out of range: {exif.lat}, {exif.lon}")
        gps = block.get_ifd(ExifTags.IFD.GPSInfo)
        gps[ExifTags.GPS.GPSVersionID] = b"\x02\x03\x00\x00"
        gps[ExifTags.GPS.GPSLatitudeRef] = "S" if exif.lat < 0 else "N"
        gps[ExifTags.GPS.GPSLatitude] = _dms(exif.lat)
        gps[ExifTags.GPS.GPSLongitudeRef] = "W" if exif.lon < 0 else "E"
        gps[ExifTags.GPS.GPSLongitude] = _dms(exif.lon)
    return block


def render_image(
    path: str | Path,
    lines: list[Line],
    *,
    kind: str = "receipt",
    size: tuple[int, int] | None = None,
    exif: Exif | None = None,
    seed: int = 0,
) -> Placements:
    """Draw ``lines`` as a picture of ``kind`` (see `IMAGE_KINDS`) and save it as JPEG or PNG (by suffix).

    Without ``size`` the kind's usual size is used, grown in height when the lines need it; with
    ``size``, lines that do not fit raise `ValueError`. Colours and shapes come from ``seed``; a JPEG
    (except a screenshot) also gets a little seeded grain, as a camera's picture would."""
    if kind not in _PAINTERS:
        raise ValueError(f"unknown image kind {kind!r}; known: {', '.join(IMAGE_KINDS)}")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".jpg", ".jpeg", ".png"):
        raise ValueError(f"render_image writes .jpg, .jpeg or .png, not {path.name!r}")
    if size is not None and (size[0] < 64 or size[1] < 64):
        raise ValueError(f"image size too small: {size}")
    key_runs([[line.key] for line in lines], "lines")
    rng = random.Random(f"{kind}:{seed}")
    img, boxes = _PAINTERS[kind](lines, size, rng)
    if suffix != ".png" and kind != "screenshot":  # a camera's picture: a little grain
        img = _grain(img, rng, 0.06 if kind == "photo" else 0.04)
    placements = _region_placements(lines, boxes, img.size)
    params: dict[str, Any] = {}
    if exif is not None:
        params["exif"] = _exif_block(exif)
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".png":
        img.save(path, format="PNG", optimize=False, compress_level=9, **params)
    else:
        img.save(path, format="JPEG", quality=_JPEG_QUALITY, subsampling=0, optimize=True, **params)
    return placements
