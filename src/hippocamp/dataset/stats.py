"""Counts, distributions and difficulty of a set of HippoCamp questions (``hippocamp stats``).

`compute_stats` takes the questions of one or more profiles and gives a `DatasetStats`: how many
questions there are per task family, profile, modality and file type; the three complexity axes of
the paper's figures 19–21 (evidence breadth, modality breadth, reasoning depth) per profile and for
the whole set (``"Benchmark"``); and the HippoCamp difficulty score, fitted once over every loaded
question as the release's analysis does, then summarized like its difficulty histogram.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, Field

from hippocamp.dataset.derived import DifficultyModel, Features, TimesOf, features_of
from hippocamp.schema.filetypes import extension, modality_of
from hippocamp.schema.record import HippoCampRecord

__all__ = [
    "AXES",
    "BENCHMARK",
    "DIFFICULTY_BIN_WIDTH",
    "HARD_THRESHOLD",
    "STATS_VERSION",
    "Axis",
    "DatasetStats",
    "DifficultySummary",
    "Group",
    "GroupStats",
    "QuestionRow",
    "compute_stats",
    "merged_bins",
]

#: Version of the `DatasetStats` file format (``stats.json``).
STATS_VERSION = "1"
#: Name of the aggregate over all profiles.
BENCHMARK = "Benchmark"
#: Difficulty histograms count scores in bins of this width over 0–100.
DIFFICULTY_BIN_WIDTH = 5
#: A question scoring at least this is counted as hard.
HARD_THRESHOLD = 70.0
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Axis:
    """One complexity axis: the feature it counts, how to show it, and where its long tail starts."""

    key: str
    title: str
    label: str
    tail_quantile: float


#: The three complexity axes, with the release's tail quantiles.
AXES = (
    Axis("evidence_files", "Evidence breadth", "Number of evidence files", 0.95),
    Axis("modality_count", "Modality breadth", "Number of modalities", 0.98),
    Axis("reasoning_steps", "Reasoning depth", "Number of reasoning steps", 0.98),
)

Group = tuple[str, Sequence[HippoCampRecord], TimesOf | None]


class QuestionRow(BaseModel):
    """One question: where it comes from, its task family, its eight features and its difficulty."""

    profile: str
    id: str
    qa_type: str
    evidence_files: float
    modality_count: float
    file_type_count: float
    evidence_items: float
    reasoning_steps: float
    question_tokens: float
    answer_tokens: float
    time_span_days: float
    difficulty: float


class DifficultySummary(BaseModel):
    """Difficulty scores of a group of questions and what the difficulty histogram shows of them."""

    scores: list[float]
    #: counts over [0, 5), [5, 10), ..., [95, 100]
    histogram: list[int]
    histogram_by_task: dict[str, list[int]]
    mean: float | None
    median: float | None
    #: fraction (0–1) of questions scoring at least `HARD_THRESHOLD`
    hard_share: float | None
    mean_by_task: dict[str, float]


class GroupStats(BaseModel):
    """The complexity distributions ({value: questions}) and the difficulty of one profile or of all."""

    questions: int
    evidence_files: dict[int, int]
    modality_count: dict[int, int]
    reasoning_steps: dict[int, int]
    difficulty: DifficultySummary


class DatasetStats(BaseModel):
    """Everything ``hippocamp stats`` reports; ``groups`` holds each profile and `BENCHMARK`.

    ``rows`` (one per question) are written apart, as ``questions.jsonl``, so they default to empty.
    """

    version: str = STATS_VERSION
    questions: int
    profiles: list[str]
    by_task: dict[str, int]
    by_profile: dict[str, int]
    by_modality: dict[str, int]
    by_file_type: dict[str, int]
    groups: dict[str, GroupStats]
    rows: list[QuestionRow] = Field(default_factory=list)


def compute_stats(groups: Sequence[Group]) -> DatasetStats:
    """Statistics of ``(profile_name, records, times_of)`` groups; ``times_of`` may be None.

    Raises ValueError when there are no questions, or when profile names repeat or are `BENCHMARK`.
    """
    names = [name for name, _, _ in groups]
    _check_names(names)
    scored = [(name, record, features_of(record, times_of)) for name, records, times_of in groups for record in records]
    if not scored:
        raise ValueError("no questions to compute statistics over")
    model = DifficultyModel.fit([features for _, _, features in scored])
    rows = [_row(name, record, features, model) for name, record, features in scored]
    records = [record for _, record, _ in scored]
    by_group = {name: _group_stats([r for r in rows if r.profile == name]) for name in names}
    return DatasetStats(
        questions=len(rows),
        profiles=names,
        by_task=_sorted_counts(r.qa_type for r in rows),
        by_profile={name: by_group[name].questions for name in names},
        by_modality=_sorted_counts(m for record in records for m in _modalities(record)),
        by_file_type=_sorted_counts(t for record in records for t in _file_types(record)),
        groups={**by_group, BENCHMARK: _group_stats(rows)},
        rows=rows,
    )


def merged_bins(distribution: dict[int, int], tail_quantile: float) -> list[tuple[str, int]]:
    """``(label, count)`` bins of a distribution, values above its quantile merged into one ``">N"`` bin.

    N is the ceiling of numpy's (linear) quantile over the questions' values, as in the release's
    figures; nothing is merged when N reaches the largest value.
    """
    if not distribution:
        return []
    values = np.repeat(list(distribution), list(distribution.values()))
    cutoff = math.ceil(float(np.quantile(values, tail_quantile)))
    kept = [(str(v), n) for v, n in sorted(distribution.items()) if v <= cutoff]
    tail = sum(n for v, n in distribution.items() if v > cutoff)
    return [*kept, (f">{cutoff}", tail)] if tail else kept


def _check_names(names: list[str]) -> None:
    repeated = sorted(name for name, n in Counter(names).items() if n > 1)
    if repeated:
        raise ValueError(f"profile names must be unique, got {', '.join(repeated)} more than once")
    if BENCHMARK in names:
        raise ValueError(f"{BENCHMARK!r} names the aggregate over all profiles; rename that profile")


def _row(profile: str, record: HippoCampRecord, features: Features, model: DifficultyModel) -> QuestionRow:
    return QuestionRow(
        profile=profile,
        id=record.key,
        qa_type=(record.qa_type or "").strip() or UNKNOWN,
        difficulty=model.score(features),
        **features.as_dict(),
    )


def _modalities(record: HippoCampRecord) -> set[str]:
    """Modalities a question involves: its ``file_modality``, else those of its files' extensions."""
    found = {m.strip().lower() for m in record.file_modality if m.strip()}
    if not found:
        found = {m for m in map(modality_of, record.file_path) if m}
    return found or {UNKNOWN}


