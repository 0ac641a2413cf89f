"""``episodes.jsonl``: one JSON line per finished episode, appended durably.

Each line is an `Episode`. `EpisodeLog` appends a line with one ``write`` followed by ``flush`` and
``os.fsync``, so a line is either whole on disk or, after a kill in the middle of a write, the cut
last line, which `read_episodes` drops (and `EpisodeLog.open` rewrites the file without it before
appending). A bad line anywhere else is real damage: it is reported with its line number and skipped
(its episode runs again on resume), and kept verbatim in the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hippocamp.durable import BadLine, DurableLog, JsonlError, read_lines
from hippocamp.schema.run import Episode, EpisodeKey

__all__ = ["Episode", "EpisodeKey", "EpisodeLog", "EpisodeLogError", "read_episodes"]

EpisodeLogError = JsonlError


@dataclass
class ReadResult:
    episodes: list[Episode]
    #: the last line was cut (or its newline missing): the file must be rewritten before appending
    damaged_tail: bool
    duplicates: int
    #: damaged lines before the last: skipped, kept in the file
    bad: list[BadLine] = field(default_factory=list)


def read_episodes(path: Path) -> ReadResult:
    """The episodes in ``path`` (none when it does not exist), first occurrence of each key kept;
    damaged lines other than the last are skipped and listed in ``bad``."""
    found = read_lines(path, Episode.model_validate, lambda e: e.key, "an episode")
    return ReadResult(found.items, found.damaged_tail, found.duplicates, found.bad)


class EpisodeLog(DurableLog):
    """Appends episodes to ``episodes.jsonl``; one writer per run."""

    def open(self, keep: list[Episode] | None = None, rewrite: bool = False,  # type: ignore[override]
             verbatim: list[bytes] | None = None) -> None:  # fmt: skip
        """As `DurableLog.open`; ``verbatim`` lines (damaged ones) are kept as they are on a rewrite."""
        super().open([*(verbatim or []), *(e.line() for e in keep or [])], rewrite)

    def append(self, episode: Episode) -> None:  # type: ignore[override]
        super().append(episode.line())
