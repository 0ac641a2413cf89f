"""Nothing hostile stops a run: every command checks its options before doing any work (exit 2, naming
the option and, for registry names, the closest known ones); damaged run files are reported with their
line and the rest is scored; deep JSON and huge numbers are refused with a message naming the file, line
and field; an unexpected failure is one line and exit 1. Never a traceback."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from hippocamp.cli import main

pytestmark = pytest.mark.hostile

DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "7" * 5000
FAST = ["--no-ocr", "--no-asr", "--no-embed"]


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def clean(result: Result) -> str:
    """The output, asserted free of tracebacks and Python's own errors."""
    out = result.output
    assert "Traceback" not in out and "RecursionError" not in out, out
    return " ".join(out.split())  # rich and click wrap long paths


def example() -> str:
    from hippocamp.examples import example_profile

    return str(example_profile())


@pytest.fixture(scope="module")
def scored_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A scored run directory (the example profile, rag with the mock model, 4 episodes), made once."""
    base = tmp_path_factory.mktemp("hostile-run")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(base / "home"))
        mp.setenv("XDG_CACHE_HOME", str(base / "cache"))
        mp.setenv("MPLBACKEND", "Agg")
        out = base / "run"
        made = cli("run", "--suite", example(), "--agent", "rag", "--model", "mock", "--out", str(out), "--store",
                   str(base / "s.sqlite"), "--limit", "4", *FAST)  # fmt: skip
        assert made.exit_code == 0, made.output
        scored = cli("score", str(out), "--judge-mode", "facts")
        assert scored.exit_code == 0, scored.output
        yield out


@pytest.fixture
def run_copy(scored_run: Path, tmp_path: Path) -> Path:
    target = tmp_path / "run"
    shutil.copytree(scored_run, target)
    return target


def replace_line(path: Path, number: int, text: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[number - 1] = text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def score_lines(run: Path) -> list[dict]:
    out = []
    for line in (run / "scores.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


# -- damaged run directories: reported with file and line, the rest scored ---------------------------------
@pytest.mark.timeout(120)
@pytest.mark.parametrize("garbage", ["{oops", DEEP, '{"task_id": ' + HUGE + "}", "", "[]"])
def test_score_skips_a_damaged_episode_line_and_scores_the_rest(run_copy: Path, garbage: str) -> None:
    (run_copy / "scores.jsonl").unlink()
    replace_line(run_copy / "episodes.jsonl", 2, garbage)
    result = cli("score", str(run_copy), "--judge-mode", "facts")
    out = clean(result)
    assert result.exit_code == 0, out
    assert f"{run_copy / 'episodes.jsonl'}: line 2:" in out and "skipped" in out
    assert "scored 3 new" in out and len(score_lines(run_copy)) == 3
    if garbage == DEEP:
        assert "nested deeper than 200 levels" in out
    if garbage.startswith('{"task_id": 7'):
        assert "field 'task_id': a number of 5000 digits" in out


@pytest.mark.timeout(120)
def test_a_garbage_score_line_does_not_block_rescoring_or_the_report(run_copy: Path) -> None:
    replace_line(run_copy / "scores.jsonl", 2, "not json at all")
    result = cli("score", str(run_copy), "--judge-mode", "facts")
    out = clean(result)
    assert result.exit_code == 0, out
    assert f"{run_copy / 'scores.jsonl'}: line 2: not a score line" in out
    assert "scored 1 new, 3 already scored" in out
    assert sorted(s["task_id"] for s in score_lines(run_copy)) == ["mira_001", "mira_002", "mira_003", "mira_004"]
    assert "not json at all" in (run_copy / "scores.jsonl").read_text()  # kept as it was, for the user to see
    report = cli("report", str(run_copy))
    assert report.exit_code == 0, clean(report)
    assert (run_copy / "report" / "report.html").is_file()


@pytest.mark.timeout(120)
def test_a_cut_last_line_is_still_repaired(run_copy: Path) -> None:
    path = run_copy / "scores.jsonl"
    path.write_bytes(path.read_bytes()[:-30])  # a kill in the middle of the last line
    result = cli("score", str(run_copy), "--judge-mode", "facts")
    assert result.exit_code == 0 and "scored 1 new, 3 already scored" in clean(result)
    assert "line" not in clean(result).split("scored")[0]  # no warning: a cut last line is a kill, not damage
    assert len(path.read_text().splitlines()) == 4 and path.read_bytes().endswith(b"\n")


@pytest.mark.timeout(120)
def test_episodes_jsonl_that_is_a_directory_is_refused(run_copy: Path, scored_run: Path) -> None:
    (run_copy / "episodes.jsonl").unlink()
    (run_copy / "episodes.jsonl").mkdir()
    store = scored_run.parent / "s.sqlite"
    result = cli("run", "--suite", example(), "--agent", "rag", "--model", "mock", "--out", str(run_copy), "--store",
                 str(store), "--limit", "4", *FAST)  # fmt: skip
    out = clean(result)
    assert result.exit_code == 2 and f"{run_copy / 'episodes.jsonl'}: is a directory" in out
    score = cli("score", str(run_copy), "--judge-mode", "facts")
    assert score.exit_code == 2 and "episodes.jsonl: is a directory" in clean(score)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("content", ['{"format": "hippocamp-run/1",\n "config": {', DEEP, "[1, 2]"])
def test_a_corrupt_manifest_is_named(run_copy: Path, scored_run: Path, content: str) -> None:
    (run_copy / "manifest.json").write_text(content, encoding="utf-8")
    manifest = str(run_copy / "manifest.json")
    store = scored_run.parent / "s.sqlite"
    for args in (["score", str(run_copy), "--judge-mode", "facts"], ["report", str(run_copy)],
                 ["run", "--suite", example(), "--agent", "rag", "--model", "mock", "--out", str(run_copy),
                  "--store", str(store), "--limit", "4", *FAST]):  # fmt: skip
        result = cli(*args)
        out = clean(result)
        assert result.exit_code == 2, (args[0], out)
        assert manifest in out, (args[0], out)
        if content == DEEP:
            assert f"{manifest}:1:201: nested deeper than 200 levels" in out
        elif content.startswith("{"):
            assert f"{manifest}:2:" in out and "not valid JSON" in out


# -- deep JSON and huge numbers: refused with file, line and field ----------------------------------------
@pytest.mark.timeout(120)
@pytest.mark.parametrize("command", ["validate", "stats", "run", "score-io", "locomo"])
def test_deep_json_is_refused_with_the_file_and_line(command: str, tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"records": \n' + DEEP + "}", encoding="utf-8")
    args = {
        "validate": ["validate", str(deep), "--root", str(tmp_path)],
        "stats": ["stats", str(deep), "--root", str(tmp_path)],
        "run": ["run", "--suite", str(deep), "--agent", "rag", "--model", "mock", "--out", str(tmp_path / "r")],
        "score-io": ["score", "--hippocamp-io", str(deep), "--judge-mode", "facts"],
        "locomo": ["import", "locomo", str(deep), "--out", str(tmp_path / "lo")],
    }[command]
    result = cli(*args)
    out = clean(result)
    assert result.exit_code == 2, out
    assert f"{deep}:2:200: nested deeper than 200 levels" in out  # line 2, column 200: the 201st level
    assert not (tmp_path / "r").exists() and not (tmp_path / "lo").exists()


@pytest.mark.timeout(120)
def test_deep_json_lines_name_their_line(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    row = {"query_id": "q1", "question": "?", "answer": "a", "ground_truth": "a", "ground_file_list": [],
           "agent_file_list": []}  # fmt: skip
    rows.write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n" + DEEP + "\n", encoding="utf-8")
    result = cli("score", "--hippocamp-io", str(rows), "--judge-mode", "facts")
    assert result.exit_code == 2 and f"{rows}:3:201: nested deeper than 200 levels" in clean(result)
    result = cli("judge", "calibrate", "--labeled", str(rows), "--judge-mode", "facts")
    assert result.exit_code == 2 and f"{rows}:3:201: nested deeper than 200 levels" in clean(result)


@pytest.mark.timeout(120)
def test_a_5000_digit_id_is_a_finding_naming_file_record_and_field(tmp_path: Path, good_records: list) -> None:
    text = json.dumps(good_records).replace('"id": "q2"', f'"id": {HUGE}', 1)
    records = tmp_path / "huge.json"
    records.write_text(text, encoding="utf-8")
    result = cli("validate", str(records), "--root", str(tmp_path), "--json")
    assert result.exit_code == 1, result.output  # a record with an error; the others are read
    report = json.loads(result.output)
    found = [p for p in report["problems"] if p["rule"] == "schema"]
    assert found and found[0]["file"] == str(records) and found[0]["record_index"] == 1 and found[0]["field"] == "id"
    assert "a number of 5000 digits" in found[0]["message"] and report["records_read"] == 2
    stats = cli("stats", str(records), "--root", str(tmp_path))
    out = clean(stats)
    assert stats.exit_code == 0 and "1 record(s) could not be read" in out
    assert f"{records}, record #1, id: record cannot be read: a number of 5000 digits" in out


@pytest.mark.timeout(120)
def test_hippocamp_io_rows_are_checked(tmp_path: Path) -> None:
    rows = tmp_path / "rows.json"
    row = {"query_id": "q1", "question": "Rent?", "answer": "EUR 1,450", "ground_truth": "EUR 1,450",
           "ground_file_list": [], "agent_file_list": []}  # fmt: skip
    # a bad row is named (file, row, field) and left out; the others are scored
    rows.write_text(json.dumps([row, {k: v for k, v in row.items() if k != "ground_truth"}]), encoding="utf-8")
    result = cli("score", "--hippocamp-io", str(rows), "--judge-mode", "facts")
    assert result.exit_code == 0 and f"{rows}: row 2 (query_id 'q1'): field(s) ground_truth missing" in clean(result)
    assert "1/1 judged" in clean(result) and "1 invalid row(s) not scored" in clean(result)
    cases = {
        "[1, 2]": "row 1: expected a JSON object",
        f'[{{"query_id": {HUGE}}}]': "field 'query_id': a number of 5000 digits",
    }
    for content, message in cases.items():
        rows.write_text(content, encoding="utf-8")
        result = cli("score", "--hippocamp-io", str(rows), "--judge-mode", "facts")
        assert result.exit_code == 2 and message in clean(result), result.output


# -- options checked before any work: exit 2 -----------------------------------------------------------------
@pytest.fixture
def plain_profile(tmp_path: Path) -> Path:
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "note.txt").write_text("the dentist is on Friday\n", encoding="utf-8")
    return folder


BAD_OPTIONS = [
    (["index", "{p}", "--embedder", "nosuch"], "Invalid value for '--embedder': no embedder named 'nosuch'"),
    (["index", "{p}", "--embedder", "minilm"], "did you mean 'minilm-l6-int8'?"),
    (["index", "{p}", "--store", "/nonexistent/dir/s.sqlite"], "its folder /nonexistent/dir does not exist"),
    (["index", "{p}", "--gold", "/nonexistent"], "'--gold': Directory '/nonexistent' does not exist"),
    (["index", "{p}", "--max-mb", "-5"], "'--max-mb': -5.0 is not in the range x>0"),
    (["index", "{p}", "--workers", "0"], "'--workers': 0 is not in the range x>=1"),
    (["search", "{p}", "q", "-k", "0"], "'-k': 0 is not in the range x>=1"),
    (["search", "{p}", "q", "--after", "garbage"], "'--after': expected a date YYYY-MM-DD"),
    (["search", "{p}", "q", "--modality", "smell"], "'--modality'"),
    (["ask", "/nonexistent", "q", "--model", "mock"], "'PROFILE': Path '/nonexistent' does not exist"),
    (["ask", "{p}", "  ", "--model", "mock"], "the question is empty"),
    (["export-gold", "/nonexistent", "--out", "{t}/g"], "'PROFILE': Directory '/nonexistent' does not exist"),
    (["score", "{t}", "--judge", "nosuch:judge"], "no model provider named 'nosuch'"),
    (["score", "{t}", "--panel", "mock,opnai:x"], "no model provider named 'opnai' (did you mean 'openai'?)"),
    (["score", "{t}", "--concurrency", "0"], "'--concurrency': 0 is not in the range x>=1"),
    (["score", "--hippocamp-io", "/nonexistent.json"], "'/nonexistent.json' does not exist"),
    (["run", "--suite", "{e}", "--agent", "rag", "--model", "mock", "--out", "/proc/x"], "'--out': /proc/x: cannot"),
    (["run", "--suite", "{e}", "--agent", "rag", "--model", "mock", "--out", "{f}/x"], "is a file, not a folder"),
    (
        ["run", "--suite", "{e}", "--agent", "rag", "--model", "mock", "--out", "{t}/r", "--max-steps", "-1"],
        "'--max-steps': -1 is not in the range x>=1",
    ),
    (
        ["run", "--suite", "{e}", "--agent", "rag:extra", "--model", "mock", "--out", "{t}/r"],
        "agent 'rag': its argument is max_tokens (int), got 'extra'",
    ),
    (
        ["run", "--suite", "{e}", "--agent", "terminal:x", "--model", "mock", "--out", "{t}/r"],
        "agent 'terminal' takes no argument",
    ),
    (
        ["run", "--suite", "{e}", "--agent", "rg", "--model", "mock", "--out", "{t}/r"],
        "no agent named 'rg' (did you mean 'rag'?)",
    ),
    (
        ["run", "--suite", "{e}", "--agent", "rag", "--model", "opnai:gpt", "--out", "{t}/r"],
        "no model provider named 'opnai' (did you mean 'openai'?)",
    ),
    (
        ["run", "--suite", "{e}", "--agent", "rag", "--model", "openai-compatible:m", "--out", "{t}/r"],
        "expected openai-compatible:NAME@http(s)://HOST:PORT/v1",
    ),
    (["report", "/nonexistent"], "Directory '/nonexistent' does not exist"),
    (["validate", "--example", "--rule", "locator"], "unknown rule(s): locator (did you mean 'locators'?)"),
    (["validate", "--example", "--time-slack", "-1"], "'--time-slack': -1.0 is not in the range x>=0"),
    (["stats", "/nonexistent"], "error: /nonexistent: no such file or folder"),
    (["synth", "personas", "--n", "0", "--out", "{t}/p"], "'--n': 0 is not in the range x>=1"),
    (["synth", "personas", "--n", "1", "--decoys", "2", "--out", "{t}/p"], "'--decoys': 2.0 is not in the range"),
    (["synth", "files", "--out", "{t}/s", "--jobs", "0"], "'--jobs': 0 is not in the range x>=1"),
    (["import", "locomo", "/nonexistent.json", "--out", "{t}/lo"], "'/nonexistent.json' does not exist"),
    (["models", "check", "mock", "--threads", "0"], "'--threads': 0 is not in the range x>=1"),
    (["quickstart", "--agents", "evidence,nope", "--out", "{t}/q"], "no agent named 'nope'"),
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("args", "message"), BAD_OPTIONS, ids=[" ".join(a[:3]) for a, _ in BAD_OPTIONS])
def test_bad_options_are_refused_before_any_work(args: list[str], message: str, plain_profile: Path,
                                                 tmp_path: Path) -> None:  # fmt: skip
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    filled = [a.format(p=plain_profile, t=tmp_path, e=example(), f=a_file) for a in args]
    result = cli(*filled)
    out = clean(result)
    assert result.exit_code == 2, out
    assert message in out, out
    # nothing was made: no run directory, no store, no folder for a store
    assert not (tmp_path / "r").exists() and not (tmp_path / "p").exists() and not (tmp_path / "q").exists()
    assert not Path("/nonexistent").exists()
    assert not (tmp_path / "cache" / "hippocamp" / "stores").exists()


# -- an unexpected failure: one line, exit 1 ------------------------------------------------------------------
@pytest.mark.timeout(120)
def test_an_unexpected_failure_is_one_line_and_exit_1(run_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RecursionError("maximum recursion depth exceeded somewhere deep")

    monkeypatch.setattr("hippocamp.report.write.write_report", boom)
    result = cli("report", str(run_copy))
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "error: hippocamp report failed: RecursionError: maximum recursion depth exceeded somewhere deep "
        "(set HIPPOCAMP_DEBUG=1 to see the traceback)"
    ]
    monkeypatch.setattr("hippocamp.importers.locomo.import_locomo", boom)
    result = cli("import", "locomo", str(run_copy / "manifest.json"), "--out", str(run_copy / "lo"))
    assert result.exit_code == 1 and result.output.startswith("error: hippocamp import locomo failed: RecursionError")
