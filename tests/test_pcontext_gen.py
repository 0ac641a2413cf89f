"""P-ContextBench construction: template mode end to end, every check failing on crafted bad input,
model mode through the scripted mock, seeds (filters, files), determinism and resume."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from hippocamp.schema.pcontext import (
    BOUNDARIES,
    CATEGORIES,
    MECHANISMS,
    CalendarEvent,
    Case,
    Circle,
    Cluster,
    Fact,
    FactsFile,
    Message,
    Persona,
    SetSummary,
    VerificationReport,
)
from hippocamp.synth.personas import SetConfig, parse_filter, read_seed_file, run_set, sample_seeds
from hippocamp.synth.personas import verify as V
from hippocamp.synth.personas.artifacts import load as _load
from hippocamp.synth.personas.artifacts import load_jsonl as _load_jsonl
from hippocamp.synth.personas.banks import fact_bank, interview_bank, phrase_bank
from hippocamp.synth.personas.cases import PER_TYPE, CaseContext, ask, change_topic, template_cases
from hippocamp.synth.personas.facts import bank, fact_from_spec, spec_of
from hippocamp.synth.personas.seeds import SeedError

ARTIFACTS = (
    "persona.json",
    "facts.json",
    "circle.json",
    "clusters.jsonl",
    "messenger.jsonl",
    "calendar.jsonl",
    "calendar.ics",
    "cases.jsonl",
    "verification.json",
)


@pytest.fixture(scope="module")
def tset(tmp_path_factory: pytest.TempPathFactory) -> tuple[SetConfig, SetSummary]:
    out = tmp_path_factory.mktemp("pc") / "set"
    cfg = SetConfig(out=out, n=3, seed=7, decoy_share=0.3)  # decoys on: their checks are exercised
    return cfg, run_set(cfg)


def _persona(d: Path) -> dict:
    return {
        "persona": _load(d / "persona.json", Persona),
        "facts": _load(d / "facts.json", FactsFile).facts,  # type: ignore[union-attr]
        "circle": _load(d / "circle.json", Circle),
        "clusters": _load_jsonl(d / "clusters.jsonl", Cluster),
        "messages": _load_jsonl(d / "messenger.jsonl", Message),
        "events": _load_jsonl(d / "calendar.jsonl", CalendarEvent),
        "cases": _load_jsonl(d / "cases.jsonl", Case),
        "report": _load(d / "verification.json", VerificationReport),
    }


# --------------------------------------------------------------------------------------- template mode


def test_template_set_end_to_end(tset: tuple[SetConfig, SetSummary]) -> None:
    cfg, summary = tset
    assert summary.personas == 3 and summary.personas_passed == 3 and not summary.failed_personas
    totals = {"facts": 0, "cases": 0, "fragments": 0}
    for pid in ("p001", "p002", "p003"):
        d = cfg.out / pid
        for name in ARTIFACTS:
            assert (d / name).is_file(), name
        p = _persona(d)
        assert all(v is not None for v in p.values())  # every artifact validates against its schema
        assert len(p["persona"].interview) >= 100
        assert len(p["circle"].contacts) == 5
        report = p["report"]
        assert report.passed, [c for c in report.checks if not c.passed]
        names = {c.name for c in report.checks}
        assert {"lexical_leakage", "fact_support", "filler_ratio", "decoy_share", "evidence_survival"} <= names
        assert {"decoy_support", "temporal_order", "cases", "audit", "cluster_verification"} <= names
        items = [*p["messages"], *p["events"]]
        support = V.support_map(p["clusters"], items)
        # a cluster the retrieval check rejected is discarded (the paper discards such fragments): the facts
        # of the others keep their support
        kept = {fid for c in p["clusters"] if c.outcome == "verified" for fid in c.fact_ids}
        assert len(kept) >= 0.8 * len(p["facts"]) and all(len(support[fid]) >= 2 for fid in kept)
        for c in p["clusters"]:
            assert 2 <= len(c.fact_ids) <= 3 and 4 <= len(c.fragments) <= 5
        for frag in (fr for c in p["clusters"] for fr in c.fragments):
            assert not V.find_leaks(frag.text(), p["facts"])
        t = V.kind_tokens(items)
        assert V.within((t["filler"] + t["decoy"]) / t["evidence"], cfg.filler_ratio)
        assert V.within(t["decoy"] / (t["filler"] + t["decoy"]), cfg.decoy_share)
        types = {c.type for c in p["cases"]}
        assert types == {"T1", "T2", "T3", "T4", "T5"}
        present = {i.fragment_id for i in items if i.fragment_id}
        for case in p["cases"]:
            assert case.supporting_fragments and set(case.supporting_fragments) <= present
            if case.type == "T3":
                assert case.prior_state and case.current_state and case.stale_state and case.changed_on
            if case.type == "T4":
                assert case.conclusion and case.mechanism and case.mechanism_kind
            if case.type == "T5":
                assert case.constraints and case.boundary
        assert "BEGIN:VEVENT" in (d / "calendar.ics").read_text()
        totals["facts"] += len(p["facts"])
        totals["cases"] += len(p["cases"])
        totals["fragments"] += sum(len(c.fragments) for c in p["clusters"] if c.outcome == "verified")
    assert summary.facts == totals["facts"]
    assert sum(summary.cases_by_type.values()) == totals["cases"]
    assert summary.fragments == totals["fragments"] == sum(summary.fragments_by_app.values())
    on_disk = json.loads((cfg.out / "summary.json").read_text())
    assert on_disk["facts"] == summary.facts


def test_template_messages_read_like_people(tset: tuple[SetConfig, SetSummary]) -> None:
    cfg, _ = tset
    texts = [m.text for m in _load_jsonl(cfg.out / "p001" / "messenger.jsonl", Message) or []]
    evidence = [
        m.text for m in _load_jsonl(cfg.out / "p001" / "messenger.jsonl", Message) or [] if m.kind == "evidence"
    ]
    assert len(set(texts)) / len(texts) > 0.5  # varied wording, not one line repeated
    assert len(set(evidence)) > 100


def test_deterministic(tset: tuple[SetConfig, SetSummary], tmp_path: Path) -> None:
    cfg, _ = tset
    again = SetConfig(out=tmp_path / "again", n=3, seed=7, decoy_share=0.3)
    run_set(again)
    for pid in ("p001", "p002", "p003"):
        for name in ARTIFACTS:
            assert (cfg.out / pid / name).read_bytes() == (again.out / pid / name).read_bytes(), (pid, name)
    assert (cfg.out / "summary.json").read_bytes() == (again.out / "summary.json").read_bytes()


def test_resume_after_losing_later_artifacts(tmp_path: Path) -> None:
    cfg = SetConfig(out=tmp_path / "s", n=2, seed=3)
    run_set(cfg)
    d = cfg.out / "p002"
    before = {n: (d / n).read_bytes() for n in ARTIFACTS}
    mtimes = {n: (d / n).stat().st_mtime_ns for n in ("persona.json", "facts.json", "circle.json")}
    for name in ("messenger.jsonl", "cases.jsonl", "verification.json"):
        (d / name).unlink()
    # a kill in the middle of stage 4: a cut last line in the clusters log
    raw = (d / "clusters.jsonl").read_bytes()
    (d / "clusters.jsonl").write_bytes(raw[: len(raw) - 40])
    run_set(cfg)
    for name in ARTIFACTS:
        assert (d / name).read_bytes() == before[name], name
    for name, t in mtimes.items():
        assert (d / name).stat().st_mtime_ns == t, f"{name} was rewritten"


def test_other_settings_in_same_folder_refused(tmp_path: Path) -> None:
    from hippocamp.synth.personas import PipelineError

    run_set(SetConfig(out=tmp_path / "s", n=1, seed=1))
    with pytest.raises(PipelineError, match="filler_ratio"):
        run_set(SetConfig(out=tmp_path / "s", n=1, seed=1, filler_ratio=1.0))


def test_ratio_and_no_decoys(tmp_path: Path) -> None:
    cfg = SetConfig(out=tmp_path / "s", n=1, seed=2, filler_ratio=1.0, decoy_share=0.0)
    s = run_set(cfg)
    assert s.personas_passed == 1
    assert s.items_by_kind["decoy"] == 0
    assert abs(s.filler_ratio["mean"] - 1.0) <= 0.1


def test_bank_signals_carry_cues_and_never_name_facts() -> None:
    specs = list(bank().values())
    terms = [(s.key, t) for s in specs for t in (s.label, *s.synonyms)]
    for s in specs:
        assert len(s.msgs) >= 3 and len(s.cals) >= 1, s.key
        for text in [*s.msgs, *(a + " " + b for a, b in s.cals), *s.decoys]:
            assert any(V.has_term(text, c) for c in s.cues), (s.key, text)
            assert not [k for k, t in terms if V.has_term(text, t)], (s.key, text)
        for d in s.decoys:
            assert not set(V.normalize(d).split()) & V.FIRST_PERSON, d
    T = phrase_bank()
    filler = [*T.filler_lines, *T.filler_replies, *T.replies, *(a + " " + b for a, b in T.filler_events)]
    for text in filler:
        assert not [k for k, t in terms if V.has_term(text, t)], text
    assert len(interview_bank().questions) >= 100


def test_default_persona_at_paper_scale(tset: tuple[SetConfig, SetSummary]) -> None:
    """About 100 facts (7 of them changing) and 7/7/7/14/15 cases per persona, as in the paper's instance."""
    cfg, summary = tset
    assert (cfg.facts, cfg.changes) == (100, 7)
    for pid in ("p001", "p002", "p003"):
        p = _persona(cfg.out / pid)
        assert len(p["facts"]) >= 90
        assert sum(1 for f in p["facts"] if f.prior_of) >= 6
        by_cat = Counter(f.category for f in p["facts"])
        assert set(by_cat) == set(CATEGORIES) and min(by_cat.values()) >= 2
        by_type = Counter(c.type for c in p["cases"])
        for t, want in PER_TYPE.items():
            assert want - (2 if t == "T3" else 1) <= by_type[t] <= want, (pid, t, by_type[t])
        assert len({c.question for c in p["cases"]}) == len(p["cases"])
    assert summary.facts >= 270 and summary.cases_rejected == 0
    assert summary.fragments_by_app["messenger"] > 3 * 80 and summary.fragments_by_app["calendar"] > 3 * 50


