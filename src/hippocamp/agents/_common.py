"""Small pieces every agent needs: ending an episode on a model failure, finding cited paths."""

from __future__ import annotations

from collections.abc import Iterable

from hippocamp.agents.base import Answer, Meter
from hippocamp.models.errors import ModelError

__all__ = ["files_in_text", "model_failure"]


def model_failure(meter: Meter, exc: Exception) -> Answer:
    """The answer of an episode a model (or tool) failure ended: ``stop="error"``, the trace kept."""
    kind = "model error" if isinstance(exc, ModelError) else type(exc).__name__
    return meter.answer("", stop="error", error=f"{kind}: {exc}")


def files_in_text(text: str, candidates: Iterable[str]) -> list[str]:
    """The candidate paths a text names, by full path or by file name (case-insensitive)."""
    low = text.lower()
    out = []
    for path in candidates:
        name = path.rsplit("/", 1)[-1].lower()
        stem = name.rsplit(".", 1)[0]
        if (path.lower() in low or name in low or (len(stem) > 6 and stem in low)) and path not in out:
            out.append(path)
    return out
