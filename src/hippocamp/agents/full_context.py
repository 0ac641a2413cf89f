"""``full-context``: P-ContextBench's protocol, every app log of the persona in the prompt at once.

Works with an app-log environment (``pcontext:`` suites), whose ``logs()`` gives the persona's
messages and events in time order. When they do not fit ``max_chars`` (the model's context, as
characters), the episode ends with ``stop="no_answer"`` and says so: use an agentic agent then. The
message and event ids the answer names become its evidence, located in the persona's logs. The files
of the logs it put in the prompt are its retrieved files (a ``logs`` step of the trace).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from hippocamp.agents._cite import model_failure
from hippocamp.agents.base import Answer, Budget, BudgetExceeded, EvidenceItem, Meter, Task, load_prompt
from hippocamp.envs.base import LogsEnvironment
from hippocamp.registry import register

__all__ = ["FullContextAgent"]


@register("agent", "full-context")
class FullContextAgent:
    name: ClassVar[str] = "full-context"
    #: "retrieved": putting every log in the prompt is this agent's retrieval (everything is retrieved),
    #: so it is scored like the retrieval baselines by what reached the model; it runs no commands and
    #: names no file, so "touched" would always be empty
    file_list: ClassVar[str] = "retrieved"

    def __init__(self, max_chars: int | str = 48_000):
        self.max_chars = int(max_chars)

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        meter = Meter(budget)
        if not isinstance(env, LogsEnvironment):
            return meter.answer("", stop="error", error="full-context needs an app-log environment (a pcontext: suite)")
        segments = env.logs()
        text = "\n".join(s.text for s in segments)
        if len(text) > self.max_chars:
            return meter.answer(
                "",
                stop="no_answer",
                error=f"the logs ({len(text)} characters) do not fit the context budget ({self.max_chars}); "
                "use an agentic agent",
            )
        prompt = load_prompt("full_context.md", logs=text, question=task.prompt)
        try:
            # what the prompt holds is what it retrieved: one step with every file of the logs, in order
            meter.observe("logs", None, f"{len(segments)} items ({len(text)} characters) in the prompt",
                          files=[s.path for s in segments])  # fmt: skip
            gen = await meter.generate(model, [{"role": "user", "content": prompt}], max_tokens=500)
        except BudgetExceeded as exc:
            return meter.answer("", stop=exc.reason, error=str(exc))
        except Exception as exc:
            return model_failure(meter, exc)
        by_id: dict[str, Any] = {}
        for s in segments:
            for key in ("message_id", "event_id"):
                if s.meta.get(key):
                    by_id[str(s.meta[key])] = s
        named = [i for i in dict.fromkeys(re.findall(r"[\w:.-]+", gen.text)) if i in by_id]
        evidence = [
            EvidenceItem(
                file_path=by_id[i].path,
                locator=by_id[i].locator.dump() if by_id[i].locator else None,
                text=by_id[i].text[:300],
            )
            for i in named
        ]
        return meter.answer(gen.text.strip(), evidence=evidence)
