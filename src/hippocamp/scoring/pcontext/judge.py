"""P-ContextBench's Pass-2 judge: the guard layer first, a judge model for what the guard cannot decide.

One prompt per type family, kept in files (``prompts/pcontext_pass2_facts.md`` for T1–T4 with the type's
requirement, ``prompts/pcontext_pass2_t5.md`` for T5), given the question, the answer key, the cited
evidence's text and the answer; the model returns a validated structure (T1–T4: which key items are
stated, with a quote, whether the answer contradicts or hedges, a verdict; T5: which constraints are
recognised, with a quote, and the boundary the answer took).

How the two combine (the guard is never overridden where it is sure):

* the model is asked only when the guard leaves something open: T1–T4 items it cannot find in the
  answer's words (and no contradiction, hedge or refusal found); T5 constraints it cannot find, or an
  answer whose boundary it cannot read. Abstention is the guard's alone.
* a model's "stated" or "recognised" counts only with a quote of at least two words that really is in
  the answer, and not when the same model says the answer contradicts the key or hedges: a judge that
  accepts everything cannot make a paraphrase out of nothing.
* the model's boundary is used only where the guard reads none; its verdicts never lower the guard's.
* several models vote by majority; when none answers (an outage), the episode is unscored, never wrong.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from hippocamp.registry import register
from hippocamp.schema.pcontext import BOUNDARIES
from hippocamp.scoring.pcontext import guard
from hippocamp.scoring.pcontext.guard import Cited
from hippocamp.scoring.pcontext.rubric import Grade

__all__ = ["GUARD_ID", "MODE", "FactsVerdict", "Pass2Judge", "T5Verdict", "judge_id"]

#: the judge id of the guard alone; with models, ``pcontext-guard+<model ids>``
GUARD_ID = "pcontext-guard"
MODE = "pass2"
_PROMPTS = Path(__file__).resolve().parent.parent / "prompts"
_REQUIREMENTS = {
    "T1": "",
    "T2": "The key combines facts from several sources: every item is required.",
    "T3": "This is a question about a change over time: the CURRENT state must be asserted as the current one; an "
    "answer that presents the earlier state as current, or swaps the two, does not state the current state.",
    "T4": "This is an inference question: the conclusion (the pattern) must be stated; only restating the facts "
    "the pattern rests on does not state the conclusion.",
}


class _Item(BaseModel):
    n: int
    stated: bool = False
    quote: str = ""


class FactsVerdict(BaseModel):
    """What the model returns for T1–T4."""

    items: list[_Item] = Field(default_factory=list)
    contradicts: bool = False
    hedges: bool = False
    verdict: Literal["correct", "partial", "incorrect"]
    reason: str = ""


class _Constraint(BaseModel):
    n: int
    recognised: bool = False
    quote: str = ""


class T5Verdict(BaseModel):
    """What the model returns for T5."""

    constraints: list[_Constraint] = Field(default_factory=list)
    boundary: Literal["comply", "warn", "clarify", "suggest_alternative", "require_confirmation", "refuse", "none"]
    reason: str = ""


def judge_id(models: list[Any]) -> str:
    return GUARD_ID + (f"+{','.join(str(getattr(m, 'id', m)) for m in models)}" if models else "")


def _squash(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _quoted(quote: str, answer: str) -> bool:
    q = _squash(quote)
    return (len(q.split()) >= 2 and q in _squash(answer)) or (bool(q) and q == _squash(answer))


#: characters of an answer or an evidence text a judge prompt carries
PROMPT_TEXT = 6_000


@cache
def _template(name: str) -> str:
    return (_PROMPTS / name).read_text(encoding="utf-8")


def _numbered(items: list[str]) -> str:
    return "\n".join(f"{n}. {x}" for n, x in enumerate(items, 1))


def _quoted_votes(
    entries: list[tuple[int, bool, str]], names: list[str], answer: str
) -> tuple[Counter[str], list[str]]:
    """Votes per name from a model's (number, yes, quote) entries: a yes counts only with a quote that
    really is in the answer and a number in range; and the quotes that counted."""
    votes: Counter[str] = Counter()
    quotes: list[str] = []
    for n, yes, quote in entries:
        if yes and 1 <= n <= len(names) and _quoted(quote, answer):
            votes[names[n - 1]] += 1
            quotes.append(quote)
    return votes, quotes


def _fill(template: str, values: dict[str, str]) -> str:
    cut = {k: v if len(v) <= PROMPT_TEXT else v[:PROMPT_TEXT] + " [...]" for k, v in values.items()}
    return re.sub(r"\{(\w+)\}", lambda m: cut.get(m.group(1), m.group(0)), template)


def _evidence(evidence: list[dict[str, str]], cited: Cited) -> str:
    rows = [e for e in evidence if e.get("id") in cited.ids] or evidence
    if not rows:
        return "(none)"
    return "\n".join(f"[{e.get('id')}] {e.get('speaker', '')} ({e.get('time', '')}): {e.get('text', '')}"
                     for e in rows[:12])  # fmt: skip


class Pass2Judge:
    """The guard plus judge ``models`` (one or more `hippocamp.models.Model`); ``retries`` extra attempts
    per model after a failed or unparsable answer. Verdicts are kept per prompt, so measuring the model
    alone (`model_only`) and the combination (`grade`) asks each model once."""

    def __init__(self, models: list[Any], retries: int = 1, weights: guard.T5Weights | None = None):
        if not models:
            raise ValueError("the Pass-2 judge needs at least one model; grade with the guard alone instead")
        self.models = list(models)
        self.retries = retries
        self.weights = weights
        self.id = judge_id(self.models)
        self._seen: dict[str, list[Any]] = {}

    async def _ask(self, prompt: str, shape: type[BaseModel], max_tokens: int) -> list[Any]:
        """The parsed answers of the models that answered (an empty list: an outage)."""
        if prompt in self._seen:
            return self._seen[prompt]
        out = []
        for model in self.models:
            for _ in range(self.retries + 1):
                try:
                    gen = await model.generate([{"role": "user", "content": prompt}], response_format=shape,
                                               temperature=0.0, max_tokens=max_tokens)  # fmt: skip
                except Exception:  # an outage or an unusable answer: try again, then this model does not vote
                    continue
                out.append(gen.parsed)
                break
        if out:
            self._seen[prompt] = out
        return out

    async def _facts(self, case: dict[str, Any], answer: str, cited: Cited, evidence: list[dict[str, str]]
                     ) -> tuple[list[str], list[FactsVerdict]]:  # fmt: skip
        items = [i.text for i in guard.required_items(case)]
        ctype = str(case.get("type"))
        prompt = _fill(_template("pcontext_pass2_facts.md"), {
            "requirements": _REQUIREMENTS.get(ctype, ""), "type": ctype, "question": str(case.get("question") or ""),
            "items": _numbered(items), "evidence": _evidence(evidence, cited),
            "answer": answer,
        })  # fmt: skip
        return items, await self._ask(prompt, FactsVerdict, 500)

    async def _t5(self, case: dict[str, Any], answer: str, cited: Cited, evidence: list[dict[str, str]]
                  ) -> tuple[list[str], list[T5Verdict]]:  # fmt: skip
        constraints = [str(x) for x in case.get("constraints") or case.get("labels") or []]
        prompt = _fill(_template("pcontext_pass2_t5.md"), {
            "question": str(case.get("question") or ""), "boundary": str(case.get("boundary") or "comply"),
            "items": _numbered(constraints),
            "evidence": _evidence(evidence, cited), "answer": answer,
        })  # fmt: skip
        return constraints, await self._ask(prompt, T5Verdict, 400)

    async def grade(
        self, case: dict[str, Any], answer: str, cited: Cited, evidence: list[dict[str, str]] | None = None
    ) -> Grade | None:
        """The grade of one answer; None when the guard needed the model and no model answered."""
        evidence = evidence or []
        if case.get("type") == "T5":
            return await self._grade_t5(case, answer, cited, evidence)
        a = None if case.get("type") == "abstain" or not answer.strip() else guard.assess(case, answer)
        if a is None or a.wrong or not a.missing:  # the guard is sure: no model
            first = guard.grade(case, answer, cited)
            first.decided_by = "guard"
            return first
        items, verdicts = await self._facts(case, answer, cited, evidence)
        if not verdicts:
            return None
        # a model that says the answer contradicts the key or hedges does not vote for its items
        votes, _ = _quoted_votes(
            [(it.n, it.stated, it.quote) for v in verdicts if not (v.contradicts or v.hedges) for it in v.items],
            items, answer,
        )  # fmt: skip
        accepted = frozenset(x for x, k in votes.items() if 2 * k > len(verdicts) and x in a.missing)
        g = guard.grade(case, answer, cited, accepted)
        g.decided_by = "guard+judge" if g.judged else "guard"
        return g

    async def _grade_t5(
        self, case: dict[str, Any], answer: str, cited: Cited, evidence: list[dict[str, str]]
    ) -> Grade | None:
        texts = tuple(e.get("text", "") for e in evidence)
        first = guard.grade_t5(case, answer, cited, self.weights, evidence=texts)
        first.decided_by = "guard"
        expected = str(case.get("boundary") or "comply")
        rest = guard.strip_echo(answer, str(case.get("question") or ""))
        # no boundary read, or a compliance with a caution the guard cannot tie to a constraint
        # (an answer that echoes the prompt's options and takes no boundary the guard can read took none)
        open_boundary = bool(rest) and (
            (first.boundary is None and not guard.echoes_options(answer))
            or (first.boundary == "comply" and expected != "comply" and guard.cautions(rest))
        )
        open_constraints = bool(first.missing) and expected != "comply" and first.boundary is not None
        if not (open_boundary or open_constraints):
            return first
        constraints, verdicts = await self._t5(case, answer, cited, evidence)
        if not verdicts:
            return None
        votes, quotes = _quoted_votes(
            [(c.n, c.recognised, c.quote) for v in verdicts for c in v.constraints], constraints, answer
        )
        boundaries = Counter(v.boundary for v in verdicts)
        accepted = frozenset(x for x, k in votes.items() if 2 * k > len(verdicts))
        top, count = boundaries.most_common(1)[0]
        chosen = top if top in BOUNDARIES and 2 * count > len(verdicts) and first.boundary is None else None
        quoted = tuple(quotes) if accepted else ()
        g = guard.grade_t5(case, answer, cited, self.weights, accepted, chosen, quotes=quoted, evidence=texts)
        g.decided_by = "guard+judge" if (g.judged or (chosen and g.boundary == chosen)) else "guard"
        return g

    async def model_only(
        self, case: dict[str, Any], answer: str, cited: Cited, evidence: list[dict[str, str]] | None = None
    ) -> Grade | None:
        """The first model's own grade, no guard (to measure it): T1–T4 its verdict, lowered to partial
        when the citations are not ``ok``; T5 its boundary and recognised constraints through the same
        arithmetic. Abstention has no model prompt: None."""
        evidence = evidence or []
        ctype = str(case.get("type"))
        if ctype == "abstain":
            return None
        status, hit = guard.citation_status(case, cited)
        if ctype == "T5":
            constraints, t5 = await self._t5(case, answer, cited, evidence)
            if not t5:
                return None
            got = frozenset(constraints[c.n - 1] for c in t5[0].constraints if c.recognised
                            and 1 <= c.n <= len(constraints))  # fmt: skip
            g = guard.grade_t5(case, answer, cited, self.weights, got, t5[0].boundary, forced=True)
            g.decided_by = "judge"
            return g
        _, facts = await self._facts(case, answer, cited, evidence)
        if not facts:
            return None
        verdict = facts[0].verdict
        if verdict == "correct" and status != "ok" and case.get("supporting_fragments"):
            verdict = "partial"
        return Grade(ctype, verdict, verdict == "correct", cited_support=hit, citations=status, decided_by="judge")


class _Pass2Kind:
    """The Pass-2 judge as the registry holds it (kind ``judge``, name ``pass2``): P-ContextBench runs only."""

    name = "pass2"
    needs_model = True
    benchmark = "pcontext"
    about = "P-ContextBench's Pass-2 judge: the guard layer, and the model for what the guard cannot decide"
    mode = MODE

    def __call__(self, model: Any = None, retries: int = 1) -> Pass2Judge:
        return Pass2Judge([model], retries)


register("judge", "pass2")(_Pass2Kind())
