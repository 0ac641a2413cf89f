"""``local:NAME`` and ``local:/path/to/model.gguf``: GGUF models run in-process by llama-cpp-python.

Each loaded model lives in one worker thread (llama.cpp contexts are not thread-safe), so calls queue
there while the event loop stays free. The GGUF's own chat template formats the messages. Decoding
is constrained to the JSON schema when one is asked for (llama.cpp grammars). Tools go through the
client's JSON-action protocol. The thread count is a setting: ``threads=`` or
``HIPPOCAMP_LLAMA_THREADS`` (default `DEFAULT_THREADS`, measured in bench/models.py).
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from hippocamp.models.errors import ModelError, ModelNotAvailableError
from hippocamp.models.local_models import find_model
from hippocamp.models.types import ChatRequest, Generation, Usage
from hippocamp.registry import register

__all__ = ["DEFAULT_THREADS", "LlamaBackend", "local_provider", "thread_count"]

#: llama.cpp threads when nothing says otherwise: 2 generate fastest on a quiet 2-core machine
#: (MODELS.md); HIPPOCAMP_LLAMA_THREADS=1 is the safe choice when the cores are contended.
DEFAULT_THREADS = 2
DEFAULT_MAX_TOKENS = 1024


def thread_count(explicit: int | None = None) -> int:
    if explicit is not None:
        return max(1, int(explicit))
    env = os.environ.get("HIPPOCAMP_LLAMA_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(f"HIPPOCAMP_LLAMA_THREADS must be a whole number, got {env!r}") from None
    return max(1, min(DEFAULT_THREADS, os.cpu_count() or 1))


class _Loaded:
    """One llama.cpp model and the single thread that may touch it."""

    def __init__(self, path: Path, n_ctx: int, threads: int):
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ModelNotAvailableError(
                "llama-cpp-python is not installed: pip install 'hippocamp[local]'", f"local:{path}"
            ) from None
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"llama-{path.stem[:20]}")
        self.llm = self.executor.submit(
            Llama,
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
        ).result()


_loaded: dict[tuple[str, int, int], _Loaded] = {}
_load_lock = threading.Lock()


@atexit.register
def _close_all() -> None:
    """Free llama.cpp models before interpreter teardown (their finalizers fail once modules are gone)."""
    with _load_lock:
        for loaded in _loaded.values():
            loaded.executor.shutdown(wait=True)  # no call is running any more
            loaded.llm.close()
        _loaded.clear()


def _load(path: Path, n_ctx: int, threads: int) -> _Loaded:
    key = (str(path.resolve()), n_ctx, threads)
    with _load_lock:
        if key not in _loaded:
            _loaded[key] = _Loaded(path, n_ctx, threads)
        return _loaded[key]


class LlamaBackend:
    supports_tools = False
    supports_json_schema = True
    max_concurrency = 1

    def __init__(self, path: Path, id: str, n_ctx: int = 4096, threads: int | None = None):
        self.path, self.id = path, id
        self.n_ctx = n_ctx
        self.threads = thread_count(threads)

    def _model(self) -> _Loaded:
        return _load(self.path, self.n_ctx, self.threads)

    async def complete(self, request: ChatRequest) -> Generation:
        loaded = self._model()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(loaded.executor, self._complete, loaded, request)

    def _complete(self, loaded: _Loaded, request: ChatRequest) -> Generation:
        kwargs: dict[str, Any] = {
            "messages": [{"role": m["role"], "content": m.get("content") or ""} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
        }
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.stop:
            kwargs["stop"] = request.stop
        if request.json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": request.json_schema}
        try:
            out = loaded.llm.create_chat_completion(**kwargs)
        except ValueError as exc:  # e.g. the prompt does not fit the context window
            raise ModelError(f"llama.cpp refused the request: {exc}", self.id) from None
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Generation(
            model=self.id,
            text=choice["message"].get("content") or "",
            usage=Usage(input_tokens=usage.get("prompt_tokens", 0), output_tokens=usage.get("completion_tokens", 0)),
            finish_reason=choice.get("finish_reason"),
        )

    async def aclose(self) -> None:
        return None  # loaded models are shared by the process


@register("provider", "local")
def local_provider(name: str, n_ctx: int = 4096, threads: int | None = None, **_: Any) -> LlamaBackend:
    """``local:smollm2``, ``local:qwen2.5-coder-1.5b`` (catalog, sha256-verified) or ``local:/path/x.gguf``."""
    if not name:
        raise ValueError("local needs a model: local:smollm2, local:qwen2.5-coder-1.5b or local:/path/model.gguf")
    path, _spec = find_model(name)
    return LlamaBackend(path, id=f"local:{name}", n_ctx=n_ctx, threads=threads)
