"""The HippoCamp terminal surface, emulated in pure Python: the release's tools plus read-only shell commands.

An agent sends one command line; `Terminal.run` answers with an `Observation`. Nothing runs in a
subprocess, nothing touches the network and nothing inside the profile is written: every command is
implemented here over a `Sandbox` rooted at the profile (``/`` is the profile root, like a chroot).

Supported:

- the release's tools, each answering compact JSON ``{"success", "count", "data", "error"}``:
  ``list_files [glob]``, ``return_txt <path>``, ``return_img <path> --page N``, ``return_ori <path>``,
  ``return_metadata <path>`` (their arguments are not glob-expanded; an unquoted path with spaces is
  joined back into one);
- read-only commands: ``ls [-laAR1h]``, ``cd``, ``pwd``, ``find`` (``-name -iname -path -type
  -maxdepth -mindepth``), ``grep [-irRnlcvEFwxoHh] [-e PAT] [--include/--exclude=GLOB]``, ``head``,
  ``tail`` (``-n N``, ``-N``, tail ``-n +N``), ``cat [-n]``, ``wc [-lwcm]``, ``stat``, ``file``,
  ``echo``, ``sort [-rnuf]``, ``uniq [-c]``, ``help``;
- pipes ``a | b`` (the right side reads the left's output), ``;``, ``&&``, ``||``, POSIX quoting
  (single and double quotes, backslashes; ``shlex.split`` gives the same words, but loses which
  characters were quoted, which globbing and operators need), unquoted globs (``*.txt``) expanded
  inside the profile, ``~`` as the profile root, and ``2>/dev/null`` / ``2>&1`` (stderr hidden /
  sent down the pipe with stdout).

Refused with an error observation: every other program (``rm``, ``python``, ``curl``, ...), redirects
(``>``, ``>>``, ``<``), ``$VAR`` / ``$(...)`` / backticks, subshells ``( )``, background ``&``, env
assignments, ``find -exec/-delete``. Paths leaving the profile (``..`` above the root, ``/..``,
symlinks out, NUL bytes, hard links to files outside) are refused, counted in ``sandbox.escapes`` and
flag ``escaped``.

Nothing an agent types or a profile holds can hang it or walk out of it (see `bounded`):

- every command line runs under a deadline (`TerminalLimits.timeout`, lowered by ``run(timeout=)``
  and by `Terminal.deadline`, the episode's end); loops over files, lines and directory entries check
  it and stop with "timed out after N s". Bytes read per file and per command line, characters passed
  down a pipe, entries walked and glob matches are capped; a file read in part says so.
- FIFOs, devices and sockets are refused without being opened (``file`` and ``stat`` describe them).
- grep patterns, ``find -name``, ``--include``, ``list_files`` and globs are matched by RE2 (linear
  time); backreferences and look-around are refused with a message.
- globs walk the profile themselves: ``..`` above the root stops them before anything is listed, and
  they never descend into a symlink (into or out of the tree); walks are iterative at any depth.
- a hard link counts as what it points at: a file whose inode has links outside the profile (more
  links than the profile holds) is refused like a symlink out (``hard_links="any"`` turns this off).
- errors name paths as the agent typed them, never the host path; undecodable bytes of file names are
  shown as ``\\xff`` (and accepted back that way), so an observation is always valid UTF-8.

The parts: `shell` (lexing, parsing, globs, the pipeline runner), `access` (paths resolved in the
sandbox, what may be read, bounded reads), the commands in `fileutils`, `textutils` and
`release_tools`, and `bounded` (limits, the per-command quota, RE2 patterns, walks); this module
assembles them into `Terminal` with its command table and ``help``.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar, Literal

from hippocamp.envs.base import Observation
from hippocamp.envs.bounded import Quota, TerminalLimits
from hippocamp.envs.escapes import escape_attempts
from hippocamp.envs.fileutils import FileUtils
from hippocamp.envs.release_tools import ALIASES, DATA_DIR, PageImageFn, ReleaseTools, TextsFn
from hippocamp.envs.release_tools import HELP as RELEASE_HELP
from hippocamp.envs.sandbox import Sandbox
from hippocamp.envs.shell import CommandIO
from hippocamp.envs.shell import lex as _lex  # noqa: F401  (the lexer's old name, which tests import)
from hippocamp.envs.textutils import TextUtils

__all__ = ["Observation", "Terminal", "TerminalLimits", "tool_schema"]

#: every command's usage line, in the order `help` and the tool's description list them
_HELP = {
    **RELEASE_HELP,
    "ls": "ls [-l] [-a] [-R] [paths]",
    "cd": "cd [path]",
    "pwd": "pwd",
    "find": "find [paths] [-name PAT] [-iname PAT] [-path PAT] [-type f|d|l] [-maxdepth N] [-mindepth N]",
    "grep": "grep [-i] [-r] [-n] [-l] [-c] [-v] [-E|-F] [-w] [-x] [-o] PATTERN [paths]",
    "head": "head [-n N] [files]",
    "tail": "tail [-n N|+N] [files]",
    "cat": "cat [-n] [files]",
    "wc": "wc [-l] [-w] [-c] [files]",
    "stat": "stat paths",
    "file": "file paths",
    "echo": "echo [-n] words",
    "sort": "sort [-r] [-n] [-u] [-f] [files]",
    "uniq": "uniq [-c] [files]",
    "help": "help",
}


def tool_schema() -> dict[str, Any]:
    """The OpenAI-style function schema of the ``terminal`` tool."""
    commands = "; ".join(_HELP.values())
    return {
        "type": "function",
        "function": {
            "name": "terminal",
            "description": (
                "Run one read-only command line in the user's files (the profile root is /; cd stays inside it). "
                "Pipes (|), ; and && work; nothing can be written, run or downloaded. Commands: " + commands
            ),
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string", "description": "the command line, e.g. ls -R Docs"}},
                "required": ["command"],
            },
        },
    }


class Terminal(ReleaseTools, FileUtils, TextUtils):
    backend: ClassVar[str] = "emulated"

    """A read-only HippoCamp terminal over one profile; `run` one command line at a time.

    ``limits`` bound every command line (`TerminalLimits`); `deadline` (a `time.monotonic()` instant,
    e.g. the episode's end) and ``run(timeout=)`` shorten its time. ``hard_links="inside"`` refuses a
    file with links outside the profile; ``"any"`` reads it (for profiles hard-linked from a trusted
    copy, e.g. imported with links to the source files)."""

    def __init__(
        self,
        root: Path | str,
        *,
        texts: TextsFn | None = None,
        page_image: PageImageFn | None = None,
        budget_chars: int = 8000,
        limits: TerminalLimits | None = None,
        hard_links: Literal["inside", "any"] = "inside",
        user: str | None = None,
        image_bytes: bool = True,
    ) -> None:
        self.sandbox = Sandbox(root, mount=DATA_DIR)
        self.user = user
        self.image_bytes = image_bytes
        self.flags = {"return_txt": True, "return_img": True}
        self.emitted = []
        self._images: list[dict[str, str]] = []
        #: (command line, why it counted) for every attempt refused or contained
        self.attempts: list[tuple[str, list[str]]] = []
        self.budget_chars = budget_chars
        self.limits = limits or TerminalLimits()
        self.hard_links = hard_links
        self.deadline = None
        self._texts = texts or self._default_texts
        self._page_image = page_image or self._render_page
        self._cache = None
        self._finalizer = None
        self._escaped = False
        self._quota = Quota(self.limits, self.limits.timeout)
        self._timed_out = None
        self._links = None
        self._missing = 0
        self._tail = ""
        self._commands = {
            "list_files": self._list_files,
            "return_txt": self._return_txt,
            "return_img": self._return_img,
            "return_ori": self._return_ori,
            "return_metadata": self._return_metadata,
            "set_flags": self._set_flags,
            "hhelp": self._hhelp,
            "ls": self._ls,
            "cd": self._cd,
            "pwd": self._pwd,
            "find": self._find,
            "grep": self._grep,
            "head": self._head,
            "tail": self._tail_cmd,
            "cat": self._cat,
            "wc": self._wc,
            "stat": self._stat,
            "file": self._file,
            "echo": self._echo,
            "sort": self._sort,
            "uniq": self._uniq,
            "help": self._help,
        }
        for alias, name in ALIASES.items():
            self._commands[alias] = self._commands[name]
        self._literal_args = frozenset([*RELEASE_HELP, *ALIASES])

    def run(self, command: str, *, timeout: float | None = None) -> Observation:
        """Run one command line (see `Shell.run`); the images a ``return_img`` at the end of it
        rendered ride along in ``data`` (``{"image_b64", "mime", "image_path"}``), whatever the cap."""
        self.emitted = []
        self._images = []
        before, cwd = self.sandbox.escapes, DATA_DIR + self.cwd.rstrip("/")
        obs = super().run(command, timeout=timeout)
        obs.data = [*obs.data, *self._images]
        tool = command.split(maxsplit=1)[0] if command.strip() else ""
        own = self._own_output if tool in self._literal_args else self._own_path  # a tool's output path is its own
        reasons = escape_attempts(command, cwd, own=own)
        if self.sandbox.escapes > before:
            reasons = reasons or ["a path leaving the profile, refused"]
        elif reasons:  # refused or harmless here, but an attempt all the same: counted like the jail counts it
            self.sandbox.escapes += 1
            obs.escaped = True
        if reasons:
            self.attempts.append((command, reasons))
        return obs

    def _own_path(self, path: str) -> bool:
        """Whether an absolute path is this terminal's: its first name is an entry of the profile's root,
        or it is an output a release tool wrote (looked at inside the profile and the scratch only)."""
        first = path.strip("/").split("/")[0]
        if first in ("", ".", ".."):
            return False
        try:
            if first in ("tmp", "hippocamp"):
                return self._cache is not None and os.path.lexists(self._cache / "out" / path.lstrip("/"))
            return os.path.lexists(self.sandbox.root / first)
        except (OSError, ValueError):
            return False

    def _own_output(self, path: str) -> bool:
        return self._own_path(path) or path.startswith(("/tmp/", "/hippocamp/output/"))

    def describe(self) -> dict[str, Any]:
        """What contains this terminal, for the run's manifest."""
        return {"backend": "emulated", "engine": "hippocamp (pure Python, read-only)", "limits": asdict(self.limits)}

    def close(self) -> None:
        """Remove the page-image cache."""
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _help(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        io.print("Read-only terminal over the profile (/ is the profile root). Pipes |, ; && || work.")
        for line in _HELP.values():
            io.print("  " + line)
        return 0
