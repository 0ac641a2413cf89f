"""Bounded building blocks of the terminal: limits, a per-command quota, linear-time patterns, iterative walks.

Nothing here can hang on what an agent types or what a profile holds:

- `TerminalLimits` are the terminal's settings (a command's seconds, bytes read, characters kept,
  entries walked, glob matches); `Quota` is one command line's share, checked cooperatively by every
  loop over files, lines and directory entries (`TimedOut`, `OverLimit`).
- Regular expressions and shell patterns (grep, ``find -name``, globs, ``list_files``) compile to
  RE2 (`compile_regex`, `compile_glob`): matching is linear in the text, whatever the pattern; what
  RE2 cannot take (backreferences, look-around) is a `PatternError` with a clear message.
- `tree` and `scan` walk directories without recursion, sorted, never descending into symlinks.
- `shown` makes a name or an output valid UTF-8 (an undecodable byte of a file name, which Python
  keeps as a lone surrogate, is shown as ``\\xff``); `matchable` is what patterns are matched against.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import re2

from hippocamp.text.names import shown_name, unshown_name

__all__ = [
    "OverLimit",
    "PatternError",
    "Quota",
    "TerminalLimits",
    "TimedOut",
    "compile_glob",
    "compile_regex",
    "glob_source",
    "is_real_dir",
    "literal",
    "matchable",
    "pairs",
    "scan",
    "shown",
    "tree",
    "unshown",
]

MiB = 1024 * 1024


@dataclass(frozen=True)
class TerminalLimits:
    """What one command line may use. An observation shows a few thousand characters, so every cap
    is far above what an honest command needs and far below what would hurt the machine."""

    #: seconds per command line (an episode's remaining time lowers it, see `Terminal.run`)
    timeout: float = 10.0
    #: bytes read from one file; the rest is not read and a note says so (``tail`` reads the end)
    max_file_bytes: int = 8 * MiB
    #: bytes read from all files by one command line
    max_read_bytes: int = 256 * MiB
    #: characters one command passes down a pipe (the last one's output is cut to ``budget_chars``)
    max_output_chars: int = 8 * MiB
    #: lines a command holds at once (sort; the others stream)
    max_lines: int = 1_000_000
    #: directory entries listed by one command line (find, ls -R, grep -r, list_files, globs)
    max_entries: int = 200_000
    #: paths one glob may expand to
    max_glob: int = 10_000
    #: memory RE2 may use for one compiled pattern
    regex_max_mem: int = 32 * MiB


class TimedOut(Exception):
    """A command line ran past its deadline."""

    def __init__(self, seconds: float, why: str):
        super().__init__(f"timed out after {seconds:.3g} s ({why})")
        self.seconds = seconds
        self.why = why


class OverLimit(Exception):
    """A command would walk, match or read more than its limits allow; the message says which."""


class PatternError(ValueError):
    """A pattern RE2 cannot take, with a message for the agent."""


class Quota:
    """One command line's deadline and counters; `check` raises `TimedOut` once the deadline is past."""

    def __init__(self, limits: TerminalLimits, seconds: float, why: str = "the command's time limit"):
        self.limits = limits
        self.seconds = max(0.0, seconds)
        self.why = why
        self.deadline = time.monotonic() + self.seconds
        self.bytes_read = 0
        self.entries = 0

    def check(self) -> None:
        if time.monotonic() > self.deadline:
            raise TimedOut(self.seconds, self.why)

    def walked(self, n: int) -> None:
        """Count ``n`` directory entries listed."""
        self.entries += n
        if self.entries > self.limits.max_entries:
            raise OverLimit(f"more than {self.limits.max_entries} directory entries walked; narrow the path")
        self.check()

    def read_room(self) -> int:
        """Bytes this command line may still read."""
        return max(0, self.limits.max_read_bytes - self.bytes_read)


# -- names and text ----------------------------------------------------------------------------------
_SURROGATE = re.compile("[\ud800-\udfff]")


# a name or output shown as valid UTF-8, and back: one spelling everywhere (`hippocamp.text.names`)
shown = shown_name
unshown = unshown_name


def matchable(text: str) -> bytes:
    """UTF-8 of ``text`` for RE2, an undecodable byte (a lone surrogate) becoming U+FFFD (one character)."""
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
    return text.encode("utf-8")


# -- patterns -----------------------------------------------------------------------------------------
def _options(limits: TerminalLimits | None, *, lines: bool, ignore_case: bool) -> Any:
    options = re2.Options()
    options.max_mem = (limits or TerminalLimits()).regex_max_mem
    options.log_errors = False
    options.case_sensitive = not ignore_case
    # a line pattern never spans lines (so a whole file is searched in one call); a name may hold '\n'
    options.never_nl = lines
    options.dot_nl = not lines
    return options


def _pattern_error(exc: Exception, what: str) -> PatternError:
    raw = exc.args[0] if exc.args else str(exc)
    message = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    if re.search(r"invalid escape sequence: \\[1-9]", message):
        return PatternError(f"backreferences (\\1 ... \\9) are not supported: {what}s are matched by RE2")
    if re.search(r"invalid perl operator: \(\?<?[=!]", message):
        return PatternError(f"look-around assertions ((?=...), (?!...), (?<=...)) are not supported: {what}s "
                            "are matched by RE2")  # fmt: skip
    if "pattern too large" in message:
        return PatternError(f"the {what} is too large to match within the memory limit")
    return PatternError(f"invalid {what}: {message}")


