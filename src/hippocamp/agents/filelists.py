"""The three file lists of an episode, as HippoCamp's release defines them for file precision/recall/F1.

- **cited** (``Answer.files``): the files the answer names as its support.
- **touched**: the files an agent's actions named. For a terminal agent this is the release's rule
  (`release_agent_file_list`): the first argument of every ``return_txt``/``return_img``/``return_ori``/
  ``return_metadata`` command, sorted, then every argument of every command that looks like a file
  (`looks_like_file`) in the order the commands ran, each once, paths exactly as written (globs
  included). For the structured tools (``read``, ``metadata``, ``list_files``, ...) the path arguments
  count, in order.
- **retrieved**: the files of every hit of every retrieval step (``search``; ``logs`` when a
  full-context agent puts every log in its prompt), in order, each once. Tool steps carry these files
  in ``Step.files``.

`release_agent_file_list` takes the release's own shapes (``files_touched`` and the ``steps`` of a
trajectory log, steps as ``{"command": ...}`` dicts) so a scorer can apply the same rule to an imported
release trajectory. `paper_file_list(agent)` names the list the paper used for an agent's family.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from hippocamp import registry
from hippocamp.schema.run import Step

__all__ = [
    "FILE_EXTENSIONS",
    "FILE_LISTS",
    "NOT_FILES",
    "RETRIEVAL_TOOLS",
    "RETURN_COMMANDS",
    "FileList",
    "files_in_command",
    "looks_like_file",
    "paper_file_list",
    "release_agent_file_list",
    "retrieved_files",
    "returned_files",
    "tool_paths",
    "touched_files",
]

FileList = Literal["cited", "touched", "retrieved"]
#: the three definitions, in the order reports show them
FILE_LISTS: tuple[FileList, ...] = ("cited", "touched", "retrieved")

#: endings (compared lower-case) that make an argument without a "/" a file, as the release lists them
FILE_EXTENSIONS: tuple[str, ...] = (
    ".txt", ".py", ".ipynb", ".log", ".json", ".bin", ".npy", ".pkl", ".pt", ".pth", ".csv", ".docx", ".md",
    ".eml", ".ics", ".pdf", ".xlsx", ".pptx", ".sqlite", ".png", ".jpg", ".jpeg", ".gif", ".mp3", ".mp4", ".mkv",
)  # fmt: skip
#: shell operators that are never files (a token written as one word, e.g. "2>/dev/null", is not among them)
NOT_FILES: frozenset[str] = frozenset({"|", ">", ">>", "<", "2>", "2>>"})
#: the release's file tools: their first argument is the file they return
RETURN_COMMANDS: frozenset[str] = frozenset({"return_txt", "return_img", "return_ori", "return_metadata"})
#: tools whose returned files (``Step.files``) are the agent's retrieval
RETRIEVAL_TOOLS: frozenset[str] = frozenset({"search", "logs"})

#: arguments of the structured tools that name one file or folder (counted whenever non-empty)
_PATH_KEYS = frozenset({"path", "file", "file_path", "filename", "dir", "directory", "folder"})
#: arguments that name several
_PATHS_KEYS = frozenset({"paths", "files"})
#: arguments that are patterns over paths: counted when they look like a file, as a shell argument would
_GLOB_KEYS = frozenset({"glob", "path_glob"})


def looks_like_file(token: str) -> bool:
    """The release's test of one shell argument: not empty, not a flag, not a pipe or redirection, not
    an http(s) URL, and either containing "/" or ending with one of `FILE_EXTENSIONS` (any case)."""
    if not token or token.startswith("-") or token in NOT_FILES:
        return False
    if token.startswith(("http://", "https://")):
        return False
    return "/" in token or token.lower().endswith(FILE_EXTENSIONS)


def _words(command: Any) -> list[str]:
    """A command split as a POSIX shell would quote it; nothing for one that does not split."""
    if not isinstance(command, str) or not command:
        return []
    try:
        return shlex.split(command)
    except ValueError:  # an unclosed quote, a trailing escape
        return []


def returned_files(command: str) -> list[str]:
    """The file a ``return_*`` command returns (its first argument), else nothing: what the release's
    terminal agent records as ``files_touched`` while it runs."""
    words = _words(command)
    if len(words) >= 2 and words[0] in RETURN_COMMANDS:
        return [words[1]]
    return []


def files_in_command(command: str) -> list[str]:
    """The files one command names by the release's rule: a ``return_*`` command its first argument
    only; any other command every argument after the head that `looks_like_file`, in order."""
    words = _words(command)
    if not words:
        return []
    if words[0] in RETURN_COMMANDS:
        return words[1:2]
    return [w for w in words[1:] if looks_like_file(w)]


def _once(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def release_agent_file_list(files_touched: Any, steps: Any) -> list[str]:
    """A release trajectory's agent file list: ``files_touched`` (a list, as logged) followed by the
    files of every step's ``command`` (`files_in_command`), non-empty, each once (first place kept),
    paths not normalised. ``steps`` is the log's mapping of step names to step dicts, or a list of
    step dicts; anything else in it is skipped."""
    touched = [str(f) for f in files_touched if f] if isinstance(files_touched, list) else []
    items = steps.values() if isinstance(steps, Mapping) else steps if isinstance(steps, list) else []
    from_steps = [
        f for step in items if isinstance(step, Mapping) for f in files_in_command(step.get("command") or "") if f
    ]
    return _once([*touched, *from_steps])


def _command(step: Step) -> str | None:
    args = step.arguments
    command = args.get("command") if isinstance(args, dict) else None
    return command if isinstance(command, str) else None


def tool_paths(arguments: Mapping[str, Any] | None) -> list[str]:
    """The paths a structured tool call names, in argument order: ``path``/``file``/``dir``-like
    arguments as given, every string of ``paths``/``files``, and a ``glob``/``path_glob`` pattern when
    it looks like a file (``Mail/**``, ``*.pdf``; not ``*rent*``)."""
    out: list[str] = []
    for key, value in (arguments or {}).items():
        if key in _PATH_KEYS and isinstance(value, str) and value:
            out.append(value)
        elif key in _PATHS_KEYS and isinstance(value, list):
            out.extend(v for v in value if isinstance(v, str) and v)
        elif key in _GLOB_KEYS and isinstance(value, str) and looks_like_file(value):
            out.append(value)
    return out


def touched_files(trace: Iterable[Step]) -> list[str]:
    """The files an episode's actions named: its shell commands by the release's rule (the files of
    its ``return_*`` commands sorted, then the files of every command in order), then the path
    arguments of its structured tool calls in order; each once, as written."""
    steps = [s for s in trace if s.kind == "tool"]
    commands = [c for s in steps if (c := _command(s)) is not None]
    returned = sorted({f for c in commands for f in returned_files(c)})
    shell = release_agent_file_list(returned, [{"command": c} for c in commands])
    structured = [p for s in steps if _command(s) is None for p in tool_paths(s.arguments)]
    return _once([*shell, *structured])


def retrieved_files(trace: Iterable[Step]) -> list[str]:
    """The files of every hit of every retrieval step (`RETRIEVAL_TOOLS`), in order, each once."""
    return _once(f for s in trace if s.kind == "tool" and s.tool in RETRIEVAL_TOOLS for f in s.files if f)


def paper_file_list(agent: str) -> FileList:
    """The file list the paper scores an agent's family by (the agent class's ``file_list``):
    ``retrieved`` for retrieval baselines, ``touched`` for terminal and tool agents, ``cited`` for an
    agent the registry does not know or that does not say. ``agent`` may be a spec (``rag:12``)."""
    name = agent.strip().partition(":")[0]
    try:
        obj = registry.get("agent", name)
    except registry.UnknownPluginError:
        return "cited"
    value = getattr(obj, "file_list", "cited")
    return value if value in FILE_LISTS else "cited"
