"""Answer judges: a model's verdict, and our robust judge that a model cannot talk into accepting a
wrong number.

Modes:

* ``simple`` and ``detailed``: HippoCamp's two judge templates (``prompts/judge_*.md``); the model
  returns ``{correct, score 0-5, rationale}`` as validated structured output. ``detailed`` is correct
  iff its score is 3 or more (the verdict is made consistent with the score).
* ``robust`` (the default): the reference's key facts (numbers with scale and unit, dates, times,
  names, yes/no polarity) are checked deterministically against the response (`check_facts`), and
  that guard decides where it is sure: a response that contradicts a key fact, hedges between
  candidates, answers yes/no the other way, declines to answer, or gives none of a short reference's
  figures is incorrect; one that gives every key fact (in its own format, unit, scale or rounding, or
  worked out from figures it states together) and contradicts nothing is correct. Only what the guard
  cannot settle (a reference without checkable facts, facts missing that may be stated in other
  words) goes to the model's ``detailed`` verdict; the same check can only overturn the model's
  acceptance, never its rejection. ``Judgment.decided_by`` says which ("facts", "model",
  "facts-override").

A failed or unparsable judgment is retried, then recorded as ``unscored`` with its error: never as
a wrong answer. A `Panel` of judges votes by majority and reports its agreement (Cohen's kappa).
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import asdict, dataclass, field
from itertools import combinations, pairwise
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

_PROMPTS = Path(__file__).parent / "prompts"


class Verdict(BaseModel):
    """What a judge model returns, in this order: the rationale first, so that a model constrained to
    the schema reasons before it scores."""

    rationale: str = ""
    score: int = Field(ge=0, le=5)
    correct: bool


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
    #: the response declines to answer ("the documents do not say") and gives no key fact
    refusal: bool = False
    #: every key fact of the reference is in the response and nothing blocks: correct without a model
    complete: bool = False

    @property
    def blocks(self) -> bool:
        """Whether these findings forbid a "correct" verdict."""
        return (
            bool(self.contradicted) or self.hedged or self.polarity == "contradict" or self.misses_all or self.refusal
        )

    def reasons(self) -> list[str]:
        out = [f"contradicts {c}" for c in self.contradicted]
        if self.refusal:
            out.append("declines to answer")
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
#: an opening that only says where an answer comes from ("Based on the balance sheet, ...")
_PREAMBLE = re.compile(r"^\W*(?:based on|according to|as per|looking at|from)\b[^,.;:!?]{0,160},\s*", re.I)
_YES_NO_QUESTION = re.compile(r"^\W*(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|should)\b", re.I)
#: a sentence that denies: "X does not have", "margins have not been", "isn't"
_DENIAL = re.compile(
    r"\b(?:is|are|was|were|do|does|did|has|have|had|could|will|would|should)\s*(?:not|n't)\b|\b(?:cannot|can't|won't)\b",
    re.I,
)
#: a response that declines to answer: the information is not there, or cannot be found or worked out
_REFUSAL = re.compile(
    r"\b(?:i(?:'m|’m| am) sorry|i apologi[sz]e"
    r"|(?:can ?not|can't|can’t|could not|couldn't|couldn’t|unable to|not able to)\s+(?:\w+\s+){0,2}?"
    r"(?:find|locate|determine|provide|answer|calculate|compute|tell|identify|confirm|access|assess)"
    r"|(?:does|do|did)\s*(?:not|n't|n’t)\s+(?:\w+\s+){0,2}?"
    r"(?:contain|include|provide|specify|mention|state|give|show|list|disclose|offer|have any|have enough)"
    r"|(?:there is|there's|there are|i (?:have|found)|with|contains?|includes?|provides?)\s+no\s+(?:\w+\s+){0,2}?"
    r"(?:information|details|data|mention|records?|evidence|figures?)"
    r"|not\s+(?:explicitly\s+|directly\s+|specifically\s+)?(?:available|provided|mentioned|specified|found|given|disclosed)"
    r")\b",
    re.I,
)
#: a reference that says a figure did not move
_FLAT = re.compile(r"\b(?:flat|unchanged|no (?:real |net |material |significant )?(?:change|growth))\b", re.I)
#: where a sentence ends: not after an initial ("Mary N. Dillon") or a common abbreviation ("Inc.")
_SENTENCE = re.compile(
    r"(?<=[.!?])(?<!\b[A-Z]\.)(?<!\b(?:Mr|Ms|Dr|St|No|Co|vs)\.)(?<!\b(?:Inc|Ltd|Mrs)\.)(?<!\bCorp\.)\s+|\n+"
)


def _polarity(text: str) -> str | None:
    if _YES.search(text):
        return "yes"
    if _NO.search(text):
        return "no"
    return None


#: British and American spellings of one word (defence, defense; organisation, organization; centre, center)
_SPELLINGS = [(re.compile(r"(?<=\w{3})is(?=e|ation|ing|ed)"), "iz"), (re.compile(r"(?<=\w{2})ys(?=e|ing|ed)"), "yz"),
              (re.compile(r"(?<=\w{3})ence$"), "ense"),
              (re.compile(r"(?<=\w{3})our(?=s?$|ed$|ing$|ite)"), "or"), (re.compile(r"(?<=\w{3})tre(?=s?$)"), "ter"),
              (re.compile(r"(?<=\w{3})ogue(?=s?$)"), "og")]  # fmt: skip


def _spelling(word: str) -> str:
    """One spelling for a (lowercase) word written the British or the American way."""
    for pattern, common in _SPELLINGS:
        word = pattern.sub(common, word)
    return word


def _first_sentence(text: str) -> str:
    return next((s for s in _SENTENCE.split(text.strip()) if s.strip()), "")


#: an answer that goes on after a caveat ("The report does not state it directly. However, ...")
_GOES_ON = re.compile(r"(?:^|[.;:]\s+|\n)\s*(?:however|but|nevertheless|nonetheless|that said|still|instead)\b", re.I)


def _refuses(text: str) -> bool:
    """Whether ``text`` declines to answer: it opens by saying so ("I'm sorry, but the documents do not
    include ...") and does not go on to answer anyway ("... However, the notes show ...")."""
    first = _first_sentence(text)
    return bool(_REFUSAL.search(first)) and not _GOES_ON.search(text.strip()[len(first) :])


def _answer_polarity(question: str, response: str) -> str | None:
    """Yes or no as the response answers: an opening "Yes" or "No" (also after a preamble such as
    "Based on the filings,"), or, to a yes/no question, an opening sentence that denies ("Foot Locker's
    CEO does not have ...") without declining to answer."""
    text = _PREAMBLE.sub("", response.strip(), count=1)
    if (said := _polarity(text)) is not None:
        return said
    first = _first_sentence(text)
    if _YES_NO_QUESTION.search(question) and _DENIAL.search(first) and not _REFUSAL.search(first):
        return "no"
    return None


_SCALE_WORDS = {1e3: ("thousand", "k"), 1e6: ("million", "mn", "mm"), 1e9: ("billion", "bn"), 1e12: ("trillion",)}


def _scale_named(scale: float, question: str) -> bool:
    words = _SCALE_WORDS.get(scale, ())
    return any(re.search(rf"\b{w}s?\b", question, re.I) for w in words)


def _half_unit(n: NumberFact) -> float:
    """Half the place value of the last digit written, in the number's own scale (1,616: 0.5; $1.6 bn: 0.05)."""
    return 0.5 * 10 ** (-n.decimals)


def _digits(n: NumberFact) -> int:
    """Significant digits written (1.6: 2; 0.028: 2; 1,616: 4)."""
    return len(str(round(abs(n.value) * 10**n.decimals)).lstrip("0"))


def _readings(ref: NumberFact, question: str) -> list[tuple[float, float]]:
    """(magnitude, rounding) of a reference figure: as written, and in each scale the question names
    when the reference writes none ("in USD millions": 5466 is $5,466 million)."""
    out = [(abs(ref.magnitude), _half_unit(ref) * ref.scale)]
    if ref.scale == 1.0:
        out += [(abs(ref.value) * s, _half_unit(ref) * s) for s in _SCALE_WORDS if _scale_named(s, question)]
    return out


#: a response that rounds a figure further keeps at least this many significant digits ...
ROUNDED_DIGITS = 2
#: ... and stays within this share of it
ROUNDED_SHARE = 0.05


def _number_match(ref: NumberFact, cand: NumberFact, question: str = "", rounded: bool = False) -> bool:
    """Same amount at the reference's precision ($1.8 bn = $1,824 million; 1,616 = 1,615.9) or, with
    ``rounded``, at the response's, when it keeps two significant digits and stays within 5% ($1.6
    billion = 1,616 million; 2.77 = 2.774729). A scale only the response writes counts only when the
    question names it ("in USD millions"); so 1,450 never equals 1,450 thousand, nor $1,616 million
    $1,616 billion. Signs are not compared: "(1,234)", "-1,234" and "a loss of 1,234" are one figure."""
    if ref.percent != cand.percent:
        return _ratio_percent(ref, cand, question, rounded)
    got, got_rounding = abs(cand.magnitude), _half_unit(cand) * cand.scale
    for value, rounding in _readings(ref, question):
        gap, slack = abs(value - got), 1e-9 * max(1.0, value)
        if gap <= rounding + slack:
            return True
        if rounded and _digits(cand) >= ROUNDED_DIGITS and gap <= min(got_rounding, ROUNDED_SHARE * value) + slack:
            return True
    return False


def _ratio_percent(ref: NumberFact, cand: NumberFact, question: str = "", rounded: bool = False) -> bool:
    """A ratio written as a percentage or the other way round: 0.028 is 2.8%, 23% is 0.23 (a ratio is a
    decimal fraction: neither "one" nor "1" is 100%)."""
    if ref.percent == cand.percent:
        return False
    ratio = cand if ref.percent else ref
    if abs(ratio.value) >= 1.5 or ratio.scale != 1.0 or ratio.currency or not ratio.decimals:
        return False
    as_percent = NumberFact(ratio.text, ratio.value * 100, percent=True, decimals=max(0, ratio.decimals - 2))
    return _number_match(*((ref, as_percent) if ref.percent else (as_percent, cand)), question, rounded)


def _sentences_with(text: str, needle: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?;])\s+", text) if needle.lower() in s.lower()]


