"""Issue #20, item 1 and 2: facts parametrised and drawn for the seed, the interview asked first.

Each failure the issue quotes is built here on purpose and refused or flagged; the generated sets are
checked by the shared-facts and interview figures."""

from __future__ import annotations

import datetime as dt
import json
import random
from collections import Counter
from pathlib import Path

import pytest

from hippocamp.schema.pcontext import InterviewTurn
from hippocamp.synth.personas import SetConfig, run_set
from hippocamp.synth.personas.banks import BankError, load_fact_bank
from hippocamp.synth.personas.facts import (
    apply_changes,
    bank,
    choose_slots,
    demographic_issue,
    fact_from_spec,
    sample_facts,
    seed_matches,
    spec_of,
    weight,
)
from hippocamp.synth.personas.interview import answers_question, check_interview, template_interview
from hippocamp.synth.personas.seeds import occupation_group_of, read_seed_file, sample_seeds, working
from hippocamp.synth.realism import audit_set, plausibility
from test_realism import event, write_persona

SHIPPED = Path(__file__).parents[1] / "src/hippocamp/synth/personas/data/facts.json"

FARM = {
    "key": "farm_x",
    "category": "background",
    "label": "grew up on {@farm[0]} farm in {@farm[1]}",
    "synonyms": ["farm kid", "raised on a farm"],
    "cues": ["hay", "tractor", "{@farm[2]}"],
    "slots": {"farm": [["a dairy", "Wisconsin", "milking"], ["a cattle", "west Texas", "branding"]]},
    "likely": ["region:midwest", "age:45-100"],
    "say": "I grew up on {@farm[0]} farm in {@farm[1]}.",
    "msgs": ["{@farm[2]} season back in {@farm[1]}, hay everywhere", "tractor talk with Dad about {@farm[1]}",
             "hay fever again", "tractor parts are so expensive"],
    "cals": [["Call Dad about {@farm[2]}", "tractor, {@farm[1]}"]],
    "decoys": ["{other} hauled hay all summer"],
    "ask": "What kind of place did {name} grow up on?",
}  # fmt: skip


def _bank_with(tmp_path: Path, spec: dict) -> Path:
    raw = json.loads(SHIPPED.read_text())
    raw["facts"] = [s for s in raw["facts"] if s["category"] != "background" or s["key"] != spec["key"]] + [spec]
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(raw))
    return path


def test_a_parametrised_spec_loads_and_fills(tmp_path: Path) -> None:
    loaded = load_fact_bank(_bank_with(tmp_path, FARM))
    spec = next(s for s in loaded.facts if s.key == "farm_x")
    labels = {spec.filled(choose_slots(spec, random.Random(i))).label for i in range(20)}
    assert labels == {"grew up on a dairy farm in Wisconsin", "grew up on a cattle farm in west Texas"}
    filled = spec.filled({"farm": ["a dairy", "Wisconsin", "milking"]})
    assert filled.msgs[0] == "milking season back in Wisconsin, hay everywhere" and "{@" not in filled.cals[0][1]


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"label": "grew up on a farm"}, "slots", "the label does not use the slot"),
        ({"say": "I grew up on {@ranch} land."}, "say", "unknown slot {@ranch}"),
        ({"say": "I grew up in {@farm}."}, "say", "name a part"),
        ({"say": "I grew up in {@farm[3]}."}, "say", "no such part"),
        ({"slots": {"farm": [["a dairy", "Wisconsin", "milking"]]}}, "slots.farm", "at least two choices"),
        (
            {"slots": {"farm": [["a dairy", "Wisconsin", "milking"], ["a cattle", "Texas"]]}},
            "slots.farm",
            "same length",
        ),
        ({"likely": ["zodiac:leo"]}, "likely.0", "not a seed predicate"),
    ],
)
def test_a_bad_slot_is_refused_naming_entry_and_field(tmp_path: Path, change: dict, field: str, reason: str) -> None:
    with pytest.raises(BankError) as err:
        load_fact_bank(_bank_with(tmp_path, FARM | change))
    assert "farm_x" in err.value.entry and field in err.value.field and reason in err.value.reason