def test_bank_scale_and_no_self_leak() -> None:
    top = fact_bank().facts  # the specs without their successor states
    by_cat = Counter(s.category for s in top)
    assert set(by_cat) == set(CATEGORIES) and min(by_cat.values()) >= 7
    assert sum(1 for s in top if s.then is not None) >= 10
    specs = list(bank().values())
    assert {r.boundary for s in specs for r in s.requests} == set(BOUNDARIES)
    for s in specs:
        fact = fact_from_spec(s, "p000-F001")
        signals = [*s.msgs, *(f"{title}\n{notes}" for title, notes in s.cals)]
        assert not [text for text in signals if V.find_leaks(text, [fact])], s.key  # the project's checker
        assert len(set(s.msgs)) == len(s.msgs), s.key
        for r in s.requests:
            assert set(V.normalize(r.text).split()) & V.FIRST_PERSON, r.text  # T5 is first person
    # the checker does catch a signal that names the fact
    leaky = fact_from_spec(top[0], "p000-F001")
    assert V.find_leaks(f"so anyway, {top[0].synonyms[0]}", [leaky])
    patterns = phrase_bank().patterns
    assert len(patterns) >= PER_TYPE["T4"] and {p.kind for p in patterns} == set(MECHANISMS)
    assert len({p.question for p in patterns}) == len(patterns)


