"""synth.render.media: pictures, speech and videos render byte-identically from the same spec and
read back through hippocamp.perceive at the locators the renderers report.

Tests marked slow run tesseract or Whisper. Locally a missing part (tesseract, faster-whisper and its
model, ffmpeg, espeak-ng) skips with the reason; with HIPPOCAMP_REQUIRE_MODELS=1 (CI) it fails instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import wave
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from PIL import Image

from hippocamp.perceive import FileResult, PerceiveOptions, media, perceive_file
from hippocamp.schema.locators import RegionLocator, TimeRange, parse_locator
from hippocamp.synth.render import Exif, Line, Placements, Scene, Utterance, speech
from hippocamp.synth.render import media as render

LINES = {
    "receipt": [
        Line("Paws & Claws Veterinary", style="title", key="shop"),
        Line("Westersingel 12, Rotterdam", style="small"),
        Line("Date: 12 Oct 2024 10:30", key="date"),
        Line("Vaccination booster\tEUR 86.00", key="item"),
        Line("TOTAL PAID\tEUR 86.00", style="heading", key="total"),
        Line("Thank you for your visit!", style="small"),
    ],
    "sign": [
        Line("Bakkerij De Zon", style="title", key="name"),
        Line("Open Monday to Saturday", key="hours"),
        Line("from 7:00 to 18:00", key="hours"),
    ],
    "whiteboard": [
        Line("Sprint planning", style="title"),
        Line("Release on Friday 18 October", style="bullet", key="release"),
        Line("Budget approved: EUR 12,400", style="bullet", key="budget"),
        Line("Ask Priya about the database migration before the demo next week", style="bullet", key="ask"),
    ],
    "screenshot": [
        Line("Messages", style="title"),
        Line("Oskar: the keys are under the blue flower pot", key="keys"),
        Line("Mira: thanks, I will pick them up at five", key="pick"),
        Line("Booking code\tQX7-2291", key="code"),
    ],
    "photo": [Line("Trailhead Parking", style="heading", key="trail")],
}
EXIF = Exif(time=datetime(2024, 10, 12, 11, 2, 33), lat=51.918, lon=-4.4725, make="Apple", model="iPhone 12")
UTTERANCES = [
    Utterance("Reminder for next week.", pause=0.5),
    Utterance("The dentist appointment is on Tuesday morning.", key="dentist", pause=0.6),
    Utterance("Bring the insurance card and the blue folder.", key="dentist", pause=0.8),
    Utterance("Also call the plumber about the kitchen sink before Friday.", key="plumber"),
]
SCENES = [
    Scene([Line("Kitchen renovation", style="title"), Line("Week one")], seconds=3, key="intro"),
    Scene(
        [Line("New tiles ordered"), Line("Delivery on Thursday", key="delivery")],
        seconds=3,
        speech="The tiles will arrive on Thursday morning.",
        key="tiles",
        background="#f4efe6",
    ),
    Scene([Line("Budget so far: EUR 2,300")], seconds=4, speech="The plumber comes back next month.", key="budget"),
]
STOP = {"the", "and", "for", "are", "on", "at", "to", "is", "of", "a", "an", "so", "far", "about", "also"}


def _require(reason: str | None) -> None:
    """Skip (or fail under HIPPOCAMP_REQUIRE_MODELS=1) when a part is missing."""
    if reason is None:
        return
    if os.environ.get("HIPPOCAMP_REQUIRE_MODELS") == "1":
        pytest.fail(f"required here (HIPPOCAMP_REQUIRE_MODELS=1): {reason}")
    pytest.skip(reason)


def _program(*names: str) -> None:
    for name in names:
        _require(None if shutil.which(name) else f"needs the {name} program")


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _content(text: str) -> set[str]:
    return {w for w in _words(text) if w not in STOP}


def _read(root: Path, rel: str, **options: object) -> FileResult:
    result = perceive_file(root, rel, PerceiveOptions(**options))  # type: ignore[arg-type]
    assert result.status == "ok", (result.status, result.reason, result.notes)
    return result


def _by_source(result: FileResult, source: str) -> list:
    return [s for s in result.segments if s.meta.get("source") == source]


def _span(placements: Placements, key: str) -> tuple[float, float]:
    locator = parse_locator(placements[key].locator)
    assert isinstance(locator, TimeRange)
    return locator.start, locator.end


@pytest.fixture(scope="module")
def whisper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Load Whisper tiny.en once for the module (its verification cache kept out of the real home)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HIPPOCAMP_MODELS_DIR", str(tmp_path_factory.mktemp("models")))
        _require(media.asr_missing("tiny.en"))
        media.whisper_model("tiny.en")
    yield


# -- pictures --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", render.IMAGE_KINDS)
def test_images_are_byte_identical_and_boxes_lie_inside(kind: str, tmp_path: Path):
    for name in ("a.jpg", "b.jpg", "a.png", "b.png"):
        placed = render.render_image(tmp_path / name, LINES[kind], kind=kind, exif=EXIF, seed=7)
    assert (tmp_path / "a.jpg").read_bytes() == (tmp_path / "b.jpg").read_bytes()
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    render.render_image(tmp_path / "c.jpg", LINES[kind], kind=kind, exif=EXIF, seed=8)
    assert (tmp_path / "c.jpg").read_bytes() != (tmp_path / "a.jpg").read_bytes()
    width, height = Image.open(tmp_path / "a.png").size
    assert list(placed) == list(dict.fromkeys(line.key for line in LINES[kind] if line.key))
    for key, spot in placed.items():
        locator = parse_locator(spot.locator)
        assert isinstance(locator, RegionLocator) and locator.box_units == "px"
        x0, y0, x1, y1 = locator.box
        assert 0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height
        assert spot.text == " ".join(" ".join(li.text.split()) for li in LINES[kind] if li.key == key)


def test_photo_without_text_and_fixed_size(tmp_path: Path):
    assert render.render_image(tmp_path / "p.jpg", [], kind="photo", size=(640, 480), exif=EXIF) == {}
    assert Image.open(tmp_path / "p.jpg").size == (640, 480)
    with pytest.raises(ValueError, match="need"):
        render.render_image(tmp_path / "s.png", [Line("Open every day")] * 6, kind="sign", size=(400, 200))


@pytest.mark.parametrize("name", ["photo.jpg", "photo.png"])
def test_exif_reads_back(name: str, tmp_path: Path):
    render.render_image(tmp_path / name, LINES["sign"], kind="sign", exif=EXIF)
    [meta] = _read(tmp_path, name, ocr=False).segments
    assert meta.meta["taken"] == "2024-10-12T11:02:33"
    assert meta.meta["camera"] == "Apple iPhone 12"
    assert meta.meta["gps_lat"] == pytest.approx(51.918, abs=1e-6)
    assert meta.meta["gps_lon"] == pytest.approx(-4.4725, abs=1e-6)
    assert meta.text.startswith("Photo taken 2024-10-12 11:02 with Apple iPhone 12 at 51.918 N, 4.47")


def test_exif_time_offset_and_southern_hemisphere(tmp_path: Path):
    when = datetime(2023, 1, 5, 18, 45, 0, tzinfo=timezone(timedelta(hours=-3)))
    render.render_image(tmp_path / "rio.jpg", [], kind="photo", exif=Exif(time=when, lat=-22.951916, lon=-43.2105))
    [meta] = _read(tmp_path, "rio.jpg", ocr=False).segments
    assert meta.meta["taken"] == "2023-01-05T18:45:00" and meta.meta["taken_offset"] == "-03:00"
    assert (meta.meta["gps_lat"], meta.meta["gps_lon"]) == pytest.approx((-22.951916, -43.2105), abs=1e-6)


def test_bad_image_specs_are_refused(tmp_path: Path):
    gap = [Line("one", key="k"), Line("two"), Line("three", key="k")]
    with pytest.raises(ValueError, match="not consecutive"):
        render.render_image(tmp_path / "a.png", gap)
    with pytest.raises(ValueError, match="unknown image kind"):
        render.render_image(tmp_path / "a.png", [], kind="poster")
    with pytest.raises(ValueError, match=r"\.gif"):
        render.render_image(tmp_path / "a.gif", [])
    with pytest.raises(ValueError, match="style"):
        render.render_image(tmp_path / "a.png", [Line("x", style="huge")])
    with pytest.raises(ValueError, match="both lat and lon"):
        render.render_image(tmp_path / "a.jpg", [], exif=Exif(lat=1.0))


@pytest.mark.slow
@pytest.mark.parametrize("kind", render.IMAGE_KINDS)
def test_ocr_finds_each_key_inside_its_box(kind: str, tmp_path: Path):
    _require(media.ocr_missing())
    name = "shot.png" if kind == "screenshot" else "pic.jpg"
    placed = render.render_image(tmp_path / name, LINES[kind], kind=kind, exif=EXIF, seed=1)
    words = [w for s in _by_source(_read(tmp_path, name), "ocr") for w in s.meta["words"]]
    for key, spot in placed.items():
        x0, y0, x1, y1 = spot.locator["position"]["bbox"]
        inside = [w["text"] for w in words if x0 <= (w["box"][0] + w["box"][2]) / 2 <= x1 and y0 <= w["box"][1] < y1]
        expected, seen = _words(spot.text), _words(" ".join(inside))
        assert len(expected & seen) >= 0.8 * len(expected), (key, spot.text, inside)
        assert len(seen - expected) <= max(1, 0.2 * len(seen)), (key, spot.text, inside)  # nothing else in the box


@pytest.mark.slow
def test_photo_without_text_gives_no_ocr(tmp_path: Path):
    _require(media.ocr_missing())
    render.render_image(tmp_path / "hills.jpg", [], kind="photo", exif=EXIF, seed=3)
    assert _by_source(_read(tmp_path, "hills.jpg"), "ocr") == []


# -- speech ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def memo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Placements]:
    _program("espeak-ng")
    root = tmp_path_factory.mktemp("speech")
    return root, render.render_speech(root / "memo.wav", UTTERANCES)


def test_speech_is_timed_exactly(memo: tuple[Path, Placements], tmp_path: Path):
    root, placed = memo
    render.render_speech(tmp_path / "again.wav", UTTERANCES)
    assert (tmp_path / "again.wav").read_bytes() == (root / "memo.wav").read_bytes()
    with wave.open(str(root / "memo.wav")) as w:
        duration = w.getnframes() / w.getframerate()
    assert placed["dentist"].text == f"{UTTERANCES[1].text} {UTTERANCES[2].text}"
    assert placed["plumber"].text == UTTERANCES[3].text
    dentist, plumber = _span(placed, "dentist"), _span(placed, "plumber")
    assert 0.5 < dentist[0] < dentist[1] < plumber[0] < plumber[1] <= duration
    assert plumber[0] - dentist[1] == pytest.approx(UTTERANCES[2].pause, abs=0.02)
    assert duration - plumber[1] == pytest.approx(UTTERANCES[3].pause, abs=0.01)  # the last one's pause ends it
    # each utterance alone: the memo is the lead-in, the utterances and their pauses
    expected = speech._LEAD + sum(u.pause for u in UTTERANCES)
    for i, utterance in enumerate(UTTERANCES):
        render.render_speech(tmp_path / f"u{i}.wav", [Utterance(utterance.text, pause=0)])
        with wave.open(str(tmp_path / f"u{i}.wav")) as w:
            expected += w.getnframes() / w.getframerate() - speech._LEAD
    assert duration == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize("suffix", [".mp3", ".m4a"])
def test_compressed_speech_is_byte_identical(suffix: str, memo: tuple[Path, Placements], tmp_path: Path):
    _program("ffmpeg")
    root, placed = memo
    first = render.render_speech(tmp_path / f"a{suffix}", UTTERANCES)
    render.render_speech(tmp_path / f"b{suffix}", UTTERANCES)
    assert (tmp_path / f"a{suffix}").read_bytes() == (tmp_path / f"b{suffix}").read_bytes()
    assert first == placed
    [meta] = _read(tmp_path, f"a{suffix}", asr=False).segments
    wav = _read(root, "memo.wav", asr=False).segments[0].meta["duration"]
    assert meta.meta["duration"] == pytest.approx(wav, abs=0.1)


def test_missing_programs_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name: None if name == "espeak-ng" else real(name))
    with pytest.raises(render.ProgramMissingError, match="espeak-ng"):
        render.render_speech(tmp_path / "a.wav", UTTERANCES)
    monkeypatch.setattr(shutil, "which", lambda name: None if name == "ffmpeg" else real(name))
    with pytest.raises(render.ProgramMissingError, match="ffmpeg"):
        render.render_speech(tmp_path / "a.mp3", UTTERANCES)
    with pytest.raises(render.ProgramMissingError, match="ffmpeg"):
        render.render_video(tmp_path / "a.mp4", SCENES)


def test_bad_speech_specs_are_refused(tmp_path: Path):
    with pytest.raises(ValueError, match="not consecutive"):
        render.render_speech(tmp_path / "a.wav", [Utterance("a", "k"), Utterance("b"), Utterance("c", "k")])
    with pytest.raises(ValueError, match=r"\.ogg"):
        render.render_speech(tmp_path / "a.ogg", UTTERANCES)


@pytest.mark.slow
def test_whisper_hears_each_key_in_its_time_range(memo: tuple[Path, Placements], whisper: None):
    root, placed = memo
    sentences = [s for c in _by_source(_read(root, "memo.wav"), "transcript") for s in c.meta["sentences"]]
    for key, spot in placed.items():
        start, end = _span(placed, key)
        heard = " ".join(s["text"] for s in sentences if s["start"] < end and s["end"] > start)
        expected = _content(spot.text)
        assert len(expected & _words(heard)) >= 0.6 * len(expected), (key, heard)


# -- video -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Placements]:
    _program("espeak-ng", "ffmpeg", "ffprobe")
    root = tmp_path_factory.mktemp("video")
    return root, render.render_video(root / "clip.mp4", SCENES)


def test_video_is_byte_identical_and_timed(clip: tuple[Path, Placements], tmp_path: Path):
    root, placed = clip
    assert render.render_video(tmp_path / "again.mp4", SCENES) == placed
    data = (root / "clip.mp4").read_bytes()
    assert (tmp_path / "again.mp4").read_bytes() == data
    assert b"x264 - core" not in data  # the encoder's version banner is dropped
    spans = [_span(placed, key) for key in ("intro", "tiles", "budget")]
    assert spans[0][0] == 0 and spans[0][1] == spans[1][0] and spans[1][1] == spans[2][0]
    assert spans[0][1] == 3.0 and spans[2][1] - spans[2][0] == 4.0
    assert _span(placed, "delivery") == spans[1] and placed["delivery"].text == "Delivery on Thursday"
    assert placed["tiles"].text == "New tiles ordered Delivery on Thursday The tiles will arrive on Thursday morning."
    probe = subprocess.run(
        [
            "ffprobe",
            "-v",
            "error",
            "-show_entries",
            "stream=codec_type,duration",
            "-of",
            "csv=p=0",
            str(root / "clip.mp4"),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    durations = dict(line.split(",") for line in probe)
    assert set(durations) == {"video", "audio"}
    assert float(durations["video"]) == pytest.approx(spans[2][1], abs=0.01)
    assert float(durations["audio"]) == pytest.approx(spans[2][1], abs=0.05)


def test_bad_video_specs_are_refused(tmp_path: Path):
    with pytest.raises(ValueError, match=r"\.avi"):
        render.render_video(tmp_path / "a.avi", SCENES)
    with pytest.raises(ValueError, match="even size"):
        render.render_video(tmp_path / "a.mp4", SCENES, size=(641, 360))
    gap = [Scene([], key="k"), Scene([]), Scene([Line("x", key="k")])]
    with pytest.raises(ValueError, match="not consecutive"):
        render.render_video(tmp_path / "a.mp4", gap)


@pytest.mark.slow
def test_video_frames_and_narration_read_back_in_each_scene(clip: tuple[Path, Placements], whisper: None):
    _require(media.ocr_missing())
    root, placed = clip
    result = _read(root, "clip.mp4", frame_interval=1.0)
    frames = _by_source(result, "ocr")
    sentences = [s for c in _by_source(result, "transcript") for s in c.meta["sentences"]]
    for scene in SCENES:
        assert scene.key is not None
        start, end = _span(placed, scene.key)
        seen = " ".join(f.text for f in frames if start <= f.locator.start and f.locator.end <= end)
        expected = _words(" ".join(line.text for line in scene.lines))
        assert len(expected & _words(seen)) >= 0.8 * len(expected), (scene.key, seen)
        if scene.speech:
            heard = " ".join(s["text"] for s in sentences if s["start"] < end and s["end"] > start)
            assert len(_content(scene.speech) & _words(heard)) >= 0.6 * len(_content(scene.speech)), heard