def compile_regex(source: str, *, ignore_case: bool = False, limits: TerminalLimits | None = None) -> Any:
    """An RE2 pattern over UTF-8 bytes for lines: ``^``/``$`` anchor lines, nothing matches ``\\n``."""
    try:
        return re2.compile(b"(?m)" + matchable(source), _options(limits, lines=True, ignore_case=ignore_case))
    except re2.error as exc:
        raise _pattern_error(exc, "regular expression") from None


def literal(text: str) -> str:
    """RE2 source matching ``text`` literally."""
    return str(re2.escape(text))


def pairs(text: str) -> list[tuple[str, bool]]:
    """A pattern typed as one string as (character, literal) pairs: a backslash makes the next one literal."""
    out: list[tuple[str, bool]] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append((text[i + 1], True))
            i += 2
        else:
            out.append((text[i], False))
            i += 1
    return out


def _in_class(ch: str) -> str:
    return ch if ch.isalnum() or ord(ch) > 0x7F else "\\" + ch


def glob_source(chars: Sequence[tuple[str, bool]], *, slash: bool = False, globstar: bool = False) -> str:
    """RE2 source for a shell pattern given as (character, literal) pairs: ``*``, ``?`` and ``[...]``
    (``!``/``^`` negation, ranges, ``[:alpha:]`` classes); an unclosed ``[`` is literal. ``slash``:
    wildcards also match ``/`` (``find -path``); ``globstar``: ``**`` spans folders (``list_files``)."""
    one = "." if slash else "[^/]"
    out: list[str] = []
    i, n = 0, len(chars)
    while i < n:
        c, literal = chars[i]
        if literal:
            out.append(re2.escape(c))
            i += 1
        elif c == "*":
            j = i
            while j < n and chars[j] == ("*", False):
                j += 1
            if globstar and j - i >= 2:
                if j < n and chars[j] == ("/", False):
                    out.append("(?:.*/)?")
                    j += 1
                else:
                    out.append(".*")
            else:
                out.append(one + "*")
            i = j
        elif c == "?":
            out.append(one)
            i += 1
        elif c == "[":
            j = i + 1
            negate = j < n and chars[j] in (("!", False), ("^", False))
            j += negate
            body: list[str] = []
            k = j
            while k < n:
                ch, lit = chars[k]
                if ch == "]" and not lit and k > j:
                    break
                if ch == "[" and not lit and k + 1 < n and chars[k + 1][0] == ":":
                    end = "".join(x for x, _ in chars[k:]).find(":]", 2)
                    if end > 0:
                        body.append("".join(x for x, _ in chars[k : k + end + 2]))
                        k += end + 2
                        continue
                if ch == "-" and not lit and body and k + 1 < n and chars[k + 1] != ("]", False):
                    body.append("-")
                else:
                    body.append(_in_class(ch))
                k += 1
            if k >= n:  # no closing ']': a literal '['
                out.append(re2.escape("["))
                i += 1
                continue
            out.append("[" + ("^" if negate else "") + "".join(body) + ("/" if negate and not slash else "") + "]")
            i = k + 1
        else:
            out.append(re2.escape(c))
            i += 1
    return "".join(out)


def compile_glob(chars: Sequence[tuple[str, bool]] | str, *, ignore_case: bool = False, slash: bool = False,
                 globstar: bool = False, limits: TerminalLimits | None = None) -> Any:  # fmt: skip
    """An RE2 pattern for a shell pattern (pairs, or a string where a backslash quotes): use
    ``fullmatch(matchable(name))``. Raises `PatternError` (e.g. ``[z-a]``)."""
    source = glob_source(pairs(chars) if isinstance(chars, str) else chars, slash=slash, globstar=globstar)
    try:
        return re2.compile(matchable(source), _options(limits, lines=False, ignore_case=ignore_case))
    except re2.error as exc:
        raise _pattern_error(exc, "pattern") from None


# -- walking --------------------------------------------------------------------------------------------
def scan(path: str | os.PathLike[str], quota: Quota) -> list[os.DirEntry[str]]:
    """The entries of a directory, sorted by name, counted against the quota as they are listed."""
    entries: list[os.DirEntry[str]] = []
    with os.scandir(path) as it:
        for entry in it:
            entries.append(entry)
            if len(entries) % 1024 == 0:
                quota.walked(1024)
    quota.walked(len(entries) % 1024)
    entries.sort(key=lambda e: e.name)
    return entries


def is_real_dir(entry: os.DirEntry[str]) -> bool:
    """A directory, not a symlink to one."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def tree(
    start: str | os.PathLike[str],
    quota: Quota,
    *,
    maxdepth: int | None = None,
    descend: Callable[[tuple[str, ...], os.DirEntry[str]], bool] | None = None,
    on_error: Callable[[tuple[str, ...], OSError], None] | None = None,
) -> Iterator[tuple[tuple[str, ...], os.DirEntry[str]]]:
    """Everything under ``start`` in pre-order, as (names from ``start``, entry): names sorted, no
    recursion (any depth), symlinks never descended. ``descend`` can skip a directory; ``on_error``
    hears of a directory that cannot be listed (the walk goes on). Listing ``start`` itself may raise."""
    stack: list[tuple[tuple[str, ...], Iterator[os.DirEntry[str]]]] = [((), iter(scan(start, quota)))]
    while stack:
        parts, entries = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        here = (*parts, entry.name)
        yield here, entry
        if (maxdepth is None or len(here) < maxdepth) and is_real_dir(entry):
            if descend is not None and not descend(here, entry):
                continue
            try:
                children = scan(entry.path, quota)
            except OSError as exc:
                if on_error is not None:
                    on_error(here, exc)
                continue
            stack.append((here, iter(children)))
