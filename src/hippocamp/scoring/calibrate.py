"""How far to trust a judge: agreement with human labels, and an adversarial self-test.

``load_labeled`` reads labeled answers (FinanceBench's format: ``question``, ``gold_answer``,
``model_answer``, ``label`` = "Correct Answer" / "Incorrect Answer" / "Refusal"; a refusal counts as
incorrect; also plain ``{question, reference, response, correct}``). ``agreement`` judges each row
and reports accuracy, Cohen's kappa, false-accept and false-reject rates; ``agreement_with_layer``
does so for a judge and, on the same rows, for the deterministic layer alone (the ``facts`` judge),
so a judge model is seen to add to the layer rather than take from it. ``self_test`` perturbs
gold answers (a number changed, its scale changed, a date shifted, a name swapped, the claim negated,
the answer padded with hedging alternatives) and reports how often the judge accepts them, next to
how often it accepts the unchanged gold answer.
"""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocamp.schema.io import RecordsFileError, json_objects
from hippocamp.scoring.judge import Judge, Judgment, cohen_kappa

__all__ = [
    "Agreement",
    "LabeledRow",
    "WithLayer",
    "agreement",
    "agreement_with_layer",
    "load_labeled",
    "perturb",
    "self_test",
]


@dataclass(frozen=True)
class LabeledRow:
    question: str
    reference: str
    response: str
    correct: bool
    source: str = ""


def load_labeled(path: str | Path) -> list[LabeledRow]:
    """Rows of a labeled-answers JSON Lines file; a bad line is an error naming the file and line."""
    rows = []
    path = Path(path)
    try:
        items = list(json_objects(path))
    except RecordsFileError as exc:
        raise ValueError(str(exc)) from None
    for n, d in items:
        if "label" in d:
            label = str(d["label"]).lower()
            if label not in ("correct answer", "incorrect answer", "refusal"):
                raise ValueError(f"{path}:{n}: field 'label' is {d['label']!r}, expected Correct/Incorrect/Refusal")
            correct = label == "correct answer"
            ref, resp = d.get("gold_answer"), d.get("model_answer")
        else:
            correct, ref, resp = bool(d.get("correct")), d.get("reference"), d.get("response")
        if ref is None or resp is None or "question" not in d:
            raise ValueError(f"{path}:{n}: needs question, gold_answer/reference and model_answer/response")
        rows.append(LabeledRow(str(d["question"]), str(ref), str(resp), correct, str(d.get("model_name", ""))))
    return rows


@dataclass
class Agreement:
    n: int
    scored: int
    unscored: int
    accuracy: float | None
    kappa: float | None
    false_accept: float | None  # share of human-incorrect answers the judge accepted
    false_reject: float | None  # share of human-correct answers the judge rejected
    judgments: list[Judgment] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "judgments"}


async def _judge_all(judge: Any, items: list[tuple[str, str, str]], concurrency: int) -> list[Judgment]:
    sem = asyncio.Semaphore(concurrency)

    async def one(q: str, r: str, a: str) -> Judgment:
        async with sem:
            return await judge.judge(q, r, a)

    return list(await asyncio.gather(*(one(*it) for it in items)))


async def agreement(judge: Judge, rows: list[LabeledRow], concurrency: int = 4) -> Agreement:
    """The judge against human labels (unscored rows are left out of every rate, and counted)."""
    judgments = await _judge_all(judge, [(r.question, r.reference, r.response) for r in rows], concurrency)
    return _measure(judgments, rows)


def _measure(judgments: list[Judgment], rows: list[LabeledRow]) -> Agreement:
    pairs = [(j.correct, r.correct) for j, r in zip(judgments, rows, strict=True) if j.correct is not None]
    scored = len(pairs)
    accuracy = sum(a == b for a, b in pairs) / scored if scored else None
    wrong = [a for a, b in pairs if not b]
    right = [a for a, b in pairs if b]
    return Agreement(
        n=len(rows),
        scored=scored,
        unscored=len(rows) - scored,
        accuracy=accuracy,
        kappa=cohen_kappa([a for a, _ in pairs], [b for _, b in pairs]) if pairs else None,
        false_accept=sum(wrong) / len(wrong) if wrong else None,
        false_reject=sum(not a for a in right) / len(right) if right else None,
        judgments=judgments,
    )


@dataclass
class WithLayer:
    """A judge's agreement with human labels beside that of the deterministic layer alone (the
    ``facts`` judge) on the same rows; ``on_layer_rows`` compares the two on just the rows the layer
    scores (the layer leaves rows without a checkable fact unscored), where the judge must not do worse."""

    layer: Agreement
    judge: Agreement
    on_layer_rows: dict[str, Agreement]

    def as_dict(self) -> dict[str, Any]:
        return {
            "layer": self.layer.as_dict(),
            "judge": self.judge.as_dict(),
            "on_layer_rows": {k: v.as_dict() for k, v in self.on_layer_rows.items()},
        }