#: a reference longer than this many words is an explanation: its facts are recorded, never blocking
SHORT_REFERENCE_WORDS = 25
#: derived figures are looked for among at most this many figures stated together
DERIVE_FROM = 3


def _year_like(n: NumberFact) -> bool:
    return n.scale == 1.0 and not n.percent and not n.currency and n.decimals == 0 and 1900 <= n.value <= 2100


def _comparable(ref: NumberFact, cand: NumberFact, question: str = "") -> bool:
    """Whether ``cand`` competes with ``ref`` as an answer: same kind (percent, amount, year) and a
    magnitude within a factor of ten (in the question's unit when it names one)."""
    if _year_like(ref) != _year_like(cand) or ref.percent != cand.percent:
        return False
    b = abs(cand.magnitude)
    if ref.scale == 1.0 and cand.scale != 1.0 and _scale_named(cand.scale, question):
        b = abs(cand.value)
    for a, _ in _readings(ref, question):
        if (a == 0 or b == 0) and a == b:
            return True
        if a and b and 0.1 <= a / b <= 10:
            return True
    return False


def _together(response: str) -> list[list[NumberFact]]:
    """The response's figures stated together: those of each sentence or line and of each two
    neighbouring ones (years left out); groups of more than `DERIVE_FROM` figures (tables, long
    workings) are left out, since some pair in them fits almost any figure."""
    parts = [
        [n for n in extract_facts(p).numbers if not _year_like(n) and _digits(n) >= ROUNDED_DIGITS]
        for p in _SENTENCE.split(response)
        if p.strip()
    ]
    groups = parts + [a + b for a, b in pairwise(parts)]
    return [g for g in groups if 2 <= len(g) <= DERIVE_FROM]


