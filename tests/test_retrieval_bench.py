"""Retrieval alone: recall@k by file and evidence unit from a suite's gold, per mode, with latency."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from click.testing import CliRunner

from hippocamp.cli import main
from hippocamp.scoring.evidence import atomic_units
from hippocamp.scoring.retrieval import RetrievalCase, evaluate, format_table


def hit(path: str, page: int | None = None) -> Any:
    return SimpleNamespace(path=path, locator={"page": page} if page else None, meta={})


def test_recall_at_k_by_file_and_unit() -> None:
    gold = [{"file_path": "a.pdf", "locator": {"page": 3}}, {"file_path": "b.eml"}]
    case = RetrievalCase("q1", "rent?", "factual", gold_files=["a.pdf", "b.eml"], gold_units=atomic_units(gold))
    hits = [hit("a.pdf", 2), hit("c.txt"), hit("a.pdf", 3), hit("b.eml")]
    (result,) = evaluate(lambda c, m, k: hits[:k], [case], ["fts"], (1, 3, 4))
    assert result.file_recall == {1: 0.5, 3: 0.5, 4: 1.0}  # a.pdf from rank 1, b.eml at rank 4
    assert result.unit_recall == {1: 0.0, 3: 0.5, 4: 1.0}  # page 3 at rank 3; b.eml is a whole-file unit
    assert result.by_category == {"factual": {1: 0.0, 3: 0.5, 4: 1.0}} and result.n == 1
    lines = format_table([result], (1, 3, 4))
    assert lines[0].startswith("| mode | file R@1") and "| fts | 0.500 | 0.500 | 1.000 | 0.000 |" in lines[2]


def test_ranked_file_recall() -> None:
    case = RetrievalCase("q1", "rent?", "factual", gold_files=["a.pdf", "b.eml"], gold_units=atomic_units(["a.pdf"]))
    (result,) = evaluate(lambda c, m, k: [hit("c.txt")], [case], ["hybrid"], (1, 2),
                         rank_files=lambda c, m, k: ["./a.pdf", "c.txt", "b.eml"][:k])  # fmt: skip
    assert result.ranked_file_recall == {1: 0.5, 2: 0.5} and result.file_recall == {1: 0.0, 2: 0.0}
    assert "ranked file R@1" in format_table([result], (1, 2))[0]


def test_persona_cases_count_fragments() -> None:
    case = RetrievalCase("c1", "who?", "T1", case={"supporting_fragments": ["f1", "f2"]},
                         fragment_of={"m1": "f1", "m9": "f2"})  # fmt: skip
    hits = [SimpleNamespace(path="p/log", locator=None, meta={"message_id": "m1"}),
            SimpleNamespace(path="p/log", locator=None, meta={"message_id": "m9"})]  # fmt: skip
    (result,) = evaluate(lambda c, m, k: hits[:k], [case], ["hybrid"], (1, 2))
    assert result.unit_recall == {1: 0.5, 2: 1.0} and result.file_recall == {1: None, 2: None}


def test_cli_bench_retrieval(synth_small: Path, tmp_path: Path) -> None:
    args = ["bench", "retrieval", "--suite", str(synth_small), "--store", str(tmp_path / "s.sqlite"), "--no-embed",
            "--no-ocr", "--no-asr", "--modes", "fts", "--k", "1,10", "--json"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    (fts,) = data["results"]
    assert data["cases"] > 5 and fts["mode"] == "fts"
    assert 0 < fts["file_recall"]["1"] <= fts["file_recall"]["10"] <= 1 and fts["p50_ms"] > 0
    refused = CliRunner().invoke(main, [*args[:-1], "--modes", "vector"])
    assert refused.exit_code == 2 and "has no vectors" in refused.output
    assert CliRunner().invoke(main, [*args[:-1], "--k", "0"]).exit_code == 2
    # halves for tuning and reporting: together they are the whole set
    halves = [json.loads(CliRunner().invoke(main, [*args, "--half", h]).output)["cases"] for h in ("even", "odd")]
    assert sum(halves) == data["cases"] and halves[0] - halves[1] in (0, 1)
    # any searcher weight by name; a bad one is refused with the names
    weighted = CliRunner().invoke(main, [*args, "--weight", "date=0", "--weight", "speaker_weight=0.3"])
    assert weighted.exit_code == 0, weighted.output
    # expansions by a model (the mock echoes its prompt: lines of the worked example become queries)
    expanded = CliRunner().invoke(main, [*args, "--expand-model", "mock", "--limit", "3"])
    assert expanded.exit_code == 0, expanded.output
    assert json.loads(expanded.output)["cases"] == 3
    unknown = CliRunner().invoke(main, [*args, "--expand-model", "nosuch:model"])
    assert unknown.exit_code == 2 and "--expand-model 'nosuch:model'" in unknown.output
    bad = CliRunner().invoke(main, [*args, "--weight", "colour=1"])
    assert bad.exit_code == 2 and "fusion, chat_fusion, path, context, speaker, date" in bad.output
