"""Images rewritten in their own formats (handlers of `hippocamp.build.rewrite`): identifying metadata
removed, the pixels left as they are.

EXIF is rebuilt from an allow-list (GPS, make, model, serial numbers, owner, artist, copyright, software,
maker notes go; times taken, orientation and exposure stay; the description is edited); XMP, IPTC and
other vendor segments go. JPEG (`rewrite_jpeg`), PNG (`rewrite_png`) and WebP (`rewrite_webp`) are edited
at the container level (segments, chunks): the compressed pixels are copied byte for byte, never
re-encoded. TIFF (`rewrite_tiff`) is re-saved by Pillow with the same (lossless) compression. GIF, BMP and
HEIC have no handler: `hippocamp.build.rewrite` copies them as they are, with a note.
"""

from __future__ import annotations

import io
import re
import struct
import zlib
from typing import Any

from hippocamp.build.rewrite import RewriteJob

__all__ = ["rewrite_jpeg", "rewrite_png", "rewrite_tiff", "rewrite_webp"]


# -- images -----------------------------------------------------------------------------------------------
# EXIF is rebuilt from an allow-list: IFD0 keeps layout, orientation and time; the Exif IFD keeps exposure
# and the times taken; everything else (GPS, make, model, serial numbers, owner, maker notes...) goes.
_EXIF_KEEP_IFD0 = frozenset(
    [0x0100, 0x0101, 0x0102, 0x0103, 0x0106, 0x0112, 0x0115, 0x011A, 0x011B, 0x0128, 0x0132, 0x013E, 0x013F,
     0x0211, 0x0212, 0x0213, 0x0214, 0x012D]
)  # fmt: skip
_EXIF_EDIT_IFD0 = frozenset([0x010E, 0x010D, 0x011D])  # ImageDescription, DocumentName, PageName
_EXIF_KEEP_SUB = frozenset(
    [0x829A, 0x829D, 0x8822, 0x8827, 0x8830, 0x8832, 0x9000, 0x9003, 0x9004, 0x9010, 0x9011, 0x9012, 0x9101,
     0x9102, 0x9201, 0x9202, 0x9203, 0x9204, 0x9205, 0x9206, 0x9207, 0x9208, 0x9209, 0x920A, 0x9290, 0x9291,
     0x9292, 0xA000, 0xA001, 0xA002, 0xA003, 0xA217, 0xA300, 0xA301, 0xA401, 0xA402, 0xA403, 0xA404, 0xA405,
     0xA406, 0xA407, 0xA408, 0xA409, 0xA40A, 0xA40C, 0xA432]
)  # fmt: skip
_EXIF_IFD, _GPS_IFD, _INTEROP_IFD = 0x8769, 0x8825, 0xA005
#: a TIFF's own layout tags (strips, tiles, samples...), which Pillow writes itself when saving
_TIFF_LAYOUT = frozenset(
    [0x0100, 0x0101, 0x0102, 0x0103, 0x0106, 0x0111, 0x0115, 0x0116, 0x0117, 0x011A, 0x011B, 0x011C, 0x0128,
     0x013D, 0x0140, 0x0142, 0x0143, 0x0144, 0x0145, 0x014A, 0x0152, 0x0153, 0x8773]
)  # fmt: skip


def _tag_name(tag: int) -> str:
    from PIL import ExifTags

    return ExifTags.TAGS.get(tag, f"tag 0x{tag:04X}")


def _tag_text(tag: int, value: Any) -> str | None:
    if isinstance(value, str):
        return value.replace("\x00", "").strip() or None
    if isinstance(value, bytes) and 0x9C9B <= tag <= 0x9C9F:  # Windows XP* fields: UTF-16-LE
        return value.decode("utf-16-le", "replace").replace("\x00", "").strip() or None
    if isinstance(value, bytes) and tag == 0x9286:  # UserComment: 8 bytes naming the code, then the text
        return value[8:].decode("utf-16" if value[:8].startswith(b"UNICODE") else "latin-1", "replace").strip("\x00 ")
    return None