def test_a_fact_keeps_its_parameters_and_its_successor_shares_them() -> None:
    """Two personas with the same spec get their own values; spec_of gives the persona's texts back, and a
    successor state keeps the values its prior chose."""
    specs = [s for s in bank().values() if s.slots]
    if not specs:
        pytest.skip("the shipped bank has no parametrised spec")
    spec = specs[0]
    rng = random.Random(5)
    facts = [fact_from_spec(spec, f"p00{i}-F001", choose_slots(spec, rng)) for i in range(8)]
    assert len({f.label for f in facts}) > 1
    for f in facts:
        assert spec_of(f).label == f.label and "{@" not in " ".join(spec_of(f).msgs)  # type: ignore[union-attr]
    changing = next((s for s in bank().values() if s.slots and s.then is not None), None)
    if changing is not None:
        prior = fact_from_spec(changing, "p001-F001", choose_slots(changing, random.Random(1)))
        out = apply_changes([prior], "p001", dt.date(2025, 3, 3), 90, random.Random(1), 1)
        assert len(out) == 2 and all(out[1].slots[k] == v for k, v in prior.slots.items())


def test_the_seed_makes_facts_likely() -> None:
    """A spec's ``likely`` predicates weigh the draw: over many draws a matching seed holds it more often."""
    young = sample_seeds(1, 3, None)[0].model_copy(
        update={
            "age": 25,
            "occupation": "registered nurse",
            "occupation_group": "Healthcare practitioners and technical",
        }
    )
    assert seed_matches("group:healthcare", young) and seed_matches("occupation:nurse", young)
    assert seed_matches("age:18-29", young) and not seed_matches("age:30-45", young)
    assert seed_matches("working", young) and not seed_matches("not_working", young)
    liked = [s for s in bank().values() if s.likely]
    if not liked:
        pytest.skip("the shipped bank has no spec with likely predicates")
    spec = max(liked, key=lambda s: weight(s, young))
    if weight(spec, young) == 1.0:
        pytest.skip("no spec the sample seed makes likelier")
    other = young.model_copy(update={"age": 80, "occupation": "retired", "occupation_group": "not in labor force",
                                     "household": "living with other relatives", "region": "Nowhere", "hobbies": [],
                                     "goals": [], "sex": "male" if young.sex == "female" else "female",
                                     "education": "none"})  # fmt: skip
    assert weight(spec, young) > weight(spec, other)
    held = Counter()
    for i in range(40):
        for who, seed in (("young", young), ("other", other)):
            if demographic_issue(spec, seed) is None:
                held[who] += any(f.tags[0] == f"bank:{spec.key}" for f in sample_facts("p", random.Random(i), 60, seed))
    if held["other"]:
        assert held["young"] >= held["other"]


def test_a_file_seed_with_a_free_text_occupation_works(tmp_path: Path) -> None:
    """The issue's ICU nurse: a Nemotron-style row's occupation is not a shipped name; it used to fall into
    an empty group and count as not working, so the audit deleted her hospital shifts."""
    path = tmp_path / "seeds.jsonl"
    row = {"age": 34, "sex": "Female", "occupation": "ICU nurse", "state": "Ohio", "city": "Columbus",
           "persona": "A calm ICU nurse who bakes bread on her days off.",
           "professional_persona": "Works twelve-hour night shifts in a cardiac ICU."}  # fmt: skip
    path.write_text(json.dumps(row) + "\n")
    seed = read_seed_file(path, 1, 0)[0]
    assert seed.occupation_group == "Healthcare practitioners and technical" and working(seed)
    assert "bakes bread" in seed.narrative and "cardiac ICU" in seed.narrative
    assert seed_matches("mentions:bread", seed)
    shifts = [s for s in bank().values() if s.when.groups and any("health" in g.lower() for g in s.when.groups)]
    for s in shifts:
        assert not (demographic_issue(s, seed) or "").startswith("not working"), s.key
    assert occupation_group_of("retired") == "not in labor force" and occupation_group_of("astronaut") == "Other"
    assert working(seed.model_copy(update={"occupation": "astronaut", "occupation_group": "Other"}))


