"""Release metadata end to end: the ``<Name>_files.xlsx`` and ``<Name>_Subset.xlsx`` spreadsheets in the
header spellings they come in, their fields kept in the store and served by ``return_metadata``, and
HippoCamp_Gold segment times written ``start``/``end`` or ``start_time``/``end_time``."""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from hippocamp.envs import FilesEnv, Terminal
from hippocamp.importers import import_hippocamp, read_suite
from hippocamp.importers.hippocamp import read_metadata_sheet
from hippocamp.schema.locators import TimeRange
from hippocamp.schema.problems import ValidationReport
from hippocamp.store import IndexOptions, Store
from hippocamp.store.gold import gold_segments

FAST = IndexOptions(embed=False, workers=1)
ORCHARD = "The Orchard Residences, 238 Orchard Boulevard, Singapore 238858"

FILES = {
    "Docs/brief.txt": "The hearing is on 3 May 2023.\n",
    "Docs/Archive/old.txt": "An old note.\n",
    "Audio/call.mp3": "not really audio: Gold covers it",
    "Audio/memo.wav": "not really audio: Gold covers it",
    "Notes/todo.md": "# To do\n- buy milk\n",
}


def _record(rid: str, path: str) -> dict[str, Any]:
    return {
        "id": rid,
        "question": f"What does {path} say?",
        "answer": "Something.",
        "QA_type": "factual_retention",
        "profiling_type": "",
        "file_path": [path],
        "file_number": 1,
        "file_modality": ["text"],
        "file_type": [path.rsplit(".", 1)[-1]],
        "agent_cap": json.dumps({"search": ["semantic"], "evidence_perception": [], "reasoning": ["basic"]}),
        "evidence": [{"evidence_id": 1, "file_path": path, "modality_type": "text", "evidence_text": "Something."}],
        "rationale": [{"rationale_text": "Read it.", "evidence_id": [1]}],
    }


def _sheet(path: Path, header: list[str], rows: list[list[Any]]) -> Path:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.append(header)
    for row in rows:
        ws.append(row)
    wb.save(path)
    return path


def _variant(release: Path, variant: str, tree: str, records: str) -> Path:
    folder = release / "Adam" / variant
    for rel, text in FILES.items():
        (folder / tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / tree / rel).write_text(text, encoding="utf-8")
    (folder / records).write_text(json.dumps([_record("adam_1", "Docs/brief.txt")]), encoding="utf-8")
    return folder


