"""Agents: ``await agent.solve(task, env, model, budget) -> Answer``; built-ins registered under kind ``agent``."""

from hippocamp.agents.base import Agent, Answer, Budget, BudgetExceeded, EvidenceItem, Meter, Step, Task

__all__ = ["Agent", "Answer", "Budget", "BudgetExceeded", "EvidenceItem", "Meter", "Step", "Task"]
