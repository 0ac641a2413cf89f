"""A persona set's settings: what `run_set` is asked to make, checked before anything is written."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path
from typing import Any

from hippocamp.schema.pcontext import CATEGORIES
from hippocamp.synth.personas.model import GIVE_UP

__all__ = ["PipelineError", "SetConfig"]


class PipelineError(Exception):
    """A set that cannot be generated as asked (bad config, another set in the folder)."""


@dataclass(frozen=True)
class SetConfig:
    out: Path
    n: int
    seed: int = 0
    days: int = 90
    filler_ratio: float = 2.5
    #: the paper's main set has no decoys; its ablation adds them (30% of the filler tokens)
    decoy_share: float = 0.0
    filter: str | None = None
    seeds_file: Path | None = None
    model: str = "template"
    verifier: str | None = None
    contacts: int = 5
    #: hidden facts per persona, changed states included (the paper: 10,088 over 100 personas)
    facts: int = 100
    #: facts that change during the window (each adds a current state and a T3 case)
    changes: int = 7
    start: date = date(2025, 3, 3)
    #: the retrieval check of stage 4 (`recover`): "enforce" writes again the clusters whose facts' own
    #: questions do not find them among the first ``recovery_k`` items of the logs (up to three attempts,
    #: then rejects them); "measure" only records the ranks
    recovery: str = "enforce"
    recovery_k: int = 10
    concurrency: int = 4
    #: how hard a model is tried (not part of the set's settings: a run may resume with others):
    #: a cap on every answer's tokens (None: the per-stage caps of `model.MAX_TOKENS`), and the
    #: unusable answers after which a stage that never got a usable one is given up for the run
    max_tokens: int | None = None
    give_up: int = GIVE_UP

    def check(self) -> None:
        if self.n < 1:
            raise PipelineError(f"--n must be at least 1, got {self.n}")
        if self.days < 14:
            raise PipelineError(f"--days must be at least 14, got {self.days}")
        if self.filler_ratio < 0:
            raise PipelineError(f"--filler-ratio must be >= 0, got {self.filler_ratio}")
        if not 0 <= self.decoy_share <= 1:
            raise PipelineError(f"--decoys must be between 0 and 1, got {self.decoy_share}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise PipelineError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if self.give_up < 1:
            raise PipelineError(f"give_up must be at least 1, got {self.give_up}")
        if self.contacts < 1:
            raise PipelineError(f"--contacts must be at least 1, got {self.contacts}")
        if self.recovery not in ("enforce", "measure"):
            raise PipelineError(f"--recovery must be enforce or measure, got {self.recovery!r}")
        if self.recovery_k < 1:
            raise PipelineError(f"--recovery-k must be at least 1, got {self.recovery_k}")
        least = len(CATEGORIES) + self.changes  # one fact per category besides those that change
        if self.facts < least:
            raise PipelineError(
                f"--facts must be at least {least} (one per category besides the {self.changes} that change), "
                f"got {self.facts}"
            )

    def as_json(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("out", "concurrency", "max_tokens", "give_up"):
            d.pop(key)
        return {k: str(v) if isinstance(v, Path | date) else v for k, v in d.items()}
