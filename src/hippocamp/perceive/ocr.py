"""OCR with tesseract: text blocks of an image with their pixel boxes, words and confidences.

tesseract (Debian ``tesseract-ocr tesseract-ocr-eng``) is run as a program, one thread by default.
Used by the image reader (text blocks of photos and scans) and the video reader (sampled frames).

Environment: ``HIPPOCAMP_OCR_THREADS`` (threads of tesseract, default 1), ``HIPPOCAMP_OCR_LANGS``
(tesseract languages, default ``eng``; e.g. ``eng+nld`` with ``tesseract-ocr-nld`` installed).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from PIL import Image

from hippocamp.perceive.base import Part, ReadContext

__all__ = [
    "OCR_MAX_SIDE",
    "OCR_MIN_CONFIDENCE",
    "OCR_TIMEOUT",
    "TESSERACT",
    "OcrBlock",
    "ocr_image",
    "ocr_missing",
    "ocr_or_note",
]

TESSERACT = Part(
    "tesseract",
    "program",
    "OCR of images and video frames (word boxes)",
    "apt-get install tesseract-ocr tesseract-ocr-eng",
)

#: images are downscaled to this longest side before OCR (boxes are mapped back)
OCR_MAX_SIDE = 3000
#: OCR blocks whose mean word confidence is below this are dropped (photo texture read as text)
OCR_MIN_CONFIDENCE = 40.0
OCR_TIMEOUT = 180


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
    if not TESSERACT.available():
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


def ocr_or_note(img: Image.Image, ctx: ReadContext, what: str) -> list[OcrBlock] | None:
    """`ocr_image`, or None with a note when tesseract fails on it (``what``: "the image", "the frame at 3.0 s")."""
    try:
        return ocr_image(img)
    except (RuntimeError, OSError) as exc:  # a timeout, a crash of the program
        ctx.note(f"OCR of {what} failed: {str(exc)[:200]}")
    return None
