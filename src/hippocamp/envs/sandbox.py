"""A profile-rooted sandbox: agent-given paths resolved against a current directory, escapes refused.

The profile root acts like a chroot: ``/`` is the profile root, so an absolute path ``/Docs/a.pdf``
means ``<root>/Docs/a.pdf`` and ``/..`` is refused. Paths are resolved one component at a time, the
way the kernel does: ``..`` above the root is refused, a symlink is followed only when its target
stays inside the root (a symlink leaving the root is refused, never followed), and NUL bytes are
refused. Every refusal raises `SandboxError` and counts in `Sandbox.escapes`. An `OSError` met while
resolving (a name too long, a folder that cannot be searched) carries the path as the agent gave it,
never the host path.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

__all__ = ["Sandbox", "SandboxError"]


class SandboxError(Exception):
    """An agent-given path that would leave the profile; names the path and the reason."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path!r}: {reason}")
        self.path = path
        self.reason = reason


class Sandbox:
    """Resolves agent paths inside ``root``; keeps the current directory and counts escape attempts."""

    def __init__(self, root: Path | str, mount: str | None = None) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise NotADirectoryError(f"profile root is not a directory: {root}")
        #: current directory, profile-relative POSIX (``"."`` is the root)
        self.cwd = "."
        #: how many paths were refused as escapes
        self.escapes = 0
        #: an absolute path under this one names the root too (the release's ``/hippocamp/data``)
        self.mount: PurePosixPath | None = PurePosixPath(mount) if mount else None

    def resolve(self, path: str) -> Path:
        """The absolute path inside the root for ``path`` (relative to `cwd`, or chroot-absolute).

        The result may not exist. Raises `SandboxError` (and counts it) when the path leaves the root,
        `OSError` (with ``path`` as its filename) when a component cannot be looked at."""
        try:
            return self._resolve(path)
        except SandboxError:
            self.escapes += 1
            raise

    def allows(self, path: str) -> bool:
        """Whether ``path`` stays inside the root (checked without counting an escape)."""
        try:
            self._resolve(path)
        except SandboxError:
            return False
        except OSError:
            return True  # inside, but not there (e.g. a name too long)
        return True

    def chdir(self, path: str) -> str:
        """Change `cwd` to a directory; returns the new `cwd`. Raises `SandboxError`,
        `FileNotFoundError` or `NotADirectoryError`."""
        target = self.resolve(path)
        try:
            mode = os.stat(target).st_mode
        except OSError as exc:
            raise FileNotFoundError(path) if isinstance(exc, FileNotFoundError) else _agent_error(exc, path) from None
        if not stat.S_ISDIR(mode):
            raise NotADirectoryError(path)
        self.cwd = self.rel(target)
        return self.cwd

    def rel(self, path: Path) -> str:
        """The profile-relative POSIX path of an absolute path inside the root (``"."`` for the root)."""
        return Path(path).relative_to(self.root).as_posix()

    def is_escape_link(self, path: Path) -> bool:
        """Whether ``path`` is a symlink whose target leaves the root."""
        return path.is_symlink() and not self._inside(Path(os.path.realpath(path)))

    def walk(self, start: Path) -> Iterator[tuple[Path, list[str], list[str]]]:
        """Like `os.walk` from ``start`` (top-down, names sorted) without recursion, never following
        symlinked directories (they are listed with the files)."""
        stack = [Path(start)]
        while stack:
            top = stack.pop()
            try:
                entries = sorted(os.scandir(top), key=lambda e: e.name)
            except OSError:
                continue
            dirs = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
            files = [e.name for e in entries if not e.is_dir(follow_symlinks=False)]
            yield top, dirs, files
            stack.extend(top / d for d in reversed(dirs))

    # -- internals ---------------------------------------------------------------------------------
    def _inside(self, path: Path) -> bool:
        return path == self.root or self.root in path.parents

    def _resolve(self, path: str) -> Path:
        if "\x00" in path:
            raise SandboxError(path, "NUL byte in path")
        pure = PurePosixPath(path) if path else PurePosixPath(".")
        if self.mount is not None and pure.is_absolute() and pure.is_relative_to(self.mount):
            pure = PurePosixPath("/") / pure.relative_to(self.mount)
        parts: list[str] = [] if pure.is_absolute() else [p for p in PurePosixPath(self.cwd).parts if p != "."]
        root = str(self.root)
        for comp in pure.parts:
            if comp == "." or not comp.strip("/"):  # "." and the root ("/", or "//" which POSIX keeps)
                continue
            if comp == "..":
                if not parts:
                    raise SandboxError(path, "'..' goes above the profile root")
                parts.pop()
                continue
            parts.append(comp)
            here = os.path.join(root, *parts)
            try:
                link = stat.S_ISLNK(os.lstat(here).st_mode)
            except (FileNotFoundError, NotADirectoryError):
                link = False
            except OSError as exc:
                raise _agent_error(exc, path) from None
            if link:
                target = Path(os.path.realpath(here))
                if not self._inside(target):
                    raise SandboxError(path, "symlink pointing outside the profile (not followed)")
                parts = list(target.relative_to(self.root).parts)
        return self.root.joinpath(*parts)


def _agent_error(exc: OSError, path: str) -> OSError:
    """The same error naming the agent's path instead of the host's."""
    return type(exc)(exc.errno, exc.strerror or type(exc).__name__, path)
