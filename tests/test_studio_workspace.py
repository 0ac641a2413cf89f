"""The studio's annotation workspace and agreement: two annotators draft a record over the bundled
example profile, the queue shows where they disagree, a third adjudicates, the export validates;
stale saves are refused with the other's record; migrations; Cohen's kappa against hand-computed values."""

from __future__ import annotations

import copy
import json
import shutil
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hippocamp.dataset.profile import load_profile
from hippocamp.examples import example_profile
from hippocamp.schema.locators import parse_locator
from hippocamp.scoring.judge import cohen_kappa as bool_kappa
from hippocamp.studio.agreement import (
    answers_agree,
    cohen_kappa,
    compare,
    disagreements,
    interval_iou,
    label_kappas,
    locator_iou,
)
from hippocamp.studio.workspace import (
    MIGRATIONS,
    WORKSPACE_VERSION,
    ExportError,
    StaleEdit,
    Workspace,
    WorkspaceError,
)
from hippocamp.validate import validate_profile

PROFILE = example_profile()
FILES = PROFILE / "Mira"
LEASE = "Documents/Housing/Lease Agreement 2024.pdf"


def landlord(box: list[float], page: int = 3, reasoning: str = "basic") -> dict[str, Any]:
    """A record over the example's lease: the landlord, found in a region of page 3 (595 x 842 pt)."""
    return {
        "question": "Who is my landlord?",
        "answer": "Oskar Lindqvist.",
        "QA_type": "factual_retention",
        "profiling_type": "",
        "file_path": [LEASE],
        "file_number": 1,
        "file_modality": ["document"],
        "file_type": ["pdf"],
        "agent_cap": json.dumps(
            {"search": ["semantic"], "evidence_perception": ["document_understanding"], "reasoning": [reasoning]}
        ),
        "evidence": [
            {
                "evidence_id": 1,
                "file_path": LEASE,
                "modality_type": "document",
                "evidence_text": "Landlord: Oskar Lindqvist",
                "evidence_locator": [{"unit": "region", "position": {"page": page, "bbox": box}}],
            }
        ],
        "rationale": [
            {"rationale_text": "Look for the lease.", "evidence_id": []},
            {"rationale_text": "The lease names the landlord.", "evidence_id": [1]},
        ],
    }


@pytest.fixture
def ws(tmp_path: Path) -> Any:
    with Workspace.open(tmp_path / "studio" / "mira.sqlite", PROFILE) as opened:
        yield opened


def errors(problems: list[Any]) -> list[str]:
    return [str(p) for p in problems if p.severity == "error"]


