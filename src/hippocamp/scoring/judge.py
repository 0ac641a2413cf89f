"""Answer judges: a model's verdict, and our robust judge that a model cannot talk into accepting a
wrong number.

Modes:

* ``simple`` and ``detailed``: HippoCamp's two judge templates (``prompts/judge_*.md``); the model
  returns ``{correct, score 0-5, rationale}`` as validated structured output. ``detailed`` is correct
  iff its score is 3 or more (the verdict is made consistent with the score).
* ``robust`` (the default): the reference's key facts (numbers with scale and unit, dates, times,
  names, yes/no polarity) are checked deterministically against the response (`check_facts`)
  *before* the model is asked: a response that contradicts a key fact, or hedges between candidates,
  is incorrect without a model call. *After* the model's ``detailed`` verdict, the same check can
  only overturn an acceptance, never a rejection.

A failed or unparsable judgment is retried, then recorded as ``unscored`` with its error: never as
a wrong answer. A `Panel` of judges votes by majority and reports its agreement (Cohen's kappa).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from hippocamp.registry import get, names, register
from hippocamp.text.facts import DateFact, NumberFact, extract_facts, unsupported_facts

__all__ = [
    "FactCheck",
    "Judge",
    "JudgeKind",
    "Judgment",
    "Panel",
    "Verdict",
    "check_facts",
    "cohen_kappa",
    "judge_names",
    "make_judge",
    "panel_agreement",
]

Mode = Literal["robust", "simple", "detailed", "facts"]
_PROMPTS = Path(__file__).parent / "prompts"


class Verdict(BaseModel):
    """What a judge model returns."""

    correct: bool
    score: int = Field(ge=0, le=5)
    rationale: str = ""


@dataclass
class FactCheck:
    """The deterministic comparison of a response with the reference's key facts."""

    matched: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    contradicted: list[str] = field(default_factory=list)
    hedged: bool = False
    polarity: str | None = None  # "agree", "contradict" or None when the reference is not yes/no
    #: a short reference's numbers or dates, none of which the response gives
    misses_all: bool = False

    @property
    def blocks(self) -> bool:
        """Whether these findings forbid a "correct" verdict."""
        return bool(self.contradicted) or self.hedged or self.polarity == "contradict" or self.misses_all

    def reasons(self) -> list[str]:
        out = [f"contradicts {c}" for c in self.contradicted]
        if self.misses_all:
            out.append("gives none of the key figures: " + ", ".join(self.missing))
        if self.hedged:
            out.append("hedges between several candidates")
        if self.polarity == "contradict":
            out.append("answers yes/no the other way")
        return out


@dataclass
class Judgment:
    """One judged answer. ``correct`` is None when unscored."""

    correct: bool | None
    score: int | None
    rationale: str = ""
    mode: str = "robust"
    status: Literal["ok", "unscored"] = "ok"
    error: str | None = None
    judge: str | None = None
    #: "model", "facts" (decided without a model) or "facts-override" (the model accepted; facts did not)
    decided_by: str = "model"
    model_correct: bool | None = None
    facts: FactCheck | None = None
    attempts: int = 0

    @property
    def normalized(self) -> float | None:
        return None if self.score is None else self.score / 5

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["normalized"] = self.normalized
        return data


# -- the deterministic layer --------------------------------------------------------------------------
_YES = re.compile(r"^\W*(yes|yeah|correct|true)\b", re.I)
_NO = re.compile(r"^\W*(no|not|false|incorrect|none|never)\b", re.I)
_NEGATION = re.compile(r"\b(not|never|no longer|n't|none|neither)\b", re.I)


def _polarity(text: str) -> str | None:
    if _YES.search(text):
        return "yes"
    if _NO.search(text):
        return "no"
    return None


_SCALE_WORDS = {1e3: ("thousand", "k"), 1e6: ("million", "mn", "mm"), 1e9: ("billion", "bn"), 1e12: ("trillion",)}


