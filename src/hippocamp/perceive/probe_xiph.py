"""FLAC and Ogg (Vorbis, Opus, FLAC, Speex) probing without a media library.

FLAC: the metadata blocks after ``fLaC`` (an ID3v2 tag before it is skipped): STREAMINFO gives the
sample rate, channels and total samples (the duration), VORBIS_COMMENT the tags. Ogg: the first
logical stream's identification packet names the codec and its rate, its comment packet the tags,
and the duration is the granule position of the stream's last page (less Opus's pre-skip, over
48 kHz for Opus). A metadata block or page that runs past the end of the file raises `ReadError`
(a truncated file); every walk moves forward and is capped in blocks, pages and bytes.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from hippocamp.perceive.base import ReadError

__all__ = ["probe_flac", "probe_ogg", "vorbis_comments"]

_MAX_BLOCKS = 1024
#: the comment (tags) packet is read up to this size (pictures embedded in comments are skipped)
_MAX_COMMENT = 4 * 1024 * 1024
#: Ogg pages read from the start to find the identification and comment packets
_MAX_HEADER_PAGES = 64
_HEADER_BYTES = 1024 * 1024
_OGG_PAGE_MAX = 27 + 255 + 255 * 255
#: comment fields that are not tags
_SKIP = ("metadata_block_picture", "coverart", "coverartmime", "encoder")


def vorbis_comments(data: bytes) -> dict[str, str]:
    """Tags of a Vorbis comment block (FLAC, Vorbis, Opus, Speex): lower-case keys, several values joined."""
    values: dict[str, list[str]] = {}
    if len(data) < 8:
        return {}
    pos = 4 + int.from_bytes(data[:4], "little")  # the vendor string
    if pos + 4 > len(data):
        return {}
    count, pos = int.from_bytes(data[pos : pos + 4], "little"), pos + 4
    for _ in range(min(count, (len(data) - pos) // 4)):
        if pos + 4 > len(data):
            break
        length, pos = int.from_bytes(data[pos : pos + 4], "little"), pos + 4
        if pos + length > len(data):
            break
        key, sep, value = data[pos : pos + length].decode("utf-8", "replace").partition("=")
        pos += length
        key, value = key.strip().lower(), value.replace("\x00", "").strip()
        if sep and key and value and key not in _SKIP:
            values.setdefault(key, []).append(value)
    return {k: "; ".join(v)[:500] for k, v in values.items()}


def _streaminfo(block: bytes) -> tuple[int, int, int]:
    """(sample rate, channels, total samples) of a FLAC STREAMINFO block."""
    if len(block) < 18:
        raise ReadError("corrupt FLAC: STREAMINFO too short")
    bits = int.from_bytes(block[10:18], "big")
    rate, channels, total = bits >> 44, ((bits >> 41) & 7) + 1, bits & ((1 << 36) - 1)
    if rate == 0:
        raise ReadError("corrupt FLAC: a sample rate of 0")
    return rate, channels, total


def probe_flac(path: Path) -> dict[str, Any]:
    """Duration, sample rate, channels, bitrate and tags of a FLAC file."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        start = 0
        head = fh.read(10)
        if head[:3] == b"ID3" and len(head) == 10:
            start = 10 + ((head[6] & 0x7F) << 21 | (head[7] & 0x7F) << 14 | (head[8] & 0x7F) << 7 | head[9] & 0x7F)
        fh.seek(start)
        if fh.read(4) != b"fLaC":
            raise ReadError("not a FLAC file: no fLaC marker")
        pos, info = start + 4, None
        tags: dict[str, str] = {}
        for _ in range(_MAX_BLOCKS):
            header = fh.read(4)
            if len(header) < 4:
                raise ReadError("truncated FLAC: the metadata ends early")
            last, kind, length = header[0] & 0x80, header[0] & 0x7F, int.from_bytes(header[1:], "big")
            if kind == 127:
                raise ReadError(f"corrupt FLAC: an invalid metadata block at byte {pos}")
            if pos + 4 + length > size:
                raise ReadError(f"truncated FLAC: a metadata block at byte {pos} runs past the end")
            if kind == 0:
                info = _streaminfo(fh.read(length))
            elif kind == 4 and length <= _MAX_COMMENT:
                tags = vorbis_comments(fh.read(length))
            pos += 4 + length
            fh.seek(pos)
            if last:
                break
        else:
            raise ReadError(f"corrupt FLAC: more than {_MAX_BLOCKS} metadata blocks")
    if info is None:
        raise ReadError("corrupt FLAC: no STREAMINFO block")
    rate, channels, total = info
    if total and pos >= size:
        raise ReadError("truncated FLAC: no audio after the metadata")
    duration = total / rate if total else None
    facts: dict[str, Any] = {"duration": duration, "container": "FLAC", "sample_rate": rate, "channels": channels}
    if duration:
        facts["bitrate"] = round((size - pos) * 8 / duration)
    if tags:
        facts["tags"] = tags
    return {k: v for k, v in facts.items() if v is not None}


