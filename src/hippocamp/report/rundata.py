"""One scored run as a report reads it (`RunData`), and which judge's scores it reports.

Each benchmark reads its runs into `RunData` (`Benchmark.report_run`): HippoCamp in
`hippocamp.report.build.profile_run_data`, P-ContextBench in `hippocamp.report.pcontext.pcontext_run_data`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocamp.schema.run import Episode, EpisodeKey, ScoreLine
from hippocamp.scoring.stats import ScoredItem

__all__ = ["ReportError", "RunData", "choose_judge"]


class ReportError(Exception):
    """A run directory that cannot be reported (no manifest, no scores, no such judge)."""


@dataclass
class RunData:
    """One scored run: its manifest fields, one judge's score lines, episodes, gold and scored items."""

    path: Path
    agent: str
    model: str
    suite: str
    suite_spec: str
    dataset_sha256: str
    epochs: int
    created: str
    judge: str
    mode: str
    lines: list[ScoreLine]
    items: list[ScoredItem]
    episodes: dict[EpisodeKey, Episode]
    #: HippoCamp runs: the gold records by task id
    gold: dict[str, Any]
    summary: dict[str, Any]
    #: episodes with no score line from this judge and mode
    not_scored: int
    #: task ids of episodes whose question is not in the gold records
    missing_gold: list[str]
    label: str = ""
    #: the benchmark whose run this is (its sections of the report cover it)
    benchmark: str = "hippocamp"
    #: pcontext runs: the answer keys (`hippocamp.perceive.applog.PersonaSetGold`), and the
    #: ``scores.summary.json`` as written (for retrieval recall)
    pcontext_gold: Any = None
    saved_summary: dict[str, Any] = field(default_factory=dict)
    #: why the reported judge is not the one asked for
    judge_note: str = ""

    @property
    def short_sha(self) -> str:
        return self.dataset_sha256[:12] if self.dataset_sha256 else "unknown"


def choose_judge(lines: list[ScoreLine], mode: str | None, judge: str | None, where: Path) -> tuple[str, str]:
    """The (judge, mode) to report: the one given, else the one with most lines (ties: written last)."""
    last: dict[tuple[str, str], int] = {}
    for i, s in enumerate(lines):
        last[(s.judge, s.mode)] = i
    counts = Counter(
        (s.judge, s.mode) for s in lines if (mode is None or s.mode == mode) and (judge is None or s.judge == judge)
    )
    if not counts:
        have = ", ".join(f"{j or '?'}/{m}" for j, m in sorted(last)) or "none"
        raise ReportError(f"{where}: no scores for judge {judge or 'any'} / mode {mode or 'any'} (found: {have})")
    return max(counts, key=lambda p: (counts[p], last[p]))
