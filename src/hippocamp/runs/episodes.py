"""``episodes.jsonl``: one JSON line per finished episode, appended durably.

Each line is an `Episode`. `EpisodeLog` appends a line with one ``write`` followed by ``flush`` and
``os.fsync``, so a line is either whole on disk or, after a kill in the middle of a write, the cut
last line, which `read_episodes` drops (and `EpisodeLog.open` rewrites the file without it before
appending). A bad line anywhere else is real damage and is refused with its line number.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from hippocamp.agents.base import Answer

__all__ = ["Episode", "EpisodeKey", "EpisodeLog", "EpisodeLogError", "read_episodes"]

#: (task_id, agent, epoch)
EpisodeKey = tuple[str, str, int]


class EpisodeLogError(Exception):
    """An episodes file that cannot be resumed from: names the file and the line."""


class Episode(BaseModel):
    """One finished episode: the task, who answered it, the `Answer`, and where the time went."""

    task_id: str
    agent: str
    model: str
    epoch: int
    question: str
    answer: Answer
    #: seconds from the episode's start (its concurrency slot taken) to its answer
    wall_s: float
    #: seconds spent waiting for the model, as the agent's meter counted them
    model_s: float
    #: wall_s - model_s: the harness, the tools and the agent's own code
    harness_s: float
    #: ISO 8601 UTC
    started: str
    finished: str

    @property
    def key(self) -> EpisodeKey:
        return (self.task_id, self.agent, self.epoch)

    def line(self) -> bytes:
        return (json.dumps(self.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")) + "\n").encode()


@dataclass
class ReadResult:
    episodes: list[Episode]
    #: the last line was cut (or its newline missing): the file must be rewritten before appending
    damaged_tail: bool
    duplicates: int


def read_episodes(path: Path) -> ReadResult:
    """The episodes in ``path`` (none when it does not exist), first occurrence of each key kept."""
    if not path.is_file():
        return ReadResult([], False, 0)
    data = path.read_bytes()
    lines = data.split(b"\n")
    # a file written only by EpisodeLog ends with "\n": the last element is empty unless the tail was cut
    tail_cut = lines[-1] != b""
    if not tail_cut:
        lines.pop()
    episodes: list[Episode] = []
    seen: set[EpisodeKey] = set()
    duplicates = 0
    damaged = False
    for number, raw in enumerate(lines, start=1):
        is_last = number == len(lines)
        if not raw.strip():
            if is_last:
                damaged = True
                continue
            raise EpisodeLogError(f"{path}: line {number} is empty; only the last line may be damaged (by a kill)")
        try:
            episode = Episode.model_validate(json.loads(raw))
        except (ValueError, ValidationError) as exc:
            if is_last:
                damaged = True
                continue
            reason = str(exc).splitlines()[0][:200]
            raise EpisodeLogError(f"{path}: line {number} is not an episode ({reason}); only the last line may be "
                                  "damaged (by a kill): repair or remove it by hand") from None  # fmt: skip
        if is_last and tail_cut:
            damaged = True  # whole JSON but no newline: keep it, rewrite the file with its newline
        if episode.key in seen:
            duplicates += 1
            continue
        seen.add(episode.key)
        episodes.append(episode)
    return ReadResult(episodes, damaged, duplicates)


class EpisodeLog:
    """Appends episodes to ``episodes.jsonl``; one writer per run."""

    def __init__(self, path: Path):
        self.path = path
        self._fh: Any = None

    def open(self, keep: list[Episode], rewrite: bool) -> None:
        """Open for appending; with ``rewrite`` first replace the file (atomically) by ``keep``."""
        if rewrite:
            tmp = self.path.with_name(self.path.name + ".tmp")
            with tmp.open("wb") as fh:
                fh.write(b"".join(e.line() for e in keep))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        self._fh = self.path.open("ab")

    def append(self, episode: Episode) -> None:
        """The whole line in one write, then flush and fsync: a kill leaves at most a cut last line."""
        if self._fh is None:
            raise RuntimeError(f"{self.path}: not open")
        self._fh.write(episode.line())
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
