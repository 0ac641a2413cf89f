"""MP3 (MPEG audio) probing without a media library: duration, stream facts and ID3 tags.

ID3v2 tags at the start are skipped by their declared size (their text frames for title, artist,
album, date, genre, composer and track are read, ID3v2.2 to 2.4); the first MPEG audio frame is
the first frame header followed by two more consistent ones. The duration comes from a Xing/Info
header (frames, less the LAME tag's encoder delay and padding) or a VBRI header, else it is
estimated from the first frame's bitrate and the audio's size (constant bitrate). ID3v1 and APEv2
tags at the end are left out of that size; ID3v1 is read when there is no ID3v2 tag.

Every loop is bounded by the bytes it walks (each step moves forward) and every size is checked
against the file: a corrupt or truncated file raises `ReadError`, never more.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from hippocamp.perceive.base import ReadError

__all__ = ["ID3_FRAMES", "probe_mp3", "read_id3v2"]

#: ID3v2 text frames kept as tags (2.3/2.4 ids and their 2.2 spellings), by their usual names
ID3_FRAMES = {
    "TIT2": "title", "TT2": "title",
    "TPE1": "artist", "TP1": "artist",
    "TPE2": "albumartist", "TP2": "albumartist",
    "TALB": "album", "TAL": "album",
    "TDRC": "date", "TYER": "date", "TYE": "date",
    "TCON": "genre", "TCO": "genre",
    "TCOM": "composer", "TCM": "composer",
    "TRCK": "tracknumber", "TRK": "tracknumber",
}  # fmt: skip
#: a tag larger than this is skipped unread (a big cover picture); its size still counts
MAX_TAG_READ = 16 * 1024 * 1024
#: how far after the tags the first audio frame is looked for
SYNC_SEARCH = 128 * 1024
_MAX_FRAME = 2881  # the longest MPEG audio frame (MPEG 2.5 layer II, 160 kbit/s at 8 kHz)

# bitrates in kbit/s by (MPEG-1?, layer) and index 1..14
_BITRATES = {
    (True, 1): (32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448),
    (True, 2): (32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384),
    (True, 3): (32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    (False, 1): (32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256),
    (False, 2): (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
    (False, 3): (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}
_RATES = {3: (44100, 48000, 32000), 2: (22050, 24000, 16000), 0: (11025, 12000, 8000)}  # by version bits


class _Frame:
    """One MPEG audio frame header."""

    __slots__ = ("bitrate", "channels", "key", "length", "mpeg1", "sample_rate", "samples", "xing_offset")

    def __init__(self, word: int) -> None:
        version, layer = (word >> 19) & 3, 4 - ((word >> 17) & 3)
        index, rate_index = (word >> 12) & 15, (word >> 10) & 3
        padding, mode = (word >> 9) & 1, (word >> 6) & 3
        self.mpeg1 = version == 3
        self.bitrate = _BITRATES[(self.mpeg1, layer)][index - 1] * 1000
        self.sample_rate = _RATES[version][rate_index]
        self.channels = 1 if mode == 3 else 2
        if layer == 1:
            self.samples = 384
            self.length = (12 * self.bitrate // self.sample_rate + padding) * 4
        else:
            self.samples = 576 if layer == 3 and not self.mpeg1 else 1152
            self.length = self.samples // 8 * self.bitrate // self.sample_rate + padding
        # where a Xing/Info header sits: after the 4-byte header and the layer III side information
        side = (32 if mode != 3 else 17) if self.mpeg1 else (17 if mode != 3 else 9)
        self.xing_offset = 4 + side if layer == 3 else 0
        self.key = (version, layer, rate_index)  # what every frame of one stream shares


def _frame_at(data: bytes, pos: int) -> _Frame | None:
    """The frame header at ``pos`` of ``data``, or None when those four bytes are not one."""
    if pos + 4 > len(data) or data[pos] != 0xFF or data[pos + 1] & 0xE0 != 0xE0:
        return None
    word = int.from_bytes(data[pos : pos + 4], "big")
    version, layer_bits = (word >> 19) & 3, (word >> 17) & 3
    index, rate_index = (word >> 12) & 15, (word >> 10) & 3
    if version == 1 or layer_bits == 0 or index in (0, 15) or rate_index == 3:
        return None  # reserved values, and free-format bitrates (rare, and not measurable from the header)
    return _Frame(word)


def _syncsafe(data: bytes) -> int:
    return (data[0] & 0x7F) << 21 | (data[1] & 0x7F) << 14 | (data[2] & 0x7F) << 7 | (data[3] & 0x7F)


def _id3_text(data: bytes) -> str | None:
    """The value of an ID3v2 text frame (several values joined by '; ')."""
    if not data:
        return None
    encoding, raw = data[0], data[1:]
    if encoding == 0:
        text = raw.decode("latin-1")
    elif encoding == 1:
        text = (
            raw.decode("utf-16", "replace")
            if raw[:2] in (b"\xff\xfe", b"\xfe\xff")
            else raw.decode("utf-16-le", "replace")
        )
    elif encoding == 2:
        text = raw.decode("utf-16-be", "replace")
    elif encoding == 3:
        text = raw.decode("utf-8", "replace")
    else:
        return None
    values = [v.replace("\ufeff", "").strip() for v in text.split("\x00")]
    return "; ".join(v for v in values if v) or None


def read_id3v2(body: bytes, major: int, flags: int) -> dict[str, str]:
    """Text tags of an ID3v2 tag's body (the bytes after its 10-byte header)."""
    if flags & 0x80 and major < 4:  # the whole tag unsynchronised (2.2, 2.3)
        body = body.replace(b"\xff\x00", b"\xff")
    pos = 0
    if flags & 0x40 and major >= 3:  # an extended header
        if len(body) < 4:
            return {}
        pos = _syncsafe(body[:4]) if major == 4 else 4 + int.from_bytes(body[:4], "big")
    id_len, head = (3, 6) if major == 2 else (4, 10)
    tags: dict[str, str] = {}
    while pos + head <= len(body):
        frame_id = body[pos : pos + id_len]
        if not frame_id.strip(b"\x00") or not frame_id.isalnum():
            break  # padding, or garbage: no more frames
        if major == 2:
            size, frame_flags = int.from_bytes(body[pos + 3 : pos + 6], "big"), 0
        elif major == 4:
            size, frame_flags = _syncsafe(body[pos + 4 : pos + 8]), int.from_bytes(body[pos + 8 : pos + 10], "big")
        else:
            size, frame_flags = (
                int.from_bytes(body[pos + 4 : pos + 8], "big"),
                int.from_bytes(body[pos + 8 : pos + 10], "big"),
            )
        start, pos = pos + head, pos + head + size
        if pos > len(body):
            break  # a frame past the tag's end: the rest of the tag is unusable
        name = ID3_FRAMES.get(frame_id.decode("ascii"))
        if name is None or name in tags:
            continue
        data = body[start:pos]
        if major == 3:
            if frame_flags & 0x00C0:  # compressed or encrypted
                continue
            data = data[1:] if frame_flags & 0x0020 else data  # a group id byte
        elif major == 4:
            if frame_flags & 0x000C:  # compressed or encrypted
                continue
            data = data[1:] if frame_flags & 0x0040 else data  # a group id byte
            data = data[4:] if frame_flags & 0x0001 else data  # a data length indicator
            data = data.replace(b"\xff\x00", b"\xff") if frame_flags & 0x0002 else data
        value = _id3_text(data)
        if value:
            tags[name] = value[:500]
    return tags


