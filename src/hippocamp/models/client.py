"""`Model`: the one `ChatModel`, wrapping any `Backend` with what every caller needs.

Per call: the request cache (on by default at temperature 0), bounded retries with exponential
backoff and jitter on transient failures, a per-model concurrency limit, a per-call timeout, the
JSON-action protocol for backends without native tools, structured output with one repair retry,
and usage and cost accounting. Failures surface as `ModelError` with their cause.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocamp.models.base import Backend, ResponseFormat
from hippocamp.models.cache import RequestCache
from hippocamp.models.errors import ModelError, ModelOutputError, TransientModelError
from hippocamp.models.pricing import cost_usd
from hippocamp.models.structured import OutputFormat, instruction_for
from hippocamp.models.toolcalls import parse_tool_calls, render_messages, tools_instruction, with_system
from hippocamp.models.types import ChatRequest, Generation, Message, Usage
from hippocamp.redact import redact_text

__all__ = ["Model", "ModelSettings", "RetryPolicy", "run_sync", "set_gate_provider"]


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` tries in all; the n-th retry waits ``min(max_delay, base_delay * 2**(n-1))`` plus
    up to ``jitter`` of that again, at random."""

    attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.5

    def delay(self, retry: int, rng: random.Random) -> float:
        wait = min(self.max_delay, self.base_delay * 2 ** (retry - 1))
        return wait + rng.uniform(0, self.jitter * wait)


@dataclass(frozen=True)
class ModelSettings:
    """How a model is called. ``cache``: None = on for temperature 0 only; True/False force it."""

    timeout: float | None = 300.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    #: HIPPOCAMP_NO_CACHE=1 turns the cache off wherever a setting does not say otherwise
    cache: bool | None = field(default_factory=lambda: False if os.environ.get("HIPPOCAMP_NO_CACHE") else None)
    cache_path: Path | None = None
    max_concurrency: int | None = None


Sleep = Callable[[float], Awaitable[Any]]
_SEMAPHORES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, int], asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


#: gives a rebuilt `Model` its gate (see `set_gate_provider`)
_GATE_PROVIDER: Callable[[Model], Callable[[], Any] | None] | None = None


def set_gate_provider(provider: Callable[[Model], Callable[[], Any] | None] | None) -> None:
    """Where models rebuilt in this process (unpickled on a cluster's worker) take their concurrency
    from: ``provider(model)`` returns a factory of async context managers held around each backend call
    (a cluster-wide limit), or None for the process's own semaphore."""
    global _GATE_PROVIDER
    _GATE_PROVIDER = provider


def _rebuild_model(spec: str, settings: ModelSettings | None, options: dict[str, Any]) -> Model:
    """A `Model` unpickled: opened again from its model string (on a cluster's worker)."""
    from hippocamp.models import get_model

    model = get_model(spec, settings, **options)
    if _GATE_PROVIDER is not None:
        model.gate = _GATE_PROVIDER(model)
    return model