@pytest.fixture
def release(tmp_path: Path) -> Path:
    release = tmp_path / "HippoCamp"
    # the Fullset: <Name>_files.xlsx with the release's headers, one bad cell of each kind, a folder row,
    # a row without a path and a path given twice
    full = _variant(release, "Fullset", "Adam", "Adam.json")
    _sheet(
        full / "Adam_files.xlsx",
        ["FilePath", "FileType", "creation_date", "modification_date", "location", "latitude", "longitude"],
        [
            ["Docs", "folder", None, None, None, None, None],
            ["Docs/brief.txt", "txt", datetime(2023, 5, 2, 9, 0), "2023-05-03 18:30:00", ORCHARD, 1.3031, "103.8317"],
            ["Docs/Archive/old.txt", "txt", "yesterday-ish", datetime(2020, 1, 2, 3, 4, 5), "Home", 91.5, 10],
            ["Audio/call.mp3", "mp3", "2024/02/01 08:15", None, "51.9180 N, 4.4720 E", None, None],
            [None, "txt", datetime(2021, 1, 1), None, "nowhere", None, None],
            ["Docs/brief.txt", "txt", datetime(1999, 1, 1), None, "a second row", None, None],
        ],
    )
    # the Subset: <Name>_Subset.xlsx beside <Name>_Subset.json and the tree <Name>_Subset/, other spellings
    sub = _variant(release, "Subset", "Adam_Subset", "Adam_Subset.json")
    _sheet(
        sub / "Adam_Subset.xlsx",
        ["File Path", "File Type", "Creation Date", "modificationDate", "Location", "Lat", "Lng", "Weather"],
        [
            [
                "Adam/Notes/todo.md",
                "md",
                "2022-12-24T10:00:00",
                "2022-12-25 11:00",
                "Berlin, DE",
                52.52,
                13.405,
                "snow",
            ],
            ["Docs/brief.txt", "txt", datetime(2023, 5, 2, 9, 0), None, ORCHARD, "north", 103.8317, None],
        ],
    )
    gold = release / "HippoCamp_Gold/Adam/Audio"
    gold.mkdir(parents=True)
    (gold / "call.mp3.json").write_text(json.dumps({
        "file_info": {"file_path": "/annotators/Adam/Audio/call.mp3", "file_name": "call.mp3"},
        "summary": "",
        "segments": [
            {"content": "Hello, it is Ben.", "start": "00:00", "end": "00:04.5"},
            {"content": "About the hearing on Friday.", "start": "01:05", "end": "01:01:05"},
            {"content": "A time that is not one.", "start": "soon", "end": "later"},
        ],
    }), encoding="utf-8")  # fmt: skip
    (gold / "memo.wav.json").write_text(json.dumps({
        "file_info": {"file_path": "Audio/memo.wav", "file_name": "memo.wav"},
        "summary": "",
        "segments": [
            {"content": "Dentist on Friday at nine.", "start_time": 2.5, "end_time": 7},
            {"content": "Then the pharmacy.", "start_time": "00:00:07", "end_time": "00:00:12.250"},
            {"content": "Ends before it starts.", "start_time": 20, "end_time": 10},
        ],
    }), encoding="utf-8")  # fmt: skip
    return release


def _times(segments: list[Any]) -> list[tuple[float, float | None] | None]:
    return [(s.locator.start, s.locator.end) if isinstance(s.locator, TimeRange) else s.locator for s in segments]


def _metadata(term: Terminal, path: str) -> dict[str, Any]:
    out = json.loads(term.run(f"return_metadata '{path}'").text)
    assert out["success"] is True, out
    assert list(out) == ["success", "metadata", "error"]
    return out["metadata"]


def test_fullset_metadata_reaches_return_metadata(release: Path, tmp_path: Path) -> None:
    manifest = import_hippocamp(release, tmp_path / "suite", index_options=FAST)
    entry = manifest.profile("Adam")
    assert entry.files_xlsx == (release / "Adam/Fullset/Adam_files.xlsx").resolve()
    assert entry.index is not None
    assert entry.index["metadata_rows"] == 3 and entry.index["metadata_files"] == 3
    assert entry.index["metadata_problems"] == 4

    store = Store(entry.store, root=entry.root)
    try:
        env = FilesEnv(entry.root, store)
        term = env.terminal()
        brief = _metadata(term, "Docs/brief.txt")
        assert brief == {
            "id": 4,  # the fourth file in path order (after Audio/*, Docs/Archive/old.txt)
            "file_path": "Docs/brief.txt",
            "file_type": "txt",
            "file_modality": "text",
            "creation_date": "2023-05-02 09:00:00",
            "modification_date": "2023-05-03 18:30:00",
            "latitude": 1.3031,
            "longitude": 103.8317,
            "location": ORCHARD,
        }
        # a bad date and an out-of-range latitude are left out; the rest of the row is kept
        old = _metadata(term, "Docs/Archive/old.txt")
        assert old["latitude"] is None  # out of range: left out of the row
        assert store.files()["Docs/Archive/old.txt"].created is None  # the bad date is not used ...
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", old["creation_date"])  # ... the file's time is
        assert (
            old["modification_date"] == "2020-01-02 03:04:05" and old["location"] == "Home" and old["longitude"] == 10
        )
        # a location written as coordinates gives the latitude and longitude
        call = _metadata(term, "Audio/call.mp3")
        assert (call["latitude"], call["longitude"]) == (51.918, 4.472) and call[
            "creation_date"
        ] == "2024-02-01 08:15:00"
        # a file without a row: what the store knows, no location
        todo = _metadata(term, "Notes/todo.md")
        assert todo["file_path"] == "Notes/todo.md" and todo["location"] is None and todo["latitude"] is None
        # the times went to the store's file rows too
        rows = store.files()
        assert rows["Docs/brief.txt"].created == "2023-05-02T09:00:00"
        assert rows["Docs/brief.txt"].modified == "2023-05-03T18:30:00"
        assert rows["Audio/call.mp3"].modified == "2024-02-01T08:15:00"  # no modification date: the creation date
    finally:
        store.close()

    # every bad row or cell is in the validation report, naming the spreadsheet, the row and the column
    report = ValidationReport.model_validate_json(entry.validation_report.read_text())
    found = sorted(p.where() for p in report.problems if p.rule == "metadata")
    sheet = str(release / "Adam/Fullset/Adam_files.xlsx")
    assert found == [
        f"{sheet}, row 4, column 'creation_date'",
        f"{sheet}, row 4, column 'latitude'",
        f"{sheet}, row 6",
        f"{sheet}, row 7",
    ]
    messages = {p.field: p.message for p in report.problems if p.rule == "metadata"}
    assert "yesterday-ish" in messages["row 4, column 'creation_date'"]
    assert "out of range" in messages["row 4, column 'latitude'"]
    assert "no file path" in messages["row 6"] and "first in row 3" in messages["row 7"]

    # re-indexing a file keeps its metadata (kept apart from the file rows)
    again = import_hippocamp(release, tmp_path / "suite", index_options=FAST)
    store = Store(again.profile("Adam").store, root=entry.root)
    try:
        assert store.file_metadata("Docs/brief.txt")["location"] == ORCHARD
    finally:
        store.close()


