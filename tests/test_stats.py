"""Tests of `hippocamp stats`: the statistics, the figures and the command."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from hippocamp.cli import main
from hippocamp.dataset.derived import DifficultyModel, features_of
from hippocamp.dataset.stats import AXES, BENCHMARK, DatasetStats, compute_stats, merged_bins
from hippocamp.report import plot_stats
from hippocamp.schema.io import read_records

CAP = json.dumps({"search": ["system"], "evidence_perception": ["grounding"], "reasoning": ["basic"]})


def _record(
    rid: int, qa_type: str | None, paths: list[str], modality: list[str], types: list[str], steps: int
) -> dict[str, Any]:
    """A record in the release's spelling: QA_type, agent_cap as a JSON string, steps without step_id."""
    record: dict[str, Any] = {
        "id": rid,
        "question": f"What happened in question {rid}?",
        "answer": f"Answer {rid}.",
        "file_path": paths,
        "file_number": len(paths),
        "file_modality": modality,
        "file_type": types,
        "agent_cap": CAP,
        "evidence": [
            {"evidence_id": i, "file_path": p, "evidence_text": "excerpt", "evidence_locator": []}
            for i, p in enumerate(paths, start=1)
        ],
        "rationale": [{"rationale_text": f"step {i}", "evidence_id": [1]} for i in range(1, steps + 1)],
    }
    if qa_type is not None:
        record["QA_type"] = qa_type
    return record


ANN = [
    _record(1, "factual_retention", ["docs/a.pdf", "img/b.jpg"], ["document", "image"], ["pdf", "jpg"], 3),
    _record(2, "profiling", ["notes/c.txt"], ["text"], ["txt"], 2),
    # no QA_type, no file_modality / file_type: both are taken from the paths
    _record(3, None, ["audio/d.mp3", "video/e.mp4", "docs/f.docx"], [], [], 5),
]
BEN = [
    _record(1, "factual_retention", ["x.pdf"], ["document"], ["pdf"], 3),
    _record(
        2, "factual_retention", ["y.jpg", "z.png", "w.pdf", "v.pdf"], ["image", "document"], ["jpg", "png", "pdf"], 8
    ),
]
ANN_TIMES = {"docs/a.pdf": [datetime(2024, 1, 1)], "img/b.jpg": [datetime(2024, 1, 11)]}


def _write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return _write(tmp_path / "Ann.json", ANN), _write(tmp_path / "Ben.json", BEN)


@pytest.fixture
def stats(files: tuple[Path, Path]) -> DatasetStats:
    ann, ben = (read_records(f).records for f in files)
    return compute_stats([("Ann", ann, lambda p: ANN_TIMES.get(p, [])), ("Ben", ben, None)])


# -- the statistics ---------------------------------------------------------------------------------
def test_counts(stats: DatasetStats) -> None:
    assert stats.version == "1"
    assert stats.questions == 5
    assert stats.profiles == ["Ann", "Ben"]
    assert stats.by_task == {"factual_retention": 3, "profiling": 1, "unknown": 1}
    assert stats.by_profile == {"Ann": 3, "Ben": 2}
    assert list(stats.by_modality.items()) == [("document", 4), ("image", 2), ("audio", 1), ("text", 1), ("video", 1)]
    assert list(stats.by_file_type.items()) == [
        ("pdf", 3),
        ("jpg", 2),
        ("docx", 1),
        ("mp3", 1),
        ("mp4", 1),
        ("png", 1),
        ("txt", 1),
    ]


def test_distributions(stats: DatasetStats) -> None:
    ann, ben, bench = (stats.groups[g] for g in ("Ann", "Ben", BENCHMARK))
    assert ann.evidence_files == {1: 1, 2: 1, 3: 1}
    # modality breadth is the difficulty feature: distinct file_modality values, 0 when absent
    assert ann.modality_count == {0: 1, 1: 1, 2: 1}
    assert ann.reasoning_steps == {2: 1, 3: 1, 5: 1}
    assert ben.evidence_files == {1: 1, 4: 1}
    assert ben.modality_count == {1: 1, 2: 1}
    assert ben.reasoning_steps == {3: 1, 8: 1}
    assert bench.reasoning_steps == {2: 1, 3: 2, 5: 1, 8: 1}


