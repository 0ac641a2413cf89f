"""What the release's pipelines share here: one episode's context (`Episode`: metered searches in the
ranking mode a pipeline asks for, structured and plain model calls, the final answer), relevance
scores read from a model's JSON (`Scores`), the stand-in for the release's reranker (`rerank`) and
the release's query rewrite (`rewrite`).

Rules every pipeline keeps (the package docstring says where they come from):

- a search asks for the ranking mode the release's pipeline uses (``vector`` for its dense search,
  ``fts`` for its BM25) when the environment's search takes a ``mode``; a vector search the store
  cannot answer (no vectors) is asked again as ``fts`` and a note says so; an environment without
  modes ranks with its own default, noted once per mode;
- a model call that fails ends the episode (``stop="error"``, `run_episode`); a reply that is not
  the JSON asked for takes the release's fallback for that decision, noted in the trace;
- the answer is written from at most `MAX_CONTEXT` passages and cites them; with no passage left,
  the episode answers `not_found` without calling the model, as the release's runner does.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from hippocamp.agents._cite import Draft, Passage, Passages, cited_numbers, run_episode, run_tool
from hippocamp.agents.base import Answer, Budget, Meter, Task, corpus_values, load_prompt
from hippocamp.models.errors import ModelOutputError
from hippocamp.models.types import Message

__all__ = [
    "ANSWER_CHARS",
    "MAX_CONTEXT",
    "RERANK_CHARS",
    "Episode",
    "Mode",
    "Pipeline",
    "Score",
    "Scores",
    "clip",
    "first_sentence",
    "is_reasoning",
    "item_scores",
    "not_found",
    "numbered",
    "rerank",
    "rewrite",
    "score_tokens",
]

Mode = Literal["vector", "fts", "hybrid"]

#: passages the answer is written from: the release's generator formats at most ten
#: (``generator/gemini.py`` ``_format_context(max_chunks=10)``)
MAX_CONTEXT = 10
#: characters of a passage shown when answering (ours: the release shows whole chunks, at most 1,000)
ANSWER_CHARS = 1200
#: characters of a candidate shown to the reranking call (ours: the release's reranker reads whole chunks)
RERANK_CHARS = 400

#: words that open a reasoning sentence, which IRCoT does not search for (ircot_rag.py l.189-192;
#: adaptive_rag.py l.283-284 has the same list without "that means"). Matched as prefixes, as the
#: release does: "Sofia ..." starts with "so".
REASONING_STARTERS = ("thus", "so", "therefore", "hence", "consequently", "as a result", "in conclusion",
                      "this means", "that means")  # fmt: skip
_ARITHMETIC = re.compile(r"\d+\s*[+\-*/]\s*\d+")
_FIRST_SENTENCE = re.compile(r"([^.!?]+[.!?])")


class Score(BaseModel):
    """One scored item (a passage or a strip) by its number in the prompt."""

    item: int
    score: float


class Scores(BaseModel):
    """Relevance scores of numbered items; an item the reply leaves out gets the pipeline's default."""

    scores: list[Score] = Field(default_factory=list)


def item_scores(parsed: Scores, count: int, default: float, low: float, high: float) -> list[float]:
    """The score of each of ``count`` items, clamped to [low, high]; the first score given for an item
    counts (as the release's regex finds the first match), items without one get ``default``."""
    out: list[float | None] = [None] * count
    for s in parsed.scores:
        if 1 <= s.item <= count and out[s.item - 1] is None:
            out[s.item - 1] = min(high, max(low, float(s.score)))
    return [default if s is None else s for s in out]


def score_tokens(count: int) -> int:
    """Reply tokens for a JSON list of ``count`` scores."""
    return 24 + 16 * count


def clip(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:chars] + "..."


def numbered(passages: Sequence[Passage], chars: int) -> str:
    """Passages numbered by their position (1, 2, ...), with where and when, text clipped to ``chars``."""
    blocks = []
    for i, p in enumerate(passages, 1):
        when = f" ({p.time})" if p.time else ""
        blocks.append(f"[{i}] {p.where}{when}\n{clip(p.text, chars)}")
    return "\n\n".join(blocks)


def first_sentence(text: str, fallback_chars: int | None = None) -> str:
    """The first sentence of a reply (up to its first . ! or ?); without one the whole reply, or its
    first ``fallback_chars`` characters (IRCoT: 200, ircot_rag.py l.211-217)."""
    text = text.strip()
    m = _FIRST_SENTENCE.match(text)
    if m:
        return m.group(1).strip()
    return text[:fallback_chars] if fallback_chars is not None else text


