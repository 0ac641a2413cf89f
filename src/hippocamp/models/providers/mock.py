"""``mock``: a scripted provider that is a real provider, for tests and dry runs.

Outputs come from a list (in order), a callable ``(request) -> output``, or a dict keyed by the last
user message (``"*"`` as the fallback). An output is a string, a dict ``{"text": ..., "tool_calls":
[{"name": ..., "arguments": {...}}], "usage": {...}}``, a `Generation`, or an exception instance to
raise (a `TransientModelError` exercises the client's retries). With no script the mock echoes the
last user message, and for a JSON schema it answers with the smallest object that fits, so that any
layer can be driven end to end without a model.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

from hippocamp.models.errors import ModelError
from hippocamp.models.types import ChatRequest, Generation, ToolCall, Usage
from hippocamp.registry import register

__all__ = ["MockBackend", "mock_provider"]

Output = str | dict[str, Any] | Generation | BaseException
Script = Sequence[Output] | Callable[[ChatRequest], Output] | dict[str, Output] | None


class MockBackend:
    supports_tools = True
    supports_json_schema = True
    #: scripted outputs are not a function of the request: not cached unless asked (cache=True)
    cacheable = False

    def __init__(
        self,
        outputs: Script = None,
        name: str = "mock",
        supports_tools: bool = True,
        supports_json_schema: bool = True,
        max_concurrency: int = 8,
        delay: float = 0.0,
    ):
        self.id = f"mock:{name}" if name != "mock" else "mock"
        self.supports_tools = supports_tools
        self.supports_json_schema = supports_json_schema
        self.max_concurrency = max_concurrency
        #: seconds each call takes (a dry run that behaves like a model's latency, for benchmarks)
        self.delay = delay
        self._script = outputs
        self._position = 0
        #: every request received, in order (tests inspect what was sent)
        self.requests: list[ChatRequest] = []

    def enqueue(self, *outputs: Output) -> None:
        """Append outputs to a list script."""
        if self._script is None:
            self._script = []
        if not isinstance(self._script, list):
            raise TypeError("enqueue works on a list script")
        self._script.extend(outputs)

    def _next(self, request: ChatRequest) -> Output:
        script = self._script
        if script is None:
            return _default_output(request)
        if callable(script):
            return script(request)
        if isinstance(script, dict):
            prompt = _last_user(request)
            if prompt in script:
                return script[prompt]
            if "*" in script:
                return script["*"]
            raise ModelError(f"mock has no output for prompt {prompt[:80]!r}", self.id)
        if self._position >= len(script):
            raise ModelError(f"mock script exhausted after {len(script)} outputs", self.id)
        out = script[self._position]
        self._position += 1
        return out

    async def complete(self, request: ChatRequest) -> Generation:
        self.requests.append(request)
        if self.delay > 0:
            await asyncio.sleep(self.delay)
        out = self._next(request)
        if isinstance(out, BaseException):
            raise out
        if isinstance(out, Generation):
            return out
        if isinstance(out, str):
            out = {"text": out}
        calls = [
            ToolCall(id=c.get("id", f"call_{i}"), name=c["name"], arguments=c.get("arguments", {}))
            for i, c in enumerate(out.get("tool_calls", []))
        ]
        text = out.get("text", "")
        if not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False)
        usage = Usage(**out["usage"]) if "usage" in out else _count(request, text)
        return Generation(
            model=self.id,
            text=text,
            tool_calls=calls,
            usage=usage,
            finish_reason="tool_calls" if calls else "stop",
        )

    async def aclose(self) -> None:
        return None


def _last_user(request: ChatRequest) -> str:
    for m in reversed(request.messages):
        if m.get("role") == "user":
            content = m.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def _count(request: ChatRequest, text: str) -> Usage:
    words_in = sum(len(str(m.get("content") or "").split()) for m in request.messages)
    return Usage(input_tokens=words_in, output_tokens=len(text.split()))


def _default_output(request: ChatRequest) -> Output:
    if request.json_schema is not None:
        return {"text": json.dumps(minimal_instance(request.json_schema, request.json_schema))}
    return {"text": f"mock: {_last_user(request)}"}


def minimal_instance(schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """The smallest value that satisfies a JSON schema: required keys only, first enum value, zeros."""
    if "$ref" in schema:
        ref = schema["$ref"].split("/")[-1]
        return minimal_instance(root.get("$defs", {}).get(ref, {}), root)
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return minimal_instance(schema[key][0], root)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: minimal_instance(props.get(k, {}), root) for k in schema.get("required", [])}
    return {"array": [], "string": "", "integer": 0, "number": 0, "boolean": False, "null": None}.get(kind)


@register("provider", "mock")
def mock_provider(name: str = "", **options: Any) -> MockBackend:
    """``mock`` or ``mock:NAME``; options: outputs, supports_tools, supports_json_schema, max_concurrency,
    delay (seconds per call)."""
    return MockBackend(name=name or "mock", **options)