def _file_types(record: HippoCampRecord) -> set[str]:
    """Extensions a question involves: its ``file_type``, else those of its files."""
    found = {t.strip().lower().lstrip(".") for t in record.file_type if t.strip()}
    if not found:
        found = {e for e in map(extension, record.file_path) if e}
    return found or {UNKNOWN}


def _sorted_counts(items: Iterable[str]) -> dict[str, int]:
    """Counts, most frequent first, ties by name."""
    return dict(sorted(Counter(items).items(), key=lambda kv: (-kv[1], kv[0])))


def _distribution(values: Iterable[float]) -> dict[int, int]:
    return dict(sorted(Counter(round(v) for v in values).items()))


def _group_stats(rows: list[QuestionRow]) -> GroupStats:
    return GroupStats(
        questions=len(rows),
        evidence_files=_distribution(r.evidence_files for r in rows),
        modality_count=_distribution(r.modality_count for r in rows),
        reasoning_steps=_distribution(r.reasoning_steps for r in rows),
        difficulty=_difficulty_summary(rows),
    )


def _histogram(scores: Iterable[float]) -> list[int]:
    """Counts over bins of `DIFFICULTY_BIN_WIDTH` on 0–100, the last bin closed (as numpy's)."""
    bins = 100 // DIFFICULTY_BIN_WIDTH
    counts = [0] * bins
    for score in scores:
        counts[min(max(int(score // DIFFICULTY_BIN_WIDTH), 0), bins - 1)] += 1
    return counts


def _difficulty_summary(rows: list[QuestionRow]) -> DifficultySummary:
    scores = [r.difficulty for r in rows]
    by_task: dict[str, list[float]] = {}
    for r in rows:
        by_task.setdefault(r.qa_type, []).append(r.difficulty)
    tasks = sorted(by_task)
    return DifficultySummary(
        scores=scores,
        histogram=_histogram(scores),
        histogram_by_task={t: _histogram(by_task[t]) for t in tasks},
        mean=statistics.fmean(scores) if scores else None,
        median=statistics.median(scores) if scores else None,
        hard_share=sum(s >= HARD_THRESHOLD for s in scores) / len(scores) if scores else None,
        mean_by_task={t: statistics.fmean(by_task[t]) for t in tasks},
    )
