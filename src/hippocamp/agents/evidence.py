"""``evidence`` (the default agent): plan the evidence, search with structure, bind each passage
to its subject, keep the minimal supporting set, verify the answer against it, cite files and
locators.

1. **Plan** (structured): whose facts (the user, a relative, a pet), what fact settles it, a few
   keyword queries, likely modalities, whether the latest version wins, whether to aggregate.
2. **Search** each query over the whole profile and, for each likely modality, the question within
   that modality; fuse the lists by reciprocal rank; keep the best distinct passages.
3. **Bind and select** (structured): for each passage, is it relevant, and is it about the subject?
   Passages about someone else are dropped (HippoCamp's entity-misattribution failure). When nothing
   is left, search once more with the plan's fact as the query.
4. **Answer** (structured) from the kept passages with their times, citing passage ids; latest-state
   questions are told to prefer the newest passage.
5. **Verify**: every number, date, time and name of the answer must appear in the cited passages
   (``hippocamp.text.facts``); otherwise the model revises once. Aggregates are exempt for numbers
   (a sum is not in any passage).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from hippocamp.agents._cite import hit_files, model_failure
from hippocamp.agents.base import Answer, Budget, BudgetExceeded, EvidenceItem, Meter, Task, corpus_values, load_prompt
from hippocamp.models.errors import ModelOutputError
from hippocamp.registry import register
from hippocamp.text.facts import DateFact, NameFact, NumberFact, TimeFact, extract_facts, unsupported_facts

__all__ = ["EvidenceAgent", "Passage"]

Modality = Literal["text", "document", "image", "audio", "video"]


class Plan(BaseModel):
    subject: str = "the user"
    looking_for: str = ""
    queries: list[str] = Field(default_factory=list, max_length=4)
    modalities: list[Modality] = Field(default_factory=list, max_length=3)
    wants_latest: bool = False
    aggregate: bool = False


class Draft(BaseModel):
    answer: str
    used: list[int] = Field(default_factory=list)


class Passage(BaseModel):
    id: int
    path: str
    locator: dict[str, Any] | None
    where: str
    text: str
    time: str | None = None
    score: float = 0.0
    #: a message's writer (app logs)
    sender: str | None = None


@register("agent", "evidence")
class EvidenceAgent:
    """hippocamp's evidence agent: plan searches, select the passages that answer, revise, answer with locators."""

    name: ClassVar[str] = "evidence"
    #: a tool agent: scored by the files it examined (every passage it showed the model to select from),
    #: as the paper scores its agents by the files their actions touched
    file_list: ClassVar[str] = "touched"

    def __init__(self, passages: int = 10, chars: int = 700, rrf_k: int = 60):
        self.max_passages = passages
        self.chars = chars
        self.rrf_k = rrf_k

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        meter = Meter(budget)
        try:
            return await self._solve(task, env, model, meter)
        except BudgetExceeded as exc:
            return meter.answer("", stop=exc.reason, error=str(exc))
        except Exception as exc:
            return model_failure(meter, exc)

    async def _solve(self, task: Task, env: Any, model: Any, meter: Meter) -> Answer:
        q = task.prompt  # what the model reads; search looks for task.question alone
        words = corpus_values(env)
        owner = env.owner
        try:
            gen = await meter.generate(
                model, _user(load_prompt("evidence_plan.md", question=q, **words)), response_format=Plan,
                max_tokens=300,
            )  # fmt: skip
            plan: Plan = gen.parsed
        except ModelOutputError as exc:  # no plan: search for the question itself
            meter.note(f"plan unreadable, searching for the question: {str(exc)[:200]}")
            plan = Plan(looking_for=task.question)
        if owner and plan.subject.strip().lower() in ("", "the user", "user", "me", owner.lower()):
            plan.subject = f"{owner} (the person whose data this is)"
        meter.note(f"plan: {plan.model_dump_json()}")
        passages = self._search(env, meter, task.question, plan)
        kept = await self._select(model, meter, q, plan, passages, words)
        if not kept and plan.looking_for:
            meter.note("nothing relevant; searching for the fact itself")
            extra = self._search(
                env, meter, plan.looking_for, Plan(queries=[], subject=plan.subject), start=len(passages)
            )
            passages += extra
            kept = await self._select(model, meter, q, plan, extra, words)
        if not kept:
            where = "The files" if words["corpus"] == "the person's files" else words["corpus"].capitalize()
            return meter.answer(f"{where} do not show this: no passage about it was found.", files=[], evidence=[])
        draft = await self._answer(model, meter, q, plan, kept, words)
        used = [p for p in kept if p.id in draft.used] or kept[:3]
        problems = _unsupported(draft.answer, used, plan.aggregate)
        if problems:
            meter.note(f"unsupported in the draft: {problems}")
            revise = load_prompt("evidence_revise.md", unsupported="; ".join(problems), **words)
            messages = [
                *_user(self._answer_prompt(q, plan, kept, words)),
                {"role": "assistant", "content": draft.model_dump_json()},
                {"role": "user", "content": revise},
            ]
            gen = await meter.generate(model, messages, response_format=Draft, max_tokens=400)
            draft = gen.parsed
            used = [p for p in kept if p.id in draft.used] or used
        evidence = [EvidenceItem(file_path=p.path, locator=p.locator, text=p.text[: self.chars]) for p in used]
        answer = resolve_relative(draft.answer.strip(), used)
        if answer != draft.answer.strip():
            meter.note(f"relative time resolved from the cited passages: {answer!r}")
        return meter.answer(answer, evidence=evidence)

    # -- steps -------------------------------------------------------------------------------------
    def _search(self, env: Any, meter: Meter, question: str, plan: Plan, start: int = 0) -> list[Passage]:
        k = meter.budget.k
        requests: list[dict[str, Any]] = [{"query": question, "k": k}]
        requests += [{"query": query, "k": k} for query in plan.queries if query.strip()]
        requests += [{"query": question, "k": max(3, k // 2), "modality": m} for m in plan.modalities]
        fused: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
        for args in requests:
            began = time.perf_counter()
            obs = env.call("search", args)
            meter.observe("search", args, obs.text, time.perf_counter() - began, files=hit_files(obs))
            for rank, hit in enumerate(obs.data):
                key = (hit["path"], json.dumps(hit.get("locator"), sort_keys=True))
                score = 1.0 / (self.rrf_k + rank + 1)
                old = fused.get(key)
                fused[key] = ((old[0] if old else 0.0) + score, hit)
        keep = min(self.max_passages, meter.budget.k + 2)  # a small budget (a small model's context) reads less
        ranked = sorted(fused.values(), key=lambda item: -item[0])[:keep]
        return [
            Passage(
                id=start + i + 1,
                path=h["path"],
                locator=h.get("locator"),
                where=h.get("where", h["path"]),
                text=h["text"],
                time=h.get("time"),
                score=s,
                sender=h.get("sender"),
            )
            for i, (s, h) in enumerate(ranked)
        ]

    def _render(self, passages: list[Passage], with_time: bool = True) -> str:
        blocks = []
        for p in passages:
            when = f" ({p.time})" if with_time and p.time else ""
            blocks.append(f"[{p.id}] {p.where}{when}\n{p.text[: self.chars]}")
        return "\n\n".join(blocks)

    async def _select(
        self, model: Any, meter: Meter, question: str, plan: Plan, passages: list[Passage], words: dict[str, str]
    ) -> list[Passage]:
        if not passages:
            return []
        meter.touch([p.path for p in passages])  # each passage is read and judged: its file is examined
        prompt = load_prompt(
            "evidence_select.md",
            question=question,
            looking_for=plan.looking_for or question,
            subject=plan.subject or "the user",
            passages=self._render(passages),
            **words,
        )
        ids = [p.id for p in passages]
        id_list = {"type": "array", "items": {"type": "integer", "enum": ids}, "maxItems": len(ids)}
        schema = {
            "type": "object",
            "properties": {"relevant": id_list, "about_someone_else": id_list},
            "required": ["relevant", "about_someone_else"],
        }
        try:
            gen = await meter.generate(model, _user(prompt), response_format=schema, max_tokens=40 + 8 * len(ids))
        except ModelOutputError as exc:  # a muddled selection keeps every passage rather than ending the episode
            meter.note(f"selection unreadable, keeping every passage: {str(exc)[:200]}")
            return passages
        relevant = {int(i) for i in gen.parsed.get("relevant", [])}
        elsewhere = {int(i) for i in gen.parsed.get("about_someone_else", [])}
        # what the subject wrote is about the subject: a small model marks every message of a two-person
        # conversation as about "someone else"
        names = {w.lower() for w in re.findall(r"[A-Z][a-z]+", plan.subject or "")} - {"the", "user"}
        mine = {p.id for p in passages if p.sender and p.sender.split()[0].lower() in names}
        elsewhere -= mine
        kept = [p for p in passages if p.id in relevant and p.id not in elsewhere]
        dropped = [p.id for p in passages if p.id in relevant and p.id in elsewhere]
        if dropped:
            meter.note(f"dropped passages about someone else: {dropped}")
        if plan.wants_latest:
            kept.sort(key=lambda p: p.time or "", reverse=True)
        return kept

    def _answer_prompt(self, question: str, plan: Plan, kept: list[Passage], words: dict[str, str]) -> str:
        latest = (
            "Plans and versions may have changed: when passages disagree, the newest one (latest time, "
            "later version, 'final') is the current state.\n"
            if plan.wants_latest
            else ""
        )
        aggregate = "Count or add across all the passages that qualify, and show the sum.\n" if plan.aggregate else ""
        return load_prompt(
            "evidence_answer.md", question=question, passages=self._render(kept), latest=latest, aggregate=aggregate,
            **words,
        )  # fmt: skip

    async def _answer(
        self, model: Any, meter: Meter, question: str, plan: Plan, kept: list[Passage], words: dict[str, str]
    ) -> Draft:
        gen = await meter.generate(
            model, _user(self._answer_prompt(question, plan, kept, words)), response_format=Draft, max_tokens=400
        )
        return gen.parsed


_RESOLVED = re.compile(r"\[([^\[\]]*?\S = [^\[\]]+?)\]")


def resolve_relative(answer: str, used: list[Passage]) -> str:
    """The answer with the dates of its relative phrases from the cited passages' resolutions: a small
    model answers "Yesterday" from "[yesterday = Sun 2023-05-07]"; that becomes "Yesterday (Sun 2023-05-07)".
    An answer that already gives a date is left alone, and so is a phrase the passages do not resolve."""
    if extract_facts(re.sub(r"[\[\]]", " ", answer)).dates:
        return answer
    resolved: dict[str, str] = {}
    for p in used:
        for block in _RESOLVED.findall(p.text):
            for part in block.split("; "):
                phrase, _, value = part.partition(" = ")
                resolved.setdefault(phrase.strip().lower(), value.strip())
    for phrase, value in sorted(resolved.items(), key=lambda kv: -len(kv[0])):
        m = re.search(rf"\b{re.escape(phrase)}\b", answer, re.I)
        if m and value:
            return f"{answer[: m.end()]} ({value}){answer[m.end() :]}"
    return answer


def _user(content: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": content}]


def _unsupported(answer: str, used: list[Passage], aggregate: bool) -> list[str]:
    """Facts of the answer that the used passages do not contain (numbers exempt for aggregates)."""
    evidence = "\n".join(f"{p.text} {p.time or ''}" for p in used)
    missing: list[NumberFact | DateFact | TimeFact | NameFact] = unsupported_facts(answer, evidence)
    if aggregate:
        missing = [f for f in missing if not isinstance(f, NumberFact)]
    return [f.text for f in missing]