def _clean_exif(raw: bytes, job: RewriteJob, quiet: frozenset[int] = frozenset()) -> bytes | None:
    """EXIF (with or without its ``Exif\\0\\0`` header) rebuilt from the allow-list; None when unreadable or
    empty. Tags in ``quiet`` (a TIFF's own layout, which its writer sets) are dropped without a record."""
    label = "EXIF"
    from PIL import Image

    try:
        old = Image.Exif()
        old.load(raw)
        sub = dict(old.get_ifd(_EXIF_IFD)) if _EXIF_IFD in old else {}
        gps = dict(old.get_ifd(_GPS_IFD)) if _GPS_IFD in old else {}
    except Exception:  # a damaged EXIF block: dropped whole (the image itself is untouched)
        job.scrub(f"{label} (unreadable: removed whole)")
        return None
    new = Image.Exif()
    for tag, value in old.items():
        if tag in (_EXIF_IFD, _GPS_IFD):
            continue
        if tag in quiet:
            continue
        if tag in _EXIF_KEEP_IFD0:
            new[tag] = value
        elif tag in _EXIF_EDIT_IFD0 and isinstance(value, str):
            new[tag] = job.edit(f"{label} {_tag_name(tag)}", value.replace("\x00", ""))
        else:
            job.scrub(f"{label} {_tag_name(tag)}", _tag_text(tag, value))
    if gps:
        job.scrub(f"{label} GPSInfo", "; ".join(f"{_gps_name(k)}={v}" for k, v in gps.items()))
    kept_sub = {}
    for tag, value in sub.items():
        if tag in _EXIF_KEEP_SUB:
            kept_sub[tag] = value
        elif tag != _INTEROP_IFD:
            job.scrub(f"{label} {_tag_name(tag)}", _tag_text(tag, value))
    if kept_sub:
        new.get_ifd(_EXIF_IFD).update(kept_sub)
    if not len(new) and not kept_sub:
        return None
    return new.tobytes()


def _gps_name(tag: int) -> str:
    from PIL import ExifTags

    return ExifTags.GPSTAGS.get(tag, str(tag))


_IPTC_NAMES = {5: "ObjectName", 25: "Keywords", 80: "By-line", 85: "By-lineTitle", 90: "City", 92: "Sublocation",
               95: "Province-State", 101: "Country", 105: "Headline", 110: "Credit", 115: "Source",
               116: "CopyrightNotice", 118: "Contact", 120: "Caption-Abstract", 122: "Writer-Editor"}  # fmt: skip


def _scrub_iptc(payload: bytes, job: RewriteJob) -> None:
    for m in re.finditer(rb"\x1c\x02(.)(..)", payload, re.S):
        size = struct.unpack(">H", m.group(2))[0]
        if size < 0x8000:
            text = payload[m.end() : m.end() + size].decode("utf-8", "replace")
            job.scrub(f"IPTC {_IPTC_NAMES.get(m.group(1)[0], f'2:{m.group(1)[0]}')}", text)
    job.scrub("IPTC")


def rewrite_jpeg(data: bytes, job: RewriteJob) -> bytes:
    """JPEG metadata edited at the segment level: the compressed image data is copied byte for byte (no
    re-encoding, so the pixels are exactly the same)."""
    if not data.startswith(b"\xff\xd8"):
        raise job.fail("not a JPEG file")
    out, i, n = [b"\xff\xd8"], 2, len(data)
    while True:
        if i >= n:
            job.note("JPEG ends without an end-of-image marker")
            break
        if data[i] != 0xFF:
            raise job.fail(f"damaged JPEG: no marker at byte {i}")
        while i < n and data[i] == 0xFF:
            i += 1
        if i >= n:
            break
        marker = data[i]
        i += 1
        if marker == 0xD9:
            out.append(b"\xff\xd9")
            break
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:
            out.append(bytes([0xFF, marker]))
            continue
        if i + 2 > n:
            raise job.fail("damaged JPEG: truncated segment")
        length = struct.unpack(">H", data[i : i + 2])[0]
        if length < 2 or i + length > n:
            raise job.fail(f"damaged JPEG: segment 0x{marker:02X} overruns the file")
        payload = data[i + 2 : i + length]
        i += length
        if marker == 0xDA:  # start of scan: the entropy-coded data runs to the next real marker
            j = i
            while True:
                k = data.find(b"\xff", j)
                if k < 0 or k + 1 >= n:
                    k = n
                    break
                if data[k + 1] == 0 or 0xD0 <= data[k + 1] <= 0xD7 or data[k + 1] == 0xFF:
                    j = k + 1
                    continue
                break
            out.append(b"\xff\xda" + struct.pack(">H", length) + payload + data[i:k])
            i = k
            continue
        kept = _jpeg_segment(marker, payload, job)
        if kept is not None:
            if len(kept) > 65533:
                job.scrub(f"JPEG APP{marker - 0xE0} (too large once rewritten)")
                continue
            out.append(bytes([0xFF, marker]) + struct.pack(">H", len(kept) + 2) + kept)
    if i < n and data[i:].strip(b"\x00"):
        job.scrub(f"JPEG data after the image ({n - i} bytes: secondary images, maker trailers)")
    return b"".join(out)


