"""hippocamp's own audio/video header probing (`perceive.avprobe`) on real files made on the spot.

Speech spoken by espeak-ng is converted by ffmpeg to MP3 (VBR with a Xing/LAME header, CBR without
one, ID3v2.3 tags), M4A (tags; ``moov`` first or last), MP4 and MOV video, FLAC, Ogg Vorbis and Opus;
each duration must match the WAV's and ffprobe's (the reference implementation) to 0.1 s. Damaged
files (cut short, bytes changed, hostile box and tag sizes) must end in a `ReadError` or a result,
quickly, never another exception or a hang. Hand-built MP3s and MP4s test the parsers without any
program. Without espeak-ng, ffmpeg or ffprobe, the tests that need them skip (fail under
HIPPOCAMP_REQUIRE_MODELS=1).
"""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import time
import wave
from pathlib import Path

import pytest

from conftest import make_wav, require_programs
from hippocamp.perceive import PerceiveOptions, perceive_file
from hippocamp.perceive import base as perceive_base
from hippocamp.perceive.avprobe import probe_media
from hippocamp.perceive.base import ReadError
from hippocamp.perceive.probe_mp4 import MAX_BOXES
from hippocamp.validate.media import probe

SENTENCE = "The dentist appointment is on Tuesday the fifteenth of October at nine in the morning."


def _ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-v", "error", "-y", *args], check=True, capture_output=True)


def _ffprobe_duration(path: Path) -> float:
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-print_format", "json", "-show_format", str(path)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return float(json.loads(out)["format"]["duration"])


#: name -> ffmpeg arguments after ``-i speech.wav`` (video files add their own inputs)
CONVERSIONS = {
    "vbr.mp3": ["-c:a", "libmp3lame", "-q:a", "4", "-metadata", "title=Dentist memo", "-metadata", "artist=Me",
                "-metadata", "date=2024"],
    "cbr.mp3": ["-c:a", "libmp3lame", "-b:a", "64k", "-write_xing", "0"],
    "v23.mp3": ["-c:a", "libmp3lame", "-id3v2_version", "3", "-metadata", "title=Zwölf Boxkämpfer"],
    "low.mp3": ["-c:a", "libmp3lame", "-ar", "8000", "-ac", "2"],  # MPEG 2.5, stereo
    "tagged.m4a": ["-c:a", "aac", "-metadata", "title=Dentist memo", "-metadata", "artist=Me", "-metadata",
                   "date=2024"],
    "faststart.m4a": ["-c:a", "aac", "-movflags", "+faststart"],
    "speech.flac": ["-metadata", "title=Flac memo"],
    "speech.ogg": ["-c:a", "libvorbis", "-metadata", "title=Ogg memo"],
    "speech.opus": ["-c:a", "libopus"],
}  # fmt: skip


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """speech.wav by espeak-ng, its conversions, and two videos."""
    require_programs("espeak-ng", "ffmpeg", "ffprobe")
    root = tmp_path_factory.mktemp("avprobe")
    wav = root / "speech.wav"
    subprocess.run(["espeak-ng", "-w", str(wav), SENTENCE], check=True, capture_output=True)
    for name, args in CONVERSIONS.items():
        _ffmpeg("-i", str(wav), *args, str(root / name))
    color = ["-f", "lavfi", "-i", "color=c=white:s=320x240:d=2"]
    _ffmpeg(*color, "-i", str(wav), "-shortest", "-pix_fmt", "yuv420p", "-c:a", "aac", "-metadata",
            "creation_time=2024-10-12T11:02:33Z", str(root / "clip.mp4"))  # fmt: skip
    _ffmpeg("-i", str(root / "clip.mp4"), "-c", "copy", "-metadata:s:v:0", "rotate=90", str(root / "sideways.mp4"))
    apple = "com.apple.quicktime"
    _ffmpeg(*color, "-movflags", "use_metadata_tags", "-metadata", f"{apple}.make=Apple",
            "-metadata", f"{apple}.location.ISO6709=+51.9180+004.4720/", str(root / "phone.mov"))  # fmt: skip
    return root


