"""The benchmark protocol: one small class per benchmark, found by name in the registry.

A benchmark says which suite specs are its own (``claims``), loads one (``load``: tasks, gold kept
apart, the environment, indexed files), names the model of its score lines (``score_line``, a
`hippocamp.schema.run.ScoreLine` subclass), scores a run directory (``score``: through
`hippocamp.scoring.run_scores.score_episodes`, so every benchmark's scoring resumes the same way and a
second judge adds lines) and reads a scored run for a report (``report_run``). Register it with
``@register("benchmark", NAME)``; a third-party benchmark does the same from a module named in the
``hippocamp.plugins`` entry-point group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from hippocamp import registry

if TYPE_CHECKING:
    from hippocamp.runs.rundir import RunDir
    from hippocamp.runs.suite import Suite, SuiteOptions
    from hippocamp.schema.run import ScoreLine
    from hippocamp.scoring.run_scores import ScoreOptions, ScoreProgress, ScoreReport
    from hippocamp.store.indexer import Progress

__all__ = ["Benchmark", "get_benchmark", "percent"]


class Benchmark(Protocol):
    name: ClassVar[str]
    #: what a line of this benchmark's ``scores.jsonl`` is
    score_line: ClassVar[type[ScoreLine]]
    #: whether scoring asks a judge model by default (False: deterministic, a model only when asked)
    judge_model_needed: ClassVar[bool]

    def claims(self, spec: str) -> bool:
        """Whether ``spec`` (given without this benchmark's ``NAME:`` prefix) is a suite of this benchmark."""
        ...

    def load(self, spec: str, options: SuiteOptions, progress: Progress | None) -> Suite: ...

    async def score(
        self, run: RunDir, judge: Any, options: ScoreOptions, progress: ScoreProgress | None
    ) -> ScoreReport: ...

    def summary_lines(self, report: ScoreReport) -> list[str]:
        """What ``hippocamp score`` prints of a scored run."""
        ...

    def headline(self, run: RunDir, report: ScoreReport) -> dict[str, Any]:
        """A scored run in one row (the quickstart's table): ``questions``, ``accuracy``, ``unscored``,
        ``file_f1`` (None where the benchmark has none) and ``median_s`` (an episode's median seconds)."""
        ...

    def report_run(self, run: RunDir, judge_mode: str | None, judge: str | None) -> Any:
        """The run's data for a report (`hippocamp.report.rundata.RunData`)."""
        ...

    def report_section(self, runs: list[Any], figures: bool) -> Any:
        """Its part of a report over its runs (`hippocamp.report.common.Section`)."""
        ...


def get_benchmark(name: str) -> Benchmark:
    """The registered benchmark ``name`` (an instance)."""
    bench: Benchmark = registry.instance("benchmark", name)
    return bench


def percent(value: float | None) -> str:
    """``12.3%``, or ``n/a`` for a figure that could not be computed."""
    return "n/a" if value is None else f"{100 * value:.1f}%"
