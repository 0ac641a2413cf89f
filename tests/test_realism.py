"""The independent realism audit (issue #20): each failure the issue quotes, written by hand into a
tiny persona set on disk, is found and located (persona, file, record, field); plausible input next to
it is not flagged; and a generated set is audited end to end through the CLI."""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hippocamp.cli import main
from hippocamp.cli.realism import realism
from hippocamp.synth import realism as R
from hippocamp.synth.realism import Finding, RealismInputError, RealismReport, audit_set

START = "2025-03-03"


def _fact(pid: str, n: int, label: str, valid_from: str | None = None, valid_to: str | None = None) -> dict[str, Any]:
    return {"id": f"{pid}-F{n:03d}", "category": "background", "label": label, "valid_from": valid_from,
            "valid_to": valid_to}  # fmt: skip


def write_persona(
    root: Path,
    pid: str,
    *,
    facts: Sequence[str | tuple[str, str | None, str | None]] = (),
    messages: Sequence[dict[str, Any]] = (),
    events: Sequence[dict[str, Any]] = (),
    cases: Sequence[dict[str, Any]] = (),
    **seed: Any,
) -> Path:
    """A persona folder in the generator's on-disk format, written by hand (no generator code)."""
    folder = root / pid
    folder.mkdir(parents=True)
    base = {"id": pid, "name": f"Name {pid}", "age": 40, "sex": "female", "household": "living alone",
            "education": "bachelor's degree", "occupation": "office clerk", "goals": []}  # fmt: skip
    persona = {"id": pid, "seed": base | seed, "window_start": START, "window_days": 90, "interview": []}
    (folder / "persona.json").write_text(json.dumps(persona))
    rows = []
    for n, f in enumerate(facts, 1):
        label, vf, vt = (f, None, None) if isinstance(f, str) else f
        rows.append(_fact(pid, n, label, vf, vt))
    (folder / "facts.json").write_text(json.dumps({"persona_id": pid, "facts": rows}))
    for name, items in (("messenger.jsonl", messages), ("calendar.jsonl", events), ("cases.jsonl", cases)):
        (folder / name).write_text("".join(json.dumps(x) + "\n" for x in items))
    (folder / "clusters.jsonl").write_text("")
    return folder


def msg(mid: str, ts: str, text: str, sender: str = "me", session: str = "s1", kind: str = "filler") -> dict[str, Any]:
    return {"id": mid, "session_id": session, "sender": sender, "recipients": ["x"], "timestamp": ts, "text": text,
            "kind": kind, "fragment_id": None}  # fmt: skip


def event(eid: str, start: str, end: str, title: str, notes: str = "", kind: str = "evidence") -> dict[str, Any]:
    return {"id": eid, "title": title, "start": start, "end": end, "notes": notes, "kind": kind, "fragment_id": None}


def found(report: RealismReport, check: str, **where: str) -> list[Finding]:
    return [f for f in report.findings if f.check == check and all(getattr(f, k) == v for k, v in where.items())]


def test_shared_facts_between_personas(tmp_path: Path) -> None:
    common = [f"shared fact number {i}" for i in range(8)]
    write_persona(tmp_path, "p001", facts=[*common, "only p001 a", "only p001 b"])
    write_persona(tmp_path, "p002", facts=[*common, "only p002 a", "only p002 b"])
    write_persona(tmp_path, "p003", facts=["shared fact number 0", *(f"p003 own {i}" for i in range(9))])
    report = audit_set(tmp_path)
    sf = report.figures["shared_facts"]
    # ordered pairs: p1-p2 and p2-p1 share 0.8, the four pairs with p3 share 0.1
    assert sf["mean_pairwise"] == pytest.approx((0.8 * 2 + 0.1 * 4) / 6, abs=1e-3)
    assert sf["in_every_persona"] == ["shared fact number 0"]
    hit = found(report, "shared_facts", persona="p001", file="facts.json", record="p002", field="label")
    assert hit and "8 of 10" in hit[0].message
    every = found(report, "shared_facts", record="p001-F001")
    assert every and "all 3 personas" in every[0].message
    assert not found(report, "shared_facts", persona="p003", severity="violation")
    assert next(t for t in report.targets() if t["figure"] == "shared_facts.mean_pairwise")["met"] is False