def _page(data: bytes, pos: int) -> tuple[int, int, int, list[int], int] | None:
    """(flags, granule, serial, lacing values, payload start) of the Ogg page at ``pos``; None if cut off."""
    if pos + 27 > len(data) or data[pos : pos + 4] != b"OggS":
        return None
    flags, granule, serial = data[pos + 5], *struct.unpack_from("<qI", data, pos + 6)
    segments = data[pos + 26]
    if pos + 27 + segments > len(data):
        return None
    lacing = list(data[pos + 27 : pos + 27 + segments])
    return flags, granule, serial, lacing, pos + 27 + segments


def _header_packets(fh: Any) -> tuple[int, list[bytes]]:
    """The serial number and first two packets of the first logical stream."""
    data = fh.read(_HEADER_BYTES)
    pos, serial, packets, current = 0, None, [], b""
    for _ in range(_MAX_HEADER_PAGES):
        page = _page(data, pos)
        if page is None:
            break
        _flags, _granule, page_serial, lacing, at = page
        end = at + sum(lacing)
        if end > len(data):
            break
        serial = page_serial if serial is None else serial
        if page_serial == serial:
            for value in lacing:
                current += data[at : at + value]
                at += value
                if len(current) > _MAX_COMMENT:
                    current = current[:_MAX_COMMENT]
                if value < 255:
                    packets.append(current)
                    current = b""
                    if len(packets) == 2:
                        return serial, packets
        pos = end
    if serial is None:
        raise ReadError("not an Ogg file: no first page")
    return serial, packets


def _codec(first: bytes) -> tuple[str, int, int, int] | None:
    """(container name, granule rate, channels, pre-skip) from an identification packet."""
    if first[:7] == b"\x01vorbis" and len(first) >= 16:
        channels, rate = first[11], int.from_bytes(first[12:16], "little")
        return "OggVorbis", rate, channels, 0
    if first[:8] == b"OpusHead" and len(first) >= 12:
        return "OggOpus", 48000, first[9], int.from_bytes(first[10:12], "little")
    if first[:5] == b"\x7fFLAC" and first[9:13] == b"fLaC" and len(first) >= 17 + 18:
        rate, channels, _total = _streaminfo(first[17:])
        return "OggFLAC", rate, channels, 0
    if first[:8] == b"Speex   " and len(first) >= 52:
        return "OggSpeex", int.from_bytes(first[36:40], "little"), int.from_bytes(first[48:52], "little"), 0
    return None


def _comments(container: str, packet: bytes) -> dict[str, str]:
    if container == "OggVorbis" and packet[:7] == b"\x03vorbis":
        return vorbis_comments(packet[7:])
    if container == "OggOpus" and packet[:8] == b"OpusTags":
        return vorbis_comments(packet[8:])
    if container == "OggFLAC" and packet[:1] and packet[0] & 0x7F == 4:
        return vorbis_comments(packet[4:])
    if container == "OggSpeex":
        return vorbis_comments(packet)
    return {}


def probe_ogg(path: Path) -> dict[str, Any] | None:
    """Duration, codec facts and tags of an Ogg file; None for a codec not read here (Theora, ...)."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        serial, packets = _header_packets(fh)
        codec = _codec(packets[0]) if packets else None
        if codec is None:
            return None
        container, rate, channels, preskip = codec
        if rate <= 0:
            raise ReadError(f"corrupt {container}: a sample rate of 0")
        back = min(size, 2 * _OGG_PAGE_MAX)
        fh.seek(size - back)
        tail = fh.read(back)
    granule = None
    pos = len(tail)
    while granule is None:  # from the end: the last page of the stream with a position
        pos = tail.rfind(b"OggS", 0, pos)
        if pos < 0:
            raise ReadError(f"truncated {container}: no complete last page")
        page = _page(tail, pos)
        if page is None or page[4] + sum(page[3]) > len(tail):
            raise ReadError(f"truncated {container}: the last page is cut off")
        if page[2] == serial and page[1] >= 0:
            granule = page[1]
    duration = max(0, granule - preskip) / rate
    facts: dict[str, Any] = {"duration": duration or None, "container": container, "channels": channels}
    if container != "OggOpus":
        facts["sample_rate"] = rate
    nominal = int.from_bytes(packets[0][20:24], "little", signed=True) if container == "OggVorbis" else 0
    if nominal > 0:
        facts["bitrate"] = nominal
    elif duration:
        facts["bitrate"] = round(size * 8 / duration)
    tags = _comments(container, packets[1]) if len(packets) > 1 else {}
    if tags:
        facts["tags"] = tags
    return {k: v for k, v in facts.items() if v is not None}
