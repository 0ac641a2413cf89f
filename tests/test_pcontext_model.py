"""P-ContextBench generation, model mode and durability: model-written filler, decoys and T1-T3 cases
through a scripted mock (checked, topped up, resumed), give-up and answer caps, a real ``kill -9`` in
the middle of a template set, the ``.ics`` read back through perception, and (slow) a whole persona
against a real llama.cpp server (HIPPOCAMP_TEST_SERVER, or one started here)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from hippocamp.models import ModelError, get_model
from hippocamp.schema.pcontext import CalendarEvent, Case, Cluster, FactsFile, Message, VerificationReport
from hippocamp.synth.personas import SetConfig, run_set
from hippocamp.synth.personas import verify as V
from hippocamp.synth.personas.artifacts import load as _load
from hippocamp.synth.personas.artifacts import load_jsonl as _load_jsonl
from hippocamp.synth.personas.filler import WrittenBatch
from hippocamp.synth.personas.logs import render_ics

FAKE_FRAGMENT = "p001-c99-f9"


def _stage(request) -> str:  # type: ignore[no-untyped-def]
    return request.messages[0]["content"].splitlines()[0].removeprefix("# stage: ").strip()


def _filler(payload: dict, n: int) -> dict:
    contacts = [c["id"] for c in payload["contacts"]]
    items: list[dict] = []
    for k in range(payload["count"]):
        cid = contacts[k % len(contacts)]
        if k % 2 == 0:
            items.append({"app": "messenger", "contact_id": cid, "lines": [
                {"sender": "me", "text": f"did you catch the thing about {payload['topics'][0]}, take {n}.{k}?"},
                {"sender": cid, "text": f"ha yes, sent you the link {n}.{k}"}]})  # fmt: skip
        else:
            items.append({"app": "calendar", "title": f"Movie night {n}.{k}", "notes": "bring snacks",
                          "location": "the den", "minutes": 120})  # fmt: skip
    items.append({"app": "messenger", "contact_id": contacts[0],
                  "lines": [{"sender": "me", "text": f"so about {payload['avoid'][0]} lately"}]})  # fmt: skip
    items.append({"app": "messenger", "contact_id": "nobody", "lines": [{"sender": "me", "text": "hello there"}]})
    return {"items": items}


def _decoys(payload: dict, n: int) -> dict:
    people, cues, cid = payload["people"], payload["cues"], payload["contacts"][0]["id"]
    items: list[dict] = []
    for k in range(payload["count"]):
        p, cue = people[(n + k) % len(people)], cues[k % len(cues)]
        if k % 2 == 0:
            text = f"{p} is sorting out the {cue} again, take {n}.{k}"
            items.append({"app": "messenger", "about": p, "contact_id": cid,
                          "lines": [{"sender": cid, "text": text}]})  # fmt: skip
        else:
            items.append({"app": "calendar", "about": p, "title": f"{p}: {cue} ({n}.{k})",
                          "notes": f"{p} asked for a ride", "minutes": 60})  # fmt: skip
    p, cue = people[0], cues[0]
    items.append({"app": "messenger", "about": p, "contact_id": cid,
                  "lines": [{"sender": "me", "text": f"I have the {cue} with {p} today"}]})  # first person  # fmt: skip
    items.append({"app": "messenger", "about": p, "contact_id": cid,
                  "lines": [{"sender": cid, "text": f"{p} says hi {n}"}]})  # no cue: not a decoy  # fmt: skip
    return {"items": items}


def _recall(payload: dict) -> dict:
    name, facts = payload["name"], payload["facts"]
    by_id = {f["id"]: f for f in facts}
    static = [f for f in facts if not f.get("prior_of") and "valid_from" not in f]
    cases = []
    chatty = [f for f in static if any(x["app"] == "messenger" for x in f["fragments"])]
    for k, f in enumerate(chatty[:3], start=1):
        msg = [x["id"] for x in f["fragments"] if x["app"] == "messenger"]
        cases.append({"type": "T1", "question": f"What do {name}'s chats hint about {f['category']} ({k})?",
                      "fact_ids": [f["id"]], "supporting_fragments": msg})  # fmt: skip
    both = [f for f in static if {x["app"] for x in f["fragments"]} == {"messenger", "calendar"}]
    for k, (f, g) in enumerate(zip(both[3:5], both[5:7], strict=False), start=1):  # T2 joins two facts
        cases.append({"type": "T2", "question": f"Across apps, what does {name} deal with ({k})?",
                      "fact_ids": [f["id"], g["id"]],
                      "supporting_fragments": [x["id"] for h in (f, g) for x in h["fragments"]]})  # fmt: skip
    for f in facts:
        if f.get("prior_of") in by_id:
            frags = [x["id"] for g in (f, by_id[f["prior_of"]]) for x in g["fragments"]]
            cases.append({"type": "T3", "question": f"What changed for {name} around {f['category']}?",
                          "fact_ids": [f["id"], f["prior_of"]], "supporting_fragments": frags})  # fmt: skip
    f = static[0]
    cases += [
        {"type": "T1", "question": f"Where did {name} mention {f['category']} stuff?", "fact_ids": [f["id"]],
         "supporting_fragments": [FAKE_FRAGMENT]},
        {"type": "T1", "question": f"Is it true that {name} {f['label']}?", "fact_ids": [f["id"]],
         "supporting_fragments": [x["id"] for x in f["fragments"]][:1]},
        {"type": "T2", "question": f"What about {name} and nope?", "fact_ids": ["nope"], "supporting_fragments": []},
    ]  # fmt: skip
    return {"cases": cases}


def _script(fail: tuple[str, ...] = ("interview", "circle", "fragments", "cases")):  # type: ignore[no-untyped-def]
    """Stages in ``fail`` answer with an outage (the templates stand in); filler, decoys and T1-T3 are scripted."""
    calls: Counter[str] = Counter()

    def respond(request):  # type: ignore[no-untyped-def]
        stage = _stage(request)
        calls[stage] += 1
        if stage in fail:
            return ModelError("server down", "mock")
        payload = json.loads(request.messages[-1]["content"])
        if stage == "filler":
            return json.dumps(_filler(payload, payload["batch"]))
        if stage == "decoys":
            return json.dumps(_decoys(payload, payload["batch"]))
        if stage == "cases_recall":
            return json.dumps(_recall(payload))
        raise AssertionError(stage)

    return respond, calls


def _report(d: Path) -> VerificationReport:
    report = _load(d / "verification.json", VerificationReport)
    assert report is not None
    return report


def _check(report: VerificationReport, name: str):  # type: ignore[no-untyped-def]
    return next(c for c in report.checks if c.name == name)


@pytest.fixture(scope="module")
def mset(tmp_path_factory: pytest.TempPathFactory) -> tuple[SetConfig, Counter[str]]:
    respond, calls = _script()
    model = get_model("mock", outputs=respond)
    cfg = SetConfig(
        out=tmp_path_factory.mktemp("pcm") / "set", n=1, seed=11, days=30, model="mock", concurrency=1, decoy_share=0.3
    )
    run_set(cfg, model=model)
    return cfg, calls


def test_model_filler_and_decoys_are_checked_and_topped_up(mset: tuple[SetConfig, Counter[str]]) -> None:
    cfg, calls = mset
    d = cfg.out / "p001"
    report = _report(d)
    assert report.passed, [c for c in report.checks if not c.passed]
    assert _check(report, "filler_ratio").passed and _check(report, "decoy_share").passed
    batches = _load_jsonl(d / "model_filler.jsonl", WrittenBatch)
    assert batches and len({b.id for b in batches}) == len(batches)
    assert calls["filler"] == sum(b.kind == "filler" for b in batches) and calls["decoys"] >= 1
    for b in batches:  # each batch's planted bad items were refused, with the reason
        if b.kind == "filler":
            assert any("names fact" in r for r in b.rejected) and any("unknown contact" in r for r in b.rejected)
        else:
            assert any("first person" in r for r in b.rejected) and any("not a decoy" in r for r in b.rejected)
    messages = _load_jsonl(d / "messenger.jsonl", Message) or []
    events = _load_jsonl(d / "calendar.jsonl", CalendarEvent) or []
    facts = (_load(d / "facts.json", FactsFile) or FactsFile(persona_id="", facts=[])).facts
    assert not any(m.text.startswith("so about ") or m.text.startswith("I have the ") for m in messages)
    written = [m for m in messages if m.text.startswith("did you catch the thing about")]
    assert written and all(m.kind == "filler" for m in written)
    model_decoys = [(m, m.text) for m in messages if " is sorting out the " in m.text]
    model_decoys += [(e, e.title) for e in events if re.search(r"\(\d+\.\d+\)$", e.title)]
    assert {type(x) for x, _ in model_decoys} == {Message, CalendarEvent}
    assert all(x.kind == "decoy" and x.about and text.startswith(x.about) for x, text in model_decoys)
    for item in [*messages, *events]:
        if item.kind != "evidence":
            assert not V.find_leaks(item.text if isinstance(item, Message) else f"{item.title}\n{item.notes}", facts)
    measured = _check(report, "provenance").measured
    for kind in ("filler", "decoy"):
        assert measured[f"{kind}_tokens_model"] > 0 and measured[f"{kind}_items_refused"] >= 2
        assert measured[f"{kind}_batches_model"] == sum(b.kind == kind for b in batches)
    t = V.kind_tokens([*messages, *events])
    assert measured["filler_tokens_model"] + measured["filler_tokens_template"] == t["filler"]
    assert measured["decoy_tokens_model"] + measured["decoy_tokens_template"] == t["decoy"]
    assert measured["persona"] == "template" and measured["clusters_model"] == 0
    assert measured["calls_filler_model"] == calls["filler"] and measured["calls_interview_fallback"] == 1


def test_model_recall_cases_checked_and_template_fills_the_rest(mset: tuple[SetConfig, Counter[str]]) -> None:
    cfg, _ = mset
    d = cfg.out / "p001"
    report = _report(d)
    cases = _load_jsonl(d / "cases.jsonl", Case) or []
    model = [c for c in cases if c.id.rsplit("-", 1)[-1].startswith("m")]
    assert {c.type for c in model} == {"T1", "T2", "T3"}
    assert {c.type for c in cases} == {"T1", "T2", "T3", "T4", "T5"}  # T4/T5 came from the templates
    facts = {f.id: f for f in (_load(d / "facts.json", FactsFile) or FactsFile(persona_id="", facts=[])).facts}
    clusters = _load_jsonl(d / "clusters.jsonl", Cluster) or []
    real = {fr.id for c in clusters for fr in c.fragments}
    for c in model:  # keys come from the facts, fragments are real ones
        assert c.labels == [facts[f].label for f in c.fact_ids] and set(c.supporting_fragments) <= real
        if c.type == "T3":
            prior, current = sorted((facts[f] for f in c.fact_ids), key=lambda f: f.prior_of is None)
            assert (c.prior_state, c.current_state, c.changed_on) == (prior.label, current.label, current.valid_from)
    rejected = report.rejected_cases
    assert any(r.endswith(f"ungrounded: fragment {FAKE_FRAGMENT} is not in the logs") for r in rejected)
    assert any("gives the answer away" in r for r in rejected)
    assert any(r.endswith("unknown fact(s) nope") for r in rejected)
    assert not any(FAKE_FRAGMENT in c.supporting_fragments for c in cases)
    measured = _check(report, "provenance").measured
    assert measured["cases_model"] == len(model) and measured["cases_template"] == len(cases) - len(model)
    assert any(f.startswith("cases: T4-T5: ModelError") for f in report.fallbacks)


def test_model_filler_resumes_from_its_batches(mset: tuple[SetConfig, Counter[str]], tmp_path: Path) -> None:
    cfg, _ = mset
    out = tmp_path / "set"
    shutil.copytree(cfg.out, out)
    d = out / "p001"
    before = {n: (d / n).read_bytes() for n in ("messenger.jsonl", "calendar.jsonl", "calendar.ics")}
    path = d / "model_filler.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # killed while appending
    for name in ("messenger.jsonl", "cases.jsonl", "verification.json"):
        (d / name).unlink()
    respond, calls = _script()
    run_set(SetConfig(out=out, n=1, seed=11, days=30, model="mock", concurrency=1, decoy_share=0.3),
            model=get_model("mock", outputs=respond))  # fmt: skip
    assert calls["filler"] + calls["decoys"] == 1  # only the cut batch was asked again
    assert calls["fragments"] == 0 and calls["interview"] == 0  # earlier stages were kept
    assert path.read_bytes().count(b"\n") == len(lines) and path.read_bytes().endswith(b"\n")
    for name, data in before.items():
        assert (d / name).read_bytes() == data, name
    assert _report(d).passed


def test_outage_gives_up_per_stage_and_caps_answers(tmp_path: Path) -> None:
    model = get_model("mock", outputs=lambda request: ModelError("server down", "mock"), max_concurrency=1)
    cfg = SetConfig(
        out=tmp_path / "m", n=1, seed=2, days=21, model="mock", concurrency=1, give_up=2, max_tokens=50, decoy_share=0.3
    )
    summary = run_set(cfg, model=model)
    assert summary.personas_passed == 1
    report = _report(cfg.out / "p001")
    measured = _check(report, "provenance").measured
    for stage in ("fragments", "filler", "decoys"):
        assert measured[f"calls_{stage}_fallback"] == 2 and measured[f"calls_{stage}_skipped"] >= 1, stage
    skipped = [f for f in report.fallbacks if "not asked" in f]
    assert {f.split()[0] for f in skipped} >= {"fragments", "filler", "decoys"}
    assert all("server down" in f for f in report.fallbacks)
    assert measured["filler_tokens_model"] == 0 and measured["filler_tokens_template"] > 0
    assert not (cfg.out / "p001" / "model_filler.jsonl").read_bytes()  # nothing accepted, nothing kept
    sent = model.backend.requests  # type: ignore[attr-defined]
    assert sent and all(r.max_tokens is not None and r.max_tokens <= 50 for r in sent)
    per_stage = Counter(_stage(r) for r in sent)
    for stage, n in per_stage.items():  # every request is an answer counted as fallen back ...
        if stage != "interview":
            assert n == measured[f"calls_{stage}_fallback"], stage
    assert per_stage["interview"] == 1  # ... and the interview's first topic is a probe: no other topic was asked


# ------------------------------------------------------------------------------------- kill -9, resume


def _cli(out: Path) -> list[str]:
    return [sys.executable, "-m", "hippocamp", "synth", "personas", "--n", "3", "--out", str(out), "--seed", "5",
            "--days", "30"]  # fmt: skip


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("when", ["clusters", "persona"])
def test_kill_9_then_resume_is_byte_identical(tmp_path: Path, when: str) -> None:
    """kill -9 once the first persona's clusters.jsonl has lines (mid stage 4), or once the first
    persona is finished; the re-run must give exactly the files of an uninterrupted run."""
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    env = dict(os.environ)
    proc = subprocess.Popen(_cli(killed), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    marker = killed / "p001" / ("clusters.jsonl" if when == "clusters" else "verification.json")
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if marker.is_file() and marker.stat().st_size > 0:
                break
            time.sleep(0.002)
        assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read().decode()}"  # type: ignore[union-attr]
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=10)
        proc.stderr.close()  # type: ignore[union-attr]
    assert proc.returncode == -signal.SIGKILL
    assert not (killed / "summary.json").exists() and not (killed / "p003" / "verification.json").exists()
    again = subprocess.run(_cli(killed), env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    ref = subprocess.run(_cli(whole), env=env, capture_output=True, text=True, timeout=120)
    assert ref.returncode == 0, ref.stderr
    got, want = _tree(killed), _tree(whole)
    assert sorted(got) == sorted(want)  # no leftover temporary file, nothing missing
    assert [n for n in want if got[n] != want[n]] == []
    for name, data in got.items():
        if name.endswith(".jsonl"):
            rows = [json.loads(x) for x in data.splitlines()]
            ids = [r.get("id") for r in rows]
            assert len(ids) == len(set(ids)), f"duplicated rows in {name}"


# --------------------------------------------------------------------------------- .ics read back


def _read_ics(d: Path) -> list:  # type: ignore[type-arg]
    from hippocamp.perceive.run import perceive_file

    result = perceive_file(d, "calendar.ics")
    assert result.status == "ok" and result.reader == "ics" and not result.notes, (result.status, result.reason)
    return result.segments


def test_persona_calendar_ics_reads_back_through_perception(tmp_path: Path) -> None:
    cfg = SetConfig(out=tmp_path / "set", n=1, seed=3, days=21)
    run_set(cfg)
    d = cfg.out / "p001"
    events = _load_jsonl(d / "calendar.jsonl", CalendarEvent) or []
    segments = _read_ics(d)
    assert events and len(segments) == len(events)
    by_uid = {s.meta["uid"]: s for s in segments}
    for e in events:
        seg = by_uid[f"{e.id}@p001.pcontext"]
        assert seg.meta["summary"] == e.title
        assert seg.meta["start"] == e.start.isoformat() and seg.meta["end"] == e.end.isoformat()
        assert (seg.meta.get("location") or "") == e.location
        assert e.title in seg.text and (not e.notes or e.notes in seg.text)
        assert e.start.strftime("%Y-%m-%d %H:%M") in seg.text
        assert [a.split(" <")[0] for a in seg.meta.get("attendees") or []] == e.attendees


def test_ics_escaping_and_folding_read_back(tmp_path: Path) -> None:
    start = datetime(2025, 3, 4, 9, 30)
    tricky = [
        CalendarEvent(id="e0001", title="Lunch; Bo, Ann \\ co", start=start, end=start + timedelta(minutes=45),
                      location="Café Ümlaut, 3rd floor", notes="bring: forks; napkins\nsecond line", kind="filler",
                      attendees=["Ann Lowe", "Bo Diaz"]),
        CalendarEvent(id="e0002", title=("Long " + "naïve résumé review " * 12).strip(), kind="evidence",
                      start=start + timedelta(days=1), end=start + timedelta(days=1, hours=2), notes="x" * 300),
    ]  # fmt: skip
    (tmp_path / "calendar.ics").write_text(render_ics(tricky, "p009", "Zoë's calendar"), encoding="utf-8", newline="")
    raw = (tmp_path / "calendar.ics").read_bytes()
    assert all(len(line) <= 75 for line in raw.split(b"\r\n"))  # folded at 75 octets
    segments = {s.meta["uid"]: s for s in _read_ics(tmp_path)}
    for e in tricky:
        seg = segments[f"{e.id}@p009.pcontext"]
        assert seg.meta["summary"] == e.title and (seg.meta.get("location") or "") == e.location
        assert seg.meta["start"] == e.start.isoformat() and seg.meta["calendar"] == "Zoë's calendar"
        assert e.notes in seg.text


# ------------------------------------------------------------------------------- a real server (slow)


MODEL_STAGES = ("interview", "circle", "fragments", "decoys", "filler", "cases_recall", "cases")


@pytest.mark.slow
def test_model_mode_against_a_real_server(server_url: str, tmp_path: Path) -> None:
    """One persona in model mode against a real OpenAI-compatible server: each stage is asked once
    (give_up=1) with short answers (max_tokens) so that it runs in about a minute; whatever the model
    answers, every stage ends in model output or a recorded fallback and the persona passes every check."""
    spec = f"openai-compatible:smollm2@{server_url}"
    model = get_model(spec, max_concurrency=1)
    cfg = SetConfig(out=tmp_path / "set", n=1, seed=3, days=14, model=spec, concurrency=1, give_up=1, max_tokens=48,
                    decoy_share=0.3)  # fmt: skip
    started = time.monotonic()
    summary = run_set(cfg, model=model)
    elapsed = time.monotonic() - started
    d = cfg.out / "p001"
    for name in ("persona.json", "facts.json", "circle.json", "clusters.jsonl", "messenger.jsonl",
                 "calendar.jsonl", "calendar.ics", "cases.jsonl", "verification.json"):  # fmt: skip
        assert (d / name).is_file(), name
    report = _report(d)
    assert report.passed and summary.personas_passed == 1, [c for c in report.checks if not c.passed]
    measured = _check(report, "provenance").measured
    assert measured["generator"] == f"model:{spec}"
    for stage in MODEL_STAGES:  # each stage asked once, then either used or recorded as fallen back
        used = measured.get(f"calls_{stage}_model", 0)
        failed = measured.get(f"calls_{stage}_fallback", 0)
        assert used + failed == 1, (stage, measured)
        if failed:
            assert any(f.split(":")[0].split()[0] in (stage, "persona", "cases") for f in report.fallbacks)
    assert len(report.fallbacks) >= sum(measured.get(f"calls_{s}_fallback", 0) for s in MODEL_STAGES)
    assert model.usage.calls >= 1  # the server really answered
    print(f"model mode against {server_url}: {elapsed:.1f} s, {model.usage.calls} calls")
