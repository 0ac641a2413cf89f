"""The video reader: a metadata segment, the audio track's transcript and OCR text of sampled frames.

Every video gets its metadata segment: duration, size as displayed, codecs, recording time, place
and camera from container tags (ffprobe; without it hippocamp's own MP4/MOV probing,
`hippocamp.perceive.avprobe`). ffmpeg extracts the audio track for speech recognition
(`hippocamp.perceive.asr`) and frames for OCR (`hippocamp.perceive.ocr`): one segment per sampled
frame with text (`TimeRange` ``(t, t)``; a run of frames showing the same text becomes one segment
``(first, last)``), the boxes in ``meta``. At most `MAX_FRAMES` frames are read per file (the interval
widens for long videos). A missing part never fails a file: it keeps its metadata and is noted.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from PIL import Image

from hippocamp.perceive.asr import ASR_PARTS, asr_missing, transcript_segments
from hippocamp.perceive.audio import clock, tag_summary
from hippocamp.perceive.avprobe import FFPROBE, ffprobe, probe_facts, probe_media
from hippocamp.perceive.base import Part, ReadContext, ReadError
from hippocamp.perceive.image import camera_name, exif_time, place_text
from hippocamp.perceive.ocr import TESSERACT, ocr_missing, ocr_or_note
from hippocamp.registry import register
from hippocamp.schema.locators import TimeRange
from hippocamp.schema.segment import Segment

__all__ = ["FFMPEG", "MAX_FRAMES", "VideoReader"]

FFMPEG = Part("ffmpeg", "program", "video: audio track for the transcript, frames for OCR", "apt-get install ffmpeg")

#: at most this many video frames are OCRed per file (the interval widens for long videos)
MAX_FRAMES = 60
_FFMPEG_TIMEOUT = 900
_ISO6709 = re.compile(r"([+-]\d+(?:\.\d+)?)([+-]\d+(?:\.\d+)?)")


def _video_place_time(tags: dict[str, str]) -> dict[str, Any]:
    """Recording time, place and camera from container tags (phones write them)."""
    out: dict[str, Any] = {}
    when = tags.get("com.apple.quicktime.creationdate") or tags.get("date") or tags.get("creation_time")
    stamp = exif_time(when) if when else None
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
    camera = camera_name(
        tags.get("com.apple.quicktime.make") or tags.get("make"),
        tags.get("com.apple.quicktime.model") or tags.get("model"),
    )
    if camera:
        out["camera"] = camera
    return out


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
    parts: ClassVar[tuple[Part, ...]] = (FFMPEG, FFPROBE, *ASR_PARTS, TESSERACT)

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
        if FFPROBE.available():
            facts = probe_facts(ffprobe(path))  # ReadError for a corrupt file
            if not facts.get("has_video") and not facts.get("has_audio"):
                raise ReadError("not a readable video: no video or audio stream")
        else:
            ctx.note(f"video streams unread: ffprobe not installed ({FFPROBE.install})")
            facts = probe_media(path) or {}  # MP4/MOV headers; ReadError for a corrupt file
        facts |= _video_place_time(facts.get("tags", {}))
        return facts

    @staticmethod
    def _summary(facts: dict[str, Any]) -> str:
        text = "Video"
        if facts.get("duration"):
            text += f", {clock(facts['duration'])} long ({facts['duration']:.1f} s)"
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
            text += f" at {place_text(facts['gps_lat'], facts['gps_lon'])}"
        return text + tag_summary(facts.get("tags", {}))

    @staticmethod
    def _transcript(path: Path, tmp: Path, ctx: ReadContext, duration: float | None) -> list[Segment]:
        if not ctx.options.asr:
            return []
        audio = path
        if FFMPEG.available() and asr_missing(ctx.options.asr_model) is None:
            wav = tmp / "audio.wav"
            try:
                _run_ffmpeg(["-i", str(path), "-vn", "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", str(wav)])
                audio = wav
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                ctx.note(f"audio track not extracted: {exc}")
                return []
        # without ffmpeg faster-whisper decodes the container itself (PyAV)
        return transcript_segments(audio, ctx, duration, what="audio track") or []

    @staticmethod
    def _frames(
        path: Path, tmp: Path, ctx: ReadContext, duration: float | None, facts: dict[str, Any]
    ) -> list[Segment]:
        if not FFMPEG.available():
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
                blocks = ocr_or_note(img, ctx, f"the frame at {t:.1f} s")
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
