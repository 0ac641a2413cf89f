from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from conftest import GOOD_RECORDS, write_json
from hippocamp.dataset.profile import ProfileError, load_profile, normalize_path, read_files_xlsx


def test_release_layout_is_found_from_any_level(profile_dir: Path):
    for path in (profile_dir, profile_dir / "Fullset", profile_dir / "Fullset/Tiny.json"):
        p = load_profile(path)
        assert p.name == "Tiny"
        assert p.root == profile_dir / "Fullset/Tiny"
        assert p.meta_path == profile_dir / "Fullset/Tiny_files.xlsx"
        assert [r.key for r in p.records] == ["q1", "q2", "q3"]


def test_subset_variant(profile_dir: Path):
    sub = profile_dir / "Subset"
    (sub / "Tiny").mkdir(parents=True)
    write_json(sub / "Tiny.json", GOOD_RECORDS[:1])
    assert len(load_profile(profile_dir, variant="Subset").records) == 1
    assert len(load_profile(profile_dir).records) == 3


def test_metadata_from_the_spreadsheet_and_the_file_system(profile_dir: Path):
    p = load_profile(profile_dir)
    meta = p.meta("Docs/contract.pdf")
    assert meta.source == "xlsx"
    assert (meta.created, meta.modified) == (datetime(2024, 8, 1, 9), datetime(2024, 8, 2, 9))
    assert p.meta("./Audio\\memo.wav").location == "Rotterdam"
    assert p.meta("Elsewhere/memo.wav").path == "Audio/memo.wav"  # by file name, as the release's analysis
    todo = p.meta("Notes/todo.md")
    assert todo.created == datetime(2024, 10, 3, 8) and todo.modified is None  # bad cell: reported, row kept
    assert [x.field for x in p.problems] == ["row 5, column 'modification_date'"]
    budget = p.meta("Finance/budget.xlsx")  # no row: file system times
    assert budget.source == "fs" and budget.size == (p.root / "Finance/budget.xlsx").stat().st_size
    os.utime(p.root / "Finance/budget.xlsx", (1_700_000_000, 1_700_000_000))
    assert p.meta("Finance/budget.xlsx").modified == datetime(2023, 11, 14, 22, 13, 20)
    assert p.meta("missing.txt") is None and p.times_of("missing.txt") == []
    assert p.times_of("Docs/contract.pdf") == [datetime(2024, 8, 1, 9), datetime(2024, 8, 2, 9)]
    assert "Docs" not in p.file_meta  # folders are skipped


def test_resolve_stays_inside_the_root(profile_dir: Path):
    p = load_profile(profile_dir)
    assert p.resolve("Docs/contract.pdf") is not None
    for bad in ("../Tiny.json", "/etc/passwd", "Docs", "", "Docs/../../Tiny.json"):
        assert p.resolve(bad) is None


def test_root_override_and_errors(tmp_path: Path, profile_dir: Path):
    records = write_json(tmp_path / "r.json", GOOD_RECORDS)
    p = load_profile(records)
    assert p.root is None and p.name == "r"
    p = load_profile(records, root=profile_dir / "Fullset/Tiny")
    assert p.resolve("Audio/memo.wav") is not None
    with pytest.raises(ProfileError, match="no such file"):
        load_profile(tmp_path / "nope")
    with pytest.raises(ProfileError, match="not a folder"):
        load_profile(records, root=records)
    bad = tmp_path / "Bad_files.xlsx"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ProfileError, match="cannot read the metadata spreadsheet"):
        read_files_xlsx(bad)


def test_a_bare_file_tree_is_a_profile(tmp_path: Path):
    (tmp_path / "files").mkdir()
    (tmp_path / "files/a.txt").write_text("x")
    p = load_profile(tmp_path / "files")
    assert p.records_file is None and p.root == tmp_path / "files"


@pytest.mark.parametrize(
    ("raw", "norm"),
    [("./a/b.pdf", "a/b.pdf"), ("a\\b c.pdf", "a/b c.pdf"), ("/a/./b", "a/b"), ("a//b", "a/b"), (".", ""), ("", "")],
)
def test_normalize_path(raw, norm):
    assert normalize_path(raw) == norm


def test_spreadsheet_without_a_path_column(tmp_path: Path):
    from openpyxl import Workbook

    wb = Workbook()
    wb.active.append(["name", "when"])
    wb.save(tmp_path / "x.xlsx")
    with pytest.raises(ProfileError, match=r"no file path column \(FilePath\)"):
        read_files_xlsx(tmp_path / "x.xlsx")


def test_records_json_is_not_mutated_by_reading(tmp_path: Path):
    path = write_json(tmp_path / "r.json", GOOD_RECORDS)
    before = path.read_text()
    p = load_profile(path)
    p.records[0].evidence[0].evidence_text = "changed in memory"
    assert path.read_text() == before
    assert json.loads(before) == GOOD_RECORDS


def test_a_subset_reads_its_own_spreadsheet_and_a_damaged_one_is_a_problem(tmp_path: Path):
    from openpyxl import Workbook

    (tmp_path / "Adam_Subset/Notes").mkdir(parents=True)
    (tmp_path / "Adam_Subset/Notes/a.txt").write_text("x")
    write_json(tmp_path / "Adam_Subset.json", [])
    wb = Workbook()
    wb.active.append(["FilePath", "creation_date", "modification_date", "location"])
    wb.active.append(["Notes/a.txt", "2024-03-01 09:00:00", "2024-03-02 10:00:00", "Rotterdam"])
    wb.save(tmp_path / "Adam_Subset.xlsx")
    p = load_profile(tmp_path / "Adam_Subset.json")
    assert p.meta_path == tmp_path / "Adam_Subset.xlsx"
    assert p.file_meta["Notes/a.txt"].location == "Rotterdam"
    (tmp_path / "Adam_Subset.xlsx").write_bytes(b"not a zip")
    p = load_profile(tmp_path / "Adam_Subset.json")
    assert p.file_meta == {} and p.root == tmp_path / "Adam_Subset"
    assert any(x.rule == "metadata" and x.severity == "error" and "Adam_Subset.xlsx" in x.file for x in p.problems)
