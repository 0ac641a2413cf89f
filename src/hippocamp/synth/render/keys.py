"""Keys over the units a media renderer draws or speaks (lines, utterances, scenes): a key marks one
unbroken run of them, and its text is theirs with white space folded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["clean", "key_runs"]


def key_runs(keys: Sequence[Iterable[str | None]], what: str) -> dict[str, tuple[int, int]]:
    """First and last position of each key over a sequence of key sets; a key must mark one unbroken run."""
    seen: dict[str, list[int]] = {}
    for i, group in enumerate(keys):
        for key in dict.fromkeys(k for k in group if k):
            seen.setdefault(key, []).append(i)
    for key, where in seen.items():
        if where[-1] - where[0] + 1 != len(where):
            raise ValueError(f"key {key!r} marks {what} that are not consecutive (positions {where})")
    return {key: (where[0], where[-1]) for key, where in seen.items()}


def clean(text: str) -> str:
    return " ".join(text.split())
