"""The release's pipelines that grade what they retrieve: Self-RAG (grade, keep the relevant, rewrite
and search again), Graded RAG (route, then the same with up to two rewrites) and Corrective RAG (a
three-way verdict on the retrieved passages, knowledge strips, a keyword rewrite). What each takes from
the release and where it differs: the package docstring (`hippocamp.agents.pipelines`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import BaseModel

from hippocamp.agents._cite import Passage
from hippocamp.agents.base import Answer
from hippocamp.agents.pipelines._base import (
    Episode,
    Pipeline,
    Scores,
    clip,
    item_scores,
    numbered,
    rerank,
    rewrite,
    score_tokens,
)
from hippocamp.registry import register

__all__ = ["CorrectivePipeline", "GradedPipeline", "Route", "SelfRAGPipeline", "crag_verdict", "grade",
           "knowledge_strips", "routes_direct"]  # fmt: skip

#: what a rewrite prompt is told about the search that failed (ours; the release says "No documents
#: found" / "Documents not relevant")
NOTHING_FOUND = "found nothing."
NOTHING_RELEVANT = "found nothing relevant."


async def grade(ep: Episode, query: str, passages: Sequence[Passage], chars: int) -> list[float] | None:
    """Each passage's relevance to ``query`` from 0 to 1 in one model call (passages clipped to
    ``chars``); 0.5 for a passage the reply leaves out (the release's default when a grade does not
    parse); None when the reply is not the JSON asked for."""
    parsed = await ep.ask(Scores, "pipeline_grade.md", score_tokens(len(passages)), "grading",
                          "every passage counts as relevant, as the release does when grading fails",
                          question=query, passages=numbered(passages, chars))  # fmt: skip
    if parsed is None:
        return None
    return item_scores(parsed, len(passages), default=0.5, low=0.0, high=1.0)


def _relevant(ep: Episode, passages: Sequence[Passage], scores: list[float], threshold: float) -> list[Passage]:
    """The passages scoring ``threshold`` or more, best first (ties in search order), noted."""
    order = sorted(range(len(passages)), key=lambda i: -scores[i])
    kept = [passages[i] for i in order if scores[i] >= threshold]
    graded = ", ".join(f"{passages[i].number}: {scores[i]:.2f}" for i in order)
    ep.meter.note(f"grades {{{graded}}}; relevant (>= {threshold}): {[p.number for p in kept]}")
    return kept


@register("agent", "rag-self")
class SelfRAGPipeline(Pipeline):
    """The release's self_rag: dense top 20, graded by the model (relevant at 0.5 or more); with nothing
    found or nothing relevant the question is rewritten and searched again (two rounds); one answer from
    the relevant passages."""

    name: ClassVar[str] = "rag-self"

    def __init__(self, top_k: int = 20, relevance_threshold: float = 0.5, max_iterations: int = 2,
                 grade_chars: int = 500, max_tokens: int = 512):  # fmt: skip
        self.top_k = top_k
        self.relevance_threshold = relevance_threshold
        self.max_iterations = max_iterations
        self.grade_chars = grade_chars
        self.max_tokens = max_tokens

    async def _run(self, ep: Episode) -> Answer:
        question = query = ep.task.question
        for round_ in range(1, self.max_iterations + 1):
            found = ep.search(query, self.top_k)
            last = round_ == self.max_iterations
            if not found:
                if last:
                    break
                query = await rewrite(ep, "pipeline_rewrite.md", question, 100, feedback=NOTHING_FOUND)
                continue
            scores = await grade(ep, query, found, self.grade_chars)
            if scores is None:
                return await ep.answer(found, self.max_tokens)
            relevant = _relevant(ep, found, scores, self.relevance_threshold)
            if relevant or last:
                return await ep.answer(relevant, self.max_tokens)
            query = await rewrite(ep, "pipeline_rewrite.md", question, 100, feedback=NOTHING_RELEVANT)
        return await ep.answer([], self.max_tokens)


class Route(BaseModel):
    """Graded RAG's routing decision."""

    route: Literal["retrieve", "direct"]


