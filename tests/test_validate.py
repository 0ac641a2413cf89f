"""The validator on a tiny real profile: clean records pass; each rule is broken at least once."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import cap, make_pdf, make_wav, write_json
from hippocamp.dataset.profile import load_profile
from hippocamp.schema.problems import ValidationReport
from hippocamp.validate import ValidateOptions, rule_names, validate_profile


def run(profile_dir: Path, records: list[dict[str, Any]], **opts: Any) -> ValidationReport:
    path = write_json(profile_dir / "Fullset" / "Tiny.json", records)
    return validate_profile(load_profile(path, root=profile_dir / "Fullset" / "Tiny"), ValidateOptions(**opts))


def findings(report: ValidationReport, severity: str | None = None) -> set[tuple[str, str | None, str]]:
    return {(p.rule, p.record_id, p.field) for p in report.problems if severity is None or p.severity == severity}


def test_clean_records_pass(profile_dir: Path):
    report = validate_profile(load_profile(profile_dir))
    assert report.records == report.records_read == 3
    (bad_cell,) = [p for p in report.problems if p.severity != "info"]  # the fixture's spreadsheet has one
    expected = ("metadata", "row 5, column 'modification_date'", "warning")
    assert (bad_cell.rule, bad_cell.field, bad_cell.severity) == expected
    assert bad_cell.file.endswith("Tiny_files.xlsx") and "'not a date'" in bad_cell.message
    assert report.ok
    assert report.rules == rule_names()


def test_rule_1_evidence_references(profile_dir: Path, good_records):
    good_records[0]["rationale"][1]["evidence_id"] = [1, 9]
    good_records[1]["evidence"][1]["evidence_id"] = 1  # duplicate id
    report = run(profile_dir, good_records)
    errors = findings(report, "error")
    assert ("evidence-refs", "q1", "rationale[1].evidence_id") in errors
    assert ("evidence-refs", "q2", "evidence") in errors
    (bad_ref,) = [p for p in report.problems if p.field == "rationale[1].evidence_id"]
    assert bad_ref.found == "9" and bad_ref.expected == "one of 1"
    assert bad_ref.file.endswith("Tiny.json") and bad_ref.record_index == 0


def test_rule_2_file_paths(profile_dir: Path, good_records):
    good_records[0]["file_path"] = ["Docs/Contract.pdf"]  # wrong case
    good_records[0]["evidence"][0]["file_path"] = "Docs/Contract.pdf"
    good_records[1]["file_path"] = ["../outside.txt", "Notes/todo.md"]
    good_records[1]["evidence"][0]["file_path"] = "/etc/passwd"
    good_records[2]["file_path"] = ["Finance"]  # a folder
    report = run(profile_dir, good_records)
    by_field = {(p.record_id, p.field): p for p in report.problems if p.rule == "file-paths"}
    assert "did you mean Docs/contract.pdf?" in by_field[("q1", "file_path[0]")].message
    assert by_field[("q2", "file_path[0]")].message == "path leaves the profile root"
    assert by_field[("q2", "evidence[0].file_path")].message == "path leaves the profile root"
    assert by_field[("q3", "file_path[0]")].message == "names a folder, not a file"
    assert all(p.severity == "error" for p in by_field.values())


def test_rule_2_symlink_escaping_the_root(profile_dir: Path, good_records, tmp_path: Path):
    secret = tmp_path / "secret.txt"
    secret.write_text("x")
    (profile_dir / "Fullset/Tiny/Notes/link.md").symlink_to(secret)
    good_records[1]["file_path"][1] = "Notes/link.md"
    good_records[1]["evidence"][1]["file_path"] = "Notes/link.md"
    report = run(profile_dir, good_records)
    assert any("symlink" in p.message for p in report.problems if p.field == "file_path[1]")


def test_rule_3_pages_measured_on_the_pdf(profile_dir: Path, good_records):
    ev = good_records[0]["evidence"][0]
    ev["evidence_locator"] = [
        {"unit": "page", "position": {"system_page": 4}},  # 3-page PDF
        {"unit": "page", "position": {"system_page": 2, "printed_page": "9"}},  # not a label of the PDF
        {"unit": "page", "position": {"system_page": 3, "printed_page": "1"}},  # page 3 is labelled "2"
        {"unit": "page", "position": "2-5"},
        {"unit": "page", "position": {"system_page": 1, "printed_page": "i"}},  # right
        {"unit": "timestamp", "position": "00:01-00:02"},  # a time range on a PDF
    ]
    report = run(profile_dir, good_records)
    by_field = {p.field: p for p in report.problems if p.rule == "locators"}
    loc = "evidence[0].evidence_locator[{}]"
    assert by_field[loc.format(0)].severity == "error" and by_field[loc.format(0)].expected == "1..3"
    assert "not a page label" in by_field[loc.format(1)].message
    assert by_field[loc.format(2)].severity == "warning" and by_field[loc.format(2)].expected == "2"
    assert by_field[loc.format(3)].found == "5"
    assert loc.format(4) not in by_field
    assert "does not fit the file" in by_field[loc.format(5)].message


def test_rule_3_printed_page_without_page_labels(profile_dir: Path, good_records):
    root = profile_dir / "Fullset/Tiny"
    make_pdf(root / "Docs/plain.pdf", ["Title page", "Chapter one 7", "More text 8"])
    rec = good_records[0]
    rec["file_path"] = ["Docs/plain.pdf"]
    rec["evidence"][0]["file_path"] = "Docs/plain.pdf"
    rec["evidence"][0]["evidence_locator"] = [
        {"unit": "page", "position": {"system_page": 2, "printed_page": "7"}},  # printed on the page
        {"unit": "page", "position": {"system_page": 3, "printed_page": "7"}},  # not on page 3
    ]
    report = run(profile_dir, [rec])
    flagged = {p.field for p in report.problems if p.rule == "locators"}
    assert flagged == {"evidence[0].evidence_locator[1]"}


def test_rule_3_time_ranges_measured_on_the_wav(profile_dir: Path, good_records):
    ev = good_records[1]["evidence"][0]
    ev["evidence_locator"] = [
        {"unit": "timestamp", "position": {"start": "00:00:01", "end": "00:00:05"}},  # WAV is 2.0 s
        {"unit": "timestamp", "position": {"start": "00:01.8", "end": "00:01.2"}},  # ends before it starts
        {"unit": "timestamp", "position": {"start": "00:00:01", "end": "00:00:02.3"}},  # within the 0.5 s slack
        {"unit": "page", "position": 1},  # a page of an audio file
        {"unit": "timestamp", "position": "1:75"},  # malformed
    ]
    report = run(profile_dir, good_records)
    by_field = {p.field: p for p in report.problems if p.rule == "locators"}
    loc = "evidence[0].evidence_locator[{}]"
    assert by_field[loc.format(0)].expected == "<= 00:00:02 (2.00 s)"
    assert by_field[loc.format(1)].message == "time range ends before it starts"
    assert loc.format(2) not in by_field
    assert "page locator on a wav file" in by_field[loc.format(3)].message
    assert "malformed 'timestamp' locator" in by_field[loc.format(4)].message
    strict = run(profile_dir, good_records, time_slack=0.0)
    assert loc.format(2) in {p.field for p in strict.problems if p.rule == "locators"}


def test_rule_3_cells_lines_regions_and_unknown_units(profile_dir: Path, good_records):
    good_records[2]["evidence"][0]["evidence_locator"] = [
        {"unit": "cells", "position": "November!A1:B2"},  # no such sheet
        {"unit": "cells", "position": "October!A1:Z99"},  # outside the used range
        {"unit": "cells", "position": "A2:B2"},  # the only sheet
        {"unit": "paragraph_hash", "position": "ab12"},  # unknown unit
    ]
    good_records[1]["evidence"][1]["evidence_locator"] = [{"unit": "line", "position": "3-9"}]  # 3 lines
    good_records[0]["evidence"][0]["evidence_locator"] = [
        {"unit": "region", "position": {"page": 2, "bbox": [72, 700, 900, 720]}},  # wider than A4 (595 pt)
        {"unit": "region", "position": {"page": 2, "bbox": [0.1, 0.1, 0.5, 0.5]}},
    ]
    report = run(profile_dir, good_records)
    got = {(p.record_id, p.field): p for p in report.problems if p.rule == "locators"}
    assert got[("q3", "evidence[0].evidence_locator[0]")].severity == "error"
    assert "October" in got[("q3", "evidence[0].evidence_locator[0]")].expected
    assert got[("q3", "evidence[0].evidence_locator[1]")].severity == "warning"
    assert ("q3", "evidence[0].evidence_locator[2]") not in got
    unknown = got[("q3", "evidence[0].evidence_locator[3]")]
    assert unknown.severity == "warning" and "kept verbatim" in unknown.message
    assert got[("q2", "evidence[1].evidence_locator[0]")].expected == "1..3"
    assert got[("q1", "evidence[0].evidence_locator[0]")].message == "box outside page 2"
    assert ("q1", "evidence[0].evidence_locator[1]") not in got


def test_rule_3_images_and_pptx(profile_dir: Path, good_records):
    from PIL import Image

    root = profile_dir / "Fullset/Tiny"
    (root / "Pictures").mkdir()
    Image.new("RGB", (200, 100), "white").save(root / "Pictures/receipt.png")
    import zipfile

    with zipfile.ZipFile(root / "Docs/deck.pptx", "w") as zf:
        for n in (1, 2):
            zf.writestr(f"ppt/slides/slide{n}.xml", "<p:sld/>")
    rec = good_records[0]
    rec["file_path"] = ["Pictures/receipt.png", "Docs/deck.pptx"]
    rec["file_number"], rec["file_modality"], rec["file_type"] = 2, ["image", "document"], ["png", "pptx"]
    rec["evidence"] = [
        {
            "evidence_id": 1,
            "file_path": "Pictures/receipt.png",
            "modality_type": "image",
            "evidence_text": "EUR 2,900 Oskar Lindqvist",
            "evidence_locator": [{"unit": "bbox", "position": [10, 10, 250, 50]}],
        },
        {
            "evidence_id": 2,
            "file_path": "Docs/deck.pptx",
            "modality_type": "document",
            "evidence_text": "deck",
            "evidence_locator": [{"unit": "slide", "position": 3}, {"unit": "slide", "position": 2}],
        },
    ]
    rec["rationale"][1]["evidence_id"] = [1, 2]
    report = run(profile_dir, [rec])
    got = {p.field: p for p in report.problems if p.rule == "locators"}
    assert got["evidence[0].evidence_locator[0]"].expected == "within 200x100 px"
    assert got["evidence[1].evidence_locator[0]"].expected == "1..2"
    assert "evidence[1].evidence_locator[1]" not in got


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg is installed by .ci/run; needed to make a video")
def test_rule_3_video_duration_through_ffprobe(profile_dir: Path, good_records):
    root = profile_dir / "Fullset/Tiny"
    video = root / "Videos/clip.mkv"
    video.parent.mkdir()
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "color=c=blue:s=64x48:d=1.5", "-c:v", "mpeg4", str(video)],
        check=True,
    )
    rec = good_records[1]
    rec["file_path"] = ["Videos/clip.mkv"]
    rec["file_number"], rec["file_modality"], rec["file_type"] = 1, ["video"], ["mkv"]
    rec["evidence"] = [
        rec["evidence"][0]
        | {
            "file_path": "Videos/clip.mkv",
            "modality_type": "video",
            "evidence_locator": [{"unit": "timestamp", "position": "00:00:01-00:00:03"}],
        }
    ]
    rec["rationale"] = rec["rationale"][:2]
    report = run(profile_dir, [rec])
    (problem,) = [p for p in report.problems if p.rule == "locators"]
    assert problem.expected.startswith("<= 00:00:01.5") and problem.found == "00:00:03"  # mkv rounds up a little


def test_corrupt_files_are_findings_not_crashes(profile_dir: Path, good_records):
    root = profile_dir / "Fullset/Tiny"
    (root / "Docs/contract.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (root / "Audio/memo.wav").write_bytes(b"RIFF....WAVEjunk")
    report = run(profile_dir, good_records)
    measured = [p for p in report.problems if p.rule == "locators"]
    assert {p.record_id for p in measured} == {"q1", "q2"}
    assert not [p for p in report.problems if "crashed" in p.message]


def test_rule_4_answer_support(profile_dir: Path, good_records):
    good_records[0]["answer"] = "EUR 2,950, paid to Oskar Lindqvist on 3 May 2024."
    good_records[1]["answer"] = "On 15 October 2024 at 9:00 with Dr. Amara Osei."
    good_records[2]["answer"] = "310.3"  # 310.25 rounded: supported
    report = run(profile_dir, good_records)
    support = {(p.record_id, p.found) for p in report.problems if p.rule == "answer-support"}
    assert support == {("q1", "EUR 2,950"), ("q1", "3 May 2024"), ("q2", "Amara Osei")}
    assert all(p.severity == "warning" for p in report.problems if p.rule == "answer-support")
    quiet = run(profile_dir, good_records, answer_support=False)
    assert not [p for p in quiet.problems if p.rule == "answer-support"]


def test_label_and_groundedness_rules(profile_dir: Path, good_records):
    good_records[0]["agent_cap"] = cap(["basic", "computation"])
    good_records[1]["agent_cap"] = cap(["guessing"])
    good_records[2]["rationale"].append({"rationale_text": "Conclude.", "evidence_id": []})
    good_records[2]["agent_cap"] = None
    report = run(profile_dir, good_records)
    got = {(p.rule, p.record_id, p.field): p for p in report.problems}
    basic = got[("labels", "q1", "agent_cap.reasoning")]
    assert basic.severity == "error" and basic.found == "basic, computation"
    assert got[("labels", "q2", "agent_cap.reasoning")].severity == "warning"
    assert got[("labels", "q3", "agent_cap")].severity == "warning"
    step = got[("groundedness", "q3", "rationale[2].evidence_id")]
    assert step.severity == "warning"
    assert ("groundedness", "q3", "rationale[0].evidence_id") not in got  # planning may cite nothing


def test_fields_and_support_set_rules(profile_dir: Path, good_records):
    good_records[0]["answer"] = "  "
    good_records[0]["QA_type"] = "trivia"
    good_records[1]["file_number"] = 3
    good_records[1]["file_modality"] = ["image"]
    good_records[1]["file_type"] = ["mp3", "md"]
    good_records[2]["evidence"][0]["file_path"] = "Notes/todo.md"  # exists, but not in the minimal set
    report = run(profile_dir, good_records)
    got = {(p.rule, p.record_id, p.field): p for p in report.problems}
    assert got[("fields", "q1", "answer")].severity == "error"
    assert got[("fields", "q1", "QA_type")].found == "trivia"
    assert got[("support-set", "q2", "file_number")].expected == "2"
    assert got[("support-set", "q2", "file_type")].expected == "md, wav"
    assert got[("support-set", "q2", "file_modality")].severity == "warning"
    assert got[("support-set", "q3", "evidence[0].file_path")].severity == "warning"


def test_unreadable_records_and_crashing_rules_do_not_stop_the_rest(profile_dir: Path, good_records):
    from hippocamp import registry

    calls = []

    @registry.register("rule", "test-crash")
    def crash(ctx, rec, i):  # type: ignore[no-untyped-def]
        calls.append(rec.key)
        raise RuntimeError("boom")

    try:
        records = [good_records[0], {"id": "broken", "evidence": "nope"}, good_records[2]]
        report = run(profile_dir, records)
        assert calls == ["q1", "q3"]
        crashed = [p for p in report.problems if p.rule == "test-crash"]
        assert [p.record_id for p in crashed] == ["q1", "q3"] and "boom" in crashed[0].message
        schema = [p for p in report.problems if p.rule == "schema"]
        assert schema and schema[0].record_id == "broken" and schema[0].field.startswith("evidence")
        assert report.records == 3 and report.records_read == 2
    finally:
        registry._registry["rule"].pop("test-crash")


def test_without_a_root_files_are_not_checked_but_said_so(tmp_path: Path, good_records):
    path = write_json(tmp_path / "r.json", good_records)
    report = validate_profile(load_profile(path))
    assert report.root is None
    assert any("no profile root" in p.message for p in report.problems)
    assert not [p for p in report.problems if p.rule == "file-paths" and p.record_id]


def test_example_profile_is_clean():
    from hippocamp.examples import example_profile

    report = validate_profile(load_profile(example_profile()))
    assert report.records_read == 6
    assert not [p for p in report.problems if p.severity != "info"], report.problems


def test_release_json_report_round_trips(profile_dir: Path, good_records):
    bad = copy.deepcopy(good_records)
    bad[0]["rationale"][1]["evidence_id"] = [7]
    report = run(profile_dir, bad)
    again = ValidationReport.model_validate(json.loads(report.model_dump_json()))
    assert again == report and again.version == "1"


def test_wav_helper_makes_the_requested_length(tmp_path: Path):
    import wave

    path = make_wav(tmp_path / "a.wav", 1.25)
    with wave.open(str(path)) as w:
        assert w.getnframes() / w.getframerate() == pytest.approx(1.25)


def test_rule_3_docx_page_count_from_its_metadata(profile_dir: Path, good_records):
    import zipfile

    root = profile_dir / "Fullset/Tiny"
    app = '<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties"><Pages>2</Pages></Properties>'
    with zipfile.ZipFile(root / "Docs/memo.docx", "w") as zf:
        zf.writestr("docProps/app.xml", app)
        zf.writestr("word/document.xml", "<w:document/>")
    rec = good_records[0]
    rec["file_path"], rec["file_type"] = ["Docs/memo.docx"], ["docx"]
    rec["evidence"][0]["file_path"] = "Docs/memo.docx"
    rec["evidence"][0]["evidence_locator"] = [
        {"unit": "page", "position": 3},
        {"unit": "page", "position": 2},
    ]
    report = run(profile_dir, [rec])
    (problem,) = [p for p in report.problems if p.rule == "locators"]
    # Word's saved page count can be stale: past it is a warning, not an error
    assert problem.field == "evidence[0].evidence_locator[0]" and problem.severity == "warning"
    assert problem.expected == "1..2" and "page count the document records" in problem.message