# -- the whole round -------------------------------------------------------------------------------
def test_two_drafts_disagree_adjudicate_export_validates(ws: Workspace, tmp_path: Path) -> None:
    item = ws.add_item()
    assert item == "mira_007"  # the profile's own records are mira_001..006
    ana, ben = landlord([72, 100, 300, 140]), landlord([72, 120, 300, 180])
    sent = copy.deepcopy(ana)
    assert ws.save_draft(item, "ana", ana, None).version == 1
    assert ana == sent  # the caller's record is not changed
    assert ws.save_draft(item, "ben", ben, None).version == 1
    assert errors(ws.check(ana, item)) == [] and errors(ws.check(ben, item)) == []

    (summary,) = ws.items()
    assert (summary.annotators, summary.status, summary.disagreements) == (("ana", "ben"), "disagree", 1)
    (d,) = disagreements(ws)
    # boxes 228 x 40 and 228 x 60 pt overlapping 228 x 20: 4560 / (9120 + 13680 - 4560)
    assert (d.item, d.field, d.file, d.annotators) == (item, "evidence_locator", LEASE, ("ana", "ben"))
    assert d.score == pytest.approx(4560 / 18240)
    assert d.a == [{"unit": "region", "position": {"page": 3, "bbox": [72, 100, 300, 140]}}]
    assert d.b == [{"unit": "region", "position": {"page": 3, "bbox": [72, 120, 300, 180]}}]
    assert "IoU 0.25" in d.note

    with pytest.raises(ExportError, match="nothing to export"):  # a disagreement waits for adjudication
        ws.export(tmp_path / "out")

    with pytest.raises(WorkspaceError, match="third person"):
        ws.adjudicate(item, "ana", ana, None)
    merged = landlord([72, 110, 300, 160])
    assert ws.adjudicate(item, "cara", merged, None).version == 1
    with pytest.raises(StaleEdit):
        ws.adjudicate(item, "dan", merged, None)  # cara's adjudication is version 1
    (summary,) = ws.items()
    assert summary.adjudicated and summary.adjudicator == "cara" and not summary.outdated
    assert disagreements(ws) == []

    result = ws.export(tmp_path / "out")
    assert result.path == tmp_path / "out" / "Mira.json"
    assert result.records == (item,) and result.skipped == {}
    written = json.loads(result.path.read_text(encoding="utf-8"))
    assert written == [{"id": item, **merged}]
    report = validate_profile(load_profile(result.path, root=FILES))
    assert report.records_read == 1 and report.errors == [], [str(p) for p in report.errors]
    cli = CliRunner().invoke(_validate_command(), [str(result.path), "--root", str(FILES)])
    assert cli.exit_code == 0, cli.output
    actions = [e.action for e in ws.audit(item)]
    assert actions == ["add-item", "save-draft", "save-draft", "save-adjudication", "adjudication-refused"]

    # a draft saved after the adjudication puts the item back in the queue
    assert ws.save_draft(item, "ben", landlord([72, 130, 300, 190]), 1).version == 2
    (summary,) = ws.items()
    assert summary.outdated and [d.field for d in disagreements(ws)] == ["evidence_locator"]
    with pytest.raises(ExportError, match="saved after the adjudication: adjudicate again"):
        ws.export(tmp_path / "out2")


def _validate_command() -> Any:
    from hippocamp.cli.validate import validate

    return validate


def test_agreeing_drafts_export_without_adjudication_and_errors_block_export(ws: Workspace, tmp_path: Path) -> None:
    agreed, broken, single = ws.add_item(), ws.add_item(), ws.add_item()
    ws.save_draft(agreed, "ana", landlord([72, 100, 300, 140]), None)
    ws.save_draft(agreed, "ben", landlord([72, 102, 300, 142]), None)  # IoU 0.9: they agree
    bad = landlord([72, 100, 300, 140])
    bad["rationale"][1]["evidence_id"] = [2]  # cites evidence the record does not define
    ws.save_draft(broken, "ana", bad, None)
    ws.save_draft(broken, "ben", bad, None)
    ws.save_draft(single, "ana", landlord([72, 100, 300, 140]), None)
    assert [s.status for s in ws.items()] == ["agree", "agree", "single"]
    with pytest.raises(WorkspaceError, match="2 annotators draft an item"):
        ws.save_draft(agreed, "cara", landlord([72, 100, 300, 140]), None)

    with pytest.raises(ExportError) as refused:
        ws.export(tmp_path / "out")
    assert [(p.record_id, p.rule, p.field) for p in refused.value.problems] == [
        (broken, "evidence-refs", "rationale[1].evidence_id")
    ]
    assert not (tmp_path / "out" / "Mira.json").exists()

    ws.adjudicate(broken, "cara", landlord([72, 100, 300, 140]), None)
    result = ws.export(tmp_path / "out", include_single=True)
    assert result.records == (agreed, broken, single)
    exported = json.loads(result.path.read_text(encoding="utf-8"))
    # two agreeing drafts: the draft of the annotator whose name sorts first (ana's, not ben's)
    assert exported[0]["evidence"][0]["evidence_locator"][0]["position"]["bbox"] == [72, 100, 300, 140]
    assert ws.export(tmp_path / "out3").skipped == {single: "one draft only (a second annotator, or include_single)"}
    assert validate_profile(load_profile(result.path, root=FILES)).errors == []


