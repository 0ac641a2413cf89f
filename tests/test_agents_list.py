"""The agents a run can use: ``hippocamp agents list`` shows hippocamp's and the release's eleven retrieval
pipelines and its terminal loop, and a run's manifest keeps the agent's own budgets and the terminal it had."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from click.testing import CliRunner

from hippocamp import registry
from hippocamp.agents.base import Budget
from hippocamp.cli import main
from hippocamp.models import get_model
from hippocamp.runs import SuiteOptions, load_suite, run

RELEASE_PIPELINES = {
    "rag-standard", "rag-self", "rag-adaptive", "rag-corrective", "rag-decomposition", "rag-graded", "rag-hybrid",
    "rag-hyde", "rag-ircot", "rag-parent-child", "rag-vector",
}  # fmt: skip


def test_agents_list_shows_ours_and_the_release_s() -> None:
    @registry.register("agent", "test-undocumented")
    class Undocumented:  # other tests register agents like this one: the list must still show them
        pass

    result = CliRunner().invoke(main, ["agents", "list", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output)}
    assert set(rows) >= RELEASE_PIPELINES and "terminal-release" in rows
    assert {rows[n]["origin"] for n in [*RELEASE_PIPELINES, "terminal-release"]} == {"release"}
    assert {"rag", "self-rag", "react", "search-r1", "terminal", "evidence"} <= set(rows)
    builtin = [*RELEASE_PIPELINES, "terminal-release", "rag", "self-rag", "react", "search-r1", "terminal", "evidence"]
    assert all(rows[n]["description"] and "no description" not in rows[n]["description"] for n in builtin)
    assert all(r["description"] for r in rows.values())  # a plugin without a docstring still gets a line
    assert {rows[n]["file_list"] for n in RELEASE_PIPELINES} == {"retrieved"}
    assert rows["terminal"]["file_list"] == rows["terminal-release"]["file_list"] == "touched"
    table = CliRunner().invoke(main, ["agents", "list"])
    assert table.exit_code == 0 and "rag-parent-child" in table.output


def test_the_manifest_keeps_the_agent_s_budgets_and_the_terminal(profile_dir: Path, tmp_path: Path) -> None:
    options = SuiteOptions(ocr=False, asr=False, embed=False, store=tmp_path / "store.sqlite", workers=1,
                           terminal="emulated")  # fmt: skip
    suite = load_suite(profile_dir, options)
    model = get_model("mock", outputs=["<think>x</think><answer>no idea</answer><files></files>"])
    try:
        asyncio.run(run(suite, "terminal", model, out=tmp_path / "run", limit=1, budget=Budget(max_steps=3)))
    finally:
        suite.close()
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    settings = manifest["agent_settings"]
    assert settings == {"file_list": "touched", "format_retries": 1, "max_tokens": 600, "observation_chars": 6000}
    assert manifest["suite"]["terminal"]["setting"] == "emulated"
    assert manifest["suite"]["terminal"]["backend"] == "emulated"
    assert manifest["config"]["budget"]["max_steps"] == 3


def test_run_says_at_start_which_terminal_the_agent_gets(profile_dir: Path, tmp_path: Path) -> None:
    args = ["run", "--suite", str(profile_dir), "--agent", "terminal", "--model", "mock", "--limit", "1",
            "--no-ocr", "--no-asr", "--no-embed", "--store", str(tmp_path / "store.sqlite"), "--max-steps", "2",
            "--out", str(tmp_path / "run")]  # fmt: skip
    result = CliRunner().invoke(main, [*args, "--terminal", "emulated"])
    assert result.exit_code == 0, result.output
    assert "terminal: emulated" in result.stderr
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    assert manifest["suite"]["terminal"]["backend"] == "emulated"
    from hippocamp.envs import jail_support

    if jail_support() is not None:  # asking for a jail where none can be made is a clear error, before any run
        refused = CliRunner().invoke(main, [*args[:-1], str(tmp_path / "run2"), "--terminal", "jail"])
        assert refused.exit_code == 2 and "--terminal" in refused.output
