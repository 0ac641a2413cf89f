"""The release's multi-step pipelines: Adaptive RAG (classify the question A/B/C and route to one search
or to iterative retrieval), IRCoT (retrieval interleaved with one chain-of-thought sentence at a time)
and Least-to-Most decomposition (sub-questions solved in order, each answer feeding the next search).
What each takes from the release and where it differs: the package docstring
(`hippocamp.agents.pipelines`)."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from hippocamp.agents._cite import Passage
from hippocamp.agents.base import Answer
from hippocamp.agents.pipelines._base import (
    REASONING_STARTERS,
    Episode,
    Pipeline,
    clip,
    first_sentence,
    is_reasoning,
    numbered,
    rerank,
)
from hippocamp.registry import register

__all__ = ["AdaptivePipeline", "Complexity", "DecompositionPipeline", "IRCoTPipeline", "SubQuestions"]

#: Adaptive RAG's exit test for its chain of thought (adaptive_rag.py l.381)
_SAYS_ANSWER = re.compile(r"the answer is:?", re.IGNORECASE)
#: IRCoT's answer extractor (ircot_rag.py l.98-100, the paper's ".* answer is:? (.*)\.")
IRCOT_ANSWER = re.compile(r".*answer is:?\s*(.*?)\.", re.IGNORECASE)


def _merge(into: list[Passage], new: list[Passage]) -> None:
    """Accumulate passages, each once, in order of first retrieval."""
    seen = {p.number for p in into}
    for p in new:
        if p.number not in seen:
            seen.add(p.number)
            into.append(p)


class Complexity(BaseModel):
    """Adaptive RAG's classification of a question."""

    complexity: Literal["A", "B", "C"]


@register("agent", "rag-adaptive")
class AdaptivePipeline(Pipeline):
    """The release's adaptive_rag: the model rates the question A (simple: dense top five), B (moderate:
    dense top 20 reranked to five) or C (complex: up to three rounds of search and one reasoning
    sentence, six passages a round, reranked to five); one answer."""

    name: ClassVar[str] = "rag-adaptive"
    #: the release's reasoning starters for strategy C (its list has no "that means")
    starters: ClassVar[tuple[str, ...]] = tuple(s for s in REASONING_STARTERS if s != "that means")

    def __init__(self, top_k: int = 20, rerank_top_k: int = 5, max_iterations_complex: int = 3,
                 max_paragraphs_complex: int = 15, rerank: bool = True, max_tokens: int = 512):  # fmt: skip
        self.top_k = top_k
        self.rerank_top_k = rerank_top_k
        self.max_iterations_complex = max_iterations_complex
        self.max_paragraphs_complex = max_paragraphs_complex
        self.rerank = rerank
        self.max_tokens = max_tokens

    async def _run(self, ep: Episode) -> Answer:
        question = ep.task.question
        parsed: Complexity | None = await ep.ask(Complexity, "pipeline_classify.md", 16, "classification",
                                                 "strategy B, the release's default", question=question)  # fmt: skip
        strategy = parsed.complexity if parsed is not None else "B"
        ep.meter.note(f"complexity: {strategy}")
        if strategy == "A":  # the first rerank_top_k of top_k, never reranked (adaptive_rag.py l.221-225)
            kept = ep.search(question, self.rerank_top_k)
        elif strategy == "C":
            kept = await self._complex(ep)
        else:
            found = ep.search(question, self.top_k)
            kept = await rerank(ep, question, found, self.rerank_top_k) if self.rerank and found else found
        return await ep.answer(kept, self.max_tokens)

    async def _complex(self, ep: Episode) -> list[Passage]:
        question = query = ep.task.question
        found: list[Passage] = []
        sentences: list[str] = []
        per_step = min(6, self.top_k)
        for _ in range(self.max_iterations_complex):
            _merge(found, ep.search(query, per_step))
            if len(found) >= self.max_paragraphs_complex:
                ep.meter.note(f"{len(found)} passages: the paragraph limit ({self.max_paragraphs_complex})")
                break
            text = await ep.write("pipeline_cot.md", 100, question=question, passages=numbered(found[-6:], 300),
                                  reasoning=" ".join(sentences) or "(none yet)")  # fmt: skip
            sentence = first_sentence(text)
            sentences.append(sentence)
            ep.meter.note(f"reasoning: {sentence!r}")
            if _SAYS_ANSWER.search(sentence):
                break
            if sentence and not is_reasoning(sentence, self.starters):
                query = sentence
        if self.rerank and found:
            return await rerank(ep, question, found, self.rerank_top_k)
        return found[: self.rerank_top_k]