def _scale_named(scale: float, question: str) -> bool:
    words = _SCALE_WORDS.get(scale, ())
    return any(re.search(rf"\b{w}s?\b", question, re.I) for w in words)


def _number_match(ref: NumberFact, cand: NumberFact, question: str = "") -> bool:
    """Same amount, tolerant of rounding to the reference's precision ($1.8 bn = $1,824 million;
    1,616 = 1,615.9). A scale only the response writes counts only when the question names it ("in
    USD millions"); so 1,450 never equals 1,450 thousand, nor $1,616 million $1,616 billion."""
    tolerance = 0.5 * 10 ** (-ref.decimals)
    if ref.scale == 1.0 and cand.scale != 1.0 and _scale_named(cand.scale, question):
        return abs(abs(ref.value) - abs(cand.value)) <= tolerance + 1e-9
    if abs(abs(ref.magnitude) - abs(cand.magnitude)) <= tolerance * ref.scale + 1e-9:
        return True
    # "in USD millions": a reference of 5466 is the response's $5,466,312,000
    named = [scale for scale in _SCALE_WORDS if _scale_named(scale, question)]
    return (
        ref.scale == 1.0
        and cand.scale == 1.0
        and any(abs(abs(ref.value) * scale - abs(cand.value)) <= tolerance * scale + 1e-9 for scale in named)
    )


def _sentences_with(text: str, needle: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?;])\s+", text) if needle.lower() in s.lower()]


#: a reference longer than this many words is an explanation: its facts are recorded, never blocking
SHORT_REFERENCE_WORDS = 25


def _year_like(n: NumberFact) -> bool:
    return n.scale == 1.0 and not n.percent and not n.currency and n.decimals == 0 and 1900 <= n.value <= 2100


def _comparable(ref: NumberFact, cand: NumberFact, question: str = "") -> bool:
    """Whether ``cand`` competes with ``ref`` as an answer: same kind (percent, amount, year) and a
    magnitude within a factor of ten (in the question's unit when it names one)."""
    if _year_like(ref) != _year_like(cand) or ref.percent != cand.percent:
        return False
    a, b = abs(ref.magnitude), abs(cand.magnitude)
    if ref.scale == 1.0 and cand.scale != 1.0 and _scale_named(cand.scale, question):
        b = abs(cand.value)
    if a == 0 or b == 0:
        return a == b
    return 0.1 <= a / b <= 10


def _ratio_percent(ref: NumberFact, cand: NumberFact) -> bool:
    """0.028 and 2.8% are the same share."""
    if ref.percent == cand.percent:
        return False
    ratio, pct = (cand, ref) if ref.percent else (ref, cand)
    if abs(ratio.value) >= 1.5:
        return False
    tolerance = 0.5 * 10 ** (-max(0, ratio.decimals - 2)) if ratio is ref else 0.5 * 10 ** (-pct.decimals)
    return abs(ratio.value * 100 - pct.value) <= tolerance + 1e-9


