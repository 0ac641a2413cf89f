"""The interview bank (data/interview.json): one entry per interview question, in the order asked, with
the category and tags it asks about and at least four answers written for that question that format with
the seed slots and name no fact of the bank; a bad file is refused naming the entry and field."""

from __future__ import annotations

import copy
import json
import string
from collections import Counter
from importlib import resources
from typing import Any

import pytest

from hippocamp.synth.personas import interview
from hippocamp.synth.personas.banks import fact_bank, interview_bank, load_interview_bank
from hippocamp.synth.personas.facts import bank
from hippocamp.synth.personas.verify import has_term
from test_pcontext_banks import _refused

SLOTS = {
    "city": "Columbus",
    "state": "Ohio",
    "age": "47",
    "household": "living alone",
    "occupation_phrase": "retired",
    "goal": "save for a house",
    "hobby": "gardening",
}


def _shipped(name: str) -> Any:
    text = resources.files("hippocamp.synth.personas").joinpath(f"data/{name}").read_text(encoding="utf-8")
    return json.loads(text)


BANK: dict[str, Any] = _shipped("interview.json")
QUESTIONS: list[dict[str, Any]] = BANK["questions"]


def _ids(entry: dict[str, Any]) -> str:
    return entry["question"][:40]


def test_the_bank_loads_and_the_interview_asks_it() -> None:
    """108 questions over the nine topics, read by the loader; what each asks is what the interview uses."""
    loaded = interview_bank()
    assert BANK["version"] == 1 and len(QUESTIONS) == len(loaded.questions) == 108
    assert Counter(e["topic"] for e in QUESTIONS) == dict.fromkeys(set(e["topic"] for e in QUESTIONS), 12)
    assert [q for _, _, q in interview.question_list()] == [e["question"] for e in QUESTIONS]
    asked = interview.elicits()
    for entry in QUESTIONS:
        if entry["category"] is None:
            assert entry["question"] not in asked and entry["about"] == []
        else:
            assert asked[entry["question"]] == (entry["category"], frozenset(entry["about"]))


@pytest.mark.parametrize(
    ("change", "entry", "field", "reason"),
    [
        (lambda d: d["questions"][0].update(category="hobbies"), "questions", "0.category", "unknown category"),
        (lambda d: d["questions"][1].update(about=["no_such_tag"]), "questions", "1.about.0", "no spec carries"),
        (
            lambda d: d["questions"][2]["answers"].append("I am {mood} today."),
            "questions",
            "2.answers.5",
            "unknown slot",
        ),
        (lambda d: d["questions"].append(dict(d["questions"][0])), "questions", "108.question", "asked twice"),
        (
            lambda d: [q.update(category=None, about=[]) for q in d["questions"] if q["category"] == "diet"],
            "(top level)",
            "questions",
            "no broad question",
        ),
    ],
)
def test_a_bad_interview_bank_is_refused_naming_entry_and_field(
    tmp_path: Any, change: Any, entry: str, field: str, reason: str
) -> None:
    data = copy.deepcopy(BANK)
    change(data)
    _refused(tmp_path, lambda path: load_interview_bank(path, fact_bank()), data, entry, field, reason)


@pytest.mark.parametrize("entry", QUESTIONS, ids=_ids)
def test_answers_distinct_and_format(entry: dict[str, Any]) -> None:
    answers = entry["answers"]
    assert len(answers) >= 4
    assert len(set(answers)) == len(answers)
    assert len({a.strip().lower() for a in answers}) == len(answers)
    for answer in answers:
        assert answer.strip() == answer and answer
        fields = {name for _, name, _, _ in string.Formatter().parse(answer) if name is not None}
        assert fields <= set(SLOTS), (answer, fields - set(SLOTS))
        out = answer.format(**SLOTS)
        assert "{" not in out and "}" not in out


@pytest.mark.parametrize("entry", QUESTIONS, ids=_ids)
def test_first_words_vary(entry: dict[str, Any]) -> None:
    firsts = Counter(a.split()[0].strip(string.punctuation + "\u201c\u201d").lower() for a in entry["answers"])
    word, count = firsts.most_common(1)[0]
    assert count <= len(entry["answers"]) / 2, (word, count)


def _terms() -> set[str]:
    out: set[str] = set()
    for spec in bank().values():
        for term in [spec.label, *spec.synonyms]:
            if term and "{" not in term:
                out.add(term)
    return out


def test_no_fact_terms() -> None:
    terms = _terms()
    assert terms
    leaks = [
        (entry["question"], answer, term)
        for entry in QUESTIONS
        for answer in entry["answers"]
        for term in terms
        if has_term(answer, term)
    ]
    assert not leaks, leaks[:20]
