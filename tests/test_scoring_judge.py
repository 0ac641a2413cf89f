"""Judges: the deterministic layer against a table of traps, the model path through the mock, outages
as unscored, panels, and calibration."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest

from hippocamp.models import get_model
from hippocamp.models.errors import ModelError, TransientModelError
from hippocamp.scoring.calibrate import agreement, load_labeled, perturb, self_test
from hippocamp.scoring.judge import Judge, Panel, check_facts, cohen_kappa, panel_agreement

ACCEPT = json.dumps({"correct": True, "score": 5, "rationale": "matches"})
REJECT = json.dumps({"correct": False, "score": 1, "rationale": "not correct"})


def judge(outputs: Any, mode: str = "robust", retries: int = 1) -> Judge:
    return Judge(get_model("mock", outputs=outputs), mode=mode, retries=retries)


def run(j: Judge, q: str, ref: str, resp: str) -> Any:
    return asyncio.run(j.judge(q, ref, resp))


# Each trap is a wrong answer a lenient judge model accepts; the robust judge must not.
TRAPS = [
    ("How much is my rent?", "EUR 1,450 per month", "It is EUR 1,540 per month.", "number"),
    ("What was net AR?", "$1,616 million", "Net AR was $1,616 billion.", "scale"),
    ("When is dinner?", "Saturday 23 March 2024 at 20:00", "Friday 22 March 2024 at 19:00.", "date"),
    ("Who is my landlord?", "Oskar Lindqvist", "Your landlord is Elias Haddad.", "name"),
    ("Did the lease start on 1 March?", "Yes", "No, it started in April.", "polarity"),
    ("When did the lease start?", "On 1 March 2024.", "The lease did not start on 1 March 2024.", "negation"),
    ("How much is my rent?", "EUR 1,450 per month", "It could be EUR 1,400, EUR 1,450 or EUR 1,500.", "hedge"),
    (
        "How much is my rent?",
        "EUR 1,450 per month",
        "After carefully reviewing every document in great detail, considering the lease, the bank statements and "
        "the correspondence, and weighing all of the evidence thoroughly, the monthly rent is EUR 1,405.",
        "verbose",
    ),
]
# A refusal or an evasive answer that gives none of a short reference's figures
TRAPS.append(("How much is my rent?", "EUR 1,450 per month", "I could not find the lease in your files.", "refusal"))
# Right answers in other words: the deterministic layer accepts them itself (every key fact present).
FAIR = [
    ("How much is my rent?", "EUR 1,450 per month", "Your rent is 1450 euros a month."),
    ("What was net AR?", "$1,616 million", "Net AR was $1,615.9 million."),
    ("When is dinner?", "Saturday 23 March 2024 at 20:00", "On Sat 23 March 2024 at 8 pm."),
    ("Who is my landlord?", "Oskar Lindqvist", "Oskar Lindqvist, who signed the lease."),
    ("How many nights?", "3 nights", "Three nights."),
    ("Current liabilities (in USD millions)?", "5466", "They were $5,466,312,000."),
]


@pytest.mark.parametrize(("q", "ref", "resp", "kind"), TRAPS, ids=[t[3] for t in TRAPS])
def test_traps_are_rejected_even_by_a_lenient_model(q: str, ref: str, resp: str, kind: str) -> None:
    j = run(judge([ACCEPT] * 3), q, ref, resp)
    assert j.correct is False and j.decided_by == "facts", (kind, j)
    assert j.facts is not None and j.facts.blocks
    plain = run(judge([ACCEPT] * 3, mode="simple"), q, ref, resp)
    assert plain.correct is True  # the plain template trusts the model: this is what robust fixes


@pytest.mark.parametrize(("q", "ref", "resp"), FAIR)
def test_fair_paraphrases_are_accepted_by_the_deterministic_layer(q: str, ref: str, resp: str) -> None:
    facts = check_facts(q, ref, resp)
    assert not facts.blocks and facts.complete, facts
    j = run(judge([REJECT]), q, ref, resp)  # a model that would reject is not asked
    assert j.correct is True and j.decided_by == "facts" and j.score == 5 and j.model_correct is None


def test_what_the_layer_cannot_check_goes_to_the_model() -> None:
    """A bare yes/no answered the same way, or a reference without a checkable fact: the model decides."""
    for q, ref, resp in [
        ("Did the lease start on 1 March?", "Yes", "Yes, on 1 March 2024."),
        ("Why did I move?", "for the new job", "Because of the new job."),
    ]:
        facts = check_facts(q, ref, resp)
        assert not facts.blocks and not facts.complete, facts
        for verdict, expected in ((ACCEPT, True), (REJECT, False)):
            j = run(judge([verdict]), q, ref, resp)
            assert j.correct is expected and j.decided_by == "model" and j.model_correct is expected


def test_not_correct_is_not_correct() -> None:
    j = run(judge([REJECT]), "Why did I move?", "for the new job", "for the new job")
    assert j.correct is False and j.rationale == "not correct" and j.model_correct is False


def test_detailed_verdict_follows_the_score() -> None:
    odd = json.dumps({"correct": True, "score": 2, "rationale": "partly"})
    j = run(judge([odd], mode="detailed"), "q?", "Oskar", "Oskar")
    assert j.correct is False and j.score == 2


def test_outage_is_unscored_never_zero() -> None:
    j = run(judge([ModelError("down"), ModelError("down again")], retries=1), "q?", "the new job", "the new job")
    assert j.correct is None and j.score is None and j.status == "unscored" and "down again" in j.error
    assert j.attempts == 2
    garbage = run(judge(["no json at all", "still no json", "nope", "nah"], retries=1), "q?", "Oskar", "Oskar")
    assert garbage.status == "unscored"
    recovered = run(judge([TransientModelError("blip"), ACCEPT]), "q?", "the new job", "the new job")
    assert recovered.correct is True


def test_empty_answer_is_wrong_without_a_model() -> None:
    j = run(judge([]), "q?", "EUR 5", "  ")
    assert j.correct is False and j.score == 0


def test_panel_majority_and_ties() -> None:
    judges = [judge([ACCEPT]), judge([ACCEPT]), judge([REJECT])]
    verdict, each = asyncio.run(Panel(judges).judge("q?", "Oskar", "Oskar"))
    assert verdict.correct is True and len(each) == 3 and "2 of 3" in verdict.rationale
    tie, _ = asyncio.run(Panel([judge([ACCEPT]), judge([REJECT])]).judge("q?", "Oskar", "Oskar"))
    assert tie.correct is None and tie.status == "unscored"
    agreement_ = panel_agreement([each, each])
    assert len(agreement_) == 3


def test_cohen_kappa_by_hand() -> None:
    # 10 items: both yes 4, both no 3, a-yes/b-no 2, a-no/b-yes 1 -> po=.7, pa=.6, pb=.5, pe=.5, kappa=.4
    a = [True] * 4 + [False] * 3 + [True] * 2 + [False]
    b = [True] * 4 + [False] * 3 + [False] * 2 + [True]
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa([True, None], [None, False]) is None


def test_perturbations_cover_every_kind() -> None:
    kinds = {k for k, _ in perturb("Oskar Lindqvist paid $1,616 million on 12 March 2024.", random.Random(1))}
    assert kinds == {"number", "scale", "date", "name", "negate", "hedge"}


def test_calibration_and_self_test(tmp_path: Path) -> None:
    rows = [
        {
            "question": "Net AR (in USD millions)?",
            "gold_answer": 1616,
            "model_answer": "$1,615.9 million",
            "label": "Correct Answer",
        },
        {
            "question": "Net AR (in USD millions)?",
            "gold_answer": 1616,
            "model_answer": "$2,100 million",
            "label": "Incorrect Answer",
        },
        {
            "question": "Net AR (in USD millions)?",
            "gold_answer": 1616,
            "model_answer": "I cannot tell.",
            "label": "Refusal",
        },
    ]
    path = tmp_path / "labeled.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    labeled = load_labeled(path)
    assert [r.correct for r in labeled] == [True, False, False]

    def lenient(request: Any) -> str:
        return ACCEPT

    result = asyncio.run(agreement(judge(lenient), labeled))
    # robust: the wrong number contradicts the key figure; the refusal gives none of the key figures
    assert result.scored == 3 and result.false_reject == 0.0 and result.false_accept == 0.0
    assert result.accuracy == 1.0 and result.kappa == 1.0
    plain = asyncio.run(agreement(judge(lenient, mode="simple"), labeled))
    assert plain.false_accept == 1.0 and plain.accuracy == pytest.approx(1 / 3)
    test = asyncio.run(self_test(judge(lenient), [("Rent?", "EUR 1,450 per month from 1 March 2024")]))
    assert test.accepts_gold == 1.0 and test.false_accept["all"] == 0.0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "gold_answer": 1, "model_answer": "x", "label": "Maybe"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:1: field 'label'"):
        load_labeled(bad)


@pytest.mark.slow
def test_real_server_judgments() -> None:
    """The model path once through a real server (SmolLM2 in CI): a structured verdict or an honest unscored."""
    import os

    url = os.environ.get("HIPPOCAMP_TEST_SERVER")
    if not url:
        pytest.skip("needs HIPPOCAMP_TEST_SERVER (an OpenAI-compatible llama.cpp server with SmolLM2)")
    j = Judge(get_model(f"openai-compatible:smollm2@{url}"), mode="robust")
    # no checkable fact in the reference: the model decides (a verdict or an honest unscored)
    prose = asyncio.run(j.judge("How does my landlord feel about the garden?", "He loves it.", "He is fond of it."))
    assert prose.decided_by == "model" and (prose.status == "unscored" or prose.score is not None)
    # every key fact there and nothing contradicted: the deterministic layer is sure, no model needed
    same = asyncio.run(j.judge("Who is my landlord?", "Oskar Lindqvist", "Oskar Lindqvist."))
    assert same.correct is True and same.decided_by == "facts"
    wrong = asyncio.run(j.judge("How much is my rent?", "EUR 1,450 per month", "EUR 1,540 per month."))
    assert wrong.correct is False and wrong.decided_by == "facts"


def test_a_judge_is_added_by_one_registration() -> None:
    """A plug-in judge is a callable registered under kind ``judge``; the CLI's --judge-mode takes it."""
    from click.testing import CliRunner

    from hippocamp import registry
    from hippocamp.cli import main
    from hippocamp.scoring.judge import Judgment, judge_names, make_judge

    class Lenient:
        id = mode = "lenient"

        async def judge(self, question: str, reference: str, response: str) -> Judgment:
            return Judgment(True, 5, "accepts everything", "lenient", judge="lenient")

    def lenient(model: object = None) -> Lenient:
        return Lenient()

    lenient.needs_model = False  # type: ignore[attr-defined]
    registry.register("judge", "lenient")(lenient)
    try:
        assert "lenient" in judge_names() and {"robust", "simple", "detailed", "facts"} <= set(judge_names())
        assert isinstance(make_judge("lenient"), Lenient)
        with pytest.raises(ValueError, match="needs a model"):
            make_judge("robust")
        bad = CliRunner().invoke(main, ["score", "--hippocamp-io", __file__, "--judge-mode", "lenent"])
        assert bad.exit_code == 2 and "did you mean 'lenient'" in bad.output
    finally:
        registry._registry["judge"].pop("lenient", None)


def test_the_model_reasons_before_it_scores() -> None:
    """A schema-constrained model writes the fields in order: the rationale comes first, and the prompts
    show the same order."""
    from hippocamp.scoring.judge import Verdict

    assert list(Verdict.model_json_schema()["properties"]) == ["rationale", "score", "correct"]
    for mode in ("simple", "detailed"):
        text = Judge(get_model("mock"), mode=mode).prompt("Q?", "REF", "RESP")
        assert text.index('"rationale"') < text.index('"score"') < text.index('"correct"')
        assert text.index("REF") < text.index("RESP") and "never" in text


@pytest.mark.hostile
def test_a_backtracking_response_is_checked_in_bounded_time() -> None:
    """'1,1,1,...' made the alternatives pattern backtrack exponentially (22 pairs took 3 s); a hang
    detector with a wide margin, not a speed target."""
    import time

    started = time.monotonic()
    facts = check_facts("How much?", "1,450", "1," * 5000)
    assert not facts.hedged and time.monotonic() - started < 20
    assert check_facts("How much?", "1,450", "It could be 1,400, 1,450 or 1,500.").hedged