def is_reasoning(sentence: str, starters: Sequence[str] = REASONING_STARTERS) -> bool:
    """A reasoning sentence (never searched for): it opens with one of ``starters`` or holds arithmetic."""
    low = sentence.lower().strip()
    return any(low.startswith(s) for s in starters) or bool(_ARITHMETIC.search(sentence))


def not_found(words: dict[str, str]) -> str:
    return f"No passage found in {words['corpus']} answers this question."


def _cited(text: str, shown: Sequence[Passage]) -> list[Passage]:
    """The shown passages an answer cites by position ([n]), in order of citation; all when it cites none."""
    out: list[Passage] = []
    for p in [shown[n - 1] for n in cited_numbers(text, len(shown))] or shown:
        if p not in out:
            out.append(p)
    return out


@dataclass
class Episode:
    """One episode of a pipeline: the task, the environment, the model, the meter, the passages seen."""

    task: Task
    env: Any
    model: Any
    meter: Meter
    best: Draft = field(default_factory=Draft)
    passages: Passages = field(default_factory=Passages)
    _takes: dict[str, bool] = field(default_factory=dict, repr=False)
    _noted: set[str] = field(default_factory=set, repr=False)
    _vectors: bool = True

    @property
    def words(self) -> dict[str, str]:
        return corpus_values(self.env)

    def note_once(self, key: str, text: str) -> None:
        if key not in self._noted:
            self._noted.add(key)
            self.meter.note(text)

    # -- searching -----------------------------------------------------------------------------------
    def search_takes(self, name: str) -> bool:
        """Whether the environment's search takes the argument ``name``: its tool schema lists it, or its
        ``search`` method (of the `Environment` protocol) has such a parameter."""
        if name not in self._takes:
            self._takes[name] = _search_takes(self.env, name)
        return self._takes[name]

    def search(self, query: str, k: int, mode: Mode = "vector", also: Sequence[str] = ()) -> list[Passage]:
        """One metered search (its hit files join ``Answer.retrieved``): the passages of its hits in rank
        order. ``also``: other queries ranked with ``query`` (HyDE's hypothetical passages)."""
        args: dict[str, Any] = {"query": query, "k": k}
        extra = [a for a in also if a.strip()]
        if extra:
            if self.search_takes("also"):
                args["also"] = extra
            else:
                self.note_once("also", "this environment's search takes no other queries: the query alone")
        if self.search_takes("mode"):
            args["mode"] = "fts" if mode == "vector" and not self._vectors else mode
        else:
            self.note_once(f"mode:{mode}", f"this environment's search has no ranking modes: its own ranking "
                                           f"stands in for {mode!r}")  # fmt: skip
        obs = run_tool(self.meter, self.env, "search", args)
        if not obs.ok and args.get("mode") == "vector":
            self._vectors = False
            self.meter.note(f"vector search failed ({obs.error}); BM25 (mode 'fts') instead, here and for the "
                            "rest of the episode")  # fmt: skip
            obs = run_tool(self.meter, self.env, "search", {**args, "mode": "fts"})
        return self.passages.add(obs.data if obs.ok else [])

    def passage(self, like: Passage, text: str) -> Passage:
        """A passage of the same place as ``like`` with other text (a refined strip set, a whole page)."""
        hit = {"path": like.path, "locator": like.locator, "text": text, "where": like.where, "time": like.time}
        return self.passages.add([hit])[0]

    # -- the model -----------------------------------------------------------------------------------
    def _messages(self, prompt: str, system: bool, values: dict[str, Any]) -> list[Message]:
        words = self.words
        messages: list[Message] = []
        if system:
            messages.append({"role": "system", "content": load_prompt("pipeline_system.md", **words)})
        messages.append({"role": "user", "content": load_prompt(prompt, **{**words, **values})})
        return messages

    async def ask(self, schema: type[BaseModel], prompt: str, max_tokens: int, what: str, fallback: str,
                  **values: Any) -> Any:  # fmt: skip
        """A structured decision: the validated object, or None (noted: what failed, what is done instead)
        when the reply is not the JSON asked for even after the client's repair retry."""
        try:
            gen = await self.meter.generate(self.model, self._messages(prompt, False, values), response_format=schema,
                                            max_tokens=max_tokens)  # fmt: skip
        except ModelOutputError as exc:
            self.meter.note(f"{what}: the reply was not the JSON asked for ({str(exc)[:160]}); {fallback}")
            return None
        return gen.parsed

    async def write(self, prompt: str, max_tokens: int, temperature: float = 0.0, system: bool = False,
                    **values: Any) -> str:  # fmt: skip
        gen = await self.meter.generate(self.model, self._messages(prompt, system, values), max_tokens=max_tokens,
                                        temperature=temperature)  # fmt: skip
        return (gen.text or "").strip()

    async def answer(self, passages: Sequence[Passage], max_tokens: int) -> Answer:
        """The final answer from the first `MAX_CONTEXT` passages, citing the ones it names ([n]; all
        shown when it names none). No passage: `not_found`, without a model call."""
        shown = list(passages[:MAX_CONTEXT])
        if not shown:
            self.meter.note("no passage to answer from: answered without a model call, as the release's runner "
                            "does (run_query.py)")  # fmt: skip
            return self.meter.answer(not_found(self.words))
        text = await self.write("pipeline_answer.md", max_tokens, system=True, question=self.task.prompt,
                                passages=numbered(shown, ANSWER_CHARS))  # fmt: skip
        evidence = [p.evidence() for p in _cited(text, shown)]
        self.best.text, self.best.evidence = text, evidence
        return self.meter.answer(text, evidence=evidence)