def _one_step(a: NumberFact, b: NumberFact, percent: bool) -> list[tuple[float, float]]:
    """(value, rounding) of what a reader works out from two figures of one kind: their difference;
    and, for a percentage from two amounts, the change from either one and the share of the smaller."""
    if a.percent != b.percent or bool(a.currency) != bool(b.currency) or a.scale != b.scale:
        return []
    x, y = abs(a.magnitude), abs(b.magnitude)
    rx, ry = _half_unit(a) * a.scale, _half_unit(b) * b.scale
    if x == y:
        return []
    if a.percent or not percent:
        return [(abs(x - y), rx + ry)]
    gap = abs(x - y)
    return [
        (100 * gap / x, 100 * ((rx + ry) / x + gap * rx / x**2)),
        (100 * gap / y, 100 * ((rx + ry) / y + gap * ry / y**2)),
        (100 * min(x, y) / max(x, y), 100 * min(x, y) / max(x, y) * (rx / x + ry / y)),
    ]


def _derived(ref: NumberFact, response: str, question: str = "") -> bool:
    """Whether the response's own figures give ``ref`` by one step a reader does in their head: the
    difference of two percentages (22.5% to 21.4%: a decline of 1.1%) or of two amounts ($49.7 bn and
    $47.2 bn: $2.5 bn less), a change as a percentage ($1,874 m to $1,093 m: ~42%) or a share ($81 m
    of $93 m: 87%). Only figures of one kind stated together count (`_together`); the result must
    round to the reference's figure, from figures not much coarser than it."""
    if ref.percent:
        wanted = [(abs(ref.value), _half_unit(ref))]
    elif _digits(ref) >= ROUNDED_DIGITS:
        wanted = _readings(ref, question)
    else:
        return False
    for group in _together(response):
        for a, b in combinations(group, 2):
            for value, rounding in _one_step(a, b, ref.percent):
                if any(abs(value - w) <= r + 1e-9 * max(1.0, w) and rounding <= 4 * r for w, r in wanted):
                    return True
    return False


