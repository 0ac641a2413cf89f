"""Scoring metrics against values worked out by hand (and the Wilcoxon test against scipy)."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from hippocamp.agents.base import EvidenceItem
from hippocamp.dataset.derived import DifficultyModel, features_of
from hippocamp.schema.record import Evidence, HippoCampRecord
from hippocamp.scoring import (
    PRF,
    ScoredItem,
    aggregate,
    atomic_units,
    au_scores,
    balanced_mean,
    bootstrap_ci,
    box_iou,
    by_capability,
    by_difficulty,
    by_profile,
    by_profiling_type,
    by_qa_type,
    file_scores,
    mean_of,
    normalize_path,
    outcomes_by_question,
    pass_at_k,
    pass_hat_k,
    quantile_edges,
    run_stats,
    summarize,
    usage_summary,
    wilcoxon,
    with_difficulty,
)


def close(prf: PRF, p: float, r: float, f1: float) -> None:
    assert (prf.precision, prf.recall, prf.f1) == pytest.approx((p, r, f1))


# -- file P/R/F1 -----------------------------------------------------------------------------------
def test_normalize_path():
    for raw in ("docs/A.pdf", "./docs/A.pdf", "/docs//A.pdf", ".\\docs\\A.pdf", "docs/A.pdf/", " ././docs/A.pdf"):
        assert normalize_path(raw) == "docs/A.pdf"
    assert normalize_path("Docs/A.PDF", casefold=True) == "docs/a.pdf"
    assert normalize_path("../x") == "../x"
    assert normalize_path("/hippocamp/data/Docs/A.pdf") == normalize_path("hippocamp/data//Docs/A.pdf") == "Docs/A.pdf"


def test_file_scores_hand_values():
    # gold {a, b}, pred {a, b, c}: tp 2, P = 2/3, R = 1, F1 = 2·(2/3)·1 / (2/3 + 1) = 0.8
    s = file_scores(["a.pdf", "b.pdf", "c.pdf"], ["./a.pdf", "b.pdf"])
    close(s, 2 / 3, 1.0, 0.8)
    assert (s.tp, s.n_pred, s.n_gold, s.convention) == (2, 3, 2, "hippocamp")
    # duplicates count once: pred {a}, gold {a, b}: P = 1, R = 1/2, F1 = 2/3
    s = file_scores(["a", "a", "./a", "/a"], ["a", "b"])
    close(s, 1.0, 0.5, 2 / 3)
    assert s.n_pred == 1
    # disjoint: all zero
    close(file_scores(["x"], ["y"]), 0.0, 0.0, 0.0)
    # case: different files unless casefold
    close(file_scores(["Docs/a.PDF"], ["docs/A.pdf"]), 0.0, 0.0, 0.0)
    close(file_scores(["Docs/a.PDF"], ["docs\\A.pdf"], casefold=True), 1.0, 1.0, 1.0)


@pytest.mark.parametrize(
    ("pred", "gold", "hippocamp", "set_"),
    [
        ([], [], (0, 0, 0), (1, 1, 1)),
        ([], ["a"], (0, 0, 0), (1, 0, 0)),  # nothing predicted: no false positive, nothing found
        (["a"], [], (0, 0, 0), (0, 1, 0)),  # nothing to find: all predictions wrong
        (None, ["a"], (0, 0, 0), (1, 0, 0)),
        (["a", "b"], ["b", "c", "d", "e"], (0.5, 0.25, 1 / 3), (0.5, 0.25, 1 / 3)),
    ],
)
def test_file_scores_conventions(pred, gold, hippocamp, set_):
    close(file_scores(pred, gold, convention="hippocamp"), *hippocamp)
    close(file_scores(pred, gold, convention="set"), *set_)


def test_unknown_convention():
    with pytest.raises(ValueError, match="convention"):
        file_scores(["a"], ["a"], convention="micro")  # type: ignore[arg-type]


# -- atomic units ----------------------------------------------------------------------------------
def ev(path: str, *locs: dict) -> dict:
    return {"file_path": path, "locators": list(locs)}


def page(n: int | str) -> dict:
    return {"unit": "page", "position": n}


def region(page_no: int | None, box: list[float], units: str = "px") -> dict:
    pos: dict = {"bbox": box, "box_units": units}
    if page_no is not None:
        pos["page"] = page_no
    return {"unit": "region", "position": pos}


def test_page_units():
    # pred pages 3–4 = two AUs; gold page 3: R = 1, P = 1/2, F1 = 2/3
    s = au_scores([ev("x.pdf", page("3-4"))], [ev("x.pdf", page(3))])
    close(s, 0.5, 1.0, 2 / 3)
    assert (s.tp, s.tp_pred, s.n_pred, s.n_gold) == (1, 1, 2, 1)
    # gold pages 2–4 = three AUs; pred page 3: R = 1/3, P = 1, F1 = 0.5
    close(au_scores([ev("x.pdf", page(3))], [ev("x.pdf", page("2-4"))]), 1.0, 1 / 3, 0.5)
    # same page of another file does not match
    close(au_scores([ev("y.pdf", page(3))], [ev("x.pdf", page(3))]), 0.0, 0.0, 0.0)
    # a printed label matches the page that carries it when a side has no page number
    labelled = [ev("x.pdf", {"unit": "page", "position": {"system_page": 3, "printed_page": "iii"}})]
    close(au_scores([ev("x.pdf", {"unit": "printed_page", "position": "III"})], labelled), 1.0, 1.0, 1.0)
    close(au_scores([ev("x.pdf", {"unit": "printed_page", "position": "iv"})], labelled), 0.0, 0.0, 0.0)
    # the same gold page cited twice is one AU
    assert len(atomic_units([ev("x.pdf", page(3)), ev("./x.pdf", page(3))])) == 1


def test_region_iou_threshold():
    assert box_iou([0, 0, 10, 10], [0, 0, 10, 5.1]) == pytest.approx(0.51)
    gold = [ev("x.pdf", region(2, [0, 0, 10, 10]))]
    above = [ev("x.pdf", region(2, [0, 0, 10, 5.1]))]  # IoU 51/100
    below = [ev("x.pdf", region(2, [0, 0, 10, 4.9]))]  # IoU 49/100
    close(au_scores(above, gold), 1.0, 1.0, 1.0)
    close(au_scores(below, gold), 0.0, 0.0, 0.0)
    close(au_scores(below, gold, iou=0.45), 1.0, 1.0, 1.0)
    # same box on another page: no match
    close(au_scores([ev("x.pdf", region(3, [0, 0, 10, 10]))], gold), 0.0, 0.0, 0.0)
    # a region without a box matches by page; a page contains its regions
    close(au_scores([ev("x.pdf", {"unit": "table", "position": {"page": 2}})], gold), 1.0, 1.0, 1.0)
    close(au_scores([ev("x.pdf", page(2))], gold), 1.0, 1.0, 1.0)
    close(au_scores([ev("x.pdf", page(1))], gold), 0.0, 0.0, 0.0)
    # gold pages 1–2 are two AUs; a region on page 2 recalls one: P = 1, R = 1/2
    close(au_scores(gold, [ev("x.pdf", page("1-2"))]), 1.0, 0.5, 2 / 3)


def test_image_box_units():
    gold = [ev("img.jpg", region(None, [0.1, 0.1, 0.5, 0.5], "norm"))]
    assert atomic_units(gold)[0].kind == "box"
    # IoU = (0.4·0.3) / (0.16 + 0.12 − 0.12) = 0.75
    close(au_scores([ev("img.jpg", region(None, [0.1, 0.2, 0.5, 0.5], "norm"))], gold), 1.0, 1.0, 1.0)
    # disjoint boxes
    close(au_scores([ev("img.jpg", region(None, [0.6, 0.6, 0.9, 0.9], "norm"))], gold), 0.0, 0.0, 0.0)


def test_time_slack():
    gold = [ev("a.mp3", {"unit": "timestamp", "position": "00:01:00-00:01:10"})]  # 60–70 s

    def t(start: float, end: float) -> list[dict]:
        return [ev("a.mp3", {"unit": "timestamp", "position": [start, end]})]

    close(au_scores(t(65, 66), gold), 1.0, 1.0, 1.0)  # inside
    close(au_scores(t(72, 80), gold), 1.0, 1.0, 1.0)  # starts exactly at 70 + 2
    close(au_scores(t(72.5, 80), gold), 0.0, 0.0, 0.0)  # 0.5 s beyond the slack
    close(au_scores(t(50, 58), gold), 1.0, 1.0, 1.0)  # ends exactly at 60 − 2
    close(au_scores(t(50, 57.5), gold), 0.0, 0.0, 0.0)
    close(au_scores(t(72, 80), gold, slack=0.0), 0.0, 0.0, 0.0)
    close(au_scores(t(72.5, 80), gold, slack=5.0), 1.0, 1.0, 1.0)
    # an instant is a zero-length span
    close(au_scores([ev("a.mp3", {"unit": "timestamp", "position": 71})], gold), 1.0, 1.0, 1.0)


def test_cells_slides_lines_items():
    gold = [ev("b.xlsx", {"unit": "cells", "position": "Budget!B2:D10"})]
    close(au_scores([ev("b.xlsx", {"unit": "cells", "position": "Budget!D10:E12"})], gold), 1.0, 1.0, 1.0)
    close(au_scores([ev("b.xlsx", {"unit": "cells", "position": "Other!B2:D10"})], gold), 0.0, 0.0, 0.0)
    close(au_scores([ev("b.xlsx", {"unit": "cells", "position": "F1:G3"})], gold), 0.0, 0.0, 0.0)
    # slides 2–3 are two AUs; pred slide 3: R = 1/2, P = 1
    slides = [ev("d.pptx", {"unit": "slide", "position": "2-3"})]
    close(au_scores([ev("d.pptx", {"unit": "slide", "position": 3})], slides), 1.0, 0.5, 2 / 3)
    lines = [ev("n.txt", {"unit": "lines", "position": {"line": 10, "line_end": 15}})]
    close(au_scores([ev("n.txt", {"unit": "line", "position": "15-20"})], lines), 1.0, 1.0, 1.0)
    close(au_scores([ev("n.txt", {"unit": "line", "position": "16-20"})], lines), 0.0, 0.0, 0.0)
    # paragraphs are numbered apart from lines
    close(au_scores([ev("n.txt", {"unit": "paragraph", "position": "10-15"})], lines), 0.0, 0.0, 0.0)
    msg = [ev("chat.json", {"unit": "message", "position": "m3"})]
    close(au_scores([ev("chat.json", {"unit": "message", "position": "m3"})], msg), 1.0, 1.0, 1.0)
    close(au_scores([ev("chat.json", {"unit": "message", "position": "m4"})], msg), 0.0, 0.0, 0.0)
    item = [ev("cal.ics", {"unit": "event", "position": {"id": "uid-1"}})]
    close(au_scores([ev("cal.ics", {"unit": "event", "position": {"id": "uid-1"}})], item), 1.0, 1.0, 1.0)


def test_whole_file_evidence():
    gold = [ev("x.pdf", page(3)), ev("x.pdf", page(5)), ev("y.pdf", page(1))]
    # no locator: one whole-file AU of x.pdf matching both x pages; y.pdf page 1 missed
    s = au_scores([{"file_path": "x.pdf"}], gold)
    close(s, 1.0, 2 / 3, 0.8)
    assert (s.tp, s.tp_pred, s.n_pred, s.n_gold) == (2, 1, 1, 3)
    # gold without locators (the release's evidence_locator: []) is matched by any unit of the file
    close(au_scores([ev("x.pdf", page(7))], [ev("x.pdf")]), 1.0, 1.0, 1.0)
    # an unreadable locator is ignored: the item is whole-file
    units = atomic_units(
        [ev("x.pdf", {"unit": "mystery", "position": 1}), ev("z.pdf", {"unit": "page", "position": "x"})]
    )
    assert [(u.file, u.kind) for u in units] == [("x.pdf", "file"), ("z.pdf", "file")]


def test_evidence_shapes_and_conventions():
    gold = [Evidence.model_validate({"file_path": "x.pdf", "evidence_locator": [page(2)]})]
    pred = [EvidenceItem(file_path="./x.pdf", locator={"unit": "page", "position": {"system_page": 2}})]
    close(au_scores(pred, gold), 1.0, 1.0, 1.0)
    close(au_scores(["x.pdf"], gold), 1.0, 1.0, 1.0)
    close(au_scores([], gold), 0.0, 0.0, 0.0)
    close(au_scores([], gold, convention="set"), 1.0, 0.0, 0.0)
    close(au_scores([], [], convention="set"), 1.0, 1.0, 1.0)


# -- group means -----------------------------------------------------------------------------------
def item(qid: str, correct, profile: str = "A", **kw) -> ScoredItem:
    return ScoredItem(id=qid, correct=correct, profile=profile, **kw)


def test_unscored_excluded_not_zero():
    m = mean_of([1, 0, None, 1, None])
    assert (m.mean, m.n, m.unscored) == (pytest.approx(2 / 3), 3, 2)
    assert mean_of([None, None]).mean is None
    groups = by_profile([item("1", None, "A"), item("2", True, "A"), item("3", None, "B")])
    assert groups["A"].as_dict() == {"mean": 1.0, "n": 1, "unscored": 1}
    assert groups["B"].as_dict() == {"mean": None, "n": 0, "unscored": 1}


def test_balanced_overall_vs_question_weighted():
    # A: 8 scored, 6 right (0.75); B: 2 scored, 0 right (0.0), plus one unscored
    items = [item(f"a{i}", i < 6, "A") for i in range(8)]
    items += [item("b1", 0, "B"), item("b2", 0, "B"), item("b3", None, "B")]
    weighted = mean_of(it.correct for it in items)
    assert weighted.mean == pytest.approx(6 / 10)
    overall = balanced_mean(items)
    assert overall.mean == pytest.approx((0.75 + 0.0) / 2)  # 0.375
    assert (overall.n, overall.unscored) == (10, 1)
    # a profile with nothing scored is left out of the balance
    assert balanced_mean([*items, item("c1", None, "C")]).mean == pytest.approx(0.375)


def test_task_family_and_capability_grouping():
    items = [
        item("1", 1, qa_type="factual_retention", caps={"search": ["system", "semantic"], "reasoning": ["basic"]}),
        item("2", 0, qa_type="factual_retention", caps={"search": ["semantic"], "reasoning": ["computation"]}),
        item("3", 1, qa_type="profiling", profiling_type="routine",
             caps={"search": ["semantic", "semantic"], "perception": ["image_understanding"],
                   "reasoning": ["computation", "verification"]}),
        item("4", None, qa_type="profiling", profiling_type="preference", caps={"search": ["system"]}),
    ]  # fmt: skip
    fam = by_qa_type(items)
    assert fam["factual_retention"].mean == pytest.approx(0.5)
    assert (fam["profiling"].mean, fam["profiling"].unscored) == (1.0, 1)
    prof = by_profiling_type(items)
    assert set(prof) == {"routine", "preference"}
    assert prof["preference"].mean is None
    caps = by_capability(items)
    # question 1 counts under both system and semantic; question 3's repeated label counts once
    assert caps["search"]["semantic"].as_dict() == {"mean": pytest.approx(2 / 3), "n": 3, "unscored": 0}
    assert caps["search"]["system"].as_dict() == {"mean": 1.0, "n": 1, "unscored": 1}
    assert caps["reasoning"]["computation"].mean == pytest.approx(0.5)
    assert caps["reasoning"]["verification"].mean == 1.0
    assert caps["perception"] == {"image_understanding": caps["perception"]["image_understanding"]}
    # file F1 grouped the same way
    f1 = by_profile([item("1", 1, f1=0.5), item("2", 1, f1=None), item("3", 1, f1=1.0)], metric="f1")
    assert f1["A"].as_dict() == {"mean": 0.75, "n": 2, "unscored": 1}


def test_aggregate_tables():
    items = [
        item("1", 1, "A", qa_type="profiling", f1=1.0, difficulty=30, seconds=2.0, caps={"search": ["system"]}),
        item("2", 0, "B", qa_type="factual_retention", f1=0.0, difficulty=70, seconds=4.0),
        item("3", None, "B", qa_type="factual_retention", f1=0.5),
    ]
    out = aggregate(items)
    assert out["overall"] == {"mean": 0.5, "n": 2, "unscored": 1}
    assert out["file_f1"]["mean"] == pytest.approx((1.0 + 0.25) / 2)
    assert out["by_capability"]["search"] == {"system": {"mean": 1.0, "n": 1, "unscored": 0}}
    assert out["by_difficulty"]["20-40"]["mean"] == 1.0
    assert out["usage"]["seconds"]["median"] == 3.0
    json.dumps(out)


def test_from_record():
    rec = HippoCampRecord.model_validate(
        {
            "id": 7,
            "question": "q",
            "answer": "a",
            "QA_type": "profiling",
            "profiling_type": "routine",
            "data_source": "Bei",
            "agent_cap": '{"search": ["semantic"], "evidence_perception": ["ocr"], "reasoning": ["basic"]}',
        }
    )
    it = ScoredItem.from_record(rec, True, run=2, seconds=3.0)
    assert (it.id, it.profile, it.qa_type, it.profiling_type, it.run) == ("7", "Bei", "profiling", "routine", 2)
    assert it.caps == {"search": ("semantic",), "perception": ("ocr",), "reasoning": ("basic",)}


def test_difficulty_bins():
    items = [item("1", 1, difficulty=10), item("2", 0, difficulty=20), item("3", 1, difficulty=39.9),
             item("4", 1, difficulty=100), item("5", 0, difficulty=None), item("6", None, difficulty=85)]  # fmt: skip
    bins = by_difficulty(items)
    assert list(bins) == ["0-20", "20-40", "40-60", "60-80", "80-100"]
    assert bins["0-20"].as_dict() == {"mean": 1.0, "n": 1, "unscored": 0}
    assert bins["20-40"].mean == pytest.approx(0.5)
    assert bins["40-60"].mean is None
    assert bins["80-100"].as_dict() == {"mean": 1.0, "n": 1, "unscored": 1}
    assert quantile_edges(range(1, 11), bins=2) == (1.0, 5.5, 10.0)
    with pytest.raises(ValueError):
        by_difficulty(items, edges=(0, 50, 50))


def _rec(qid: str, n_files: int, steps: int, question: str) -> HippoCampRecord:
    return HippoCampRecord.model_validate(
        {
            "id": qid,
            "question": question,
            "answer": "yes",
            "file_path": [f"f{i}.pdf" for i in range(n_files)],
            "rationale": [{"rationale_text": "s"} for _ in range(steps)],
        }
    )


def test_with_difficulty_fits_on_scored_questions():
    recs = [_rec("1", 1, 1, "a b"), _rec("2", 2, 3, "a b c d"), _rec("3", 5, 9, "a " * 30), _rec("4", 9, 20, "x")]
    items = [item("1", 1), item("2", 0), item("3", 1), item("4", None)]  # question 4 unscored
    scored = with_difficulty(items, recs)
    model = DifficultyModel.fit([features_of(r) for r in recs[:3]])
    for it, rec in zip(scored[:3], recs[:3], strict=True):
        assert it.difficulty == pytest.approx(model.score(features_of(rec)))
    assert scored[3].difficulty is None
    assert 1 <= min(it.difficulty for it in scored[:3]) <= max(it.difficulty for it in scored[:3]) <= 99


def test_usage_summary():
    rows = [(1, 10, 0.5), (2, 20, None), (3, 30, 0.25), (4, 40, None), (100, 50, 1)]
    items = [item(str(i), 1, seconds=s, tokens=t, cost=c) for i, (s, t, c) in enumerate(rows)]
    u = usage_summary(items)
    # seconds 1, 2, 3, 4, 100: median 3; p95 at rank 0.95·4 = 3.8 → 4 + 0.8·96 = 80.8; sum 110
    assert (u["seconds"].median, u["seconds"].p95, u["seconds"].total) == (3.0, pytest.approx(80.8), 110.0)
    assert (u["tokens"].total, u["tokens"].median) == (150.0, 30.0)
    # unknown costs are missing, not 0
    assert (u["cost"].n, u["cost"].missing, u["cost"].total, u["cost"].median) == (3, 2, 1.75, 0.5)
    assert summarize([None]).as_dict()["total"] is None


# -- several runs ----------------------------------------------------------------------------------
def test_pass_hat_k_worked_example():
    outcomes = {"q1": [1, 1, 0, 1], "q2": [1, 0, 0, 0], "q3": [1, 1, 1, 1]}
    # k = 2: q1 C(3,2)/C(4,2) = 3/6; q2 C(1,2)/6 = 0; q3 6/6 = 1 → (0.5 + 0 + 1)/3 = 0.5
    assert pass_hat_k(outcomes, 2).value == pytest.approx(0.5)
    # pass@2: q1 1 − C(1,2)/6 = 1; q2 1 − C(3,2)/6 = 0.5; q3 1 → 2.5/3
    assert pass_at_k(outcomes, 2).value == pytest.approx(2.5 / 3)
    # k = 1 is the mean accuracy: (3/4 + 1/4 + 1)/3 = 2/3
    assert pass_hat_k(outcomes, 1).value == pytest.approx(2 / 3)
    assert pass_at_k(outcomes, 1).value == pytest.approx(2 / 3)
    # k = 4: only q3 is right in every run → 1/3
    assert pass_hat_k(outcomes, 4).value == pytest.approx(1 / 3)
    # unscored runs are dropped, not failures: q4 has one scored run, too few for k = 2
    res = pass_hat_k({**outcomes, "q4": [True, None], "q5": [None, 1, 1]}, 2)
    assert (res.value, res.n, res.skipped, res.unscored_runs) == (pytest.approx((0.5 + 0 + 1 + 1) / 4), 4, 1, 2)
    with pytest.raises(ValueError):
        pass_hat_k(outcomes, 0)


def test_run_stats_and_outcomes():
    items = [item("1", 1, run=0), item("2", 0, run=0), item("1", 1, run=1), item("2", 1, run=1),
             item("3", None, run=1)]  # fmt: skip
    rs = run_stats(items)
    assert rs.runs["0"].mean == 0.5 and rs.runs["1"].as_dict() == {"mean": 1.0, "n": 2, "unscored": 1}
    assert (rs.mean, rs.worst, rs.best) == (0.75, 0.5, 1.0)
    assert outcomes_by_question(items) == {"1": [1, 1], "2": [0, 1], "3": [None]}
    balanced = run_stats([item("a", 1, "A"), item("b", 0, "B"), item("c", 0, "B")], balanced=True)
    assert balanced.mean == 0.5


# -- bootstrap -------------------------------------------------------------------------------------
def test_bootstrap_ci_seeded_and_covering():
    rng = np.random.default_rng(3)
    values = [float(v) for v in rng.integers(0, 2, size=60)] + [None, None]
    a = bootstrap_ci(values, resamples=2000, seed=7)
    b = bootstrap_ci(values, resamples=2000, seed=7)
    assert a == b
    mean = float(np.mean([v for v in values if v is not None]))
    assert a.estimate == pytest.approx(mean)
    assert a.low < mean < a.high
    assert (a.n, a.unscored) == (60, 2)
    # a normal-theory 95% interval has half-width ≈ 1.96·sd/√n; the bootstrap's is close to it
    half = 1.96 * np.std([v for v in values if v is not None]) / math.sqrt(60)
    assert (a.high - a.low) / 2 == pytest.approx(half, rel=0.15)
    # another seed, another interval (on continuous data, where quantiles do not fall on a grid)
    cont = rng.normal(size=40).tolist()
    assert bootstrap_ci(cont, resamples=2000, seed=8) != bootstrap_ci(cont, resamples=2000, seed=7)
    wider = bootstrap_ci(values, resamples=2000, seed=7, confidence=0.99)
    assert wider.low <= a.low and wider.high >= a.high
    assert bootstrap_ci([None]).estimate is None
    one = bootstrap_ci([0.4], resamples=50)
    assert (one.low, one.high) == (0.4, 0.4)


def test_bootstrap_ci_balanced():
    values = [1.0] * 6 + [0.0] * 2 + [0.0, 0.0]
    groups = ["A"] * 8 + ["B"] * 2
    ci = bootstrap_ci(values, groups=groups, resamples=3000, seed=1)
    assert ci.estimate == pytest.approx(0.375)
    assert ci.low <= 0.375 <= ci.high
    assert ci.high <= 0.5  # B is always 0, A at most 1


# -- Wilcoxon signed-rank --------------------------------------------------------------------------
def test_wilcoxon_hand_value():
    # differences 1..5 all positive: R− = 0; exact P(R+ = 15) = 1/32, two-sided p = 2/32
    res = wilcoxon([2, 4, 6, 8, 10], [1, 2, 3, 4, 5])
    assert (res.statistic, res.pvalue, res.method) == (0.0, 0.0625, "exact")
    # unscored pairs are dropped and counted
    res = wilcoxon([2, 4, None, 6, 8, 10], [1, 2, 0, 3, 4, 5])
    assert (res.pvalue, res.n, res.dropped) == (0.0625, 5, 1)
    # nothing differs
    assert wilcoxon([1, 0, 1], [1, 0, 1]).pvalue == 1.0


def _samples() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(20240607)
    out = []
    # exact (≤ 50, no ties), sign-flip (ties or zeros, ≤ 13) and normal (the rest) regimes; scipy's
    # permutation test is slow beyond n ≈ 8, so the tied samples there stay small
    for n in (6, 8, 14, 20, 35, 49, 51, 80):
        out.append((rng.normal(size=n), rng.normal(0.4, 1.0, size=n)))  # continuous: no ties
        out.append((rng.integers(0, 4, size=n).astype(float), rng.integers(0, 4, size=n).astype(float)))  # ties, zeros
        out.append((rng.integers(0, 2, size=n).astype(float), rng.integers(0, 2, size=n).astype(float)))  # 0/1 verdicts
    out.append((np.array([1.0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]), np.zeros(15)))
    out.append((np.array([1.5, 1.5, 2, 3, 3, -1, 0.5, -0.5]), np.zeros(8)))
    return out


@pytest.mark.parametrize("correction", [False, True])
def test_wilcoxon_matches_scipy(correction):
    stats = pytest.importorskip("scipy.stats")
    for x, y in _samples():
        if np.all(x == y):
            continue
        for alternative in ("two-sided", "less", "greater"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = stats.wilcoxon(x, y, correction=correction, alternative=alternative)
            got = wilcoxon(list(x), list(y), correction=correction, alternative=alternative)
            assert got.statistic == pytest.approx(ref.statistic), (x, y, alternative)
            assert got.pvalue == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-12), (x, y, alternative, got.method)


def test_wilcoxon_defaults_and_forced_methods_match_scipy():
    stats = pytest.importorskip("scipy.stats")
    for x, y in _samples():
        if np.all(x == y):
            continue
        ref = stats.wilcoxon(x, y)
        got = wilcoxon(x.tolist(), y.tolist())
        assert (got.statistic, got.pvalue) == (pytest.approx(ref.statistic), pytest.approx(ref.pvalue, rel=1e-9))
        for method in ("exact", "asymptotic"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = stats.wilcoxon(x, y, method=method)
            got = wilcoxon(x.tolist(), y.tolist(), method=method)
            assert got.pvalue == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-12), method
            if method == "asymptotic":
                assert got.zstatistic == pytest.approx(ref.zstatistic)
    # one-sample form: x alone
    d = np.array([0.3, -1.2, 2.5, 0.7, 1.1, -0.4, 0.9])
    assert wilcoxon(d.tolist()).pvalue == pytest.approx(stats.wilcoxon(d).pvalue)