def test_rows_and_difficulty_match_a_model_fitted_over_all_questions(
    files: tuple[Path, Path], stats: DatasetStats
) -> None:
    times = {"Ann": lambda p: ANN_TIMES.get(p, []), "Ben": None}
    features = {
        (name, r.key): features_of(r, times[name])
        for name, f in zip(("Ann", "Ben"), files, strict=True)
        for r in read_records(f).records
    }
    model = DifficultyModel.fit(list(features.values()))
    assert len(stats.rows) == 5
    for row in stats.rows:
        expected = features[(row.profile, row.id)]
        assert row.difficulty == pytest.approx(model.score(expected))
        assert row.model_dump(include=set(expected.as_dict())) == expected.as_dict()
    row = next(r for r in stats.rows if (r.profile, r.id) == ("Ann", "1"))
    assert (row.qa_type, row.time_span_days) == ("factual_retention", 10.0)


def test_difficulty_summary_against_numpy(stats: DatasetStats) -> None:
    for name in ("Ann", "Ben", BENCHMARK):
        rows = [r for r in stats.rows if name in (r.profile, BENCHMARK)]
        scores = np.array([r.difficulty for r in rows])
        summary = stats.groups[name].difficulty
        assert summary.histogram == np.histogram(scores, bins=np.arange(0, 105, 5))[0].tolist()
        assert summary.mean == pytest.approx(scores.mean())
        assert summary.median == pytest.approx(np.median(scores))
        assert summary.hard_share == pytest.approx(np.mean(scores >= 70))
        for task, mean in summary.mean_by_task.items():
            assert mean == pytest.approx(np.mean([r.difficulty for r in rows if r.qa_type == task]))


def test_benchmark_is_the_sum_of_the_profiles(stats: DatasetStats) -> None:
    ann, ben, bench = (stats.groups[g] for g in ("Ann", "Ben", BENCHMARK))
    assert bench.questions == ann.questions + ben.questions
    for axis in AXES:
        parts = Counter(getattr(ann, axis.key)) + Counter(getattr(ben, axis.key))
        assert Counter(getattr(bench, axis.key)) == parts
    total = [a + b for a, b in zip(ann.difficulty.histogram, ben.difficulty.histogram, strict=True)]
    assert bench.difficulty.histogram == total
    assert sorted(bench.difficulty.scores) == sorted(ann.difficulty.scores + ben.difficulty.scores)
    factual = [
        a + b
        for a, b in zip(
            ann.difficulty.histogram_by_task["factual_retention"],
            ben.difficulty.histogram_by_task["factual_retention"],
            strict=True,
        )
    ]
    assert bench.difficulty.histogram_by_task["factual_retention"] == factual


def test_merged_bins_cut_the_tail_at_the_ceiling_of_the_quantile() -> None:
    # 19 values; numpy's 0.95 quantile is at index 17.1: 10 + 0.1 * (20 - 10) = 11
    assert merged_bins({1: 10, 2: 5, 3: 2, 10: 1, 20: 1}, 0.95) == [
        ("1", 10),
        ("2", 5),
        ("3", 2),
        ("10", 1),
        (">11", 1),
    ]
    # the quantile reaches the largest value: nothing merged
    assert merged_bins({1: 3, 2: 1}, 0.98) == [("1", 3), ("2", 1)]
    assert merged_bins({}, 0.95) == []


def test_no_questions_and_bad_names_are_clear_errors(files: tuple[Path, Path]) -> None:
    with pytest.raises(ValueError, match="no questions"):
        compute_stats([("Ann", [], None)])
    records = read_records(files[0]).records
    with pytest.raises(ValueError, match="unique"):
        compute_stats([("Ann", records, None), ("Ann", records, None)])
    with pytest.raises(ValueError, match=BENCHMARK):
        compute_stats([(BENCHMARK, records, None)])


def test_an_empty_profile_beside_others(files: tuple[Path, Path]) -> None:
    stats = compute_stats([("Ann", read_records(files[0]).records, None), ("Empty", [], None)])
    empty = stats.groups["Empty"]
    assert (empty.questions, empty.evidence_files, empty.difficulty.mean) == (0, {}, None)
    assert stats.by_profile == {"Ann": 3, "Empty": 0}


