"""Attributes derived from a record, and the HippoCamp difficulty score.

The features and the score follow the release's analysis code (``generate_difficulty_reports.py``)
exactly, so scores computed here match the published figures for the same input:

* ``evidence_files`` = ``file_number`` (else the number of ``file_path`` entries)
* ``modality_count`` / ``file_type_count`` = distinct ``file_modality`` / ``file_type`` values
* ``evidence_items`` / ``reasoning_steps`` = max(number of items, largest numeric ``evidence_id`` /
  ``step_id``); equal to ``len(evidence)`` / ``len(rationale)`` when ids run 1..n
* ``question_tokens`` / ``answer_tokens`` = words (``[A-Za-z0-9_]+``) plus CJK characters
* ``time_span_days`` = latest minus earliest of the creation and modification times of the
  question's files (0 with fewer than two timestamps)

Each feature is normalized as ``clip(log1p(v) / log1p(p90), 0, max(1, log1p(p98)/log1p(p90)) + .25)``
with p90/p98 fitted over the questions loaded together (linear-interpolated percentiles, as numpy).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from hippocamp.schema.record import HippoCampRecord

__all__ = [
    "FEATURE_KEYS",
    "WEIGHTS",
    "DifficultyModel",
    "Features",
    "count_tokens",
    "features_of",
    "percentile",
]

_TOKEN_RE = re.compile(r"[A-Za-z0-9_]+|[\u4e00-\u9fff]")

FEATURE_KEYS = (
    "evidence_files",
    "modality_count",
    "file_type_count",
    "evidence_items",
    "reasoning_steps",
    "question_tokens",
    "answer_tokens",
    "time_span_days",
)
WEIGHTS = {
    "evidence_files": 0.19,
    "modality_count": 0.10,
    "file_type_count": 0.08,
    "evidence_items": 0.18,
    "reasoning_steps": 0.20,
    "question_tokens": 0.10,
    "answer_tokens": 0.07,
    "time_span_days": 0.08,
}


def count_tokens(text: Any) -> int:
    """Words plus CJK characters, the release's lightweight token count."""
    if not isinstance(text, str) or not text.strip():
        return 0
    return len(_TOKEN_RE.findall(text))


@dataclass(frozen=True)
class Features:
    """The eight difficulty features of one question (see the module docstring)."""

    evidence_files: float
    modality_count: float
    file_type_count: float
    evidence_items: float
    reasoning_steps: float
    question_tokens: float
    answer_tokens: float
    time_span_days: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def _parse_int(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"[+-]?\d+", text):
            return int(text)
    return 0


def _max_id_or_len(ids: Sequence[Any]) -> int:
    if not ids:
        return 0
    return max(max(_parse_int(i) for i in ids), len(ids))


def time_span_days(stamps: Iterable[datetime]) -> float:
    values = [_naive(t) for t in stamps if t is not None]
    if len(values) < 2:
        return 0.0
    return max(0.0, (max(values) - min(values)).total_seconds() / 86400.0)


def _naive(t: datetime) -> datetime:
    if t.tzinfo is not None:
        from datetime import UTC

        return t.astimezone(UTC).replace(tzinfo=None)
    return t


TimesOf = Callable[[str], list[datetime]]


def features_of(record: HippoCampRecord, times_of: TimesOf | None = None) -> Features:
    """Features of one record; ``times_of(path)`` gives a file's timestamps (for time_span_days)."""
    paths = [p for p in record.file_path if isinstance(p, str)]
    number = record.file_number if isinstance(record.file_number, int) else len(paths)
    stamps: list[datetime] = []
    if times_of is not None:
        for path in paths:
            stamps.extend(times_of(path))
    return Features(
        evidence_files=float(max(0, number)),
        modality_count=float(len(set(record.file_modality))),
        file_type_count=float(len(set(record.file_type))),
        evidence_items=float(_max_id_or_len([e.evidence_id for e in record.evidence])),
        reasoning_steps=float(_max_id_or_len([s.step_id for s in record.rationale])),
        question_tokens=float(count_tokens(record.question)),
        answer_tokens=float(count_tokens(record.answer)),
        time_span_days=time_span_days(stamps),
    )


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0–100) by linear interpolation between closest ranks (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    h = (len(ordered) - 1) * q / 100.0
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


@dataclass(frozen=True)
class DifficultyModel:
    """p90/p98 of each feature, fitted over a set of questions; scores one question at a time."""

    p90: dict[str, float]
    p98: dict[str, float]

    @classmethod
    def fit(cls, rows: Sequence[Features]) -> DifficultyModel:
        if not rows:
            raise ValueError("cannot fit the difficulty score on zero questions")
        p90: dict[str, float] = {}
        p98: dict[str, float] = {}
        for key in FEATURE_KEYS:
            values = [getattr(r, key) for r in rows]
            a, b = percentile(values, 90), percentile(values, 98)
            a = 1.0 if a <= 0 else a
            b = a if b <= 0 else b
            p90[key], p98[key] = a, b
        return cls(p90=p90, p98=p98)

    def normalized(self, f: Features) -> dict[str, float]:
        out = {}
        for key in FEATURE_KEYS:
            p90, p98 = self.p90[key], self.p98[key]
            base = math.log1p(max(0.0, getattr(f, key))) / math.log1p(p90)
            cap = max(1.0, math.log1p(p98) / math.log1p(p90))
            out[key] = min(max(base, 0.0), cap + 0.25)
        return out

    def raw(self, f: Features) -> float:
        n = self.normalized(f)
        base = sum(WEIGHTS[k] * n[k] for k in FEATURE_KEYS)
        interaction = (
            0.10 * math.sqrt(n["evidence_files"] * n["reasoning_steps"])
            + 0.07 * math.sqrt(n["modality_count"] * n["file_type_count"])
            + 0.06 * math.sqrt(n["evidence_items"] * n["time_span_days"])
        )
        hard = sum(1 for k in ("evidence_files", "evidence_items", "reasoning_steps") if n[k] >= 0.85)
        bonus = (0.05 if hard >= 2 else 0.0) + (0.03 if hard >= 3 else 0.0)
        if n["question_tokens"] >= 0.90 and n["answer_tokens"] >= 0.90:
            bonus += 0.02
        return base + interaction + bonus

    def score(self, f: Features) -> float:
        """Difficulty on 1–99: ``clip(100 / (1 + exp(-4.4 * (raw - 0.70))), 1, 99)``."""
        value = 100.0 / (1.0 + math.exp(-4.4 * (self.raw(f) - 0.70)))
        return min(max(value, 1.0), 99.0)