def _id3v1(tail: bytes) -> dict[str, str]:
    """Tags of a 128-byte ID3v1 tag (title, artist, album, year, and the track of ID3v1.1)."""
    fields = {"title": tail[3:33], "artist": tail[33:63], "album": tail[63:93], "date": tail[93:97]}
    tags = {k: v.split(b"\x00")[0].decode("latin-1").strip() for k, v in fields.items()}
    if tail[125] == 0 and tail[126]:
        tags["tracknumber"] = str(tail[126])
    return {k: v for k, v in tags.items() if v}


def _lame_padding(data: bytes, pos: int) -> int:
    """Encoder delay plus padding in samples from a LAME/Lavc tag at ``pos`` (0 without one)."""
    if data[pos : pos + 4] not in (b"LAME", b"Lavc", b"Lavf", b"GOGO") or pos + 24 > len(data):
        return 0
    packed = int.from_bytes(data[pos + 21 : pos + 24], "big")
    return (packed >> 12) + (packed & 0xFFF)


def _stream_end(fh: Any, size: int, audio_start: int) -> tuple[int, bytes | None]:
    """Where the audio ends (before ID3v1 and APEv2 tags at the end) and the ID3v1 tag, if any."""
    end, id3v1 = size, None
    if size - audio_start >= 128:
        fh.seek(size - 128)
        tail = fh.read(128)
        if tail[:3] == b"TAG":
            end, id3v1 = size - 128, tail
    if end - audio_start >= 32:
        fh.seek(end - 32)
        footer = fh.read(32)
        if footer[:8] == b"APETAGEX":
            tag_size = int.from_bytes(footer[12:16], "little") + (32 if footer[23] & 0x80 else 0)
            if 0 < tag_size <= end - audio_start:
                end -= tag_size
    return end, id3v1


