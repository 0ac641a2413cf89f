"""The robust judge's deterministic guard, rule by rule: each rule with an answer people accept and one
they reject (hand-written examples in the spirit of FinanceBench's labels), the model asked only where
the guard cannot decide, and calibration reporting the guard beside the judge."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from hippocamp.scoring.calibrate import LabeledRow, agreement_with_layer
from hippocamp.scoring.judge import Judge, check_facts

ACCEPT = json.dumps({"correct": True, "score": 5, "rationale": "matches"})
REJECT = json.dumps({"correct": False, "score": 1, "rationale": "does not match"})


class FakeModel:
    """Answers every request with one verdict and counts the requests."""

    id = "fake"

    def __init__(self, verdict: str) -> None:
        self.verdict = verdict
        self.calls = 0

    async def generate(self, messages: Any, response_format: Any = None, **_: Any) -> Any:
        self.calls += 1

        class Generation:
            parsed = response_format.model_validate_json(self.verdict)

        return Generation()


def robust(q: str, ref: str, resp: str, verdict: str = ACCEPT) -> tuple[Any, FakeModel]:
    model = FakeModel(verdict)
    return asyncio.run(Judge(model, mode="robust").judge(q, ref, resp)), model


def layer(q: str, ref: str, resp: str) -> Any:
    return asyncio.run(Judge(None, mode="facts").judge(q, ref, resp))


def settled(q: str, ref: str, resp: str, expected: bool) -> None:
    """The guard decides alone: a model that says the opposite is not asked."""
    j, model = robust(q, ref, resp, REJECT if expected else ACCEPT)
    assert j.correct is expected and j.decided_by == "facts" and model.calls == 0, j
    assert layer(q, ref, resp).correct is expected


# -- figures in other words, units and roundings ---------------------------------------------------------
Q_MILLIONS = "What is the year end FY2020 net AR (in USD millions)?"


@pytest.mark.parametrize(
    ("q", "ref", "resp"),
    [
        (Q_MILLIONS, "1616", "Net AR was $1.6 billion."),  # rounded by the response, in another scale
        (Q_MILLIONS, "1616", "Net AR was $1,615.9 million."),
        ("What was the capital intensity ratio?", "2.774729", "It was about 2.77."),
        ("What was the net margin?", "0.23", "The net margin was 23%."),  # a ratio as a percentage
        ("What was the net margin?", "23%", "The net margin was 0.23 of revenue."),
        ("What was the 3 year average margin?", "0.028", "Rounded, the average margin is 2.8%."),
        ("What was the operating result?", "(1,234)", "An operating loss of $1,234."),  # parentheses: negative
        ("What was the operating result?", "-1,234", "The operating result was (1,234)."),
        ("How many employees?", "12,345", "About 12.3 thousand employees."),
    ],
)
def test_figures_written_another_way_are_accepted(q: str, ref: str, resp: str) -> None:
    settled(q, ref, resp, True)


@pytest.mark.parametrize(
    ("q", "ref", "resp"),
    [
        (Q_MILLIONS, "1616", "Net AR was $2 billion."),  # one significant digit is not the figure
        (Q_MILLIONS, "1616", "Net AR was $1.7 billion."),
        (Q_MILLIONS, "1616", "Net AR was $1,616 billion."),
        ("What was the capital intensity ratio?", "2.774729", "It was about 2.5."),
        ("What was the net margin?", "0.23", "The net margin was 32%."),
        ("What was the operating result?", "(1,234)", "An operating loss of $1,324."),
        ("How many employees?", "12,345", "About 11,000 employees."),
    ],
)
def test_other_figures_are_rejected(q: str, ref: str, resp: str) -> None:
    settled(q, ref, resp, False)


# -- figures the response works out in one step ------------------------------------------------------------
@pytest.mark.parametrize(
    ("ref", "resp"),
    [
        ("A decline of 1.1% in gross margin.", "Gross margin was 21.4%, down from 22.5% the year before."),
        ("Cash fell by ~42%.", "Cash went from $1,874 million in FY2023 to $1,093 million in Q2 FY2024."),
        (
            "87% of the restructuring liability relates to employees.",
            "The liability was $93 million, broken down as follows:\n- Employee costs: $81 million",
        ),
        ("Debt decreased by $2.5 billion.", "Total debt went from $49.7 billion to $47.2 billion."),
    ],
)
def test_a_figure_derived_from_figures_stated_together_is_present(ref: str, resp: str) -> None:
    settled("What changed?", ref, resp, True)


@pytest.mark.parametrize(
    ("ref", "resp"),
    [
        ("A decline of 1.1% in gross margin.", "Gross margin was 21.9%, down from 22.5% the year before."),
        ("Cash fell by ~42%.", "Cash went from $1,874 million in FY2023 to $1,593 million in Q2 FY2024."),
        # figures far apart, or among many (a table), are not combined
        (
            "Cash fell by ~42%.",
            "Cash was $1,874 million in FY2023. " + "Filler words here. " * 3 + "It is $1,093 million.",
        ),
        ("Cash fell by ~42%.", "Cash: $1,874 million, $1,093 million, $1,500 million, $1,200 million."),
    ],
)
def test_figures_that_do_not_give_the_reference_leave_it_missing(ref: str, resp: str) -> None:
    facts = check_facts("What changed?", ref, resp)
    assert not facts.complete and facts.missing and not facts.matched, facts
    settled("What changed?", ref, resp, False)  # a short reference none of whose figures is given


def test_a_competing_figure_is_not_rescued_by_arithmetic() -> None:
    """A stated wrong share is a contradiction, even if two other figures happen to give the right one."""
    ref, resp = "Cash fell by 42%.", "Cash fell by 30%, from $1,874 million to $1,093 million."
    assert check_facts("How much did cash fall?", ref, resp).contradicted
    settled("How much did cash fall?", ref, resp, False)


# -- refusals ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "resp",
    [
        "I'm sorry, but the provided context does not include the inventory figure.",
        "The text provided does not specify the key agenda of the filing.",
        "The documents do not contain any information about acquisitions in those years.",
        "I could not find the lease in your files.",
    ],
)
def test_a_refusal_is_wrong_without_a_model(resp: str) -> None:
    for ref in (
        "5409",
        "Amcor acquired a flexibles plant in the Czech Republic and a site in Shanghai.",
        "Yes, it did.",
    ):
        assert check_facts("What happened?", ref, resp).refusal
        settled("What happened?", ref, resp, False)


def test_declining_is_right_when_the_reference_says_the_answer_is_not_there() -> None:
    ref = "The files do not mention a deposit."
    resp = "I'm sorry, your documents do not include any deposit."
    assert not check_facts("How much was the deposit?", ref, resp).refusal
    j, model = robust("How much was the deposit?", ref, resp, ACCEPT)
    assert j.correct is True and model.calls == 1


def test_a_caveat_followed_by_an_answer_is_not_a_refusal() -> None:
    q, ref = "What industry is Amcor in?", "Packaging for various uses."
    resp = "The documents do not state the industry directly. However, Amcor makes packaging for food and drinks."
    assert not check_facts(q, ref, resp).refusal
    j, model = robust(q, ref, resp, ACCEPT)
    assert j.correct is True and j.decided_by == "model" and model.calls == 1
    assert check_facts(q, ref, "The documents do not state the industry. Sorry.").refusal


def test_a_caveat_followed_by_the_figure_is_not_a_refusal() -> None:
    resp = "The balance sheet does not state it directly, but inventories were $5,409 million."
    facts = check_facts("Year end FY2019 inventories (in USD millions)?", "5409", resp)
    assert not facts.refusal and facts.complete


# -- yes/no ----------------------------------------------------------------------------------------------
Q_CEO = "Does the new CEO have previous CEO experience in a similar company?"


@pytest.mark.parametrize(
    ("ref", "resp", "expected"),
    [
        ("Yes. She was CEO of Ulta Beauty.", "No, she has not been a CEO before.", False),
        (
            "Yes. She was CEO of Ulta Beauty.",
            "Based on the filing, Mary N. Dillon does not have CEO experience.",
            False,
        ),
        ("No. She has never led a company.", "Yes, she ran Ulta Beauty.", False),
        ("Yes. She was CEO of Ulta Beauty.", "Based on the filing, yes: Mary N. Dillon was CEO of Ulta Beauty.", True),
        ("No, she was never a CEO.", "Based on her biography, she does not have CEO experience.", None),
    ],
)
def test_the_answer_to_a_yes_no_question_is_read_after_a_preamble(ref: str, resp: str, expected: bool | None) -> None:
    facts = check_facts(Q_CEO, ref, resp)
    assert facts.polarity == ("contradict" if expected is False else "agree"), facts
    if expected is not None:
        settled(Q_CEO, ref, resp, expected)


def test_a_denial_is_only_read_from_the_opening_of_an_answer_to_a_yes_no_question() -> None:
    resp = "Margins do show some fluctuation, but not more than 2% a year. They have not moved much."
    assert check_facts("Are the margins consistent?", "Yes, they are consistent.", resp).polarity == "agree"
    resp = "To answer, we do not need the notes. The margins are consistent."  # a denial, but not of the claim?
    assert check_facts("Which margins are consistent?", "Yes, they are consistent.", resp).polarity == "agree"


# -- a figure that did not move --------------------------------------------------------------------------------
Q_FLAT = "How much was the real change in sales in FY2023 vs FY2022?"


@pytest.mark.parametrize(
    ("resp", "expected"),
    [
        ("Excluding currency and pass-through costs, the real change in sales was 0%.", True),
        ("Sales were unchanged in real terms.", True),
        ("Adjusted for pass-through costs, real sales growth was -4%, a decline of 4%.", False),
        ("Real sales grew 3%.", False),
    ],
)
def test_flat_is_a_change_of_zero(resp: str, expected: bool) -> None:
    settled(Q_FLAT, "The real growth was flat in FY2023 vs FY2022.", resp, expected)


def test_flat_against_an_amount_is_for_the_model() -> None:
    j, model = robust(Q_FLAT, "The real growth was flat.", "The real change was an increase of $98 million.")
    assert model.calls == 1 and j.decided_by == "model"


# -- names ------------------------------------------------------------------------------------------------
def test_names_match_across_spellings_and_hyphens() -> None:
    q = "Which segments are over 20% of revenue?"
    ref = "Commercial Airplanes (39%) and Defence (35%)."
    settled(q, ref, "Commercial Airplanes at 39% and Defense, Space & Security at 35%.", True)
    settled(q, ref, "Commercial Airplanes at 39% and Global Services at 35%.", False)
    facts = check_facts(
        "What did they buy?", "A New Zealand-based maker of packaging machines.", "A New Zealand based maker."
    )
    assert facts.complete


# -- what the model decides, and how the verdict is recorded ------------------------------------------------------
LONG_REF = (
    "Yes. Boeing has an improving gross margin profile as of FY2022. Gross profit improved from $3,017 million "
    "in FY2021 to $3,502 million in FY2022. Gross margin improved from 4.8% in FY2021 to 5.3% in FY2022."
)


def test_a_long_reference_with_every_key_fact_present_is_settled() -> None:
    resp = "Yes: gross profit rose from $3,017 million to $3,502 million, and margin from 4.8% to 5.3%."
    settled("Does Boeing have an improving gross margin profile?", LONG_REF, resp, True)


def test_a_long_reference_with_facts_in_other_words_goes_to_the_model() -> None:
    resp = (
        "Yes. Gross margin improved to about 5.30% in 2022 from 4.89% in 2021, as gross profit grew to $3,530 million."
    )
    for verdict, expected in ((ACCEPT, True), (REJECT, False)):
        j, model = robust("Does Boeing have an improving gross margin profile?", LONG_REF, resp, verdict)
        assert model.calls == 1 and j.correct is expected and j.decided_by == "model"
        assert j.facts is not None and j.facts.missing and not j.facts.blocks


Q_BUY = "What major acquisitions did Amcor make in FY2023?"
REF_BUY = (
    "Amcor completed these acquisitions during FY2023: a flexibles manufacturing company in the Czech Republic, "
    "a medical device packaging site in Shanghai, China, and a New Zealand-based maker of protein packaging machines."
)


def test_a_long_reference_whose_names_are_all_replaced_is_rejected() -> None:
    others = "In FY2023 Amcor agreed to buy a small flexible packaging maker in India; nothing else was mentioned."
    assert "the names" in " ".join(check_facts(Q_BUY, REF_BUY, others).contradicted)
    settled(Q_BUY, REF_BUY, others, False)
    some = "Amcor bought a flexibles plant in the Czech Republic and a medical packaging site in Shanghai."
    facts = check_facts(Q_BUY, REF_BUY, some)  # some of the names given: the model weighs the rest
    assert not facts.blocks and facts.missing
    assert robust(Q_BUY, REF_BUY, some, ACCEPT)[1].calls == 1


def test_a_long_reference_none_of_whose_figures_is_given_but_others_are_is_rejected() -> None:
    q = "Does Boeing have an improving gross margin profile?"
    wrong = (
        "Based on the statements, it appears that the gross margin has improved slightly. In 2021 the gross margin "
        "was 13.8%, and then it increased to 16.3% in 2022. This suggests an improving profile. Other factors matter."
    )
    assert check_facts(q, LONG_REF, wrong).contradicted
    settled(q, LONG_REF, wrong, False)
    vague = "Yes, the margin profile improved in FY2022 as gross profit grew faster than revenue."
    facts = check_facts(q, LONG_REF, vague)  # no competing figure: the model decides
    assert not facts.blocks and not facts.complete
    assert robust(q, LONG_REF, vague, ACCEPT)[1].calls == 1


def test_a_whole_number_is_not_a_ratio() -> None:
    """A whole number ("one", 1) is not 100%: only a decimal fraction is read as a share."""
    assert check_facts("What stake?", "100% of the shares.", "Amcor bought one company.").misses_all
    settled("What stake?", "100% of the shares.", "Amcor bought 1.00 of the shares, all of them.", True)


def test_calibration_reports_the_layer_beside_the_judge() -> None:
    rows = [
        LabeledRow(Q_MILLIONS, "1616", "Net AR was $1.6 billion.", True),
        LabeledRow(Q_MILLIONS, "1616", "Net AR was $2,100 million.", False),
        LabeledRow(Q_MILLIONS, "1616", "I'm sorry, the balance sheet does not include it.", False),
        LabeledRow("What industry is Amcor in?", "Packaging.", "Amcor makes packaging.", True),
        LabeledRow("Did PP&E grow?", "Yes, it grew.", "Yes, PP&E grew year over year.", True),
    ]
    model = FakeModel(ACCEPT)
    result = asyncio.run(agreement_with_layer(Judge(model, "robust"), rows, concurrency=2))
    assert model.calls == 2  # only the two rows without a checkable fact
    assert result.layer.scored == 3 and result.layer.unscored == 2 and result.layer.accuracy == 1.0
    assert result.judge.scored == 5 and result.judge.accuracy == 1.0 and result.judge.false_accept == 0.0
    on = result.on_layer_rows
    assert on["layer"].n == on["judge"].n == 3 and on["judge"].accuracy == on["layer"].accuracy == 1.0
    assert set(result.as_dict()) == {"layer", "judge", "on_layer_rows"}
    alone = asyncio.run(agreement_with_layer(Judge(None, "facts"), rows))
    assert alone.judge.as_dict() == alone.layer.as_dict()