def _seconds(wav: Path) -> float:
    with wave.open(str(wav)) as w:
        return w.getnframes() / w.getframerate()


# -- durations and facts of real files ---------------------------------------------------------------
def test_wav_of_known_length(tmp_path: Path):
    facts = probe_media(make_wav(tmp_path / "tone.wav", 2.5, rate=16000))
    assert facts == {
        "duration": 2.5, "container": "WAVE", "sample_rate": 16000, "channels": 1, "bitrate": 16000 * 16,
    }  # fmt: skip


@pytest.mark.parametrize("name", [*CONVERSIONS, "clip.mp4"])
def test_durations_match_the_wav_and_ffprobe(media: Path, name: str):
    facts = probe_media(media / name)
    assert facts is not None
    expected = 2.0 if name == "clip.mp4" else _seconds(media / "speech.wav")  # the clip is cut to its 2 s picture
    assert facts["duration"] == pytest.approx(expected, abs=0.1)
    # ffprobe counts the encoder's delay and padding of an MP3 as sound: 0.2 s at 8 kHz (we take it off)
    assert facts["duration"] == pytest.approx(_ffprobe_duration(media / name), abs=0.25 if name == "low.mp3" else 0.1)
    assert facts["channels"] == (2 if name == "low.mp3" else 1)
    if name != "speech.opus":  # Opus always runs at 48 kHz inside
        assert facts["sample_rate"] == (8000 if name == "low.mp3" else 22050)


def test_mp3_details(media: Path):
    vbr = probe_media(media / "vbr.mp3")
    assert vbr["container"] == "MP3" and vbr["tags"] == {"title": "Dentist memo", "artist": "Me", "date": "2024"}
    assert vbr["duration"] == pytest.approx(_seconds(media / "speech.wav"), abs=0.01)  # encoder delay taken off
    assert probe_media(media / "v23.mp3")["tags"] == {"title": "Zwölf Boxkämpfer"}  # ID3v2.3, UTF-16
    cbr = probe_media(media / "cbr.mp3")
    assert cbr["bitrate"] == 64000 and "tags" not in cbr  # ffmpeg's encoder tag is bookkeeping


def test_m4a_and_video_details(media: Path):
    tagged = probe_media(media / "tagged.m4a")
    assert tagged["tags"] == {"title": "Dentist memo", "artist": "Me", "date": "2024"}
    assert (tagged["codec"], tagged["has_audio"], tagged["has_video"]) == ("mp4a.40.2", True, False)
    clip = probe_media(media / "clip.mp4")
    assert (clip["width"], clip["height"], clip["video_codec"], clip["audio_codec"]) == (320, 240, "h264", "aac")
    assert clip["tags"]["creation_time"].startswith("2024-10-12T11:02:33")
    sideways = probe_media(media / "sideways.mp4")
    assert (sideways["width"], sideways["height"]) == (240, 320)  # as displayed
    phone = probe_media(media / "phone.mov")
    assert phone["has_audio"] is False and phone["duration"] == pytest.approx(2.0, abs=0.05)
    assert phone["tags"]["com.apple.quicktime.location.iso6709"] == "+51.9180+004.4720/"
    assert phone["tags"]["com.apple.quicktime.make"] == "Apple"


def test_flac_and_ogg_tags(media: Path):
    assert probe_media(media / "speech.flac")["tags"] == {"title": "Flac memo"}
    assert probe_media(media / "speech.ogg")["container"] == "OggVorbis"
    assert probe_media(media / "speech.ogg")["tags"] == {"title": "Ogg memo"}
    assert probe_media(media / "speech.opus")["container"] == "OggOpus"


