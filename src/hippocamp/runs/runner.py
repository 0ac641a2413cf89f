"""The runner: every task of a suite x one agent x epochs, concurrently, resumable.

``await run(suite, "rag", "openai:gpt-4o-mini", out=Path("runs/x"))`` writes ``manifest.json`` at the
start and appends one line per finished episode to ``episodes.jsonl`` (see `hippocamp.runs.episodes`).
Running the same call again resumes: episodes whose key (task_id, agent, epoch) is in the file are
skipped; a run directory whose manifest holds another config is refused with the differing fields.

Episodes run through an executor (`hippocamp.executors`): by default as asyncio tasks in this process,
or as Ray tasks on a cluster; at most ``concurrency`` at a time (the model adds its own per-model limit,
cluster-wide on Ray). Either way this process is the one writer of ``episodes.jsonl``.
An agent that raises is recorded with ``stop="error"`` and its error; one that overruns its
budget's wall clock (``budget.max_seconds`` plus ``timeout_slack``) is cancelled and recorded with
``stop="timeout"``; the run goes on either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hippocamp.agents.base import Answer, Budget, Task
from hippocamp.agents.factory import agent_factory, agent_settings
from hippocamp.executors import Executor, Job, LocalExecutor, Outcome
from hippocamp.models import cpus_per_call
from hippocamp.redact import redact, redact_text, remember, scrub
from hippocamp.runs.episodes import Episode, EpisodeKey, EpisodeLog, read_episodes
from hippocamp.runs.manifest import (
    MANIFEST_FORMAT,
    ManifestError,
    config_differences,
    environment,
    read_manifest,
    utc_now,
    write_manifest,
)
from hippocamp.runs.suite import Suite

__all__ = ["RunConfigError", "RunSummary", "agent_factory", "run"]

MANIFEST = "manifest.json"
EPISODES = "episodes.jsonl"
#: model options that do not change what a model answers (not compared on resume)
RUNTIME_OPTIONS = frozenset({"max_concurrency", "threads", "timeout"})

#: progress(episode just finished or None at the start, episodes finished incl. skipped, planned)
RunProgress = Callable[[Episode | None, int, int], None]


class RunConfigError(ManifestError):
    """Resuming into a run directory made with another config."""


@dataclass(frozen=True)
class RunSummary:
    """What a run directory holds after this session (sums over episodes in key order)."""

    out: Path
    planned: int
    #: finished in this session
    done: int
    #: found finished and skipped
    skipped: int
    #: every planned episode on disk, by stop reason (sorted)
    by_stop: dict[str, int] = field(default_factory=dict)
    #: episodes whose stop is not "answered"
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    #: None when a price is unknown
    cost_usd: float | None = 0.0
    model_s: float = 0.0
    episodes_s: float = 0.0
    #: wall time of this session
    wall_s: float = 0.0
    resumed: int = 0
    #: damaged lines of episodes.jsonl skipped (reported with their line numbers; their episodes re-run)
    damaged_lines: list[str] = field(default_factory=list)
    #: episodes a cluster gave up on (their workers kept dying): not written, the next run does them
    lost: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"out": str(self.out)}


def _summarize(out: Path, episodes: list[Episode], planned: int, done: int, skipped: int, wall: float,
               resumed: int, damaged: list[str] | None = None,
               lost: list[str] | None = None) -> RunSummary:  # fmt: skip
    ordered = sorted(episodes, key=lambda e: e.key)
    stops = Counter(e.answer.stop for e in ordered)
    cost: float | None = 0.0
    for e in ordered:
        c = e.answer.usage.cost_usd
        cost = None if cost is None or c is None else cost + c
    return RunSummary(
        out=out,
        planned=planned,
        done=done,
        skipped=skipped,
        by_stop=dict(sorted(stops.items())),
        failed=sum(n for stop, n in stops.items() if stop != "answered"),
        input_tokens=sum(e.answer.usage.input_tokens for e in ordered),
        output_tokens=sum(e.answer.usage.output_tokens for e in ordered),
        calls=sum(e.answer.usage.calls for e in ordered),
        cost_usd=None if cost is None else round(cost, 6),
        model_s=round(sum(e.model_s for e in ordered), 3),
        episodes_s=round(sum(e.wall_s for e in ordered), 3),
        wall_s=round(wall, 3),
        resumed=resumed,
        damaged_lines=list(damaged or []),
        lost=list(lost or []),
    )


def _model_section(model: Any, options: dict[str, Any], secrets: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(config part, manifest part) of the model, options redacted."""
    safe = redact(options, secrets)
    spec = redact(model if isinstance(model, str) else getattr(model, "id", repr(model)), secrets)
    remember(*secrets)  # blanked wherever they show up later: errors, traces, reports
    compared = {k: v for k, v in sorted(safe.items()) if k not in RUNTIME_OPTIONS}
    return {"options": compared}, {"spec": spec, "options": safe}