def test_subset_spreadsheet_is_read_alike(release: Path, tmp_path: Path) -> None:
    manifest = import_hippocamp(release, tmp_path / "suite", variant="Subset", index_options=FAST)
    entry = manifest.profile("Adam")
    assert entry.variant == "Subset" and entry.root == (release / "Adam/Subset/Adam_Subset").resolve()
    assert entry.files_xlsx == (release / "Adam/Subset/Adam_Subset.xlsx").resolve()
    assert entry.index is not None and entry.index["metadata_files"] == 2 and entry.index["times_from_xlsx"] == 2

    store = Store(entry.store, root=entry.root)
    try:
        term = Terminal(entry.root, texts=store.segments_of)
        todo = _metadata(term, "Notes/todo.md")
        assert todo == {
            "id": 5,
            "file_path": "Notes/todo.md",  # the row names it "Adam/Notes/todo.md": matched by its ending
            "file_type": "md",
            "file_modality": "text",
            "creation_date": "2022-12-24 10:00:00",
            "modification_date": "2022-12-25 11:00:00",
            "location": "Berlin, DE",
            "latitude": 52.52,
            "longitude": 13.405,
            "Weather": "snow",  # a column the release does not name is kept under its header
        }
        brief = _metadata(term, "Docs/brief.txt")
        assert brief["location"] == ORCHARD and brief["latitude"] is None and brief["longitude"] == 103.8317
        assert store.files()["Notes/todo.md"].created == "2022-12-24T10:00:00"
    finally:
        store.close()

    # the suite's profile loads with the Subset spreadsheet's times and locations
    profile = read_suite(tmp_path / "suite").profile("Adam").load()
    meta = profile.meta("Notes/todo.md")
    assert meta is not None and meta.source == "xlsx" and meta.location == "Berlin, DE"
    assert meta.created == datetime(2022, 12, 24, 10, 0)
    (problem,) = [p for p in profile.problems if p.rule == "metadata"]
    assert problem.where().endswith("Adam_Subset.xlsx, row 3, column 'Lat'") and "north" in problem.message


