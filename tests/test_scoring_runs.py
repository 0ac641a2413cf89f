"""Scoring a run end to end: a real run over a synthetic suite, judged, scored, resumed; the release's
evaluator format; the CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from hippocamp.agents.base import Answer, Budget, EvidenceItem, Meter, Task
from hippocamp.cli import main
from hippocamp.models import get_model
from hippocamp.models.errors import ModelError
from hippocamp.registry import register
from hippocamp.runs import SuiteOptions, load_suite, run
from hippocamp.scoring.judge import Judge
from hippocamp.scoring.run_scores import SCORES, SUMMARY, load_scores, score_run


@register("agent", "test-oracle")
class Oracle:
    """Answers from the gold records it was given (a test stand-in): right on even tasks, a wrong
    number on odd ones, citing the gold files and locators."""

    name: ClassVar[str] = "test-oracle"
    gold: ClassVar[dict[str, Any]] = {}

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        meter = Meter(budget)
        record = self.gold[task.id]
        index = sorted(self.gold).index(task.id)
        text = record.answer if index % 2 == 0 else "It was 987,654."
        evidence = [EvidenceItem(file_path=e.file_path, locator=e.locators[0].dump() if e.locators else None)
                    for e in record.evidence]  # fmt: skip
        return meter.answer(text, evidence=evidence)


@pytest.fixture
def run_dir(synth_small: Path, tmp_path: Path) -> Path:
    suite = load_suite(str(synth_small), SuiteOptions(ocr=False, asr=False, embed=False, store=tmp_path / "s.sqlite"))
    Oracle.gold = suite.gold
    out = tmp_path / "run"
    asyncio.run(run(suite, "test-oracle", "mock", out=out, limit=8))
    suite.close()
    return out


def test_score_a_run_with_the_facts_judge(run_dir: Path) -> None:
    report = asyncio.run(score_run(run_dir, Judge(None, mode="facts")))
    assert report.scored == 8 and report.skipped == 0
    lines = load_scores(run_dir)
    by_task = {s.task_id: s for s in lines}
    ordered = sorted(by_task)
    wrong = [by_task[t] for i, t in enumerate(ordered) if i % 2 == 1]
    assert all(s.correct is False for s in wrong)  # "987,654" contradicts or misses every key fact
    right = [by_task[t] for i, t in enumerate(ordered) if i % 2 == 0]
    assert all(s.correct in (True, None) for s in right) and any(s.correct for s in right)
    assert all(s.files["hippocamp"]["f1"] == 1.0 and s.au["recall"] == 1.0 for s in lines)
    summary = json.loads((run_dir / SUMMARY).read_text())
    assert summary["episodes"] == 8 and summary["file_f1_hippocamp"] == 1.0
    assert 0 < summary["question_weighted"]["mean"] < 1
    again = asyncio.run(score_run(run_dir, Judge(None, mode="facts")))
    assert again.scored == 0 and again.skipped == 8 - again.unscored


def test_outage_leaves_items_unscored_and_a_rerun_scores_them(run_dir: Path) -> None:
    down = Judge(get_model("mock", outputs=lambda r: ModelError("judge offline")), mode="simple", retries=0)
    report = asyncio.run(score_run(run_dir, down))
    lines = load_scores(run_dir)
    assert report.unscored == 8 and all(s.correct is None and s.status == "unscored" for s in lines)
    summary = json.loads((run_dir / SUMMARY).read_text())
    assert summary["unscored"] == 8 and summary["question_weighted"]["mean"] is None  # never 0
    ok = json.dumps({"correct": True, "score": 4, "rationale": "fine"})
    up = Judge(get_model("mock", outputs=lambda r: ok), mode="simple")
    asyncio.run(score_run(run_dir, up))
    lines = [s for s in load_scores(run_dir) if s.mode == "simple"]
    assert len(lines) == 8 and all(s.correct is True for s in lines)  # unscored lines were judged again


def test_cli_score_and_hippocamp_io(run_dir: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["score", str(run_dir), "--judge-mode", "facts"])
    assert result.exit_code == 0, result.output
    assert "file F1: 100.0%" in result.output and (run_dir / SCORES).is_file()
    rows = [
        {"query_id": "q1", "question": "Rent?", "answer": "EUR 1,450 a month", "ground_truth": "EUR 1,450",
         "ground_file_list": ["a.pdf"], "agent_file_list": ["a.pdf", "b.pdf"], "time_ms": 1200},
        {"query_id": "q2", "question": "Rent?", "answer": "EUR 900", "ground_truth": "EUR 1,450",
         "ground_file_list": ["a.pdf"], "agent_file_list": [], "time_ms": 800},
    ]  # fmt: skip
    io_in = tmp_path / "rows.json"
    io_in.write_text(json.dumps(rows))
    result = CliRunner().invoke(main, ["score", "--hippocamp-io", str(io_in), "--judge-mode", "facts", "--json"])
    assert result.exit_code == 0, result.output
    aggregate = json.loads(result.output)
    assert aggregate["accuracy"] == 0.5 and aggregate["n"] == 2
    assert aggregate["precision"] == pytest.approx(0.25) and aggregate["f1_score"] == pytest.approx(1 / 3)
    out = [json.loads(x) for x in (tmp_path / "rows.scored.jsonl").read_text().splitlines()]
    assert out[0]["judge"]["pred"] == "yes" and out[1]["judge"]["pred"] == "no"
    assert out[1]["file_list_metrics"] == {"precision": 0.0, "recall": 0.0, "f1_score": 0.0}
    assert CliRunner().invoke(main, ["score"]).exit_code == 2


def test_cli_judge_calibrate(tmp_path: Path) -> None:
    rows = [
        {"question": "Rent (EUR)?", "gold_answer": "1450", "model_answer": "EUR 1,450", "label": "Correct Answer"},
        {"question": "Rent (EUR)?", "gold_answer": "1450", "model_answer": "EUR 1,540", "label": "Incorrect Answer"},
    ]
    path = tmp_path / "labeled.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = CliRunner().invoke(main, ["judge", "calibrate", "--labeled", str(path), "--judge-mode", "facts", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["agreement"]["accuracy"] == 1.0 and data["agreement"]["false_accept"] == 0.0
    assert data["self_test"]["accepts_gold"] == 1.0 and data["self_test"]["false_accept"]["all"] == 0.0
