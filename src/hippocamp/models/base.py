"""The two protocols of the model layer.

* `Backend`: what a provider implements. One async call, ``complete(request) -> Generation``, that
  talks to one model and maps its failures to `TransientModelError` (worth retrying) or
  `ModelError`. It says what it can do natively (tools, constrained JSON) and how many requests it
  takes at once.
* `ChatModel`: what every caller (agents, judges, generators) uses: ``generate(...)``. The one
  implementation, `hippocamp.models.client.Model`, wraps any backend with the request cache,
  retries with backoff, a concurrency limit, timeouts, structured output with one repair retry, the
  JSON-action fallback for tools, and usage and cost accounting.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from hippocamp.models.types import ChatRequest, Generation, Message, Usage

__all__ = ["Backend", "ChatModel", "ResponseFormat"]

#: a pydantic model class, a JSON schema, or "json" for any JSON object
ResponseFormat = type[BaseModel] | dict[str, Any] | str


@runtime_checkable
class Backend(Protocol):
    #: the model id as reported in results, e.g. "openai-compatible:qwen@http://127.0.0.1:8080/v1"
    id: str
    #: the backend passes ``tools`` to the model natively (else the client renders a JSON-action protocol)
    supports_tools: bool
    #: the backend can constrain decoding to a JSON schema (else the client instructs and parses)
    supports_json_schema: bool
    #: how many requests may run at once against this backend
    max_concurrency: int
    # optional: ``cacheable = False`` keeps the client from caching by default (scripted backends)

    async def complete(self, request: ChatRequest) -> Generation: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class ChatModel(Protocol):
    id: str

    async def generate(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        response_format: ResponseFormat | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
    ) -> Generation: ...

    @property
    def usage(self) -> Usage: ...