#: the pronoun slots of a question, for both sexes
_PRONOUNS = (
    {"subj": "she", "obj": "her", "poss": "her", "self": "herself"},
    {"subj": "he", "obj": "him", "poss": "his", "self": "himself"},
)


def test_every_spec_asks_its_own_question() -> None:
    """T1/T2 ask each fact's own question: every spec (successors too) has one, they all differ, each names
    the persona and no label, synonym or cue of its fact (the project's checker); specs that change name
    what changes (T3) without naming either state."""
    specs = list(bank().values())
    assert len({s.ask for s in specs}) == len(specs)
    for s in specs:
        fact = fact_from_spec(s, "p000-F001")
        for pron in _PRONOUNS:
            q = s.ask.format(name="Dana", **pron)
            assert q[0].isupper() and q.endswith("?") and "Dana" in q and "{" not in q, s.key
            assert not set(V.normalize(q).split()) & V.FIRST_PERSON, (s.key, q)  # third person
            assert not V.find_leaks(q, [fact]), (s.key, q)
            assert not [c for c in s.cues if V.has_term(q, c)], (s.key, q)
        # nor any other fact's terms: a question points at no fact by name (a term that is a parameter,
        # "{@rides}", is a different word for every persona: its choices are checked filled, elsewhere)
        q = s.ask.format(name="Dana", **_PRONOUNS[0])
        terms = [t for x in specs for t in (x.label, *x.synonyms, *x.cues) if "{@" not in t]
        assert not [t for t in terms if V.has_term(q, t)], (s.key, q)
        assert bool(s.change) == (s.then is not None), s.key
        if s.then is not None:
            topic = s.change.format(name="Dana", **_PRONOUNS[0])
            states = [fact, fact_from_spec(s.then, "p000-F002")]
            assert "Dana" in topic and not V.find_leaks(topic, states), (s.key, topic)
            assert not [c for x in (s, s.then) for c in x.cues if V.has_term(topic, c)], (s.key, topic)
    # an exclusive group ("x:" tag) conflicts with itself on every member, so no persona holds two of it
    for s in specs:
        for tag in s.tags:
            if tag.startswith("x:"):
                assert tag in s.conflicts, (s.key, tag)
    # the checker does catch a question that names its fact
    leaky = next(s for s in specs if s.key == "asthma")
    assert V.find_leaks(f"How does {{name}} live with {leaky.synonyms[0]}?", [fact_from_spec(leaky, "p000-F001")])


