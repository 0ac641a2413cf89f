"""The LoCoMo importer on a small hand-made conversation in LoCoMo's shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hippocamp.importers.locomo import import_locomo, parse_locomo_time
from hippocamp.runs.suite import SuiteOptions, load_suite

CONV = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I went to the pottery class yesterday!"},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice. I start my new job next week.",
             "img_url": ["http://x"], "blip_caption": "a photo of an office desk"},
        ],
        "session_2_date_time": "10:04 am on 19 June, 2023",
        "session_2": [{"speaker": "Ana", "dia_id": "D2:1", "text": "My dog Rex learned to sit."}],
    },
    "qa": [
        {"question": "When did Ana go to the pottery class?", "answer": "7 May 2023", "evidence": ["D1:1"],
         "category": 2},
        {"question": "What is Ana's dog called?", "answer": "Rex", "evidence": ["D2:1"], "category": 4},
        {"question": "What did Ben's dog learn?", "evidence": ["D2:1"], "category": 5,
         "adversarial_answer": "to sit"},
        {"question": "What does Ana do?", "answer": 2023, "evidence": ["D1:1; D2:1"], "category": 1},
        {"question": "Would Ana enjoy crafts?", "answer": "Likely yes", "evidence": [], "category": 3},
    ],
}  # fmt: skip


def _write(tmp_path: Path) -> Path:
    src = tmp_path / "locomo.json"
    src.write_text(json.dumps([CONV]), encoding="utf-8")
    return src


def test_parse_time() -> None:
    assert parse_locomo_time("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00"
    assert parse_locomo_time("10:04 am on 19 June, 2023").hour == 10
    with pytest.raises(ValueError):
        parse_locomo_time("sometime")


def test_import_messages_and_cases(tmp_path: Path) -> None:
    result = import_locomo(_write(tmp_path), tmp_path / "out")
    assert result.personas == ["conv-x"] and result.messages == 3
    assert result.cases_by_type == {"T3": 1, "T1": 1, "abstain": 1, "T2": 1, "T4": 1}
    d = tmp_path / "out" / "conv-x"
    msgs = [json.loads(x) for x in (d / "messenger.jsonl").read_text().splitlines()]
    assert [m["id"] for m in msgs] == ["D1:1", "D1:2", "D2:1"]
    assert msgs[0]["timestamp"] == "2023-05-08T13:56:00" and msgs[1]["timestamp"] == "2023-05-08T13:57:00"
    assert msgs[0]["recipients"] == ["Ben"] and "office desk" in msgs[1]["text"]
    cases = {c["id"]: c for c in map(json.loads, (d / "cases.jsonl").read_text().splitlines())}
    assert cases["conv-x-q001"]["type"] == "T3" and cases["conv-x-q001"]["supporting_fragments"] == ["D1:1"]
    adv = cases["conv-x-q003"]
    assert adv["type"] == "abstain" and adv["adversarial_answer"] == "to sit" and adv["labels"] == []
    assert cases["conv-x-q004"]["supporting_fragments"] == ["D1:1", "D2:1"] and cases["conv-x-q004"]["answer"] == "2023"


def test_suite_over_import_resolves_relative_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIPPOCAMP_CACHE_DIR", str(tmp_path / "cache"))
    import_locomo(_write(tmp_path), tmp_path / "out")
    suite = load_suite(f"pcontext:{tmp_path / 'out'}", SuiteOptions(embed=False))
    try:
        assert len(suite.tasks) == 5 and suite.tasks[0].id == "conv-x/conv-x-q001"
        env = suite.env(suite.tasks[0])
        obs = env.search("pottery class", k=2)
        assert "D1:1" in obs.text and "yesterday = Sun 2023-05-07" in obs.text
        assert "next week = 2023-05-15..2023-05-21" in env.read("messenger/session_1.txt", "message D1:2").text
        assert suite.benchmark == "pcontext" and "pcontext_dir" in suite.describe()
    finally:
        suite.close()


def test_cli(tmp_path: Path) -> None:
    from hippocamp.cli import main

    res = CliRunner().invoke(main, ["import", "locomo", str(_write(tmp_path)), "--out", str(tmp_path / "o"), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["cases_by_type"]["abstain"] == 1


def test_an_imported_locomo_runs_and_scores(tmp_path: Path) -> None:
    """The importer's folder is a suite as it is (no prefix needed): run with the mock model, scored by
    the rubrics, the abstention case included."""
    from hippocamp.cli import main
    from hippocamp.scoring.run_scores import load_scores

    out = tmp_path / "locomo"
    result = CliRunner().invoke(main, ["import", "locomo", str(_write(tmp_path)), "--out", str(out)])
    assert result.exit_code == 0, result.output
    run = tmp_path / "run"
    args = ["run", "--suite", str(out), "--agent", "rag", "--model", "mock", "--out", str(run), "--no-embed"]
    assert (r := CliRunner().invoke(main, args, catch_exceptions=False)).exit_code == 0, r.output
    assert (r := CliRunner().invoke(main, ["score", str(run)], catch_exceptions=False)).exit_code == 0, r.output
    lines = load_scores(run)
    assert len(lines) == 5 and all(s.benchmark == "pcontext" and s.status == "ok" for s in lines)
    assert {s.grade["type"] for s in lines} == {"T1", "T2", "T3", "T4", "abstain"}
