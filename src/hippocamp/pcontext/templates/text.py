"""The phrase banks' names as they were when the banks were Python code: the data now lives in
``synth/personas/data/phrases.json`` (the interview's in ``interview.json``), read and validated by
`hippocamp.synth.personas.banks` on first access to a name. ``PATTERNS`` keeps its old shape (dicts);
`banks.phrase_bank().patterns` has the typed `Pattern` models."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hippocamp.synth.personas.banks import interview_bank, phrase_bank

__all__ = [
    "CONTACT_HISTORY",
    "CONTACT_KINDS",
    "FILLER_EVENTS",
    "FILLER_LINES",
    "FILLER_REPLIES",
    "GENERIC_ANSWERS",
    "OPENERS",
    "PATTERNS",
    "QUESTIONS",
    "REPLIES",
    "SHARED_ACTIVITY",
    "SIGNOFFS",
    "WORDS",
]

if TYPE_CHECKING:
    QUESTIONS: dict[str, tuple[str, ...]]
    GENERIC_ANSWERS: dict[str, tuple[str, ...]]
    CONTACT_KINDS: dict[str, tuple[str, ...]]
    CONTACT_HISTORY: dict[str, tuple[str, ...]]
    SHARED_ACTIVITY: dict[str, str]
    WORDS: dict[str, tuple[str, ...]]
    OPENERS: tuple[str, ...]
    SIGNOFFS: tuple[str, ...]
    REPLIES: tuple[str, ...]
    FILLER_LINES: tuple[str, ...]
    FILLER_REPLIES: tuple[str, ...]
    FILLER_EVENTS: tuple[tuple[str, str], ...]
    PATTERNS: tuple[dict[str, object], ...]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value: Any
    if name in ("QUESTIONS", "GENERIC_ANSWERS"):  # now per question in interview.json, grouped by topic here
        grouped: dict[str, list[str]] = {}
        for q in interview_bank().questions:
            grouped.setdefault(q.topic, []).extend([q.question] if name == "QUESTIONS" else q.answers)
        value = {topic: tuple(texts) for topic, texts in grouped.items()}
    else:
        bank = phrase_bank()
        value = tuple(p.model_dump() for p in bank.patterns) if name == "PATTERNS" else getattr(bank, name.lower())
    globals()[name] = value
    return value
