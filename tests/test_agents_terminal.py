"""The terminal agent: HippoCamp's <think>/<tool>/<answer> protocol, scripted through the mock model."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest

from hippocamp.agents.base import Budget, Task
from hippocamp.agents.terminal import parse_turn
from hippocamp.envs.files import FilesEnv
from hippocamp.envs.terminal import Terminal
from hippocamp.models import get_model
from hippocamp.models.errors import ModelError
from hippocamp.registry import get


def tool(command: str, thought: str = "look") -> str:
    return f'<think>{thought}</think>\n<tool>{{"name": "terminal", "arguments": {{"command": {json.dumps(command)}}}}}'


def run(env: FilesEnv, outputs: Any, budget: Budget | None = None) -> Any:
    agent = get("agent", "terminal")()
    model = get_model("mock", outputs=outputs)
    task = Task("t1", "How much is my monthly rent?")
    return asyncio.run(agent.solve(task, env, model, budget or Budget())), model


def test_parse_turn() -> None:
    assert parse_turn(tool("ls Documents"))[1] == "ls Documents"
    thought, command, answer, files = parse_turn("<think>ok</think><answer>EUR 5</answer><files>a.pdf; b/c.eml</files>")
    assert (thought, command, answer, files) == ("ok", None, "EUR 5", ["a.pdf", "b/c.eml"])
    assert parse_turn('<tool>{"name": "terminal", "arguments": "not json"}</tool>')[1] is None


def test_whole_trajectory(env: FilesEnv) -> None:
    lease = next(d["path"] for d in env.call("list_files", {"glob": "Documents/Housing/*"}).data)
    outputs = [
        tool("list_files 'Documents/Housing/*'"),
        tool(f'return_txt "{lease}"', "read the lease"),
        f"<think>page 2 says it</think><answer>EUR 1,275.00 per month</answer><files>{lease}</files>",
    ]
    answer, model = run(env, outputs)
    assert answer.stop == "answered" and answer.text == "EUR 1,275.00 per month"
    assert answer.files == [lease] and answer.evidence[0].file_path == lease
    tools = [s for s in answer.trace if s.kind == "tool"]
    assert [s.arguments["command"] for s in tools] == ["list_files 'Documents/Housing/*'", f'return_txt "{lease}"']
    # the observation recorded is exactly what the terminal answers
    assert tools[1].observation == env.terminal().run(f'return_txt "{lease}"').text
    assert "Monthly rent" in tools[1].observation
    # the model saw the observation on its next turn
    last = model.backend.requests[-1].messages[-1]["content"]
    assert last.startswith("<observation>") and "Monthly rent" in last


def test_files_fall_back_to_what_was_read(env: FilesEnv) -> None:
    lease = next(d["path"] for d in env.call("list_files", {"glob": "Documents/Housing/*"}).data)
    answer, _ = run(env, [tool(f"cat '{lease}' | head -n 3"), "<answer>I read it</answer>"])
    assert answer.stop == "answered" and answer.files == [lease]


def test_escape_attempts_are_refused_and_counted(env: FilesEnv) -> None:
    answer, _ = run(env, [tool("cat ../../../etc/passwd"), tool("cd /.."), "<answer>no</answer>"])
    observations = [s.observation for s in answer.trace if s.kind == "tool"]
    assert all("root:" not in o for o in observations)
    assert answer.stop == "answered" and answer.escapes == 2


def test_budget_and_protocol_and_model_errors(env: FilesEnv) -> None:
    answer, _ = run(env, lambda request: tool("pwd"), Budget(max_steps=3))
    assert answer.stop == "max_steps" and len([s for s in answer.trace if s.kind == "tool"]) == 3
    answer, _ = run(env, ["I think the rent is high.", "still chatting"])
    assert answer.stop == "no_answer" and "protocol" in answer.error
    answer, _ = run(env, [tool("pwd"), ModelError("server went away")])
    assert answer.stop == "error" and "server went away" in answer.error
    assert [s.kind for s in answer.trace] == ["model", "tool"]


def test_commands_run_off_the_event_loop_until_the_episode_ends(env: FilesEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, float]] = []
    run_command = Terminal.run

    def spy(self: Terminal, command: str, *, timeout: float | None = None) -> Any:
        assert self.deadline is not None
        calls.append((threading.get_ident(), self.deadline - time.monotonic()))
        return run_command(self, command, timeout=timeout)

    monkeypatch.setattr(Terminal, "run", spy)
    answer, _ = run(env, [tool("pwd"), tool("ls"), "<answer>done</answer>"], Budget(max_seconds=30))
    assert answer.stop == "answered" and len(calls) == 2
    assert all(thread != threading.get_ident() for thread, _ in calls)  # the event loop stays free
    assert all(0 < left <= 30 for _, left in calls)  # the episode's wall clock is the commands' deadline


def test_files_named_in_an_answer_that_cannot_exist_are_dropped(env: FilesEnv) -> None:
    answer, _ = run(env, [f"<answer>no</answer><files>{'a' * 300}; x\x00y</files>"])
    assert answer.stop == "answered" and answer.files == []