@dataclass
class _Episodes:
    """What runs one episode: picklable (the suite's store and the model pickle as the path and model
    string to open them again), so a cluster's workers run episodes with the same code as this process."""

    suite: Suite
    agent: str
    model: Any
    model_id: str
    budget: Budget
    timeout_slack: float
    secrets: list[str]
    _make_agent: Any = field(default=None, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_make_agent": None}

    @property
    def timeout(self) -> float | None:
        return None if self.budget.max_seconds is None else self.budget.max_seconds + self.timeout_slack

    def make_agent(self) -> Any:
        if self._make_agent is None:
            self._make_agent = agent_factory(self.agent)
        return self._make_agent()

    async def solve(self, task: Task) -> Answer:
        """The agent's answer, or the error or timeout it ended with."""
        budget, timeout = self.budget, self.timeout
        try:
            answer = await asyncio.wait_for(self.make_agent().solve(task, self.suite.env(task), self.model, budget),
                                            timeout)  # fmt: skip
        except TimeoutError:
            return Answer(
                stop="timeout",
                error=f"cancelled by the runner after {timeout:g} s "
                f"(budget {budget.max_seconds:g} s + {self.timeout_slack:g} s slack)",
            )
        except Exception as exc:  # an agent's crash is a recorded episode, never the run's end
            return Answer(stop="error", error=redact_text(scrub(f"{type(exc).__name__}: {exc}", self.secrets)))
        if not isinstance(answer, Answer):
            return Answer(stop="error", error=f"agent {self.agent!r} returned {type(answer).__name__}, not an Answer")
        return answer

    async def __call__(self, item: tuple[Task, int]) -> Episode:
        task, epoch = item
        started = utc_now()
        t0 = time.perf_counter()
        answer = await self.solve(task)
        wall = time.perf_counter() - t0
        model_s = min(answer.model_seconds, wall)
        return self.episode(task, epoch, answer, started, wall, model_s)

    def episode(self, task: Task, epoch: int, answer: Answer, started: str, wall: float, model_s: float) -> Episode:
        return Episode(
            task_id=task.id,
            agent=self.agent,
            model=self.model_id,
            epoch=epoch,
            question=task.question,
            answer=answer,
            wall_s=round(wall, 4),
            model_s=round(model_s, 4),
            harness_s=round(wall - model_s, 4),
            started=started,
            finished=utc_now(),
        )

    def killed(self, item: tuple[Task, int], seconds: float) -> Episode:
        """The episode of an item a cluster cancelled (its worker killed) at its hard limit."""
        task, epoch = item
        answer = Answer(stop="timeout", error=f"cancelled by the executor after {seconds:g} s (its worker was killed)")
        return self.episode(task, epoch, answer, utc_now(), seconds, 0.0)

    def prepare(self) -> None:
        """On a worker, once: open every store now, so a node that cannot is the run's error (naming
        the node and the path) rather than a failed episode."""
        for store in [self.suite.store, *(p.store for p in getattr(self.suite, "parts", {}).values())]:
            store.get_meta("schema_version")

    def close(self) -> None:
        """On a worker, when the job is dropped: its read-only stores."""
        self.suite.close()

    def relocated(self, mapping: dict[str, str]) -> _Episodes:
        return dataclasses.replace(self, suite=self.suite.relocated(mapping), _make_agent=None)

    def job(self) -> Job[tuple[Task, int], Episode]:
        timeout = self.timeout
        return Job(
            name="episode",
            fn=self,
            cpus=cpus_per_call(self.model),
            # a cluster kills a worker still on an episode a minute past the runner's own limit
            timeout=None if timeout is None else timeout + 60.0,
            on_timeout=self.killed,
            paths=tuple(self.suite.shared_paths()),
            relocate=lambda mapping: dataclasses.replace(self.job(), fn=self.relocated(mapping)),
        )


@dataclass
class _Session:
    """One session of a run: what it was asked and the state it shares between episodes."""

    suite: Suite
    agent: str
    model: Any
    model_id: str
    out: Path
    epochs: int
    concurrency: int
    limit: int | None
    budget: Budget
    timeout_slack: float
    secrets: list[str]
    progress: RunProgress | None
    per_type: int | None = None
    executor: Executor | None = None
    finished: list[Episode] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)

    @property
    def work(self) -> _Episodes:
        return _Episodes(self.suite, self.agent, self.model, self.model_id, self.budget, self.timeout_slack,
                         self.secrets)  # fmt: skip

    async def _record(self, outcome: Outcome[tuple[Task, int], Episode], log: EpisodeLog, had: int,
                      planned: int) -> None:  # fmt: skip
        """One outcome written (the one writer; fsync off the event loop), or listed as lost."""
        if outcome.lost is not None or outcome.result is None:  # nothing written: the next run does it
            task, epoch = outcome.item
            self.lost.append(f"{task.id} (epoch {epoch}): {outcome.lost}")
            return
        record = outcome.result
        await asyncio.to_thread(log.append, record)
        self.finished.append(record)
        if self.progress:
            self.progress(record, had + len(self.finished), planned)

    def config(self, model_config: dict[str, Any]) -> dict[str, Any]:
        """The compared config, redacted exactly as the manifest is written (so a resume compares equal)."""
        config = scrub(
            {
                "suite": self.suite.config(),
                "agent": self.agent,
                "model": {"id": self.model_id, **model_config},
                "budget": self.budget.as_dict(),
                "epochs": self.epochs,
                "limit": self.limit,
                **({"per_type": self.per_type} if self.per_type else {}),
                "timeout_slack_s": self.timeout_slack,
            },
            self.secrets,
        )
        return redact(config, by_key=False)

    async def execute(self, model_config: dict[str, Any], model_manifest: dict[str, Any]) -> RunSummary:
        make_agent = agent_factory(self.agent)
        began = time.perf_counter()
        config = self.config(model_config)
        try:
            self.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ManifestError(f"{self.out}: cannot create the run directory ({exc.strerror or exc})") from None
        if not self.out.is_dir():
            raise ManifestError(f"{self.out}: not a directory; use another --out")
        manifest_path, episodes_path = self.out / MANIFEST, self.out / EPISODES
        recorded = read_manifest(manifest_path)
        if episodes_path.exists() and not episodes_path.is_file():
            raise ManifestError(f"{episodes_path}: is a directory, not a JSON Lines file; move it aside")
        if recorded is None and episodes_path.exists() and episodes_path.stat().st_size:
            raise ManifestError(f"{episodes_path}: episodes without {MANIFEST}; use another --out")
        if recorded is not None and (diffs := config_differences(recorded["config"], config)):
            raise RunConfigError(
                f"{manifest_path}: this directory holds a run with another config; differing: {'; '.join(diffs)}. "
                "Use another --out, or the recorded options"
            )
        found = read_episodes(episodes_path)
        resumed = 0 if recorded is None else int(recorded.get("resumed", 0)) + 1
        session = {"started": utc_now(), "concurrency": self.concurrency, "environment": environment(),
                   "executor": (self.executor or LocalExecutor()).describe()}  # fmt: skip
        manifest: dict[str, Any] = {
            "format": MANIFEST_FORMAT,
            "benchmark": self.suite.benchmark,
            "created": recorded["created"] if recorded else session["started"],
            "resumed": resumed,
            "config": config,
            "suite": self.suite.describe(),
            "agent_settings": _settings_of(make_agent),
            "model": {"id": self.model_id, **model_manifest},
            "sessions": [*(recorded.get("sessions", []) if recorded else []), session],
        }
        write_manifest(manifest_path, scrub(manifest, self.secrets))

        tasks = select_tasks(self.suite.tasks, self.limit, self.per_type)
        planned = [(t, e) for e in range(1, self.epochs + 1) for t in tasks]
        keys = {(t.id, self.agent, e) for t, e in planned}
        have: dict[EpisodeKey, Episode] = {e.key: e for e in found.episodes if e.key in keys}
        todo = [(t, e) for t, e in planned if (t.id, self.agent, e) not in have]
        log = EpisodeLog(episodes_path)
        verbatim = [b.raw + b"\n" for b in found.bad if b.raw.strip()]
        log.open(found.episodes, rewrite=found.damaged_tail or found.duplicates > 0, verbatim=verbatim)
        if self.progress:
            self.progress(None, len(have), len(planned))
        executor = self.executor or LocalExecutor()
        try:
            async with contextlib.aclosing(executor.map(self.work.job(), todo, self.concurrency)) as outcomes:
                async for outcome in outcomes:
                    await self._record(outcome, log, len(have), len(planned))
        finally:
            log.close()

        wall = time.perf_counter() - began
        summary = _summarize(self.out, [*have.values(), *self.finished], len(planned), len(self.finished),
                             len(have), wall, resumed, [str(b) for b in found.bad], self.lost)  # fmt: skip
        manifest["sessions"][-1]["finished"] = utc_now()
        manifest["summary"] = summary.as_dict()
        write_manifest(manifest_path, scrub(manifest, self.secrets))
        return summary