def check_facts(question: str, reference: str, response: str) -> FactCheck:
    """Compare the key facts of ``reference`` with ``response``. Facts also in the question are not
    key (they do not tell answers apart). A fact is *matched* when the response gives it, in its own
    format, unit, scale or rounding, or as a one-step result of figures it states together
    (`_derived`). It is *contradicted* when the response gives a competing value of the same kind
    instead (another amount of similar size, another date, time or name); that only blocks a verdict
    when the reference is short, i.e. is the answer itself rather than an explanation (longer
    references record matched and missing facts for the model to weigh). A response that declines
    to answer (and gives none of the key facts) is a *refusal*, unless the reference itself says the
    answer is not to be had."""
    result = FactCheck()
    ref, got, asked = extract_facts(reference), extract_facts(response), extract_facts(question)
    claimed = _claim(response)
    claim = extract_facts(claimed)
    short = len(reference.split()) <= SHORT_REFERENCE_WORDS
    asked_numbers = [n.value for n in asked.numbers]
    got_numbers = [n for n in claim.numbers if not any(abs(n.value - a) < 1e-9 for a in asked_numbers)]
    conflicts: list[str] = []
    key_numbers = [
        n
        for n in ref.numbers
        if not any(abs(n.value - a) < 1e-9 for a in asked_numbers) and not (_year_like(n) and len(ref.numbers) > 1)
    ]
    #: competing figures a long response gives outside what it asserts (its working)
    elsewhere: list[str] = []
    for n in key_numbers:
        # the figure itself settles it; a rounded or worked-out one only when nothing competes with it
        if any(_number_match(n, c, question) for c in got.numbers):
            result.matched.append(n.text)
            continue
        rounded = [c for c in got.numbers if _number_match(n, c, question, rounded=True)]

        def competes(c: NumberFact, n: NumberFact = n, rounded: list[NumberFact] = rounded) -> bool:
            return (_comparable(n, c, question) or (c.value == n.value and c.scale != n.scale)) and c not in rounded

        if any(competes(c) for c in got_numbers):
            conflicts.append(f"the number {n.text}")
        elif rounded or _derived(n, response, question):
            result.matched.append(n.text)
        elif any(competes(c) for c in got.numbers if not any(abs(c.value - a) < 1e-9 for a in asked_numbers)):
            elsewhere.append(f"the number {n.text}")
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
    words = [_spelling(w) for w in re.findall(r"[a-z0-9]+", response.lower())]
    name_answer = len(reference.split()) <= 8
    for nm in ref.names:
        if set(nm.tokens) <= asked_names:
            continue
        parts = [_spelling(p) for tok in nm.tokens for p in re.findall(r"[a-z0-9]+", tok) if len(p) >= 2]
        if all(any(w.startswith(p) for w in words) for p in parts):
            result.matched.append(nm.text)
        elif other_names and name_answer:
            conflicts.append(f"the name {nm.text}")
        else:
            result.missing.append(nm.text)
    rp = _polarity(reference)
    if short and rp is None and not key_numbers and _FLAT.search(reference) and not _FLAT.search(question):
        # "flat": a claimed change of 0% (or "unchanged") gives it, a change of 1% or more competes
        if _FLAT.search(claimed) or any(c.percent and abs(c.value) < 0.5 for c in claim.numbers):
            result.matched.append("flat")
        elif any(c.percent and abs(c.value) >= 1 for c in got_numbers):
            conflicts.append("the change: flat")
        else:
            result.missing.append("flat")
    key_names = [nm.text for nm in ref.names if not set(nm.tokens) <= asked_names]
    if not short and len(key_names) >= 2 and other_names and not set(key_names) & set(result.matched):
        conflicts.append("the names " + ", ".join(dict.fromkeys(key_names)))  # others named instead
    if short:  # a short reference is the answer itself
        result.contradicted = conflicts
        result.missing += [c.split(" ", 2)[-1] for c in elsewhere]
    elif (conflicts or elsewhere) and not result.matched:
        # a long reference (an explanation) blocks only when the response gives none of its key facts
        # and competing ones instead, anywhere
        result.contradicted = conflicts + elsewhere
    else:
        result.missing += [c.split(" ", 2)[-1] for c in conflicts + elsewhere]
    if rp is not None:
        gp = _answer_polarity(question, response)
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
    result.refusal = not result.matched and _refuses(response) and not _refuses(reference)
    result.complete = bool(result.matched) and not result.missing and not result.blocks
    return result