def test_readers_and_the_validator_need_no_ffprobe(media: Path, monkeypatch: pytest.MonkeyPatch):
    real = perceive_base.part_available
    monkeypatch.setattr(perceive_base, "part_available", lambda part: part.name != "ffprobe" and real(part))
    expected = _seconds(media / "speech.wav")
    for name in ("vbr.mp3", "tagged.m4a", "speech.flac"):
        result = perceive_file(media, name, PerceiveOptions(asr=False))
        assert result.status == "ok" and result.reader == "audio", (result.reason, result.notes)
        assert result.segments[0].meta["duration"] == pytest.approx(expected, abs=0.1)
        assert probe(media / name).duration == pytest.approx(expected, abs=0.1)
    video = perceive_file(media, "clip.mp4", PerceiveOptions(asr=False, ocr=False))
    assert video.status == "partial" and any("ffprobe not installed" in n for n in video.notes)
    meta = video.segments[0].meta
    assert (meta["width"], meta["height"], meta["has_audio"], meta["recorded"]) == (
        320, 240, True, "2024-10-12T11:02:33",
    )  # fmt: skip


# -- damaged and hostile files ----------------------------------------------------------------------
def _probe_bounded(path: Path, limit: float = 5.0) -> str:
    """'ok', 'none' or the ReadError's message; anything else fails the test, as does a slow probe."""
    start = time.perf_counter()
    try:
        outcome = "ok" if probe_media(path) else "none"
    except ReadError as exc:
        outcome = str(exc)
        assert outcome
    assert time.perf_counter() - start < limit, f"{path.name} took {time.perf_counter() - start:.1f} s"
    return outcome


@pytest.mark.parametrize(("name", "reason"), [
    ("vbr.mp3", "truncated MP3"),
    ("tagged.m4a", "truncated MP4"),  # the movie box at the end is cut off
    ("faststart.m4a", "truncated MP4"),  # the media data after the movie box is cut off
    ("clip.mp4", "truncated MP4"),
    ("speech.ogg", "truncated OggVorbis"),
])  # fmt: skip
def test_a_file_cut_in_half_is_a_read_error(media: Path, tmp_path: Path, name: str, reason: str):
    data = (media / name).read_bytes()
    cut = tmp_path / name
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ReadError, match=reason):
        probe_media(cut)


def test_a_truncated_wav_is_a_read_error(tmp_path: Path):
    data = make_wav(tmp_path / "full.wav", 1.0).read_bytes()
    (tmp_path / "cut.wav").write_bytes(data[:5000])
    with pytest.raises(ReadError, match="truncated WAV file: its data chunk declares 16000 bytes"):
        probe_media(tmp_path / "cut.wav")
    (tmp_path / "head.wav").write_bytes(data[:30])
    with pytest.raises(ReadError, match="WAV"):
        probe_media(tmp_path / "head.wav")


@pytest.mark.timeout(120)
def test_damaged_copies_never_crash_or_hang(media: Path, tmp_path: Path):
    """Cut short, bytes changed, box and tag sizes overwritten, spans deleted: a result or a ReadError."""
    rng = random.Random(16)
    sizes = [b"\x00\x00\x00\x00", b"\xff\xff\xff\xff", b"\x00\x00\x00\x01", b"\x00\x00\x00\x08", b"\x7f\xff\xff\xff"]
    outcomes: dict[str, set[str]] = {}
    for source in sorted(media.iterdir()):
        data = source.read_bytes()
        for i in range(60):
            damaged = bytearray(data)
            if i % 4 == 0:
                damaged = damaged[: rng.randrange(len(damaged))]
            elif i % 4 == 1:
                for _ in range(rng.randint(1, 20)):
                    damaged[rng.randrange(min(len(damaged), 4096))] = rng.randrange(256)
            elif i % 4 == 2:
                at = rng.randrange(len(damaged))
                damaged[at : at + 4] = rng.choice(sizes)
            else:
                at = rng.randrange(len(damaged))
                del damaged[at : at + rng.randint(1, 5000)]
            path = tmp_path / f"damaged{source.suffix}"
            path.write_bytes(bytes(damaged))
            outcome = _probe_bounded(path)
            outcomes.setdefault(source.name, set()).add("ok" if outcome in ("ok", "none") else "error")
    assert all("error" in seen for name, seen in outcomes.items() if name not in ("cbr.mp3", "speech.flac"))


def _mp3_frames(count: int) -> bytes:
    """``count`` MPEG-1 layer III frames of 128 kbit/s at 44.1 kHz, stereo, silent (417 bytes each)."""
    return (b"\xff\xfb\x90\x00" + bytes(413)) * count


