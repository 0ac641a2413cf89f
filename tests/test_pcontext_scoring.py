"""P-ContextBench Pass 2 beyond the lexical rubric: a judge model for paraphrased key items (with quotes
that must really be in the answer, outages unscored), the agent's own retrieval reach, and the store's
evidence recall@k inside `hippocamp score`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from hippocamp.agents.base import Answer, Budget, Step, Task
from hippocamp.models import get_model
from hippocamp.models.errors import ModelError
from hippocamp.registry import register
from hippocamp.runs import SuiteOptions, load_suite
from hippocamp.scoring.judge import Judge, Panel
from hippocamp.scoring.pcontext import Cited, fragment_recall, grade, seen_ids
from hippocamp.scoring.pcontext.judge import Pass2Judge
from test_pcontext_eval import make_persona

CASE_T3 = {"id": "c3", "type": "T3", "question": "Where does Dana work now?", "labels": ["works at the bakery"],
           "current_state": "works at the bakery", "stale_state": "works at the library",
           "supporting_fragments": ["f1"]}  # fmt: skip
CITED = Cited(frozenset({"m4"}), frozenset({"f1"}), 1)


def stated(*items: tuple[int, str]) -> str:
    """A T1–T4 verdict of the Pass-2 judge model stating ``items`` with their quotes."""
    return json.dumps({"items": [{"n": n, "stated": True, "quote": q} for n, q in items], "contradicts": False,
                       "hedges": False, "verdict": "correct", "reason": "stated"})  # fmt: skip


def recognised(boundary: str, *quotes: str) -> str:
    return json.dumps({"constraints": [{"n": n, "recognised": True, "quote": q} for n, q in enumerate(quotes, 1)],
                       "boundary": boundary, "reason": "r"})  # fmt: skip


def judged(models: list[Any], case: dict[str, Any], answer: str, cited: Cited = CITED) -> Any:
    return asyncio.run(Pass2Judge(models).grade(case, answer, cited, []))


def test_judge_accepts_a_paraphrase_only_with_a_real_quote() -> None:
    answer = "These days she bakes bread for a living at the corner shop (m4)."
    ok = get_model("mock", outputs=[stated((1, "bakes bread for a living"))])
    g = judged([ok], CASE_T3, answer)
    assert (g.verdict, g.judged, g.decided_by) == ("correct", ["works at the bakery"], "guard+judge")
    # a judge that says "stated" with words the answer never used is not believed
    liar = get_model("mock", outputs=[stated((1, "works at the bakery"))])
    assert judged([liar], CASE_T3, answer).verdict == "incorrect"
    # one word is not a quote; an index outside the list is ignored
    short = get_model("mock", outputs=[stated((1, "bread"), (7, "bakes bread"))])
    assert judged([short], CASE_T3, answer).verdict == "incorrect"
    # the same model saying the answer contradicts the key: its "stated" is not believed
    torn = json.loads(stated((1, "bakes bread for a living")))
    torn["contradicts"] = True
    assert judged([get_model("mock", outputs=[json.dumps(torn)])], CASE_T3, answer).verdict == "incorrect"
    # an outage: unscored (None), never wrong
    assert judged([get_model("mock", outputs=[ModelError("down")] * 2)], CASE_T3, answer) is None


def test_the_guard_is_not_overridden_where_it_is_sure() -> None:
    """A model cannot accept what the guard knows is wrong, and is not asked when the guard is sure."""
    model = get_model("mock", outputs=[stated((1, "works at the library"))] * 5)
    swapped = judged([model], CASE_T3, "She works at the library now; she used to work at the bakery (m4).")
    assert swapped.verdict == "incorrect" and swapped.decided_by == "guard"
    hedged = judged([model], CASE_T3, "Either the bakery or the library (m4).")
    assert hedged.verdict == "incorrect" and "hedge" in hedged.failures
    assert not model.backend.requests  # the guard was sure both times: no model call


def test_judge_panel_majority() -> None:
    answer = "She bakes bread for a living now (m4)."
    yes = stated((1, "bakes bread for a living"))
    no = json.dumps({"items": [{"n": 1, "stated": False, "quote": ""}], "verdict": "incorrect"})
    models = [get_model("mock", outputs=[o]) for o in (yes, no, yes)]
    assert judged(models, CASE_T3, answer).verdict == "correct"
    models = [get_model("mock", outputs=[o] * 2) for o in (yes, no, ModelError("down"))]
    assert judged(models, CASE_T3, answer).verdict == "incorrect"  # 1 of the 2 that answered: no majority


def test_accepted_items_change_the_verdict() -> None:
    answer = "She bakes bread for a living now (m4)."
    assert grade(CASE_T3, answer, {"f1"}).verdict == "incorrect"
    g = grade(CASE_T3, answer, {"f1"}, frozenset({"works at the bakery"}))
    assert (g.verdict, g.judged) == ("correct", ["works at the bakery"])
    # right without citing: the answer counts for answer accuracy, not for P-ContextBench's "correct"
    uncited = grade(CASE_T3, "Dana works at the bakery now.", set())
    assert (uncited.correct, uncited.answer_ok, uncited.failures) == (False, True, ["no_evidence"])
    t5 = {"type": "T5", "constraints": ["has asthma"], "boundary": "warn", "supporting_fragments": ["f1"]}
    text = "I'll book it, but heads-up: the smoke could set off your breathing condition."
    assert grade(t5, text, {"f1"}).verdict == "FAILED"  # the guard alone reads a compliance
    model = get_model("mock", outputs=[recognised("warn", "your breathing condition")])
    g5 = judged([model], t5, text, Cited(frozenset({"m1"}), frozenset({"f1"}), 1))
    assert (g5.verdict, g5.judged, g5.boundary) == ("VERIFIED", ["has asthma"], "warn")


def test_seen_ids_and_fragment_recall() -> None:
    trace = [Step(index=0, kind="tool", tool="search", observation="[2025-03-05 09:00 (Wed)] message m1 · Lee: hi\n"
                  "[2025-03-20 10:00 (Thu) – 10:30] event e1 · Pulmonology"),
             Step(index=1, kind="model", thought="message m9 · not a tool result"),
             Step(index=2, kind="tool", tool="read", observation="message m1 · again")]  # fmt: skip
    assert seen_ids(Answer(text="x", trace=trace)) == ["m1", "e1"]
    case = {"supporting_fragments": ["f1", "f2", "f3"]}
    assert fragment_recall(case, ["m1", "e1", "zz"], {"m1": "f1", "e1": "f2"}) == pytest.approx(2 / 3)
    assert fragment_recall({"supporting_fragments": []}, ["m1"], {}) is None


@pytest.fixture
def scored_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run over two personas whose agent states the fact in other words and searches once."""
    from hippocamp.runs.runner import run

    monkeypatch.setenv("HIPPOCAMP_CACHE_DIR", str(tmp_path / "cache"))
    make_persona(tmp_path / "set" / "p1", "p1", "Dana")
    make_persona(tmp_path / "set" / "p2", "p2", "Eli")

    @register("agent", "test-paraphrase")
    class Paraphrase:
        name: ClassVar[str] = "test-paraphrase"

        async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
            obs = env.search("inhaler refill copay", k=3)
            trace = [Step(index=0, kind="tool", tool="search", observation=obs.text)]
            if task.meta["qa_type"] == "T5":
                return Answer(text="Warn: smoke and her lungs do not mix (m2).", trace=trace)
            return Answer(text="A chronic lung condition that needs an inhaler (m2).", trace=trace)

    suite = load_suite(f"pcontext:{tmp_path / 'set'}", SuiteOptions(embed=False))
    out = tmp_path / "run"
    asyncio.run(run(suite, "test-paraphrase", "mock", out=out))
    suite.close()
    return out


