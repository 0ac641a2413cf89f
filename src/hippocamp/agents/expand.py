"""Query expansion with a model: other queries for the same need, searched together with the question.

A multi-hop question ("What activities has Melanie done with her family?") is answered by passages
that share few of its words ("we went camping", "the kids loved the pottery class"). A model guesses
the words such passages would use (`expand_query`, prompt ``prompts/expand_query.md``, one worked
example), and the store ranks the question and its expansions together
(``Searcher.search(question, also=expansions)``: a passage's score for the question plus a share of its
best score for any expansion, so a guess that finds nothing costs little).

Measured on the LoCoMo dev slice with the bundled 1.5B model (bench/RESULTS.md). Used by the
``rag-expand`` agent and by ``hippocamp bench retrieval --expand-model``.
"""

from __future__ import annotations

import re
from typing import Any

from hippocamp.agents.base import load_prompt
from hippocamp.models.types import Message

__all__ = ["MAX_EXPANSIONS", "expand_query", "parse_expansions"]

#: expansions kept per question
MAX_EXPANSIONS = 4
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)]|query\s*\d*:)\s*", re.I)


def parse_expansions(text: str, question: str, limit: int = MAX_EXPANSIONS) -> list[str]:
    """The queries of a model's reply: one per line, bullets, numbering and quotes removed, lines
    that echo the prompt ("Question: ...") or the question, repeats, and lines over 16 words left out."""
    out: list[str] = []
    seen = {question.strip().lower()}
    for line in text.splitlines():
        query = _BULLET.sub("", line).strip().strip("\"'`").strip()
        if not query or query.lower().startswith("question:") or len(query.split()) > 16:
            continue
        if query.lower() in seen:
            continue
        seen.add(query.lower())
        out.append(query)
        if len(out) >= limit:
            break
    return out


async def expand_query(
    model: Any, question: str, corpus: str = "the person's files", max_tokens: int = 80, meter: Any = None
) -> list[str]:
    """Up to `MAX_EXPANSIONS` search queries for ``question`` from ``model`` (a `ChatModel`; through
    ``meter.generate`` when an agent's meter is given, so the call counts against its budget)."""
    messages: list[Message] = [
        {"role": "user", "content": load_prompt("expand_query.md", question=question.strip(), corpus=corpus)}
    ]
    if meter is not None:
        generation = await meter.generate(model, messages, max_tokens=max_tokens)
    else:
        generation = await model.generate(messages, max_tokens=max_tokens, temperature=0.0)
    return parse_expansions(generation.text or "", question)
