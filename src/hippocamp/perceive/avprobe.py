"""What an audio or video file holds: duration, container, streams and tags, read without a media library.

`probe_media` reads the headers of the formats hippocamp meets most itself, recognised by their
first bytes: WAV (the stdlib ``wave``), MP3 (`probe_mp3`: frame headers, Xing/VBRI, ID3 tags),
MP4/M4A/MOV (`probe_mp4`: ISO base media boxes) and FLAC and Ogg (`probe_xiph`). It returns None
for any other format, and `ffprobe` (Debian ``ffmpeg``) reads the rest: every stream, rotation,
frame rate and container tags, as `probe_facts` turns its JSON into the same facts. A corrupt or
truncated file raises `ReadError` with the reason; no file makes a probe loop or read without bound.

Facts (keys of the readers' metadata segments): ``duration`` (seconds), ``container``,
``sample_rate``, ``channels``, ``bitrate``, ``codec``, ``has_video``, ``has_audio``, ``width`` and
``height`` (as displayed), ``video_codec``, ``audio_codec``, ``fps`` and ``tags`` (lower-case names:
title, artist, album, date, ...; container bookkeeping left out).
"""

from __future__ import annotations

import json
import math
import shutil
import struct
import subprocess
import wave
from pathlib import Path
from typing import Any

from hippocamp.perceive.base import Part, ReadError, tag_text
from hippocamp.perceive.probe_mp3 import probe_mp3
from hippocamp.perceive.probe_mp4 import TOP_LEVEL, probe_mp4
from hippocamp.perceive.probe_xiph import probe_flac, probe_ogg

__all__ = ["FFPROBE", "ffprobe", "probe_facts", "probe_media", "wave_facts"]

FFPROBE = Part("ffprobe", "program", "duration and streams of video (and odd audio) files", "apt-get install ffmpeg")

#: container bookkeeping, not content
_NOISE_TAGS = frozenset(
    {"major_brand", "minor_version", "compatible_brands", "encoder", "handler_name", "vendor_id", "encoded_by"}
)
_MP3_SUFFIXES = (".mp3", ".mp2", ".mpga")


def probe_media(path: Path) -> dict[str, Any] | None:
    """Facts of an audio or video file from its own headers, or None for a format not read here.

    Raises `ReadError` when the file is of a format read here but corrupt or truncated."""
    with path.open("rb") as fh:
        head = fh.read(12)
        after_id3 = b""
        if head[:3] == b"ID3" and len(head) >= 10:
            fh.seek(10 + ((head[6] & 0x7F) << 21 | (head[7] & 0x7F) << 14 | (head[8] & 0x7F) << 7 | head[9] & 0x7F))
            after_id3 = fh.read(4)
    mpeg_sync = len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0 and head[1] & 0x06  # not ADTS
    try:
        if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
            facts = wave_facts(path)
        elif head[:4] == b"OggS":
            facts = probe_ogg(path)
        elif head[:4] == b"fLaC" or after_id3 == b"fLaC":
            facts = probe_flac(path)
        elif head[4:8] in TOP_LEVEL:
            facts = probe_mp4(path)
        elif head[:3] == b"ID3" or mpeg_sync or path.suffix.lower() in _MP3_SUFFIXES:
            facts = probe_mp3(path)
        else:
            return None
    except (struct.error, IndexError, ValueError, OverflowError, KeyError) as exc:  # a case the parsers missed
        raise ReadError(f"corrupt media file: {type(exc).__name__}: {exc}") from None
    if facts and "tags" in facts:
        facts["tags"] = {k: v for k, v in facts["tags"].items() if k not in _NOISE_TAGS}
        if not facts["tags"]:
            del facts["tags"]
    return facts


def wave_facts(path: Path) -> dict[str, Any] | None:
    """Duration and stream facts of a PCM WAV file (stdlib ``wave``); None for a compressed WAV."""
    try:
        with wave.open(str(path), "rb") as w:
            rate, frames, channels, width = w.getframerate(), w.getnframes(), w.getnchannels(), w.getsampwidth()
    except wave.Error as exc:
        if str(exc).startswith("unknown format"):
            return None  # not PCM (float, ADPCM, MP3 in WAV, or WAVE_FORMAT_EXTENSIBLE before Python 3.12)
        raise ReadError(f"not a readable WAV file: {exc}") from None
    except EOFError:
        raise ReadError("truncated WAV file: its header is cut off") from None
    except (RuntimeError, struct.error, ValueError, OverflowError) as exc:  # chunk sizes that do not fit
        raise ReadError(f"corrupt WAV file: {type(exc).__name__} {exc}".rstrip()) from None
    if rate <= 0:
        raise ReadError("corrupt WAV file: a sample rate of 0")
    # the smallest header is 44 bytes (RIFF, fmt and data chunk headers): what the data chunk
    # declares must fit in the file
    declared = frames * channels * width
    size = path.stat().st_size
    if declared + 44 > size:
        raise ReadError(f"truncated WAV file: its data chunk declares {declared} bytes, the file holds {size}")
    return {
        "duration": frames / rate,
        "container": "WAVE",
        "sample_rate": rate,
        "channels": channels,
        "bitrate": rate * channels * width * 8,
    }


def _tag_value(value: Any) -> str | None:
    if isinstance(value, list | tuple):
        texts = [t for t in (_tag_value(v) for v in value) if t]
        return "; ".join(texts) or None
    if isinstance(value, bytes | bytearray):
        return None
    text = tag_text(value)
    return text[:500] if text else None


def ffprobe(path: Path) -> dict[str, Any]:
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


def probe_facts(probe: dict[str, Any]) -> dict[str, Any]:
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
