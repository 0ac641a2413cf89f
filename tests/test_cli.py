"""The command line, end to end: exit codes 0 / 1 / 2, tables, JSON, the bundled example."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from conftest import write_json
from hippocamp.cli import main


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_help_lists_commands_and_version():
    result = invoke("--help")
    assert result.exit_code == 0
    for name in ("validate", "stats", "example"):
        assert name in result.output
    assert invoke("--version").output.strip() == "hippocamp, version 0.1.0"


def test_validate_clean_profile_exits_0(profile_dir: Path):
    result = invoke("validate", str(profile_dir))
    assert result.exit_code == 0, result.output
    assert "OK 3/3 records read" in result.output


def test_validate_errors_exit_1_and_name_file_record_field(profile_dir: Path, good_records):
    good_records[0]["rationale"][1]["evidence_id"] = [4]
    path = write_json(profile_dir / "Fullset/Tiny.json", good_records)
    result = invoke("validate", str(path), "--root", str(profile_dir / "Fullset/Tiny"))
    assert result.exit_code == 1
    assert "FAILED" in result.output and "q1" in result.output and "rationale[1].evidence_id" in result.output
    report = json.loads(invoke("validate", str(profile_dir), "--json").output)
    (problem,) = [p for p in report["problems"] if p["severity"] == "error"]
    assert problem["file"] == str(path) and problem["record_id"] == "q1"
    assert problem["field"] == "rationale[1].evidence_id" and problem["expected"] == "one of 1"


def test_validate_unreadable_input_exits_2(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": 1,,}]', encoding="utf-8")
    result = CliRunner().invoke(main, ["validate", str(bad)])
    assert result.exit_code == 2
    assert f"{bad}:1:11: not valid JSON" in result.output
    missing = CliRunner().invoke(main, ["validate", str(tmp_path / "none.json")])
    assert missing.exit_code == 2 and "no such file" in missing.output
    assert CliRunner().invoke(main, ["validate"]).exit_code == 2
    unknown_rule = CliRunner().invoke(main, ["validate", "--example", "--rule", "nope"])
    assert unknown_rule.exit_code == 2 and "unknown rule" in unknown_rule.output


def test_validate_rule_selection(profile_dir: Path, good_records):
    good_records[0]["rationale"][1]["evidence_id"] = [4]
    write_json(profile_dir / "Fullset/Tiny.json", good_records)
    assert invoke("validate", str(profile_dir), "--skip", "evidence-refs").exit_code == 0
    only = json.loads(invoke("validate", str(profile_dir), "--rule", "labels", "--json").output)
    assert only["rules"] == ["labels"]
    listing = invoke("validate", "--list-rules").output
    assert "answer-support" in listing and "Rule 4" in listing


def test_example_commands():
    assert invoke("validate", "--example").exit_code == 0
    result = invoke("stats", "--example", "--json")
    stats = json.loads(result.output)
    assert stats["questions"] == 6 and stats["profiles"] == ["Mira"]
    path = invoke("example").output.strip()
    assert Path(path, "Mira.json").is_file()


def test_example_copy(tmp_path: Path):
    result = invoke("example", "--copy", str(tmp_path / "mine"))
    assert result.exit_code == 0
    assert (tmp_path / "mine/Mira/Mira.json").is_file()
    assert invoke("validate", str(tmp_path / "mine/Mira")).exit_code == 0
    again = CliRunner().invoke(main, ["example", "--copy", str(tmp_path / "mine")])
    assert again.exit_code == 2 and "already exists" in again.output


def test_console_script_starts_without_heavy_imports():
    code = (
        "import sys; from hippocamp.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('matplotlib', 'numpy', 'pydantic', 'pypdf', 'openpyxl', 'PIL') if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_models_commands_with_the_mock():
    listing = invoke("models", "list")
    assert listing.exit_code == 0
    assert (
        "mock" in listing.output and "qwen2.5-coder-1.5b" in listing.output and "default chat model" in listing.output
    )
    check = invoke("models", "check", "mock")
    assert check.exit_code == 0 and "json:     ok" in check.output
    chat = CliRunner().invoke(main, ["models", "chat", "mock"], input="hello there\n\n")
    assert chat.exit_code == 0 and "mock: hello there" in chat.output
    bad = CliRunner().invoke(main, ["models", "check", "nope:x"])
    assert bad.exit_code == 1 and "unknown model provider" in bad.output
    missing = CliRunner().invoke(main, ["models", "install", "no-such-model"])
    assert missing.exit_code == 1 and "unknown local model" in missing.output


def test_cache_commands(tmp_path: Path):
    import asyncio

    from hippocamp.models import get_model

    asyncio.run(get_model("mock").generate([{"role": "user", "content": "x"}], cache=True))
    stats = invoke("cache", "stats")
    assert stats.exit_code == 0 and "1 entries" in stats.output and "mock" in stats.output
    assert "removed 1 entries" in invoke("cache", "clear").output
    assert "0 entries" in invoke("cache", "stats").output