def test_gold_segment_times_in_both_spellings(release: Path, tmp_path: Path) -> None:
    entry = import_hippocamp(release, tmp_path / "suite", index_options=FAST).profile("Adam")
    assert entry.index is not None and entry.index["from_gold"] == 2
    store = Store(entry.store, root=entry.root)
    try:
        call = store.segments_of("Audio/call.mp3")
        assert _times(call) == [
            (0, 4.5),
            (65, 3665),
            None,  # "soon": no time, the segment is kept
        ]
        assert call[2].text == "A time that is not one."
        memo = store.segments_of("Audio/memo.wav")
        assert _times(memo) == [
            (2.5, 7),
            (7, 12.25),
            (20, None),  # ends before it starts: the start alone
        ]
        # the unreadable times are notes on the file, naming the Gold JSON, the segment and the field
        notes = store.files()["Audio/call.mp3"].notes
        gold = str((release / "HippoCamp_Gold/Adam/Audio/call.mp3.json").resolve())
        assert any(n.startswith(f"{gold}: segment 2, field 'start'") and "soon" in n for n in notes), notes
        assert any("segment 2, field 'end_time'" in n for n in store.files()["Audio/memo.wav"].notes)
        # return_txt shows the locators
        out = json.loads(Terminal(entry.root, texts=store.segments_of).run("return_txt Audio/call.mp3").text)
        second = out["data"]["segments"][1]
        assert second["locator"] == {"unit": "timestamp", "position": {"start": "00:01:05", "end": "01:01:05"}}
        assert (second["start_time"], second["end_time"]) == (65, 3665)  # the Gold shape
    finally:
        store.close()


def test_gold_segments_reader() -> None:
    data = {
        "segments": [
            {"content": "numbers", "start_time": 1, "end_time": 2.5},
            {"content": "strings", "start": "00:01:02", "end": "00:01:04.250"},
            {"content": "only a start", "start": 3},
            {"content": "placeholder", "start_time": 0, "end_time": 0},
            {"content": "no time at all"},
            {"content": "an end alone", "end": "00:10"},
            "not a segment",
        ]
    }
    problems: list[str] = []
    segments = gold_segments("Audio/x.m4a", data, problems, "Gold/x.m4a.json")
    assert _times(segments) == [
        (1, 2.5),
        (62, 64.25),
        (3, None),
        None,
        None,
        None,
    ]
    assert problems == [
        "Gold/x.m4a.json: segment 5, field 'end': an end time without a start; no time kept",
        "Gold/x.m4a.json: segment 6: not an object (str); skipped",
    ]
    # a document's segments take pages (``page`` or ``page_number``); times there are not read
    pages = [
        {"content": "p1", "page": 1, "start_time": 0},
        {"content": "p2", "page_number": "2"},
        {"content": "x", "page": "x"},
    ]
    problems = []
    doc = gold_segments("Docs/a.pdf", {"segments": pages}, problems, "Gold/a.pdf.json")
    assert [s.locator.system_page if s.locator else None for s in doc] == [1, 2, None]
    assert len(problems) == 1 and problems[0].startswith("Gold/a.pdf.json: segment 2, field 'page': not a page number")


def test_metadata_sheet_that_cannot_be_read(tmp_path: Path) -> None:
    broken = tmp_path / "Adam_files.xlsx"
    broken.write_bytes(b"PK\x03\x04 not a workbook")
    rows, problems = read_metadata_sheet(broken)
    assert rows == {} and len(problems) == 1
    assert problems[0].severity == "error" and problems[0].file == str(broken) and "cannot read" in problems[0].message
    no_path = _sheet(tmp_path / "Adam_Subset.xlsx", ["Name of it", "creation_date"], [["a.txt", "2020-01-01"]])
    rows, problems = read_metadata_sheet(no_path)
    assert rows == {} and problems[0].field == "row 1" and "FilePath" in problems[0].message


def test_an_older_store_gains_the_metadata_table(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE file_metadata")  # as a store made before the table existed
    db.commit()
    db.close()
    store = Store(path)
    try:
        assert store.file_metadata("a.txt") is None
        store.set_file_metadata({"a.txt": {"location": "Home"}})
        assert store.file_metadata("a.txt") == {"location": "Home"}
    finally:
        store.close()