def test_score_pcontext_with_and_without_a_judge(scored_run: Path) -> None:
    from hippocamp.scoring.run_scores import load_scores, score_run

    rubric = asyncio.run(score_run(scored_run, Judge(None, mode="facts")))
    s = rubric.summary
    assert s["judge"] == "pcontext-guard" and s["accuracy"] == 0.0 and s["unscored"] == 0
    assert s["graded_by"] == "guard alone"
    assert s["seen_recall"] == pytest.approx(0.75)  # T1: f1 of f1,f2 seen; T5: f1 of f1
    r = s["retrieval"]
    assert (r["k"], r["mode"], r["cases"]) == (10, "fts", 4)
    # the T1 question ("What condition does Dana manage?") shares no word with the logs; T5's does not either
    assert 0.0 <= r["recall"] <= 1.0 and set(r["by_type"]) == {"T1", "T5"}

    # a judge that recognises the paraphrase (and quotes it): every case is correct now
    quote_t1 = stated((1, "chronic lung condition that needs an inhaler"))
    quote_t5 = recognised("warn", "smoke and her lungs")
    model = get_model("mock", outputs=lambda req: quote_t5 if "Warn" in str(req.messages) else quote_t1)
    result = asyncio.run(score_run(scored_run, Judge(model, mode="robust"), retrieval_k=0))
    assert result.summary["accuracy"] == 1.0 and "retrieval" not in result.summary
    assert result.summary["answer_accuracy"] == 1.0 and s["answer_accuracy"] == 0.0  # T1 only (T5 has none)
    assert result.summary["judged_items"] == 4
    lines = load_scores(scored_run)
    judged_lines = [ln for ln in lines if ln.judge == result.judge]
    assert result.judge.startswith("pcontext-guard+") and len(judged_lines) == 4
    assert result.summary["graded_by"] == "guard + judge model"
    assert {ln.decided_by for ln in judged_lines} == {"guard+judge"}
    assert {ln.judge for ln in lines} == {"pcontext-guard", result.judge}  # the guard's own lines are kept
    again = asyncio.run(score_run(scored_run, Judge(model, mode="robust"), retrieval_k=0))
    assert (again.scored, again.skipped) == (0, 4) and again.summary["accuracy"] == 1.0  # resumed: nothing to do

    # an outage: every episode that needed the judge is unscored, never wrong
    down = Panel([Judge(get_model("mock:down", outputs=[ModelError("down")] * 10), mode="robust")])
    out = asyncio.run(score_run(scored_run, down, retrieval_k=0))
    assert out.unscored == 4 and out.summary["episodes"] == 0 and out.summary["accuracy"] is None
    mine = [ln for ln in load_scores(scored_run) if ln.judge == out.judge]
    assert len(mine) == 4 and all(ln.status == "unscored" and ln.correct is None for ln in mine)