class Model:
    """A chat model: ``await model.generate(messages, ...)`` -> `Generation`.

    A model opened from a model string (`hippocamp.models.get_model`) pickles as that string, its options
    and settings: a cluster's worker opens its own (its client, cache and usage are its own). One built
    in code from a backend object cannot be pickled."""

    #: (model string, options) it was opened with; set by `get_model`
    recipe: tuple[str, dict[str, Any]] | None = None
    #: a factory of async context managers held around each backend call instead of this process's
    #: per-model semaphore (a cluster-wide gate; see `set_gate_provider`)
    gate: Callable[[], Any] | None = None

    def __init__(
        self,
        backend: Backend,
        provider: str,
        name: str,
        settings: ModelSettings | None = None,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
    ):
        self.backend = backend
        self.provider = provider
        self.name = name
        #: the backend's id with any credential blanked (a key in a model URL): it is written to caches,
        #: episodes, scores and error messages
        self.id = redact_text(backend.id)
        self.settings = settings or ModelSettings()
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._usage = Usage(cost_usd=0.0)
        self._cache: RequestCache | None = None

    def __repr__(self) -> str:
        return f"Model({self.id!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        if self.recipe is None:
            raise TypeError(
                f"model {self.id} was built in code, not opened from a model string: it cannot be sent to a "
                "cluster's workers (open it with hippocamp.models.get_model)"
            )
        spec, options = self.recipe
        return (_rebuild_model, (spec, self.settings, options))

    @property
    def usage(self) -> Usage:
        """Tokens, calls and cost of every call made through this model so far."""
        return self._usage

    @property
    def max_concurrency(self) -> int:
        return self.settings.max_concurrency or self.backend.max_concurrency

    def _semaphore(self) -> asyncio.Semaphore:
        """The concurrency limit of this model id, shared by every `Model` of it in this event loop."""
        per_loop = _SEMAPHORES.setdefault(asyncio.get_running_loop(), {})
        key = (self.id, self.max_concurrency)
        if key not in per_loop:
            per_loop[key] = asyncio.Semaphore(self.max_concurrency)
        return per_loop[key]

    def _request_cache(self) -> RequestCache:
        if self._cache is None:
            self._cache = RequestCache.open(self.settings.cache_path)
        return self._cache

    async def generate(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        response_format: ResponseFormat | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
        cache: bool | None = None,
    ) -> Generation:
        """One answer. With ``response_format`` the answer's ``parsed`` holds the validated object
        (or `ModelOutputError` is raised after one repair retry); with ``tools`` the answer may hold
        ``tool_calls`` instead of text."""
        if not messages:
            raise ValueError("generate needs at least one message")
        fmt = OutputFormat(response_format) if response_format is not None else None
        sent = [dict(m) for m in messages]
        native_tools = list(tools) if tools and self.backend.supports_tools else None
        if tools and not self.backend.supports_tools:
            sent = with_system(render_messages(sent), tools_instruction(tools))
        schema = None
        if fmt is not None:
            if self.backend.supports_json_schema:
                schema = fmt.schema
            else:
                sent = with_system(sent, instruction_for(fmt))
        request = ChatRequest(
            model=self.id,
            messages=sent,
            tools=native_tools,
            json_schema=schema,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=seed,
            stop=list(stop) if stop else None,
        )
        use_cache = cache if cache is not None else self.settings.cache
        if use_cache is None:  # the default: temperature 0 answers are reused, unless scripted
            use_cache = temperature == 0 and getattr(self.backend, "cacheable", True)
        gen = await self._call(request, use_cache)
        if tools and not self.backend.supports_tools:
            calls = parse_tool_calls(gen.text, tools)
            if calls:
                gen = gen.model_copy(update={"tool_calls": calls, "text": ""})
        if fmt is not None:
            gen = await self._parse_or_repair(request, gen, fmt, use_cache)
        return gen

    async def _parse_or_repair(
        self, request: ChatRequest, gen: Generation, fmt: OutputFormat, cache: bool
    ) -> Generation:
        try:
            return gen.model_copy(update={"parsed": fmt.parse(gen.text)})
        except ValueError as first:
            repair = request.model_copy(
                update={
                    "messages": [
                        *request.messages,
                        {"role": "assistant", "content": gen.text},
                        {
                            "role": "user",
                            "content": f"That reply was not valid: {first}. "
                            "Reply again with only the corrected JSON object.",
                        },
                    ]
                }
            )
            second = await self._call(repair, cache)
            merged_usage = gen.usage + second.usage
            try:
                parsed = fmt.parse(second.text)
            except ValueError as exc:
                raise ModelOutputError(
                    f"no valid {fmt.name} after one repair retry: {exc}", second.text, self.id
                ) from None
            return second.model_copy(
                update={"parsed": parsed, "usage": merged_usage, "attempts": gen.attempts + second.attempts}
            )

    async def _call(self, request: ChatRequest, use_cache: bool) -> Generation:
        """One backend call through the cache, the concurrency limit, the timeout and the retries."""
        key = request.cache_key() if use_cache else None
        if key is not None:
            hit = self._request_cache().get(key)
            if hit is not None:
                usage = Usage(calls=1, cached_calls=1, cost_usd=0.0)
                self._usage = self._usage + usage
                return hit.model_copy(update={"cached": True, "latency_s": 0.0, "usage": usage})
        policy = self.settings.retry
        last: Exception | None = None
        for attempt in range(1, policy.attempts + 1):
            if attempt > 1:
                await self._sleep(policy.delay(attempt - 1, self._rng))
            start = time.perf_counter()
            try:
                async with self.gate() if self.gate is not None else self._semaphore():
                    gen = await asyncio.wait_for(self.backend.complete(request), self.settings.timeout)
            except (TransientModelError, TimeoutError) as exc:
                last = exc
                continue
            except ModelError:
                raise
            except Exception as exc:  # a provider bug or an unmapped library error: say which model and why
                raise ModelError(f"{type(exc).__name__}: {exc}", self.id) from exc
            gen = self._account(gen, time.perf_counter() - start, attempt)
            if key is not None:
                self._request_cache().put(key, gen)
            return gen
        cause = "timed out" if isinstance(last, TimeoutError) else str(last)
        raise ModelError(f"failed after {policy.attempts} attempts; last error: {cause}", self.id) from last

    def _account(self, gen: Generation, latency: float, attempt: int) -> Generation:
        usage = gen.usage.model_copy(
            update={
                "calls": 1,
                "cost_usd": cost_usd(self.provider, self.name, gen.usage.input_tokens, gen.usage.output_tokens),
            }
        )
        self._usage = self._usage + usage
        return gen.model_copy(update={"usage": usage, "latency_s": latency, "attempts": attempt, "model": self.id})

    async def aclose(self) -> None:
        await self.backend.aclose()


def run_sync(coro: Awaitable[Any]) -> Any:
    """Run a coroutine from synchronous code (the CLI)."""
    return asyncio.run(coro)  # type: ignore[arg-type]