def _jpeg_segment(marker: int, payload: bytes, job: RewriteJob) -> bytes | None:
    """A JPEG segment's payload as kept (None: removed)."""
    if marker == 0xE1 and payload.startswith(b"Exif\x00\x00"):
        return _clean_exif(payload, job)
    if marker == 0xE1 and payload.startswith((b"http://ns.adobe.com/xap/1.0/\x00", b"http://ns.adobe.com/xmp/")):
        job.scrub("XMP", payload.split(b"\x00", 1)[-1].decode("utf-8", "replace"))
        return None
    if marker == 0xED:
        _scrub_iptc(payload, job)
        return None
    if marker == 0xFE:
        text = payload.decode("utf-8") if _utf8(payload) else payload.decode("latin-1")
        return job.edit("JPEG comment", text.rstrip("\x00")).encode("utf-8")
    keep = (marker == 0xE0 or (marker == 0xE2 and payload.startswith(b"ICC_PROFILE\x00"))
            or (marker == 0xEE and payload.startswith(b"Adobe")))  # fmt: skip
    if 0xE0 <= marker <= 0xEF and not keep:
        tag = payload.split(b"\x00", 1)[0][:24].decode("latin-1", "replace")
        job.scrub(f"JPEG APP{marker - 0xE0} {tag}".rstrip())
        return None
    return payload


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


_PNG_SIG = b"\x89PNG\r\n\x1a\n"
#: chunks that display the image (kept as they are); text is judged by keyword, eXIf rebuilt
_PNG_KEEP = frozenset(
    b"IHDR PLTE IDAT IEND tRNS gAMA cHRM sRGB iCCP sBIT bKGD pHYs sPLT hIST tIME acTL fcTL fdAT cICP mDCv cLLi "
    b"oFFs sCAL".split()
)
_PNG_EDIT_KEYS = frozenset(("Title", "Description", "Comment"))
_PNG_KEEP_KEYS = frozenset(("Creation Time",))
#: a text chunk is decompressed to at most this many bytes
_PNG_TEXT_MAX = 8 * 1024 * 1024


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def _inflate(data: bytes, job: RewriteJob) -> bytes:
    d = zlib.decompressobj()
    out = d.decompress(data, _PNG_TEXT_MAX)
    if d.unconsumed_tail:
        raise job.fail(f"PNG text chunk unpacks to more than {_PNG_TEXT_MAX} bytes")
    return out


def _png_text(kind: bytes, body: bytes, job: RewriteJob) -> bytes | None:
    key, _, rest = body.partition(b"\x00")
    keyword = key.decode("latin-1", "replace")
    if kind == b"tEXt":
        text = rest.decode("latin-1")
    elif kind == b"zTXt":
        text = _inflate(rest[1:], job).decode("latin-1")
    else:  # iTXt: flag, method, language\0, translated keyword\0, text
        flag = rest[:1] == b"\x01"
        _lang, _, rest2 = rest[2:].partition(b"\x00")
        _, _, payload = rest2.partition(b"\x00")
        text = (_inflate(payload, job) if flag else payload).decode("utf-8", "replace")
    if keyword in _PNG_KEEP_KEYS:
        return _png_chunk(kind, body)
    if keyword not in _PNG_EDIT_KEYS:
        value = None if keyword.startswith("Raw profile") else text  # hex of EXIF/IPTC: nothing to read
        job.scrub("XMP" if "xmp" in keyword.lower() else f"PNG text {keyword}", value)
        return None
    new = job.edit(f"PNG text {keyword}", text)
    if new == text:
        return _png_chunk(kind, body)
    try:
        return _png_chunk(b"tEXt", key + b"\x00" + new.encode("latin-1"))
    except UnicodeEncodeError:
        return _png_chunk(b"iTXt", key + b"\x00\x00\x00\x00\x00" + new.encode("utf-8"))