async def agreement_with_layer(judge: Any, rows: list[LabeledRow], concurrency: int = 4) -> WithLayer:
    """``judge`` and the deterministic layer alone against human labels, on the same rows (the layer
    needs no model, so it costs nothing beside the judge)."""
    layer_judgments = await _judge_all(Judge(None, "facts"), [(r.question, r.reference, r.response) for r in rows], 1)
    if getattr(judge, "mode", None) == "facts":
        judgments = layer_judgments
    else:
        judgments = await _judge_all(judge, [(r.question, r.reference, r.response) for r in rows], concurrency)
    scored = [i for i, j in enumerate(layer_judgments) if j.correct is not None]
    subset = [rows[i] for i in scored]
    return WithLayer(
        layer=_measure(layer_judgments, rows),
        judge=_measure(judgments, rows),
        on_layer_rows={
            "layer": _measure([layer_judgments[i] for i in scored], subset),
            "judge": _measure([judgments[i] for i in scored], subset),
        },
    )


_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?")
_SCALES = [("million", "billion"), ("billion", "million"), ("thousand", "million")]
_DATE = re.compile(
    r"\b(\d{1,2}) (January|February|March|April|May|June|July|August|September|October|November|December) (\d{4})\b"
)
_MONTHS = "January February March April May June July August September October November December".split()
_NAME = re.compile(r"\b([A-Z][a-z]+)(?: ([A-Z][a-z]+))?\b")
_SWAP_NAMES = ["Walter Brandt", "Ines Moreau", "Tariq Osei", "Helga Sørensen"]


def perturb(gold: str, rng: random.Random) -> list[tuple[str, str]]:
    """Wrong variants of a gold answer: (kind, text) for every kind that applies to it."""
    out: list[tuple[str, str]] = []
    if m := _NUMBER.search(gold):
        digits = m.group(1).replace(",", "")
        value = int(digits)
        new = value + max(1, round(value * rng.uniform(0.12, 0.4)))
        text = f"{new:,}" if "," in m.group(1) else str(new)
        out.append(("number", gold[: m.start(1)] + text + gold[m.end(1) :]))
    for a, b in _SCALES:
        if re.search(rf"\b{a}\b", gold, re.I):
            out.append(("scale", re.sub(rf"\b{a}\b", b, gold, count=1, flags=re.I)))
            break
    else:
        if m := _NUMBER.search(gold):
            out.append(("scale", gold[: m.end()] + " thousand" + gold[m.end() :]))
    if m := _DATE.search(gold):
        day, month, year = int(m.group(1)), _MONTHS.index(m.group(2)), int(m.group(3))
        shifted = f"{min(28, day % 27 + 2)} {_MONTHS[(month + 1) % 12]} {year}"
        out.append(("date", gold[: m.start()] + shifted + gold[m.end() :]))
    names = [m for m in _NAME.finditer(gold) if m.group(2) and m.group(1) not in _MONTHS]
    if names:
        m = names[0]
        out.append(("name", gold[: m.start()] + rng.choice(_SWAP_NAMES) + gold[m.end() :]))
    out.append(("negate", f"No, that is not the case: it is not {gold.rstrip('.')}."))
    if m := _NUMBER.search(gold):
        value = int(m.group(1).replace(",", ""))
        alts = [value - max(1, value // 7), value, value + max(1, value // 5)]
        rng.shuffle(alts)
        out.append(("hedge", "It could be " + ", ".join(f"{a:,}" for a in alts[:-1]) + f" or {alts[-1]:,}."))
    return out


@dataclass
class SelfTest:
    #: share of unchanged gold answers accepted (should be ~1)
    accepts_gold: float | None
    #: false-accept rate per perturbation kind and overall (should be ~0)
    false_accept: dict[str, float]
    counts: dict[str, int]
    unscored: int


async def self_test(judge: Judge, items: list[tuple[str, str]], seed: int = 0, concurrency: int = 4) -> SelfTest:
    """Judge each (question, gold) against itself and against its perturbations."""
    rng = random.Random(seed)
    cases: list[tuple[str, str, str, str]] = []  # kind, question, gold, response
    for question, gold in items:
        cases.append(("gold", question, gold, gold))
        cases += [(kind, question, gold, text) for kind, text in perturb(gold, rng)]
    judgments = await _judge_all(judge, [(q, g, r) for _, q, g, r in cases], concurrency)
    by_kind: dict[str, list[bool]] = {}
    unscored = 0
    for (kind, *_), j in zip(cases, judgments, strict=True):
        if j.correct is None:
            unscored += 1
            continue
        by_kind.setdefault(kind, []).append(j.correct)
    on_gold = by_kind.pop("gold", [])
    wrong = [v for vals in by_kind.values() for v in vals]
    rates = {k: sum(v) / len(v) for k, v in sorted(by_kind.items())}
    rates["all"] = sum(wrong) / len(wrong) if wrong else 0.0
    return SelfTest(
        accepts_gold=sum(on_gold) / len(on_gold) if on_gold else None,
        false_accept=rates,
        counts={k: len(v) for k, v in by_kind.items()},
        unscored=unscored,
    )
