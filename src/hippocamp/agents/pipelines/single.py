"""The release's one-search pipelines: standard RAG, vector search, hybrid RAG (dense + BM25 fused by
reciprocal rank), HyDE, and standard RAG with parent-child expansion to whole pages. What each takes
from the release and where it differs: the package docstring (`hippocamp.agents.pipelines`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from hippocamp.agents._cite import Passage, run_tool
from hippocamp.agents.base import Answer
from hippocamp.agents.pipelines._base import Episode, Pipeline, rerank
from hippocamp.registry import register
from hippocamp.schema.locators import PageLocator, parse_locator

__all__ = ["HyDEPipeline", "HybridPipeline", "Keywords", "ParentChildPipeline", "StandardPipeline",
           "VectorPipeline", "page_of", "rrf"]  # fmt: skip


@register("agent", "rag-standard")
class StandardPipeline(Pipeline):
    """The release's standard_rag: one dense search for the question, its first five passages, one answer."""

    name: ClassVar[str] = "rag-standard"

    def __init__(self, rerank_top_k: int = 5, top_k: int = 20, rerank: bool = False, max_tokens: int = 512):
        self.rerank_top_k = rerank_top_k
        self.top_k = top_k
        self.rerank = rerank
        self.max_tokens = max_tokens

    async def _retrieve(self, ep: Episode) -> list[Passage]:
        question = ep.task.question
        if not self.rerank:  # the first rerank_top_k of top_k: the same passages as asking for rerank_top_k
            return ep.search(question, self.rerank_top_k)
        return await rerank(ep, question, ep.search(question, self.top_k), self.rerank_top_k)

    async def _run(self, ep: Episode) -> Answer:
        return await ep.answer(await self._retrieve(ep), self.max_tokens)


@register("agent", "rag-vector")
class VectorPipeline(Pipeline):
    """The release's vector_search: dense top 20 for the question, reranked to five, one answer."""

    name: ClassVar[str] = "rag-vector"

    def __init__(self, top_k: int = 20, rerank_top_k: int = 5, rerank: bool = True, max_tokens: int = 512):
        self.top_k = top_k
        self.rerank_top_k = rerank_top_k
        self.rerank = rerank
        self.max_tokens = max_tokens

    async def _run(self, ep: Episode) -> Answer:
        found = ep.search(ep.task.question, self.top_k)
        if self.rerank:  # without a reranker the release returns all top_k (vector_search.py l.174)
            found = await rerank(ep, ep.task.question, found, self.rerank_top_k)
        return await ep.answer(found, self.max_tokens)


class Keywords(BaseModel):
    """Hybrid RAG's BM25 keywords."""

    keywords: list[str] = Field(default_factory=list)


def rrf(*lists: Sequence[Passage], k: int, limit: int) -> list[Passage]:
    """Reciprocal-rank fusion (the release's ``rag/fusion.py``): a passage scores the sum of 1/(k + rank)
    over the lists it is in (ranks from 1); the best ``limit``, ties in order of first appearance."""
    scores: dict[int, float] = {}
    first: dict[int, Passage] = {}
    for ranked in lists:
        for rank, p in enumerate(ranked, 1):
            scores[p.number] = scores.get(p.number, 0.0) + 1.0 / (k + rank)
            first.setdefault(p.number, p)
    order = sorted(scores, key=lambda n: -scores[n])
    return [first[n] for n in order[:limit]]


@register("agent", "rag-hybrid")
class HybridPipeline(Pipeline):
    """The release's hybrid_rag: model keywords for BM25, a dense search for the question, reciprocal-rank
    fusion (k 60) to 20, reranked to five, one answer."""

    name: ClassVar[str] = "rag-hybrid"

    def __init__(self, top_k: int = 20, top_k_dense: int = 100, top_k_bm25: int = 100, rrf_k: int = 60,
                 rerank_top_k: int = 5, rerank: bool = True, max_tokens: int = 512):  # fmt: skip
        self.top_k = top_k
        self.top_k_dense = top_k_dense
        self.top_k_bm25 = top_k_bm25
        self.rrf_k = rrf_k
        self.rerank_top_k = rerank_top_k
        self.rerank = rerank
        self.max_tokens = max_tokens

    async def _run(self, ep: Episode) -> Answer:
        question = ep.task.question
        parsed: Keywords | None = await ep.ask(Keywords, "pipeline_keywords.md", 96, "keywords",
                                               "BM25 searches the question itself", question=question)  # fmt: skip
        words = [w.strip() for w in parsed.keywords if w.strip()] if parsed is not None else []
        if parsed is not None and not words:
            ep.meter.note("keywords: none given; BM25 searches the question itself")
        lexical_query = " ".join(words) or question
        dense = ep.search(question, self.top_k_dense, mode="vector")
        lexical = ep.search(lexical_query, self.top_k_bm25, mode="fts")
        fused = rrf(dense, lexical, k=self.rrf_k, limit=self.top_k)
        ep.meter.note(f"fused (RRF k={self.rrf_k}): passages {[p.number for p in fused]}")
        kept = await rerank(ep, question, fused, self.rerank_top_k) if self.rerank else fused[: self.rerank_top_k]
        return await ep.answer(kept, self.max_tokens)