def rewrite_png(data: bytes, job: RewriteJob) -> bytes:
    """PNG chunks: display chunks and pixels copied as they are, text judged by keyword, EXIF rebuilt."""
    if not data.startswith(_PNG_SIG):
        raise job.fail("not a PNG file")
    out, i, n = [_PNG_SIG], len(_PNG_SIG), len(data)
    while i + 8 <= n:
        size, kind = struct.unpack(">I", data[i : i + 4])[0], data[i + 4 : i + 8]
        if i + 12 + size > n:
            raise job.fail(f"damaged PNG: chunk {kind!r} overruns the file")
        body, whole = data[i + 8 : i + 8 + size], data[i : i + 12 + size]
        i += 12 + size
        if kind in _PNG_KEEP:
            out.append(whole)
        elif kind in (b"tEXt", b"zTXt", b"iTXt"):
            kept = _png_text(kind, body, job)
            if kept is not None:
                out.append(kept)
        elif kind == b"eXIf":
            exif = _clean_exif(body, job)
            if exif is not None:
                out.append(_png_chunk(kind, exif[6:]))
        elif kind[:1].isupper():  # an unknown critical chunk is needed to display the image
            out.append(whole)
        else:
            job.scrub(f"PNG chunk {kind.decode('latin-1')}")
        if kind == b"IEND":
            break
    return b"".join(out)


def rewrite_webp(data: bytes, job: RewriteJob) -> bytes:
    """WebP (RIFF) chunks: EXIF rebuilt, XMP removed, the VP8X flags and the RIFF size set to match."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        raise job.fail("not a WebP file")
    chunks: list[list[bytes]] = []
    i, n = 12, len(data)
    while i + 8 <= n:
        kind, size = data[i : i + 4], struct.unpack("<I", data[i + 4 : i + 8])[0]
        if i + 8 + size > n:
            raise job.fail(f"damaged WebP: chunk {kind!r} overruns the file")
        body = data[i + 8 : i + 8 + size]
        i += 8 + size + (size & 1)
        if kind == b"EXIF":
            exif = _clean_exif(body, job)
            if exif is not None:
                chunks.append([kind, exif[6:]])
        elif kind == b"XMP ":
            job.scrub("XMP", body.decode("utf-8", "replace"))
        else:
            chunks.append([kind, body])
    kinds = {c[0] for c in chunks}
    for c in chunks:
        if c[0] == b"VP8X" and c[1]:
            flags = c[1][0] & ~0x0C | (0x08 if b"EXIF" in kinds else 0) | (0x04 if b"XMP " in kinds else 0)
            c[1] = bytes([flags]) + c[1][1:]
    body = b"".join(k + struct.pack("<I", len(b)) + b + (b"\x00" if len(b) & 1 else b"") for k, b in chunks)
    return b"RIFF" + struct.pack("<I", len(body) + 4) + b"WEBP" + body


def rewrite_tiff(data: bytes, job: RewriteJob) -> bytes:
    """TIFF re-saved by Pillow with the same compression (lossless codecs keep every pixel) and the
    cleaned tags; XMP, IPTC and Photoshop blocks are not carried over."""
    from PIL import Image, ImageSequence

    try:
        img: Any = Image.open(io.BytesIO(data))
        img.load()
    except Exception as exc:
        raise job.fail(f"not a readable TIFF: {exc}") from None
    for tag, what in ((700, "XMP"), (33723, "IPTC"), (34377, "Photoshop metadata")):
        if tag in img.tag_v2:
            job.scrub(what, img.tag_v2[tag] if isinstance(img.tag_v2[tag], bytes | str) else None)
    exif = _clean_exif(img.getexif().tobytes(), job, _TIFF_LAYOUT) or b""
    if job.dry:
        return data
    frames = []
    for frame in ImageSequence.Iterator(img):
        tags: Any = getattr(frame, "tag_v2", {})
        for tag in (700, 33723, 34377):
            tags.pop(tag, None)
        frames.append(frame.copy())
    compression = img.info.get("compression", "raw")
    if compression in ("jpeg", "tiff_jpeg"):
        job.note("TIFF with JPEG compression re-encoded (pixels may differ slightly)")
    buf = io.BytesIO()
    frames[0].save(buf, format="TIFF", compression=compression, exif=exif, save_all=len(frames) > 1,
                   append_images=frames[1:])  # fmt: skip
    return buf.getvalue()
