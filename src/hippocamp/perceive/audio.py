"""The audio reader: a metadata segment (duration, stream facts, tags) and transcript chunks with start
and end seconds.

Every audio file gets its metadata segment whatever is installed: the facts come from hippocamp's own
header probing (`hippocamp.perceive.avprobe`: WAV, MP3, M4A, FLAC, Ogg), else from ffprobe. Speech
recognition (`hippocamp.perceive.asr`, ``pip install 'hippocamp[asr]'``) adds transcript segments
with `TimeRange` locators. A missing part, or speech recognition switched off in `PerceiveOptions`,
keeps the metadata segment and is noted; a file nothing can read raises `ReadError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from hippocamp.perceive.asr import ASR_PARTS, transcript_segments
from hippocamp.perceive.avprobe import FFPROBE, ffprobe, probe_facts, probe_media
from hippocamp.perceive.base import Part, ReadContext, ReadError
from hippocamp.registry import register
from hippocamp.schema.segment import Segment

__all__ = ["AudioReader", "clock", "tag_summary"]

#: tags shown in the text of a metadata segment (all of them are in its ``meta``)
TEXT_TAGS = ("title", "artist", "album", "albumartist", "date", "genre", "composer", "comment", "description")


def clock(seconds: float) -> str:
    """``m:ss`` or ``h:mm:ss``."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def tag_summary(tags: dict[str, str]) -> str:
    """``"; title: ...; artist: ..."`` for the tags worth showing."""
    shown = [(k, tags[k]) for k in TEXT_TAGS if k in tags]
    return "".join(f"; {k}: {v}" for k, v in shown)


@register("reader", "audio")
class AudioReader:
    """Audio: a metadata segment (duration, tags) and transcript chunks with start/end seconds."""

    name: ClassVar[str] = "audio"
    extensions: ClassVar[tuple[str, ...]] = (
        "mp3", "m4a", "wav", "flac", "ogg", "oga", "opus", "aac", "aiff", "aif", "wma", "amr",
    )  # fmt: skip
    parts: ClassVar[tuple[Part, ...]] = (*ASR_PARTS, FFPROBE)

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        facts, problems = self._facts(path)
        segments: list[Segment] = []
        if facts:
            segments.append(ctx.segment(self._summary(facts), source="metadata", **facts))
        transcript = transcript_segments(path, ctx, facts.get("duration"))
        if not facts:
            if transcript is None:
                raise ReadError("not a readable audio file: " + ("; ".join(problems) or "unknown format"))
            ctx.note("audio metadata unread: " + ("; ".join(problems) or "unknown format"))
        segments.extend(transcript or [])
        return segments

    @staticmethod
    def _facts(path: Path) -> tuple[dict[str, Any], list[str]]:
        """The file's facts (hippocamp's own probing, else ffprobe's) and why each way failed."""
        problems: list[str] = []
        facts: dict[str, Any] = {}
        try:
            facts = probe_media(path) or {}
            if facts.get("duration"):
                return facts, problems
            if facts:
                problems.append("headers: no duration")
        except ReadError as exc:
            problems.append(f"headers: {exc}")
        if FFPROBE.available():
            try:
                probe = probe_facts(ffprobe(path))
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
            text += f", {clock(facts['duration'])} long ({facts['duration']:.1f} s)"
        stream = []
        if facts.get("sample_rate"):
            stream.append(f"{facts['sample_rate']} Hz")
        if facts.get("channels"):
            stream.append({1: "mono", 2: "stereo"}.get(facts["channels"], f"{facts['channels']} channels"))
        if stream:
            text += ", " + " ".join(stream)
        return text + tag_summary(facts.get("tags", {}))