_GREETINGS = ("hello", "hi", "hey", "greetings")
_THANKS = ("thank", "thanks")


def routes_direct(question: str) -> bool:
    """The release's rule before any model call (graded_rag.py l.138-153): a greeting word in a question of
    at most three words, or thanks in one of at most five, needs no retrieval. Words are matched as
    substrings, as the release does ("hi" is in "which")."""
    low, words = question.lower(), len(question.split())
    return (words <= 3 and any(g in low for g in _GREETINGS)) or (words <= 5 and any(t in low for t in _THANKS))


@register("agent", "rag-graded")
class GradedPipeline(Pipeline):
    """The release's graded_rag: route (a greeting or small talk gets no retrieval), dense top 20, graded
    by the model (relevant at 0.5 or more); nothing found or nothing relevant rewrites the question, up
    to two rewrites; one answer from the relevant passages."""

    name: ClassVar[str] = "rag-graded"

    def __init__(self, top_k: int = 20, relevance_threshold: float = 0.5, max_rewrite_attempts: int = 2,
                 enable_routing: bool = True, enable_grading: bool = True, grade_chars: int = 400,
                 max_tokens: int = 512):  # fmt: skip
        self.top_k = top_k
        self.relevance_threshold = relevance_threshold
        self.max_rewrite_attempts = max_rewrite_attempts
        self.enable_routing = enable_routing
        self.enable_grading = enable_grading
        self.grade_chars = grade_chars
        self.max_tokens = max_tokens

    async def _route(self, ep: Episode) -> str:
        question = ep.task.question
        if routes_direct(question):
            ep.meter.note("route: direct (a greeting or thanks, by the release's word rule)")
            return "direct"
        parsed: Route | None = await ep.ask(Route, "pipeline_route.md", 24, "routing", "retrieving, as the "
                                            "release does when routing fails", question=question)  # fmt: skip
        decision = parsed.route if parsed is not None else "retrieve"
        ep.meter.note(f"route: {decision}")
        return decision

    async def _run(self, ep: Episode) -> Answer:
        if self.enable_routing and await self._route(ep) == "direct":
            return await ep.answer([], self.max_tokens)
        question = query = ep.task.question
        attempt = 0
        while attempt <= self.max_rewrite_attempts:
            attempt += 1
            can_rewrite = attempt <= self.max_rewrite_attempts
            found = ep.search(query, self.top_k)
            if not found:
                if not can_rewrite:
                    break
                query = await rewrite(ep, "pipeline_rewrite.md", question, 100, feedback=NOTHING_FOUND)
                continue
            if not self.enable_grading:
                return await ep.answer(found, self.max_tokens)
            scores = await grade(ep, query, found, self.grade_chars)
            if scores is None:
                return await ep.answer(found, self.max_tokens)
            relevant = _relevant(ep, found, scores, self.relevance_threshold)
            if relevant or not can_rewrite:
                return await ep.answer(relevant, self.max_tokens)
            query = await rewrite(ep, "pipeline_rewrite.md", question, 100, feedback=NOTHING_RELEVANT)
        return await ep.answer([], self.max_tokens)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def knowledge_strips(text: str) -> list[str]:
    """CRAG's decomposition of a passage (corrective_rag.py l.237-257): sentences of five words or more,
    two to a strip; a passage without such a sentence is one strip; an empty one has none."""
    sentences = [s.strip() for s in _SENTENCE_END.split(text.strip()) if len(s.strip().split()) >= 5]
    if not sentences:
        return [text] if text.strip() else []
    return [" ".join(sentences[i : i + 2]) for i in range(0, len(sentences), 2)]


def crag_verdict(scores: Sequence[float], upper: float, lower: float) -> str:
    """CORRECT when any score reaches ``upper``; INCORRECT when there is none or all are below ``lower``;
    else AMBIGUOUS."""
    if not scores:
        return "incorrect"
    if any(s >= upper for s in scores):
        return "correct"
    if all(s < lower for s in scores):
        return "incorrect"
    return "ambiguous"


