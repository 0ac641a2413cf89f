"""Agents: ``await agent.solve(task, env, model, budget) -> Answer``; built-ins registered under kind ``agent``."""

from __future__ import annotations

from typing import Any

from hippocamp.agents.base import Agent, Answer, Budget, BudgetExceeded, EvidenceItem, Meter, Step, Task

__all__ = ["Agent", "Answer", "Budget", "BudgetExceeded", "EvidenceItem", "Meter", "Step", "Task", "make_agent"]


def make_agent(spec: str) -> Any:
    """An agent from its name, optionally with an argument after the first colon:
    ``evidence``, ``react``, ``external:cmd:python my_agent.py``, ``external:http://127.0.0.1:8000/solve``."""
    from hippocamp.registry import get

    name, _, arg = spec.strip().partition(":")
    cls = get("agent", name)
    return cls(arg) if arg else cls()