def _questions_unambiguous(persona: Persona, facts: list[Fact], cases: list[Case]) -> None:
    """Each T1/T2 case asks its facts' own questions, which no other fact of the persona shares; T3 names
    what changed; all questions of the persona differ; no two facts the persona holds are an exclusive pair."""
    own = {f.id: s.ask for f in facts if (s := spec_of(f)) is not None}
    assert len(own) == len(facts)
    for case in cases:
        if case.type in ("T1", "T2"):
            for fid in case.fact_ids:
                others = [f.label for f in facts if f.id != fid and own[f.id] == own[fid]]
                assert not others, (case.id, case.question, others)
                assert ask(next(f for f in facts if f.id == fid), persona)[1:] in case.question, case.question
        if case.type == "T3":
            prior = next(f for f in facts if f.id in case.fact_ids and f.prior_of)
            assert f"what changed about {change_topic(prior, persona)}?" in case.question, case.question
    assert len({V.normalize(c.question) for c in cases}) == len(cases)
    for f in facts:
        conflicts = set(spec_of(f).conflicts)  # type: ignore[union-attr]
        clash = [g.label for g in facts if g.id != f.id and conflicts & set(g.tags)]
        assert not clash, (persona.id, f.label, clash)


def test_model_facts_keep_the_category_question(one: dict) -> None:
    """A fact without a bank spec (model mode) is asked about its category, and cases still come out."""
    persona = one["persona"]
    name = persona.seed.name.split()[0]
    facts = [f.model_copy(update={"tags": [t for t in f.tags if not t.startswith("bank:")]}) for f in one["facts"]]
    category_ask = fact_bank().category_ask
    assert ask(facts[0], persona) == f"What can you tell about {category_ask[facts[0].category].format(name=name)}?"
    prior = next(f for f in facts if f.prior_of)
    assert change_topic(prior, persona) == category_ask[prior.category].format(name=name)
    present = {i.fragment_id for i in [*one["messages"], *one["events"]] if i.fragment_id}
    cases = template_cases(CaseContext(persona, facts, one["clusters"], present), random.Random(1))
    by_type = Counter(c.type for c in cases)
    assert by_type["T1"] and by_type["T2"] and by_type["T3"]
    t1 = next(c for c in cases if c.type == "T1")
    assert "what can you tell about" in t1.question
    # with the bank specs, the same persona's T1 asks the fact's own question instead
    spec = spec_of(one["facts"][0])
    assert spec is not None and ask(one["facts"][0], persona).startswith(spec.ask.split(" {name}")[0])


def test_twenty_personas_cover_every_boundary_and_mechanism(tmp_path: Path) -> None:
    # no filler: the cases do not depend on it, and the checks run five times faster
    s = run_set(SetConfig(out=tmp_path / "s", n=20, seed=1, filler_ratio=0.0, decoy_share=0.0))
    assert s.personas_passed == 20 and s.cases_rejected == 0
    for t, want in PER_TYPE.items():
        # T3 needs facts that change into a state that still fits the seed: a 79-year-old retiree fits
        # few of the bank's 21 changeable facts and gets 3 of the 7 (124 of 140 over these 20 personas)
        assert s.cases_by_type[t] >= (0.85 if t == "T3" else 0.95) * 20 * want, (t, s.cases_by_type)
    boundaries: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    evidence: list[str] = []
    for d in sorted(p for p in (tmp_path / "s").iterdir() if p.is_dir()):
        cases = _load_jsonl(d / "cases.jsonl", Case) or []
        facts = _load(d / "facts.json", FactsFile).facts  # type: ignore[union-attr]
        _questions_unambiguous(_load(d / "persona.json", Persona), facts, cases)  # type: ignore[arg-type]
        boundaries.update(c.boundary for c in cases if c.type == "T5")
        kinds.update(c.mechanism_kind for c in cases if c.type == "T4")
        evidence += [m.text for m in _load_jsonl(d / "messenger.jsonl", Message) or [] if m.kind == "evidence"]
    assert set(boundaries) == set(BOUNDARIES) and min(boundaries.values()) >= 10, boundaries
    assert set(kinds) == set(MECHANISMS), kinds
    long = [t for t in evidence if len(t.split()) >= 5]
    assert len(set(long)) / len(long) > 0.35  # the same fact reads differently across personas


def test_facts_below_changes_refused(tmp_path: Path) -> None:
    from hippocamp.synth.personas import PipelineError

    with pytest.raises(PipelineError, match="--facts"):
        run_set(SetConfig(out=tmp_path / "s", n=1, facts=5))
    with pytest.raises(PipelineError, match="one per category"):  # fewer than 18 + 7 leaves categories out
        run_set(SetConfig(out=tmp_path / "s", n=1, facts=24))
    # the least allowed makes a persona; so few facts may leave no T4 pattern or T5 request to use, which
    # the cases check then reports by name
    summary = run_set(SetConfig(out=tmp_path / "t", n=1, facts=25, days=14))
    assert summary.personas == 1 and {"T1", "T2", "T3"} <= {t for t, n in summary.cases_by_type.items() if n}
    report = _load(tmp_path / "t" / "p001" / "verification.json", VerificationReport)
    failing = [c for c in report.checks if not c.passed]  # type: ignore[union-attr]
    assert all(c.name == "cases" and "no accepted" in " ".join(c.problems) for c in failing), failing


# ---------------------------------------------------------------------------- checks on crafted bad input