# -- versions ----------------------------------------------------------------------------------------
def test_a_stale_save_is_refused_with_the_other_record_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "ws.sqlite"
    with Workspace.open(path, PROFILE) as tab_a, Workspace.open(path, PROFILE) as tab_b:  # two connections
        item = tab_a.add_item("q-rent")
        tab_a.save_draft(item, "ana", landlord([72, 100, 300, 140]), None)
        seen_a, seen_b = tab_a.draft(item, "ana"), tab_b.draft(item, "ana")
        assert seen_a is not None and seen_b is not None and seen_a.version == seen_b.version == 1

        theirs = landlord([10, 10, 200, 60])
        assert tab_b.save_draft(item, "ana", theirs, seen_b.version).version == 2
        mine = landlord([72, 500, 300, 560])
        with pytest.raises(StaleEdit) as stale:
            tab_a.save_draft(item, "ana", mine, seen_a.version)
        assert stale.value.version == 2 and stale.value.record == {"id": item, **theirs}
        assert stale.value.yours == {"id": item, **mine} and stale.value.author == "ana"
        with pytest.raises(StaleEdit):
            tab_a.save_draft(item, "ana", mine, None)  # "no draft yet" is stale too

        current = tab_a.draft(item, "ana")
        assert current is not None and current.record == {"id": item, **theirs} and current.version == 2
        history = tab_a.history(item, "ana")
        expected = [(1, 0, True), (2, 1, True), (None, 1, False), (None, 0, False)]
        assert [(r.version, r.based_on, r.accepted) for r in history] == expected
        assert history[2].record == {"id": item, **mine}  # the refused edit is not lost
        assert tab_a.save_draft(item, "ana", mine, 2).version == 3  # merged and saved again
        actions = [e.action for e in tab_b.audit(item)]
        assert actions.count("draft-refused") == 2 and actions.count("save-draft") == 3

        with pytest.raises(WorkspaceError, match="id 'other'"):
            tab_a.save_draft(item, "ana", {**mine, "id": "other"}, 3)
        with pytest.raises(WorkspaceError, match="no item"):
            tab_a.save_draft("nope", "ana", mine, None)


