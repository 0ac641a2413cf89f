"""Media renderers: pictures with EXIF (receipt, sign, whiteboard, screenshot, photo), speech
(espeak-ng) and narrated slideshow videos (ffmpeg), each saying where its keyed content landed.

* `render_image`: a key's locator is the pixel box around its lines
  (``{"unit": "region", "position": {"bbox": [x0, y0, x1, y1], "box_units": "px"}}``, origin top-left,
  a few pixels of padding); the text is the key's lines joined by a space (a tab, which splits a
  receipt or screen row into a left and a right-aligned column, counts as a space).
* `render_speech`: the locator is the time range of the key's utterances
  (``{"unit": "timestamp", "position": {"start": S, "end": E}}``, seconds, widened to 0.01 s).
* `render_video`: a scene key (and a key of a line on screen) gets the scene's time range.

Text is drawn with Pillow's bundled font (``ImageFont.load_default(size=...)``, basic layout, so the
pixels do not depend on libraqm) large enough for tesseract. Audio and video are encoded with
bit-exact ffmpeg flags, one thread, no metadata; the x264 version banner (an SEI unit) is dropped.
"""

from __future__ import annotations

import array
import colorsys
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import wave
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from PIL import ExifTags, Image, ImageColor, ImageDraw, ImageFont
from PIL.TiffImagePlugin import IFDRational

from hippocamp.synth.render import Exif, Line, Placed, Placements, Scene, Utterance

__all__ = [
    "IMAGE_KINDS",
    "SAMPLE_RATE",
    "ProgramMissingError",
    "render_image",
    "render_speech",
    "render_video",
]

#: kinds of picture `render_image` draws
IMAGE_KINDS = ("receipt", "sign", "whiteboard", "screenshot", "photo")
#: sample rate of espeak-ng's output and of every rendered sound track
SAMPLE_RATE = 22050

_PAD = 6  # pixels around a key's box
_JPEG_QUALITY = 92
_LEAD = 0.3  # seconds of silence before the first utterance
_SCENE_LEAD = 0.25  # seconds from a scene's start to its narration
_SCENE_TAIL = 0.4  # seconds of silence after a scene's narration
_TRIM_LEVEL = 100  # |sample| at or below this counts as silence when trimming espeak's output
_TRIM_MARGIN = 0.02  # seconds kept around the sound when trimming
_AUDIO_BITRATE = "64k"
_TIMEOUT = 600
_BITEXACT = ["-fflags", "+bitexact", "-flags:a", "+bitexact", "-map_metadata", "-1", "-threads", "1"]
_INSTALL = {"espeak-ng": "apt-get install espeak-ng", "ffmpeg": "apt-get install ffmpeg"}


class ProgramMissingError(RuntimeError):
    """A program a renderer needs (espeak-ng, ffmpeg) is not installed."""