def check_facts(question: str, reference: str, response: str) -> FactCheck:
    """Compare the key facts of ``reference`` with ``response``. Facts also in the question are not
    key (they do not tell answers apart). A fact is *contradicted* when the response gives a competing
    value of the same kind instead (another amount of similar size, another date, time or name); that
    only blocks a verdict when the reference is short, i.e. is the answer itself rather than an
    explanation (longer references record matched and missing facts for the model to weigh)."""
    result = FactCheck()
    ref, got, asked = extract_facts(reference), extract_facts(response), extract_facts(question)
    claim = extract_facts(_claim(response))
    short = len(reference.split()) <= SHORT_REFERENCE_WORDS
    asked_numbers = [n.value for n in asked.numbers]
    got_numbers = [n for n in claim.numbers if not any(abs(n.value - a) < 1e-9 for a in asked_numbers)]
    conflicts: list[str] = []
    for n in ref.numbers:
        if any(abs(n.value - a) < 1e-9 for a in asked_numbers) or (_year_like(n) and len(ref.numbers) > 1):
            continue
        if any(_number_match(n, c, question) or _ratio_percent(n, c) for c in got.numbers):
            result.matched.append(n.text)
        elif any(_comparable(n, c, question) or (c.value == n.value and c.scale != n.scale) for c in got_numbers):
            conflicts.append(f"the number {n.text}")
        else:
            result.missing.append(n.text)
    for d in ref.dates:
        if d.text.lower() in question.lower():
            continue
        if not [f for f in unsupported_facts(d.text, response) if isinstance(f, DateFact)]:
            result.matched.append(d.text)
        elif claim.dates:
            conflicts.append(f"the date {d.text}")
        else:
            result.missing.append(d.text)
    got_minutes = {m for t in got.times for m in t.minutes}
    for t in ref.times:
        if set(t.minutes) & got_minutes:
            result.matched.append(t.text)
        elif claim.times:
            conflicts.append(f"the time {t.text}")
        else:
            result.missing.append(t.text)
    asked_names = {tok for nm in asked.names for tok in nm.tokens}
    other_names = [nm for nm in claim.names if not set(nm.tokens) <= asked_names]
    words = re.findall(r"[a-z0-9]+", response.lower())
    name_answer = len(reference.split()) <= 8
    for nm in ref.names:
        if set(nm.tokens) <= asked_names:
            continue
        if all(any(w.startswith(tok) for w in words) for tok in nm.tokens if len(tok) >= 2):
            result.matched.append(nm.text)
        elif other_names and name_answer:
            conflicts.append(f"the name {nm.text}")
        else:
            result.missing.append(nm.text)
    if short:
        result.contradicted = conflicts
    else:
        result.missing += [c.split(" ", 2)[-1] for c in conflicts]
    rp, gp = _polarity(reference), _polarity(response)
    if rp is not None:
        result.polarity = "agree" if gp in (None, rp) else "contradict"
    elif (
        short
        and len(response.split()) <= 2 * len(reference.split()) + 12
        and result.matched
        and not _NEGATION.search(reference)
    ):
        # "the lease did NOT start on 1 March" carries the reference's fact under a negation
        for fact in result.matched:
            if any(_NEGATION.search(s) for s in _sentences_with(response, fact)):
                result.polarity = "contradict"
                break
    result.hedged = short and _hedges(ref, response)
    figures = [n for n in ref.numbers if not _year_like(n)] + list(ref.dates)
    result.misses_all = (
        short and rp is None and bool(figures) and bool(result.missing) and not result.matched and not conflicts
    )
    return result


def _claim(response: str) -> str:
    """What a response asserts: all of a short one; the first sentence and the last two of a long one
    (the working in between has intermediate figures that compete with nothing)."""
    if len(response.split()) <= 60:
        return response
    sentences = [x for x in re.split(r"(?<=[.!?])\s+|\n+", response.strip()) if x.strip()]
    return " ".join([*sentences[:1], *sentences[-2:]])


_AMOUNT = r"[$€£]?\s?\d[\d,.]*\s?%?"
_ALTERNATIVES = re.compile(rf"{_AMOUNT}\s*(?:,\s*{_AMOUNT}\s*)*,?\s*\b(?:or|and/or)\b\s*{_AMOUNT}", re.I)
_DAY_ALTERNATIVES = re.compile(r"\b\d{1,2}(?:st|nd|rd|th)?\s+or\s+\d{1,2}(?:st|nd|rd|th)?\b", re.I)