def _id3(version: int, frames: bytes, flags: int = 0) -> bytes:
    size = len(frames)
    safe = bytes([(size >> 21) & 0x7F, (size >> 14) & 0x7F, (size >> 7) & 0x7F, size & 0x7F])
    return b"ID3" + bytes([version, 0, flags]) + safe + frames


def _text_frame(version: int, frame_id: str, encoding: int, text: bytes) -> bytes:
    body = bytes([encoding]) + text
    if version == 2:
        return frame_id.encode() + len(body).to_bytes(3, "big") + body
    size = len(body)
    head = bytes([(size >> 21) & 0x7F, (size >> 14) & 0x7F, (size >> 7) & 0x7F, size & 0x7F]) if version == 4 else (
        size.to_bytes(4, "big"))  # fmt: skip
    return frame_id.encode() + head + b"\x00\x00" + body


def test_hand_built_mp3s(tmp_path: Path):
    frames = _mp3_frames(100)
    cbr = 100 * 417 * 8 / 128000
    cases = {
        "v24.mp3": _id3(4, _text_frame(4, "TIT2", 3, "Café".encode()) + _text_frame(4, "TPE1", 0, b"A\x00B")),
        "v23.mp3": _id3(3, _text_frame(3, "TIT2", 1, "\ufeffZoë".encode("utf-16-le")) + bytes(64)),  # then padding
        "v22.mp3": _id3(2, _text_frame(2, "TT2", 0, b"Old") + _text_frame(2, "TYE", 0, b"1999")),
    }
    expected = {
        "v24.mp3": {"title": "Café", "artist": "A; B"},
        "v23.mp3": {"title": "Zoë"},
        "v22.mp3": {"title": "Old", "date": "1999"},
    }
    for name, tag in cases.items():
        (tmp_path / name).write_bytes(tag + frames)
        facts = probe_media(tmp_path / name)
        assert facts["tags"] == expected[name] and facts["duration"] == pytest.approx(cbr)
        assert (facts["sample_rate"], facts["channels"], facts["bitrate"]) == (44100, 2, 128000)
    v1 = b"TAG" + b"Song".ljust(30, b"\x00") + b"Band".ljust(30, b"\x00") + bytes(30) + b"2001" + bytes(30) + b"\x00"
    (tmp_path / "v1.mp3").write_bytes(frames + v1)
    facts = probe_media(tmp_path / "v1.mp3")
    assert facts["tags"] == {"title": "Song", "artist": "Band", "date": "2001"}
    assert facts["duration"] == pytest.approx(cbr)  # the ID3v1 tag is not audio


@pytest.mark.parametrize(("data", "reason"), [
    (os.urandom(4096), "no MPEG audio frames"),
    (b"ID3\x04\x00\x00\x00\x00\x00\x10" + bytes(16) + b"\x00" * 64, "no MPEG audio frames"),
    (b"ID3\x04\x00\x00\x7f\x7f\x7f\x7f" + bytes(100), "truncated MP3: its ID3v2 tag declares"),
    (b"ID3\x04\x00\x00\xff\xff\xff\xff" + bytes(100), "corrupt ID3v2 tag header"),
    (b"\xff\xfb\x90\x00" + bytes(300), "no MPEG audio frames"),  # one frame header, cut off
])  # fmt: skip
def test_garbage_mp3s(tmp_path: Path, data: bytes, reason: str):
    path = tmp_path / "bad.mp3"
    path.write_bytes(data)
    with pytest.raises(ReadError, match=reason):
        probe_media(path)


def _box(kind: bytes, payload: bytes = b"", size: int | None = None) -> bytes:
    return struct.pack(">I4s", len(payload) + 8 if size is None else size, kind) + payload


def _mvhd(timescale: int, duration: int) -> bytes:
    return _box(b"mvhd", bytes(4) + struct.pack(">IIII", 0, 0, timescale, duration) + bytes(80))


FTYP = _box(b"ftyp", b"M4A \x00\x00\x02\x00isomiso2")


