"""Score a run directory: ``scores.jsonl`` beside ``episodes.jsonl``, resumable, never mutating either.

`score_run(run_dir, judge)` opens the run (`hippocamp.runs.rundir.RunDir`) and hands it to the benchmark
its manifest names, which grades each episode its own way (HippoCamp: a judge, file P/R/F1 and atomic
units; P-ContextBench: the T1–T5 rubrics) through `score_episodes`, the loop every benchmark shares: a
line is keyed by (task, agent, epoch, judge, mode), so re-scoring skips what is scored (a judgment that
came back ``unscored`` is tried again), a second judge adds its own lines and never erases another's,
and a kill loses at most the line being written. The benchmark then writes ``scores.summary.json`` for
the judge and mode just scored. A damaged line of ``episodes.jsonl`` or ``scores.jsonl`` (not the last)
is reported with its line number and skipped; the rest is scored. Judge ids are redacted (a key in a
judge's model URL never reaches a file).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocamp.durable import DurableLog
from hippocamp.executors import Executor, Job, LocalExecutor
from hippocamp.redact import redact
from hippocamp.runs.rundir import SCORES, SUMMARY, RunDir, RunDirError
from hippocamp.schema.run import Episode, ScoreLine

__all__ = [
    "SCORES",
    "SUMMARY",
    "ScoreLine",
    "ScoreOptions",
    "ScoreReport",
    "load_scores",
    "score_episodes",
    "score_run",
    "write_summary",
]

logger = logging.getLogger("hippocamp.scoring")

#: progress(done, total)
ScoreProgress = Callable[[int, int], None]


@dataclass(frozen=True)
class ScoreOptions:
    """How a run is scored besides its judge."""

    #: judgments in flight at once
    concurrency: int = 4
    #: HippoCamp atomic units: seconds a gold time span is widened by, and the IoU a region must reach
    slack: float = 2.0
    iou: float = 0.5
    #: P-ContextBench: the store's evidence recall@k (0: not measured) and the search mode it uses
    retrieval_k: int = 10
    retrieval_mode: str = "hybrid"
    #: HippoCamp: whose conventions the headline figures follow (`hippocamp.scoring.release`)
    convention: str = "hippocamp"
    #: where judgments run (None: this process; `hippocamp.executors`)
    executor: Any = field(default=None, compare=False)
    #: CPUs a cluster reserves per judgment (`hippocamp.models.cpus_per_call`)
    cpus: float = 1.0


@dataclass
class ScoreReport:
    scored: int
    skipped: int
    unscored: int
    missing_gold: list[str]
    summary: dict[str, Any]
    #: the judge and mode scored (the keys of the lines written)
    judge: str = ""
    mode: str = ""
    notes: list[str] = field(default_factory=list)


def load_scores(run_dir: Path) -> list[ScoreLine]:
    """Every score line of a run (all judges and modes)."""
    return RunDir.open(run_dir).scores().items


def write_summary(path: Path, summary: dict[str, Any]) -> None:
    """Write ``scores.summary.json`` with every string redacted."""
    data = redact(json.loads(json.dumps(summary, default=str)), by_key=False)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


async def score_episodes(
    run: RunDir,
    episodes: Iterable[Episode],
    judge: str,
    mode: str,
    grade: Callable[[Episode], Awaitable[ScoreLine]],
    *,
    concurrency: int = 4,
    progress: ScoreProgress | None = None,
    executor: Executor | None = None,
    cpus: float = 1.0,
) -> tuple[int, int]:
    """Grade every episode not yet scored ``ok`` by (``judge``, ``mode``) and append its line; returns
    (graded now, already scored). Lines of other judges and modes are kept as they are; an earlier
    line of this judge that was not ``ok`` (an outage) is replaced by the new one.

    ``grade`` runs where ``executor`` says (this process by default); on a cluster it is pickled with
    what it holds (the gold, the judge: its models travel as their model strings), and this process
    stays the one writer of ``scores.jsonl``, and ``cpus`` is what the cluster reserves per judgment.
    An episode the cluster gave up on is left unscored, for the next run."""
    found = run.scores()
    done = {s.key for s in found.items if s.status == "ok"}
    keep = [s for s in found.items if s.key in done or (s.judge, s.mode) != (judge, mode)]
    todo = [e for e in episodes if (e.task_id, e.agent, e.epoch, judge, mode) not in done]
    skipped = sum(1 for s in found.items if (s.judge, s.mode) == (judge, mode) and s.key in done)
    log = DurableLog(run.path / SCORES)
    rewrite = found.damaged_tail or len(keep) != len(found.items)
    log.open([*found.kept_bad_lines(), *(s.line() for s in keep)], rewrite=rewrite)
    finished = 0
    executor = executor or LocalExecutor()
    job: Job[Episode, ScoreLine] = Job("score", grade, cpus=cpus)
    lost: list[str] = []
    try:
        async with contextlib.aclosing(executor.map(job, todo, concurrency)) as outcomes:
            async for outcome in outcomes:
                if outcome.lost is not None or outcome.result is None:  # not scored: the next run grades it
                    lost.append(f"{outcome.item.task_id} (epoch {outcome.item.epoch}): {outcome.lost}")
                    continue
                await asyncio.to_thread(log.append, outcome.result.line())
                finished += 1
                if progress:
                    progress(finished, len(todo))
    finally:
        log.close()
    if lost:
        logger.warning("%s: %d episode(s) lost on the cluster, not scored (score again to grade them): %s",
                       run.path, len(lost), lost[0])  # fmt: skip
    return finished, skipped


async def score_run(
    run_dir: str | Path,
    judge: Any,
    *,
    concurrency: int = 4,
    slack: float = 2.0,
    iou: float = 0.5,
    progress: ScoreProgress | None = None,
    retrieval_k: int = 10,
    retrieval_mode: str = "hybrid",
    convention: str = "hippocamp",
    executor: Executor | None = None,
) -> ScoreReport:
    """Score every episode of ``run_dir`` not yet scored by this judge and mode, the way its
    benchmark scores (see the module doc); writes ``scores.summary.json``."""
    try:
        run = RunDir.open(run_dir)
    except RunDirError as exc:
        raise ValueError(str(exc)) from None
    from hippocamp.models import cpus_per_call

    options = ScoreOptions(concurrency, slack, iou, retrieval_k, retrieval_mode, convention, executor,
                           cpus_per_call(judge))  # fmt: skip
    report: ScoreReport = await run.benchmark.score(run, judge, options, progress)
    return report