def probe_mp3(path: Path) -> dict[str, Any]:
    """Duration, sample rate, channels, bitrate and tags of an MP3 (any MPEG audio layer)."""
    size = path.stat().st_size
    tags: dict[str, str] = {}
    with path.open("rb") as fh:
        start = 0
        for _ in range(8):  # some writers put several ID3v2 tags in a row
            fh.seek(start)
            head = fh.read(10)
            if len(head) < 10 or head[:3] != b"ID3":
                break
            major, flags = head[3], head[5]
            if major not in (2, 3, 4) or any(b & 0x80 for b in head[6:10]):
                raise ReadError(f"corrupt ID3v2 tag header at byte {start}")
            tag_size = 10 + _syncsafe(head[6:10]) + (10 if flags & 0x10 else 0)
            if start + tag_size > size:
                raise ReadError(
                    f"truncated MP3: its ID3v2 tag declares {tag_size} bytes, the file holds {size - start}"
                )
            if not tags and tag_size <= MAX_TAG_READ:
                tags = read_id3v2(fh.read(tag_size - 10), major, flags)
            start += tag_size
        fh.seek(start)
        window = fh.read(SYNC_SEARCH + 2 * _MAX_FRAME + 4)
        found = None
        for pos in range(min(len(window), SYNC_SEARCH)):
            frame = _frame_at(window, pos)
            if frame is None:
                continue
            second = pos + frame.length
            if start + second >= size:  # a lone frame must end exactly where the file does
                if start + second == size:
                    found = (pos, frame)
                    break
                continue
            follower = _frame_at(window, second)
            if follower is None or follower.key != frame.key:
                continue
            third = second + follower.length
            following = _frame_at(window, third)
            if start + third >= size or (following is not None and following.key == frame.key):
                found = (pos, frame)
                break
        if found is None:
            raise ReadError(
                f"not an MP3 file: no MPEG audio frames in the {min(len(window), SYNC_SEARCH)} bytes after its tags"
            )
        pos, frame = found
        first = start + pos
        end, id3v1 = _stream_end(fh, size, first)
    if not tags and id3v1 is not None:
        tags = _id3v1(id3v1)
    audio_bytes = max(0, end - first)
    # a count above this is a cut-off file (some encoders count the ID3v2 tag too, and a few frames of slack)
    slack = audio_bytes + start + 4 * frame.length
    duration, bitrate = None, frame.bitrate
    xing = pos + frame.xing_offset
    if frame.xing_offset and window[xing : xing + 4] in (b"Xing", b"Info") and xing + 8 <= len(window):
        xing_flags = int.from_bytes(window[xing + 4 : xing + 8], "big")
        at = xing + 8
        frames = count = None
        if xing_flags & 1:
            frames = int.from_bytes(window[at : at + 4], "big")
            at += 4
        if xing_flags & 2:
            count = int.from_bytes(window[at : at + 4], "big")
            at += 4
        at += (100 if xing_flags & 4 else 0) + (4 if xing_flags & 8 else 0)
        if frames:
            samples = max(0, frames * frame.samples - _lame_padding(window, at))
            duration = samples / frame.sample_rate
            if count and count > slack:
                raise ReadError(
                    f"truncated MP3: its Xing header counts {count} bytes of audio, the file holds {audio_bytes}"
                )
            if count and duration:
                bitrate = round(max(0, count - frame.length) * 8 / (frames * frame.samples / frame.sample_rate))
    elif frame.xing_offset and window[pos + 36 : pos + 40] == b"VBRI" and pos + 58 <= len(window):
        count, frames = struct.unpack_from(">II", window, pos + 46)
        if frames:
            duration = frames * frame.samples / frame.sample_rate
            if count > slack:
                raise ReadError(
                    f"truncated MP3: its VBRI header counts {count} bytes of audio, the file holds {audio_bytes}"
                )
            bitrate = round(count * 8 / duration)
    if duration is None:  # constant bitrate: the audio's size over the first frame's bitrate
        duration = audio_bytes * 8 / frame.bitrate
    facts: dict[str, Any] = {
        "duration": duration,
        "container": "MP3",
        "sample_rate": frame.sample_rate,
        "channels": frame.channels,
        "bitrate": bitrate,
    }
    if tags:
        facts["tags"] = tags
    return facts
