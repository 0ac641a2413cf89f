"""A terminal-agent run and a rag run over a synthetic profile, scored under the release's convention:
file P/R/F1 of the cited, touched and retrieved lists checked against values worked out by hand, both
judge-failure policies, the report's table, and the release's rows written and read back."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hippocamp.agents.base import Budget
from hippocamp.cli import main
from hippocamp.models import get_model
from hippocamp.runs import SuiteOptions, load_suite, run
from hippocamp.runs.rundir import RunDir
from hippocamp.scoring.hippocamp_io import common_view, read_release, release_rows
from hippocamp.scoring.judge import Judge
from hippocamp.scoring.run_scores import SUMMARY, load_scores, score_run

TASKS = 2


def _question(request: Any) -> str:
    return next(str(m["content"]) for m in request.messages if m["role"] == "user")


def _turns(request: Any) -> int:
    return sum(1 for m in request.messages if m["role"] == "assistant")


def tool(command: str) -> str:
    return f'<think>look</think>\n<tool>{{"name": "terminal", "arguments": {{"command": {json.dumps(command)}}}}}'


@pytest.fixture(scope="module")
def suite_and_gold(synth_small: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    store = tmp_path_factory.mktemp("release-runs") / "s.sqlite"
    suite = load_suite(str(synth_small), SuiteOptions(ocr=False, asr=False, embed=False, store=store))
    yield suite
    suite.close()


def _other_file(suite: Any, gold: list[str]) -> str:
    return next(p for p in sorted(suite.store.files()) if p not in gold and "/" in p and " " not in p)


def test_terminal_run_scored_under_the_release_convention(suite_and_gold: Any, tmp_path: Path) -> None:
    suite = suite_and_gold
    tasks = {t.id: t for t in suite.tasks[:TASKS]}
    by_question = {t.question: suite.gold[tid] for tid, t in tasks.items()}

    def script(request: Any) -> str:
        record = next(r for q, r in by_question.items() if q in _question(request))
        gold = list(record.file_path)
        other = _other_file(suite, gold)
        turn = _turns(request)
        if turn == 0:
            return tool(f'return_txt "{gold[0]}"')
        if turn == 1:
            return tool(f'cat "{other}" | grep -i rent')
        if turn == 2:
            return tool("ls -la Documents/")
        return f"<think>done</think><answer>It was 987,654.</answer><files>{gold[0]}</files>"

    out = tmp_path / "terminal-run"
    asyncio.run(run(suite, "terminal", get_model("mock", outputs=script), out=out, limit=TASKS, concurrency=1))
    episodes = RunDir.open(out).episodes().episodes
    assert len(episodes) == TASKS
    for e in episodes:
        gold = list(suite.gold[e.task_id].file_path)
        other = _other_file(suite, gold)
        # the release's rule: return_* first arguments, then every argument that looks like a file
        assert e.answer.touched == [gold[0], other, "Documents/"]
        assert e.answer.files == [gold[0]] and e.answer.retrieved == []

    report = asyncio.run(score_run(out, Judge(None, mode="facts"), convention="release"))
    assert report.scored == TASKS
    lines = load_scores(out)
    for s in lines:
        n_gold = len(set(suite.gold[s.task_id].file_path))
        assert s.paper_list == "touched"
        release = s.file_lists["release"]
        assert release["touched"]["precision"] == pytest.approx(1 / 3)
        assert release["touched"]["recall"] == pytest.approx(1 / n_gold)
        p, r = 1 / 3, 1 / n_gold
        assert release["touched"]["f1"] == pytest.approx(2 * p * r / (p + r))
        assert release["cited"]["precision"] == 1.0 and release["cited"]["recall"] == pytest.approx(1 / n_gold)
        assert release["retrieved"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
        assert s.correct is False  # 987,654 is no gold answer
    summary = json.loads((out / SUMMARY).read_text())
    head = summary["headline"]
    assert head["convention"] == "release" and head["file_list"] == "touched"
    assert head["file_precision"] == pytest.approx(1 / 3)
    assert head["accuracy"] == 0.0 and head["failed_judgments"] == "counted as no"
    assert summary["file_lists"]["hippocamp"]["cited"]["precision"] == 1.0

    # the report shows the three lists under both path rules, and both accuracy policies
    result = CliRunner().invoke(main, ["report", str(out), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 0, result.output
    md = next((tmp_path / "rep").glob("*.md")).read_text()
    assert "## File lists and judge-failure policies" in md and "touched P/R/F1 (paths normalised)" in md
    html = next((tmp_path / "rep").glob("*.html")).read_text()
    assert 'id="file-lists-table"' in html

    # written as the release's rows and read back: what both carry is kept
    rows = release_rows(episodes, suite.gold, "evaluate", "paper")
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    back = {v["query_id"]: v for v in (common_view(r) for r in read_release(path).rows)}
    for e in episodes:
        record = suite.gold[e.task_id]
        view = back[e.task_id]
        assert (view["question"], view["answer"], view["ground_truth"]) == (record.question, e.answer.text,
                                                                            record.answer)  # fmt: skip
        assert view["gold_files"] == list(record.file_path) and view["agent_files"] == e.answer.touched
        assert view["time_ms"] == round(e.wall_s * 1000)
    # the release's own scoring of those rows gives the run's release figures
    result = CliRunner().invoke(main, ["score", "--hippocamp-io", str(path), "--convention", "release", "--no-judge",
                                       "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    files = json.loads(result.output)["file_list_metrics"]
    assert files["average_precision"] == pytest.approx(summary["file_lists"]["release"]["touched"]["precision"])
    assert files["average_f1_score"] == pytest.approx(summary["file_lists"]["release"]["touched"]["f1"])
    exported = CliRunner().invoke(main, ["export-release", str(out), "--out", str(tmp_path / "q.json"), "--shape",
                                         "run_query", "--files", "cited"])  # fmt: skip
    assert exported.exit_code == 0, exported.output
    q = json.loads((tmp_path / "q.json").read_text())
    assert {r["query_id"] for r in q} == {e.task_id for e in episodes}
    assert all(r["retrieved_file_list"] == [suite.gold[r["query_id"]].file_path[0]] for r in q)


def test_rag_run_scores_its_retrieved_files(suite_and_gold: Any, tmp_path: Path) -> None:
    suite = suite_and_gold
    out = tmp_path / "rag-run"
    model = get_model("mock", outputs=lambda r: "It was 987,654 [1].")
    asyncio.run(run(suite, "rag", model, out=out, limit=TASKS, concurrency=1, budget=Budget(k=3)))
    episodes = RunDir.open(out).episodes().episodes
    env = suite.env()
    expected: dict[str, tuple[float, float]] = {}
    for e in episodes:
        record = suite.gold[e.task_id]
        hits = env.call("search", {"query": record.question, "k": 3}).data
        files = list(dict.fromkeys(h["path"] for h in hits))
        assert e.answer.retrieved == files and e.answer.files == files[:1]
        gold = set(record.file_path)
        tp = len(gold & set(files))
        expected[e.task_id] = (tp / len(files), tp / len(gold))
    asyncio.run(score_run(out, Judge(None, mode="facts"), convention="release"))
    for s in load_scores(out):
        assert s.paper_list == "retrieved"
        p, r = expected[s.task_id]
        got = s.file_lists["release"]["retrieved"]
        assert got["precision"] == pytest.approx(p) and got["recall"] == pytest.approx(r)
        assert got["f1"] == pytest.approx(2 * p * r / (p + r) if p + r else 0.0)
    head = json.loads((out / SUMMARY).read_text())["headline"]
    assert head["file_list"] == "retrieved"
    assert head["file_precision"] == pytest.approx(sum(p for p, _ in expected.values()) / TASKS)


def test_answer_metrics_beside_accuracy(suite_and_gold: Any, tmp_path: Path) -> None:
    suite = suite_and_gold
    tasks = suite.tasks[:TASKS]
    answers = {t.question: suite.gold[t.id].answer for t in tasks}

    def script(request: Any) -> str:  # the gold answer itself for the first task, a wrong figure otherwise
        text = _question(request)
        first = tasks[0].question in text
        return (answers[tasks[0].question] if first else "It was 987,654.") + " [1]"

    out = tmp_path / "rag-gold"
    asyncio.run(run(suite, "rag", get_model("mock", outputs=script), out=out, limit=TASKS, concurrency=1))
    report = asyncio.run(score_run(out, Judge(None, mode="facts")))
    metrics = report.summary["answer_metrics"]
    assert set(metrics) == {"exact_match", "covered_exact_match", "rouge", "bleu"}
    assert metrics["covered_exact_match"] == pytest.approx(0.5)  # "<gold> [1]" covers the gold answer
    assert 0 < metrics["rouge"] < 1 and 0 < metrics["bleu"] < 1
