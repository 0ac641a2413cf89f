"""Recoverability measured by retrieval: a fact's question, searched over the persona's logs, must find
one of its fragments in the top k; clusters the search misses are written again, up to three attempts,
and the set's summary reports at which attempt fragments passed and how many were rejected."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from hippocamp.schema.pcontext import (
    Circle,
    Cluster,
    Fact,
    Fragment,
    FragmentLine,
    Persona,
    SetSummary,
    VerificationReport,
    VerifierAttempt,
)
from hippocamp.synth.personas import SetConfig, run_set
from hippocamp.synth.personas import recover as R
from hippocamp.synth.personas.artifacts import load, load_jsonl
from hippocamp.synth.personas.cases import ask
from hippocamp.synth.personas.fragments import LogContext, template_fragments
from hippocamp.synth.personas.pipeline import MAX_ATTEMPTS
from hippocamp.synth.personas.seeds import sample_seeds

SMALL = {"facts": 25, "days": 14, "contacts": 2, "recovery": "enforce"}
FILES = ("clusters.jsonl", "messenger.jsonl", "calendar.jsonl", "cases.jsonl", "verification.json")


def _persona() -> Persona:
    seed = sample_seeds(1, 0)[0]
    return Persona(id=seed.id, seed=seed, summary="", window_start=datetime(2025, 3, 3).date(), window_days=30,
                   interview=[])  # fmt: skip


def _fact(fid: str = "p001-F001") -> Fact:
    # no bank spec: the question is about the category ("What can you tell about a hobby Danielle spends time on?")
    return Fact(id=fid, category="hobby", label="plays the theremin", cues=["theremin"])


def _message(fid: str, text: str, fact: str = "p001-F001") -> Fragment:
    return Fragment(id=fid, cluster_id="c01", app="messenger", fact_ids=[fact], at=datetime(2025, 3, 5, 9),
                    contact_ids=["c1"], lines=[FragmentLine(sender="me", text=text)])  # fmt: skip


def _filler(n: int = 60) -> list[R.LogItem]:
    words = ["groceries", "traffic", "weather", "coffee", "meeting", "laundry", "dinner", "movie", "rent", "bus"]
    return [R.LogItem(f"m{i:03d}", None, f"the {words[i % 10]} was {words[(i * 3) % 10]} again, {i}") for i in range(n)]


def _rank(fragments: list[Fragment], persona: Persona, fact: Fact) -> int | None:
    index = R.LogIndex([*_filler(), *R.fragment_items(fragments)])
    try:
        return R.fact_ranks(index, persona, [fact], R.support_of(fragments))[fact.id]
    finally:
        index.close()


def test_a_fragment_the_question_does_not_find_is_rejected_and_one_it_finds_passes() -> None:
    persona, fact = _persona(), _fact()
    question = ask(fact, persona)
    assert "hobby" in question.lower()
    hidden = [_message("p001-c01-f1", "practised the theremin for an hour, neighbours complained")]
    found = [_message("p001-c01-f1", "my new hobby: an hour of theremin every evening")]
    lexical = VerifierAttempt(attempt=1, recovered={fact.id: 1.0}, passed=True)
    miss = R.verdict(lexical, {fact.id: _rank(hidden, persona, fact)})
    hit = R.verdict(lexical, {fact.id: _rank(found, persona, fact)})
    assert not miss.passed and miss.recovered[fact.id] == 0.0 and miss.ranks[fact.id] is None
    assert hit.passed and hit.ranks[fact.id] == 1 and hit.verifier == f"lexical+retrieval@{R.RECOVERY_K}"
    assert R.checked(hit) and not R.checked(lexical)
    # a fragment found, but below the first k, still fails; a lexical failure is never rescued
    assert not R.verdict(lexical, {fact.id: R.RECOVERY_K + 1}).passed
    assert not R.verdict(lexical.model_copy(update={"passed": False}), {fact.id: 1}).passed
    measured_only = R.verdict(lexical, {fact.id: None}, enforce=False)
    assert measured_only.passed and measured_only.ranks == {fact.id: None} and R.checked(measured_only)
    notes = R.feedback(miss, [fact], persona)
    assert len(notes) == 1 and fact.id in notes[0] and question in notes[0]


def test_only_the_facts_own_fragments_count() -> None:
    persona, fact, other = _persona(), _fact(), _fact("p001-F002")
    frags = [_message("p001-c01-f1", "my new hobby: an hour of theremin", fact=other.id)]
    assert _rank(frags, persona, fact) is None and _rank(frags, persona, other) is not None


def test_the_search_is_the_stores_bm25_over_what_an_agent_sees() -> None:
    items = [R.LogItem("m1", None, "Running late"), R.LogItem("e1", "f1", "Dentist\nMain St\nbring the forms")]
    index = R.LogIndex(items)
    try:
        assert [i.id for i in index.search("Who is running late?")] == ["m1"]  # stop words dropped, stemmed
        assert [i.id for i in index.search("which forms to bring")] == ["e1"]  # an event's notes are searched
    finally:
        index.close()


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[SetConfig, SetSummary]:
    cfg = SetConfig(out=tmp_path_factory.mktemp("rec") / "set", n=5, seed=2, **SMALL)  # type: ignore[arg-type]
    return cfg, run_set(cfg)


def _context(cfg: SetConfig, pid: str) -> LogContext:
    from hippocamp.schema.pcontext import FactsFile

    d = cfg.out / pid
    persona, facts, circle = (
        load(d / "persona.json", Persona),
        load(d / "facts.json", FactsFile),
        load(d / "circle.json", Circle),
    )
    assert persona and facts and circle
    return LogContext(cfg.seed, persona, facts.facts, circle, cfg.filler_ratio, cfg.decoy_share)


def test_regeneration_rewrites_missed_clusters_and_records_every_attempt(small: tuple[SetConfig, SetSummary]) -> None:
    cfg, _ = small
    rewritten = 0
    for pid in [f"p00{i}" for i in range(1, 6)]:
        ctx = _context(cfg, pid)
        clusters = load_jsonl(cfg.out / pid / "clusters.jsonl", Cluster)
        assert clusters is not None
        for c in clusters:
            numbers = [a.attempt for a in c.attempts]
            assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) <= MAX_ATTEMPTS
            assert all(R.checked(a) and set(a.ranks) == set(c.fact_ids) for a in c.attempts)
            assert all(not a.passed for a in c.attempts[:-1])  # written again only after a failure
            assert (c.outcome == "verified") == c.attempts[-1].passed
            if c.outcome == "failed":
                assert len(c.attempts) == MAX_ATTEMPTS
            if len(c.attempts) > 1:
                rewritten += 1
                first = template_fragments(ctx, c.id, c.fact_ids, 1)
                assert [f.model_dump() for f in c.fragments] != [f.model_dump() for f in first]
    assert rewritten > 0


def test_summary_reports_attempt_shares_and_rejections(small: tuple[SetConfig, SetSummary]) -> None:
    cfg, summary = small
    assert summary.recovery_k == R.RECOVERY_K and summary.verifier.endswith(f"retrieval@{R.RECOVERY_K}")
    retained = sum(summary.fragments_by_attempt.values())
    assert retained == summary.fragments
    if retained:
        assert abs(sum(summary.fragment_attempt_shares.values()) - 1.0) < 1e-3
    retried = summary.fragments_by_attempt["2"] + summary.fragments_by_attempt["3"]
    assert retried + summary.fragments_rejected > 0  # the check rejects some template fragments
    for pid in [f"p00{i}" for i in range(1, 6)]:
        report = load(cfg.out / pid / "verification.json", VerificationReport)
        assert report is not None
        check = next(c for c in report.checks if c.name == "recoverability")
        assert check.passed and check.measured["k"] == R.RECOVERY_K
        assert set(report.recovery_ranks) == {
            f for c in load_jsonl(cfg.out / pid / "clusters.jsonl", Cluster) or [] if c.outcome == "verified"
            for f in c.fact_ids
        }  # fmt: skip


def test_same_seed_same_files_and_resume_replays_the_rounds(
    small: tuple[SetConfig, SetSummary], tmp_path: Path
) -> None:
    cfg, _ = small
    again = SetConfig(out=tmp_path / "again", n=2, seed=2, **SMALL)  # type: ignore[arg-type]
    run_set(again)
    for pid in ("p001", "p002"):
        for name in FILES:
            assert (cfg.out / pid / name).read_bytes() == (again.out / pid / name).read_bytes(), (pid, name)
    # a kill during stage 4: only the first writings of some clusters are on disk (no search results)
    d = again.out / "p002"
    before = {n: (d / n).read_bytes() for n in FILES}
    ctx = _context(again, "p002")
    firsts = [template_fragments(ctx, c.id, c.fact_ids, 1) for c in load_jsonl(d / "clusters.jsonl", Cluster) or []]
    assert firsts
    final = load_jsonl(d / "clusters.jsonl", Cluster) or []
    partial = []
    for c, frags in zip(final[:3], firsts[:3], strict=True):
        written = c.attempts[0].model_copy(update={"verifier": "lexical", "ranks": {}, "passed": True})
        partial.append(c.model_copy(update={"fragments": frags, "attempts": [written], "outcome": "verified"}))
    (d / "clusters.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in partial), encoding="utf-8")
    (d / "messenger.jsonl").unlink()
    run_set(again)
    for name in FILES:
        assert (d / name).read_bytes() == before[name], name