@pytest.fixture()
def one(tset: tuple[SetConfig, SetSummary]) -> dict:
    cfg, _ = tset
    return _persona(cfg.out / "p001")


def _verify(p: dict, **changes: object) -> VerificationReport:
    from hippocamp.synth.personas import verify_persona

    q = {**p, **changes}
    _, report = verify_persona(
        q["persona"], q["facts"], q["circle"], q["clusters"], q["messages"], q["events"], q["cases"], 2.5, 0.3
    )
    return report


def _check(report: VerificationReport, name: str):  # type: ignore[no-untyped-def]
    return next(c for c in report.checks if c.name == name)


def test_leakage_flagged(one: dict) -> None:
    fact = one["facts"][0]
    clusters = [c.model_copy(deep=True) for c in one["clusters"]]
    frag = next(fr for c in clusters for fr in c.fragments if fr.app == "messenger")
    frag.lines[0].text += f" honestly {fact.synonyms[0] if fact.synonyms else fact.label} is a lot"
    check = _check(_verify(one, clusters=clusters), "lexical_leakage")
    assert not check.passed and any(fact.id in p for p in check.problems)
    # the label itself in a filler message
    messages = [m.model_copy() for m in one["messages"]]
    i = next(i for i, m in enumerate(messages) if m.kind == "filler")
    messages[i] = messages[i].model_copy(update={"text": f"anyway, {fact.label}"})
    assert not _check(_verify(one, messages=messages), "lexical_leakage").passed


def test_fact_with_one_fragment_reported(one: dict) -> None:
    target = one["facts"][0].id
    keep_one = None
    messages, events = [], []
    frags = {fr.id: fr for c in one["clusters"] for fr in c.fragments}
    supporting = sorted(fid for fid, fr in frags.items() if target in fr.fact_ids)
    keep_one = supporting[0]
    drop = set(supporting[1:])
    messages = [m for m in one["messages"] if m.fragment_id not in drop]
    events = [e for e in one["events"] if e.fragment_id not in drop]
    check = _check(_verify(one, messages=messages, events=events), "fact_support")
    assert not check.passed and check.measured["under_two"] >= 1
    assert any(target in p and "1 supporting" in p for p in check.problems)
    assert keep_one


def test_decoy_supporting_a_fact_flagged(one: dict) -> None:
    fact = one["facts"][0]
    events = list(one["events"])
    start = events[0].start
    end = start + timedelta(hours=1)
    bad = [
        CalendarEvent(id="x1", title=f"Zed and my {fact.cues[0]}", start=start, end=end, kind="decoy", about="Zed"),
        CalendarEvent(id="x2", title=f"{fact.cues[0]} again", start=start, end=end, kind="decoy", about="Zed"),
        CalendarEvent(
            id="x3", title="Zed's thing", start=start, end=end, kind="decoy", about=one["persona"].seed.name.split()[0]
        ),
    ]
    check = _check(_verify(one, events=events + bad), "decoy_support")
    assert not check.passed
    assert any("x1" in p and "first person" in p for p in check.problems)
    assert any("x2" in p and "without naming" in p for p in check.problems)
    assert any("x3" in p and "not about another person" in p for p in check.problems)
    # a title's full stop is not a sentence end: "Mr. Okafor" does not carry the cue's sentence away
    titled = CalendarEvent(id="x4", title=f"I have the Mr. Okafor {fact.cues[0]} with Zed", start=start, end=end,
                           kind="decoy", about="Okafor")  # fmt: skip
    check = _check(_verify(one, events=[*events, titled]), "decoy_support")
    assert any("x4" in p and "first person" in p for p in check.problems)


def test_dropped_fragment_fails_survival(one: dict) -> None:
    frag_id = next(e.fragment_id for e in one["events"] if e.fragment_id)
    events = [e for e in one["events"] if e.fragment_id != frag_id]
    check = _check(_verify(one, events=events), "evidence_survival")
    assert not check.passed and any(frag_id in p and "missing" in p for p in check.problems)
    messages = [m.model_copy() for m in one["messages"]]
    i = next(i for i, m in enumerate(messages) if m.fragment_id)
    messages[i] = messages[i].model_copy(update={"text": messages[i].text + " (edited)"})
    assert any("altered" in p for p in _check(_verify(one, messages=messages), "evidence_survival").problems)


def test_wrong_filler_ratio_and_decoy_share_flagged(one: dict) -> None:
    messages = [m for m in one["messages"] if m.kind != "filler"]
    report = _verify(one, messages=messages)
    assert not _check(report, "filler_ratio").passed
    assert not _check(report, "decoy_share").passed
    assert _check(_verify(one), "filler_ratio").passed


