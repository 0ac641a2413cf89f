"""What every agent shares: the task it gets, the budget it must keep, the answer it returns, and
the trace of what it did.

``Agent.solve(task, env, model, budget) -> Answer`` is a coroutine. An agent never raises for a
model error or an exhausted budget: it returns an ``Answer`` whose ``stop`` says why it ended, with
everything it did so far in ``trace`` (the runner records it; a crash inside an agent is caught by
the runner and recorded as ``stop="error"``).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from hippocamp.agents.filelists import retrieved_files, touched_files
from hippocamp.envs.base import Environment
from hippocamp.models.types import Generation, Usage
from hippocamp.schema.run import Answer, EvidenceItem, Step, StopReason, Task

__all__ = [
    "Agent",
    "Answer",
    "Budget",
    "BudgetExceeded",
    "EvidenceItem",
    "Meter",
    "Step",
    "StopReason",
    "Task",
    "corpus_values",
    "load_prompt",
]


@dataclass(frozen=True)
class Budget:
    """Explicit per-episode limits; ``None`` means unlimited. Recorded with every episode."""

    max_steps: int = 20
    max_tokens: int | None = 60_000
    max_seconds: float | None = 600.0
    #: characters of observations (retrieved text, tool output) the agent may read in total
    max_evidence_chars: int | None = 60_000
    #: segments a retrieval agent reads per search
    k: int = 8

    def as_dict(self) -> dict[str, Any]:
        return {
            "max_steps": self.max_steps,
            "max_tokens": self.max_tokens,
            "max_seconds": self.max_seconds,
            "max_evidence_chars": self.max_evidence_chars,
            "k": self.k,
        }


class BudgetExceeded(Exception):
    def __init__(self, reason: StopReason, detail: str):
        super().__init__(detail)
        self.reason = reason


class Meter:
    """Keeps an episode within its budget and builds its trace.

    ``await meter.generate(model, messages, ...)`` calls the model, charges tokens and time, and
    records a ``model`` step; ``meter.observe(tool, args, text, files=...)`` records a tool step (with the
    files it returned) and charges the evidence volume. Both raise ``BudgetExceeded`` once a limit is
    passed; ``meter.touch(files)`` notes files the agent examined outside a tool's arguments;
    ``meter.answer(...)`` builds the final ``Answer`` (also for stops), with its touched and retrieved
    files taken from the trace (`hippocamp.agents.filelists`).
    """

    def __init__(self, budget: Budget):
        self.budget = budget
        self.started = time.perf_counter()
        self.trace: list[Step] = []
        self.usage = Usage()
        self.evidence_chars = 0
        self.model_seconds = 0.0
        self.steps = 0
        #: files the agent examined that no tool argument names (`touch`)
        self.touched: list[str] = []

    def _check_time(self) -> None:
        limit = self.budget.max_seconds
        if limit is not None and time.perf_counter() - self.started > limit:
            raise BudgetExceeded("timeout", f"wall clock over {limit:g} s")

    def _step(self) -> None:
        self.steps += 1
        if self.steps > self.budget.max_steps:
            raise BudgetExceeded("max_steps", f"more than {self.budget.max_steps} steps")

    def remaining_seconds(self) -> float | None:
        limit = self.budget.max_seconds
        return None if limit is None else max(0.0, limit - (time.perf_counter() - self.started))

    async def generate(self, model: Any, messages: list[dict[str, Any]], *, count_step: bool = True,
                       **kwargs: Any) -> Generation:  # fmt: skip
        self._check_time()
        if count_step:
            self._step()
        began = time.perf_counter()
        gen: Generation = await model.generate(messages, **kwargs)
        spent = time.perf_counter() - began
        self.model_seconds += spent
        self.usage = self.usage + gen.usage
        thought = gen.text if not gen.tool_calls else (gen.text or "")
        self.trace.append(
            Step(
                index=len(self.trace),
                kind="model",
                thought=thought,
                input_tokens=gen.usage.input_tokens,
                output_tokens=gen.usage.output_tokens,
                seconds=round(spent, 4),
            )
        )
        limit = self.budget.max_tokens
        if limit is not None and self.usage.input_tokens + self.usage.output_tokens > limit:
            raise BudgetExceeded("max_tokens", f"more than {limit} tokens")
        self._check_time()
        return gen

    def observe(
        self,
        tool: str,
        arguments: dict[str, Any] | None,
        observation: str,
        seconds: float = 0.0,
        files: list[str] | None = None,
    ) -> None:
        """Record a tool step: what it was asked, what it answered, and the files it returned (a search's
        hit files in rank order)."""
        self.evidence_chars += len(observation)
        self.trace.append(
            Step(
                index=len(self.trace),
                kind="tool",
                tool=tool,
                arguments=arguments,
                observation=observation,
                seconds=round(seconds, 4),
                files=list(dict.fromkeys(f for f in files or [] if f)),
            )
        )
        limit = self.budget.max_evidence_chars
        if limit is not None and self.evidence_chars > limit:
            raise BudgetExceeded("max_evidence", f"more than {limit} characters of observations")
        self._check_time()

    def note(self, text: str) -> None:
        self.trace.append(Step(index=len(self.trace), kind="note", thought=text))

    def touch(self, files: list[str]) -> None:
        """Files the agent examined without a tool argument naming them (passages it read closely):
        they join the answer's touched files after those of the trace."""
        self.touched += [f for f in files if f and f not in self.touched]

    def answer(
        self,
        text: str,
        files: list[str] | None = None,
        evidence: list[EvidenceItem] | None = None,
        stop: StopReason = "answered",
        error: str | None = None,
    ) -> Answer:
        if stop == "answered":
            self.trace.append(Step(index=len(self.trace), kind="answer", thought=text))
        evidence = evidence or []
        files = list(dict.fromkeys([*(files or []), *(e.file_path for e in evidence)]))
        return Answer(
            text=text,
            files=files,
            touched=list(dict.fromkeys([*touched_files(self.trace), *self.touched])),
            retrieved=retrieved_files(self.trace),
            evidence=evidence,
            trace=self.trace,
            usage=self.usage,
            stop=stop,
            error=error,
            model_seconds=round(self.model_seconds, 4),
        )


class Agent(Protocol):
    """An agent: registered under kind ``agent`` by ``name``. A class may also say which file list the
    paper scores its family by, ``file_list: ClassVar[str]`` (``"cited"``, ``"touched"`` or
    ``"retrieved"``; `hippocamp.agents.filelists.paper_file_list` reads it, ``"cited"`` when absent)."""

    name: ClassVar[str]

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer: ...


_PROMPTS = Path(__file__).parent / "prompts"


def corpus_values(env: Environment) -> dict[str, str]:
    """How prompts name what an environment holds (``{corpus}``, ``{corpus_long}``) and whose it is
    (``{owner_line}``: the person "the user" of a question is, when the environment knows)."""
    return {
        "corpus": env.corpus or "the person's files",
        "corpus_long": env.corpus_long or "the person's files",
        "owner_line": f'The person is {env.owner}: a question about {env.owner} is about "the user".\n'
        if env.owner
        else "",
    }


def load_prompt(name: str, **values: Any) -> str:
    """A prompt file from ``agents/prompts/`` with ``{name}`` placeholders filled (others kept)."""
    text = (_PROMPTS / name).read_text(encoding="utf-8")
    return re.sub(r"\{(\w+)\}", lambda m: str(values.get(m.group(1), m.group(0))), text)