def _hedges(ref: Any, response: str) -> bool:
    """The response offers alternatives for the kind of value the reference gives ("EUR 1,400, EUR
    1,450 or EUR 1,500"; "12 or 13 March"; "either Oskar or Elias") instead of one answer."""
    text = re.sub(r"\b(?:EUR|USD|GBP|AUD|SEK|DKK)\s", "", response)
    if ref.numbers and _ALTERNATIVES.search(text):
        return True
    if ref.dates and (_DAY_ALTERNATIVES.search(text) or _ALTERNATIVES.search(text)):
        return True
    return bool(ref.names and re.search(r"\beither\b[^.;]{0,60}\bor\b", response, re.I))


# -- judges --------------------------------------------------------------------------------------------
class Judge:
    """Judge answers with ``model`` (a `hippocamp.models.Model`) in ``mode``; ``retries`` extra
    attempts after a failed or unparsable judgment (the client already repairs bad JSON once)."""

    def __init__(self, model: Any, mode: Mode = "robust", retries: int = 1):
        if mode not in ("robust", "simple", "detailed", "facts"):
            raise ValueError(f"unknown judge mode {mode!r}; choose robust, simple, detailed or facts")
        if model is None and mode != "facts":
            raise ValueError(f"the {mode} judge needs a model; the 'facts' mode runs without one")
        self.model = model
        self.mode = mode
        self.retries = retries

    @property
    def id(self) -> str:
        return "facts" if self.model is None else str(getattr(self.model, "id", self.model))

    def prompt(self, question: str, reference: str, response: str) -> str:
        template = "judge_simple.md" if self.mode == "simple" else "judge_detailed.md"
        text = (_PROMPTS / template).read_text(encoding="utf-8")
        values = {"question": question, "reference": reference, "response": response or "(no answer)"}
        return re.sub(r"\{(question|reference|response)\}", lambda m: values[m.group(1)], text)

    async def judge(self, question: str, reference: str, response: str) -> Judgment:
        if self.mode == "facts":
            return self._facts_only(question, reference, response)
        facts = check_facts(question, reference, response) if self.mode == "robust" else None
        if not (response or "").strip():
            return Judgment(False, 0, "no answer", self.mode, judge=self.id, decided_by="facts", facts=facts)
        if facts is not None and facts.blocks:
            return Judgment(
                False, 1, "; ".join(facts.reasons()), self.mode, judge=self.id, decided_by="facts", facts=facts
            )
        verdict, error, attempts = await self._ask(question, reference, response)
        if verdict is None:
            return Judgment(None, None, "", self.mode, "unscored", error, self.id, facts=facts, attempts=attempts)
        correct = verdict.correct
        if self.mode != "simple":
            correct = verdict.score >= 3
        judgment = Judgment(correct, verdict.score, verdict.rationale, self.mode, judge=self.id,
                            model_correct=verdict.correct, facts=facts, attempts=attempts)  # fmt: skip
        if facts is not None and correct and facts.blocks:  # the check after the verdict (belt and braces)
            judgment.correct, judgment.score, judgment.decided_by = False, min(verdict.score, 1), "facts-override"
        return judgment

    def _facts_only(self, question: str, reference: str, response: str) -> Judgment:
        """No model: correct when every key fact of the reference is in the response and nothing
        contradicts it; wrong when a fact is contradicted or missing; unscored when the reference
        has no checkable fact (a judgment of prose needs a model)."""
        facts = check_facts(question, reference, response)
        base: dict[str, Any] = {"mode": "facts", "judge": "facts", "decided_by": "facts", "facts": facts}
        if not (response or "").strip():
            return Judgment(False, 0, "no answer", **base)
        if facts.blocks:
            return Judgment(False, 1, "; ".join(facts.reasons()), **base)
        if facts.missing:
            return Judgment(False, 2, "missing " + ", ".join(facts.missing), **base)
        if not facts.matched:
            return Judgment(None, None, "", status="unscored", error="no checkable fact in the reference", **base)
        return Judgment(True, 5, "all key facts present: " + ", ".join(facts.matched), **base)

    async def _ask(self, question: str, reference: str, response: str) -> tuple[Verdict | None, str | None, int]:
        messages = [{"role": "user", "content": self.prompt(question, reference, response)}]
        error: str | None = None
        for attempt in range(1, self.retries + 2):
            try:
                gen = await self.model.generate(messages, response_format=Verdict, temperature=0.0, max_tokens=600)
                return gen.parsed, None, attempt
            except Exception as exc:  # outage, timeout, unparsable after repair: try again, then unscored
                error = f"{type(exc).__name__}: {exc}"
        return None, error, self.retries + 1


