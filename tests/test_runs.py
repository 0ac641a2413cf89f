"""The runner: manifest and episodes, resume (also after kill -9), errors, budgets, timeouts,
secrets, config mismatch, the concurrency limit, and the ``run`` / ``ask`` commands."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from hippocamp import registry
from hippocamp.agents.base import Answer, Budget, BudgetExceeded, EvidenceItem, Meter, Task
from hippocamp.models.providers.mock import MockBackend
from hippocamp.runs import (
    EpisodeLogError,
    RunConfigError,
    Suite,
    SuiteError,
    SuiteOptions,
    load_suite,
    read_episodes,
    run,
)
from hippocamp.runs.manifest import redact

#: task id -> "raise" | "hang" | "wrong-type"; anything else answers
BEHAVIOR: dict[str, str] = {}


class Stats:
    in_flight = 0
    max_in_flight = 0
    envs: ClassVar[list[Any]] = []
    tasks: ClassVar[list[Task]] = []


@registry.register("agent", "t-script")
class ScriptedAgent:
    """Searches the real environment for the question, asks the model once, cites the top hit."""

    name = "t-script"
    delay = 0.01

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        Stats.in_flight += 1
        Stats.max_in_flight = max(Stats.max_in_flight, Stats.in_flight)
        Stats.envs.append(env)
        Stats.tasks.append(task)
        try:
            what = BEHAVIOR.get(task.id, "")
            if what == "raise":
                raise RuntimeError(f"boom in {task.id}")
            if what == "hang":
                await asyncio.sleep(60)
            if what == "wrong-type":
                return "just a string"  # type: ignore[return-value]
            await asyncio.sleep(self.delay)
            meter = Meter(budget)
            obs = env.search(task.question, k=2)
            try:
                meter.observe("search", {"query": task.question}, obs.text)
                gen = await meter.generate(model, [{"role": "user", "content": task.question}])
            except BudgetExceeded as exc:
                return meter.answer("", stop=exc.reason, error=str(exc))
            evidence = [EvidenceItem(file_path=d["path"], locator=d["locator"], text=d["text"][:80]) for d in obs.data]
            return meter.answer(gen.text, evidence=evidence[:1])
        finally:
            Stats.in_flight -= 1


@registry.register("provider", "t-keyed")
def keyed_provider(name: str, api_key: str = "", headers: dict[str, str] | None = None, **_: Any) -> MockBackend:
    """A third-party-style provider that takes a key in its options."""
    backend = MockBackend(name="keyed")
    backend.id = f"t-keyed:{name}"
    return backend


@pytest.fixture(autouse=True)
def _reset() -> None:
    BEHAVIOR.clear()
    Stats.in_flight = Stats.max_in_flight = 0
    Stats.envs.clear()
    Stats.tasks.clear()


def fast_options(store: Path) -> SuiteOptions:
    return SuiteOptions(ocr=False, asr=False, embed=False, store=store, workers=1)


@pytest.fixture
def suite(synth_small: Path, synth_indexed: tuple[Path, Path]) -> Iterator[Suite]:
    s = load_suite(synth_small, fast_options(synth_indexed[1]))
    yield s
    s.close()


def lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "episodes.jsonl").read_text(encoding="utf-8").splitlines()]


def keys(out: Path) -> list[tuple[str, str, int]]:
    return [(e["task_id"], e["agent"], e["epoch"]) for e in lines(out)]


# -- suites --------------------------------------------------------------------------------------------
def test_suite_tasks_carry_no_gold(suite: Suite) -> None:
    assert len(suite.tasks) == 21 and set(suite.gold) == {t.id for t in suite.tasks}
    task = suite.tasks[0]
    record = suite.gold[task.id]
    assert task.question == record.question and task.meta == {"qa_type": record.qa_type}
    assert record.answer and record.answer not in json.dumps(task.meta)
    assert len(suite.dataset_sha256) == 64 and suite.index_report is not None and suite.index_report.added == 0
    env = suite.env()
    assert env.list_files().data and env is not suite.env()


def test_synth_spec_generates_once_into_the_cache(tmp_path: Path, synth_small: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    calls: list[tuple[str, dict[str, Any]]] = []

    def fake_generate(out: Path, **kwargs: Any) -> None:  # the real generator is tested in test_synth
        calls.append((Path(out).name, kwargs))
        shutil.copytree(synth_small, out)

    monkeypatch.setattr("hippocamp.synth.build.generate", fake_generate)
    options = SuiteOptions(ocr=False, asr=False, embed=False, workers=1, synth_dir=tmp_path / "suites",
                           store=tmp_path / "s.sqlite")  # fmt: skip
    first = load_suite("synth:small:7", options)
    first.close()
    again = load_suite("synth:small:7", options)
    again.close()
    assert len(calls) == 1 and calls[0][1] == {"persona": "professional", "seed": 7, "scale": "small"}
    assert calls[0][0].startswith(".synth-v") and ".tmp-" in calls[0][0]  # generated aside, then renamed
    assert first.root.parent.name.startswith("synth-v") and first.root.parent.name.endswith("-small-7-professional")
    assert again.dataset_sha256 == first.dataset_sha256 and len(again.tasks) == 21
    assert [p.name for p in (tmp_path / "suites").iterdir()] == [first.root.parent.name]
    with pytest.raises(SuiteError, match="unknown persona 'pirate'"):
        load_suite("synth:small:7:pirate", options)
    with pytest.raises(SuiteError, match="synth:SCALE:SEED"):
        load_suite("synth:small", options)
    with pytest.raises(SuiteError, match="no such file"):
        load_suite(tmp_path / "missing", options)


# -- runs ----------------------------------------------------------------------------------------------
def test_run_writes_manifest_and_episodes_then_resumes_without_duplicates(suite: Suite, tmp_path: Path) -> None:
    out = tmp_path / "run"
    summary = asyncio.run(run(suite, "t-script", "mock", out=out, epochs=2, limit=5, concurrency=3))
    assert (summary.planned, summary.done, summary.skipped, summary.by_stop) == (10, 10, 0, {"answered": 10})
    assert sorted(keys(out)) == sorted((t.id, "t-script", e) for e in (1, 2) for t in suite.tasks[:5])
    first = lines(out)[0]
    assert set(first) >= {"task_id", "agent", "model", "epoch", "question", "answer", "wall_s", "model_s",
                          "harness_s", "started", "finished"}  # fmt: skip
    assert set(first["answer"]) >= {"text", "files", "evidence", "trace", "usage", "stop", "error"}
    assert first["model"] == "mock" and first["answer"]["files"] and first["answer"]["trace"]
    assert abs(first["wall_s"] - first["model_s"] - first["harness_s"]) < 1e-3
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["suite"]["dataset_sha256"] == suite.dataset_sha256
    assert manifest["config"]["model"]["id"] == "mock" and manifest["config"]["budget"]["max_steps"] == 20
    env = manifest["sessions"][0]["environment"]
    assert env["hippocamp"] and env["python"] and "pydantic" in env["dependencies"]
    assert env["git"] is None or len(env["git"]["commit"]) == 40
    assert manifest["resumed"] == 0 and manifest["summary"]["done"] == 10

    again = asyncio.run(run(suite, "t-script", "mock", out=out, epochs=2, limit=5, concurrency=3))
    assert (again.done, again.skipped, again.planned) == (0, 10, 10)
    assert len(lines(out)) == 10
    assert json.loads((out / "manifest.json").read_text())["resumed"] == 1
    # the summary does not depend on which session ran what, nor on order
    assert {k: v for k, v in again.as_dict().items() if k not in ("done", "skipped", "wall_s", "resumed")} == {
        k: v for k, v in summary.as_dict().items() if k not in ("done", "skipped", "wall_s", "resumed")
    }


def test_agent_errors_and_wrong_answers_are_recorded_and_the_rest_finish(suite: Suite, tmp_path: Path) -> None:
    BEHAVIOR[suite.tasks[1].id] = "raise"
    BEHAVIOR[suite.tasks[2].id] = "wrong-type"
    summary = asyncio.run(run(suite, "t-script", "mock", out=tmp_path / "r", limit=6))
    assert summary.by_stop == {"answered": 4, "error": 2} and summary.failed == 2
    by_id = {e["task_id"]: e["answer"] for e in lines(tmp_path / "r")}
    assert by_id[suite.tasks[1].id]["error"] == f"RuntimeError: boom in {suite.tasks[1].id}"
    assert "returned str, not an Answer" in by_id[suite.tasks[2].id]["error"]


def test_budgets_and_the_wall_clock_timeout(suite: Suite, tmp_path: Path) -> None:
    tight = Budget(max_tokens=1)
    summary = asyncio.run(run(suite, "t-script", "mock", out=tmp_path / "b", limit=3, budget=tight))
    assert summary.by_stop == {"max_tokens": 3}
    answer = lines(tmp_path / "b")[0]["answer"]
    assert answer["error"] == "more than 1 tokens" and answer["usage"]["input_tokens"] > 0

    BEHAVIOR[suite.tasks[0].id] = "hang"
    began = time.perf_counter()
    quick = Budget(max_seconds=0.2)
    summary = asyncio.run(run(suite, "t-script", "mock", out=tmp_path / "t", limit=3, budget=quick, timeout_slack=0.1))
    assert time.perf_counter() - began < 5
    assert summary.by_stop == {"answered": 2, "timeout": 1}
    hung = next(e for e in lines(tmp_path / "t") if e["task_id"] == suite.tasks[0].id)
    assert "cancelled by the runner after 0.3 s" in hung["answer"]["error"] and hung["wall_s"] < 1


def test_concurrency_limit_is_respected(suite: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ScriptedAgent, "delay", 0.03)
    asyncio.run(run(suite, "t-script", "mock", out=tmp_path / "c", concurrency=3))
    assert Stats.max_in_flight == 3
    assert len({id(e) for e in Stats.envs}) == len(Stats.envs) == 21  # a fresh environment per episode


def test_corrupt_last_line_is_dropped_and_rewritten(suite: Suite, tmp_path: Path) -> None:
    out = tmp_path / "k"
    asyncio.run(run(suite, "t-script", "mock", out=out, limit=4))
    path = out / "episodes.jsonl"
    whole = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(whole[:3]) + whole[3][:40])  # a kill in the middle of the fourth line
    found = read_episodes(path)
    assert len(found.episodes) == 3 and found.damaged_tail
    summary = asyncio.run(run(suite, "t-script", "mock", out=out, limit=4))
    assert (summary.done, summary.skipped) == (1, 3)
    assert path.read_bytes().endswith(b"\n") and len(lines(out)) == 4 and len(set(keys(out))) == 4
    # a bad line that is not the last is damage, not a kill: reported with its line number, skipped
    # (its episode runs again) and kept in the file as it was
    text = path.read_text().splitlines()
    path.write_text("\n".join([text[0], "{oops", *text[1:]]) + "\n")
    found = read_episodes(path)
    assert len(found.episodes) == 4 and [b.number for b in found.bad] == [2]
    assert "line 2: not an episode (column 2): not valid JSON" in str(found.bad[0])
    summary = asyncio.run(run(suite, "t-script", "mock", out=out, limit=4))
    assert (summary.done, summary.skipped) == (0, 4) and "line 2" in summary.damaged_lines[0]
    assert "{oops" in path.read_text().splitlines()
    # a folder where episodes.jsonl should be: refused, naming it
    (out / "episodes.jsonl").unlink()
    (out / "episodes.jsonl").mkdir()
    with pytest.raises(EpisodeLogError, match=r"episodes\.jsonl: is a directory"):
        read_episodes(out / "episodes.jsonl")


def test_resume_with_another_config_is_refused(suite: Suite, tmp_path: Path) -> None:
    out = tmp_path / "m"
    asyncio.run(run(suite, "t-script", "mock", out=out, limit=2))
    with pytest.raises(RunConfigError) as err:
        asyncio.run(run(suite, "t-script", "mock", out=out, limit=3, budget=Budget(max_steps=5)))
    message = str(err.value)
    assert "budget.max_steps: 20 (recorded) != 5 (now)" in message and "limit: 2 (recorded) != 3 (now)" in message
    assert len(lines(out)) == 2
    # concurrency does not change results: resuming with another is fine
    assert asyncio.run(run(suite, "t-script", "mock", out=out, limit=2, concurrency=1)).skipped == 2


def test_no_secret_reaches_the_run_directory(suite: Suite, tmp_path: Path) -> None:
    key, bearer, url_pw = "sk-test-0123456789abcdef", "Bearer hunter2-token-value", "pw-in-url-999"
    spec = f"t-keyed:m@https://user:{url_pw}@example.invalid/v1"
    options = {"api_key": key, "headers": {"Authorization": bearer}, "max_concurrency": 2}
    BEHAVIOR[suite.tasks[1].id] = "raise"
    asyncio.run(run(suite, "t-script", spec, out=tmp_path / "s", limit=2, model_options=options))
    written = (tmp_path / "s" / "manifest.json").read_text() + (tmp_path / "s" / "episodes.jsonl").read_text()
    for secret in (key, bearer, url_pw, "hunter2"):
        assert secret not in written
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert manifest["model"]["options"]["api_key"] == "[redacted]"
    assert manifest["model"]["options"]["max_concurrency"] == 2
    assert redact({"max_tokens": 5, "token": "x", "note": "sk-abcdefghijkl"}) == {
        "max_tokens": 5,
        "token": "[redacted]",
        "note": "[redacted]",
    }


KILL_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from hippocamp import registry
    from hippocamp.agents.base import Answer
    from hippocamp.runs import SuiteOptions, load_suite, run

    @registry.register("agent", "t-sleepy")
    class Sleepy:
        name = "t-sleepy"
        async def solve(self, task, env, model, budget):
            await asyncio.sleep(0.05)
            return Answer(text="answer to " + task.id, files=[env.list_files().data[0]["path"]])

    options = SuiteOptions(ocr=False, asr=False, embed=False, store=Path(sys.argv[2]), workers=1)
    suite = load_suite(sys.argv[1], options)
    summary = asyncio.run(run(suite, "t-sleepy", "mock", out=Path(sys.argv[3]), epochs=3, concurrency=4))
    print(summary.done, summary.skipped)
    """
)