def _search_takes(env: Any, name: str) -> bool:
    for tool in env.tools:
        function = tool.get("function", {}) if isinstance(tool, dict) else {}
        if function.get("name") == "search" and name in (function.get("parameters", {}).get("properties") or {}):
            return True
    try:
        parameters = inspect.signature(env.search).parameters
    except (AttributeError, TypeError, ValueError):
        return False
    return name in parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


async def rerank(ep: Episode, query: str, passages: Sequence[Passage], top_n: int) -> list[Passage]:
    """The stand-in for the release's cross-encoder reranker (Qwen3-Reranker-0.6B or Cohere rerank-v3.5,
    services.yaml): one model call scores every candidate's relevance to ``query`` (0 to 1), the best
    ``top_n`` are kept, ties in search order. A reply that is not the JSON asked for keeps the search
    order, as the release's ``_rerank_chunks`` does without a reranker. One candidate needs no call."""
    candidates = list(passages)
    if len(candidates) <= 1:
        return candidates[:top_n]
    parsed = await ep.ask(Scores, "pipeline_rerank.md", score_tokens(len(candidates)),
                          "rerank", f"kept the first {top_n} in search order", query=query,
                          passages=numbered(candidates, RERANK_CHARS))  # fmt: skip
    if parsed is None:
        return candidates[:top_n]
    scores = item_scores(parsed, len(candidates), default=0.0, low=0.0, high=1.0)
    order = sorted(range(len(candidates)), key=lambda i: -scores[i])[:top_n]
    kept = [candidates[i] for i in order]
    ep.meter.note(f"rerank: kept passages {[p.number for p in kept]} of {[p.number for p in candidates]} "
                  f"(scores {[round(scores[i], 2) for i in order]})")  # fmt: skip
    return kept


_PREFIXES = ("rewritten query:", "search query:", "new query:", "rewritten:", "keywords:", "query:")


async def rewrite(ep: Episode, prompt: str, question: str, max_tokens: int, **values: Any) -> str:
    """A rewritten search query: the reply's first non-empty line, a leading label and quotes taken off;
    the question itself when nothing is left (the release: ``rewritten or query``)."""
    text = await ep.write(prompt, max_tokens, question=question, **values)
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    for prefix in _PREFIXES:
        if line.lower().startswith(prefix):
            line = line[len(prefix) :].strip()
            break
    line = line.strip().strip("\"'`").strip()
    ep.meter.note(f"rewritten query: {line!r}" if line else "the rewrite was empty: the question again")
    return line or question


class Pipeline:
    """A release pipeline as an agent: ``solve`` runs `_run` in an `Episode` under `run_episode` (a model
    error or an exhausted budget ends it with the trace so far)."""

    name: ClassVar[str]
    #: the paper scores retrieval baselines by the files their retrieval returned
    file_list: ClassVar[str] = "retrieved"

    max_tokens: int = 512

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        ep = Episode(task=task, env=env, model=model, meter=Meter(budget))
        return await run_episode(ep.meter, ep.best, self._run(ep))

    async def _run(self, ep: Episode) -> Answer:
        raise NotImplementedError