@dataclass(frozen=True)
class JudgeKind:
    """A judge as the registry holds it (kind ``judge``): its name, whether it needs a model, and how
    it is made from one. A third-party judge registers any callable ``(model) -> judge`` with a
    ``needs_model`` attribute, whose judge answers ``await judge(question, reference, response)``."""

    name: str
    needs_model: bool
    about: str

    def __call__(self, model: Any = None, retries: int = 1) -> Judge:
        return Judge(model, self.name, retries)  # type: ignore[arg-type]


for _kind in (
    JudgeKind("robust", True, "key facts checked deterministically around the model's detailed verdict"),
    JudgeKind("simple", True, "HippoCamp's simple template"),
    JudgeKind("detailed", True, "HippoCamp's detailed template (correct iff the score is 3 or more)"),
    JudgeKind("facts", False, "the deterministic layer alone: no model"),
):
    register("judge", _kind.name)(_kind)


def judge_names() -> list[str]:
    """The registered judges' names (the CLI's ``--judge-mode`` choices)."""
    return names("judge")


def make_judge(name: str, model: Any = None) -> Any:
    """The registered judge ``name`` over ``model`` (None for one that needs no model)."""
    kind = get("judge", name)
    if getattr(kind, "needs_model", True) and model is None:
        raise ValueError(f"the {name} judge needs a model; the 'facts' judge runs without one")
    return kind(model)


class Panel:
    """Several judges; the verdict is the majority of those that scored (a tie is unscored)."""

    def __init__(self, judges: list[Judge]):
        if not judges:
            raise ValueError("a panel needs at least one judge")
        self.judges = judges

    async def judge(self, question: str, reference: str, response: str) -> tuple[Judgment, list[Judgment]]:
        each = await asyncio.gather(*(j.judge(question, reference, response) for j in self.judges))
        votes = [j.correct for j in each if j.correct is not None]
        yes, no = sum(votes), len(votes) - sum(votes)
        scores = [j.score for j in each if j.score is not None]
        ids = ",".join(j.id for j in self.judges)
        if not votes or yes == no:
            why = "no judge scored" if not votes else f"tie {yes}-{no}"
            return Judgment(None, None, why, self.judges[0].mode, "unscored", why, ids), list(each)
        score = sorted(scores)[len(scores) // 2] if scores else None
        return Judgment(yes > no, score, f"{yes} of {len(votes)} judges accept", self.judges[0].mode, judge=ids), list(
            each
        )


def cohen_kappa(a: list[bool | None], b: list[bool | None]) -> float | None:
    """Cohen's kappa of two raters over the items both scored (None when undefined)."""
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(x == y for x, y in pairs) / n
    pa, pb = sum(x for x, _ in pairs) / n, sum(y for _, y in pairs) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    if expected == 1.0:
        return 1.0 if observed == 1.0 else None
    return (observed - expected) / (1 - expected)


def panel_agreement(judgments: list[list[Judgment]]) -> dict[str, float | None]:
    """Pairwise Cohen's kappa between the judges of a panel, over many items (``judgments[item][judge]``)."""
    if not judgments:
        return {}
    out: dict[str, float | None] = {}
    n = len(judgments[0])
    for i, j in combinations(range(n), 2):
        a = [row[i].correct for row in judgments]
        b = [row[j].correct for row in judgments]
        out[f"{i}:{judgments[0][i].judge}~{j}:{judgments[0][j].judge}"] = cohen_kappa(a, b)
    return out
