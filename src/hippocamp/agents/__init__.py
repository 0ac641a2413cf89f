"""Agents: ``await agent.solve(task, env, model, budget) -> Answer``; built-ins registered under kind ``agent``."""

from __future__ import annotations

from hippocamp.agents.base import Agent, Answer, Budget, BudgetExceeded, EvidenceItem, Meter, Step, Task
from hippocamp.agents.factory import agent_factory, make_agent

__all__ = [
    "Agent",
    "Answer",
    "Budget",
    "BudgetExceeded",
    "EvidenceItem",
    "Meter",
    "Step",
    "Task",
    "agent_factory",
    "make_agent",
]