def test_halal_keto_celiac_is_one_diet_too_many(tmp_path: Path) -> None:
    write_persona(tmp_path, "p001", facts=["keeps a halal diet", "follows a low-carb keto diet", "has celiac disease"])
    write_persona(
        tmp_path, "p002", facts=["keeps a halal diet", "has celiac disease", "loves smoking meat on the grill"]
    )
    report = audit_set(tmp_path)
    hit = found(report, "constraints", rule="diet.families", persona="p001", file="facts.json", field="label")
    assert len(hit) == 1 and set(hit[0].record.split(",")) == {"p001-F001", "p001-F002", "p001-F003"}
    # a religious diet beside a medical one is a possible life
    assert not found(report, "constraints", persona="p002")
    assert report.figures["constraints"]["violations"] == 1


def test_old_retiree_with_aging_parent_and_four_childhoods(tmp_path: Path) -> None:
    facts = [
        "is retired",
        "cares for an aging parent",
        "moved constantly as a military kid",
        "spent part of childhood in foster care",
        "grew up on a farm",
        "immigrated to the U.S. as an adult",
        "just became an empty nester",
        "wants to open a bakery",
    ]
    write_persona(tmp_path, "p004", facts=facts, age=79, occupation="retired", household="married, no children at home")
    report = audit_set(tmp_path)
    parent = found(report, "constraints", rule="age.aging_parent_old", persona="p004", record="p004-F002")
    assert parent and parent[0].severity == "suspicious" and parent[0].field == "label, seed.age"
    stories = found(report, "constraints", rule="origin.stories", file="facts.json")
    assert stories and set(stories[0].record.split(",")) == {"p004-F003", "p004-F004", "p004-F005", "p004-F006"}
    assert found(report, "constraints", rule="origin.military_farm", record="p004-F003,p004-F005")
    assert found(report, "constraints", rule="age.new_empty_nest_old", record="p004-F007", severity="violation")
    # retired at 79 with a retired seed is what a retiree is
    assert not [f for f in report.findings if f.check == "constraints" and "p004-F001" in f.record.split(",")]


def test_working_status_against_the_seed(tmp_path: Path) -> None:
    write_persona(tmp_path, "p001", occupation="ICU nurse", facts=["is retired", "works twelve-hour hospital shifts"])
    write_persona(tmp_path, "p002", occupation="not in labor force", age=45,
                  facts=["works twelve-hour hospital shifts", "drives for a delivery app on the side"])  # fmt: skip
    write_persona(tmp_path, "p003", occupation="retired", age=44, goals=["get a promotion"])
    report = audit_set(tmp_path)
    assert found(report, "constraints", rule="work.seed_working_retired", persona="p001", record="p001-F001")
    assert found(report, "constraints", rule="work.retired_job", persona="p001", record="p001-F001,p001-F002")
    assert found(report, "constraints", rule="work.seed_not_working", persona="p002", record="p002-F001")
    assert not found(report, "constraints", persona="p002", record="p002-F002")
    seed = found(report, "constraints", rule="age.seed_retired_young", persona="p003")
    assert seed and seed[0].file == "persona.json" and seed[0].field == "seed.occupation, seed.age"
    assert found(report, "constraints", rule="work.seed_retired_goal", persona="p003")


def test_states_that_follow_each_other_do_not_conflict(tmp_path: Path) -> None:
    write_persona(tmp_path, "p001", facts=[("drinks a lot of coffee", None, "2025-04-10"),
                                           ("quit caffeine", "2025-04-10", None)])  # fmt: skip
    write_persona(tmp_path, "p002", facts=["drinks a lot of coffee", ("quit caffeine", "2025-04-10", None)])
    report = audit_set(tmp_path)
    assert not found(report, "constraints", persona="p001")
    assert found(report, "constraints", rule="diet.caffeine", persona="p002", record="p002-F001,p002-F002")


def test_repeated_filler_line(tmp_path: Path) -> None:
    lines = ["morning!"] * 16 + [f"distinct line {i}" for i in range(4)]
    messages = [msg(f"m{i:03d}", f"2025-03-{3 + i:02d}T09:00:00", t) for i, t in enumerate(lines)]
    write_persona(tmp_path, "p001", messages=messages)
    report = audit_set(tmp_path)
    fil = report.figures["filler"]
    assert fil["messages"] == 20 and fil["distinct_share_min"] == pytest.approx(5 / 20)
    assert fil["top_repeated"][0] == ["morning", 16]
    hit = found(report, "filler", persona="p001", file="messenger.jsonl", record="m000", field="text")
    assert hit and "16 times" in hit[0].message
    assert len(found(report, "filler")) == 1


