from __future__ import annotations

import pytest

from hippocamp.text.facts import extract_facts, unsupported_facts


def texts(facts) -> list[str]:
    return [f.text for f in facts]


def test_numbers_with_currency_scale_percent_and_negatives():
    facts = extract_facts("Revenue fell to $1.2 billion, a (3.5)% drop; EUR 2,900 deposit; -4 degrees.")
    by_text = {n.text: n for n in facts.numbers}
    assert by_text["$1.2 billion"].magnitude == pytest.approx(1.2e9)
    assert by_text["(3.5)%"].value == -3.5 and by_text["(3.5)%"].percent
    assert by_text["EUR 2,900"].value == 2900 and by_text["EUR 2,900"].currency == "EUR"
    assert by_text["-4"].value == -4


def test_identifiers_and_file_references_are_not_facts():
    facts = extract_facts("See Q3 and FY2024 in [Report 2023.pdf] and budget_v2.xlsx.")
    assert texts(facts.numbers) == []
    assert texts(facts.dates) == []


def test_dates_and_times():
    facts = extract_facts("Met on 12 March 2024, again March 14, 2024 and 2024-03-20 at 3:30 pm; due 04/05/2024.")
    readings = {d.text: d.readings for d in facts.dates}
    assert readings["12 March 2024"] == ((2024, 3, 12),)
    assert readings["March 14, 2024"] == ((2024, 3, 14),)
    assert readings["2024-03-20"] == ((2024, 3, 20),)
    assert set(readings["04/05/2024"]) == {(2024, 4, 5), (2024, 5, 4)}
    (time,) = facts.times
    assert time.minutes == (15 * 60 + 30,)
    assert texts(facts.numbers) == []  # parts of dates and times are not separate numbers


def test_names_skip_sentence_openers_and_calendar_words():
    facts = extract_facts("The lease was signed by Oskar Lindqvist on Monday. Revenue rose. Paid to Anna.")
    assert texts(facts.names) == ["Oskar Lindqvist", "Anna"]


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("$412.50 for 3 nights", "total 412.5, three nights"),
        ("Revenue was $1.2 billion.", "Total revenue 1,234 million"),
        ("On 12 March 2024 at 3:30 pm", "2024-03-12 15:30"),
        ("It grew 12%.", "growth of 12.0 percent"),
        ("The vet visit was on 3/4/2024.", "Vet: April 3, 2024"),
        ("Biscuit's booster", "vaccination for Biscuit"),
        ("310.3", "Groceries 310.25"),
    ],
)
def test_supported_claims(claim, evidence):
    assert unsupported_facts(claim, evidence) == []


@pytest.mark.parametrize(
    ("claim", "evidence", "missing"),
    [
        ("The total was 500 dollars.", "total 450", ["500"]),
        ("She met John Smith in Paris.", "met John in London", ["John Smith", "Paris"]),
        ("Due 12 March 2024.", "due 2024-03-13", ["12 March 2024"]),
        ("Revenue was $1.3 billion.", "Total revenue 1,234 million", ["$1.3 billion"]),
        ("At 9:15.", "at 9:45", ["9:15"]),
    ],
)
def test_unsupported_claims(claim, evidence, missing):
    assert texts(unsupported_facts(claim, evidence)) == missing
