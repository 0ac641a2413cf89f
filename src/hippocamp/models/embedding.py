"""Text embeddings: one `Embedder` protocol, providers registered under kind ``embedder``.

An embedder turns texts into L2-normalized float32 vectors. Models with a query/passage convention
(e5: ``"query: "`` / ``"passage: "``) apply it themselves: callers say which side a text is on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

__all__ = ["DEFAULT_EMBEDDER", "Embedder", "Side", "default_embedder_name", "get_embedder", "normalize_rows"]

Side = Literal["query", "passage"]


@runtime_checkable
class Embedder(Protocol):
    """Embeds texts in batches; vectors are float32, one row per text, L2-normalized."""

    #: a stable id of the model and its weights (e.g. ``"minilm-l6-int8@sha256:ab12..."``), used in caches
    id: str
    dim: int

    def embed(self, texts: Sequence[str], side: Side = "passage", batch_size: int = 64) -> np.ndarray: ...


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


#: the embedder used when none is named (chosen by measurement; see docs/architecture.md)
DEFAULT_EMBEDDER = "minilm-l6-int8"
_instances: dict[str, Embedder] = {}


def default_embedder_name() -> str:
    """``$HIPPOCAMP_EMBEDDER`` or `DEFAULT_EMBEDDER`."""
    import os

    return os.environ.get("HIPPOCAMP_EMBEDDER") or DEFAULT_EMBEDDER


def get_embedder(name: str | None = None, **options: Any) -> Embedder:
    """The registered embedder ``name`` (kind ``embedder``; default `default_embedder_name`). Without
    options it is built once per process and shared; with options (e.g. ``threads=1``) a new one."""
    from hippocamp import registry

    name = name or default_embedder_name()
    if options:
        return registry.get("embedder", name)(**options)
    if name not in _instances:
        _instances[name] = registry.get("embedder", name)()
    return _instances[name]
