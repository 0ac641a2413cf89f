"""What every stage's model half shares: one prompt file per stage (``prompts/<stage>.md``, first line
``# stage: <name>``), one call that asks for schema-validated JSON under the stage's token cap, and the
run's ledger of answers, which records each fallback to the templates and gives a stage up for the run
when its first answers were all unusable (a model too small for it costs minutes, not hours).

A model half raises on an outage or an unusable answer (`ModelStageError` for one that validated but
cannot be used); the pipeline then uses the stage's template half and the ledger records why.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Coroutine
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["GIVE_UP", "MAX_TOKENS", "Capped", "ModelStageError", "StageLedger", "ask", "first_failure", "prompt"]

#: a stage whose first GIVE_UP answers in a run were all unusable is not asked again in that run
GIVE_UP = 3
#: answer tokens per stage: a model that rambles is cut off (and its answer refused), not waited for
MAX_TOKENS = {
    "interview": 1536, "facts": 3072, "audit": 768, "circle": 768, "fragments": 768, "verifier": 384,
    "cases": 1024, "cases_recall": 768, "filler": 768, "decoys": 640,
}  # fmt: skip
T = TypeVar("T")


class ModelStageError(ValueError):
    """A model answer that validated as JSON but cannot be used (missing ids, too few facts, ...)."""


@cache
def prompt(stage: str) -> str:
    """The prompt of ``stage`` (``prompts/<stage>.md``)."""
    return resources.files("hippocamp.synth.personas").joinpath(f"prompts/{stage}.md").read_text(encoding="utf-8")


async def ask(model: Any, stage: str, payload: dict[str, Any], fmt: type[BaseModel]) -> Any:
    """The model's answer to ``payload`` at ``stage``, parsed into ``fmt`` (an outage or an answer that
    does not validate raises)."""
    messages = [
        {"role": "system", "content": prompt(stage)},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False, default=str)},
    ]
    gen = await model.generate(messages, response_format=fmt, temperature=0.0, max_tokens=MAX_TOKENS.get(stage))
    return gen.parsed


async def first_failure(coros: list[Any]) -> list[Any]:
    """Run ``coros`` concurrently; the first failure cancels the others (no server time spent on a
    stage that already failed) and is raised as itself."""
    try:
        async with asyncio.TaskGroup() as tg:
            tasks = [tg.create_task(c) for c in coros]
    except ExceptionGroup as group:
        raise group.exceptions[0] from None
    return [t.result() for t in tasks]


@dataclass
class StageLedger:
    """The model's answers in one run, per stage and persona: what it wrote, what fell back and why,
    and the stages given up after ``give_up`` unusable answers and no usable one."""

    give_up: int = GIVE_UP
    fallbacks: dict[str, list[str]] = field(default_factory=dict)
    #: per persona: "<stage>_model" / "_fallback" / "_skipped" answers in this run
    calls: dict[str, Counter[str]] = field(default_factory=dict)
    #: per stage, over the run: usable answers, unusable ones, and why the stage was given up
    usable: Counter[str] = field(default_factory=Counter)
    unusable: Counter[str] = field(default_factory=Counter)
    given_up: dict[str, str] = field(default_factory=dict)

    async def ask(
        self, pid: str, stage: str, label: str, call: Coroutine[Any, Any, T], record: bool = True
    ) -> tuple[T | None, str]:
        """(the model's answer ``call`` at ``stage``, "") or (None, why): an outage, an unusable answer, or
        a stage given up in this run (``call`` is then not run). With ``record`` the reason joins the
        persona's fallbacks under ``label``."""
        tally = self.calls.setdefault(pid, Counter())
        if stage in self.given_up:
            call.close()
            tally[f"{stage}_skipped"] += 1
            why = f"{label}: not asked: {self.given_up[stage]}"
            if record and tally[f"{stage}_skipped"] == 1:
                self.fallbacks.setdefault(pid, []).append(why)
            return None, why
        try:
            value = await call
        except Exception as exc:  # an outage or an unusable answer: the caller's fallback stands in
            tally[f"{stage}_fallback"] += 1
            self.unusable[stage] += 1
            first = str(exc).splitlines()[0][:200] if str(exc) else ""
            why = f"{label}: {type(exc).__name__}: {first}"
            if record:
                self.fallbacks.setdefault(pid, []).append(why)
            limit = self.give_up
            if not self.usable[stage] and self.unusable[stage] >= limit and stage not in self.given_up:
                self.given_up[stage] = f"the model's first {limit} answers at this stage were unusable (last: {why})"
            return None, why
        tally[f"{stage}_model"] += 1
        self.usable[stage] += 1
        return value, ""


class Capped:
    """A model whose every answer is cut at ``cap`` tokens (an answer cut short is then refused)."""

    def __init__(self, model: Any, cap: int):
        self.model, self.cap, self.id = model, cap, model.id

    async def generate(self, messages: Any, max_tokens: int | None = None, **options: Any) -> Any:
        cap = self.cap if max_tokens is None else min(max_tokens, self.cap)
        return await self.model.generate(messages, max_tokens=cap, **options)
