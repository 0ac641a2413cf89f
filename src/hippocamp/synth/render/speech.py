"""Speech: utterances spoken by espeak-ng into one recording (.wav, .mp3, .m4a).

A key's locator is the time range of its utterances (``{"unit": "timestamp", "position": {"start": S,
"end": E}}``, seconds, widened to 0.01 s). Audio is encoded with bit-exact ffmpeg flags.
"""

from __future__ import annotations

import array
import math
import sys
import tempfile
import wave
from pathlib import Path
from typing import Any

from hippocamp.synth.render import Placed, Placements, Utterance
from hippocamp.synth.render.keys import clean, key_runs
from hippocamp.synth.render.programs import AUDIO_BITRATE, BITEXACT, find_program, run_program

__all__ = ["SAMPLE_RATE", "render_speech", "silence", "speak", "time_locator", "write_wav"]

#: sample rate of espeak-ng's output and of every rendered sound track
SAMPLE_RATE = 22050

_LEAD = 0.3  # seconds of silence before the first utterance
_TRIM_LEVEL = 100  # |sample| at or below this counts as silence when trimming espeak's output
_TRIM_MARGIN = 0.02  # seconds kept around the sound when trimming


def speak(text: str, voice: str, speed: int, pitch: int) -> array.array:
    """``text`` spoken by espeak-ng: 16-bit mono samples at `SAMPLE_RATE`, silence trimmed at both ends."""
    exe = find_program("espeak-ng", "speech")
    with tempfile.TemporaryDirectory(prefix="hippocamp-speech-") as tmp:
        out = Path(tmp) / "say.wav"
        command = [exe, "-v", voice, "-s", str(speed), "-p", str(pitch), "-z", "-b", "1", "--stdin", "-w", str(out)]
        run_program(command, "espeak-ng", stdin=clean(text).encode("utf-8"))
        with wave.open(str(out), "rb") as w:
            if (w.getnchannels(), w.getsampwidth(), w.getframerate()) != (1, 2, SAMPLE_RATE):
                raise RuntimeError(f"espeak-ng wrote unexpected audio: {w.getparams()}")
            samples = array.array("h", w.readframes(w.getnframes()))
    if sys.byteorder == "big":
        samples.byteswap()
    loud = [i for i, v in enumerate(samples) if abs(v) > _TRIM_LEVEL]
    if not loud:
        raise RuntimeError(f"espeak-ng produced no sound for {text!r}")
    margin = round(_TRIM_MARGIN * SAMPLE_RATE)
    return samples[max(0, loud[0] - margin) : min(len(samples), loud[-1] + 1 + margin)]


def silence(seconds: float) -> array.array:
    return array.array("h", bytes(2 * round(seconds * SAMPLE_RATE)))


def write_wav(path: Path, samples: array.array) -> None:
    data = samples
    if sys.byteorder == "big":
        data = array.array("h", samples)
        data.byteswap()
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(data.tobytes())


def time_locator(start: float, end: float) -> dict[str, Any]:
    """A time-range locator widened to whole hundredths of a second."""
    lo = math.floor(start * 100 + 1e-6) / 100
    hi = math.ceil(end * 100 - 1e-6) / 100
    return {"unit": "timestamp", "position": {"start": round(lo, 2), "end": round(max(lo, hi), 2)}}


def _encode_audio(wav: Path, path: Path) -> None:
    """Convert a WAV to the format of ``path``'s suffix (.mp3, .m4a) with fixed, bit-exact settings."""
    suffix = path.suffix.lower()
    codec = {".mp3": ["-c:a", "libmp3lame"], ".m4a": ["-c:a", "aac", "-movflags", "+faststart"]}
    exe = find_program("ffmpeg", f"{suffix} audio")
    command = [exe, "-nostdin", "-hide_banner", "-v", "error", "-y", "-i", str(wav), *codec[suffix]]
    command += ["-b:a", AUDIO_BITRATE, *BITEXACT, str(path)]
    run_program(command, "ffmpeg")


def render_speech(
    path: str | Path, utterances: list[Utterance], *, voice: str = "en-us", speed: int = 150, pitch: int = 50
) -> Placements:
    """Speak ``utterances`` with espeak-ng into one recording (.wav, .mp3 or .m4a by suffix).

    The recording opens with a short silence; each utterance (trimmed of espeak's own silence) is
    followed by its ``pause``. A key's locator spans its utterances' sound, not the pauses."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".wav", ".mp3", ".m4a"):
        raise ValueError(f"render_speech writes .wav, .mp3 or .m4a, not {path.name!r}")
    if not utterances:
        raise ValueError("render_speech needs at least one utterance")
    runs = key_runs([[u.key] for u in utterances], "utterances")
    if suffix != ".wav":
        find_program("ffmpeg", f"{suffix} audio")
    track = silence(_LEAD)
    spans: list[tuple[float, float]] = []
    for utterance in utterances:
        if utterance.pause < 0 or not utterance.text.strip():
            raise ValueError(f"an utterance needs text and a pause of at least 0 s: {utterance!r}")
        sound = speak(utterance.text, voice, speed, pitch)
        spans.append((len(track) / SAMPLE_RATE, (len(track) + len(sound)) / SAMPLE_RATE))
        track += sound
        track += silence(utterance.pause)
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".wav":
        write_wav(path, track)
    else:
        with tempfile.TemporaryDirectory(prefix="hippocamp-speech-") as tmp:
            wav = Path(tmp) / "speech.wav"
            write_wav(wav, track)
            _encode_audio(wav, path)
    return {
        key: Placed(
            time_locator(spans[first][0], spans[last][1]),
            " ".join(clean(u.text) for u in utterances[first : last + 1]),
        )
        for key, (first, last) in runs.items()
    }
