"""Models: one `ChatModel` interface over OpenAI-compatible servers, embedded GGUF models and a mock.

``get_model("openai:gpt-4o-mini")``, ``get_model("openai-compatible:qwen@http://127.0.0.1:8080/v1")``,
``get_model("local:smollm2")``, ``get_model("local:/path/model.gguf")``, ``get_model("mock", outputs=[...])``.
Providers are found by name in the registry (kind ``provider``), built-ins and plug-ins alike.
"""

from __future__ import annotations

from typing import Any

from hippocamp import registry
from hippocamp.models.base import Backend, ChatModel, ResponseFormat
from hippocamp.models.client import Model, ModelSettings, RetryPolicy, run_sync
from hippocamp.models.errors import ModelError, ModelNotAvailableError, ModelOutputError, TransientModelError
from hippocamp.models.types import ChatRequest, Generation, Message, ToolCall, Usage

__all__ = [
    "Backend",
    "ChatModel",
    "ChatRequest",
    "Generation",
    "Message",
    "Model",
    "ModelError",
    "ModelNotAvailableError",
    "ModelOutputError",
    "ModelSettings",
    "ResponseFormat",
    "RetryPolicy",
    "ToolCall",
    "TransientModelError",
    "Usage",
    "cpus_per_call",
    "get_model",
    "parse_model_string",
    "run_sync",
]


def parse_model_string(spec: str) -> tuple[str, str]:
    """``"openai:gpt-4o"`` -> ``("openai", "gpt-4o")``; ``"mock"`` -> ``("mock", "")``."""
    spec = spec.strip()
    if not spec:
        raise ValueError("empty model string; e.g. local:smollm2, openai:gpt-4o-mini, mock")
    provider, _, rest = spec.partition(":")
    return provider, rest


def get_model(spec: str, settings: ModelSettings | None = None, **options: Any) -> Model:
    """A ready `Model` for a model string. ``options`` go to the provider (e.g. ``outputs`` for the
    mock, ``threads``/``n_ctx`` for local models, ``max_concurrency``)."""
    provider, name = parse_model_string(spec)
    try:
        factory = registry.get("provider", provider)
    except registry.UnknownPluginError as exc:
        raise ModelNotAvailableError(
            f"unknown model provider {provider!r} in {spec!r}; known: {', '.join(exc.known)}"
        ) from None
    backend = factory(name, **options)
    model = Model(backend, provider=provider, name=name, settings=settings)
    model.recipe = (spec, dict(options))
    return model


def cpus_per_call(value: Any) -> float:
    """CPUs a cluster reserves for work that calls the models held by ``value`` (a `Model`, a judge, a
    panel: models are looked for in its attributes): a whole one when one of them is embedded (each
    worker runs its own copy), a quarter when all sit behind servers (the work mostly waits on them, so
    four overlap per CPU, as they do under asyncio in one process)."""
    seen: set[int] = set()

    def embedded(obj: Any, depth: int) -> bool:
        if obj is None or depth > 4 or id(obj) in seen:
            return False
        seen.add(id(obj))
        if isinstance(obj, Model):
            return obj.provider == "local"
        if isinstance(obj, list | tuple):
            return any(embedded(o, depth + 1) for o in obj)
        attrs = getattr(obj, "__dict__", None)
        return isinstance(attrs, dict) and any(embedded(o, depth + 1) for o in attrs.values())

    return 1.0 if embedded(value, 0) else 0.25