def test_calendar_note_that_contradicts_its_start(tmp_path: Path) -> None:
    events = [
        event("e001", "2025-03-04T18:00:00", "2025-03-04T19:00:00", "Book club", "at 7pm"),
        event("e002", "2025-03-05T19:00:00", "2025-03-05T20:00:00", "AA meeting", "7pm, church basement"),
        event("e003", "2025-03-06T10:00:00", "2025-03-06T11:00:00", "Mom - cardiology", "pick her up 9:15"),
        event("e004", "2025-03-07T09:00:00", "2025-03-07T10:00:00", "Farmers market", "8am, bring bags"),
        event("e005", "2025-03-08T10:00:00", "2025-03-08T11:00:00", "Astronomy", "quiz due; Farewell lunch: team, 3pm"),
        event("e006", "2025-03-09T17:00:00", "2025-03-09T20:00:00", "DoorDash block", "5-8pm, the dinner rush"),
        event("e007", "2025-03-10T09:00:00", "2025-03-10T10:00:00", "Coffee with sponsor", "Sat 9am"),
        event("e008", "2025-03-11T19:00:00", "2025-03-11T20:00:00", "Sync", "19:00"),
        event("e009", "2025-03-12T21:00:00", "2025-03-12T21:30:00", "Lights out at 9"),
    ]
    write_persona(tmp_path, "p001", events=events)
    report = audit_set(tmp_path)
    hit = found(report, "calendar_notes", persona="p001", file="calendar.jsonl", record="e001", field="notes")
    assert hit and "19:00" in hit[0].message and "18:00" in hit[0].message
    assert found(report, "calendar_notes", record="e004")
    day = found(report, "calendar_notes", record="e007")
    assert day and "Saturday" in day[0].message and "Monday" in day[0].message
    assert {f.record for f in found(report, "calendar_notes")} == {"e001", "e004", "e007"}
    cal = report.figures["calendar_notes"]
    assert cal["contradicting"] == 3 and cal["events_with_claims"] == 7


def test_messages_whose_date_contradicts_their_text(tmp_path: Path) -> None:
    messages = [
        msg("m001", "2025-03-12T10:00:00", "can't believe it's already April"),
        msg("m002", "2025-03-12T11:00:00", "can't believe it's already March"),
        msg("m003", "2025-03-31T11:00:00", "can't believe it's already April"),  # a day before: fine
        msg("m004", "2025-03-11T12:00:00", "happy Friday!!"),  # a Tuesday
        msg("m005", "2025-03-14T12:00:00", "happy Friday!!"),
        msg("m006", "2025-01-15T12:00:00", "this summer heat is killing me"),
        msg("m007", "2025-04-20T12:00:00", "happy Thanksgiving"),
        msg("m008", "2025-03-15T12:00:00", "almost the weekend"),  # a Saturday
        msg("m009", "2025-03-12T12:00:00", "see you in April, it's May 5th for the wedding"),
        msg("m010", "2025-03-12T20:30:00", "morning!"),
        msg("m011", "2025-03-12T16:10:00", "I need a nap and it's noon"),
        msg("m012", "2025-03-12T12:20:00", "I need a nap and it's noon"),
    ]
    write_persona(tmp_path, "p001", messages=messages)
    report = audit_set(tmp_path)
    hit = found(report, "message_dates", persona="p001", file="messenger.jsonl", record="m001", field="text")
    assert hit and hit[0].rule == "month" and "2025-03-12" in hit[0].message
    dated = {f.record: f.rule for f in found(report, "message_dates")}
    assert dated == {"m001": "month", "m004": "weekday", "m006": "season", "m007": "holiday", "m008": "weekday"}
    assert {f.record for f in found(report, "time_of_day")} == {"m010", "m011"}
    md = report.figures["message_dates"]
    assert md["contradicting"] == 5 and md["time_of_day"] == 2
    assert md["by_dimension"] == {"month": 1, "weekday": 2, "season": 1, "holiday": 1}


