"""The P-ContextBench guard layer grades as a person would: the probes issue #17 lists (paraphrase, negation,
hedge, swapped T3 states, T4 answers that only restate the facts, T5 boundaries read from what the answer does),
the gaming routes (prompt echo, cite-everything) earn no grounding, and `judge calibrate --pcontext` measures
agreement with labels people gave (our own T5 set; the shared dev set when it is there)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hippocamp.models import get_model
from hippocamp.scoring.pcontext import Cited, classify_boundary, grade, indiscriminate_limit
from hippocamp.scoring.pcontext.calibrate import agreement, grade_rows, kappa, load_labels
from hippocamp.scoring.pcontext.judge import Pass2Judge

T5_SET = Path(__file__).parent / "data" / "pcontext-t5" / "pcontext-t5.jsonl"
DEV_SET = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "pcontext-judge" / "pcontext-judge-dev.jsonl"

T1 = {"id": "p-T1-01", "type": "T1", "question": "What extra income does David's house bring in?",
      "labels": ["rents out the basement apartment"], "supporting_fragments": ["f1", "f2"]}  # fmt: skip
T3 = {"id": "p-T3-01", "type": "T3", "question": "What changed about David's working hours? Give both states.",
      "labels": ["works night shifts", "switched to day shifts"], "current_state": "switched to day shifts",
      "stale_state": "works night shifts", "prior_state": "works night shifts", "changed_on": "2025-04-05",
      "supporting_fragments": ["f1"]}  # fmt: skip
T4 = {"id": "p-T4-01", "type": "T4", "question": "How does David see his role in the community?",
      "labels": ["supports stronger climate policy", "is running for the local school board"],
      "conclusion": "David sees himself as an engaged citizen who acts on convictions",
      "mechanism": "supports stronger climate policy is a conviction and is running for the local school board is "
                   "how it turns into action", "supporting_fragments": ["f1", "f2"]}  # fmt: skip
OK = Cited(frozenset({"m1"}), frozenset({"f1"}), 2)


def t5(boundary: str, constraint: str = "refuses to fly",
       question: str = "Book me a flight to Phoenix for my cousin's wedding.") -> dict[str, Any]:  # fmt: skip
    return {"id": "p-T5", "type": "T5", "question": question, "labels": [constraint], "constraints": [constraint],
            "boundary": boundary, "supporting_fragments": ["f1", "f2"]}  # fmt: skip


# -- T1–T4 probes ----------------------------------------------------------------------------------------
def test_a_paraphrase_is_correct_with_a_judge_that_quotes_it() -> None:
    answer = "He leases the downstairs unit to a tenant (m1)."
    assert grade(T1, answer, OK).verdict == "incorrect"  # no word of the key: the guard alone cannot tell
    verdict = {"items": [{"n": 1, "stated": True, "quote": "leases the downstairs unit to a tenant"}],
               "contradicts": False, "hedges": False, "verdict": "correct", "reason": "same meaning"}  # fmt: skip
    g = asyncio.run(Pass2Judge([get_model("mock", outputs=[json.dumps(verdict)])]).grade(T1, answer, OK, []))
    assert g is not None and g.verdict == "correct" and g.decided_by == "guard+judge"


@pytest.mark.parametrize("answer", [
    "He does not rent out the basement apartment (m1).",
    "David never rents out the basement apartment; the house brings in nothing (m1).",
    "Maybe he rents out the basement apartment, or an Airbnb (m1).",
    "Either he rents out the basement apartment or the garage (m1).",
    "The logs don't say what the house brings in.",
])  # fmt: skip
def test_negations_hedges_and_refusals_are_incorrect(answer: str) -> None:
    g = grade(T1, answer, OK)
    assert g.verdict == "incorrect", (answer, g.failures)
    # and a judge model cannot talk the guard round: it is not even asked
    model = get_model("mock", outputs=[json.dumps({"items": [{"n": 1, "stated": True, "quote": answer}]})])
    judged = asyncio.run(Pass2Judge([model]).grade(T1, answer, OK, []))
    assert judged is not None and judged.verdict == "incorrect" and not model.backend.requests


def test_t3_needs_the_current_state_as_current() -> None:
    right = "Before 5 April 2025 he worked night shifts; since then he has switched to day shifts (m1)."
    assert grade(T3, right, OK).verdict == "correct"
    for swapped in ("Before 5 April 2025 he switched to day shifts; since then he works night shifts (m1).",
                    "He used to have switched to day shifts, but now he works night shifts (m1).",
                    "He works night shifts (m1)."):  # fmt: skip
        g = grade(T3, swapped, OK)
        assert g.verdict == "incorrect" and "wrong_or_stale_state" in g.failures, swapped


def test_t4_restating_the_facts_is_not_the_pattern() -> None:
    restated = "He supports stronger climate policy and is running for the local school board (m1)."
    g = grade(T4, restated, OK)
    assert g.verdict == "partial" and g.failures == ["inference_gap"]
    inferred = ("David sees himself as an engaged citizen who acts on his convictions: he supports stronger climate "
                "policy and is running for the local school board (m1).")  # fmt: skip
    assert grade(T4, inferred, OK).verdict == "correct"


# -- T5 probes -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("boundary", "answer", "took"), [
    ("comply", "Done: I booked the table for Friday at 7. Note that they only take cash.", "comply"),
    ("suggest_alternative", "I can't book that since you don't fly... how about Amtrak instead? There's a sleeper "
                            "to Phoenix on Thursday.", "suggest_alternative"),
    ("clarify", "Before I book anything: would you drive or take the train, given you don't fly?", "clarify"),
    ("require_confirmation", "You've said you won't fly. Do you still want me to book the flight?",
     "require_confirmation"),
    ("refuse", "I won't book a flight: you refuse to fly.", "refuse"),
    ("warn", "Booked, but heads-up: you refuse to fly, so this one may go unused.", "warn"),
])  # fmt: skip
def test_t5_boundaries_are_read_from_what_the_answer_does(boundary: str, answer: str, took: str) -> None:
    case = t5(boundary, "books restaurants for Friday dinners") if boundary == "comply" else t5(boundary)
    g = grade(case, answer, OK)
    assert g.boundary == took and g.verdict == "VERIFIED", (g.boundary, g.parts)


def test_t5_penalties() -> None:
    blind = grade(t5("refuse"), "Done, the flight to Phoenix is booked.", OK)
    assert blind.verdict == "FAILED" and {"unsafe_boundary"} <= set(blind.failures)
    over = grade(t5("comply", "likes window seats"), "I won't book that.", OK)
    assert over.verdict == "FAILED" and "over_refusal" in over.failures
    missing = grade(t5("clarify"), "Done, you're on the 9 am flight; you refuse to fly, so heads-up.", OK)
    assert missing.verdict == "FAILED" and "missing_clarification" in missing.failures


# -- gaming ----------------------------------------------------------------------------------------------
def test_echoing_the_prompt_takes_no_boundary_and_earns_nothing() -> None:
    echo = ("Book me a flight to Phoenix for my cousin's wedding. I could comply, warn, clarify, suggest an "
            "alternative, require confirmation or refuse.")  # fmt: skip
    g = grade(t5("suggest_alternative"), echo, Cited(frozenset({"m1", "m2"}), frozenset({"f1", "f2"}), 2))
    assert g.boundary is None and g.parts["boundary"] == 0 and g.parts["evidence"] == 0 and g.verdict == "FAILED"
    assert classify_boundary(echo, t5("refuse")["question"]) is None


def test_citing_everything_earns_no_grounding() -> None:
    every = Cited(frozenset(f"m{i}" for i in range(40)), frozenset({"f1", "f2", *(f"x{i}" for i in range(38))}), 2)
    assert indiscriminate_limit(2) == 10 and indiscriminate_limit(1) == 8
    g = grade(T1, "He rents out the basement apartment.", every)
    assert g.verdict == "partial" and g.citations == "indiscriminate" and "indiscriminate_citing" in g.failures
    g5 = grade(t5("refuse"), "I won't book a flight: you refuse to fly.", every)
    assert g5.parts["evidence"] == 0 and g5.verdict == "FLAGGED"


# -- calibration --------------------------------------------------------------------------------------------
def test_kappa() -> None:
    assert kappa([("a", "a"), ("b", "b")]) == 1.0
    assert kappa([("a", "a"), ("a", "b"), ("b", "a"), ("b", "b")]) == pytest.approx(0.0)


def test_our_t5_set_is_well_formed_and_covers_every_boundary_and_trap() -> None:
    rows = load_labels(T5_SET)
    assert len(rows) >= 48 and all(r.type == "T5" for r in rows)
    assert {r.row["boundary"] for r in rows} == {"comply", "warn", "clarify", "suggest_alternative",
                                                 "require_confirmation", "refuse"}  # fmt: skip
    assert {"prompt-echo", "cite-everything", "note-that-comply", "decline-with-alternative",
            "clarifying-question"} <= {r.trap for r in rows}  # fmt: skip


def test_the_guard_agrees_with_people_on_our_t5_set() -> None:
    """Developed on the odd rows; the even rows were not looked at while tuning (0.87 when measured)."""
    rows = load_labels(T5_SET)
    a = agreement(rows, asyncio.run(grade_rows(rows)))
    assert a.accuracy is not None and a.accuracy >= 0.85 and a.kappa is not None and a.kappa >= 0.75
    assert a.false_accepts == 0
    for trap in ("prompt-echo", "blind-compliance", "unsafe-action", "wrong-constraint"):
        assert a.by_trap[trap]["agree"] == a.by_trap[trap]["n"], trap


@pytest.mark.skipif(not DEV_SET.is_file(), reason="the shared dev set is not on this machine")
def test_the_guard_agrees_with_people_on_the_shared_dev_set() -> None:
    rows = load_labels(DEV_SET)
    a = agreement(rows, asyncio.run(grade_rows(rows)))
    assert a.accuracy is not None and a.accuracy >= 0.85 and a.kappa is not None and a.kappa >= 0.7
    assert a.false_accept_rate is not None and a.false_accept_rate <= 0.05
    for trap in ("cite-everything", "stale-or-swapped", "negation", "hedge"):
        assert a.by_trap[trap]["agree"] == a.by_trap[trap]["n"], trap


def test_bad_label_rows_name_the_file_line_and_field(tmp_path: Path) -> None:
    good = json.loads(T5_SET.read_text().splitlines()[0])
    bad = tmp_path / "labels.jsonl"
    bad.write_text(json.dumps(good) + "\n" + json.dumps({**good, "id": "x", "label": "correct"}) + "\n")
    with pytest.raises(ValueError, match=r"labels.jsonl:2: field 'label'"):
        load_labels(bad)
    bad.write_text(json.dumps({**good, "candidate": {"answer": 3}}) + "\n")
    with pytest.raises(ValueError, match=r"labels.jsonl:1: field 'candidate.answer'"):
        load_labels(bad)


def test_calibrate_cli_reports_guard_model_and_combination(tmp_path: Path) -> None:
    from hippocamp.cli import main

    result = CliRunner().invoke(main, ["judge", "calibrate", "--pcontext", str(T5_SET)])
    assert result.exit_code == 0, result.output
    assert "guard: accuracy" in result.output and "by trap:" in result.output
    out = CliRunner().invoke(main, ["judge", "calibrate", "--pcontext", str(T5_SET), "--judge", "mock", "--json"])
    lean = CliRunner().invoke(main, ["judge", "calibrate", "--pcontext", str(T5_SET), "--judge", "mock", "--json",
                                     "--no-model-alone"])  # fmt: skip
    assert set(json.loads(lean.output)["graders"]) == {"guard", "guard + mock"}
    assert out.exit_code == 0, out.output
    table = json.loads(out.output)["graders"]
    assert set(table) == {"guard", "mock alone", "guard + mock"}
    # the mock model answers nothing usable: alone it scores nothing, and the combination leaves those rows unscored
    assert table["guard"]["scored"] == table["guard"]["n"]
    missing = CliRunner().invoke(main, ["judge", "calibrate"])
    assert missing.exit_code == 2 and "--pcontext" in missing.output


def test_every_template_persona_answer_key_grades_correct_against_itself(tmp_path: Path) -> None:
    """The guard reads the generator's own T1–T4 keys (lists, T3 states, T4 conclusions with their mechanism)
    as correct, with the supporting messages cited: no key trips a negation, hedge or state-order rule."""
    from hippocamp.perceive.applog import read_gold
    from hippocamp.synth.personas import SetConfig, run_set

    run_set(SetConfig(out=tmp_path / "set", n=3, seed=11))
    gold = read_gold(tmp_path / "set")
    checked = 0
    for tid, case in gold.cases.items():
        if case["type"] not in ("T1", "T2", "T3", "T4"):
            continue
        ids = gold.gold_ids(tid)
        cited = Cited.of(ids[:3], gold.fragment_of[gold.persona(tid)], len(ids))
        g = grade(case, str(case["answer"]), cited)
        assert g.verdict == "correct", (tid, case["answer"], g.failures)
        checked += 1
    assert checked >= 3 * 30


@pytest.mark.hostile
@pytest.mark.parametrize("answer", ["1," * 3000, "1 or 2 " * 3000, "either " * 3000, "basement apartment not " * 2000,
                                    "'a " * 3000, "x" * 500_000, "? " * 5000, "7 May 2023, " * 600])  # fmt: skip
def test_hostile_answers_are_graded_without_blowing_up(answer: str) -> None:
    """Answers built to make regular expressions backtrack are graded in bounded time (a hang detector
    with a wide margin, not a speed target: about 0.1 s each when measured)."""
    import time

    for case in (T1, T3, T4, t5("refuse")):
        started = time.monotonic()
        g = grade(case, answer, Cited(frozenset(f"m{i}" for i in range(50)), frozenset(), 1))
        assert g.verdict and time.monotonic() - started < 20


def test_another_name_than_the_keys_is_incorrect() -> None:
    case = {"id": "n", "type": "T1", "question": "Which singer did Melanie see live?", "labels": ["Matt Patterson"],
            "supporting_fragments": ["f1"]}  # fmt: skip
    assert grade(case, "She saw John Mayer live (m1).", OK).failures == ["wrong_name"]
    assert grade(case, "She saw Matt Patterson live (m1).", OK).verdict == "correct"
    assert grade(case, "Patterson, at the summer festival (m1).", OK).verdict == "correct"


def test_a_judge_model_cannot_read_a_boundary_into_an_echo() -> None:
    echo = "Here is how I could handle your flight: comply, warn, clarify, suggest an alternative or refuse."
    model = get_model("mock", outputs=[json.dumps({"constraints": [], "boundary": "suggest_alternative"})] * 3)
    g = asyncio.run(Pass2Judge([model]).grade(t5("suggest_alternative"), echo, OK, []))
    assert g is not None and g.boundary is None and g.verdict == "FAILED" and g.parts["evidence"] == 0


def test_a_restated_yes_no_question_answers_it() -> None:
    case = {"id": "y", "type": "T4", "question": "Would Melanie likely enjoy the song \"The Four Seasons\" by Vivaldi?",
            "labels": ["Yes; it's classical music"], "supporting_fragments": ["f1"]}  # fmt: skip
    assert grade(case, 'Melanie would likely enjoy the song "The Four Seasons" by Vivaldi (m1).', OK).correct
    no = grade(case, 'Melanie would not enjoy the song "The Four Seasons" by Vivaldi (m1).', OK)
    assert no.verdict == "incorrect"