@register("agent", "rag-corrective")
class CorrectivePipeline(Pipeline):
    """The release's corrective_rag (CRAG): dense top 20 reranked to five, each scored from -1 to 1;
    CORRECT keeps their relevant strips, INCORRECT searches again for a keyword rewrite, AMBIGUOUS does
    both; one answer."""

    name: ClassVar[str] = "rag-corrective"

    def __init__(self, top_k: int = 20, rerank_top_k: int = 5, confidence_threshold_upper: float = 0.5,
                 confidence_threshold_lower: float = -0.5, strip_relevance_threshold: float = -0.5,
                 max_strips: int = 5, rerank: bool = True, max_tokens: int = 512):  # fmt: skip
        self.top_k = top_k
        self.rerank_top_k = rerank_top_k
        self.upper = confidence_threshold_upper
        self.lower = confidence_threshold_lower
        self.strip_threshold = strip_relevance_threshold
        self.max_strips = max_strips
        self.rerank = rerank
        self.max_tokens = max_tokens

    async def _evaluate(self, ep: Episode, question: str, passages: list[Passage]) -> list[float]:
        parsed = await ep.ask(Scores, "pipeline_crag_evaluate.md", score_tokens(len(passages)),
                              "evaluation", "every passage scores 0.0, as the release does when evaluation fails",
                              question=question, passages=numbered(passages, 500))  # fmt: skip
        if parsed is None:
            return [0.0] * len(passages)
        return item_scores(parsed, len(passages), default=0.0, low=-1.0, high=1.0)

    async def _refine(self, ep: Episode, question: str, passages: list[Passage]) -> list[Passage]:
        """Decompose-then-recompose: each passage's strips scored in one call; the strips at the strip
        threshold or above (at most ``max_strips``) become the passage; one without any is dropped."""
        out: list[Passage] = []
        for p in passages:
            strips = knowledge_strips(p.text)
            if not strips:
                continue
            listed = "\n".join(f"[{i}] {clip(s, 200)}" for i, s in enumerate(strips, 1))
            parsed = await ep.ask(Scores, "pipeline_crag_strips.md", score_tokens(len(strips)),
                                  f"strips of passage {p.number}", "the passage is kept whole, as the release does",
                                  question=question, strips=listed)  # fmt: skip
            if parsed is None:
                out.append(p)
                continue
            scores = item_scores(parsed, len(strips), default=0.0, low=-1.0, high=1.0)
            kept = [s for s, score in zip(strips, scores, strict=True) if score >= self.strip_threshold]
            if kept:
                out.append(ep.passage(p, " ".join(kept[: self.max_strips])))
            ep.meter.note(f"strips of passage {p.number}: kept {len(kept)} of {len(strips)}"
                          + ("" if kept else "; the passage is dropped"))  # fmt: skip
        return out

    async def _search_again(self, ep: Episode, question: str) -> list[Passage]:
        query = await rewrite(ep, "pipeline_crag_rewrite.md", question, 50)
        found = ep.search(query, self.top_k)
        return await rerank(ep, query, found, self.rerank_top_k) if self.rerank and found else found

    async def _run(self, ep: Episode) -> Answer:
        question = ep.task.question
        found = ep.search(question, self.top_k)
        if not found:
            return await ep.answer([], self.max_tokens)
        if self.rerank:
            found = await rerank(ep, question, found, self.rerank_top_k)
        scores = await self._evaluate(ep, question, found)
        verdict = crag_verdict(scores, self.upper, self.lower)
        ep.meter.note(f"verdict: {verdict} (scores {[round(s, 2) for s in scores]} of passages "
                      f"{[p.number for p in found]})")  # fmt: skip
        if verdict == "correct":
            final = await self._refine(ep, question, found)
        elif verdict == "incorrect":
            final = await self._search_again(ep, question)
        else:
            final = await self._refine(ep, question, found)
            places = {(p.path, repr(p.locator)) for p in final}  # a refined passage keeps its place, as its id
            final += [p for p in await self._search_again(ep, question) if (p.path, repr(p.locator)) not in places]
        return await ep.answer(final, self.max_tokens)
