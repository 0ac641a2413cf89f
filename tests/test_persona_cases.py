"""Cases with real keys (issue #20): every failure the issue quotes is refused on purpose-built bad input,
and a generated set meets the targets (T2 joins 2-3 facts, T4 rests on three facts in a good share of
cases with the conclusion and rule in the key, T5 has requests touching two constraints, and no case asks
for a detail its fragments never state)."""

from __future__ import annotations

import copy
import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hippocamp.schema.pcontext import CalendarEvent, Case, Cluster, Fact, FactsFile, Message
from hippocamp.synth.personas import SetConfig, run_set
from hippocamp.synth.personas import verify as V
from hippocamp.synth.personas.artifacts import load, load_jsonl
from hippocamp.synth.personas.banks import BankError, fact_bank, load_phrase_bank, phrase_bank
from hippocamp.synth.personas.cases import STRICTNESS, _predicate
from hippocamp.synth.personas.facts import bank, spec_of


@pytest.fixture(scope="module")
def cset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight personas without filler (the cases do not depend on it)."""
    out = tmp_path_factory.mktemp("cases") / "set"
    summary = run_set(SetConfig(out=out, n=8, seed=3, filler_ratio=0.0, decoy_share=0.0))
    assert summary.personas == 8 and summary.cases_rejected == 0  # the templates write no rejected case
    return out


def _cases(out: Path) -> list[Case]:
    return [c for d in sorted(out.glob("p*")) for c in load_jsonl(d / "cases.jsonl", Case) or []]


def _persona(out: Path, pid: str) -> dict[str, Any]:
    d = out / pid
    facts = load(d / "facts.json", FactsFile)
    assert facts is not None
    return {
        "facts": facts.facts,
        "clusters": load_jsonl(d / "clusters.jsonl", Cluster) or [],
        "items": [
            *(load_jsonl(d / "messenger.jsonl", Message) or []),
            *(load_jsonl(d / "calendar.jsonl", CalendarEvent) or []),
        ],
        "cases": load_jsonl(d / "cases.jsonl", Case) or [],
        "name": json.loads((d / "persona.json").read_text())["seed"]["name"],
    }


def _check(p: dict[str, Any], cases: list[Case]) -> dict[str, str]:
    """The rejections ("case id" -> reason) of ``cases`` against persona ``p``."""
    _, rejected, _ = V.check_cases(cases, p["facts"], p["clusters"], p["items"], p["name"])
    return dict(r.split(": ", 1) for r in rejected)


@pytest.fixture()
def one(cset: Path) -> dict[str, Any]:
    return _persona(cset, "p001")


# ------------------------------------------------------------------------------ on a generated set


def test_generated_set_meets_the_targets(cset: Path) -> None:
    cases = _cases(cset)
    by_type: dict[str, list[Case]] = {}
    for c in cases:
        by_type.setdefault(c.type, []).append(c)
    t2 = [len(c.fact_ids) for c in by_type["T2"]]
    assert min(t2) >= 2 and max(t2) <= 3 and statistics.fmean(t2) >= 1.8
    t4 = Counter(len(c.fact_ids) for c in by_type["T4"])
    assert t4[3] >= 0.25 * len(by_type["T4"]), t4  # a good share rests on three facts
    for c in by_type["T4"]:
        assert c.rule and c.conclusion and c.mechanism
        assert c.conclusion in c.answer and c.rule in c.answer  # the key states conclusion and rule
        assert all(V.normalize(c.conclusion) != V.normalize(label) for label in c.labels)
    t5 = [c for c in by_type["T5"] if len(c.constraints) >= 2]
    assert t5
    for c in t5:
        assert c.constraints == c.labels and len(c.fact_ids) == len(c.constraints)
        assert c.boundary is not None and c.answer.startswith(c.boundary)
    for d in sorted(cset.glob("p*")):
        report = json.loads((d / "verification.json").read_text())
        assert not [r for r in report["rejected_cases"] if "unanswerable" in r]


def test_no_case_asks_for_an_unstated_detail(cset: Path) -> None:
    """Every label of every written case has its numbers and names in the cited fragments of its fact."""
    for d in sorted(cset.glob("p*")):
        p = _persona(cset, d.name)
        frags = {fr.id: fr for c in p["clusters"] for fr in c.fragments}
        by_id: dict[str, Fact] = {f.id: f for f in p["facts"]}
        for case in p["cases"]:
            for fid in case.fact_ids:
                text = "\n".join(V.stated_text(frags[x]) for x in case.supporting_fragments if fid in frags[x].fact_ids)
                assert not V.unstated_details(by_id[fid].label, text), (case.id, by_id[fid].label)


# ----------------------------------------------------------------------------- the failures


def test_t4_pattern_admitting_grill_for_allergy_is_refused(tmp_path: Path) -> None:
    """The issue's "loves smoking meat on the grill is the habit that manages a peanut allergy": a slot
    of a whole category, or of a tag outside its role, is refused when the bank is read."""
    raw = json.loads((Path(__file__).parents[1] / "src/hippocamp/synth/personas/data/phrases.json").read_text())
    grill = {
        "slots": [["cat:health"], ["cat:fitness", "cat:diet"]],
        "roles": ["strain", "response"],
        "kind": "coping_strategy",
        "question": "How does {name} look after {poss} body given {poss} health?",
        "conclusion": "{name} adapts daily habits to a health condition",
        "rule": "a health problem and a habit mean the habit manages the problem",
        "why": "{a} is the problem to manage and {b} is the habit that manages it",
    }
    cases = {
        "a whole category": (grill, "slots.0.0", "requires no tag of the role 'strain'"),
        "a tag outside the role": (
            {**grill, "slots": [["health_constraint"], ["eats_meat"]]},
            "slots.1.0",
            "requires no tag of the role 'response'",
        ),
        "roles the mechanism lacks": (
            {**grill, "slots": [["health_constraint"], ["health_constraint"]], "roles": ["strain", "strain"]},
            "roles",
            "needs a slot of the role",
        ),
        "a conclusion naming a fact": (
            {**grill, "slots": [["health_constraint"], ["coping"]], "conclusion": "{name} {b}"},
            "conclusion",
            "names a fact",
        ),
        "a mechanism leaving a slot out": (
            {**grill, "slots": [["health_constraint"], ["coping"]], "why": "{a} is hard"},
            "why",
            "{b}",
        ),
    }
    for what, (pattern, field, message) in cases.items():
        data = copy.deepcopy(raw)
        data["patterns"].append(pattern)
        path = tmp_path / "phrases.json"
        path.write_text(json.dumps(data))
        with pytest.raises(BankError) as err:
            load_phrase_bank(path, fact_bank())
        assert err.value.field == field and message in err.value.reason, (what, err.value)


def test_no_shipped_pattern_can_pair_grill_with_allergy() -> None:
    """No shipped pattern takes the grilling fact as what copes with, manages or answers anything."""
    specs = bank()
    grill, peanut = specs["bbq"], specs["peanut"]
    for pattern in phrase_bank().patterns:
        for i, role in enumerate(pattern.roles):
            if role in ("response", "means"):
                assert not pattern.matches(i, grill.category, grill.tags), pattern.question
        if pattern.kind == "coping_strategy":
            slots = range(len(pattern.slots))
            assert not (
                any(pattern.matches(i, peanut.category, peanut.tags) for i in slots)
                and any(pattern.matches(i, grill.category, grill.tags) for i in slots)
            )


def test_t2_with_one_fact_is_refused(one: dict[str, Any]) -> None:
    t2 = next(c for c in one["cases"] if c.type == "T2")
    fid = t2.fact_ids[0]
    own = sorted(fr.id for c in one["clusters"] for fr in c.fragments if fid in fr.fact_ids)
    single = t2.model_copy(
        update={
            "id": "x-T2-1",
            "supporting_fragments": [x for x in t2.supporting_fragments if x in own],
            "question": t2.question + " (single)",
            "fact_ids": [fid],
            "labels": [t2.labels[0]],
            "answer": t2.labels[0],
        }
    )
    rejected = _check(one, [single])
    assert rejected["x-T2-1"] == "type-invalid: T2 joins two or three facts"


def test_case_asking_for_an_unstated_count_is_refused(one: dict[str, Any]) -> None:
    """The issue's "the number of cats": a label whose count, name or amount the cited fragments never
    state is refused, with the detail named; the same label stated in the fragments passes."""
    t1 = next(c for c in one["cases"] if c.type == "T1")
    fid = t1.fact_ids[0]
    facts = [f.model_copy(update={"label": "lives with seventeen cats named Zorblax"}) if f.id == fid else f
             for f in one["facts"]]  # fmt: skip
    bad = t1.model_copy(update={"id": "x-T1-1", "labels": [facts[[f.id for f in facts].index(fid)].label]})
    rejected = _check({**one, "facts": facts}, [bad])
    assert rejected["x-T1-1"].startswith("unanswerable") and "'Zorblax'" in rejected["x-T1-1"]
    facts = [f.model_copy(update={"label": "lives with 17 cats"}) if f.id == fid else f for f in one["facts"]]
    assert _check({**one, "facts": facts}, [bad.model_copy(update={"labels": ["lives with 17 cats"]})])[
        "x-T1-1"
    ].startswith("unanswerable: '17'")
    # stated in a cited fragment (in words where the label has digits): accepted
    clusters = [c.model_copy(deep=True) for c in one["clusters"]]
    frag = next(fr for c in clusters for fr in c.fragments if fr.id == bad.supporting_fragments[0])
    if frag.app == "messenger":
        frag.lines[0].text += " seventeen litter boxes, Zorblax"
    else:
        frag.notes += " seventeen litter boxes, Zorblax"
    facts = [f.model_copy(update={"label": "lives with 17 cats named Zorblax"}) if f.id == fid else f
             for f in one["facts"]]  # fmt: skip
    ok = bad.model_copy(update={"labels": ["lives with 17 cats named Zorblax"]})
    assert _check({**one, "facts": facts, "clusters": clusters}, [ok]) == {}


def test_details_of_parametrised_labels() -> None:
    """Per-persona values in labels (names, places, amounts) are details; numbers match in digits or
    words, plurals by their singular, and a calendar event states its weekday and hour."""
    assert V.key_details("has two cats named Miso and Tofu") == ["Miso", "Tofu", "two"]
    assert V.unstated_details("has two cats named Miso and Tofu", "Miso and tofu knocked 2 cups over") == []
    assert V.unstated_details("has two cats named Miso and Tofu", "the cats knocked a cup over") == [
        "Miso",
        "Tofu",
        "two",
    ]
    assert V.unstated_details("walks 10,000 steps a day", "hit 10k today") == []
    assert V.unstated_details("has a hard $50-a-week spending limit", "fifty bucks left this week") == []
    assert V.unstated_details("observes the Sabbath on Saturdays", "no phones on Saturday") == ["Sabbath"]
    assert V.unstated_details("is saving for a trip to Lisbon", "saving up for the trip") == ["Lisbon"]
    assert V.key_details("rents an apartment") == []


def test_t5_joined_requests_expect_the_stricter_boundary(cset: Path) -> None:
    joined = [c for c in _cases(cset) if c.type == "T5" and len(c.constraints) == 2]
    assert joined
    facts = {f.id: f for d in sorted(cset.glob("p*")) for f in _persona(cset, d.name)["facts"]}
    for case in joined:
        assert case.boundary is not None and case.boundary != "comply"
        parts = case.question.removeprefix("Two things, please. ").split(" Also: ")
        assert len(parts) == 2
        specs = [spec_of(facts[fid]) for fid in case.fact_ids]  # the persona's own wording of each request
        boundaries = [r.boundary for s in specs if s for r in s.requests for part in parts if r.text == part]
        assert len(boundaries) == 2 and case.boundary == max(boundaries, key=STRICTNESS.index), case.question


def test_label_reads_as_a_predicate() -> None:
    assert _predicate("has a rescue dog") == "has a rescue dog"
    assert _predicate("saving for a house down payment") == "is saving for a house down payment"
    assert _predicate("recently divorced") == "is recently divorced"
    assert _predicate("rarely exercises") == "rarely exercises"
    assert _predicate("parent of teenagers") == "is a parent of teenagers"
    assert _predicate("cannot drive at night") == "cannot drive at night"
