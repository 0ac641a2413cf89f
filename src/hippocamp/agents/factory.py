"""The one way an agent is made from its name: ``NAME`` or ``NAME:ARG`` (``rag:12``, ``external:cmd:./a.sh``).

`agent_factory(spec)` checks the spec before any episode runs (an unknown name, an argument the agent
does not take, or a missing one is a ``ValueError`` or `UnknownPluginError` naming it) and returns what
makes the agent of one episode; `make_agent(spec)` makes one now.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from hippocamp import registry

__all__ = ["agent_factory", "agent_settings", "describe_agents", "make_agent"]


def agent_factory(spec: str) -> Callable[[], Any]:
    """What makes the agent of one episode from ``NAME`` or ``NAME:ARG`` (e.g. ``external:cmd:./a.sh``).
    A registered class is instantiated per episode (``cls(ARG)`` or ``cls()``: agents may keep
    per-episode state), a registered instance is shared, a registered function is called."""
    name, _, arg = spec.strip().partition(":")
    obj = registry.get("agent", name)
    if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "solve")):
        value = _argument(name, obj, arg, spec)
        return (lambda: obj(value)) if arg else obj
    if hasattr(obj, "solve"):
        if arg:
            raise ValueError(f"agent {name!r} is an instance and takes no argument (got {spec!r})")
        return lambda: obj
    raise TypeError(f"agent {name!r} is registered as {obj!r}: not a class, agent or factory")


_NUMBER_TYPES: dict[str, Callable[[str], Any]] = {"int": int, "float": float}


def _argument(name: str, obj: Any, arg: str, spec: str) -> Any:
    """``ARG`` of ``NAME:ARG`` as the agent's first parameter takes it (an ``int`` or ``float`` parameter
    gets a number). An agent that takes no argument, or one that needs it, is refused here, before any
    episode runs, instead of failing inside each."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # a builtin or C callable: nothing to check
        return arg
    try:
        bound = signature.bind(arg) if arg else signature.bind()
    except TypeError:
        if arg:
            raise ValueError(f"agent {name!r} takes no argument (got {spec!r}); use --agent {name}") from None
        raise ValueError(f"agent {name!r} needs an argument: --agent {name}:ARG") from None
    if not arg:
        return arg
    param = next(iter(bound.arguments))
    annotation = signature.parameters[param].annotation
    kind = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    convert = _NUMBER_TYPES.get(str(kind).strip())
    if convert is None:
        return arg
    try:
        return convert(arg)
    except ValueError:
        raise ValueError(f"agent {name!r}: its argument is {param} ({kind}), got {arg!r} in {spec!r}") from None


def make_agent(spec: str) -> Any:
    """An agent from its name, optionally with an argument after the first colon:
    ``evidence``, ``react``, ``external:cmd:python my_agent.py``, ``external:http://127.0.0.1:8000/solve``."""
    return agent_factory(spec)()


def agent_settings(agent: Any) -> dict[str, Any]:
    """An agent's own budgets and settings, for a run's manifest: its ``settings()`` when it has one,
    else its public plain attributes (numbers, strings, flags) and dataclass settings, and the file
    list it is scored by."""
    import dataclasses

    custom = getattr(agent, "settings", None)
    if callable(custom):
        return dict(custom())
    out: dict[str, Any] = {"file_list": getattr(agent, "file_list", "cited")}
    for key, value in sorted(vars(agent).items()) if hasattr(agent, "__dict__") else []:
        if key.startswith("_"):
            continue
        if isinstance(value, bool | int | float | str):
            out[key] = value
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            out[key] = dataclasses.asdict(value)
    return out


def describe_agents() -> list[dict[str, Any]]:
    """Every registered agent: its name, where it comes from (hippocamp's own, the HippoCamp release's
    pipelines and loop), the file list it is scored by, and the first line of its description."""
    rows = []
    for name, obj in registry.items("agent"):
        doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
        module = getattr(obj, "__module__", "") or ""
        origin = "release" if ("pipelines" in module or name == "terminal-release") else "hippocamp"
        where = f"{module}.{getattr(obj, '__qualname__', type(obj).__name__)}"
        rows.append({"name": name, "origin": origin, "file_list": getattr(obj, "file_list", "cited"),
                     "description": doc[0].rstrip(".") if doc else f"(no description: {where})"})  # fmt: skip
    return sorted(rows, key=lambda r: (r["origin"] != "hippocamp", r["name"]))
