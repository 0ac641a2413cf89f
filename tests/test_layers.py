"""Arrows run one way: every import in ``src/hippocamp`` (function-level ones included) goes from a
package to one listed before it in `LAYERS`, or within the package. A back-arrow or a cycle fails here,
naming the file, the line and the import; `docs/architecture.md` shows the same order."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "hippocamp"

#: packages (and top-level modules) from the bottom up: each may import only those before it
LAYERS = [
    "__init__",
    "examples",
    "redact",
    "text",
    "schema",
    "registry",
    "paths",
    "durable",
    "models",
    "executors",
    "dataset",
    "perceive",
    "validate",
    "build",
    "store",
    "envs",
    "agents",
    "runs",
    "scoring",
    "report",
    "synth",
    "pcontext",
    "importers",
    "benchmarks",
    "quickstart",
    "studio",
    "cli",
    "__main__",
]


def _unit(module: str) -> str | None:
    """The layer unit of a ``hippocamp...`` module name (its first part below ``hippocamp``)."""
    parts = module.split(".")
    if parts[0] != "hippocamp":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    rel = path.relative_to(SRC.parent).with_suffix("")
    package = list(rel.parts[:-1])
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolved against the module's package
                base = package[: len(package) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.append((node.lineno, name))
    return found


def _violations() -> list[str]:
    order = {name: i for i, name in enumerate(LAYERS)}
    problems = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        here = rel.parts[0].removesuffix(".py") if len(rel.parts) == 1 else rel.parts[0]
        if here not in order:
            problems.append(f"{rel}: package {here!r} is not in LAYERS")
            continue
        for line, module in _imports(path):
            there = _unit(module)
            if there is None or there == here:
                continue
            if there not in order:
                problems.append(f"{rel}:{line}: imports {module} (package {there!r} is not in LAYERS)")
            elif order[there] > order[here]:
                problems.append(f"{rel}:{line}: imports {module}: {here} may not depend on {there} (a back-arrow)")
    return problems


def test_every_import_points_down_the_layers() -> None:
    problems = _violations()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("package", [p for p in LAYERS if (SRC / p).is_dir()])
def test_every_package_is_listed_in_the_architecture_page(package: str) -> None:
    text = (SRC.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert f"`{package}/`" in text