# -- the figures ------------------------------------------------------------------------------------
def test_plots_are_real_pngs(stats: DatasetStats, tmp_path: Path) -> None:
    paths = plot_stats(stats, tmp_path / "figs")
    names = ["evidence_files.png", "modality_breadth.png", "reasoning_steps.png", "difficulty.png"]
    assert [p.name for p in paths] == names
    for path in paths:
        with Image.open(path) as image:
            assert image.format == "PNG"
            width, height = image.size
            assert 600 <= width <= 4000 and 400 <= height <= 4000


# -- the command ------------------------------------------------------------------------------------
def _run(*args: str) -> Any:
    return CliRunner().invoke(main, ["stats", *args])


def test_cli_prints_tables(files: tuple[Path, Path]) -> None:
    result = _run(*map(str, files))
    assert result.exit_code == 0, result.output
    for text in (
        "5 questions in 2 profile(s)",
        "Questions by task family",
        "factual_retention",
        "Questions by modality",
        "Questions by file type",
        "Evidence breadth",
        "Modality breadth",
        "Reasoning depth",
        "Difficulty",
        "Ann",
        "Ben",
        BENCHMARK,
    ):
        assert text in result.stdout


def test_cli_json(files: tuple[Path, Path], tmp_path: Path) -> None:
    result = _run(*map(str, files), "--json", "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert "stats.json" in result.stderr  # what was written is listed apart from the JSON
    data = json.loads(result.stdout)
    assert data["version"] == "1"
    assert data["by_profile"] == {"Ann": 3, "Ben": 2}
    assert data["groups"][BENCHMARK]["evidence_files"] == {"1": 2, "2": 1, "3": 1, "4": 1}


def test_cli_out_writes_files(files: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _run(*map(str, files), "--out", str(out))
    assert result.exit_code == 0, result.output
    expected = [
        "stats.json",
        "questions.jsonl",
        "evidence_files.png",
        "modality_breadth.png",
        "reasoning_steps.png",
        "difficulty.png",
    ]
    for name in expected:
        assert (out / name).is_file()
        assert name in result.stdout
    assert DatasetStats.model_validate_json((out / "stats.json").read_text()).questions == 5
    rows = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    assert [(r["profile"], r["id"]) for r in rows] == [
        ("Ann", "1"),
        ("Ann", "2"),
        ("Ann", "3"),
        ("Ben", "1"),
        ("Ben", "2"),
    ]


def test_cli_reads_a_profile_folder_and_its_variant(tmp_path: Path) -> None:
    _write(tmp_path / "Cam" / "Fullset" / "Cam.json", ANN)
    _write(tmp_path / "Cam" / "Subset" / "Cam.json", ANN[:1])
    for variant, count in (("Fullset", 3), ("Subset", 1)):
        result = _run(str(tmp_path / "Cam"), "--variant", variant, "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["by_profile"] == {"Cam": count}


def test_cli_reports_unreadable_records_and_goes_on(tmp_path: Path) -> None:
    broken = {**ANN[1], "id": 9, "agent_cap": "not json"}
    path = _write(tmp_path / "Ann.json", [*ANN, broken])
    result = _run(str(path))
    assert result.exit_code == 0, result.output
    assert "1 record(s) could not be read" in result.stderr
    assert "agent_cap" in result.stderr
    assert "4 questions" not in result.stdout and "3 questions" in result.stdout


def test_cli_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "Nobody.json"
    result = _run(str(missing))
    assert result.exit_code == 2
    assert str(missing) in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_cli_malformed_json(tmp_path: Path) -> None:
    bad = tmp_path / "Bad.json"
    bad.write_text('[{"id": 1,,}]', encoding="utf-8")
    result = _run(str(bad))
    assert result.exit_code == 2
    assert str(bad) in result.stderr and "not valid JSON" in result.stderr


def test_cli_no_questions(tmp_path: Path) -> None:
    result = _run(str(_write(tmp_path / "Empty.json", [])))
    assert result.exit_code == 2
    assert "no questions" in result.stderr


def test_cli_refuses_root_with_two_inputs(files: tuple[Path, Path], tmp_path: Path) -> None:
    result = _run(*map(str, files), "--root", str(tmp_path))
    assert result.exit_code == 2
    assert "--root" in result.output


def test_cli_needs_an_input() -> None:
    result = _run()
    assert result.exit_code == 2
    assert "--example" in result.output
