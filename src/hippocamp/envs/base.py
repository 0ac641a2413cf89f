"""What every environment tool answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Observation"]


@dataclass
class Observation:
    """What an agent sees after a tool call or a command line: ``text`` for the model; ``data`` for
    the agent (hits and segments it can cite); ``escaped`` when a path tried to leave the profile."""

    text: str
    ok: bool = True
    error: str | None = None
    truncated: bool = False
    escaped: bool = False
    data: list[dict[str, Any]] = field(default_factory=list)
