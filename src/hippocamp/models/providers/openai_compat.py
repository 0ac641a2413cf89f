"""``openai:NAME`` and ``openai-compatible:NAME@BASE_URL``, through the official ``openai`` SDK.

Works with OpenAI and with servers that speak its chat API (vLLM, llama.cpp's server, Ollama, hosted
gateways). Keys come from the environment (``OPENAI_API_KEY``; ``HIPPOCAMP_API_KEY`` first for
compatible servers) and are never written anywhere. Servers differ in what they accept: structured
output is tried as ``json_schema``, then ``json_object`` with a schema (llama.cpp), then by
instruction; tools natively, then by the JSON-action protocol. What a server refused is remembered
for the rest of the process. The SDK's own retries are off: the client retries, with backoff.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from hippocamp.models.errors import ModelError, ModelNotAvailableError, TransientModelError
from hippocamp.models.structured import OutputFormat, instruction_for
from hippocamp.models.toolcalls import parse_tool_calls, render_messages, tools_instruction, with_system
from hippocamp.models.types import ChatRequest, Generation, ToolCall, Usage
from hippocamp.registry import register

__all__ = ["OpenAIBackend", "openai_compatible_provider", "openai_provider"]

JSON_MODES = ("json_schema", "json_object", "instruct")


class OpenAIBackend:
    supports_tools = True
    supports_json_schema = True

    def __init__(
        self,
        name: str,
        id: str,
        base_url: str | None = None,
        api_key: str | None = None,
        max_concurrency: int = 8,
        json_mode: str = "json_schema",
        native_tools: bool = True,
    ):
        try:
            from openai import AsyncOpenAI
        except ImportError:  # pragma: no cover - openai is a core dependency
            raise ModelNotAvailableError("the openai package is not installed (pip install openai)", id) from None
        if json_mode not in JSON_MODES:
            raise ValueError(f"json_mode must be one of {JSON_MODES}, got {json_mode!r}")
        self.name, self.id = name, id
        self.max_concurrency = max_concurrency
        self.json_mode = json_mode
        self.native_tools = native_tools
        self._client = AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=None)

    async def complete(self, request: ChatRequest) -> Generation:
        import openai

        while True:
            kwargs, fallback_tools = self._kwargs(request)
            try:
                response = await self._client.chat.completions.create(**kwargs)
            except (openai.BadRequestError, openai.UnprocessableEntityError, openai.NotFoundError) as exc:
                if self._downgrade(request, exc):
                    continue
                raise ModelError(f"the server rejected the request: {_message(exc)}", self.id) from None
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                raise TransientModelError(f"{type(exc).__name__}: {_message(exc)}", self.id) from None
            except openai.AuthenticationError as exc:
                raise ModelError(
                    f"authentication failed ({_message(exc)}); check the API key variable", self.id
                ) from None
            except openai.APIStatusError as exc:
                # some servers (llama.cpp's) answer 500 when they reject a field: fall back, do not retry
                if exc.status_code >= 500 and _is_rejection(exc) and self._downgrade(request, exc):
                    continue
                if exc.status_code == 429 or exc.status_code >= 500:
                    raise TransientModelError(f"HTTP {exc.status_code}: {_message(exc)}", self.id) from None
                raise ModelError(f"HTTP {exc.status_code}: {_message(exc)}", self.id) from None
            return self._generation(response, fallback_tools)

    def _kwargs(self, request: ChatRequest) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
        messages = request.messages
        fallback_tools = None
        kwargs: dict[str, Any] = {"model": self.name, "temperature": request.temperature}
        if request.tools:
            if self.native_tools:
                kwargs["tools"] = request.tools
            else:
                fallback_tools = request.tools
                messages = with_system(render_messages(messages), tools_instruction(request.tools))
        if request.json_schema is not None:
            fmt = OutputFormat(request.json_schema)
            if self.json_mode == "json_schema":
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": _schema_name(fmt.name), "schema": request.json_schema},
                }
            elif self.json_mode == "json_object":
                kwargs["response_format"] = {"type": "json_object", "schema": request.json_schema}
            else:
                messages = with_system(messages, instruction_for(fmt))
        kwargs["messages"] = messages
        if request.max_tokens is not None:
            kwargs["max_tokens"] = request.max_tokens
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.stop:
            kwargs["stop"] = request.stop
        return kwargs, fallback_tools

    def _downgrade(self, request: ChatRequest, exc: Exception) -> bool:
        """After a 4xx, fall back to a feature the server may lack; False when nothing is left to try, or
        when the request failed for a reason no feature explains (a prompt over the context window must
        not cost every later request its JSON mode)."""
        text = _message(exc).lower()
        if _CONTEXT_OVERFLOW.search(text):
            return False
        if request.json_schema is not None and self.json_mode != "instruct":
            if request.tools and self.native_tools and "tool" in text and "response_format" not in text:
                self.native_tools = False
            else:
                self.json_mode = JSON_MODES[JSON_MODES.index(self.json_mode) + 1]
            return True
        if request.tools and self.native_tools:
            self.native_tools = False
            return True
        return False

    def _generation(self, response: Any, fallback_tools: list[dict[str, Any]] | None) -> Generation:
        if not response.choices:
            raise TransientModelError("the server answered with no choices", self.id)
        choice = response.choices[0]
        message = choice.message
        text = message.content or ""
        calls = [_tool_call(c) for c in (message.tool_calls or [])]
        if fallback_tools and not calls:
            calls = parse_tool_calls(text, fallback_tools)
            if calls:
                text = ""
        usage = response.usage
        return Generation(
            model=self.id,
            text=text,
            tool_calls=calls,
            usage=Usage(
                input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                output_tokens=getattr(usage, "completion_tokens", 0) or 0,
            ),
            finish_reason=choice.finish_reason,
        )

    async def aclose(self) -> None:
        await self._client.close()


def _tool_call(call: Any) -> ToolCall:
    raw = call.function.arguments or "{}"
    try:
        args = json.loads(raw)
    except json.JSONDecodeError:
        args = {"_raw": raw}
    return ToolCall(
        id=call.id or "call_0", name=call.function.name, arguments=args if isinstance(args, dict) else {"_raw": args}
    )


_CONTEXT_OVERFLOW = re.compile(
    r"context (?:length|window|size)|maximum context|too many tokens|exceeds? (?:the )?(?:context|n_ctx)|n_ctx"
)


def _is_rejection(exc: Exception) -> bool:
    text = _message(exc).lower()
    return any(marker in text for marker in ("validation error", "input should be", "unsupported", "not supported"))


def _schema_name(name: str) -> str:
    clean = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in name)
    return clean[:64] or "response"


def _message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
        if isinstance(body.get("detail"), str | list):
            return str(body["detail"])[:300]
    return str(exc)[:300]


@register("provider", "openai")
def openai_provider(name: str, max_concurrency: int = 8, **options: Any) -> OpenAIBackend:
    """``openai:NAME``; the key from ``OPENAI_API_KEY``, the endpoint from ``OPENAI_BASE_URL`` if set."""
    if not name:
        raise ValueError("openai needs a model name: openai:NAME (e.g. openai:gpt-4o-mini)")
    key = os.environ.get("OPENAI_API_KEY")
    if not key:
        raise ModelNotAvailableError("no API key: set OPENAI_API_KEY", f"openai:{name}")
    return OpenAIBackend(
        name,
        id=f"openai:{name}",
        base_url=os.environ.get("OPENAI_BASE_URL") or None,
        api_key=key,
        max_concurrency=max_concurrency,
        **options,
    )


@register("provider", "openai-compatible")
def openai_compatible_provider(spec: str, max_concurrency: int = 8, **options: Any) -> OpenAIBackend:
    """``openai-compatible:NAME@BASE_URL``; the key from ``HIPPOCAMP_API_KEY`` or ``OPENAI_API_KEY``
    (many local servers need none)."""
    name, sep, url = spec.partition("@")
    if not sep or not name or not url.startswith(("http://", "https://")):
        raise ValueError(f"expected openai-compatible:NAME@http(s)://HOST:PORT/v1, got openai-compatible:{spec}")
    key = os.environ.get("HIPPOCAMP_API_KEY") or os.environ.get("OPENAI_API_KEY") or "no-key-needed"
    return OpenAIBackend(
        name,
        id=f"openai-compatible:{name}@{url}",
        base_url=url,
        api_key=key,
        max_concurrency=max_concurrency,
        **options,
    )
