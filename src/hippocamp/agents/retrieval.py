"""The paper's retrieval baselines over a profile's store: Standard RAG, Self-RAG and Search-R1.

All three search through ``env.call("search", ...)`` (a `FilesEnv`), charge every model call and
every search to a `Meter` (with its hit files: ``Answer.retrieved``, the file list the paper scores
them by), and cite the passages their answer rests on (``Answer.evidence`` with file, locator and
text; ``Answer.files`` follows from it).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from hippocamp.agents._cite import (
    Draft,
    Passage,
    Passages,
    cited_numbers,
    containing,
    mentioned_files,
    render_passages,
    run_episode,
    run_tool,
)
from hippocamp.agents.base import Answer, Budget, Meter, Task, corpus_values, load_prompt
from hippocamp.models.types import Message
from hippocamp.registry import register

__all__ = ["SearchR1", "SelfRAG", "StandardRAG"]


def _cite(text: str, shown: list[Passage], global_numbers: bool = False) -> list[Passage]:
    """The passages an answer cites by number (their position in ``shown``, or with
    ``global_numbers`` their own number); all of ``shown`` when it cites none of them."""
    by_number = {p.number: p for p in shown} if global_numbers else dict(enumerate(shown, 1))
    highest = max(by_number, default=0)
    cited = [by_number[n] for n in cited_numbers(text, highest) if n in by_number]
    out: list[Passage] = []
    for p in cited or shown:
        if p not in out:
            out.append(p)
    return out


@register("agent", "rag")
class StandardRAG:
    """Standard RAG: one search for the question (top ``budget.k``), one answer from the numbered
    passages; cites the passages referenced as ``[n]``, else all of them."""

    name: ClassVar[str] = "rag"
    #: the paper scores retrieval baselines by the files their retrieval returned
    file_list: ClassVar[str] = "retrieved"

    def __init__(self, max_tokens: int = 512):
        self.max_tokens = max_tokens

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        meter, best = Meter(budget), Draft()
        return await run_episode(meter, best, self._run(task, env, model, meter))

    async def _run(self, task: Task, env: Any, model: Any, meter: Meter) -> Answer:
        obs = run_tool(meter, env, "search", {"query": task.question, "k": meter.budget.k})
        return await self._answer(task, env, model, meter, obs)

    async def _answer(self, task: Task, env: Any, model: Any, meter: Meter, obs: Any) -> Answer:
        shown = Passages().add(obs.data if obs.ok else [])
        words = corpus_values(env)
        messages: list[Message] = [
            {"role": "system", "content": load_prompt("rag_system.md", **words)},
            {"role": "user", "content": load_prompt("rag.md", question=task.prompt, passages=obs.text, **words)},
        ]
        gen = await meter.generate(model, messages, max_tokens=self.max_tokens)
        text = gen.text.strip()
        return meter.answer(text, evidence=[p.evidence() for p in _cite(text, shown)])


@register("agent", "rag-expand")
class ExpandedRAG(StandardRAG):
    """Standard RAG whose one search also ranks the model's expansions of the question
    (`hippocamp.agents.expand`: queries in the words the answering passages would use), for
    multi-hop questions whose evidence shares few words with them. One more model call."""

    name: ClassVar[str] = "rag-expand"

    async def _run(self, task: Task, env: Any, model: Any, meter: Meter) -> Answer:
        from hippocamp.agents.expand import expand_query

        also = await expand_query(model, task.question, corpus_values(env)["corpus"], meter=meter)
        args: dict[str, Any] = {"query": task.question, "k": meter.budget.k}
        if also:
            args["also"] = also
        obs = run_tool(meter, env, "search", args)
        if not obs.ok and also:  # an environment whose search takes no expansions: the question alone
            obs = run_tool(meter, env, "search", {"query": task.question, "k": meter.budget.k})
        return await self._answer(task, env, model, meter, obs)


class RetrieveDecision(BaseModel):
    """Self-RAG's retrieve token."""

    retrieve: Literal["yes", "no"]


class RelevanceCritique(BaseModel):
    """Self-RAG's relevance tokens, for all passages at once."""

    relevant: list[int] = Field(description="numbers of the passages that help answer the question")


class SupportCritique(BaseModel):
    """Self-RAG's support token, with what to search for when the answer is not fully supported."""

    supported: Literal["yes", "partial", "no"]
    follow_up_query: str = ""


