"""What flows through the model layer: requests, tool calls, usage, generations (plain data)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hippocamp.schema.run import Usage  # a file format: episodes and score lines carry it

__all__ = ["ChatRequest", "Generation", "Message", "ToolCall", "Usage"]

#: An OpenAI-style chat message: {"role": "system"|"user"|"assistant"|"tool", "content": ..., ...}
Message = dict[str, Any]


class ToolCall(BaseModel):
    """A call the model asks for: a tool name and its JSON arguments."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    def to_message(self) -> dict[str, Any]:
        """The OpenAI ``tool_calls`` entry of an assistant message."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments, ensure_ascii=False)},
        }


class ChatRequest(BaseModel):
    """One chat completion request, in canonical form (its hash keys the cache)."""

    model_config = ConfigDict(frozen=True)

    model: str
    messages: list[Message]
    tools: list[dict[str, Any]] | None = None
    #: a JSON schema the output must follow ({} for "any JSON object"), or None for free text
    json_schema: dict[str, Any] | None = None
    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int | None = None
    stop: list[str] | None = None

    def cache_key(self) -> str:
        """sha256 of the canonical request: everything that changes the output, nothing else."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class Generation(BaseModel):
    """A model's answer: text and/or tool calls, usage, latency, cost, and the parsed object if asked."""

    model: str
    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    finish_reason: str | None = None
    cached: bool = False
    #: the validated object when a response format was asked for (a pydantic model or a dict)
    parsed: Any = Field(default=None, exclude=True)
    #: the attempts it took (1 = first try) and the repair retries of structured output
    attempts: int = 1
