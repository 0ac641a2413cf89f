"""The run directory contract: version-1 run directories still read, typed per benchmark; bad
manifests are refused naming the file and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hippocamp.runs.rundir import RunDir, RunDirError
from hippocamp.schema.run import RUN_FORMAT, SCORE_FORMAT, HippoCampScoreLine, PContextScoreLine

V1_COMMON = {"task_id": "t1", "agent": "rag", "epoch": 1, "correct": True, "score": 1, "status": "ok", "error": None,
             "rationale": "", "decided_by": "rubric", "seconds": 1.5, "tokens": 10, "cost": 0.0,
             "stop": "answered"}  # fmt: skip


def _run(tmp_path: Path, manifest: dict, lines: list[dict]) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (run / "scores.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return run


def test_a_version_1_pcontext_run_reads_as_pcontext(tmp_path: Path) -> None:
    grade = {"type": "T1", "verdict": "correct", "correct": True, "covered": ["asthma"]}
    line = {**V1_COMMON, "judge": "pcontext-rubric", "mode": "rubric", "facts": grade, "files": {}, "au": {}}
    run = RunDir.open(
        _run(tmp_path, {"format": "hippocamp-run/1", "suite": {"kind": "pcontext"}, "config": {}}, [line])
    )
    assert run.manifest.format == RUN_FORMAT and run.benchmark_name == "pcontext"
    (score,) = run.scores().items
    assert isinstance(score, PContextScoreLine) and score.grade == grade and score.format == SCORE_FORMAT


def test_a_version_1_hippocamp_run_reads_as_hippocamp(tmp_path: Path) -> None:
    files = {"hippocamp": {"precision": 1.0, "recall": 1.0, "f1": 1.0}, "set": {"precision": 1, "recall": 1, "f1": 1}}
    line = {**V1_COMMON, "judge": "facts", "mode": "facts", "facts": None, "files": files, "au": {"recall": 1.0}}
    run = RunDir.open(_run(tmp_path, {"format": "hippocamp-run/1", "suite": {"name": "Mira"}, "config": {}}, [line]))
    assert run.benchmark_name == "hippocamp"
    (score,) = run.scores().items
    assert isinstance(score, HippoCampScoreLine) and score.files == files and score.benchmark == "hippocamp"


def test_bad_manifests_are_refused_naming_the_file_and_field(tmp_path: Path) -> None:
    run = _run(tmp_path, {"format": RUN_FORMAT, "benchmark": "nosuch", "config": {}}, [])
    with pytest.raises(RunDirError, match=r"manifest.json: field 'benchmark': no benchmark named 'nosuch'"):
        RunDir.open(run).benchmark  # noqa: B018
    (run / "manifest.json").write_text('{"format": "hippocamp-run/2", "suite": [1]}', encoding="utf-8")
    with pytest.raises(RunDirError, match=r"manifest.json: field 'suite': expected an object"):
        RunDir.open(run)
    (run / "manifest.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(RunDirError, match=r"manifest.json"):
        RunDir.open(run)
    with pytest.raises(RunDirError, match="no such run directory"):
        RunDir.open(tmp_path / "nowhere")
