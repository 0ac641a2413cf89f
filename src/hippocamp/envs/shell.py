"""The terminal's shell: command lines lexed and parsed by POSIX quoting rules, unquoted globs
expanded inside the profile, and sequences and pipelines run over a table of commands.

`lex` keeps which characters were quoted (``shlex.split`` gives the same words, but loses that, which
globbing and operators need) and refuses what this shell does not offer: redirects other than
``2>/dev/null`` and ``2>&1``, ``$VAR`` / ``$(...)`` / backticks, subshells and background jobs. A
command is a `Handler`, ``(args, stdin, io) -> status``, writing to its `CommandIO` and raising
`Usage` for bad options; `Shell.run` chains pipelines with ``;``, ``&&`` and ``||``.
"""

from __future__ import annotations

import os
import re
import stat as statmod
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hippocamp.envs.base import Observation
from hippocamp.envs.bounded import (
    OverLimit,
    PatternError,
    Quota,
    TerminalLimits,
    TimedOut,
    compile_glob,
    is_real_dir,
    matchable,
    scan,
    shown,
)
from hippocamp.envs.sandbox import Sandbox

__all__ = ["Command", "CommandIO", "Handler", "Refused", "Shell", "Usage", "Word", "lex", "parse", "split_flags"]


# -- lexing and parsing ------------------------------------------------------------------------------
class Refused(Exception):
    """A command line using a shell feature this terminal does not offer."""