@register("agent", "rag-hyde")
class HyDEPipeline(Pipeline):
    """The release's hyde_rag: four hypothetical answer passages, searched together with the question,
    reranked to five, one answer."""

    name: ClassVar[str] = "rag-hyde"

    def __init__(self, top_k: int = 20, num_hypothetical: int = 4, temperature: float = 0.7,
                 rerank_top_k: int = 5, rerank: bool = True, max_tokens: int = 512,
                 passage_tokens: int = 512):  # fmt: skip
        self.top_k = top_k
        self.num_hypothetical = num_hypothetical
        self.temperature = temperature
        self.rerank_top_k = rerank_top_k
        self.rerank = rerank
        self.max_tokens = max_tokens
        self.passage_tokens = passage_tokens

    async def _run(self, ep: Episode) -> Answer:
        question = ep.task.question
        documents = []
        for _ in range(self.num_hypothetical):
            text = await ep.write("pipeline_hyde.md", self.passage_tokens, temperature=self.temperature,
                                  question=question)  # fmt: skip
            if text:
                documents.append(text)
        if not documents:
            ep.meter.note("no hypothetical passage was written: the question is searched alone")
        if not self.rerank:  # the release keeps the first rerank_top_k (hyde_rag.py l.366-367)
            return await ep.answer(ep.search(question, self.rerank_top_k, also=documents), self.max_tokens)
        found = ep.search(question, self.top_k, also=documents)
        return await ep.answer(await rerank(ep, question, found, self.rerank_top_k), self.max_tokens)


def page_of(locator: dict[str, Any] | None) -> int | None:
    """The (system) page number of a page locator, else None."""
    if not locator:
        return None
    loc = parse_locator(locator)
    return loc.system_page if isinstance(loc, PageLocator) else None


@register("agent", "rag-parent-child")
class ParentChildPipeline(StandardPipeline):
    """The release's standard_rag followed by its parent-child expander: each retrieved passage on a
    page becomes its whole page (at most ten pages), one answer."""

    name: ClassVar[str] = "rag-parent-child"

    def __init__(self, rerank_top_k: int = 5, max_pages: int = 10, top_k: int = 20, rerank: bool = False,
                 max_tokens: int = 512):  # fmt: skip
        super().__init__(rerank_top_k=rerank_top_k, top_k=top_k, rerank=rerank, max_tokens=max_tokens)
        self.max_pages = max_pages

    async def _run(self, ep: Episode) -> Answer:
        return await ep.answer(self._expand(ep, await self._retrieve(ep)), self.max_tokens)

    def _expand(self, ep: Episode, passages: list[Passage]) -> list[Passage]:
        pages: list[tuple[Passage, int]] = []
        for p in passages:
            number = page_of(p.locator)
            if number is not None and all((q.path, n) != (p.path, number) for q, n in pages):
                pages.append((p, number))
        if not pages:
            ep.meter.note("parent-child: no passage is on a page; the passages stand as retrieved")
            return passages
        left = [p.number for p in passages if page_of(p.locator) is None]
        if left:
            ep.meter.note(f"parent-child: passages {left} are on no page and are left out, as the release's "
                          "expander leaves them out")  # fmt: skip
        out: list[Passage] = []
        for p, number in pages[: self.max_pages]:
            obs = run_tool(ep.meter, ep.env, "read", {"path": p.path, "locator": f"page {number}"})
            texts = [d["text"] for d in obs.data if d.get("text")] if obs.ok else []
            if not texts:
                ep.meter.note(f"parent-child: nothing read on page {number} of {p.path}; skipped")
                continue
            out.append(ep.passage(p, "\n".join(texts)))
        ep.meter.note(f"parent-child: pages {[p.number for p in out]} from passages {[p.number for p in passages]}")
        return out
