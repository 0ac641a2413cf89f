"""What the studio may serve: files inside the profiles and runs it was opened on, nothing else.

`Roots` names each opened folder by a short id (``p0``, ``r1``) and resolves a path a page asks for
against one of them. A path is refused (`Refused`, shown as a 404 with its reason) when it is absolute,
has an empty, ``.`` or ``..`` component, holds a NUL, a backslash or a percent-encoded slash that
survived decoding, or when the real path (symbolic links followed) is not inside the root's real path:
a link inside a profile that points out of it is refused like ``../``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Refused", "Root", "Roots"]


class Refused(Exception):
    """A path the studio will not serve; the message says why (never the host path it would have reached)."""


@dataclass(frozen=True)
class Root:
    id: str
    kind: str  # "profile" or "run"
    name: str
    path: Path


class Roots:
    """The opened folders, each by id."""

    def __init__(self) -> None:
        self._by_id: dict[str, Root] = {}

    def add(self, kind: str, path: Path, name: str | None = None) -> Root:
        real = Path(os.path.realpath(path))
        for root in self._by_id.values():
            if root.kind == kind and root.path == real:
                return root
        prefix = "p" if kind == "profile" else "r"
        root = Root(f"{prefix}{sum(r.kind == kind for r in self._by_id.values())}", kind, name or real.name, real)
        self._by_id[root.id] = root
        return root

    def get(self, root_id: str) -> Root:
        try:
            return self._by_id[root_id]
        except KeyError:
            raise Refused(f"no opened folder {root_id!r}") from None

    def all(self, kind: str | None = None) -> list[Root]:
        return [r for r in self._by_id.values() if kind is None or r.kind == kind]

    def find(self, kind: str, path: Path) -> Root | None:
        real = Path(os.path.realpath(path))
        return next((r for r in self._by_id.values() if r.kind == kind and r.path == real), None)

    def resolve(self, root_id: str, rel: str) -> Path:
        """The file ``rel`` of root ``root_id``, or `Refused`."""
        root = self.get(root_id)
        if not rel or "\x00" in rel or "\\" in rel or "%2f" in rel.lower() or "%5c" in rel.lower():
            raise Refused("not a file path the studio serves")
        if rel.startswith("/") or (len(rel) > 1 and rel[1] == ":"):
            raise Refused("absolute paths are not served")
        parts = rel.split("/")
        if any(p in ("", ".", "..") for p in parts):
            raise Refused("a path with '..', '.' or an empty part is not served")
        candidate = root.path.joinpath(*parts)
        real = Path(os.path.realpath(candidate))
        if real != root.path and root.path not in real.parents:
            raise Refused("the path leads outside the opened folder")
        if not real.is_file():
            raise Refused(f"no file {rel!r} in {root.name}")
        return real