@register("agent", "rag-ircot")
class IRCoTPipeline(Pipeline):
    """The release's ircot_rag: search six passages for the question, then for each new reasoning sentence
    (reasoning sentences search the question again), accumulating passages, until a sentence says the
    answer, ten sentences, fifteen passages or an empty sentence; the passages reranked to five; one
    answer."""

    name: ClassVar[str] = "rag-ircot"

    def __init__(self, top_k_per_step: int = 6, max_sentences: int = 10, max_paragraphs: int = 15,
                 rerank_top_k: int = 5, max_para_words: int = 350, rerank: bool = True,
                 max_tokens: int = 512):  # fmt: skip
        self.top_k_per_step = top_k_per_step
        self.max_sentences = max_sentences
        self.max_paragraphs = max_paragraphs
        self.rerank_top_k = rerank_top_k
        self.max_para_words = max_para_words
        self.rerank = rerank
        self.max_tokens = max_tokens

    def _paragraphs(self, passages: list[Passage]) -> str:
        blocks = []
        for i, p in enumerate(passages, 1):
            words = p.text.split()
            text = " ".join(words[: self.max_para_words]) + "..." if len(words) > self.max_para_words else p.text
            blocks.append(f"[{i}] {p.where}\n{text}")
        return "\n\n".join(blocks)

    async def _run(self, ep: Episode) -> Answer:
        question = query = ep.task.question
        found: list[Passage] = []
        sentences: list[str] = []
        why = "sentence limit"
        while len(sentences) < self.max_sentences:
            _merge(found, ep.search(query, self.top_k_per_step))
            if len(found) >= self.max_paragraphs:
                why = "paragraph limit"
                break
            text = await ep.write("pipeline_ircot.md", 100, paragraphs=self._paragraphs(found), question=question,
                                  reasoning=" ".join(sentences))  # fmt: skip
            sentence = first_sentence(text, fallback_chars=200)
            if not sentence:
                why = "empty sentence"
                break
            sentences.append(sentence)
            said = IRCOT_ANSWER.search(sentence)
            if said is not None:
                why = f"the answer is said ({said.group(1).strip()!r})"
                break
            query = question if is_reasoning(sentence) else sentence
        ep.meter.note(f"IRCoT stopped ({why}) after {len(sentences)} sentences and {len(found)} passages")
        if self.rerank and found:
            kept = await rerank(ep, question, found, self.rerank_top_k)
        else:
            kept = found[: self.rerank_top_k]
        return await ep.answer(kept, self.max_tokens)


class SubQuestions(BaseModel):
    """Least-to-Most's sub-questions, simplest first."""

    sub_questions: list[str] = Field(default_factory=list)


@register("agent", "rag-decomposition")
class DecompositionPipeline(Pipeline):
    """The release's decomposition_rag (Least-to-Most): up to four sub-questions, simplest first, each
    searched (ten passages; after the first, with the previous answer's first 80 characters) and all but
    the last answered in turn; the passages reranked to five; one answer."""

    name: ClassVar[str] = "rag-decomposition"

    def __init__(self, top_k_per_sub: int = 10, max_sub_queries: int = 4, rerank_top_k: int = 5,
                 rerank: bool = True, max_tokens: int = 512):  # fmt: skip
        self.top_k_per_sub = top_k_per_sub
        self.max_sub_queries = max_sub_queries
        self.rerank_top_k = rerank_top_k
        self.rerank = rerank
        self.max_tokens = max_tokens

    async def _decompose(self, ep: Episode, question: str) -> list[str]:
        parsed: SubQuestions | None = await ep.ask(
            SubQuestions, "pipeline_decompose.md", 300, "decomposition", "the question is its only sub-question, "
            "as the release does", question=question, max_sub=self.max_sub_queries,
        )  # fmt: skip
        subs = [s.strip() for s in parsed.sub_questions if s.strip()] if parsed is not None else []
        subs = subs[: self.max_sub_queries] or [question]
        ep.meter.note(f"sub-questions: {subs}")
        return subs

    async def _run(self, ep: Episode) -> Answer:
        question = ep.task.question
        subs = await self._decompose(ep, question)
        found: list[Passage] = []
        solved: list[tuple[str, str]] = []
        for i, sub in enumerate(subs):
            query = f"{sub} {solved[-1][1][:80]}" if solved and solved[-1][1] else sub
            hits = ep.search(query, self.top_k_per_sub)
            _merge(found, hits)
            if i == len(subs) - 1:  # the last sub-question is not answered on its own
                break
            previous = "".join(f"Q: {q}\nA: {a}\n\n" for q, a in solved)
            answer = await ep.write(
                "pipeline_subanswer.md", 150, question=sub, passages=numbered(hits[:5], 300),
                previous=f"Answered already:\n{previous}" if previous else "",
            )  # fmt: skip
            solved.append((sub, answer))
            ep.meter.note(f"sub-answer: {sub!r} -> {clip(answer, 160)!r}")
        if self.rerank and found:
            kept = await rerank(ep, question, found, self.rerank_top_k)
        else:
            kept = found[: self.rerank_top_k]
        return await ep.answer(kept, self.max_tokens)