def _claim(response: str) -> str:
    """What a response asserts: all of a short one; the first sentence and the last two of a long one
    (the working in between has intermediate figures that compete with nothing)."""
    if len(response.split()) <= 60:
        return response
    sentences = [x for x in re.split(r"(?<=[.!?])\s+|\n+", response.strip()) if x.strip()]
    return " ".join([*sentences[:1], *sentences[-2:]])


#: a figure, bounded and possessive so that a hostile "1,1,1,..." cannot backtrack
_AMOUNT = r"[$€£]?\s?\d[\d,.]{0,24}+\s?%?"
#: two figures offered as alternatives ("EUR 1,450 or EUR 1,500"; a longer list ends in such a pair)
_ALTERNATIVES = re.compile(rf"{_AMOUNT}\s*\b(?:or|and/or)\b\s*{_AMOUNT}", re.I)
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


# -- judges ------------------------------------------------------------------------------------------------
#: the release's judge templates, verbatim (system and user message, token cap), by script and name
_RELEASE_TEMPLATES: dict[str, Any] = json.loads((_PROMPTS / "release_judge.json").read_text(encoding="utf-8"))
#: the judge templates a model can be asked with: ours (by mode) and the release's two
TEMPLATES = ("hippocamp", "release-simple", "release-detailed")
#: the release script whose template texts and token caps a ``release-*`` template uses
RELEASE_SCRIPTS = ("evaluate.py", "run_evaluation.py")