@dataclass
class Word:
    """A shell word as (character, quoted) pairs, so that globbing knows what was quoted."""

    chars: list[tuple[str, bool]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(c for c, _ in self.chars)

    @property
    def magic(self) -> bool:
        return any(c in "*?[" and not q for c, q in self.chars)


@dataclass
class Command:
    words: list[Word]
    quiet: bool = False  # 2>/dev/null
    merge: bool = False  # 2>&1: stderr goes down the pipe with stdout


_OPERATORS = ("&&", "||", "|", ";")
_SPECIAL_AFTER_DOLLAR = re.compile(r"[A-Za-z0-9_{(@*#?$!-]")
_WORD_END = " \t\n;&|<>()"


def lex(line: str) -> list[Word | str]:
    """Split a command line into words and operators by POSIX quoting rules; raise on what we refuse."""
    tokens: list[Word | str] = []
    word: Word | None = None
    i, n = 0, len(line)

    def flush() -> None:
        nonlocal word
        if word is not None:
            tokens.append(word)
            word = None

    while i < n:
        c = line[i]
        if c in " \t":
            flush()
            i += 1
        elif c == "\n":
            flush()
            tokens.append(";")
            i += 1
        elif c == "'":
            end = line.find("'", i + 1)
            if end < 0:
                raise ValueError("unbalanced single quote (')")
            word = word or Word()
            word.chars += [(ch, True) for ch in line[i + 1 : end]]
            i = end + 1
        elif c == '"':
            word = word or Word()
            i += 1
            while True:
                if i >= n:
                    raise ValueError('unbalanced double quote (")')
                ch = line[i]
                if ch == '"':
                    i += 1
                    break
                if ch == "\\" and i + 1 < n and line[i + 1] in '$`"\\\n':
                    if line[i + 1] != "\n":
                        word.chars.append((line[i + 1], True))
                    i += 2
                    continue
                if ch == "`" or (ch == "$" and i + 1 < n and _SPECIAL_AFTER_DOLLAR.match(line[i + 1])):
                    raise Refused("shell expansion ($VAR, $(...), `...`) is not supported")
                word.chars.append((ch, True))
                i += 1
        elif c == "\\":
            word = word or Word()
            if i + 1 < n:
                if line[i + 1] != "\n":
                    word.chars.append((line[i + 1], True))
                i += 2
            else:
                word.chars.append(("\\", True))
                i += 1
        elif c in "|&;":
            op = next((o for o in _OPERATORS if line.startswith(o, i)), None)
            if op is None or line.startswith("|&", i):
                raise Refused("background jobs (&) are not supported")
            flush()
            tokens.append(op)
            i += len(op)
        elif c == ">" and word is not None and word.chars == [("2", False)]:
            word = None
            j = i + 1
            while j < n and line[j] in " \t":
                j += 1
            k = j + 2 if line.startswith("&1", j) else j  # '&' ends a word, so '&1' is taken whole
            while k < n and line[k] not in _WORD_END:
                k += 1
            target = line[j:k]
            if target not in ("&1", "/dev/null"):
                raise Refused("redirection is not allowed (read-only terminal); only 2>/dev/null and 2>&1 are")
            tokens.append("2>" + target)
            i = k
        elif c in "<>":
            raise Refused("redirection (<, >, >>) is not allowed: the terminal is read-only")
        elif c in "()":
            raise Refused("subshells ( ) are not supported; quote file names that contain parentheses")
        elif c == "`" or (c == "$" and i + 1 < n and _SPECIAL_AFTER_DOLLAR.match(line[i + 1])):
            raise Refused("shell expansion ($VAR, $(...), `...`) is not supported")
        elif c == "~" and word is None and (i + 1 == n or line[i + 1] in "/" + _WORD_END):
            word = Word([("/", False)])  # home is the profile root
            i += 2 if line.startswith("/", i + 1) else 1
        else:
            word = word or Word()
            word.chars.append((c, False))
            i += 1
    flush()
    return tokens


def parse(tokens: list[Word | str]) -> list[tuple[str, list[Command]]]:
    """Group tokens into ``(connector, pipeline)`` pairs; the first connector is ``""``."""
    sequence: list[tuple[str, list[Command]]] = []
    pipeline: list[Command] = []
    current = Command([])
    connector = ""
    for tok in [*tokens, None]:
        if isinstance(tok, Word):
            current.words.append(tok)
        elif tok in ("2>&1", "2>/dev/null"):
            current.quiet = tok == "2>/dev/null"
            current.merge = tok == "2>&1"
        else:
            if not current.words:
                if tok is None and not pipeline and connector in ("", ";"):
                    break  # an empty line, or a trailing ';'
                raise ValueError(f"syntax error near unexpected token `{tok or 'newline'}'")
            pipeline.append(current)
            current = Command([])
            if tok != "|":
                sequence.append((connector, pipeline))
                pipeline, connector = [], tok or ""
    return sequence


# -- command output --------------------------------------------------------------------------------
class CommandIO:
    """One command's output: stdout (the first ``keep`` characters kept, all of them counted), shown
    stderr lines and notes, and every error message."""

    def __init__(self, keep: int) -> None:
        self.out: list[str] = []
        self.keep = keep
        self.kept = 0
        #: characters written, kept or not, and the last one
        self.total = 0
        self.last = ""
        self.shown: list[str] = []
        self.errors: list[str] = []

    def write(self, text: str) -> None:
        if not text:
            return
        self.total += len(text)
        self.last = text[-1]
        room = self.keep - self.kept
        if room > 0:
            part = text if len(text) <= room else text[:room]
            self.out.append(part)
            self.kept += len(part)

    @property
    def cut(self) -> bool:
        return self.total > self.kept

    def print(self, line: str = "") -> None:
        self.write(line + "\n")

    def err(self, message: str) -> None:
        self.shown.append(message + "\n")
        self.errors.append(message)

    def note(self, message: str) -> None:
        """A remark shown with stderr that is not an error (a file read in part)."""
        self.shown.append(message + "\n")

    def fail(self, message: str) -> None:
        """An error recorded but not printed (the release tools put it in their JSON)."""
        self.errors.append(message)

    @property
    def stdout(self) -> str:
        return "".join(self.out)


class Usage(Exception):
    """Bad options for a command: reported as ``cmd: message`` with status 2."""


#: a command: ``(args, stdin, io) -> exit status``; stdin is None at the start of a pipeline
Handler = Callable[[list[str], str | None, CommandIO], int]

_READ_ONLY_REFUSALS = set(
    "rm rmdir mv cp touch mkdir chmod chown chgrp ln dd tee truncate shred install rsync tar zip unzip gzip gunzip "
    "sed awk perl python python3 ruby node bash sh zsh dash fish curl wget ssh scp sftp ftp nc netcat telnet ping "
    "sudo su apt apt-get pip pip3 git kill pkill killall env export set unset eval exec source . xargs nohup open "
    "xdg-open vi vim nano emacs".split()
)


def split_flags(cmd: str, args: list[str], allowed: str) -> tuple[set[str], list[str]]:
    """Single-letter flags (clustered as in ``-la``) and the other arguments; ``--`` ends options."""
    flags: set[str] = set()
    rest: list[str] = []
    done = False
    for arg in args:
        if not done and arg == "--":
            done = True
        elif not done and arg.startswith("--color"):
            continue
        elif not done and arg.startswith("-") and len(arg) > 1:
            for ch in arg[1:]:
                if ch not in allowed:
                    raise Usage(f"invalid option -- '{ch}'")
                flags.add(ch)
        else:
            rest.append(arg)
    return flags, rest


class Shell:
    """Runs command lines over the table ``_commands`` (filled by `Terminal`): sequences and pipelines,
    globs expanded inside the profile, and every failure of a command turned into its message with the
    profile's host path taken out."""

    sandbox: Sandbox
    limits: TerminalLimits
    budget_chars: int
    #: no command runs past this `time.monotonic()` instant (None: only the per-command limit)
    deadline: float | None
    _commands: dict[str, Handler]
    #: commands whose arguments are never glob-expanded (the release tools)
    _literal_args: frozenset[str] = frozenset()
    _quota: Quota
    #: set when a command of the line tried to leave the profile
    _escaped: bool
    #: why the line stopped early (the time ran out), shown after its output
    _timed_out: str | None
    #: characters of the final output counted but not kept, and its last character
    _missing: int
    _tail: str
    #: whether the command running now is the last of its pipeline (its output is what the agent sees)
    _at_end: bool = True

    @property
    def cwd(self) -> str:
        """The current directory as the agent sees it (``/`` is the profile root)."""
        return "/" if self.sandbox.cwd == "." else "/" + self.sandbox.cwd

    # -- running -----------------------------------------------------------------------------------
    def run(self, command: str, *, timeout: float | None = None) -> Observation:
        """Run one command line and return what the agent sees. It stops after `limits.timeout`
        seconds, or ``timeout`` if shorter, and never runs past `deadline`."""
        self._escaped = False
        self._timed_out = None
        self._missing, self._tail = 0, ""
        self._quota = self._new_quota(timeout)
        try:
            sequence = parse(lex(command))
        except Refused as exc:
            return Observation(f"refused: {exc}", ok=False, error=f"refused: {exc}")
        except ValueError as exc:
            return Observation(f"error: {exc}", ok=False, error=f"error: {exc}")
        chunks: list[str] = []
        errors: list[str] = []
        status = 0
        try:
            for connector, pipeline in sequence:
                if self._timed_out:
                    break
                if (connector == "&&" and status != 0) or (connector == "||" and status == 0):
                    continue
                status = self._pipeline(pipeline, chunks, errors)
        except Exception as exc:  # a bug must not end the episode: the agent sees a failed command
            errors.append(f"error: {type(exc).__name__}: {self._scrub(str(exc))}")
            chunks.append(errors[-1] + "\n")
        text = "".join(chunks)
        length = len(text) + self._missing
        if self._tail == "\n":
            length -= 1
            if not self._missing:
                text = text[:-1]
        truncated = length > self.budget_chars
        if truncated:
            text = text[: self.budget_chars] + f"\n[... truncated {length - self.budget_chars} chars]"
        if self._timed_out:
            text = (text + "\n" if text else "") + self._timed_out
        error = "\n".join(errors) if errors else None
        if error is not None and len(error) > self.budget_chars:
            error = error[: self.budget_chars] + " [...]"
        return Observation(
            text=shown(text),
            ok=not errors,
            error=shown(error) if error is not None else None,
            truncated=truncated,
            escaped=self._escaped,
        )

    def _new_quota(self, timeout: float | None) -> Quota:
        seconds, why = self.limits.timeout, "the time limit of a command"
        if timeout is not None and timeout < seconds:
            seconds, why = timeout, "the time left for it"
        if self.deadline is not None and self.deadline - time.monotonic() < seconds:
            seconds, why = self.deadline - time.monotonic(), "the time left in the episode"
        return Quota(self.limits, seconds, why)

    def _pipeline(self, pipeline: list[Command], chunks: list[str], errors: list[str]) -> int:
        stdin: str | None = None
        status = 0
        for k, command in enumerate(pipeline):
            last = k == len(pipeline) - 1
            io = CommandIO(self.budget_chars + 2 if last else self.limits.max_output_chars)
            self._at_end = last
            status = self._exec(command.words, stdin, io)
            if io.cut and not last:
                io.note(f"{command.words[0].text}: output cut at {io.keep} characters (the next command reads those)")
            stderr = self._scrub(shown("".join(io.shown)))
            errors.extend(self._scrub(shown(e)) for e in io.errors)
            stdin = shown(io.stdout)
            if command.merge and not last:
                stdin = stderr + stdin
            elif stderr and not command.quiet:
                chunks.append(stderr)
                self._tail = "\n"
            if last:
                chunks.append(stdin)
                self._missing += io.total - io.kept
                self._tail = io.last or self._tail
            if self._timed_out:
                break
        return status

    def _exec(self, words: list[Word], stdin: str | None, io: CommandIO) -> int:
        name = words[0].text
        if re.match(r"[A-Za-z_]\w*=", name):
            io.err(f"{name.split('=')[0]}: refused: environment variables are not supported")
            return 126
        handler = self._commands.get(name)
        if handler is None:
            if name in _READ_ONLY_REFUSALS or "/" in name:
                io.err(f"{name}: refused: this terminal is read-only; it cannot run programs or reach the network")
                return 126
            io.err(f"{name}: command not found (try: help)")
            return 127
        try:
            args = [w.text for w in words[1:]] if name in self._literal_args else self._expand(words[1:])
            return handler(args, stdin, io)
        except (Usage, PatternError) as exc:
            io.err(f"{name}: {exc}")
            return 2
        except OverLimit as exc:
            io.err(f"{name}: stopped: {exc}")
            return 2
        except TimedOut as exc:
            self._timed_out = (
                f"{name}: {exc}; the rest of the command line did not run. Narrow it: a folder, a file, a pattern."
            )
            io.fail(self._timed_out)
            return 124
        except OSError as exc:  # a file vanishing or unreadable mid-command
            io.err(f"{name}: {self._os_error(exc)}")
            return 1
        except Exception as exc:  # RecursionError, MemoryError, a bug: a failed command, not a crashed episode
            io.err(f"{name}: failed: {type(exc).__name__}: {self._scrub(str(exc))}")
            return 1

    # -- globbing ----------------------------------------------------------------------------------
    def _expand(self, words: list[Word]) -> list[str]:
        """Unquoted globs expanded inside the profile (sorted; kept literally when nothing matches)."""
        args: list[str] = []
        for i, word in enumerate(words):
            if not word.magic or (i and words[i - 1].text in ("-name", "-iname", "-path", "-ipath")):
                args.append(word.text)
                continue
            args.extend(self._glob(word) or [word.text])
        return args

    def _glob(self, word: Word) -> list[str]:
        """The profile paths a glob names, walking one component at a time: ``..`` above the root ends
        it (the literal word then goes to the command, which refuses it), symlinks are never descended
        into, and at most `TerminalLimits.max_glob` paths are produced."""
        comps: list[list[tuple[str, bool]]] = [[]]
        for c, q in word.chars:
            if c == "/":
                comps.append([])
            else:
                comps[-1].append((c, q))
        absolute = not comps[0] and len(comps) > 1
        dirs_only = len(comps) > 1 and not comps[-1]
        comps = [c for c in comps if c]
        start = () if absolute else tuple(p for p in Path(self.sandbox.cwd).parts if p != ".")
        paths: list[tuple[str, tuple[str, ...]]] = [("/" if absolute else "", start)]
        root = str(self.sandbox.root)
        for n, comp in enumerate(comps):
            final = n == len(comps) - 1 and not dirs_only
            text = "".join(c for c, _ in comp)
            found: list[tuple[str, tuple[str, ...]]] = []
            if not any(c in "*?[" and not q for c, q in comp):
                for shown_as, parts in paths:
                    self._quota.check()
                    if text == "..":
                        if not parts:
                            return []
                        here = parts[:-1]
                    else:
                        here = parts if text == "." else (*parts, text)
                    try:
                        mode = os.lstat(os.path.join(root, *here)).st_mode
                    except OSError:
                        continue
                    if final or statmod.S_ISDIR(mode):
                        found.append((shown_as + text + ("" if final else "/"), here))
            else:
                try:
                    rx = compile_glob(comp, limits=self.limits)
                except PatternError:
                    return []  # like bash, a pattern such as [z-a] matches nothing
                hidden = comp[0][0] == "."
                for shown_as, parts in paths:
                    try:
                        entries = scan(os.path.join(root, *parts), self._quota)
                    except OSError:
                        continue
                    for entry in entries:
                        name = entry.name
                        if (name.startswith(".") and not hidden) or not rx.fullmatch(matchable(name)):
                            continue
                        if final or is_real_dir(entry):
                            found.append((shown_as + name + ("" if final else "/"), (*parts, name)))
                            if len(found) > self.limits.max_glob:
                                raise OverLimit(f"{word.text} matches more than {self.limits.max_glob} paths; "
                                                "narrow the pattern")  # fmt: skip
            if not found:
                return []
            paths = found
        return sorted(p for p, _ in paths)

    def _scrub(self, text: str) -> str:
        """``text`` with the host path of the profile replaced by ``/`` (a last guard for messages)."""
        root = str(self.sandbox.root)
        return text.replace(root + os.sep, "/").replace(root, "/") if root in text else text

    def _os_error(self, exc: OSError) -> str:
        """An OSError as ``path: reason`` with the path as the agent knows it (profile-relative)."""
        reason = exc.strerror or type(exc).__name__
        name = exc.filename
        if name is None:
            return reason
        name = os.fsdecode(name) if isinstance(name, bytes) else str(name)
        if os.path.isabs(name):
            name = self._scrub(name) if name.startswith(str(self.sandbox.root)) else "(a path outside the profile)"
        return f"{name}: {reason}"