def test_hand_built_mp4s(tmp_path: Path):
    def probe_bytes(data: bytes) -> dict | None:
        path = tmp_path / "x.m4a"
        path.write_bytes(data)
        return probe_media(path)

    assert probe_bytes(FTYP + _box(b"moov", _mvhd(1000, 4321)) + _box(b"mdat", bytes(50)))["duration"] == 4.321
    assert probe_bytes(FTYP + _box(b"moov", _mvhd(600, 1200)) + _box(b"mdat", bytes(50), size=0))["duration"] == 2.0
    big = struct.pack(">I4sQ", 1, b"mdat", 16 + 50) + bytes(50)  # a 64-bit size
    assert probe_bytes(FTYP + big + _box(b"moov", _mvhd(10, 25)))["duration"] == 2.5
    # inside the movie box a size of 0 runs to its end
    assert probe_bytes(FTYP + _box(b"moov", _mvhd(10, 25) + _box(b"free", bytes(20), size=0)))["duration"] == 2.5
    fragmented = probe_bytes(FTYP + _box(b"moov", _mvhd(1000, 0)))
    assert fragmented is not None and "duration" not in fragmented  # unknown here: ffprobe's turn


@pytest.mark.parametrize(("data", "reason"), [
    (FTYP + _box(b"mdat", bytes(50), size=0), "no movie box"),  # size 0: to the end, and no moov
    (FTYP + _box(b"free", size=4), "declares 4 bytes"),  # smaller than its header: must not loop
    (FTYP + _box(b"moov", _mvhd(1000, 5), size=10_000), "truncated MP4"),  # past the end of the file
    (FTYP + struct.pack(">I4sQ", 1, b"mdat", 2**63), "truncated MP4"),
    (FTYP + _box(b"moov", _mvhd(0, 5)), "timescale of 0"),
    (FTYP + _box(b"moov", _box(b"trak", _box(b"tkhd", size=3))), "declares 3 bytes"),
    (FTYP + _box(b"moov", _box(b"trak", _box(b"mdia", size=1000))), "runs past the end"),
    (FTYP + _box(b"moov", _mvhd(1000, 5) + b"\x00\x00\x00"), "stray bytes"),
    (FTYP + _box(b"moov", _box(b"free") * (MAX_BOXES + 1)), f"more than {MAX_BOXES} boxes"),
    (FTYP + _box(b"free") * (MAX_BOXES + 1), f"more than {MAX_BOXES} boxes"),
])  # fmt: skip
def test_hostile_mp4_boxes(tmp_path: Path, data: bytes, reason: str):
    path = tmp_path / "hostile.mp4"
    path.write_bytes(data)
    assert reason in _probe_bounded(path)


def test_unknown_formats_are_left_to_ffprobe(tmp_path: Path):
    (tmp_path / "noise.m4a").write_bytes(os.urandom(1000))
    assert probe_media(tmp_path / "noise.m4a") is None
    (tmp_path / "x.mkv").write_bytes(b"\x1a\x45\xdf\xa3" + bytes(100))
    assert probe_media(tmp_path / "x.mkv") is None


def test_garbage_audio_is_a_failed_file_with_a_reason(tmp_path: Path):
    """Through the reader (whatever ffprobe says): failed, with the reason, never a crash."""
    for name, data in {
        "noise.mp3": os.urandom(2000),
        "noise.m4a": os.urandom(2000),
        "boxes.m4a": FTYP + _box(b"moov", _mvhd(1000, 5), size=10_000),
        "cut.wav": make_wav(tmp_path / "tone.wav", 1.0).read_bytes()[:3000],
        "noise.flac": b"fLaC" + os.urandom(200),
        "noise.ogg": b"OggS" + os.urandom(200),
    }.items():
        (tmp_path / name).write_bytes(data)
        result = perceive_file(tmp_path, name, PerceiveOptions(asr=False))
        if name == "cut.wav" and result.status == "ok":
            continue  # ffprobe reads what is there of a truncated WAV
        assert result.status == "failed" and result.reader == "audio" and result.reason, (name, result)
        info = probe(tmp_path / name)  # the validator's measurement: never a crash
        if name not in ("cut.wav", "boxes.m4a"):  # (ffprobe finds durations in those two)
            assert info.duration is None and info.error, (name, info)