def _program(name: str, purpose: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        raise ProgramMissingError(f"{name} is needed to render {purpose} but is not installed ({_INSTALL[name]})")
    return exe


def _run(command: list[str], what: str, stdin: bytes | None = None) -> bytes:
    try:
        out = subprocess.run(command, input=stdin, capture_output=True, timeout=_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{what} took longer than {_TIMEOUT} s") from None
    if out.returncode != 0:
        tail = out.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit code {out.returncode}"]
        raise RuntimeError(f"{what} failed: {tail[0]}")
    return out.stdout


def _runs(keys: Sequence[Iterable[str | None]], what: str) -> dict[str, tuple[int, int]]:
    """First and last position of each key over a sequence of key sets; a key must mark one unbroken run."""
    seen: dict[str, list[int]] = {}
    for i, group in enumerate(keys):
        for key in dict.fromkeys(k for k in group if k):
            seen.setdefault(key, []).append(i)
    for key, where in seen.items():
        if where[-1] - where[0] + 1 != len(where):
            raise ValueError(f"key {key!r} marks {what} that are not consecutive (positions {where})")
    return {key: (where[0], where[-1]) for key, where in seen.items()}


def _clean(text: str) -> str:
    return " ".join(text.split())


# -- text layout -----------------------------------------------------------------------------------
@lru_cache(maxsize=64)
def _font(size: int) -> ImageFont.FreeTypeFont:
    font = ImageFont.load_default(size=size)
    if not isinstance(font, ImageFont.FreeTypeFont):
        raise RuntimeError("Pillow was built without FreeType: load_default(size=...) cannot scale text")
    return font.font_variant(layout_engine=ImageFont.Layout.BASIC)


_STYLE_SCALE = {"title": 1.45, "heading": 1.2, "body": 1.0, "small": 0.82, "bullet": 1.0}


@dataclass(frozen=True)
class _Row:
    """One drawn row of a line (long lines wrap onto several rows); ``y`` is relative to the block."""

    index: int
    text: str
    size: int
    y: int
    indent: int
    first: bool


def _wrap(text: str, font: ImageFont.FreeTypeFont, width: int) -> list[str]:
    """Greedy word wrap to ``width`` pixels; a word wider than the width is cut by characters."""
    if "\t" in text:  # a two-column row stays one row
        return [text]
    rows: list[str] = []
    current = ""
    for word in text.split():
        while font.getlength(word) > width and len(word) > 1:
            cut = max(1, next((i for i in range(len(word), 0, -1) if font.getlength(word[:i]) <= width), 1))
            if current:
                rows.append(current)
                current = ""
            rows.append(word[:cut])
            word = word[cut:]
        candidate = f"{current} {word}" if current else word
        if current and font.getlength(candidate) > width:
            rows.append(current)
            current = word
        else:
            current = candidate
    if current or not rows:
        rows.append(current)
    return rows


def _layout(lines: Sequence[Line], body: int, width: int, spacing: float = 0.42) -> tuple[list[_Row], int]:
    """Rows of ``lines`` (body text ``body`` px) wrapped to ``width``; returns them and the block's height."""
    rows: list[_Row] = []
    y = 0
    for i, line in enumerate(lines):
        if line.style not in _STYLE_SCALE:
            raise ValueError(f"unknown line style {line.style!r}; known: {', '.join(_STYLE_SCALE)}")
        size = max(12, round(body * _STYLE_SCALE[line.style]))
        indent = round(size * 1.1) if line.style == "bullet" else 0
        if line.style in ("title", "heading") and i:
            y += round(size * 0.35)
        for j, text in enumerate(_wrap(line.text.strip(), _font(size), width - indent)):
            rows.append(_Row(i, text, size, y, indent, j == 0))
            y += round(size * (1 + spacing))
        if line.style == "title":
            y += round(size * 0.25)
    return rows, max(0, y - round(body * spacing))


def _draw_rows(
    draw: ImageDraw.ImageDraw,
    rows: list[_Row],
    origin: tuple[int, int],
    width: int,
    fill: Any,
    centered: Iterable[str],
    lines: Sequence[Line],
) -> dict[int, tuple[int, int, int, int]]:
    """Draw the rows at ``origin`` (left, top) in a column ``width`` wide; the ink box of each line."""
    center = set(centered)
    boxes: dict[int, tuple[int, int, int, int]] = {}
    for row in rows:
        font = _font(row.size)
        colour = fill(row.index) if callable(fill) else fill
        left, _, right = row.text.partition("\t")
        x = origin[0] + row.indent
        y = origin[1] + row.y
        if lines[row.index].style in center and not right:
            x = origin[0] + round((width - font.getlength(left)) / 2)
        parts = [((x, y), left.strip())]
        if right.strip():
            parts.append(((origin[0] + width - round(font.getlength(right.strip())), y), right.strip()))
        for xy, text in parts:
            if not text:
                continue
            draw.text(xy, text, font=font, fill=colour)
            box = draw.textbbox(xy, text, font=font)
            old = boxes.get(row.index, box)
            boxes[row.index] = (min(old[0], box[0]), min(old[1], box[1]), max(old[2], box[2]), max(old[3], box[3]))
        if lines[row.index].style == "bullet" and row.first:
            r = max(3, row.size // 7)
            cx, cy = origin[0] + row.indent // 2, y + round(row.size * 0.55)
            draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=colour)
    return boxes


def _region_placements(
    lines: Sequence[Line], boxes: dict[int, tuple[int, int, int, int]], size: tuple[int, int]
) -> Placements:
    """One region locator per key: the union of its lines' boxes, padded and kept inside the image."""
    placements: Placements = {}
    for key, (first, last) in _runs([[line.key] for line in lines], "lines").items():
        drawn = [boxes[i] for i in range(first, last + 1) if i in boxes]
        if not drawn:
            raise ValueError(f"key {key!r} marks only empty lines")
        box = [
            max(0, min(b[0] for b in drawn) - _PAD),
            max(0, min(b[1] for b in drawn) - _PAD),
            min(size[0], max(b[2] for b in drawn) + _PAD),
            min(size[1], max(b[3] for b in drawn) + _PAD),
        ]
        text = " ".join(_clean(lines[i].text.replace("\t", " ")) for i in range(first, last + 1))
        placements[key] = Placed({"unit": "region", "position": {"bbox": box, "box_units": "px"}}, text)
    return placements


# -- pictures --------------------------------------------------------------------------------------
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
    rows, height = _layout(lines, body, width - 2 * (margin + inner))
    w, h = _fit("receipt", size, (width, 0), height + 2 * (margin + inner) + 30)
    table = _hsv(rng.uniform(0.05, 0.12), rng.uniform(0.35, 0.55), rng.uniform(0.35, 0.55))
    img = _gradient((w, h), table, tuple(round(c * 0.8) for c in table))  # type: ignore[arg-type]
    draw = ImageDraw.Draw(img)
    paper = (252, 251, 246)
    bottom = h - margin
    teeth = [(x, bottom - (6 if (x // 12) % 2 else 0)) for x in range(margin, w - margin + 1, 12)]
    draw.polygon([(margin, margin), (w - margin, margin), (w - margin, bottom), *reversed(teeth)], fill=paper)
    boxes = _draw_rows(
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
    rows, height = _layout(lines, body, width - 2 * border - 40)
    w, h = _fit("sign", size, (width, 540), height + 2 * border + 60)
    board, ink = rng.choice(_SIGN_COLOURS)
    wall = _hsv(rng.uniform(0, 1), rng.uniform(0.05, 0.2), rng.uniform(0.55, 0.75))
    img = Image.new("RGB", (w, h), wall)
    draw = ImageDraw.Draw(img)
    draw.rounded_rectangle((16, 16, w - 17, h - 17), radius=18, fill=board)
    draw.rounded_rectangle((30, 30, w - 31, h - 31), radius=12, outline=ink, width=3)
    top = (h - height) // 2
    boxes = _draw_rows(draw, rows, (border + 20, top), w - 2 * border - 40, ink, tuple(_STYLE_SCALE), lines)
    return img, boxes


_MARKERS = [(24, 40, 140), (28, 28, 30), (150, 24, 24), (20, 110, 52)]


def _whiteboard(lines: Sequence[Line], size: tuple[int, int] | None, rng: random.Random) -> tuple[Image.Image, dict]:
    width = size[0] if size else 1024
    frame, inner, body = 18, 44, 32
    rows, height = _layout(lines, body, width - 2 * (frame + inner))
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
    boxes = _draw_rows(draw, rows, (frame + inner, frame + inner), w - 2 * (frame + inner), colours.get, (), lines)
    return img, boxes


def _screenshot(lines: Sequence[Line], size: tuple[int, int] | None, rng: random.Random) -> tuple[Image.Image, dict]:
    width = size[0] if size else 540
    side, body, status = 28, 26, 44
    header = [line for line in lines[:1] if line.style == "title"]
    rest = lines[len(header) :]
    head_rows, head_h = _layout(header, 22, width - 2 * side)
    row_gap = 2 * round(body * 0.6)
    laid = [_layout([line], body, width - 2 * side) for line in rest]
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
        boxes |= _draw_rows(draw, head_rows, (side, status + (bar - head_h) // 2), w - 2 * side, "white", (), header)
    y = status + bar + row_gap // 2
    for i, (rows, height) in enumerate(laid):
        found = _draw_rows(draw, rows, (side, y), w - 2 * side, (32, 33, 36), (), [rest[i]])
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
        rows, height = _layout(lines, 30, w // 2 - 48)
        top, left = max(8, h - height - 96), w // 4
        if height + 48 > h - 16:
            raise ValueError(f"the lines need {height + 48} px of height but the photo is {w}x{h} px")
        draw.rectangle((left, top, left + w // 2, top + height + 48), fill=(248, 246, 238), outline=(60, 60, 60))
        boxes = _draw_rows(draw, rows, (left + 24, top + 24), w // 2 - 48, (24, 24, 28), tuple(_STYLE_SCALE), lines)
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
    _runs([[line.key] for line in lines], "lines")
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


# -- speech ----------------------------------------------------------------------------------------
def _espeak(text: str, voice: str, speed: int, pitch: int) -> array.array:
    """``text`` spoken by espeak-ng: 16-bit mono samples at `SAMPLE_RATE`, silence trimmed at both ends."""
    exe = _program("espeak-ng", "speech")
    with tempfile.TemporaryDirectory(prefix="hippocamp-speech-") as tmp:
        out = Path(tmp) / "say.wav"
        command = [exe, "-v", voice, "-s", str(speed), "-p", str(pitch), "-z", "-b", "1", "--stdin", "-w", str(out)]
        _run(command, "espeak-ng", stdin=_clean(text).encode("utf-8"))
        with wave.open(str(out), "rb") as w:
            if (w.getnchannels(), w.getsampwidth(), w.getframerate()) != (1, 2, SAMPLE_RATE):
                raise RuntimeError(f"espeak-ng wrote unexpected audio: {w.getparams()}")
            samples = array.array("h", w.readframes(w.getnframes()))
    if sys.byteorder == "big":
        samples.byteswap()
    loud = [i for i, v in enumerate(samples) if abs(v) > _TRIM_LEVEL]
    if not loud:
        raise RuntimeError(f"espeak-ng produced no sound for {text!r}")
    margin = round(_TRIM_MARGIN * SAMPLE_RATE)
    return samples[max(0, loud[0] - margin) : min(len(samples), loud[-1] + 1 + margin)]


def _silence(seconds: float) -> array.array:
    return array.array("h", bytes(2 * round(seconds * SAMPLE_RATE)))


def _write_wav(path: Path, samples: array.array) -> None:
    data = samples
    if sys.byteorder == "big":
        data = array.array("h", samples)
        data.byteswap()
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(data.tobytes())


def _timestamp(start: float, end: float) -> dict[str, Any]:
    """A time-range locator widened to whole hundredths of a second."""
    lo = math.floor(start * 100 + 1e-6) / 100
    hi = math.ceil(end * 100 - 1e-6) / 100
    return {"unit": "timestamp", "position": {"start": round(lo, 2), "end": round(max(lo, hi), 2)}}


def _encode_audio(wav: Path, path: Path) -> None:
    """Convert a WAV to the format of ``path``'s suffix (.mp3, .m4a) with fixed, bit-exact settings."""
    suffix = path.suffix.lower()
    codec = {".mp3": ["-c:a", "libmp3lame"], ".m4a": ["-c:a", "aac", "-movflags", "+faststart"]}
    exe = _program("ffmpeg", f"{suffix} audio")
    command = [exe, "-nostdin", "-hide_banner", "-v", "error", "-y", "-i", str(wav), *codec[suffix]]
    command += ["-b:a", _AUDIO_BITRATE, *_BITEXACT, str(path)]
    _run(command, "ffmpeg")


def render_speech(
    path: str | Path, utterances: list[Utterance], *, voice: str = "en-us", speed: int = 150, pitch: int = 50
) -> Placements:
    """Speak ``utterances`` with espeak-ng into one recording (.wav, .mp3 or .m4a by suffix).

    The recording opens with a short silence; each utterance (trimmed of espeak's own silence) is
    followed by its ``pause``. A key's locator spans its utterances' sound, not the pauses."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".wav", ".mp3", ".m4a"):
        raise ValueError(f"render_speech writes .wav, .mp3 or .m4a, not {path.name!r}")
    if not utterances:
        raise ValueError("render_speech needs at least one utterance")
    runs = _runs([[u.key] for u in utterances], "utterances")
    if suffix != ".wav":
        _program("ffmpeg", f"{suffix} audio")
    track = _silence(_LEAD)
    spans: list[tuple[float, float]] = []
    for utterance in utterances:
        if utterance.pause < 0 or not utterance.text.strip():
            raise ValueError(f"an utterance needs text and a pause of at least 0 s: {utterance!r}")
        sound = _espeak(utterance.text, voice, speed, pitch)
        spans.append((len(track) / SAMPLE_RATE, (len(track) + len(sound)) / SAMPLE_RATE))
        track += sound
        track += _silence(utterance.pause)
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".wav":
        _write_wav(path, track)
    else:
        with tempfile.TemporaryDirectory(prefix="hippocamp-speech-") as tmp:
            wav = Path(tmp) / "speech.wav"
            _write_wav(wav, track)
            _encode_audio(wav, path)
    return {
        key: Placed(
            _timestamp(spans[first][0], spans[last][1]),
            " ".join(_clean(u.text) for u in utterances[first : last + 1]),
        )
        for key, (first, last) in runs.items()
    }


# -- video -----------------------------------------------------------------------------------------
@lru_cache(maxsize=4)
def _has_x264(exe: str) -> bool:
    try:
        out = subprocess.run([exe, "-hide_banner", "-encoders"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return any(line.split()[1:2] == ["libx264"] for line in out.stdout.splitlines())


def _video_codec(exe: str) -> list[str]:
    """H.264 (x264, one thread, its version banner dropped) when the build has it, else MPEG-4 part 2."""
    if _has_x264(exe):
        return [
            "-c:v", "libx264", "-preset", "medium", "-tune", "stillimage", "-crf", "20",
            "-x264-params", "threads=1:lookahead-threads=1:sliced-threads=0",
            "-bsf:v", "filter_units=remove_types=6",
        ]  # fmt: skip
    return ["-c:v", "mpeg4", "-q:v", "3"]


def _luma(colour: tuple[int, int, int]) -> float:
    return 0.299 * colour[0] + 0.587 * colour[1] + 0.114 * colour[2]


def _frame(scene: Scene, size: tuple[int, int]) -> Image.Image:
    """A scene's still: its lines centred on its background, light or dark text for contrast."""
    w, h = size
    background = ImageColor.getcolor(scene.background, "RGB")
    ink = (20, 20, 24) if _luma(background) > 140 else (250, 250, 250)  # type: ignore[arg-type]
    img = Image.new("RGB", size, background)
    if scene.lines:
        body = max(16, h // 14)
        rows, height = _layout(scene.lines, body, w - w // 8)
        if height > h - h // 10:
            raise ValueError(f"the lines of a scene need {height} px of height but the video is {w}x{h} px")
        draw = ImageDraw.Draw(img)
        _draw_rows(draw, rows, (w // 16, (h - height) // 2), w - w // 8, ink, tuple(_STYLE_SCALE), scene.lines)
    return img


def render_video(
    path: str | Path,
    scenes: list[Scene],
    *,
    size: tuple[int, int] = (640, 360),
    voice: str = "en-us",
    fps: int = 2,
) -> Placements:
    """A slideshow video (.mp4, .m4v or .mov): each scene a still with its narration spoken from its start.

    A scene lasts ``seconds``, or longer when its narration needs it, rounded up to whole frames.
    A scene key's locator is the scene's time range and its text the scene's lines then its speech;
    a key on a line gets the same time range with the line's text."""
    path = Path(path)
    if path.suffix.lower() not in (".mp4", ".m4v", ".mov"):
        raise ValueError(f"render_video writes .mp4, .m4v or .mov, not {path.name!r}")
    if not scenes:
        raise ValueError("render_video needs at least one scene")
    if fps < 1 or size[0] % 2 or size[1] % 2 or min(size) < 64:
        raise ValueError(f"need fps >= 1 and an even size of at least 64 px, got fps={fps}, size={size}")
    runs = _runs([[s.key, *(line.key for line in s.lines)] for s in scenes], "scenes")
    exe = _program("ffmpeg", "video")
    track = array.array("h")
    bounds: list[tuple[int, int]] = []  # first frame, frame after the last
    frames = 0
    for scene in scenes:
        speech = _espeak(scene.speech, voice, 150, 50) if scene.speech and scene.speech.strip() else None
        need = max(scene.seconds, _SCENE_LEAD + len(speech) / SAMPLE_RATE + _SCENE_TAIL if speech else 0.0)
        if need <= 0:
            raise ValueError(f"a scene must last more than 0 s: {scene!r}")
        count = max(1, math.ceil(need * fps - 1e-9))
        bounds.append((frames, frames + count))
        frames += count
        if speech is not None:
            track += _silence(_SCENE_LEAD)
            track += speech
        track += array.array("h", bytes(2 * (round(frames / fps * SAMPLE_RATE) - len(track))))
    total = frames / fps
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hippocamp-video-") as tmp:
        folder = Path(tmp)
        for i, scene in enumerate(scenes):
            still = folder / f"scene{i}.png"
            _frame(scene, size).save(still, format="PNG", compress_level=1)
            for n in range(*bounds[i]):
                target = folder / f"f{n:06d}.png"
                try:
                    os.link(still, target)
                except OSError:
                    shutil.copyfile(still, target)
        wav = folder / "audio.wav"
        _write_wav(wav, track)
        command = [exe, "-nostdin", "-hide_banner", "-v", "error", "-y", "-framerate", str(fps)]
        command += ["-i", str(folder / "f%06d.png"), "-i", str(wav), "-map", "0:v:0", "-map", "1:a:0"]
        command += [*_video_codec(exe), "-pix_fmt", "yuv420p", "-r", str(fps), "-g", str(10 * fps)]
        command += ["-c:a", "aac", "-b:a", _AUDIO_BITRATE, "-t", f"{total:.6f}", *_BITEXACT]
        command += ["-flags:v", "+bitexact", "-movflags", "+faststart", str(path)]
        _run(command, "ffmpeg")
    placements: Placements = {}
    for key, (first, last) in runs.items():
        texts: list[str] = []
        for scene in scenes[first : last + 1]:
            if scene.key == key:
                texts += [_clean(line.text.replace("\t", " ")) for line in scene.lines]
                texts += [_clean(scene.speech)] if scene.speech and scene.speech.strip() else []
            else:
                texts += [_clean(line.text.replace("\t", " ")) for line in scene.lines if line.key == key]
        locator = _timestamp(bounds[first][0] / fps, bounds[last][1] / fps)
        locator["position"]["end"] = min(locator["position"]["end"], round(total, 2))
        placements[key] = Placed(locator, " ".join(t for t in texts if t))
    return placements
