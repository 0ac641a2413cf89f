from __future__ import annotations

import math
import random
from datetime import datetime

import numpy as np
import pytest

from hippocamp.dataset.derived import DifficultyModel, Features, count_tokens, features_of, percentile
from hippocamp.schema import HippoCampRecord


def record(**kw) -> HippoCampRecord:
    return HippoCampRecord.model_validate({"id": "r", **kw})


def test_count_tokens_words_and_cjk():
    assert count_tokens("Hello, world_1 是的 123!") == 5
    assert count_tokens("") == 0 and count_tokens(None) == 0 and count_tokens("   ") == 0
    assert count_tokens("It's 3:30 p.m.") == 6  # It, s, 3, 30, p, m


def test_features_follow_the_release_definitions():
    rec = record(
        question="Which two files mention the deposit?",
        answer="The lease and the e-mail.",
        file_path=["a.pdf", "b.eml", "c.pdf"],
        file_modality=["document", "text", "document"],
        file_type=["pdf", "eml", "pdf"],
        evidence=[{"evidence_id": 1}, {"evidence_id": 5}, {"evidence_id": "e3"}],
        rationale=[{"rationale_text": "a"}, {"step_id": 2, "rationale_text": "b"}],
    )
    stamps = {"a.pdf": [datetime(2024, 1, 1)], "c.pdf": [datetime(2024, 1, 3, 12)], "b.eml": []}
    f = features_of(rec, lambda p: stamps.get(p, []))
    assert f == Features(
        evidence_files=3,  # no file_number: the number of file_path entries
        modality_count=2,
        file_type_count=2,
        evidence_items=5,  # the largest numeric id beats the count of 3
        reasoning_steps=2,
        question_tokens=6,
        answer_tokens=6,  # The, lease, and, the, e, mail
        time_span_days=2.5,
    )
    assert features_of(record(file_path=["a"], file_number=4)).evidence_files == 4
    assert features_of(rec).time_span_days == 0  # no timestamps known


@pytest.mark.parametrize("q", [0, 10, 50, 90, 98, 100])
def test_percentile_matches_numpy(q):
    rng = random.Random(q)
    values = [rng.choice([0, 1, 1, 2, 3, 5, 8, 13.5]) for _ in range(37)]
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_difficulty_of_a_single_question_worked_by_hand():
    f = Features(1, 1, 1, 2, 3, 8, 5, 0)
    model = DifficultyModel.fit([f])
    # Every non-zero feature is its own p90 and p98 -> normalized 1; time span p90 = 0 -> 1.0 -> normalized 0.
    # base = 1 - .08 = .92; interactions .10 + .07 + 0; bonus .05 + .03 (three hard axes) + .02 (long Q and A)
    raw = 0.92 + 0.17 + 0.10
    assert model.raw(f) == pytest.approx(raw)
    assert model.score(f) == pytest.approx(100 / (1 + math.exp(-4.4 * (raw - 0.70))))
    assert model.score(f) == pytest.approx(89.6228, abs=1e-4)


def test_difficulty_of_two_questions_worked_by_hand():
    easy = Features(1, 1, 1, 1, 2, 3, 1, 0)
    hard = Features(3, 2, 3, 4, 6, 10, 5, 0)
    model = DifficultyModel.fit([easy, hard])
    # p90 = x + .9 (y - x) and p98 = x + .98 (y - x) for two values x < y
    p90 = {
        "evidence_files": 2.8,
        "modality_count": 1.9,
        "file_type_count": 2.8,
        "evidence_items": 3.7,
        "reasoning_steps": 5.6,
        "question_tokens": 9.3,
        "answer_tokens": 4.6,
        "time_span_days": 1.0,
    }
    assert model.p90 == pytest.approx(p90)
    assert model.p98["reasoning_steps"] == pytest.approx(5.92)
    assert model.p98["time_span_days"] == 1.0  # p98 = 0 falls back to p90

    def n(v: float, key: str) -> float:
        return math.log1p(v) / math.log1p(p90[key])

    # the hard question: every value is above its p90 but below the cap, so n = log1p(v) / log1p(p90)
    nh = {
        "evidence_files": n(3, "evidence_files"),
        "modality_count": n(2, "modality_count"),
        "file_type_count": n(3, "file_type_count"),
        "evidence_items": n(4, "evidence_items"),
        "reasoning_steps": n(6, "reasoning_steps"),
        "question_tokens": n(10, "question_tokens"),
        "answer_tokens": n(5, "answer_tokens"),
        "time_span_days": 0.0,
    }
    assert model.normalized(hard) == pytest.approx(nh)
    weights = [0.19, 0.10, 0.08, 0.18, 0.20, 0.10, 0.07, 0.08]
    base = sum(w * v for w, v in zip(weights, nh.values(), strict=True))
    inter = 0.10 * math.sqrt(nh["evidence_files"] * nh["reasoning_steps"]) + 0.07 * math.sqrt(
        nh["modality_count"] * nh["file_type_count"]
    )
    raw_hard = base + inter + 0.05 + 0.03 + 0.02
    assert model.score(hard) == pytest.approx(100 / (1 + math.exp(-4.4 * (raw_hard - 0.70))))

    # the easy question: n = log1p(v) / log1p(p90), all below .85 except none -> no bonus
    ne = [
        n(1, "evidence_files"),
        n(1, "modality_count"),
        n(1, "file_type_count"),
        n(1, "evidence_items"),
        n(2, "reasoning_steps"),
        n(3, "question_tokens"),
        n(1, "answer_tokens"),
        0.0,
    ]
    assert all(v < 0.85 for v in ne[:5])
    base = sum(w * v for w, v in zip(weights, ne, strict=True))
    raw_easy = base + 0.10 * math.sqrt(ne[0] * ne[4]) + 0.07 * math.sqrt(ne[1] * ne[2])
    assert model.score(easy) == pytest.approx(100 / (1 + math.exp(-4.4 * (raw_easy - 0.70))))
    assert model.score(easy) < model.score(hard)


def test_difficulty_is_clipped_to_1_99_and_needs_questions():
    zero = Features(0, 0, 0, 0, 0, 0, 0, 0)
    assert DifficultyModel.fit([zero]).score(zero) == pytest.approx(100 / (1 + math.exp(4.4 * 0.70)))
    big = Features(500, 5, 20, 900, 80, 400, 300, 800)
    model = DifficultyModel.fit([zero] * 20 + [big])  # p90 = 0 -> 1.0, so big normalizes far above 1
    assert model.score(big) == 99.0
    with pytest.raises(ValueError):
        DifficultyModel.fit([])