def release_messages(
    template: str, question: str, reference: str, response: str, script: str = "evaluate.py"
) -> tuple[list[dict[str, str]], int]:
    """The release judge's request for one answer: a system and a user message, and its token cap
    (``evaluate.py``: 256 for both templates; ``run_evaluation.py``: 64 simple, 512 detailed).

    The user template is filled the way the release fills it (``str.format`` with ``question``,
    ``ground_truth`` and ``model_answer``). The release's YAML ``detailed`` template (the one
    ``run_evaluation.py`` uses) writes a literal ``{"pred": ...}`` that ``str.format`` cannot take
    (the release raises ``KeyError '"pred"'`` and records a "no" for every row); its intent is kept
    instead: the three placeholders are filled and every other brace is left as written."""
    name = template.removeprefix("release-")
    try:
        chosen = _RELEASE_TEMPLATES[script][name]
    except KeyError:
        raise ValueError(f"no release judge template {template!r} for {script}") from None
    values = {"question": question or "", "ground_truth": reference or "", "model_answer": response or ""}
    try:
        user = chosen["user"].format(**values)
    except (KeyError, IndexError, ValueError):
        user = re.sub(r"\{(question|ground_truth|model_answer)\}", lambda m: values[m.group(1)], chosen["user"])
    messages = [{"role": "system", "content": chosen["system"]}, {"role": "user", "content": user}]
    return messages, int(chosen["max_tokens"])


class Judge:
    """Judge answers with ``model`` (a `hippocamp.models.Model`) in ``mode``; ``retries`` extra
    attempts after a failed or unparsable judgment (the client already repairs bad JSON once).

    ``template`` is what the model is asked with: ``hippocamp`` (our templates, ``prompts/judge_*.md``)
    or the release's ``release-simple`` / ``release-detailed`` (verbatim, from ``script``'s texts and
    token caps; their reply is read by the release's parser and ``pred`` is the verdict). The modes
    ``release-simple`` and ``release-detailed`` are that template alone; ``robust`` with a release
    template is our deterministic layer around the release's verdict. ``mode`` (the key of the score
    lines) names both, e.g. ``robust+release-detailed`` or ``release-simple@run_evaluation``."""

    def __init__(self, model: Any, mode: str = "robust", retries: int = 1, template: str = "hippocamp",
                 script: str = "evaluate.py"):  # fmt: skip
        if mode in ("release-simple", "release-detailed"):
            template = mode
        elif mode not in ("robust", "simple", "detailed", "facts"):
            raise ValueError(f"unknown judge mode {mode!r}; choose robust, simple, detailed, facts, "
                             "release-simple or release-detailed")  # fmt: skip
        if template not in TEMPLATES:
            raise ValueError(f"unknown judge template {template!r}; choose one of {', '.join(TEMPLATES)}")
        if script not in RELEASE_SCRIPTS:
            raise ValueError(f"unknown release script {script!r}; choose one of {', '.join(RELEASE_SCRIPTS)}")
        if template != "hippocamp" and mode in ("simple", "detailed", "facts"):
            if mode == "facts":
                raise ValueError("the facts judge asks no model: a judge template does not apply to it")
            mode = template  # our simple/detailed verdict replaced by the release's: the release's alone
        if model is None and mode != "facts":
            raise ValueError(f"the {mode} judge needs a model; the 'facts' mode runs without one")
        self.model = model
        self.kind = mode
        self.template = template
        self.script = script
        self.retries = retries

    @property
    def mode(self) -> str:
        """The judge's mode as score lines key it: the mode, the release template it asks with when
        that is not its own, and ``@run_evaluation`` for that script's texts."""
        name = self.kind if self.template in ("hippocamp", self.kind) else f"{self.kind}+{self.template}"
        return name + ("@run_evaluation" if self.template != "hippocamp" and self.script == "run_evaluation.py" else "")

    @property
    def id(self) -> str:
        return "facts" if self.model is None else str(getattr(self.model, "id", self.model))

    def prompt(self, question: str, reference: str, response: str) -> str:
        template = "judge_simple.md" if self.kind == "simple" else "judge_detailed.md"
        text = (_PROMPTS / template).read_text(encoding="utf-8")
        values = {"question": question, "reference": reference, "response": response or "(no answer)"}
        return re.sub(r"\{(question|reference|response)\}", lambda m: values[m.group(1)], text)

    async def judge(self, question: str, reference: str, response: str) -> Judgment:
        if self.kind == "facts":
            return self._facts_only(question, reference, response)
        facts = check_facts(question, reference, response) if self.kind == "robust" else None
        if not (response or "").strip():
            return Judgment(False, 0, "no answer", self.mode, judge=self.id, decided_by="facts", facts=facts)
        if facts is not None and facts.blocks:
            return Judgment(
                False, 1, "; ".join(facts.reasons()), self.mode, judge=self.id, decided_by="facts", facts=facts
            )
        if facts is not None and facts.complete:
            why = "all key facts present: " + ", ".join(facts.matched)
            return Judgment(True, 5, why, self.mode, judge=self.id, decided_by="facts", facts=facts)
        if self.template != "hippocamp":
            verdict, error, attempts = await self._ask_release(question, reference, response)
        else:
            verdict, error, attempts = await self._ask(question, reference, response)
        if verdict is None:
            return Judgment(None, None, "", self.mode, "unscored", error, self.id, facts=facts, attempts=attempts)
        correct = verdict.correct
        if self.template == "hippocamp" and self.kind != "simple":  # the release's templates: pred is the verdict
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

    async def _ask_release(
        self, question: str, reference: str, response: str
    ) -> tuple[Verdict | None, str | None, int]:
        """The release's request (its messages and token cap, plain text: the release's JSON mode is not
        asked for, since our client would then repair a bad reply, which the release never does) and its
        reading of the reply (`hippocamp.scoring.release.parse_pred_score`). A reply without a ``pred``
        is not retried (the release does not) and comes back unparsed: the release reads it as "no",
        our convention leaves it unscored. An outage is retried, then unscored."""
        from hippocamp.scoring.release import parse_pred_score

        messages, cap = release_messages(self.template, question, reference, response, self.script)
        error: str | None = None
        for attempt in range(1, self.retries + 2):
            try:
                gen = await self.model.generate(messages, temperature=0.0, max_tokens=cap)
            except Exception as exc:  # outage, timeout: try again, then unscored
                error = f"{type(exc).__name__}: {exc}"
                continue
            read = parse_pred_score(gen.text)
            if not read.found:
                return None, f"unparsed judgment (the release reads it as no): {gen.text[:300]!r}", attempt
            rationale = read.rationale or f"Prediction: {read.pred}, Score: {read.score}/5"
            return Verdict(rationale=rationale, score=read.score, correct=read.pred == "yes"), None, attempt
        return None, error, self.retries + 1


