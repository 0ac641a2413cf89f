"""The importers end to end on tiny hand-made inputs: FinanceBench-shaped folders and a release-shaped one."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import make_pdf
from hippocamp.cli import main
from hippocamp.dataset.profile import load_profile
from hippocamp.importers import (
    ImporterError,
    import_financebench,
    import_hippocamp,
    read_suite,
    reasoning_labels,
)
from hippocamp.schema.problems import ValidationReport
from hippocamp.store import IndexOptions, Searcher, Store

FAST = IndexOptions(embed=False, workers=1)
DISTRACTOR_MTIME = datetime(2021, 3, 4, 5, 6, 7)


# -- FinanceBench ----------------------------------------------------------------------------------
def _question(qid: str, doc: str, reasoning: str | None, evidence: list[tuple[str, int]], **extra: Any) -> dict:
    return {
        "financebench_id": qid,
        "company": extra.pop("company", "Acme Corp"),
        "doc_name": doc,
        "question_type": "domain-relevant",
        "question_reasoning": reasoning,
        "question": extra.pop("question", f"Question {qid}?"),
        "answer": extra.pop("answer", "1,234 million"),
        "justification": extra.pop("justification", None),
        "evidence": [
            {"evidence_text": text, "doc_name": doc, "evidence_page_num": page, "evidence_text_full_page": text}
            for text, page in evidence
        ],
    }


@pytest.fixture
def financebench_dir(tmp_path: Path) -> Path:
    src = tmp_path / "fb"
    # the 10-K's pages are labelled i, ii, 1, 2, 3: its 0-based page 3 is system page 4, printed page "2"
    make_pdf(
        src / "pdfs/ACME_2022_10K.pdf",
        ["Acme annual report cover", "Table of contents", "Business overview of Acme",
         "Total revenue was 1,234 million in fiscal 2022", "Net income was 210 million"],
        labels=[(0, 1, "/r", 1), (2, 4, "/D", 1)],
    )  # fmt: skip
    make_pdf(src / "pdfs/ZETA_2021Q2_10Q.pdf", ["Zeta gross margin was 41 percent", "Zeta gross margin was 38 percent"])
    distractor = make_pdf(src / "pdfs/ACME_2020_10K.pdf", ["Acme annual report 2020"])
    stamp = DISTRACTOR_MTIME.timestamp()
    os.utime(distractor, (stamp, stamp))
    rows = [
        _question("fb_1", "ACME_2022_10K", "Information extraction",
                  [("Total revenue was 1,234 million in fiscal 2022", 3)]),
        _question("fb_2", "ACME_2022_10K", "Numerical reasoning", [("Net income was 210 million", 4)],
                  answer="17.0%", justification="210 / 1,234 = 17.0%"),
        _question("fb_3", "ZETA_2021Q2_10Q", "Logical reasoning (based on numerical reasoning) OR Logical reasoning",
                  [("Zeta gross margin was 41 percent", 0), ("Zeta gross margin was 38 percent", 1)],
                  company="Zeta", answer="It declined from 41 percent to 38 percent."),
        _question("fb_4", "GONE_2020_10K", "Information extraction", [("Gone revenue", 10)], company="Gone Inc"),
        _question("fb_5", "ZETA_2021Q2_10Q", None, [("Zeta gross margin was 41 percent", 0)],
                  company="Zeta", answer="41 percent"),
    ]  # fmt: skip
    (src / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    docs = [
        {"doc_name": "ACME_2022_10K", "company": "Acme Corp", "doc_type": "10k", "doc_period": 2022},
        {"doc_name": "ZETA_2021Q2_10Q", "company": "Zeta", "doc_type": "10q", "doc_period": 2021},
    ]
    (src / "documents.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return src


def _page_text(path: Path, system_page: int) -> str:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(path))
    try:
        return doc[system_page - 1].get_textpage().get_text_range()
    finally:
        doc.close()


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_financebench_import(financebench_dir: Path, tmp_path: Path):
    out = tmp_path / "out"
    result = import_financebench(financebench_dir, out, name="Finance")
    root = out / "Finance"
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert files == [
        "Work/Filings/Acme Corp/2020/ACME_2020_10K.pdf",
        "Work/Filings/Acme Corp/2022/ACME_2022_10K.pdf",
        "Work/Filings/Zeta/2021/ZETA_2021Q2_10Q.pdf",
    ]
    assert (root / files[1]).read_bytes() == (financebench_dir / "pdfs/ACME_2022_10K.pdf").read_bytes()
    assert result.linked + result.copied == 3
    assert (result.questions, result.imported) == (5, 4)
    assert [(s.line, s.id) for s in result.skipped] == [(4, "fb_4")]
    assert "GONE_2020_10K.pdf is missing" in result.skipped[0].reason
    report = json.loads((out / "Finance.import.json").read_text())
    assert report["skipped"][0]["id"] == "fb_4" and report["imported"] == 4 and report["complete"] is True

    records = {r["id"]: r for r in json.loads((out / "Finance.json").read_text())}
    assert sorted(records) == ["fb_1", "fb_2", "fb_3", "fb_5"]
    r1 = records["fb_1"]
    assert r1["file_path"] == ["Work/Filings/Acme Corp/2022/ACME_2022_10K.pdf"] and r1["file_number"] == 1
    assert r1["QA_type"] == "factual_retention" and r1["data_source"] == "Finance"
    assert r1["evidence"][0]["evidence_locator"] == [
        {"unit": "page", "position": {"system_page": 4, "printed_page": "2"}}
    ]
    assert [s["evidence_id"] for s in r1["rationale"]] == [[], [1]]
    assert "page 2 (PDF page 4)" in r1["rationale"][1]["rationale_text"]
    assert records["fb_3"]["evidence"][1]["evidence_locator"] == [{"unit": "page", "position": {"system_page": 2}}]
    assert records["fb_2"]["rationale"][-1] == {"rationale_text": "210 / 1,234 = 17.0%", "evidence_id": [1]}
    # every cited page (0-based in FinanceBench, 1-based here) holds its evidence text
    for record in records.values():
        for ev in record["evidence"]:
            page = ev["evidence_locator"][0]["position"]["system_page"]
            assert _norm(ev["evidence_text"]) in _norm(_page_text(root / ev["file_path"], page)), (record["id"], page)
    caps = {qid: json.loads(r["agent_cap"]) for qid, r in records.items()}
    assert caps["fb_1"] == {"search": ["semantic"], "evidence_perception": ["document_understanding"],
                            "reasoning": ["basic"]}  # fmt: skip
    assert caps["fb_2"]["reasoning"] == ["computation"]
    assert caps["fb_3"]["reasoning"] == ["computation", "verification"]
    assert caps["fb_5"]["reasoning"] == ["basic"]
    assert result.pages == 5

    assert result.validation["errors"] == 0
    validation = ValidationReport.model_validate_json((out / "Finance.validation.json").read_text())
    assert validation.records_read == 4 and not validation.errors

    profile = load_profile(out)
    assert profile.name == "Finance" and len(profile.records) == 4
    assert profile.meta(files[1]).modified == datetime(2022, 12, 31)
    assert profile.meta(files[2]).modified == datetime(2021, 6, 30)  # the 10-Q's quarter end
    assert profile.meta(files[0]).modified == DISTRACTOR_MTIME  # no document row: the file's own time
    assert sorted(profile.file_meta) == files  # folder rows are skipped by the reader
    flat = import_hippocamp(out, tmp_path / "suite", index=False)  # the output is a (flat) release itself
    assert [p.name for p in flat.profiles] == ["Finance"] and flat.profiles[0].validation["errors"] == 0


def test_financebench_hard_links_are_trusted_by_its_suite_only(financebench_dir: Path, tmp_path: Path):
    """The importer hard-links the filings; the terminal refuses a file sharing its inode with a file
    outside the profile, except in a suite whose import report says hippocamp made those links."""
    from hippocamp.runs.suite import SuiteOptions, load_suite

    out = tmp_path / "out"
    result = import_financebench(financebench_dir, out, name="Finance")
    if result.linked == 0:
        pytest.skip("this file system cannot hard-link")
    rel = "Work/Filings/Acme Corp/2022/ACME_2022_10K.pdf"
    options = SuiteOptions(ocr=False, asr=False, embed=False, workers=1, store=tmp_path / "s.sqlite")
    suite = load_suite(out, options)
    try:
        assert suite.hard_links == "any"
        obs = suite.env().terminal().run(f"return_txt '/{rel}'")
        assert obs.text.startswith('{"success":true')
    finally:
        suite.close()
    (out / "Finance.import.json").unlink()  # the same tree without hippocamp's word for its links
    suite = load_suite(out, options)
    try:
        assert suite.hard_links == "inside"
        obs = suite.env().terminal().run(f"return_txt '/{rel}'")
        assert obs.text.startswith('{"success":false')
    finally:
        suite.close()


def test_financebench_is_deterministic(financebench_dir: Path, tmp_path: Path):
    first = import_financebench(financebench_dir, tmp_path / "a")
    second = import_financebench(financebench_dir, tmp_path / "b")
    assert first.records_path.read_bytes() == second.records_path.read_bytes()
    assert first.files_xlsx.read_bytes() == second.files_xlsx.read_bytes()
    again = import_financebench(financebench_dir, tmp_path / "a")  # into the same folder: replaced
    assert again.records_path.read_bytes() == second.records_path.read_bytes()
    assert again.imported == 4


def test_financebench_refuses_foreign_tree_and_bad_input(financebench_dir: Path, tmp_path: Path):
    (tmp_path / "mine/Finance").mkdir(parents=True)
    with pytest.raises(ImporterError, match="not written by this importer"):
        import_financebench(financebench_dir, tmp_path / "mine")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ImporterError, match="no questions file"):
        import_financebench(tmp_path / "empty", tmp_path / "x")


def test_financebench_cli(financebench_dir: Path, tmp_path: Path):
    result = CliRunner().invoke(main, ["import", "financebench", str(financebench_dir), "--out", str(tmp_path / "o"),
                                       "--name", "Analyst"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "4/5 questions imported" in result.output and "fb_4" in result.output and "0 errors" in result.output
    assert (tmp_path / "o/Analyst.json").is_file()
    check = CliRunner().invoke(main, ["validate", str(tmp_path / "o/Analyst.json")])
    assert check.exit_code == 0, check.output


def test_reasoning_table():
    assert reasoning_labels("Information extraction") == (["basic"], [])
    assert reasoning_labels("Numerical reasoning OR information extraction") == (["computation"], [])
    assert reasoning_labels("Information extraction OR Logical reasoning OR") == (["verification"], [])
    assert reasoning_labels(None) == (["basic"], [])
    assert reasoning_labels("Guesswork") == (["basic"], ["guesswork"])


# -- HippoCamp release -----------------------------------------------------------------------------
def _record(rid: str, path: str, text: str, page: int | None = None) -> dict[str, Any]:
    locator = [{"unit": "page", "position": {"system_page": page}}] if page else []
    ext = path.rsplit(".", 1)[-1]
    return {
        "id": rid,
        "question": f"What does {path} say?",
        "answer": text,
        "QA_type": "factual_retention",
        "profiling_type": "",
        "file_path": [path],
        "file_number": 1,
        "file_modality": ["document" if ext == "pdf" else "text"],
        "file_type": [ext],
        "agent_cap": json.dumps({"search": ["semantic"], "evidence_perception": [], "reasoning": ["basic"]}),
        "evidence": [
            {
                "evidence_id": 1,
                "file_path": path,
                "modality_type": "document",
                "evidence_text": text,
                "evidence_locator": locator,
            }
        ],
        "rationale": [
            {"rationale_text": "Find the file.", "evidence_id": []},
            {"rationale_text": "Read it.", "evidence_id": [1]},
        ],
    }


def _profile(release: Path, name: str, files: dict[str, list[str] | str], records: Any, times: dict[str, datetime]):
    from openpyxl import Workbook

    full = release / name / "Fullset"
    for rel, content in files.items():
        if isinstance(content, list):
            make_pdf(full / name / rel, content)
        else:
            (full / name / rel).parent.mkdir(parents=True, exist_ok=True)
            (full / name / rel).write_text(content, encoding="utf-8")
    text = records if isinstance(records, str) else json.dumps(records, indent=2)
    (full / f"{name}.json").write_text(text, encoding="utf-8")
    wb = Workbook()
    ws = wb.active
    ws.append(["FilePath", "FileType", "creation_date", "modification_date", "location"])
    for rel, when in times.items():
        ws.append([rel, rel.rsplit(".", 1)[-1], when, when, None])
    wb.save(full / f"{name}_files.xlsx")


@pytest.fixture
def release(tmp_path: Path) -> Path:
    release = tmp_path / "HippoCamp"
    adam_records = [
        _record("adam_1", "Docs/brief.pdf", "The hearing is on 3 May 2023.", page=2),
        _record("adam_2", "Docs/gone.pdf", "A file that is not there."),
        _record("adam_3", "Docs/brief.pdf", "Past the end.", page=9),
    ]
    _profile(
        release,
        "Adam",
        {"Docs/brief.pdf": ["Brief cover", "The hearing is on 3 May 2023."], "Notes/case.md": "# Case\nquokka memo\n"},
        adam_records,
        {"Docs/brief.pdf": datetime(2023, 5, 2, 9, 0)},
    )
    bei_records: list[Any] = [_record("bei_1", "Study/notes.txt", "Exam on Friday."), "not a record"]
    _profile(release, "Bei", {"Study/notes.txt": "Exam on Friday.\n"}, bei_records, {})
    _profile(release, "Victoria", {"a.txt": "x\n"}, "{this is not JSON", {})
    gold = release / "HippoCamp_Gold/Adam/Notes"
    gold.mkdir(parents=True)
    (gold / "case.md.json").write_text(json.dumps({
        "file_info": {"file_path": "/Users/someone/Adam/Notes/case.md", "file_name": "case.md"},
        "summary": "",
        "segments": [{"content": "The zebracorn settlement clause.", "start_time": None, "end_time": None}],
    }), encoding="utf-8")  # fmt: skip
    return release


def test_hippocamp_import(release: Path, tmp_path: Path):
    out = tmp_path / "suite"
    manifest = import_hippocamp(release, out, index_options=FAST)
    data = json.loads((out / "suite.json").read_text())
    assert data["format"] == "hippocamp-suite/1" and data["variant"] == "Fullset"
    assert [p["name"] for p in data["profiles"]] == ["Adam", "Bei", "Victoria"]
    adam = data["profiles"][0]
    assert adam["store"] == "stores/Adam.sqlite" and adam["validation_report"] == "Adam.validation.json"
    assert Path(adam["records"]) == (release / "Adam/Fullset/Adam.json").resolve()
    assert Path(adam["gold"]) == (release / "HippoCamp_Gold/Adam").resolve()
    assert data["profiles"][1]["gold"] is None  # Gold has a folder for Adam only
    assert not list(out.rglob("*.pdf"))  # the release is referenced, not copied

    # problems of the release are counted and reported, never fatal
    v = adam["validation"]
    assert v["records"] == 3 and v["by_rule"]["file-paths"]["error"] == 1 and v["by_rule"]["locators"]["error"] == 1
    report = ValidationReport.model_validate_json((out / "Adam.validation.json").read_text())
    assert {p.record_id for p in report.errors} == {"adam_2", "adam_3"}
    bei = data["profiles"][1]
    assert bei["validation"]["records"] == 2 and bei["validation"]["records_read"] == 1
    assert bei["validation"]["by_rule"]["schema"]["error"] == 1
    victoria = data["profiles"][2]
    assert victoria["error"] and "Victoria.json" in victoria["error"] and victoria["validation"] is None

    # indexed, with the Gold text for the file Gold covers and the _files.xlsx times
    assert adam["index"]["from_gold"] == 1 and adam["index"]["files"] == 2 and adam["index"]["times_from_xlsx"] == 1
    entry = read_suite(out).profile("Adam")
    store = Store(entry.store, root=entry.root)
    try:
        hits = Searcher(store).search("zebracorn settlement", mode="fts")
        assert hits and hits[0].path == "Notes/case.md"
        assert not Searcher(store).search("quokka", mode="fts")  # the file's own text was not read
        assert store.files()["Docs/brief.pdf"].modified == "2023-05-02T09:00:00"
    finally:
        store.close()

    # each profile loads with load_profile
    profile = entry.load()
    assert profile.name == "Adam" and len(profile.records) == 3 and profile.root == (release / "Adam/Fullset/Adam")
    assert profile.meta("Docs/brief.pdf").source == "xlsx"
    assert manifest.profile("Bei").load().root is not None

    again = import_hippocamp(release, out, index_options=FAST)  # incremental: nothing read again
    assert again.profile("Adam").index["unchanged"] == 2


def test_hippocamp_import_one_profile_and_cli(release: Path, tmp_path: Path):
    manifest = import_hippocamp(release / "Adam", tmp_path / "one", index=False)
    (entry,) = manifest.profiles
    assert entry.name == "Adam" and entry.store is None and entry.index is None
    assert entry.gold == (release / "HippoCamp_Gold/Adam").resolve()
    result = CliRunner().invoke(main, ["import", "hippocamp", str(release), "--out", str(tmp_path / "cli"),
                                       "--no-embed", "--workers", "1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Adam" in result.output and "1 from Gold" in result.output and "Victoria" in result.output
    with pytest.raises(ImporterError, match="no HippoCamp profiles"):
        import_hippocamp(tmp_path / "one", tmp_path / "x")


# -- every importer ends in a suite that runs and scores as is ----------------------------------------
def _run_and_score(tmp_path: Path, suite: str) -> list[Any]:
    """``hippocamp run`` with the mock model, then ``hippocamp score`` with the facts judge; the lines."""
    from hippocamp.scoring.run_scores import load_scores

    out = tmp_path / "run"
    args = ["run", "--suite", suite, "--agent", "rag", "--model", "mock", "--out", str(out), "--no-embed",
            "--no-ocr", "--no-asr", "--concurrency", "1"]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    scored = CliRunner().invoke(main, ["score", str(out), "--judge-mode", "facts"], catch_exceptions=False)
    assert scored.exit_code == 0, scored.output
    assert "no gold record" not in scored.output
    return load_scores(out)


def test_an_imported_release_runs_and_scores(release: Path, tmp_path: Path):
    out = tmp_path / "suite"
    result = CliRunner().invoke(main, ["import", "hippocamp", str(release), "--out", str(out), "--no-embed",
                                       "--workers", "1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = _run_and_score(tmp_path, str(out / "suite.json"))
    # Victoria's records are not JSON: the release's damage leaves that profile out, the rest runs
    assert sorted(s.task_id for s in lines) == ["Adam/adam_1", "Adam/adam_2", "Adam/adam_3", "Bei/bei_1"]
    assert all(s.benchmark == "hippocamp" for s in lines) and any(s.status == "ok" for s in lines)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["benchmark"] == "hippocamp" and set(manifest["suite"]["skipped_profiles"]) == {"Victoria"}
    assert [p["name"] for p in manifest["suite"]["profiles"]] == ["Adam", "Bei"]


def test_an_imported_financebench_runs_and_scores(financebench_dir: Path, tmp_path: Path):
    out = tmp_path / "fb"
    result = CliRunner().invoke(main, ["import", "financebench", str(financebench_dir), "--out", str(out),
                                       "--name", "Finance"])  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = _run_and_score(tmp_path, str(out))
    assert sorted(s.task_id for s in lines) == ["fb_1", "fb_2", "fb_3", "fb_5"]
    assert all("hippocamp" in s.files for s in lines) and any(s.status == "ok" for s in lines)


def test_an_importer_is_added_by_one_registration(tmp_path: Path):
    """A plug-in importer is a function registered under kind ``importer``: ``hippocamp import NAME``
    runs it with SOURCE, --out and one option per keyword parameter."""
    from hippocamp import registry

    def import_notes(source: Path, out: Path, prefix: str = "note", upper: bool = False) -> Any:
        """Copy a text file into a one-file profile."""
        out.mkdir(parents=True, exist_ok=True)
        text = source.read_text(encoding="utf-8")
        (out / f"{prefix}.txt").write_text(text.upper() if upper else text, encoding="utf-8")

    registry.register("importer", "notes")(import_notes)
    try:
        src = tmp_path / "in.txt"
        src.write_text("heron\n", encoding="utf-8")
        helped = CliRunner().invoke(main, ["import", "--help"])
        assert "notes" in helped.output and "Copy a text file" in helped.output
        result = CliRunner().invoke(main, ["import", "notes", str(src), "--out", str(tmp_path / "o"), "--upper",
                                           "--prefix", "n1"])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert (tmp_path / "o" / "n1.txt").read_text(encoding="utf-8") == "HERON\n"
    finally:
        registry._registry["importer"].pop("notes", None)