def test_bad_cases_rejected(one: dict) -> None:
    cases = list(one["cases"])
    t1 = next(c for c in cases if c.type == "T1")
    t3 = next(c for c in cases if c.type == "T3")
    t5 = next(c for c in cases if c.type == "T5")
    bad = [
        t1.model_copy(update={"id": "u1", "question": t1.question + " (again)", "supporting_fragments": ["nope"]}),
        t1.model_copy(update={"id": "u2", "question": t1.question + "?", "fact_ids": ["p001-F999"]}),
        t1.model_copy(update={"id": "d1"}),
        t3.model_copy(update={"id": "v1", "question": t3.question + " Now.", "stale_state": t3.current_state}),
        t5.model_copy(update={"id": "v2", "question": "Order the usual for " + "Pat.", "boundary": "ignore"}),
        t1.model_copy(update={"id": "v3", "type": "T2", "question": t1.question.replace("Judging", "Looking")}),
    ]
    report = _verify(one, cases=cases + bad)
    rejected = dict(r.split(": ", 1) for r in report.rejected_cases)
    assert rejected["u1"].startswith("ungrounded") and "nope" in rejected["u1"]
    assert rejected["u2"].startswith("ungrounded") and "F999" in rejected["u2"]
    assert rejected["d1"].startswith("duplicate")
    assert rejected["v1"].startswith("type-invalid") and "stale" in rejected["v1"]
    assert rejected["v2"].startswith("type-invalid")
    assert rejected["v3"].startswith("type-invalid") and "T2" in rejected["v3"]
    assert len(report.rejected_cases) == len(bad)


def test_inventory_and_temporal_checks(one: dict) -> None:
    facts = [f.model_copy() for f in one["facts"]]
    facts[1] = facts[1].model_copy(update={"id": facts[0].id})
    assert not _check(_verify(one, facts=facts), "fact_inventory").passed
    prior = next(f for f in one["facts"] if f.prior_of)
    facts = [f.model_copy(update={"valid_to": None}) if f.id == prior.id else f for f in one["facts"]]
    assert not _check(_verify(one, facts=facts), "temporal_order").passed


# --------------------------------------------------------------------------------------------- seeds


def test_filter_seeds() -> None:
    flt = parse_filter("age=30-45,occupation=nurse")
    seeds = sample_seeds(20, 5, flt)
    assert all(30 <= s.age <= 45 and "nurse" in s.occupation for s in seeds)
    assert len({s.name for s in seeds}) > 10
    with pytest.raises(SeedError, match="occupation"):
        sample_seeds(1, 0, parse_filter("occupation=astronaut"))
    with pytest.raises(SeedError, match="key"):
        parse_filter("shoe=9")
    with pytest.raises(SeedError, match="age"):
        parse_filter("age=50-30")


def test_seeds_follow_marginals() -> None:
    seeds = sample_seeds(600, 11)
    share_south = sum(s.region == "South" for s in seeds) / len(seeds)
    assert 0.30 < share_south < 0.46  # census: 38%
    assert all(s.age >= 18 for s in seeds)
    assert not [s for s in seeds if s.occupation == "retired" and s.age < 45]


def test_seed_files_csv_and_jsonl(tmp_path: Path) -> None:
    csv_path = tmp_path / "seeds.csv"
    csv_path.write_text(
        "uuid,sex,age,marital_status,education_level,occupation,city,state,hobbies_and_interests_list,"
        "career_goals_and_ambitions\n"
        "a1,Female,38,married_present,bachelors,registered nurse,Austin,Texas,\"['gardening', 'baking']\","
        "Become a charge nurse\n"
        "a2,Male,71,widowed,high_school,retired,Tulsa,Oklahoma,['fishing'],Stay healthy\n",
        encoding="utf-8",
    )
    seeds = read_seed_file(csv_path, 5, 0)
    assert [s.age for s in seeds] == [38, 71]
    assert seeds[0].hobbies == ["gardening", "baking"] and seeds[0].household.startswith("married")
    assert seeds[0].goals == ["Become a charge nurse"] and seeds[0].source == "file:seeds.csv:2"
    assert [s.age for s in read_seed_file(csv_path, 5, 0, parse_filter("occupation=nurse"))] == [38]
    jl = tmp_path / "seeds.jsonl"
    jl.write_text(json.dumps({"sex": "male", "age": 29, "occupation": "electrician", "state": "Ohio"}) + "\n")
    (s,) = read_seed_file(jl, 5, 0)
    assert s.occupation == "electrician" and s.state == "Ohio" and s.region == "Midwest"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"age": "old"}\n')
    with pytest.raises(SeedError, match=r"line 1.*age"):
        read_seed_file(bad, 1, 0)
    out = run_set(SetConfig(out=tmp_path / "fromfile", n=2, seeds_file=csv_path))
    assert out.personas == 2 and out.personas_passed == 2