def test_kill_9_mid_run_then_resume_loses_nothing(synth_small: Path, synth_indexed: tuple[Path, Path],
                                                  tmp_path: Path) -> None:  # fmt: skip
    out = tmp_path / "killed"
    script = tmp_path / "run_script.py"
    script.write_text(KILL_SCRIPT)
    argv = [sys.executable, str(script), str(synth_small), str(synth_indexed[1]), str(out)]
    proc = subprocess.Popen(argv, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    episodes = out / "episodes.jsonl"
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if episodes.is_file() and episodes.read_bytes().count(b"\n") >= 12:
                break
            time.sleep(0.005)
        assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read().decode()}"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
    before = episodes.read_bytes()
    complete = [json.loads(x) for x in before.split(b"\n")[:-1]]
    assert 12 <= len(complete) < 63

    done = subprocess.run(argv, env=dict(os.environ), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(63 - len(complete)), str(len(complete))]
    after = lines(out)
    got = keys(out)
    assert len(got) == len(set(got)) == 63
    assert set(got) == {(t, "t-sleepy", e) for t in {x[0] for x in got} for e in (1, 2, 3)}
    assert after[: len(complete)] == complete  # what was on disk before the kill is kept as it was
    assert json.loads((out / "manifest.json").read_text())["resumed"] == 1


