"""One registry for every pluggable role, found by kind and name.

Built-ins register through the same path as third-party code: a module decorates its classes or
functions with `register`, and `get` imports the modules that hold a kind's built-ins
(`BUILTINS`) and every module named in the ``hippocamp.plugins`` entry-point group before it looks
a name up. No ``if name == ...`` factories anywhere.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, TypeVar

__all__ = ["BUILTINS", "ENTRY_POINT_GROUP", "UnknownPluginError", "get", "instance", "items", "names", "register"]

ENTRY_POINT_GROUP = "hippocamp.plugins"
#: Modules holding the built-ins of each kind; imported on first use of the kind.
BUILTINS: dict[str, tuple[str, ...]] = {
    "rule": ("hippocamp.validate.rules",),
    "embedder": ("hippocamp.models.embedders",),
    "judge": ("hippocamp.scoring.judge",),
    # importers: import_NAME(source, out, **options) functions; `hippocamp import NAME` runs them
    "importer": ("hippocamp.importers.hippocamp", "hippocamp.importers.financebench", "hippocamp.importers.locomo"),
    "reader": (
        "hippocamp.perceive.pdf",
        "hippocamp.perceive.plaintext",
        "hippocamp.perceive.jsonfile",
        "hippocamp.perceive.htmlpage",
        "hippocamp.perceive.rtf",
        "hippocamp.perceive.wordproc",
        "hippocamp.perceive.xlsx",
        "hippocamp.perceive.delimited",
        "hippocamp.perceive.slides",
        "hippocamp.perceive.mail",
        "hippocamp.perceive.calendar",
        "hippocamp.perceive.image",
        "hippocamp.perceive.audio",
        "hippocamp.perceive.video",
    ),
    "provider": (
        "hippocamp.models.providers.mock",
        "hippocamp.models.providers.openai_compat",
        "hippocamp.models.providers.local",
    ),
    # benchmarks: what a suite is, how its runs are scored and reported (hippocamp.benchmarks)
    "benchmark": ("hippocamp.benchmarks.hippocamp", "hippocamp.benchmarks.pcontext"),
    # agents: each module registers its agents with @register("agent", NAME)
    "agent": (
        "hippocamp.agents.terminal",
        "hippocamp.agents.evidence",
        "hippocamp.agents.external",
        "hippocamp.agents.retrieval",
        "hippocamp.agents.react",
        "hippocamp.agents.full_context",
        "hippocamp.agents.terminal_release",
        "hippocamp.agents.pipelines",
    ),
    # chunkers: how the indexer re-cuts a file's segments (`hippocamp index --chunker`)
    "chunker": ("hippocamp.store.chunking",),
    # stories are told in this order, which is part of a synthetic profile's bytes
    "story": (
        "hippocamp.synth.stories.lease",
        "hippocamp.synth.stories.vet",
        "hippocamp.synth.stories.dentist",
        "hippocamp.synth.stories.memo",
        "hippocamp.synth.stories.video",
        "hippocamp.synth.stories.plan_change",
        "hippocamp.synth.stories.receipts",
        "hippocamp.synth.stories.budget",
        "hippocamp.synth.stories.statement",
        "hippocamp.synth.stories.project",
        "hippocamp.synth.stories.trip",
        "hippocamp.synth.stories.routine",
        "hippocamp.synth.stories.preference",
        "hippocamp.synth.stories.scheduling",
    ),
}

T = TypeVar("T")
_registry: dict[str, dict[str, Any]] = {}
_loaded_kinds: set[str] = set()
_plugins_loaded = False


class UnknownPluginError(KeyError):
    def __init__(self, kind: str, name: str, known: list[str]):
        self.kind, self.name, self.known = kind, name, known
        super().__init__(f"no {kind} named {name!r}; known: {', '.join(known) or '(none)'}")

    def __str__(self) -> str:
        return str(self.args[0])


def register(kind: str, name: str | None = None) -> Callable[[T], T]:
    """Decorator: ``@register("rule", "locators")``. A later registration of the same name replaces it."""

    def deco(obj: T) -> T:
        key = name or getattr(obj, "name", None) or getattr(obj, "__name__", None)
        if not key:
            raise ValueError(f"cannot register {obj!r} under kind {kind!r} without a name")
        _registry.setdefault(kind, {})[str(key)] = obj
        return obj

    return deco


def _load(kind: str) -> None:
    global _plugins_loaded
    if kind not in _loaded_kinds:
        _loaded_kinds.add(kind)
        for module in BUILTINS.get(kind, ()):
            importlib.import_module(module)
    if not _plugins_loaded:
        _plugins_loaded = True
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            ep.load()


def get(kind: str, name: str) -> Any:
    _load(kind)
    try:
        return _registry[kind][name]
    except KeyError:
        raise UnknownPluginError(kind, name, names(kind)) from None


def names(kind: str) -> list[str]:
    _load(kind)
    return list(_registry.get(kind, {}))


def items(kind: str) -> list[tuple[str, Any]]:
    _load(kind)
    return list(_registry.get(kind, {}).items())


def instance(kind: str, name: str) -> Any:
    """The registered ``name`` ready to use: a registered class is instantiated (with no arguments),
    anything else is returned as registered."""
    found = get(kind, name)
    return found() if isinstance(found, type) else found