def select_tasks(tasks: list[Task], limit: int | None = None, per_type: int | None = None) -> list[Task]:
    """The tasks a run covers: with ``per_type``, that many of each question type (``meta["qa_type"]``),
    spread evenly over the suite's order (a stratified sample that reaches every persona or profile); then
    the first ``limit``."""
    if per_type:
        groups: dict[str, list[int]] = {}
        for i, t in enumerate(tasks):
            groups.setdefault(str(t.meta.get("qa_type") or "unknown"), []).append(i)
        keep = {g[(j * len(g)) // min(per_type, len(g))] for g in groups.values() for j in range(min(per_type, len(g)))}
        tasks = [t for i, t in enumerate(tasks) if i in keep]
    return tasks[:limit] if limit else tasks


def _settings_of(make_agent: Any) -> dict[str, Any]:
    """The agent's budgets and settings for the manifest (an agent that cannot say: why)."""
    try:
        return agent_settings(make_agent())
    except Exception as exc:  # an agent's constructor failing here fails its episodes, with their errors
        return {"error": f"{type(exc).__name__}: {exc}"}


async def run(
    suite: Suite,
    agent: str,
    model: Any,
    *,
    out: Path,
    epochs: int = 1,
    concurrency: int = 4,
    limit: int | None = None,
    per_type: int | None = None,
    budget: Budget | None = None,
    model_options: dict[str, Any] | None = None,
    timeout_slack: float = 5.0,
    progress: RunProgress | None = None,
    executor: Executor | None = None,
) -> RunSummary:
    """Run ``agent`` (a registered name, or ``NAME:ARG``) with ``model`` (a model string, opened with
    ``model_options``, or a ready `Model`) over the first ``limit`` tasks of ``suite``, ``epochs``
    times, writing into ``out``; see the module docstring. ``executor``: where episodes run (default: this
    process; `hippocamp.executors`)."""
    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    if per_type is not None and per_type < 1:
        raise ValueError(f"per_type must be at least 1, got {per_type}")
    if not suite.tasks:
        raise ValueError(f"suite {suite.spec!r} has no tasks (no records found)")
    agent_factory(agent)  # an unknown agent fails before anything is written
    options = dict(model_options or {})
    secrets: list[str] = []
    model_config, model_manifest = _model_section(model, options, secrets)
    opened = isinstance(model, str)
    if isinstance(model, str):
        from hippocamp.models import get_model

        model = get_model(model, **options)
    session = _Session(
        suite=suite,
        agent=agent,
        model=model,
        model_id=scrub(str(model.id), secrets),
        out=out,
        epochs=epochs,
        concurrency=concurrency,
        limit=limit,
        per_type=per_type,
        budget=budget or Budget(),
        timeout_slack=timeout_slack,
        secrets=secrets,
        progress=progress,
        executor=executor,
    )
    try:
        return await session.execute(model_config, model_manifest)
    finally:
        if opened:
            await model.aclose()