@dataclass(frozen=True)
class JudgeKind:
    """A judge as the registry holds it (kind ``judge``): its name, whether it needs a model, and how
    it is made from one. A third-party judge registers any callable ``(model) -> judge`` with a
    ``needs_model`` attribute, whose judge answers ``await judge(question, reference, response)``."""

    name: str
    needs_model: bool
    about: str

    def __call__(self, model: Any = None, retries: int = 1, template: str = "hippocamp",
                 script: str = "evaluate.py") -> Judge:  # fmt: skip
        return Judge(model, self.name, retries, template=template, script=script)


for _kind in (
    JudgeKind("robust", True, "key facts checked deterministically around the model's detailed verdict"),
    JudgeKind("simple", True, "HippoCamp's simple template"),
    JudgeKind("detailed", True, "HippoCamp's detailed template (correct iff the score is 3 or more)"),
    JudgeKind("facts", False, "the deterministic layer alone: no model"),
    JudgeKind("release-simple", True, "the HippoCamp release's simple template, verbatim (pred is the verdict)"),
    JudgeKind("release-detailed", True, "the HippoCamp release's detailed template, verbatim (pred is the verdict)"),
):
    register("judge", _kind.name)(_kind)


def judge_names() -> list[str]:
    """The registered judges' names (the CLI's ``--judge-mode`` choices)."""
    return names("judge")


def make_judge(name: str, model: Any = None, template: str = "hippocamp", script: str = "evaluate.py") -> Any:
    """The registered judge ``name`` over ``model`` (None for one that needs no model); ``template``
    and ``script`` choose the release's judge template (see `Judge`) for our built-in judges."""
    kind = get("judge", name)
    if getattr(kind, "needs_model", True) and model is None:
        raise ValueError(f"the {name} judge needs a model; the 'facts' judge runs without one")
    if isinstance(kind, JudgeKind):
        return kind(model, template=template, script=script)
    if template != "hippocamp":
        raise ValueError(f"the {name} judge has its own prompts: --judge-template applies to HippoCamp's judges")
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
