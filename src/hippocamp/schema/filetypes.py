"""File extensions and the HippoCamp modalities they belong to (text, document, image, audio, video)."""

from __future__ import annotations

from pathlib import PurePosixPath

__all__ = ["MODALITIES", "allowed_modalities", "extension", "modality_of"]

MODALITIES = ("text", "document", "image", "audio", "video")

_PRIMARY: dict[str, str] = {}
_ALSO: dict[str, set[str]] = {}


def _add(modality: str, exts: str, also: str = "") -> None:
    for ext in exts.split():
        _PRIMARY[ext] = modality
        if also:
            _ALSO.setdefault(ext, set()).update(also.split())


_add("text", "txt md markdown log json jsonl yaml yml xml toml ini cfg srt vtt tex py js sh", "document")
_add("text", "csv tsv html htm eml mbox ics vcf rtf", "document")
_add("document", "pdf doc docx odt xls xlsx xlsm ods ppt pptx odp key pages numbers epub", "text")
_add("image", "jpg jpeg png heic heif gif bmp tif tiff webp svg raw cr2 nef dng")
_add("audio", "mp3 m4a wav aac flac ogg oga opus wma aiff aif amr")
_add("video", "mp4 mov mkv avi webm m4v wmv flv 3gp mpg mpeg ts", "audio")
# an animated gif is a video to some annotators
_ALSO.setdefault("gif", set()).add("video")


def extension(path: str) -> str:
    """Lower-case extension without the dot (``"report (1).PDF"`` -> ``"pdf"``); ``""`` if none."""
    return PurePosixPath(path.replace("\\", "/")).suffix.lower().lstrip(".")


def modality_of(path: str) -> str | None:
    """The primary modality of a file by its extension, or None when unknown."""
    return _PRIMARY.get(extension(path))


def allowed_modalities(path: str) -> set[str]:
    """Every modality an annotator may reasonably give this file type (empty when unknown)."""
    ext = extension(path)
    if ext not in _PRIMARY:
        return set()
    return {_PRIMARY[ext], *_ALSO.get(ext, set())}