def test_a_successor_must_fit_the_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    """No change into a state the seed rules out (the issue's newborn twins in a home the seed says has no
    children): the audit's demographic conditions hold for a successor too."""
    from hippocamp.synth.personas import facts as F
    from hippocamp.synth.personas.banks import When

    spec = next(s for s in bank().values() if s.then is not None)
    bounded = spec.model_copy(update={"then": spec.then.model_copy(update={"when": When(max_age=30)})})  # type: ignore[union-attr]
    monkeypatch.setattr(F, "spec_of", lambda fact: bounded)
    prior = fact_from_spec(spec, "p001-F001", choose_slots(spec, random.Random(0)))
    seed = sample_seeds(1, 0, None)[0]
    old, young = seed.model_copy(update={"age": 31}), seed.model_copy(update={"age": 30})
    assert len(apply_changes([prior], "p001", dt.date(2025, 3, 3), 90, random.Random(0), 1, old)) == 1
    assert len(apply_changes([prior], "p001", dt.date(2025, 3, 3), 90, random.Random(0), 1, young)) == 2


def test_the_interview_is_asked_first_and_answers_fit() -> None:
    """Questions first; each fact is distilled from the answer that states it, to a question about it. The
    issue's quoted misfit ("What schooling...?" answered by a promotion at work) is flagged."""
    seed = sample_seeds(1, 2, None)[0]
    turns, facts = template_interview(seed, random.Random(2), 60)
    assert [t.question for t in turns][:3] == [t.question for t in template_interview(seed, random.Random(9), 10)[0]][
        :3
    ]
    assert len(facts) == 60 and check_interview(turns, facts) == []
    for f in facts:
        turn = next(t for t in turns if t.id == f.sources[0])
        assert answers_question(f, turn.question), (f.label, turn.question)
    work = next(f for f in facts if f.category == "work")
    schooling = next(t for t in turns if t.question == "What schooling or training have you done?")
    bad = schooling.model_copy(update={"answer": work.value})
    problems = check_interview([bad], [work.model_copy(update={"sources": [schooling.id]})])
    assert problems and "does not ask about" in problems[0]
    missing = check_interview([InterviewTurn(id="q001", topic="history", question="x", answer="nothing")],
                              [work.model_copy(update={"sources": ["q001"]})])  # fmt: skip
    assert missing and "does not state" in missing[0]


def test_a_change_during_the_window_is_not_a_seed_contradiction(tmp_path: Path) -> None:
    """The independent audit reads the seed as the life before the window: newborn twins that arrive in
    April are a change for a "no children at home" seed, the same fact from the start a contradiction."""
    write_persona(tmp_path, "p001", facts=["has newborn twins"], household="married, no children at home")
    write_persona(tmp_path, "p002", facts=[("has newborn twins", "2025-04-10", None)],
                  household="married, no children at home")  # fmt: skip
    report = audit_set(tmp_path)
    hits = {f.persona for f in report.findings if f.check == "constraints" and f.severity == "violation"}
    assert "p001" in hits and "p002" not in hits