# -- commands ------------------------------------------------------------------------------------------
def test_run_command_and_unknown_agent(synth_small: Path, synth_indexed: tuple[Path, Path], tmp_path: Path) -> None:
    from hippocamp.cli import main

    out = tmp_path / "cli"
    base = ["run", "--suite", str(synth_small), "--model", "mock", "--out", str(out), "--store", str(synth_indexed[1]),
            "--no-ocr", "--no-asr", "--no-embed"]  # fmt: skip
    result = CliRunner().invoke(main, [*base, "--agent", "t-script", "--limit", "3", "--epochs", "2"])
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())  # rich wraps long run paths
    assert "6 done, 0 skipped" in flat and "answered 6" in flat
    assert len(lines(out)) == 6
    result = CliRunner().invoke(main, [*base, "--agent", "t-script", "--limit", "3", "--epochs", "2"])
    assert result.exit_code == 0 and "0 done, 6 skipped" in " ".join(result.output.split())
    result = CliRunner().invoke(main, [*base, "--agent", "t-script", "--limit", "4"])
    assert result.exit_code == 2 and "limit: 3 (recorded) != 4 (now)" in result.output
    result = CliRunner().invoke(main, [*base, "--agent", "nope"])
    assert result.exit_code == 2 and "no agent named 'nope'" in result.output and "t-script" in result.output


