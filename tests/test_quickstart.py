"""The quickstart end to end on the smallest settings with the real embedded model (SmolLM2)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from hippocamp.cli import main


@pytest.mark.slow
@pytest.mark.timeout(900)  # about two minutes on a quiet 2-core machine; much more when it is shared
def test_quickstart_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hippocamp.models.local_models import is_installed

    if not is_installed("smollm2"):
        if os.environ.get("HIPPOCAMP_REQUIRE_MODELS"):
            pytest.fail("SmolLM2 is not installed (the 'local' extra)")
        pytest.skip("SmolLM2 is not installed (the 'local' extra)")
    monkeypatch.setenv("HIPPOCAMP_LLAMA_THREADS", "2")
    out = tmp_path / "qs"
    args = ["quickstart", "--model", "local:smollm2", "--limit", "1", "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "evidence" in result.output and "rag" in result.output and "report:" in result.output
    summary = json.loads((out / "quickstart.json").read_text())
    assert [r["agent"] for r in summary["rows"]] == ["evidence", "rag", "rag · persona"]
    assert [r["questions"] for r in summary["rows"]] == [1, 1, 5]  # the persona leg: one case of each of T1–T5
    html = (out / "report" / "report.html").read_text()
    md = (out / "report" / "report.md").read_text()
    assert "<table" in html and "<details" in html  # the result table and the per-question drill-down
    assert "P-ContextBench" in md and "rag · persona" in result.output
    question = json.loads((out / "runs" / "rag" / "episodes.jsonl").read_text().splitlines()[0])["question"]
    assert question in md
    # a second run reuses the profile, the index, the runs and the scores
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    for agent in ("evidence", "rag", "pcontext-rag"):
        lines = (out / "runs" / agent / "episodes.jsonl").read_text().splitlines()
        assert len(lines) == (5 if agent.startswith("pcontext") else 1)