def test_score_cli_on_a_pcontext_run(scored_run: Path) -> None:
    from hippocamp.cli import main

    result = CliRunner().invoke(main, ["score", str(scored_run), "--retrieval-k", "5", "--retrieval-mode", "fts"])
    assert result.exit_code == 0, result.output
    assert "judge pcontext-guard" in result.output and "evidence recall@5" in result.output
    assert "T1: 0.0% of 2" in result.output
    summary = json.loads((scored_run / "scores.summary.json").read_text())
    assert summary["retrieval"]["k"] == 5 and summary["judge"] == "pcontext-guard"


@register("agent", "test-top-hit")
class TopHit:
    """Answers with the best search hit for the question and cites it: more filler can push evidence out."""

    name: ClassVar[str] = "test-top-hit"

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        obs = env.search(task.question.splitlines()[0], k=1)
        return Answer(text=obs.text[:400], trace=[Step(index=0, kind="tool", tool="search", observation=obs.text)])


def test_filler_ablation_as_a_paired_comparison(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two persona sets from the same seed, filler 1:1 vs 2.5:1, hold the same cases; the report pairs the
    two runs by case id (Δ, bootstrap interval, Wilcoxon) as P-ContextBench's ablation does."""
    from hippocamp.report.build import build_report
    from hippocamp.report.markdown import render_markdown
    from hippocamp.runs.runner import run
    from hippocamp.scoring.run_scores import load_scores, score_run
    from hippocamp.synth.personas import SetConfig, run_set

    monkeypatch.setenv("HIPPOCAMP_CACHE_DIR", str(tmp_path / "cache"))
    runs = []
    for ratio in (1.0, 2.5):
        out = tmp_path / f"filler-{ratio}"
        # the evidence stays the same across the ablation: the retrieval check only measures (enforced, it
        # would judge each cluster against logs that differ in their filler)
        run_set(SetConfig(out=out / "set", n=2, seed=5, days=21, filler_ratio=ratio, facts=30, recovery="measure"))
        suite = load_suite(f"pcontext:{out / 'set'}", SuiteOptions(embed=False, store=out / "store.sqlite"))
        asyncio.run(run(suite, "test-top-hit", "mock", out=out / "run", per_type=3))
        suite.close()
        asyncio.run(score_run(out / "run", Judge(None, mode="facts"), retrieval_k=0))
        runs.append(out / "run")
    cases = [(tmp_path / f"filler-{r}" / "set").glob("*/cases.jsonl") for r in (1.0, 2.5)]
    a, b = ([p.read_bytes() for p in sorted(c)] for c in cases)
    assert a == b  # same seed, same cases: only the filler differs
    report = build_report(runs, figures=False)
    (c,) = report.section("pcontext").comparisons
    means = []
    for r in runs:
        by_case = {s.task_id: float(bool(s.correct)) for s in load_scores(r)}
        means.append(by_case)
    common = sorted(set(means[0]) & set(means[1]))
    assert c.questions == len(common) == 15  # 3 of each of T1–T5
    overall = c.deltas[0]
    assert overall.metric == "Accuracy" and overall.ci.n == 15
    assert overall.base == pytest.approx(sum(means[0][q] for q in common) / 15)
    assert overall.other == pytest.approx(sum(means[1][q] for q in common) / 15)
    assert overall.ci.estimate == pytest.approx(overall.other - overall.base)
    assert {d.metric for d in c.deltas} >= {"Accuracy · T1", "Accuracy · T5"}
    text = render_markdown(report)
    assert "P-ContextBench: comparison against" in text and "(15 questions)" in text
    # answer accuracy (citations aside) per type, from the score lines
    t1 = [s for s in load_scores(runs[0]) if s.grade["type"] == "T1"]
    share = sum(bool(s.grade["answer_ok"]) for s in t1) / len(t1)
    assert report.section("pcontext").tables.rows[0].types["T1"].answer_accuracy == pytest.approx(share)
    assert "answer alone" in text


@pytest.mark.parametrize(
    ("answer", "label", "expected"),
    [
        ("[2023-05-07]", "7 May 2023", True),
        ("She went on May 7, 2023.", "7 May 2023", True),
        ("It was 8 May 2023.", "7 May 2023", False),
        ("2023-05-07", "The week before 7 May 2023", False),  # the date alone is not the label's words
        ("the week before 2023-05-07", "The week before 7 May 2023", True),
        ("May 2023", "7 May 2023", False),
        ("has asthma", "has asthma", True),
        # LoCoMo's relative temporal gold: a day inside what the label names covers it
        ("She went on Fri 2023-07-14 [D3:4].", "The Friday before 15 July 2023", True),
        ("On 15 July 2023.", "The Friday before 15 July 2023", False),
        ("around 2 June 2023", "The week before 9 June 2023", True),
        ("on 9 June 2023", "The week before 9 June 2023", False),
        ("the weekend of 8 July 2023", "two weekends before 17 July 2023", True),
        ("on 15 July 2023", "two weekends before 17 July 2023", False),
        ("2023-08-25", "The week of 23 August 2023", True),
        # yes/no gold with its reasons: the answer's polarity decides ("no" is a stop word to the tokens)
        ("No, Caroline would not still pursue it.", "Likely no", True),
        ("Likely yes.", "Likely no", False),
        ("Caroline would not want to.", "Likely no; since this one went badly", True),
        ("Yes, Melanie would be considered an ally.", "Yes, she is supportive", True),
        ("I don't know.", "Likely no", False),
        ("The logs do not say.", "No", False),
        ("She has no car and bikes everywhere.", "no car", True),  # a label about 'no', not a yes/no
        ("No.", "no car", False),
        # a count or figure of the label must be the answer's
        ("18 years ago", "10 years ago", False),
        ("[ten years ago = Thu 2013-06-27]", "10 years ago", True),
        ("She has 2 cats and a dog.", "Two cats and a dog", True),
        ("She has cats and a dog.", "Two cats and a dog", False),
        ("[last year = 2022-01-01..2022-12-31]", "2022", True),
        ("One-on-one mentoring and training", "One-on-one mentoring and training", True),
    ],
)
def test_covers_reads_dates_in_any_spelling(answer: str, label: str, expected: bool) -> None:
    from hippocamp.scoring.pcontext import covers

    assert covers(answer, label) is expected


@pytest.mark.parametrize(
    ("label", "days"),
    [
        ("The sunday before 25 May 2023", ("2023-05-21", "2023-05-21")),  # a Thursday
        ("The Friday before 15 July 2023", ("2023-07-14", "2023-07-14")),  # a Saturday
        ("the friday before 14 July 2023", ("2023-07-07", "2023-07-07")),  # a Friday: the one before
        ("The week before 9 June 2023", ("2023-05-29", "2023-06-08")),  # calendar week and seven days
        ("The weekend before 17 July 2023", ("2023-07-15", "2023-07-16")),  # a Monday
        ("two weekends before 17 July 2023", ("2023-07-08", "2023-07-09")),
        ("The week of 23 August 2023", ("2023-08-21", "2023-08-27")),
        ("the Monday after 3 July 2023", ("2023-07-10", "2023-07-10")),  # a Monday: the next one
        ("the weekend after 15 July 2023", ("2023-07-22", "2023-07-23")),  # a Saturday
        ("7 May 2023", None),
        ("The week before May 2023", None),  # no day to count from
    ],
)
def test_relative_days(label: str, days: tuple[str, str] | None) -> None:
    from datetime import date

    from hippocamp.scoring.pcontext import relative_days

    want = None if days is None else tuple(date.fromisoformat(d) for d in days)
    assert relative_days(label) == want


def test_list_labels_give_partial_credit() -> None:
    """An imported list answer is one label per item: naming two of four is partial, all four correct."""
    from hippocamp.importers.locomo import answer_labels

    labels = answer_labels("pottery, camping, painting, and swimming")
    assert labels == ["pottery", "camping", "painting", "swimming"]
    case = {"id": "c", "type": "T2", "labels": labels, "supporting_fragments": ["D1:1"]}
    two = grade(case, "Painting and pottery classes.", {"D1:1"})
    assert two.verdict == "partial" and sorted(two.covered) == ["painting", "pottery"] and not two.answer_ok
    four = grade(case, "She does pottery, camping, painting and swimming.", {"D1:1"})
    assert four.verdict == "correct" and four.answer_ok
    for whole in ("Somewhat, but not extremely religious", "Likely no, she does not refer to herself as part of it",
                  "19 January, 2023", "Adoption agencies"):  # fmt: skip
        assert answer_labels(whole) == [whole]


@pytest.mark.parametrize("answer", ["The files do not show this: no passage about it was found.",
                                    "Dana's messages and calendar do not show it.", "The logs don't say."])  # fmt: skip
def test_an_agent_declining_is_an_abstention(answer: str) -> None:
    case = {"id": "a", "type": "abstain", "adversarial_answer": "self-care", "supporting_fragments": []}
    assert grade(case, answer, set()).correct


def test_the_pass2_judge_from_the_command_line(scored_run: Path) -> None:
    """``--judge-mode pass2`` is the registered Pass-2 judge: it grades a P-ContextBench run, and a HippoCamp run
    refuses it by name."""
    from hippocamp.cli import main
    from hippocamp.registry import instance

    result = CliRunner().invoke(main, ["score", str(scored_run), "--judge", "mock", "--judge-mode", "pass2",
                                       "--retrieval-k", "0"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "judge pcontext-guard+mock" in result.output and "graded by the guard + judge model" in result.output
    with pytest.raises(ValueError, match="grades P-ContextBench runs only"):
        asyncio.run(instance("benchmark", "hippocamp").score(None, Pass2Judge([get_model("mock")]), None, None))


def test_a_panel_of_pass2_judges_is_one_pass2_judge_over_their_models() -> None:
    from hippocamp.benchmarks.pcontext import pass2_judge

    a, b = get_model("mock"), get_model("mock")
    merged = pass2_judge(Panel([Pass2Judge([a]), Pass2Judge([b])]))
    assert merged is not None and merged.models == [a, b]
    assert pass2_judge(Panel([Judge(a, mode="robust"), Judge(b, mode="robust")])).models == [a, b]
    assert pass2_judge(Judge(None, mode="facts")) is None