def test_two_connections_writing_at_once_lose_no_update(tmp_path: Path) -> None:
    path = tmp_path / "ws.sqlite"
    with Workspace.open(path, PROFILE) as first, Workspace.open(path, PROFILE) as second:
        item = first.add_item()
        per_writer, refused = 15, []
        start = threading.Barrier(2)

        def write(ws: Workspace, tag: str) -> None:
            start.wait(timeout=30)
            done = 0
            while done < per_writer:
                current = ws.draft(item, "ana")
                record = landlord([72, 100 + done, 300, 140 + done])
                record["question"] = f"{tag} {done}"
                try:
                    ws.save_draft(item, "ana", record, None if current is None else current.version)
                    done += 1
                except StaleEdit:
                    refused.append(tag)

        threads = [threading.Thread(target=write, args=(w, t)) for w, t in ((first, "a"), (second, "b"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        final = first.draft(item, "ana")
        assert final is not None and final.version == 2 * per_writer
        history = second.history(item)
        assert [r.version for r in history if r.accepted] == list(range(1, 2 * per_writer + 1))
        assert sum(not r.accepted for r in history) == len(refused)


# -- checking one record -----------------------------------------------------------------------------
def test_check_reports_a_locator_outside_the_file(ws: Workspace) -> None:
    item = ws.add_item()
    assert errors(ws.check(landlord([72, 100, 300, 140]), item)) == []
    past_the_end = ws.check(landlord([72, 100, 300, 140], page=9), item)
    outside = ws.check(landlord([72, 100, 900, 140]), item)
    assert [(p.rule, p.field) for p in past_the_end if p.severity == "error"] == [
        ("locators", "evidence[0].evidence_locator[0]")
    ]
    assert "past the end of the document" in errors(past_the_end)[0]
    assert "box outside page 3" in errors(outside)[0]
    unreadable = ws.check({"id": item, "agent_cap": 3})
    assert [(p.rule, p.field) for p in unreadable] == [("schema", "agent_cap")]


# -- the file ----------------------------------------------------------------------------------------
def test_an_older_workspace_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
    for statement in MIGRATIONS[0]:
        db.execute(statement)
    record = json.dumps({"id": "old-1", **landlord([72, 100, 300, 140])})
    db.executescript(
        "INSERT INTO schema_version VALUES (1, '2024-01-01T00:00:00Z');"
        "INSERT INTO meta VALUES ('profile_name', 'Mira');"
        "INSERT INTO items VALUES ('old-1', '2024-01-01T00:00:00Z');"
        "INSERT INTO annotators VALUES ('ana', '2024-01-01T00:00:00Z');"
    )
    db.execute("INSERT INTO drafts VALUES ('old-1', 'ana', ?, 2, '2024-01-02T00:00:00Z')", (record,))
    db.commit()
    db.close()

    with Workspace.open(path, PROFILE) as ws:
        assert ws.version == WORKSPACE_VERSION == 2
        [revision] = ws.history("old-1")
        assert (revision.author, revision.version, revision.accepted) == ("ana", 2, True)
        assert ws.save_draft("old-1", "ana", landlord([72, 100, 300, 140]), 2).version == 3
        assert [(e.action, e.detail) for e in ws.audit() if e.action == "migrate"] == [
            ("migrate", {"from": 1, "to": 2})
        ]
    with Workspace.open(path, PROFILE) as again:  # opening a current workspace changes nothing
        assert again.version == 2 and len(again.history("old-1")) == 2


def test_a_newer_or_foreign_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    Workspace.open(path, PROFILE).close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO schema_version VALUES (?, '2099-01-01T00:00:00Z')", (WORKSPACE_VERSION + 1,))
    with pytest.raises(WorkspaceError, match=f"version {WORKSPACE_VERSION + 1} was written by a newer hippocamp"):
        Workspace.open(path, PROFILE)

    foreign = tmp_path / "other.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE notes (x)")
    with pytest.raises(WorkspaceError, match="not a studio workspace"):
        Workspace.open(foreign, PROFILE)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(WorkspaceError, match="not a studio workspace"):
        Workspace.open(junk, PROFILE)


def test_a_workspace_or_export_inside_the_profile_is_refused(tmp_path: Path) -> None:
    profile = tmp_path / "Mira"
    shutil.copytree(PROFILE, profile)
    for inside in (profile / "ws.sqlite", profile / "Mira" / "Notes" / "ws.sqlite"):
        with pytest.raises(WorkspaceError, match="inside the profile's folder"):
            Workspace.open(inside, profile)
        assert not inside.exists()
    ws = Workspace.open(tmp_path / "ws.sqlite", profile)
    with pytest.raises(WorkspaceError, match="inside the profile's folder"):
        ws.export(profile / "Mira")
    ws.close()
    other = tmp_path / "Other"
    shutil.copytree(PROFILE / "Mira", other / "Other")
    with pytest.raises(WorkspaceError, match="for profile 'Mira', not 'Other'"):
        Workspace.open(tmp_path / "ws.sqlite", other)


# -- agreement ---------------------------------------------------------------------------------------
def test_answers_and_locators_agree_by_their_own_measures() -> None:
    assert answers_agree("Oskar Lindqvist.", "oskar lindqvist")[0]
    assert answers_agree("EUR 1,885.25", "EUR 1,890")[0]  # 0.25 % apart
    assert not answers_agree("EUR 1,885.25", "EUR 1,950")[0]  # 3.4 % apart
    assert not answers_agree("EUR 1,885.25 in October", "EUR 1,885.25 in November")[0]

    def iou(a: dict[str, Any], b: dict[str, Any]) -> float:
        return locator_iou(parse_locator(a), parse_locator(b))

    t = "timestamp"
    assert iou({"unit": t, "position": {"start": 0, "end": 10}}, {"unit": t, "position": "00:05-00:15"}) == 1 / 3
    assert iou({"unit": "cells", "position": "Oct!A1:B2"}, {"unit": "cells", "position": "Oct!B2:C3"}) == 1 / 7
    assert iou({"unit": "cells", "position": "Oct!A1:B2"}, {"unit": "cells", "position": "Nov!A1:B2"}) == 0
    assert iou({"unit": "cells", "position": "A:B"}, {"unit": "cells", "position": "B:C"}) == 1 / 3
    assert iou({"unit": "line", "position": "13-18"}, {"unit": "line", "position": "15-20"}) == 0.5
    assert iou({"unit": "page", "position": 3}, {"unit": "region", "position": {"page": 3, "bbox": [0, 0, 9, 9]}}) == 0
    region = {"unit": "region", "position": {"page": 3, "bbox": [0, 0, 10, 10]}}
    assert iou(region, {"unit": "region", "position": {"page": 2, "bbox": [0, 0, 10, 10]}}) == 0
    assert iou(region, {"unit": "region", "position": {"page": 3, "bbox": [5, 0, 15, 10]}}) == 50 / 150
    assert interval_iou((3, 4), (4, 5), discrete=True) == 1 / 3

    a, b = landlord([72, 100, 300, 140]), landlord([72, 100, 300, 140], reasoning="computation")
    b["file_path"] = [LEASE, "Mail/2024-08-20 Re lease.eml"]
    verdicts = {f.field: (f.agree, f.score) for f in compare(a, b)}
    assert verdicts["file_path"] == (False, 0.5) and verdicts["agent_cap.reasoning"] == (False, 0.0)
    assert verdicts["answer"] == verdicts["evidence_locator"] == verdicts["QA_type"] == (True, 1.0)


def test_cohen_kappa_matches_hand_computed_values(ws: Workspace) -> None:
    a = ["f", "f", "f", "f", "p", "p", "p", "x", "x", "x"]
    b = ["f", "f", "f", "p", "p", "p", "x", "x", "x", "f"]
    # observed 7/10; chance (4*4 + 3*3 + 3*3) / 100 = 0.34; kappa = (0.7 - 0.34) / (1 - 0.34) = 6/11
    assert cohen_kappa(a, b) == pytest.approx(6 / 11)
    assert cohen_kappa([*a, None], [*b, "f"]) == pytest.approx(6 / 11)  # an item one rater left out is skipped
    assert cohen_kappa(["f"] * 3, ["f"] * 3) == 1.0 and cohen_kappa([None], ["f"]) is None
    bools_a = [True, True, False, True, False, False, True, True, False, True]
    bools_b = [True, False, False, True, False, True, True, True, True, True]
    assert cohen_kappa(bools_a, bools_b) == pytest.approx(bool_kappa(bools_a, bools_b))  # the judge panel's

    # over a workspace: reasoning basic/basic/computation/basic (ana) against basic/computation/computation/basic
    for mine, theirs in (("basic", "basic"), ("basic", "computation"), ("computation", "computation"), ("basic",) * 2):
        item = ws.add_item()
        ws.save_draft(item, "ana", landlord([72, 100, 300, 140], reasoning=mine), None)
        ws.save_draft(item, "ben", landlord([72, 100, 300, 140], reasoning=theirs), None)
    kappas = label_kappas(ws)
    # basic: ana TTFT, ben TFFT: observed 3/4, chance 3/4*2/4 + 1/4*2/4 = 1/2, kappa 1/2 (computation likewise)
    assert kappas["agent_cap.reasoning:basic"] == pytest.approx(0.5)
    assert kappas["agent_cap.reasoning:computation"] == pytest.approx(0.5)
    assert kappas["QA_type"] == 1.0 and kappas["profiling_type"] is None
