"""A new benchmark is one module and one registration: a 20-line benchmark, run and scored end to end
by the same runner, scorer and run-directory reader as HippoCamp and P-ContextBench."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from hippocamp import registry
from hippocamp.runs import SuiteOptions, load_suite, run
from hippocamp.runs.suite import Suite
from hippocamp.schema.run import Episode, ScoreLine, Task
from hippocamp.scoring.run_scores import ScoreReport, score_episodes, score_run
from hippocamp.store import Store


# -- the whole benchmark ------------------------------------------------------------------------------
class SumLine(ScoreLine):
    benchmark: Literal["sums"] = "sums"


class Sums:
    """``sums:N``: N questions "what is 2 + k?", right when the answer holds the sum."""

    name, score_line, judge_model_needed = "sums", SumLine, False

    def claims(self, spec: str) -> bool:
        return False  # only ever named: sums:N

    def load(self, spec: str, options: SuiteOptions, progress: Any) -> Suite:
        n, root = int(spec.split(":")[1]), options.synth_dir or Path(".")
        tasks = [Task(id=f"q{k}", question=f"What is 2 + {k}?") for k in range(n)]
        return Suite("sums", spec, tasks, {}, root, Store(root / "sums.sqlite", root=root), "sums")

    async def score(self, rd: Any, judge: Any, options: Any, progress: Any) -> ScoreReport:
        async def grade(e: Episode) -> ScoreLine:
            ok = str(2 + int(e.task_id[1:])) in e.answer.text
            return SumLine(
                task_id=e.task_id,
                agent=e.agent,
                epoch=e.epoch,
                judge="exact",
                mode="exact",
                correct=ok,
                score=int(ok),
                status="ok",
                seconds=e.wall_s,
                tokens=0,
                cost=0.0,
                stop=e.answer.stop,
            )

        done, skipped = await score_episodes(rd, rd.episodes().episodes, "exact", "exact", grade)
        lines = rd.score_lines("exact", "exact")
        return ScoreReport(done, skipped, 0, [], {"accuracy": sum(bool(s.correct) for s in lines) / len(lines)})


# -- run end to end -----------------------------------------------------------------------------------
@registry.register("agent", "test-adder")
class Adder:
    async def solve(self, task: Task, env: Any, model: Any, budget: Any) -> Any:
        from hippocamp.schema.run import Answer

        k = int(task.question.rstrip("?").split("+")[1])
        return Answer(text=str(2 + k) if k % 2 == 0 else "no idea")


@pytest.fixture
def sums() -> Iterator[None]:
    registry.register("benchmark", "sums")(Sums)
    yield
    registry._registry["benchmark"].pop("sums", None)


def test_a_twenty_line_benchmark_runs_and_scores(sums: None, tmp_path: Path) -> None:
    suite = load_suite("sums:6", SuiteOptions(synth_dir=tmp_path))
    assert suite.benchmark == "sums" and len(suite.tasks) == 6
    out = tmp_path / "run"
    try:
        summary = asyncio.run(run(suite, "test-adder", "mock", out=out))
    finally:
        suite.close()
    assert summary.done == 6
    report = asyncio.run(score_run(out, None))
    assert report.summary == {"accuracy": 0.5} and report.scored == 6
    again = asyncio.run(score_run(out, None))  # resumed: nothing to grade
    assert (again.scored, again.skipped) == (0, 6)
    from hippocamp.runs.rundir import RunDir

    lines = RunDir.open(out).scores().items
    assert [type(s) for s in lines] == [SumLine] * 6 and {s.benchmark for s in lines} == {"sums"}
