"""``terminal``: HippoCamp's terminal agent protocol over the emulated terminal surface.

The model thinks in ``<think>``, runs one command per turn as
``<tool>{"name": "terminal", "arguments": {"command": ...}}</tool>`` and ends with
``<answer>...</answer>`` (and ``<files>a; b</files>``), 20 turns by default (the budget's
``max_steps``). A malformed turn gets one corrective observation; escapes are refused by the
terminal and counted. The files its commands name are the answer's touched files, by the release's
rule (`hippocamp.agents.filelists`). Each command runs off the event loop with the episode's
remaining wall clock as its deadline, so a command that would take longer stops ("timed out") and
the episode ends on time with its trace.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any, ClassVar

from hippocamp.agents._cite import mentioned_files, model_failure
from hippocamp.agents.base import Answer, Budget, BudgetExceeded, EvidenceItem, Meter, Task, load_prompt
from hippocamp.registry import register

__all__ = ["TerminalAgent", "parse_turn"]

_TOOL = re.compile(r"<tool>\s*(\{.*?\})\s*(?:</tool>|$)", re.S)
_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.S)
_FILES = re.compile(r"<files>(.*?)(?:</files>|$)", re.S)
_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.S)


def parse_turn(text: str) -> tuple[str, str | None, str | None, list[str]]:
    """(thought, command or None, answer or None, files) of one model turn."""
    thought = m.group(1).strip() if (m := _THINK.search(text)) else ""
    answer = m.group(1).strip() if (m := _ANSWER.search(text)) else None
    files = [f.strip() for f in re.split(r"[;\n]", m.group(1)) if f.strip()] if (m := _FILES.search(text)) else []
    command = None
    if answer is None and (m := _TOOL.search(text)):
        try:
            call = json.loads(m.group(1))
            args = call.get("arguments", {})
            if isinstance(args, str):
                args = json.loads(args)
            command = str(args.get("command", "")).strip() or None
        except (ValueError, AttributeError):
            command = None
    return thought, command, answer, files


@register("agent", "terminal")
class TerminalAgent:
    """hippocamp's terminal agent: one command per turn in the terminal (jail or emulated), then the answer."""

    name: ClassVar[str] = "terminal"
    #: the paper's terminal agents are scored by the files their commands touched (the release's rule,
    #: `hippocamp.agents.filelists.touched_files`); the terminal has no retrieval, so nothing is retrieved
    file_list: ClassVar[str] = "touched"

    def __init__(self) -> None:
        #: characters of a command's output the model is shown
        self.observation_chars = 6000
        #: output tokens per turn
        self.max_tokens = 600
        #: corrections for a malformed turn before the episode ends
        self.format_retries = 1

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        meter = Meter(budget)
        terminal = env.terminal(budget_chars=self.observation_chars, image_bytes=False)  # a text model: no base64 pages
        left = meter.remaining_seconds()
        if left is not None:  # no command runs past the episode's wall clock
            terminal.deadline = time.monotonic() + left
        system = load_prompt(
            "terminal.md", max_steps=budget.max_steps, **_SHELLS[getattr(terminal, "backend", "emulated")]
        )
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": f"Question: {task.prompt}"},
        ]
        try:
            answer = await self._loop(meter, model, terminal, messages)
        finally:
            close = getattr(terminal, "close", None)
            if close is not None:
                close()
        answer.escapes = terminal.sandbox.escapes
        return answer

    async def _loop(self, meter: Meter, model: Any, terminal: Any, messages: list[dict[str, Any]]) -> Answer:
        read: list[str] = []
        corrections = 0
        try:
            while True:
                gen = await meter.generate(model, messages, stop=["</tool>", "</files>"], max_tokens=self.max_tokens)
                text = gen.text
                if "<tool>" in text and "</tool>" not in text:
                    text += "</tool>"
                elif "<files>" in text and "</files>" not in text:
                    text += "</files>"
                messages.append({"role": "assistant", "content": text})
                thought, command, answer, files = parse_turn(text)
                if answer is not None:
                    named = _existing(terminal, files) or _existing(terminal, mentioned_files(answer, read))
                    known = named or _existing(terminal, read)[-3:]
                    evidence = [EvidenceItem(file_path=f) for f in known]
                    return meter.answer(answer, files=known, evidence=evidence)
                if command is None:
                    if corrections >= self.format_retries:
                        return meter.answer("", stop="no_answer", error="the model did not follow the protocol")
                    corrections += 1
                    reply = (
                        'error: reply with <think>...</think> then either <tool>{"name": "terminal", "arguments": '
                        '{"command": "..."}}</tool> or <answer>...</answer><files>...</files>'
                    )
                    messages.append({"role": "user", "content": f"<observation>{reply}</observation>"})
                    meter.observe("protocol", None, reply)
                    continue
                began = time.perf_counter()
                obs = await asyncio.to_thread(terminal.run, command)  # off the loop: the runner's timeout can fire
                meter.observe("terminal", {"command": command}, obs.text, time.perf_counter() - began)
                read += [p for p in _paths_of(command) if p not in read]
                messages.append({"role": "user", "content": f"<observation>{obs.text}</observation>"})
                if thought:
                    meter.trace[-1].thought = thought
        except BudgetExceeded as exc:
            return meter.answer("", stop=exc.reason, error=str(exc))
        except Exception as exc:  # a model failure ends the episode, the trace is kept
            return model_failure(meter, exc)


#: what the prompt says of the terminal, by backend
_SHELLS = {
    "emulated": {
        "where": "Their files are mounted read-only at `/`.",
        "shell": "- ls, cd, pwd, find, grep, head, tail, cat, wc, stat, file   read-only, with pipes",
    },
    "jail": {
        "where": "Their files are mounted read-only at `/hippocamp/data` (the current folder).",
        "shell": "- a real bash: ls, find, grep, sed, awk, jq, python3, pipes and heredocs work; /tmp is writable; "
        "there is no network",
    },
}


def _paths_of(command: str) -> list[str]:
    """Files a command read (``return_txt X``, ``cat X``): used to cite when the model names none."""
    m = re.match(r"\s*(?:return_txt|return_ori|return_img|cat|head|tail)\s+(.+)", command)
    if not m:
        return []
    arg = m.group(1).split("|")[0].strip()
    arg = re.sub(r"\s--page.*$", "", arg)
    arg = re.sub(r"^-n\s*\d+\s+", "", arg)
    return [arg.strip().strip("'\"").lstrip("/")]


def _existing(terminal: Any, paths: list[str]) -> list[str]:
    """The given paths that are files of the profile (profile-relative, in order, once each)."""
    out: list[str] = []
    for p in paths:
        rel = p.strip().strip("'\"`").lstrip("/")
        try:
            if rel and terminal.sandbox.allows(rel) and terminal.sandbox.resolve(rel).is_file() and rel not in out:
                out.append(rel)
        except (OSError, ValueError):  # a name too long, a NUL byte: not a file of the profile
            continue
    return out
