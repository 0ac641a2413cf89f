"""MP4, M4A and QuickTime (ISO base media) probing without a media library.

The top-level boxes are walked by their headers (``mdat`` is skipped, never read) to find ``moov``,
which is read whole (at most `MAX_MOOV` bytes) and walked along fixed paths: the duration from
``mvhd`` (duration over timescale; its creation time as the ``creation_time`` tag, as ffprobe
reports it), each track's kind (``hdlr``), displayed size (``tkhd``, rotation applied) and codec
(``stsd``, with ``esds`` for AAC: ``mp4a.40.2``, channels, average bitrate), and tags: iTunes items
(``udta/meta/ilst``: title, artist, album, date, ...), QuickTime keys (``meta/keys`` + ``ilst``:
``com.apple.quicktime.creationdate``, ``...location.iso6709``, make, model) and ``©xyz`` places.

A box whose size is smaller than its header or runs past its parent (a truncated file) raises
`ReadError`; a size of 0 means "to the end of the parent", as the format says. Every walk moves
forward by at least a header and counts its boxes (`MAX_BOXES`), so no file can make it loop.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hippocamp.perceive.base import ReadError

__all__ = ["MAX_BOXES", "MAX_MOOV", "TOP_LEVEL", "probe_mp4"]

#: the movie box is read into memory up to this size (a long film's index is a few MB)
MAX_MOOV = 128 * 1024 * 1024
#: at most this many boxes are walked per file
MAX_BOXES = 200_000
#: box types that start an ISO base media file (bytes 4..8 of the file)
TOP_LEVEL = frozenset({b"ftyp", b"moov", b"mdat", b"free", b"skip", b"wide", b"pnot", b"uuid", b"styp"})

#: iTunes items kept as tags, by their usual names
_ITEMS = {
    b"\xa9nam": "title", b"\xa9ART": "artist", b"aART": "albumartist", b"\xa9alb": "album", b"\xa9day": "date",
    b"\xa9gen": "genre", b"\xa9wrt": "composer", b"\xa9cmt": "comment", b"desc": "description",
    b"\xa9grp": "grouping", b"cprt": "copyright", b"trkn": "tracknumber", b"disk": "discnumber",
}  # fmt: skip
#: codec names as ffprobe spells them, by sample entry
_VIDEO_CODECS = {
    b"avc1": "h264", b"avc3": "h264", b"hvc1": "hevc", b"hev1": "hevc", b"mp4v": "mpeg4", b"av01": "av1",
    b"vp09": "vp9", b"jpeg": "mjpeg", b"mjpa": "mjpeg",
}  # fmt: skip
_AUDIO_CODECS = {
    b"mp4a": "aac", b"alac": "alac", b"ac-3": "ac3", b"ec-3": "eac3", b"Opus": "opus", b"fLaC": "flac",
    b"samr": "amr_nb", b"lpcm": "pcm", b"sowt": "pcm_s16le", b"twos": "pcm_s16be",
}  # fmt: skip
_AAC_CHANNELS = (0, 1, 2, 3, 4, 5, 6, 8)
_EPOCH_1904 = datetime(1904, 1, 1, tzinfo=UTC)


class _Walker:
    """Box walking with one budget of boxes for the whole file."""

    def __init__(self) -> None:
        self.count = 0

    def tick(self) -> None:
        self.count += 1
        if self.count > MAX_BOXES:
            raise ReadError(f"corrupt MP4: more than {MAX_BOXES} boxes")

    def boxes(self, data: bytes, start: int, end: int, where: str) -> Iterator[tuple[bytes, int, int]]:
        """(type, payload start, payload end) of each box in ``data[start:end]``."""
        pos = start
        while pos < end:
            self.tick()
            if end - pos < 8:
                raise ReadError(f"corrupt MP4: {end - pos} stray bytes at the end of {where}")
            size, kind = struct.unpack_from(">I4s", data, pos)
            header = 8
            if size == 1:
                if end - pos < 16:
                    raise ReadError(f"corrupt MP4: truncated box header in {where}")
                size, header = struct.unpack_from(">Q", data, pos + 8)[0], 16
            elif size == 0:
                size = end - pos
            if size < header:
                raise ReadError(f"corrupt MP4: box {_name(kind)} in {where} declares {size} bytes")
            if size > end - pos:
                raise ReadError(f"corrupt MP4: box {_name(kind)} runs past the end of {where}")
            yield kind, pos + header, pos + size
            pos += size

    def child(self, data: bytes, start: int, end: int, kind: bytes, where: str) -> tuple[int, int] | None:
        for found, a, b in self.boxes(data, start, end, where):
            if found == kind:
                return a, b
        return None


def _name(kind: bytes) -> str:
    return repr(kind.decode("latin-1"))


def _top_level(fh: Any, size: int, walker: _Walker) -> bytes:
    """The ``moov`` box's payload, found by walking the file's top-level boxes (all of them: one
    cut off by the end of the file, ``mdat`` after ``moov`` included, means the file is truncated)."""
    pos, moov = 0, None
    while pos < size:
        walker.tick()
        fh.seek(pos)
        head = fh.read(16)
        if len(head) < 8:
            raise ReadError(f"truncated MP4: {len(head)} stray bytes at the end")
        box, kind = struct.unpack_from(">I4s", head)
        header = 8
        if box == 1:
            if len(head) < 16:
                raise ReadError("truncated MP4: a box header is cut off")
            box, header = struct.unpack_from(">Q", head, 8)[0], 16
        elif box == 0:
            box = size - pos
        if box < header:
            raise ReadError(f"corrupt MP4: box {_name(kind)} at byte {pos} declares {box} bytes")
        if box > size - pos:
            raise ReadError(f"truncated MP4: box {_name(kind)} at byte {pos} needs {box} bytes, {size - pos} are left")
        if kind == b"moov" and moov is None:
            if box - header > MAX_MOOV:
                raise ReadError(f"MP4 movie box of {box} bytes is too large to read")
            fh.seek(pos + header)
            moov = fh.read(box - header)
        pos += box
    if moov is None:
        raise ReadError("not a playable MP4: no movie box (moov)")
    return moov


def _fixed16(value: int) -> float:
    return value / 65536.0


def _mvhd(data: bytes, a: int, b: int) -> tuple[float | None, datetime | None]:
    version = data[a] if a < b else 0
    if version == 1 and b - a >= 32:
        created, _modified, scale, duration = struct.unpack_from(">QQIQ", data, a + 4)
        unknown = duration == 0xFFFFFFFFFFFFFFFF
    elif b - a >= 20:
        created, _modified, scale, duration = struct.unpack_from(">IIII", data, a + 4)
        unknown = duration == 0xFFFFFFFF
    else:
        raise ReadError("corrupt MP4: movie header (mvhd) too short")
    if scale == 0:
        raise ReadError("corrupt MP4: movie header (mvhd) has a timescale of 0")
    seconds = None if unknown or duration == 0 else duration / scale
    when = _EPOCH_1904 + timedelta(seconds=created) if 0 < created < 200 * 365 * 86400 else None
    return seconds, when


def _descriptor(data: bytes, pos: int, end: int) -> tuple[int, int, int] | None:
    """(tag, payload start, payload end) of an MPEG-4 descriptor (esds) at ``pos``."""
    if pos + 2 > end:
        return None
    tag, length, pos = data[pos], 0, pos + 1
    for _ in range(4):
        if pos >= end:
            return None
        byte = data[pos]
        length, pos = length << 7 | byte & 0x7F, pos + 1
        if not byte & 0x80:
            break
    return tag, pos, min(end, pos + length)


def _esds(data: bytes, a: int, b: int) -> dict[str, Any]:
    """Codec string, channels and average bitrate of an AAC elementary stream descriptor."""
    out: dict[str, Any] = {}
    es = _descriptor(data, a + 4, b)  # after the full box's version and flags
    if es is None or es[0] != 3 or es[1] + 3 > es[2]:
        return out
    pos, flags = es[1] + 3, data[es[1] + 2]
    pos += 2 if flags & 0x80 else 0  # depends on another stream
    if flags & 0x40 and pos < es[2]:  # a URL
        pos += 1 + data[pos]
    pos += 2 if flags & 0x20 else 0  # an OCR stream
    config = _descriptor(data, pos, es[2])
    if config is None or config[0] != 4 or config[1] + 13 > config[2]:
        return out
    oti = data[config[1]]
    avg = int.from_bytes(data[config[1] + 9 : config[1] + 13], "big")
    if avg:
        out["bitrate"] = avg
    specific = _descriptor(data, config[1] + 13, config[2])
    if specific is not None and specific[0] == 5 and specific[2] - specific[1] >= 2:
        bits = int.from_bytes(data[specific[1] : specific[1] + 2], "big")
        aot, index = bits >> 11, (bits >> 7) & 15
        out["codec"] = f"mp4a.{oti:X}.{aot}"
        if aot != 31 and index != 15 and (bits >> 3) & 15:
            out["channels"] = _AAC_CHANNELS[(bits >> 3) & 15] if (bits >> 3) & 15 < 8 else None
    else:
        out["codec"] = f"mp4a.{oti:X}"
    return {k: v for k, v in out.items() if v}


def _track(walker: _Walker, data: bytes, a: int, b: int) -> dict[str, Any]:
    """Kind, codec and stream facts of one ``trak``."""
    track: dict[str, Any] = {}
    tkhd = walker.child(data, a, b, b"tkhd", "a track")
    if tkhd is not None:
        version = data[tkhd[0]] if tkhd[0] < tkhd[1] else 0
        matrix_at = tkhd[0] + (4 + 32 + 8 + 8 if version == 1 else 4 + 20 + 8 + 8)
        if matrix_at + 44 <= tkhd[1]:
            m_a, m_b = struct.unpack_from(">ii", data, matrix_at)
            width, height = struct.unpack_from(">II", data, matrix_at + 36)
            width, height = round(_fixed16(width)), round(_fixed16(height))
            rotation = round(math.degrees(math.atan2(m_b, m_a))) % 360 if (m_a or m_b) else 0
            if rotation in (90, 270):
                width, height = height, width
            track |= {"width": width, "height": height}
    mdia = walker.child(data, a, b, b"mdia", "a track")
    if mdia is None:
        return track
    hdlr = walker.child(data, *mdia, b"hdlr", "a media box")
    if hdlr is not None and hdlr[0] + 12 <= hdlr[1]:
        track["handler"] = data[hdlr[0] + 8 : hdlr[0] + 12]
    stbl = None
    minf = walker.child(data, *mdia, b"minf", "a media box")
    if minf is not None:
        stbl = walker.child(data, *minf, b"stbl", "a media information box")
    stsd = walker.child(data, *stbl, b"stsd", "a sample table") if stbl is not None else None
    if stsd is None or stsd[0] + 16 > stsd[1]:
        return track
    entry_size, fourcc = struct.unpack_from(">I4s", data, stsd[0] + 8)
    entry_end = min(stsd[1], stsd[0] + 8 + max(entry_size, 8))
    track["fourcc"] = fourcc
    if track.get("handler") == b"soun" and stsd[0] + 8 + 36 <= entry_end:
        at = stsd[0] + 8 + 8  # the sample entry's payload: reserved (6), data reference (2), then the sound fields
        version, _revision, _vendor, channels, _bits, _compression, _packet, rate = struct.unpack_from(
            ">HHIHHHHI", data, at + 8
        )
        track |= {"channels": channels, "sample_rate": round(_fixed16(rate))}
        children = at + 28 + {1: 16, 2: 36}.get(version, 0)
        if fourcc == b"mp4a" and children < entry_end:
            for kind, x, y in walker.boxes(data, children, entry_end, "an audio sample entry"):
                if kind == b"esds":
                    track |= _esds(data, x, y)
                    break
    return track


def _data_value(walker: _Walker, data: bytes, a: int, b: int, key: bytes) -> str | None:
    """The value of an ``ilst`` item: its first ``data`` box as text (track/disc numbers as 'n/total')."""
    found = walker.child(data, a, b, b"data", "a metadata item")
    if found is None or found[0] + 8 > found[1]:
        return None
    kind = int.from_bytes(data[found[0] + 1 : found[0] + 4], "big")
    value = data[found[0] + 8 : found[1]]
    if key in (b"trkn", b"disk") and len(value) >= 6:
        number, total = struct.unpack_from(">HH", value, 2)
        return f"{number}/{total}" if total else str(number) if number else None
    if kind == 1:
        text = value.decode("utf-8", "replace")
    elif kind == 2:
        text = value.decode("utf-16-be", "replace")
    elif kind == 21 and 0 < len(value) <= 8:
        text = str(int.from_bytes(value, "big", signed=True))
    else:
        return None  # pictures and other binary values
    text = text.replace("\x00", "").strip()
    return text[:500] or None


def _meta(walker: _Walker, data: bytes, a: int, b: int, tags: dict[str, str]) -> None:
    """Tags of a ``meta`` box: iTunes items, or QuickTime keys with their items."""
    if data[a + 4 : a + 8] != b"hdlr":  # an ISO full box: version and flags first
        a += 4
    keys: list[str] = []
    ilst = None
    for kind, x, y in walker.boxes(data, a, b, "a metadata box"):
        if kind == b"keys" and x + 8 <= y:
            for _kind, k, z in walker.boxes(data, x + 8, y, "metadata keys"):
                keys.append(data[k:z].decode("utf-8", "replace").lower())
        elif kind == b"ilst":
            ilst = (x, y)
    if ilst is None:
        return
    for item, x, y in walker.boxes(data, *ilst, "a metadata list"):
        if keys and int.from_bytes(item, "big") - 1 in range(len(keys)):
            name = keys[int.from_bytes(item, "big") - 1]
        elif item in _ITEMS:
            name = _ITEMS[item]
        else:
            continue
        value = _data_value(walker, data, x, y, item)
        if value and name not in tags:
            tags[name] = value


def _loci(data: bytes, a: int, b: int) -> str | None:
    """A 3GPP location box as ISO 6709 text, as ffprobe shows it (``+51.9180+004.4720/``)."""
    name_end = data.find(b"\x00", a + 6, b)
    if name_end < 0 or name_end + 10 > b:
        return None
    lon, lat = struct.unpack_from(">ii", data, name_end + 2)  # after the name and a role byte
    return f"{_fixed16(lat):+08.4f}{_fixed16(lon):+09.4f}/"


def probe_mp4(path: Path) -> dict[str, Any]:
    """Duration, container, tracks (size, codecs, sample rate, channels) and tags of an ISO media file."""
    size = path.stat().st_size
    walker = _Walker()
    with path.open("rb") as fh:
        moov = _top_level(fh, size, walker)
    end = len(moov)
    duration = created = None
    tracks: list[dict[str, Any]] = []
    tags: dict[str, str] = {}
    for kind, a, b in walker.boxes(moov, 0, end, "the movie box"):
        if kind == b"mvhd":
            duration, created = _mvhd(moov, a, b)
        elif kind == b"trak":
            tracks.append(_track(walker, moov, a, b))
        elif kind == b"meta":
            _meta(walker, moov, a, b, tags)
        elif kind == b"udta":
            for inner, x, y in walker.boxes(moov, a, b, "user data"):
                if inner == b"meta":
                    _meta(walker, moov, x, y, tags)
                elif inner == b"\xa9xyz" and x + 4 < y:  # QuickTime: "+51.9180+004.4720/"
                    tags.setdefault("location", moov[x + 4 : y].decode("utf-8", "replace").strip("\x00 "))
                elif inner == b"loci":
                    place = _loci(moov, x, y)
                    if place:
                        tags.setdefault("location", place)
    if created is not None:
        tags.setdefault("creation_time", created.strftime("%Y-%m-%dT%H:%M:%S.000000Z"))
    video = next((t for t in tracks if t.get("handler") == b"vide"), None)
    audio = next((t for t in tracks if t.get("handler") == b"soun"), None)
    facts: dict[str, Any] = {"duration": duration, "container": "MP4", "has_video": video is not None,
                             "has_audio": audio is not None}  # fmt: skip
    if video is not None:
        facts |= {"width": video.get("width"), "height": video.get("height")}
        fourcc = video.get("fourcc", b"")
        facts["video_codec"] = _VIDEO_CODECS.get(fourcc, fourcc.decode("latin-1").strip() or None)
    if audio is not None:
        fourcc = audio.get("fourcc", b"")
        facts["audio_codec"] = _AUDIO_CODECS.get(fourcc, fourcc.decode("latin-1").strip() or None)
        for key in ("sample_rate", "channels", "bitrate", "codec"):
            facts[key] = audio.get(key) or None
    if tags:
        facts["tags"] = tags
    return {k: v for k, v in facts.items() if v is not None}
