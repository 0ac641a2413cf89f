"""``full-context``: P-ContextBench's protocol, every app log of the persona in the prompt at once.

Works with an app-log environment (``pcontext:`` suites), whose ``logs()`` gives the persona's
messages and events in time order. The budget follows the model: ``max_chars="auto"`` (the default)
reads the context window of a backend that knows it (a local model's ``n_ctx``, or a backend's
``context_tokens``) and allows `CHARS_PER_TOKEN` characters per token of it, less the answer's
tokens; a backend that does not say (an API model: the paper's were long-context models) gets the
logs whole, and a server that refuses them is a model failure, recorded as such. When they do not
fit, the episode ends with ``stop="no_answer"`` and says so: use an agentic agent then. A number
fixes the budget in characters. The
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

__all__ = ["CHARS_PER_TOKEN", "FullContextAgent", "context_chars"]


#: characters per token assumed when a context window in tokens becomes a budget in characters (English
#: chat text runs at about 4; 3.5 leaves room for names, numbers and ids, which tokenize worse)
CHARS_PER_TOKEN = 3.5
#: tokens kept for the prompt's instructions and the answer
RESERVED_TOKENS = 1_000


def context_chars(model: Any) -> int | None:
    """The characters of logs that fit ``model``'s context window, when its backend says how many
    tokens that is (``context_tokens``, or a local model's ``n_ctx``); None when it does not."""
    for owner in (model, getattr(model, "backend", None)):
        tokens = getattr(owner, "context_tokens", None) or getattr(owner, "n_ctx", None)
        if isinstance(tokens, int) and tokens > 0:
            return max(0, int((tokens - RESERVED_TOKENS) * CHARS_PER_TOKEN))
    return None


@register("agent", "full-context")
class FullContextAgent:
    """Every log of a persona in the prompt at once (P-ContextBench's full-context regime), one answer."""

    name: ClassVar[str] = "full-context"
    #: "retrieved": putting every log in the prompt is this agent's retrieval (everything is retrieved),
    #: so it is scored like the retrieval baselines by what reached the model; it runs no commands and
    #: names no file, so "touched" would always be empty
    file_list: ClassVar[str] = "retrieved"

    def __init__(self, max_chars: int | str = "auto"):
        if str(max_chars).strip().lower() == "auto":
            self.max_chars: int | None = None
        else:
            try:
                self.max_chars = int(max_chars)
            except ValueError:
                raise ValueError(
                    f"full-context: max_chars is a number of characters or 'auto', got {max_chars!r}"
                ) from None
            if self.max_chars < 1:
                raise ValueError(f"full-context: max_chars must be positive, got {max_chars!r}")

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        meter = Meter(budget)
        if not isinstance(env, LogsEnvironment):
            return meter.answer("", stop="error", error="full-context needs an app-log environment (a pcontext: suite)")
        segments = env.logs()
        text = "\n".join(s.text for s in segments)
        limit = self.max_chars if self.max_chars is not None else context_chars(model)
        if limit is not None and len(text) > limit:
            return meter.answer(
                "",
                stop="no_answer",
                error=f"the logs ({len(text)} characters) do not fit the context budget ({limit} characters"
                f"{'' if self.max_chars is not None else ', from the model context window'}); use an agentic agent",
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
