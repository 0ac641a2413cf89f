"""What every environment is (`Environment`, `LogsEnvironment`) and what its tools answer (`Observation`).

Agents are written against these protocols, never by probing an environment for attributes: every
environment says what it holds and whose it is (``corpus``, ``corpus_long``, ``owner``), lists its tools
as OpenAI function schemas, answers ``call(name, arguments)``, searches, and opens a terminal over the
same files; one that can show all its logs at once (the full-context regime) is a `LogsEnvironment`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["Environment", "LogsEnvironment", "Observation"]


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


@runtime_checkable
class Environment(Protocol):
    #: how prompts name what it holds ("the person's files", "Caroline's messages and calendar")
    corpus: str
    corpus_long: str
    #: whose it is, when known ("the user" of a question)
    owner: str | None
    #: its tools as OpenAI function schemas
    tools: list[dict[str, Any]]
    #: tool calls answered so far
    calls: int

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Observation: ...

    def search(self, query: str, k: int = 8, modality: str | None = None, file_type: str | None = None,
               path_glob: str | None = None, after: str | None = None,
               before: str | None = None) -> Observation: ...  # fmt: skip

    def terminal(self, **options: Any) -> Any:
        """A HippoCamp terminal over the same files (`hippocamp.envs.terminal.Terminal`)."""
        ...


@runtime_checkable
class LogsEnvironment(Environment, Protocol):
    def logs(self) -> list[Any]:
        """Every item it may show (segments), in time order."""
        ...
