"""The template engine's banks as data files: the shipped files load (and the old module names still work),
importing the package reads neither, and each class of bad file is refused with an error that names the
file, the entry and the field."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from hippocamp.schema.pcontext import CATEGORIES
from hippocamp.synth.personas.banks import (
    BankError,
    FactBank,
    FactSpec,
    PhraseBank,
    fact_bank,
    load_fact_bank,
    load_phrase_bank,
    phrase_bank,
)


def _shipped(name: str) -> str:
    return resources.files("hippocamp.synth.personas").joinpath(f"data/{name}").read_text(encoding="utf-8")


FACTS: dict[str, Any] = json.loads(_shipped("facts.json"))
PHRASES: dict[str, Any] = json.loads(_shipped("phrases.json"))


def _index(key: str) -> int:
    return next(i for i, s in enumerate(FACTS["facts"]) if s["key"] == key)


def _spec(d: dict[str, Any], key: str) -> dict[str, Any]:
    return d["facts"][_index(key)]


#: specs the cases below edit: one plain, one with requests, one that changes (``then``)
PLAIN, ASKING, CHANGING = "farm", "diabetes", "caregiver"
#: PLAIN's own exclusive tag, which its conflicts must keep (one childhood)
OWN = {"x:childhood": "demographic"}


def test_shipped_banks_load_and_the_old_names_still_work() -> None:
    facts, phrases = fact_bank(), phrase_bank()
    assert isinstance(facts, FactBank) and isinstance(phrases, PhraseBank)
    assert fact_bank() is facts and phrase_bank() is phrases  # read once
    assert len(facts.facts) == len(FACTS["facts"]) and len(facts.specs()) > len(facts.facts)
    assert set(facts.theme) == set(CATEGORIES) == set(facts.category_ask)
    spec = facts.facts[_index(CHANGING)]
    assert spec.then is not None and spec.change and not spec.then.change and spec.then.then is None
    assert spec.then.when.min_age is None and spec.then.conflicts == {}  # defaults where the file says nothing
    shift = next(s for s in facts.facts if s.when.groups == facts.occupation_groups["shift_work"])
    assert shift.when.working is True  # a named set of occupation groups is resolved when read

    from hippocamp.pcontext.templates import facts as F
    from hippocamp.pcontext.templates import text as T

    assert F.BANK is facts.facts and F.THEME is facts.theme and F.CATEGORY_ASK is facts.category_ask
    assert facts.occupation_groups["desk_work"] == F.DESK_GROUPS and F.FactSpec is FactSpec
    assert T.FILLER_EVENTS is phrases.filler_events
    assert sum(len(q) for q in T.QUESTIONS.values()) == 108 and set(T.QUESTIONS) == set(T.GENERIC_ANSWERS)
    assert T.PATTERNS[0]["kind"] == phrases.patterns[0].kind  # the old shape: dicts
    assert isinstance(T.PATTERNS[0]["slots"], tuple)
    with pytest.raises(AttributeError):
        _ = F.NOT_A_BANK


def test_importing_the_package_reads_no_bank() -> None:
    code = (
        "import hippocamp.pcontext, hippocamp.pcontext.templates.facts\n"
        "from hippocamp.synth.personas import banks\n"
        "assert banks.fact_bank.cache_info().currsize == 0 and banks.phrase_bank.cache_info().currsize == 0\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def _refused(
    tmp_path: Path, load: Callable[[Path], object], data: object, entry: str, field: str, reason: str
) -> BankError:
    path = tmp_path / "bank.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    with pytest.raises(BankError) as caught:
        load(path)
    err = caught.value
    assert (err.file, err.entry, err.field) == (str(path), entry, field), str(err)
    assert reason in err.reason, str(err)
    assert str(path) in str(err) and entry in str(err) and repr(field) in str(err)
    return err


def _entry(key: str, section: str = "facts") -> str:
    return f"{section}[{_index(key)}] ({key!r})"


def _set(path: tuple[str | int, ...], value: object) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        target: Any = _spec(d, str(path[0])) if path[0] in (PLAIN, ASKING, CHANGING) else d[path[0]]
        for step in path[1:-1]:
            target = target[step]
        target[path[-1]] = value

    return edit


def _drop(path: tuple[str, ...]) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        target: Any = _spec(d, path[0])
        for step in path[1:-1]:
            target = target[step]
        del target[path[-1]]

    return edit


#: (what, edit of the shipped facts file, entry, field, part of the reason)
FACT_CASES: list[tuple[str, Callable[[dict[str, Any]], None], str, str, str]] = [
    ("unknown key", _set((PLAIN, "colour"), "red"), _entry(PLAIN), "colour", "Extra inputs are not permitted"),
    ("unknown key in a request", _set((ASKING, "requests", 0, "urgency"), 1), _entry(ASKING), "requests.0.urgency",
     "Extra inputs"),
    ("unknown condition", _set((PLAIN, "when"), {"min_ag": 30}), _entry(PLAIN), "when.min_ag", "Extra inputs"),
    ("number as a string", _set((PLAIN, "when"), {"min_age": "30"}), _entry(PLAIN), "when.min_age",
     "valid integer (got '30')"),
    ("bool as a number", _set((PLAIN, "when"), {"min_age": True}), _entry(PLAIN), "when.min_age", "valid integer"),
    ("string for a list", _set((PLAIN, "synonyms"), "farm kid"), _entry(PLAIN), "synonyms", "valid tuple"),
    ("calendar pair too short", _set((PLAIN, "cals", 0), ["County fair"]), _entry(PLAIN), "cals.0.1",
     "Field required"),
    ("no cues", _set((PLAIN, "cues"), []), _entry(PLAIN), "cues", "at least 1 item"),
    ("missing ask", _drop((PLAIN, "ask")), _entry(PLAIN), "ask", "Field required"),
    ("blank ask", _set((PLAIN, "ask"), "  "), _entry(PLAIN), "ask", "no question"),
    ("missing ask of a successor", _drop((CHANGING, "then", "ask")), _entry(CHANGING), "then.ask", "Field required"),
    ("change without then", _drop((CHANGING, "then")), _entry(CHANGING), "change", "needs a successor state"),
    ("then without change", _drop((CHANGING, "change")), _entry(CHANGING), "change", "needs a change topic"),
    ("successor with a change topic", _set((CHANGING, "then", "change"), "again"), _entry(CHANGING), "then.change",
     "needs a successor state"),
    ("duplicate key", _set((ASKING, "key"), PLAIN), f"facts[{_index(ASKING)}] ({PLAIN!r})", "key",
     f"already the key of {_entry(PLAIN)}"),
    ("successor reusing a key", _set((CHANGING, "then", "key"), PLAIN), _entry(CHANGING), "then.key",
     f"already the key of {_entry(PLAIN)}"),
    ("conflict tag no spec carries", _set((PLAIN, "conflicts"), OWN | {"vampire": "behavioral"}), _entry(PLAIN),
     "conflicts.vampire", "no spec carries the tag 'vampire'"),
    ("unknown perspective", _set((PLAIN, "conflicts"), OWN | {"eats_meat": "moral"}), _entry(PLAIN),
     "conflicts.eats_meat", "'political'"),
    ("exclusive tag not self-conflicting", _set((PLAIN, "tags"), ["x:farmish"]), _entry(PLAIN), "tags.0",
     "missing from conflicts"),
    ("unknown category", _set((PLAIN, "category"), "hobbies"), _entry(PLAIN), "category", "unknown category"),
    ("unknown boundary", _set((ASKING, "requests", 0, "boundary"), "maybe"), _entry(ASKING), "requests.0.boundary",
     "unknown boundary 'maybe'"),
    ("unknown occupation group set", _set((PLAIN, "when"), {"groups": "night_work"}), _entry(PLAIN), "when.groups",
     "no occupation group set 'night_work'"),
    ("bad key", _set((PLAIN, "key"), "Farm Kid"), f"facts[{_index(PLAIN)}] ('Farm Kid')", "key", "match pattern"),
    ("entry not an object", _set(("facts", _index(PLAIN)), "farm"), f"facts[{_index(PLAIN)}]", "(the whole entry)",
     "valid dictionary"),
    ("theme missing a category", lambda d: d["theme"].pop("diet"), "theme", "diet", "the category is missing"),
    ("theme of an unknown category", _set(("theme", "pets"), "home"), "theme", "pets", "unknown category"),
    ("category question missing", lambda d: d["category_ask"].pop("hobby"), "category_ask", "hobby", "missing"),
    ("group set not a list", _set(("occupation_groups", "desk_work"), "Computer"), "occupation_groups", "desk_work",
     "valid tuple"),
    ("unknown section", lambda d: d.update(extra={}), "(top level)", "extra", "Extra inputs"),
    ("missing section", lambda d: d.pop("facts"), "(top level)", "facts", "Field required"),
    ("other version", lambda d: d.update(version=2), "(top level)", "version", "expected 1 (got 2)"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "edit", "entry", "field", "reason"), FACT_CASES, ids=[c[0] for c in FACT_CASES])
def test_a_bad_facts_file_is_refused_naming_file_entry_and_field(
    tmp_path: Path, what: str, edit: Callable[[dict[str, Any]], None], entry: str, field: str, reason: str
) -> None:
    data = copy.deepcopy(FACTS)
    edit(data)
    _refused(tmp_path, load_fact_bank, data, entry, field, reason)


def test_a_repeated_json_key_or_broken_json_is_refused(tmp_path: Path) -> None:
    text = _shipped("facts.json")
    label = f'"label": {json.dumps(FACTS["facts"][0]["label"])},'
    assert label in text
    repeated = text.replace(label, label + ' "label": "twice",', 1)
    _refused(tmp_path, load_fact_bank, repeated, _entry(PLAIN), "label", "repeated")
    # a syntax error's entry is where it is
    _refused(tmp_path, load_fact_bank, '{"version": 1,\n "theme": {,}}', "line 2 column 12", "-", "not valid JSON")
    _refused(tmp_path, load_fact_bank, "[]", "(top level)", "-", "expected a JSON object")
    with pytest.raises(BankError, match="cannot be read"):
        load_fact_bank(tmp_path / "absent.json")


def _phrases(path: Path) -> PhraseBank:
    return load_phrase_bank(path, fact_bank())


PHRASE_CASES: list[tuple[str, Callable[[dict[str, Any]], None], str, str, str]] = [
    ("unknown section", lambda d: d.update(greetings=["hi"]), "(top level)", "greetings", "Extra inputs"),
    ("missing section", lambda d: d.pop("replies"), "(top level)", "replies", "Field required"),
    ("empty list", lambda d: d.update(replies=[]), "(top level)", "replies", "at least 1 item"),
    ("wrong type in a word list", lambda d: d["words"]["food"].__setitem__(3, 7), "words", "food.3",
     "valid string (got 7)"),
    ("calendar filler not a pair", lambda d: d["filler_events"].__setitem__(1, ["a", "b", "c"]), "filler_events",
     "1", "at most 2 items"),
    ("unknown pattern key", lambda d: d["patterns"][2].update(weight=1), "patterns[2]", "weight", "Extra inputs"),
    ("unknown mechanism", lambda d: d["patterns"][2].update(kind="habit"), "patterns[2]", "kind",
     "unknown mechanism 'habit'"),
    ("a single slot", lambda d: d["patterns"][2].update(slots=[["budget"]]), "patterns[2]", "slots",
     "at least 2 items"),
    ("pattern tag no spec carries", lambda d: d["patterns"][2]["slots"][0].__setitem__(0, "vampire"),
     "patterns[2]", "slots.0.0", "no spec carries the tag 'vampire'"),
    ("pattern of an unknown category", lambda d: d["patterns"][2]["slots"][1].__setitem__(0, "cat:pets"),
     "patterns[2]", "slots.1.0", "unknown category 'pets'"),
    ("contact kind without a history", lambda d: d["contact_kinds"]["married"].append("butler"), "contact_kinds",
     "married.1", "no contact_history for 'butler'"),
    ("no kinds that always fit", lambda d: d["contact_kinds"].pop("*"), "contact_kinds", "*", "missing"),
    ("activity of an unknown theme", _set(("shared_activity", "pets"), "walks"), "shared_activity", "pets",
     "not a theme"),
    ("other version", lambda d: d.update(version="1"), "(top level)", "version", "expected 1 (got '1')"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "edit", "entry", "field", "reason"), PHRASE_CASES, ids=[c[0] for c in PHRASE_CASES])
def test_a_bad_phrases_file_is_refused_naming_file_entry_and_field(
    tmp_path: Path, what: str, edit: Callable[[dict[str, Any]], None], entry: str, field: str, reason: str
) -> None:
    data = copy.deepcopy(PHRASES)
    edit(data)
    _refused(tmp_path, _phrases, data, entry, field, reason)


def test_the_shipped_files_are_read_back_by_the_loader(tmp_path: Path) -> None:
    """A copy of the shipped files loads to the same banks (the loader takes any path)."""
    (tmp_path / "facts.json").write_text(_shipped("facts.json"), encoding="utf-8")
    (tmp_path / "phrases.json").write_text(_shipped("phrases.json"), encoding="utf-8")
    facts = load_fact_bank(tmp_path / "facts.json")
    assert facts == fact_bank()
    assert load_phrase_bank(str(tmp_path / "phrases.json"), facts) == phrase_bank()
