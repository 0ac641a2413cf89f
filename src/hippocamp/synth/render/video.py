"""Narrated slideshow videos (ffmpeg): each scene a still with its lines, its narration spoken by espeak-ng.

A scene key (and a key of a line on screen) gets the scene's time range (``{"unit": "timestamp",
"position": {"start": S, "end": E}}``, seconds). Video is encoded with bit-exact flags, one thread, no
metadata; the x264 version banner (an SEI unit) is dropped.
"""

from __future__ import annotations

import array
import math
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from PIL import Image, ImageColor, ImageDraw

from hippocamp.synth.render import Placed, Placements, Scene
from hippocamp.synth.render.keys import clean, key_runs
from hippocamp.synth.render.layout import STYLE_SCALE, draw_rows, layout_lines
from hippocamp.synth.render.programs import AUDIO_BITRATE, BITEXACT, find_program, run_program
from hippocamp.synth.render.speech import SAMPLE_RATE, silence, speak, time_locator, write_wav

__all__ = ["render_video"]

_SCENE_LEAD = 0.25  # seconds from a scene's start to its narration
_SCENE_TAIL = 0.4  # seconds of silence after a scene's narration


@lru_cache(maxsize=4)
def _has_x264(exe: str) -> bool:
    try:
        out = subprocess.run([exe, "-hide_banner", "-encoders"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return any(line.split()[1:2] == ["libx264"] for line in out.stdout.splitlines())


def _video_codec(exe: str) -> list[str]:
    """H.264 (x264, one thread, its version banner dropped) when the build has it, else MPEG-4 part 2."""
    if _has_x264(exe):
        return [
            "-c:v", "libx264", "-preset", "medium", "-tune", "stillimage", "-crf", "20",
            "-x264-params", "threads=1:lookahead-threads=1:sliced-threads=0",
            "-bsf:v", "filter_units=remove_types=6",
        ]  # fmt: skip
    return ["-c:v", "mpeg4", "-q:v", "3"]


def _luma(colour: tuple[int, int, int]) -> float:
    return 0.299 * colour[0] + 0.587 * colour[1] + 0.114 * colour[2]


def _frame(scene: Scene, size: tuple[int, int]) -> Image.Image:
    """A scene's still: its lines centred on its background, light or dark text for contrast."""
    w, h = size
    background = ImageColor.getcolor(scene.background, "RGB")
    ink = (20, 20, 24) if _luma(background) > 140 else (250, 250, 250)  # type: ignore[arg-type]
    img = Image.new("RGB", size, background)
    if scene.lines:
        body = max(16, h // 14)
        rows, height = layout_lines(scene.lines, body, w - w // 8)
        if height > h - h // 10:
            raise ValueError(f"the lines of a scene need {height} px of height but the video is {w}x{h} px")
        draw = ImageDraw.Draw(img)
        draw_rows(draw, rows, (w // 16, (h - height) // 2), w - w // 8, ink, tuple(STYLE_SCALE), scene.lines)
    return img


def render_video(
    path: str | Path,
    scenes: list[Scene],
    *,
    size: tuple[int, int] = (640, 360),
    voice: str = "en-us",
    fps: int = 2,
) -> Placements:
    """A slideshow video (.mp4, .m4v or .mov): each scene a still with its narration spoken from its start.

    A scene lasts ``seconds``, or longer when its narration needs it, rounded up to whole frames.
    A scene key's locator is the scene's time range and its text the scene's lines then its speech;
    a key on a line gets the same time range with the line's text."""
    path = Path(path)
    if path.suffix.lower() not in (".mp4", ".m4v", ".mov"):
        raise ValueError(f"render_video writes .mp4, .m4v or .mov, not {path.name!r}")
    if not scenes:
        raise ValueError("render_video needs at least one scene")
    if fps < 1 or size[0] % 2 or size[1] % 2 or min(size) < 64:
        raise ValueError(f"need fps >= 1 and an even size of at least 64 px, got fps={fps}, size={size}")
    runs = key_runs([[s.key, *(line.key for line in s.lines)] for s in scenes], "scenes")
    exe = find_program("ffmpeg", "video")
    track = array.array("h")
    bounds: list[tuple[int, int]] = []  # first frame, frame after the last
    frames = 0
    for scene in scenes:
        speech = speak(scene.speech, voice, 150, 50) if scene.speech and scene.speech.strip() else None
        need = max(scene.seconds, _SCENE_LEAD + len(speech) / SAMPLE_RATE + _SCENE_TAIL if speech else 0.0)
        if need <= 0:
            raise ValueError(f"a scene must last more than 0 s: {scene!r}")
        count = max(1, math.ceil(need * fps - 1e-9))
        bounds.append((frames, frames + count))
        frames += count
        if speech is not None:
            track += silence(_SCENE_LEAD)
            track += speech
        track += array.array("h", bytes(2 * (round(frames / fps * SAMPLE_RATE) - len(track))))
    total = frames / fps
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hippocamp-video-") as tmp:
        folder = Path(tmp)
        for i, scene in enumerate(scenes):
            still = folder / f"scene{i}.png"
            _frame(scene, size).save(still, format="PNG", compress_level=1)
            for n in range(*bounds[i]):
                target = folder / f"f{n:06d}.png"
                try:
                    os.link(still, target)
                except OSError:
                    shutil.copyfile(still, target)
        wav = folder / "audio.wav"
        write_wav(wav, track)
        command = [exe, "-nostdin", "-hide_banner", "-v", "error", "-y", "-framerate", str(fps)]
        command += ["-i", str(folder / "f%06d.png"), "-i", str(wav), "-map", "0:v:0", "-map", "1:a:0"]
        command += [*_video_codec(exe), "-pix_fmt", "yuv420p", "-r", str(fps), "-g", str(10 * fps)]
        command += ["-c:a", "aac", "-b:a", AUDIO_BITRATE, "-t", f"{total:.6f}", *BITEXACT]
        command += ["-flags:v", "+bitexact", "-movflags", "+faststart", str(path)]
        run_program(command, "ffmpeg")
    placements: Placements = {}
    for key, (first, last) in runs.items():
        texts: list[str] = []
        for scene in scenes[first : last + 1]:
            if scene.key == key:
                texts += [clean(line.text.replace("\t", " ")) for line in scene.lines]
                texts += [clean(scene.speech)] if scene.speech and scene.speech.strip() else []
            else:
                texts += [clean(line.text.replace("\t", " ")) for line in scene.lines if line.key == key]
        locator = time_locator(bounds[first][0] / fps, bounds[last][1] / fps)
        locator["position"]["end"] = min(locator["position"]["end"], round(total, 2))
        placements[key] = Placed(locator, " ".join(t for t in texts if t))
    return placements