@pytest.fixture(scope="module")
def five(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("five") / "s"
    run_set(SetConfig(out=out, n=5, seed=1, days=30, facts=60))
    return out


def test_generated_personas_pass_the_interview_check(five: Path) -> None:
    for d in sorted(five.glob("p0*")):
        report = json.loads((d / "verification.json").read_text())
        check = next(c for c in report["checks"] if c["name"] == "interview")
        assert check["passed"], check["problems"][:3]


def test_generated_personas_share_few_facts(five: Path) -> None:
    """Parametrised facts drawn for the seed: the exact shared share stays well below the old 70%."""
    report = audit_set(five)
    shared = report.figures["shared_facts"]["mean_pairwise"]
    if not any(s.slots for s in bank().values()):
        pytest.skip("the shipped bank is not parametrised yet")
    assert shared <= 0.25, shared


def test_plausibility_is_reported_in_verification(five: Path) -> None:
    """verification.json carries the independent audit's findings over the persona's facts: the issue's
    79-year-old retiree with an aging parent, three diets and four childhoods is refused by the same
    rules that pass the generated personas."""
    for d in sorted(five.glob("p0*")):
        check = next(
            c for c in json.loads((d / "verification.json").read_text())["checks"] if c["name"] == "plausibility"
        )
        assert set(check["measured"]) == {"violations", "suspicious", "duplicates"}
    seed = {"id": "p9", "age": 79, "occupation": "retired", "household": "married, no children at home"}
    labels = [
        "cares for an aging parent",
        "eats halal",
        "follows a keto diet",
        "has celiac disease",
        "moved constantly as a military kid",
        "spent part of childhood in foster care",
        "grew up on a farm",
        "immigrated to the U.S. as an adult",
        "just became an empty nester",
        "cares for an aging parent",
    ]
    facts = [{"id": f"p9-F{i:03d}", "label": label, "category": "background"} for i, label in enumerate(labels)]
    found = plausibility("p9", seed, facts)
    assert any(f.severity == "violation" for f in found)
    assert any(f.check == "duplicate_fact" for f in found)


def test_the_audit_reads_parametrised_labels_precisely(tmp_path: Path) -> None:
    """Parametrised facts say more; the independent audit must not misread the extra words: a bike is
    single-speed, a person who can't drive after dark still drives, grandsons through a stepdaughter are
    not children at home, "2,000 yards" in a swim event's notes is not a 2 o'clock start."""
    write_persona(
        tmp_path,
        "p001",
        household="living with a partner",
        facts=[
            "bikes ten miles to work on a single-speed",
            "can't drive after dark because of glaucoma",
            "drives an electric Bolt and charges it in the garage overnight",
        ],
    )
    write_persona(tmp_path, "p002", household="living alone", facts=["has four grandsons through a stepdaughter"])
    swim = event("e0001", "2025-04-10T06:00:00", "2025-04-10T06:45:00", "Swim club", "lap lane, 6am, 2,000 yards")
    late = event("e0002", "2025-04-10T06:00:00", "2025-04-10T06:45:00", "Swim club", "lap lane, 7pm")
    write_persona(tmp_path, "p003", events=[swim, late])
    report = audit_set(tmp_path)
    assert not [f for f in report.findings if f.check == "constraints" and f.severity == "violation"]
    notes = [f for f in report.findings if f.check == "calendar_notes"]
    assert [f.record for f in notes] == ["e0002"]  # the real contradiction is still found
    write_persona(tmp_path, "p004", household="living alone", facts=["has a stepdaughter at home", "is single"])
    again = audit_set(tmp_path)
    assert [f.persona for f in again.findings if f.check == "constraints" and f.severity == "violation"] == ["p004"]


def test_the_paper_preset(tmp_path: Path) -> None:
    """``--preset paper`` is the paper's main set-up (100 personas, 5 contacts, 100 facts, 2.5:1 filler, no
    decoys); options given explicitly win, and without a preset the number of personas is required."""
    from click.testing import CliRunner

    from hippocamp.cli import main

    out = tmp_path / "p"
    args = ["synth", "personas", "--preset", "paper", "--n", "1", "--facts", "25", "--days", "14", "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (0, 1), result.output  # 1: a check failed, the files are still written
    config = json.loads((out / "config.json").read_text())
    assert (config["n"], config["facts"], config["contacts"]) == (1, 25, 5)
    assert (config["filler_ratio"], config["decoy_share"]) == (2.5, 0.0)
    missing = CliRunner().invoke(main, ["synth", "personas", "--out", str(tmp_path / "q")])
    assert missing.exit_code != 0 and "--n is required" in missing.output
