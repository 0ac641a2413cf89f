"""Media readers, by the names they had when they lived in one module: photos (`image`), audio
(`audio`), video (`video`), with OCR (`ocr`), speech recognition (`asr`) and header probing
(`avprobe`) beside them. New code imports from those modules; this one only re-exports.
"""

from __future__ import annotations

from hippocamp.perceive.asr import (
    ASR_MODELS,
    CHUNK_SECONDS,
    FASTER_WHISPER,
    WHISPER_BASE_1,
    WHISPER_BASE_2,
    WHISPER_TINY,
    Transcript,
    WhisperSpec,
    asr_missing,
    transcribe,
    whisper_model,
    whisper_model_dir,
)
from hippocamp.perceive.audio import AudioReader
from hippocamp.perceive.avprobe import FFPROBE, probe_media
from hippocamp.perceive.image import PILLOW_HEIF, ImageReader, image_facts
from hippocamp.perceive.ocr import TESSERACT, OcrBlock, ocr_image, ocr_missing
from hippocamp.perceive.video import FFMPEG, MAX_FRAMES, VideoReader

__all__ = [
    "ASR_MODELS",
    "CHUNK_SECONDS",
    "FASTER_WHISPER",
    "FFMPEG",
    "FFPROBE",
    "MAX_FRAMES",
    "PILLOW_HEIF",
    "TESSERACT",
    "WHISPER_BASE_1",
    "WHISPER_BASE_2",
    "WHISPER_TINY",
    "AudioReader",
    "ImageReader",
    "OcrBlock",
    "Transcript",
    "VideoReader",
    "WhisperSpec",
    "asr_missing",
    "image_facts",
    "ocr_image",
    "ocr_missing",
    "probe_media",
    "transcribe",
    "whisper_model",
    "whisper_model_dir",
]
