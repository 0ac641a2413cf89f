"""ReAct over the file tools: thought, action (a native tool call), observation, until the model
answers in plain text. Backends without native tools get the JSON-action protocol from `Model`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from hippocamp.agents._cite import Draft, mentioned_files, run_episode, run_tool
from hippocamp.agents.base import Answer, Budget, EvidenceItem, Meter, Task, load_prompt
from hippocamp.envs.base import Observation
from hippocamp.models.types import Message
from hippocamp.registry import register

__all__ = ["ReAct"]


@dataclass
class _Seen:
    """What the tools showed in an episode: every path named in an observation, the files read, and
    the citable passages per file (read segments and search hits)."""

    paths: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    reads: dict[str, list[EvidenceItem]] = field(default_factory=dict)
    hits: dict[str, list[EvidenceItem]] = field(default_factory=dict)
    last_hits: list[str] = field(default_factory=list)

    def add(self, tool: str, obs: Observation) -> None:
        if not obs.ok:
            return
        for item in obs.data:
            path = item.get("path")
            if not isinstance(path, str):
                continue
            if path not in self.paths:
                self.paths.append(path)
            if tool in ("read", "search") and "text" in item:
                into = self.reads if tool == "read" else self.hits
                evidence = EvidenceItem(file_path=path, locator=item.get("locator"), text=item["text"])
                if evidence not in into.setdefault(path, []):
                    into[path].append(evidence)
            if tool == "read" and path not in self.read:
                self.read.append(path)
        if tool == "search" and obs.data:
            self.last_hits = list(dict.fromkeys(d["path"] for d in obs.data[:1]))

    def cite(self, answer: str, per_file: int) -> tuple[list[str], list[EvidenceItem]]:
        """The files an answer names among those seen, else the files read, else the top hit of the
        last search; with each file's read segments (else its search hits) as evidence."""
        files = mentioned_files(answer, self.paths) or self.read or self.last_hits
        evidence = [e for f in files for e in (self.reads.get(f) or self.hits.get(f) or [])[:per_file]]
        return files, evidence


@register("agent", "react")
class ReAct:
    """ReAct with the `FilesEnv` tools (list_files, search, read, metadata) as native tool calls; every
    call and observation is recorded. A reply without tool calls is the answer (an empty one gets one
    nudge). Cites the files the answer names among those the tools showed, else the files it read."""

    name: ClassVar[str] = "react"
    #: a tool agent: scored by the files its calls named (read/metadata paths, list_files globs), as the
    #: paper scores its terminal agents; its searches' hit files are its retrieved list
    file_list: ClassVar[str] = "touched"

    def __init__(self, max_tokens: int = 1024, evidence_per_file: int = 5):
        self.max_tokens = max_tokens
        self.evidence_per_file = evidence_per_file

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        meter, best = Meter(budget), Draft()
        return await run_episode(meter, best, self._run(task, env, model, meter))

    async def _run(self, task: Task, env: Any, model: Any, meter: Meter) -> Answer:
        messages: list[Message] = [
            {"role": "system", "content": load_prompt("react_system.md")},
            {"role": "user", "content": load_prompt("react.md", question=task.prompt)},
        ]
        seen = _Seen()
        nudged = False
        while True:
            gen = await meter.generate(model, messages, tools=env.tools, max_tokens=self.max_tokens)
            if not gen.tool_calls:
                text = gen.text.strip()
                if not text and not nudged:
                    nudged = True
                    messages += [
                        {"role": "assistant", "content": gen.text},
                        {"role": "user", "content": load_prompt("react_nudge.md")},
                    ]
                    continue
                if not text:
                    return meter.answer("", stop="no_answer")
                files, evidence = seen.cite(text, self.evidence_per_file)
                return meter.answer(text, files=files, evidence=evidence)
            messages.append(
                {"role": "assistant", "content": gen.text, "tool_calls": [c.to_message() for c in gen.tool_calls]}
            )
            for call in gen.tool_calls:
                obs = run_tool(meter, env, call.name, dict(call.arguments))
                seen.add(call.name, obs)
                messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": obs.text})