def test_ask_command(synth_small: Path, synth_indexed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from hippocamp.cli import main

    question = "Where did the landlord send the lease?"
    args = ["ask", str(synth_small), question, "--agent", "t-script", "--store", str(synth_indexed[1]),
            "--no-ocr", "--no-asr", "--no-embed"]  # fmt: skip
    result = CliRunner().invoke(main, [*args, "--model", "mock"])
    assert result.exit_code == 0, result.output
    assert result.output.strip().startswith(f"mock: {question}")  # the mock echoes the question
    assert "Sources" in result.output
    result = CliRunner().invoke(main, [*args, "--model", "mock", "--json"])
    data = json.loads(result.output)
    assert data["answer"] == f"mock: {question}" and data["stop"] == "answered" and data["evidence"][0]["file_path"]
    asked = Stats.tasks[-1]
    assert asked.question == question and asked.profile and asked.profile != synth_small.name
    # no model given and none installed: a clear message
    monkeypatch.setattr("hippocamp.models.local_models.is_installed", lambda name: False)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "hippocamp models install" in result.output and "--model" in result.output


def test_select_tasks_stratified_per_type() -> None:
    from hippocamp.agents.base import Task
    from hippocamp.runs.runner import select_tasks

    tasks = [Task(id=f"q{i}", question="?", meta={"qa_type": "T1" if i % 3 else "T2"}) for i in range(12)]
    picked = select_tasks(tasks, per_type=2)
    assert [t.id for t in picked] == ["q0", "q1", "q6", "q7"]  # T2: q0,q3,q6,q9 -> q0,q6; T1: 8 of them -> q1,q7
    assert len(select_tasks(tasks, per_type=100)) == 12 and [t.id for t in select_tasks(tasks, limit=3)] == [
        "q0",
        "q1",
        "q2",
    ]
    assert [t.id for t in select_tasks(tasks, limit=1, per_type=2)] == ["q0"]