def test_cli(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from hippocamp.cli.synth import synth

    result = CliRunner().invoke(
        synth,
        [
            "personas",
            "--n",
            "1",
            "--out",
            str(tmp_path / "c"),
            "--filter",
            "age=30-45,occupation=nurse",
            "--facts",
            "40",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "1/1 passed" in result.output
    facts = json.loads((tmp_path / "c" / "p001" / "facts.json").read_text())["facts"]
    assert 36 <= len(facts) <= 40  # 33 sampled + up to 7 changed states, the audit keeping the size
    seed = json.loads((tmp_path / "c" / "p001" / "persona.json").read_text())["seed"]
    assert 30 <= seed["age"] <= 45 and "nurse" in seed["occupation"]


# ------------------------------------------------------------------------------------ model mode (mock)

MOCK_FACTS = [
    {"category": "health", "label": "has asthma", "synonyms": ["asthma", "asthmatic"],
     "cues": ["inhaler", "albuterol", "peak flow"], "sources": ["q049"]},
    {"category": "hobby", "label": "plays tennis", "synonyms": ["tennis"],
     "cues": ["racket", "court booking", "serve"], "sources": ["q088"]},
    {"category": "work", "label": "works as a barista", "synonyms": ["barista"],
     "cues": ["espresso machine", "morning rush", "latte art"], "sources": ["q037"],
     "changes_to": {"label": "manages the cafe", "synonyms": ["cafe manager"],
                    "cues": ["staff schedule", "inventory order", "manager meeting"]}},
    {"category": "finances", "label": "saving for a car", "synonyms": ["car fund"],
     "cues": ["dealership", "auto loan", "savings jar"], "sources": ["q999"]},
    {"category": "diet", "label": "is lactose intolerant", "synonyms": ["lactose intolerant", "lactose"],
     "cues": ["oat milk", "Lactaid", "dairy-free"], "sources": ["q052"]},
    {"category": "values", "label": "volunteers at the food bank", "synonyms": ["food bank volunteer"],
     "cues": ["pantry shift", "canned goods", "sorting donations"], "sources": ["q073"]},
]  # fmt: skip


def _mock_fragments(payload: dict) -> dict:
    from datetime import date as _date

    out = []
    for f in payload["facts"]:
        start = f["dates"][0]
        out.append(
            {
                "app": "messenger",
                "fact_ids": [f["id"]],
                "date": start,
                "time": "09:30",
                "contact_id": "c1",
                "lines": [{"sender": "me", "text": f"grabbed the {f['cues'][0]} stuff today"}],
            }
        )
        out.append(
            {
                "app": "calendar",
                "fact_ids": [f["id"]],
                "date": start,
                "time": "14:00",
                "title": f"{f['cues'][1]}",
                "notes": "",
                "minutes": 30,
            }
        )
    while len(out) > 5:  # merge two calendar fragments whose facts share a day
        cals = [x for x in out if x["app"] == "calendar" and len(x["fact_ids"]) == 1]
        a, b = next(
            (a, b)
            for a in cals
            for b in cals
            if a is not b and max(_fd(payload, a)[0], _fd(payload, b)[0]) <= min(_fd(payload, a)[1], _fd(payload, b)[1])
        )
        a["fact_ids"] = a["fact_ids"] + b["fact_ids"]
        a["notes"] = b["title"]
        a["date"] = str(max(_date.fromisoformat(a["date"]), _date.fromisoformat(b["date"])))
        out.remove(b)
    return {"fragments": out}


def _fd(payload: dict, frag: dict) -> tuple[str, str]:
    f = next(x for x in payload["facts"] if x["id"] == frag["fact_ids"][0])
    return f["dates"][0], f["dates"][1]


def _script(verifier_leaks: object = None):  # type: ignore[no-untyped-def]
    calls = {"verifier": 0}

    def respond(request):  # type: ignore[no-untyped-def]
        stage = request.messages[0]["content"].splitlines()[0].removeprefix("# stage: ").strip()
        payload = json.loads(request.messages[-1]["content"])
        if stage == "interview":
            return json.dumps(
                {"answers": [{"id": q["id"], "answer": f"Well, {q['id']}."} for q in payload["questions"]]}
            )
        if stage == "facts":  # one topic per call: its turns only; facts of other topics are dropped by the caller
            assert {t["topic"] for t in payload["interview"]} == {payload["topic"]} and payload["count"] >= 1
            calls["facts"] = calls.get("facts", 0) + 1
            return json.dumps({"facts": MOCK_FACTS})
        if stage == "audit":
            return json.dumps({"findings": []})
        if stage == "circle":
            names = ["Ann Lowe", "Bo Diaz", "Cy Park", "Di Moss", "Ed Kerr"]
            contacts = [{"name": n, "relationship": "friend", "history": "old friend", "shared_activities": []}
                        for n in names[: payload["contacts_wanted"]]]  # fmt: skip
            return json.dumps({"contacts": contacts})
        if stage == "fragments":
            return json.dumps(_mock_fragments(payload))
        if stage == "verifier":
            calls["verifier"] += 1
            text = " ".join(f["text"] for f in payload["fragments"])
            leaks = verifier_leaks(calls["verifier"]) if callable(verifier_leaks) else []
            inferences = [{"slot": s["slot"], "statement": text, "confidence": 0.9} for s in payload["slots"]]
            return json.dumps({"inferences": inferences, "leaks": leaks})
        if stage == "cases":
            ids = [f["id"] for f in payload["facts"] if not f.get("prior_of")]
            labels = {f["id"]: f["label"] for f in payload["facts"]}
            name = payload["name"]
            return json.dumps({"cases": [
                {"type": "T4", "question": f"What drives how {name} spends free time?", "fact_ids": ids[:2],
                 "conclusion": "puts community before leisure", "mechanism": "both facts", "mechanism_kind": "motive",
                 "answer": "community first"},
                {"type": "T5", "question": "Order me a large milkshake.", "fact_ids": [ids[0]],
                 "constraints": [labels[ids[0]]], "boundary": "warn", "answer": "warn"},
                {"type": "T5", "question": "Book my usual court.", "fact_ids": ["nope"], "constraints": ["x"],
                 "boundary": "comply"},
            ]})  # fmt: skip
        raise AssertionError(stage)

    return respond, calls


def test_model_mode_with_regeneration(tmp_path: Path) -> None:
    from hippocamp.models import get_model

    respond, calls = _script(lambda n: ["fragment 2 says it outright"] if n == 1 else [])
    model = get_model("mock", outputs=respond)
    # the model verifier's verdict is what is tested here: the retrieval check only measures
    cfg = SetConfig(out=tmp_path / "m", n=1, seed=4, model="mock", verifier="mock", recovery="measure")
    summary = run_set(cfg, model=model, verifier=model)
    p = _persona(cfg.out / "p001")
    assert p["persona"].generator == "model:mock" and p["persona"].interview[0].answer == "Well, q001."
    labels = [f.label for f in p["facts"]]
    assert sorted(labels[:6]) == sorted(f["label"] for f in MOCK_FACTS) and len(set(labels)) == len(labels)
    assert calls["facts"] == len({t.topic for t in p["persona"].interview})  # asked topic by topic
    assert any(f.prior_of for f in p["facts"])  # the proposed change was dated
    assert p["persona"].audit.auditor == "model:mock+rules"
    regenerated = [c for c in p["clusters"] if len(c.attempts) == 2]
    assert len(regenerated) == 1 and not regenerated[0].attempts[0].passed and regenerated[0].outcome == "verified"
    assert "verifier: fragment 2 says it outright" in regenerated[0].attempts[0].leaks
    assert all(c.outcome == "verified" for c in p["clusters"])
    report = p["report"]
    assert report.passed, [c for c in report.checks if not c.passed]
    assert any(r.endswith("unknown fact(s) nope") for r in report.rejected_cases)
    assert {c.type for c in p["cases"]} == {"T1", "T2", "T3", "T4", "T5"}
    assert summary.cluster_attempts.get("passed_attempt_2") == 1 and calls["verifier"] >= len(p["clusters"])


def test_model_verifier_never_passes(tmp_path: Path) -> None:
    from hippocamp.models import get_model

    respond, _ = _script(lambda n: ["the label is right there"])
    model = get_model("mock", outputs=respond)
    # the model verifier's verdict is what is tested here: the retrieval check only measures
    cfg = SetConfig(out=tmp_path / "m", n=1, seed=4, model="mock", verifier="mock", recovery="measure")
    summary = run_set(cfg, model=model, verifier=model)
    p = _persona(cfg.out / "p001")
    assert all(c.outcome == "failed" and len(c.attempts) == 3 for c in p["clusters"])
    check = _check(p["report"], "cluster_verification")
    assert not check.passed and check.measured["failed"] == len(p["clusters"])
    assert summary.clusters_failed == len(p["clusters"]) and summary.failed_personas == ["p001"]


def test_model_outage_falls_back(tmp_path: Path) -> None:
    from hippocamp.models import ModelError, get_model

    model = get_model("mock", outputs=lambda request: ModelError("server down", "mock"))
    # the model verifier's verdict is what is tested here: the retrieval check only measures
    cfg = SetConfig(out=tmp_path / "m", n=1, seed=4, model="mock", verifier="mock", recovery="measure")
    summary = run_set(cfg, model=model, verifier=model)
    p = _persona(cfg.out / "p001")
    assert p["persona"].generator == "template"
    report = p["report"]
    assert report.passed and summary.personas_passed == 1
    stages = {f.split(":")[0] for f in report.fallbacks}
    assert {"persona", "circle", "cases"} <= stages and any(s.startswith("fragments") for s in stages)
    assert all("server down" in f for f in report.fallbacks)
    assert all("model verifier" in c.attempts[-1].error for c in p["clusters"])


def test_household_words_are_not_read_through_a_negation() -> None:
    from hippocamp.synth.personas.facts import _lives

    assert _lives("married, children at home", "children")
    assert not _lives("married, no children at home", "children")
    assert _lives("married, no children at home", "married")