def test_reply_that_contradicts_the_news(tmp_path: Path) -> None:
    messages = [
        msg("m001", "2025-03-03T10:32:00", "business plan draft 3 is done", "David", "s1", "evidence"),
        msg("m002", "2025-03-03T10:35:00", "ugh that's the worst", "Marcus", "s1", "evidence"),
        msg("m003", "2025-03-04T10:00:00", "got the job!!", "David", "s2"),
        msg("m004", "2025-03-04T10:01:00", "congrats!!", "Marcus", "s2"),
        msg("m005", "2025-03-05T10:00:00", "my dog died this morning", "David", "s3"),
        msg("m006", "2025-03-05T10:01:00", "lol", "Marcus", "s3"),
        msg("m007", "2025-03-06T10:00:00", "the line was long but the transfer is done", "David", "s4"),
        msg("m008", "2025-03-06T10:01:00", "ugh that's the worst", "Marcus", "s4"),
        msg("m009", "2025-03-07T10:00:00", "did you get the job?", "David", "s5"),
        msg("m010", "2025-03-07T10:01:00", "oh no", "David", "s5"),  # same sender: not a reply
    ]
    write_persona(tmp_path, "p001", messages=messages)
    report = audit_set(tmp_path)
    hit = found(report, "replies", persona="p001", file="messenger.jsonl", record="m002", field="text")
    assert hit and "m001" in hit[0].message and "good news" in hit[0].message
    assert {f.record for f in found(report, "replies")} == {"m002", "m006"}
    assert report.figures["replies"] == {"pairs": 4, "contradicting": 2}


def test_unreadable_input_is_located(tmp_path: Path) -> None:
    folder = write_persona(tmp_path, "p001", facts=["grew up on a farm"])
    (folder / "messenger.jsonl").write_text('{"id": "m1", "text": "hi", "timestamp": "2025-03-03T10:00:00"}\n{oops\n')
    (folder / "cases.jsonl").unlink()
    report = audit_set(tmp_path)
    assert found(report, "input", persona="p001", file="messenger.jsonl", record="line 2")
    assert found(report, "input", file="cases.jsonl", severity="info")
    with pytest.raises(RealismInputError, match="not a folder"):
        audit_set(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RealismInputError, match="no persona folder"):
        audit_set(empty)
    result = CliRunner().invoke(realism, [str(empty)])
    assert result.exit_code == 2 and "no persona folder" in result.output


def test_audit_shares_no_code_with_the_sampler() -> None:
    tree = ast.parse(Path(R.__file__).read_text())
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    modules |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not [m for m in modules if m and m.startswith("hippocamp")], modules


def test_generated_set_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "set"
    made = CliRunner().invoke(main, ["synth", "personas", "--n", "2", "--out", str(out), "--seed", "1"])
    assert made.exit_code == 0, made.output
    result = CliRunner().invoke(realism, [str(out), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["personas"] == ["p001", "p002"]
    assert {t["figure"] for t in data["targets"]} == set(R.TARGETS)
    figures = data["figures"]
    for group in (
        "shared_facts",
        "constraints",
        "filler",
        "calendar_notes",
        "message_dates",
        "split",
        "cases",
        "replies",
    ):
        assert group in figures, group
    assert figures["shared_facts"]["mean_pairwise"] is not None
    assert figures["split"]["messenger"] + figures["split"]["calendar"] > 0
    assert set(figures["cases"]["by_type"]) >= {"T1", "T2", "T3", "T4", "T5"}
    assert all({"persona", "file", "record", "field", "message"} <= set(f) for f in data["findings"])
    report = audit_set(out)
    json.dumps(report.as_dict())
    # fixed in the generator (issue 20): every event starts when its title and notes say it does
    assert not [f for f in data["findings"] if f["check"] == "calendar_notes"]
    # T1 asks of both apps (every third case of the calendar)
    t1 = figures["cases"]["by_type"]["T1"]["sources"]
    assert t1["calendar_only"] >= 2 and t1["messenger_only"] > t1["calendar_only"]
    # and no message names a weekday or month its send date contradicts
    assert not [f for f in data["findings"] if f["check"] == "message_dates" and f["rule"] in ("weekday", "month")]
    page = CliRunner().invoke(realism, [str(out)])
    assert page.exit_code == 0 and page.output.startswith("# Realism audit") and "| T4 |" in page.output