@register("agent", "self-rag")
class SelfRAG:
    """Self-RAG as a prompted critic loop: decide whether to retrieve; critique the relevance of the
    retrieved passages (one structured call); draft from the relevant ones; critique the draft's
    support; while not supported and rounds remain, search the critic's follow-up query, keep the new
    relevant passages and revise. Cites the relevant passages referenced as ``[n]``, else all of them."""

    name: ClassVar[str] = "self-rag"
    file_list: ClassVar[str] = "retrieved"

    def __init__(self, max_rounds: int = 2, max_tokens: int = 512, passage_chars: int = 1200):
        self.max_rounds = max_rounds
        self.max_tokens = max_tokens
        self.passage_chars = passage_chars

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        meter, best = Meter(budget), Draft()
        return await run_episode(meter, best, self._run(task, env, model, meter, best))

    def _messages(self, prompt: str, **values: Any) -> list[Message]:
        return [
            {"role": "system", "content": load_prompt("self_rag_system.md")},
            {"role": "user", "content": load_prompt(prompt, **values)},
        ]

    async def _ask(self, meter: Meter, model: Any, schema: type[BaseModel], prompt: str, **values: Any) -> Any:
        gen = await meter.generate(model, self._messages(prompt, **values), response_format=schema, max_tokens=256)
        return gen.parsed

    async def _write(self, meter: Meter, model: Any, prompt: str, **values: Any) -> str:
        gen = await meter.generate(model, self._messages(prompt, **values), max_tokens=self.max_tokens)
        return gen.text.strip()

    async def _run(self, task: Task, env: Any, model: Any, meter: Meter, best: Draft) -> Answer:
        question = task.prompt
        decision: RetrieveDecision = await self._ask(meter, model, RetrieveDecision, "self_rag_retrieve.md",
                                                     question=question)  # fmt: skip
        if decision.retrieve == "no":
            meter.note("critic: no retrieval needed")
            text = await self._write(meter, model, "self_rag_answer.md", question=question,
                                     passages="(no passages: answer without retrieval)")  # fmt: skip
            return meter.answer(text)
        passages, query = Passages(), task.question
        relevant: list[Passage] = []
        for round_ in range(1, self.max_rounds + 1):
            obs = run_tool(meter, env, "search", {"query": query, "k": meter.budget.k})
            shown = passages.add(obs.data if obs.ok else [])
            new: list[Passage] = []
            if shown:
                critique: RelevanceCritique = await self._ask(meter, model, RelevanceCritique, "self_rag_relevance.md",
                                                              question=question, passages=obs.text)  # fmt: skip
                picked = [shown[n - 1] for n in dict.fromkeys(critique.relevant) if 1 <= n <= len(shown)]
                for p in picked:
                    if p not in relevant and p not in new:
                        new.append(p)
                meter.note(f"critic: relevant passages {[p.number for p in picked]} of {[p.number for p in shown]}")
                relevant.extend(new)
            if round_ == 1 or new:
                rendered = render_passages(relevant, self.passage_chars, "(no relevant passages were found)")
                if round_ == 1:
                    text = await self._write(meter, model, "self_rag_answer.md", question=question, passages=rendered)
                else:
                    text = await self._write(meter, model, "self_rag_revise.md", question=question,
                                             passages=rendered, answer=best.text)  # fmt: skip
                best.text = text
                best.evidence = [p.evidence() for p in _cite(text, relevant, global_numbers=True)]
            if round_ == self.max_rounds:
                break
            support: SupportCritique = await self._ask(
                meter, model, SupportCritique, "self_rag_support.md", question=question, answer=best.text,
                passages=render_passages(relevant, self.passage_chars, "(no relevant passages were found)"),
            )  # fmt: skip
            meter.note(f"critic: supported={support.supported}; follow-up query {support.follow_up_query!r}")
            query = support.follow_up_query.strip()
            if support.supported == "yes" or not query:
                break
        return meter.answer(best.text, evidence=best.evidence)


_ACTION = re.compile(r"<(search|answer)>(.*?)(?:</\1>|$)", re.DOTALL)
_TAGS = re.compile(r"</?(?:think|search|answer|information)>")


def parse_action(text: str) -> tuple[Literal["search", "answer"], str, str] | None:
    """The first ``<search>`` or ``<answer>`` of a Search-R1 turn: (kind, content, the turn up to and
    including it, closed). None when the turn has neither, or it is empty."""
    m = _ACTION.search(text)
    if m is None or not m.group(2).strip():
        return None
    kind: Literal["search", "answer"] = "search" if m.group(1) == "search" else "answer"
    turn = text[: m.start(2)] + m.group(2).rstrip() + f"</{kind}>"
    return kind, m.group(2).strip(), turn


@register("agent", "search-r1")
class SearchR1:
    """The Search-R1 protocol: the model reasons in ``<think>``, searches with ``<search>query</search>``
    and gets the top ``budget.k`` passages back in ``<information>``, until ``<answer>``. Generation
    stops at ``</search>`` and ``</answer>``; a turn with neither gets one corrective message (a second
    in a row ends the episode, ``stop="no_answer"``). Cites the retrieved files the answer names, else the
    passages containing the answer, else the passages of the last search that found any."""

    name: ClassVar[str] = "search-r1"
    file_list: ClassVar[str] = "retrieved"
    stop: ClassVar[tuple[str, ...]] = ("</search>", "</answer>")

    def __init__(self, max_tokens: int = 512):
        self.max_tokens = max_tokens

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        meter, best = Meter(budget), Draft()
        return await run_episode(meter, best, self._run(task, env, model, meter))

    async def _run(self, task: Task, env: Any, model: Any, meter: Meter) -> Answer:
        messages: list[Message] = [{"role": "user", "content": load_prompt("search_r1.md", question=task.prompt)}]
        passages = Passages()
        last: list[Passage] = []
        corrected = False
        while True:
            gen = await meter.generate(model, messages, stop=list(self.stop), max_tokens=self.max_tokens)
            action = parse_action(gen.text)
            if action is None:
                if corrected:
                    meter.note("malformed turn after a correction")
                    return meter.answer(_TAGS.sub("", gen.text).strip(), stop="no_answer")
                corrected = True
                messages += [
                    {"role": "assistant", "content": gen.text},
                    {"role": "user", "content": load_prompt("search_r1_fix.md")},
                ]
                continue
            corrected = False
            kind, content, turn = action
            messages.append({"role": "assistant", "content": turn})
            if kind == "answer":
                return meter.answer(content, evidence=[p.evidence() for p in self._cite(content, passages, last)])
            obs = run_tool(meter, env, "search", {"query": content, "k": meter.budget.k})
            shown = passages.add(obs.data if obs.ok else [])
            last = shown or last
            messages.append({"role": "user", "content": f"<information>{obs.text}</information>"})

    @staticmethod
    def _cite(answer: str, passages: Passages, last: list[Passage]) -> list[Passage]:
        named = set(mentioned_files(answer, [p.path for p in passages.items]))
        if named:
            return [p for p in passages.items if p.path in named]
        return containing(answer, passages.items) or last
