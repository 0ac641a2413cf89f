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
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat as statmod
import tempfile
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any, Literal

from hippocamp.envs.base import Observation
from hippocamp.envs.bounded import (
    OverLimit,
    PatternError,
    Quota,
    TerminalLimits,
    TimedOut,
    compile_glob,
    compile_regex,
    is_real_dir,
    literal,
    matchable,
    scan,
    shown,
    tree,
    unshown,
)
from hippocamp.envs.sandbox import Sandbox, SandboxError
from hippocamp.schema.filetypes import extension, modality_of
from hippocamp.schema.segment import Segment

__all__ = ["Observation", "Terminal", "TerminalLimits", "tool_schema"]

_BINARY_SNIFF = 32 * 1024
_CHUNK = 1024 * 1024
#: the largest side of a rendered page, in pixels (a hostile PDF can declare a page of any size)
_MAX_PAGE_PIXELS = 4096

TextsFn = Callable[[str], list[Segment]]
PageImageFn = Callable[[str, int], Path]


# -- lexing and parsing ------------------------------------------------------------------------------
class _Refused(Exception):
    """A command line using a shell feature this terminal does not offer."""


@dataclass
class _Word:
    """A shell word as (character, quoted) pairs, so that globbing knows what was quoted."""

    chars: list[tuple[str, bool]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(c for c, _ in self.chars)

    @property
    def magic(self) -> bool:
        return any(c in "*?[" and not q for c, q in self.chars)


@dataclass
class _Command:
    words: list[_Word]
    quiet: bool = False  # 2>/dev/null
    merge: bool = False  # 2>&1: stderr goes down the pipe with stdout


_OPERATORS = ("&&", "||", "|", ";")
_SPECIAL_AFTER_DOLLAR = re.compile(r"[A-Za-z0-9_{(@*#?$!-]")
_WORD_END = " \t\n;&|<>()"


def _lex(line: str) -> list[_Word | str]:
    """Split a command line into words and operators by POSIX quoting rules; raise on what we refuse."""
    tokens: list[_Word | str] = []
    word: _Word | None = None
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
            word = word or _Word()
            word.chars += [(ch, True) for ch in line[i + 1 : end]]
            i = end + 1
        elif c == '"':
            word = word or _Word()
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
                    raise _Refused("shell expansion ($VAR, $(...), `...`) is not supported")
                word.chars.append((ch, True))
                i += 1
        elif c == "\\":
            word = word or _Word()
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
                raise _Refused("background jobs (&) are not supported")
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
                raise _Refused("redirection is not allowed (read-only terminal); only 2>/dev/null and 2>&1 are")
            tokens.append("2>" + target)
            i = k
        elif c in "<>":
            raise _Refused("redirection (<, >, >>) is not allowed: the terminal is read-only")
        elif c in "()":
            raise _Refused("subshells ( ) are not supported; quote file names that contain parentheses")
        elif c == "`" or (c == "$" and i + 1 < n and _SPECIAL_AFTER_DOLLAR.match(line[i + 1])):
            raise _Refused("shell expansion ($VAR, $(...), `...`) is not supported")
        elif c == "~" and word is None and (i + 1 == n or line[i + 1] in "/" + _WORD_END):
            word = _Word([("/", False)])  # home is the profile root
            i += 2 if line.startswith("/", i + 1) else 1
        else:
            word = word or _Word()
            word.chars.append((c, False))
            i += 1
    flush()
    return tokens


def _parse(tokens: list[_Word | str]) -> list[tuple[str, list[_Command]]]:
    """Group tokens into ``(connector, pipeline)`` pairs; the first connector is ``""``."""
    sequence: list[tuple[str, list[_Command]]] = []
    pipeline: list[_Command] = []
    current = _Command([])
    connector = ""
    for tok in [*tokens, None]:
        if isinstance(tok, _Word):
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
            current = _Command([])
            if tok != "|":
                sequence.append((connector, pipeline))
                pipeline, connector = [], tok or ""
    return sequence


# -- command output --------------------------------------------------------------------------------
class _IO:
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


class _Usage(Exception):
    """Bad options for a command: reported as ``cmd: message`` with status 2."""


_READ_ONLY_REFUSALS = set(
    "rm rmdir mv cp touch mkdir chmod chown chgrp ln dd tee truncate shred install rsync tar zip unzip gzip gunzip "
    "sed awk perl python python3 ruby node bash sh zsh dash fish curl wget ssh scp sftp ftp nc netcat telnet ping "
    "sudo su apt apt-get pip pip3 git kill pkill killall env export set unset eval exec source . xargs nohup open "
    "xdg-open vi vim nano emacs".split()
)

_HELP = {
    "list_files": "list_files [glob]  all files of the profile (JSON), e.g. list_files '**/*.pdf'",
    "return_txt": "return_txt <path>  the parsed text segments of a file with their locators (JSON)",
    "return_img": "return_img <path> --page N  a rendered page image of a PDF, or an image file (JSON)",
    "return_ori": "return_ori <path>  the original file's path, size and type (JSON)",
    "return_metadata": "return_metadata <path>  size, extension, modality, times (JSON)",
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


def _release_json(success: bool, data: Any = None, count: int = 0, error: str | None = None) -> str:
    payload = {"success": success, "count": count, "data": data, "error": error}
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    if shown(text) != text:  # a name with undecodable bytes: escaped inside the JSON strings
        text = json.dumps(_shown_json(payload), ensure_ascii=False, separators=(",", ":"))
    return text


def _shown_json(value: Any) -> Any:
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, list):
        return [_shown_json(v) for v in value]
    if isinstance(value, dict):
        return {shown(str(k)): _shown_json(v) for k, v in value.items()}
    return value


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds")


def _iter_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` one at a time (a last newline ends the last line, it does not start another)."""
    pos, size = 0, len(text)
    while pos < size:
        end = text.find("\n", pos)
        if end < 0:
            yield text[pos:]
            return
        yield text[pos:end]
        pos = end + 1


def _last_lines(text: str, count: int) -> list[str]:
    """The last ``count`` lines of ``text``, without splitting all of it."""
    if count <= 0 or not text:
        return []
    return (text[:-1] if text.endswith("\n") else text).rsplit("\n", count)[-count:]


_SPACE = re.compile(r"\s")


def _count_words(text: str) -> int:
    """``len(text.split())`` a megabyte at a time (cut at whitespace), not one list of every word."""
    words, pos, size = 0, 0, len(text)
    while pos < size:
        end = min(pos + _CHUNK, size)
        m = _SPACE.search(text, end)
        end = m.start() if m else size
        words += len(text[pos:end].split())
        pos = end
    return words


def _join(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _count_arg(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise _Usage(f"invalid number of lines: {value!r}") from None


def _flags(cmd: str, args: list[str], allowed: str) -> tuple[set[str], list[str]]:
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
                    raise _Usage(f"invalid option -- '{ch}'")
                flags.add(ch)
        else:
            rest.append(arg)
    return flags, rest


def _human(size: int) -> str:
    value = float(size)
    for unit in ("", "K", "M", "G", "T"):
        if value < 1024 or unit == "T":
            return str(size) if unit == "" else (f"{value:.1f}{unit}" if value < 10 else f"{value:.0f}{unit}")
        value /= 1024
    return str(size)


_POSIX_CLASSES = {
    "[:alpha:]": "a-zA-Z",
    "[:digit:]": "0-9",
    "[:alnum:]": "a-zA-Z0-9",
    "[:upper:]": "A-Z",
    "[:lower:]": "a-z",
    "[:space:]": r"\s",
    "[:blank:]": r" \t",
    "[:xdigit:]": "0-9A-Fa-f",
    "[:punct:]": r"!-/:-@\[-\x60{-~",
}


def _grep_regex(pattern: str, basic: bool) -> str:
    """A GNU grep pattern as a Python regex: POSIX classes, ``\\<``/``\\>``, and BRE's escaped operators."""
    for name, repl in _POSIX_CLASSES.items():
        pattern = pattern.replace(name, repl)
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if in_class:
            out.append(c)
            if c == "]":
                in_class = False
            i += 1
        elif c == "[":
            in_class = True
            out.append(c)
            i += 1
            for lead in ("^", "]"):  # a leading ']' (after an optional '^') is literal
                if pattern.startswith(lead, i):
                    out.append("\\]" if lead == "]" else lead)
                    i += 1
        elif c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt in "<>":
                out.append(r"\b")
            elif basic and nxt in "|(){}+?":
                out.append(nxt)
            else:
                out.append(c + nxt)
            i += 2
        else:
            out.append("\\" + c if basic and c in "|(){}+?" else c)
            i += 1
    return "".join(out)


def _list_glob(pattern: str, limits: TerminalLimits) -> Callable[[str], bool]:
    """A matcher for ``list_files``: ``**`` spans folders, ``*``/``?``/``[...]`` stay within one name.

    A pattern without ``/`` also matches file names anywhere (``*.pdf``); a pattern without glob
    characters names a file or a folder prefix (``Docs``). Raises `PatternError` (``[z-a]``)."""
    pattern = pattern.strip().lstrip("/") if pattern.strip() not in ("/", "") else "**"
    if not any(ch in pattern for ch in "*?["):
        prefix = pattern.rstrip("/")
        return lambda rel: rel == prefix or rel.startswith(prefix + "/")
    rx = compile_glob(pattern, globstar=True, limits=limits)
    by_name = "/" not in pattern

    def match(rel: str) -> bool:
        return bool(rx.fullmatch(matchable(rel)) or (by_name and rx.fullmatch(matchable(rel.rsplit("/", 1)[-1]))))

    return match


_MAGIC: list[tuple[bytes, str]] = [
    (b"%PDF-", "PDF document"),
    (b"\x89PNG\r\n\x1a\n", "PNG image data"),
    (b"\xff\xd8\xff", "JPEG image data"),
    (b"GIF8", "GIF image data"),
    (b"BM", "PC bitmap"),
    (b"II*\x00", "TIFF image data, little-endian"),
    (b"MM\x00*", "TIFF image data, big-endian"),
    (b"ID3", "Audio file with ID3 version 2"),
    (b"OggS", "Ogg data"),
    (b"fLaC", "FLAC audio bitstream data"),
    (b"\x1aE\xdf\xa3", "Matroska data"),
    (b"{\\rtf", "Rich Text Format data"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "Composite Document File V2 Document (Microsoft Office)"),
    (b"SQLite format 3\x00", "SQLite 3.x database"),
    (b"\x1f\x8b", "gzip compressed data"),
    (b"7z\xbc\xaf\x27\x1c", "7-zip archive data"),
]
_ZIP_KINDS = {
    "docx": "Microsoft Word 2007+",
    "xlsx": "Microsoft Excel 2007+",
    "xlsm": "Microsoft Excel 2007+",
    "pptx": "Microsoft PowerPoint 2007+",
    "odt": "OpenDocument Text",
    "ods": "OpenDocument Spreadsheet",
    "odp": "OpenDocument Presentation",
    "epub": "EPUB document",
}
_TEXT_KINDS = {
    "json": "JSON text data",
    "csv": "CSV text",
    "html": "HTML document",
    "htm": "HTML document",
    "xml": "XML document",
    "md": "Markdown text",
    "eml": "RFC 822 mail",
    "ics": "iCalendar data",
    "vcf": "vCard visiting card",
    "py": "Python script",
}


_SPECIAL_KINDS = {
    statmod.S_IFIFO: "fifo (named pipe)",
    statmod.S_IFCHR: "character special",
    statmod.S_IFBLK: "block special",
    statmod.S_IFSOCK: "socket",
}


def _special(mode: int) -> str | None:
    """What a special file is (FIFO, device, socket), or None for a regular file or a folder."""
    if statmod.S_ISREG(mode) or statmod.S_ISDIR(mode):
        return None
    return _SPECIAL_KINDS.get(statmod.S_IFMT(mode), "special file")


def _describe_file(head: bytes, name: str) -> str:
    """A short type description like ``file(1)``'s from a file's first bytes, then by extension for text."""
    if not head:
        return "empty"
    ext = extension(name)
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            if magic.startswith(b"\x89PNG") and len(head) >= 24:
                w, h = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
                return f"{kind}, {w} x {h}"
            return kind
    if head.startswith(b"PK\x03\x04"):
        return _ZIP_KINDS.get(ext, "Zip archive data")
    if head[:4] == b"RIFF" and head[8:12] in (b"WAVE", b"AVI ", b"WEBP"):
        return {b"WAVE": "RIFF (little-endian) data, WAVE audio", b"AVI ": "RIFF (little-endian) data, AVI"}.get(
            head[8:12], "RIFF (little-endian) data, Web/P image"
        )
    if head[4:8] == b"ftyp":
        brand = head[8:12].decode("ascii", "replace").strip()
        return f"ISO Media, brand {brand}"
    if head[:2] in (b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"):
        return "MPEG ADTS, layer III"
    if b"\x00" in head:
        return "data"
    try:
        head.decode("utf-8")
        kind = "ASCII text" if head.isascii() else "Unicode text, UTF-8 text"
    except UnicodeDecodeError as exc:
        kind = "Unicode text, UTF-8 text" if exc.start > len(head) - 4 else "ISO-8859 text"
    return f"{_TEXT_KINDS[ext]}, {kind}" if ext in _TEXT_KINDS else kind


def _entry_kind(entry: os.DirEntry[str]) -> str:
    """``find -type``'s letter for a directory entry (symlinks not followed)."""
    try:
        if entry.is_symlink():
            return "l"
        if entry.is_dir(follow_symlinks=False):
            return "d"
        if entry.is_file(follow_symlinks=False):
            return "f"
        mode = entry.stat(follow_symlinks=False).st_mode
    except OSError:
        return "?"
    return {statmod.S_IFIFO: "p", statmod.S_IFSOCK: "s", statmod.S_IFCHR: "c", statmod.S_IFBLK: "b"}.get(
        statmod.S_IFMT(mode), "?"
    )


_OPEN_FLAGS = os.O_RDONLY | sum(getattr(os, f, 0) for f in ("O_NONBLOCK", "O_NOFOLLOW", "O_CLOEXEC", "O_NOCTTY"))
_WORD_CHAR = r"[\p{L}\p{N}_]"
_NOT_WORD = r"[^\p{L}\p{N}_]"

#: a path inside the profile and its stat
Located = tuple[Path, os.stat_result]


# -- the terminal ------------------------------------------------------------------------------------
class Terminal:
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
    ) -> None:
        self.sandbox = Sandbox(root)
        self.budget_chars = budget_chars
        self.limits = limits or TerminalLimits()
        self.hard_links = hard_links
        #: no command runs past this `time.monotonic()` instant (None: only the per-command limit)
        self.deadline: float | None = None
        self._texts = texts or self._default_texts
        self._page_image = page_image or self._render_page
        self._cache: Path | None = None
        self._finalizer: weakref.finalize | None = None
        self._escaped = False
        self._quota = Quota(self.limits, self.limits.timeout)
        self._timed_out: str | None = None
        #: inode -> links to it inside the profile (counted once, when a hard-linked file is first read)
        self._links: dict[int, int] | None = None
        #: characters of the final output counted but not kept, and its last character
        self._missing = 0
        self._tail = ""
        self._commands: dict[str, Callable[[list[str], str | None, _IO], int]] = {
            "list_files": self._list_files,
            "return_txt": self._return_txt,
            "return_img": self._return_img,
            "return_ori": self._return_ori,
            "return_metadata": self._return_metadata,
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

    @property
    def cwd(self) -> str:
        """The current directory as the agent sees it (``/`` is the profile root)."""
        return "/" if self.sandbox.cwd == "." else "/" + self.sandbox.cwd

    def close(self) -> None:
        """Remove the page-image cache."""
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- running -----------------------------------------------------------------------------------
    def run(self, command: str, *, timeout: float | None = None) -> Observation:
        """Run one command line and return what the agent sees. It stops after `limits.timeout`
        seconds, or ``timeout`` if shorter, and never runs past `deadline`."""
        self._escaped = False
        self._timed_out = None
        self._missing, self._tail = 0, ""
        self._quota = self._new_quota(timeout)
        try:
            sequence = _parse(_lex(command))
        except _Refused as exc:
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

    def _pipeline(self, pipeline: list[_Command], chunks: list[str], errors: list[str]) -> int:
        stdin: str | None = None
        status = 0
        for k, command in enumerate(pipeline):
            last = k == len(pipeline) - 1
            io = _IO(self.budget_chars + 2 if last else self.limits.max_output_chars)
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

    def _exec(self, words: list[_Word], stdin: str | None, io: _IO) -> int:
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
            args = [w.text for w in words[1:]] if name.startswith(("list_", "return_")) else self._expand(words[1:])
            return handler(args, stdin, io)
        except (_Usage, PatternError) as exc:
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
    def _expand(self, words: list[_Word]) -> list[str]:
        """Unquoted globs expanded inside the profile (sorted; kept literally when nothing matches)."""
        args: list[str] = []
        for i, word in enumerate(words):
            if not word.magic or (i and words[i - 1].text in ("-name", "-iname", "-path", "-ipath")):
                args.append(word.text)
                continue
            args.extend(self._glob(word) or [word.text])
        return args

    def _glob(self, word: _Word) -> list[str]:
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

    # -- paths and files ---------------------------------------------------------------------------
    def _target(self, io: _IO, cmd: str, arg: str, *, file: bool = False, report: bool = True) -> Located | None:
        """An argument resolved inside the profile with its stat; on failure the error is given and
        None returned. ``file``: a folder is an error too."""
        say = io.err if report else io.fail
        try:
            located = self._locate(arg)
        except SandboxError as exc:
            self._escaped = True
            say(f"{cmd}: {arg}: refused: {exc.reason}")
            return None
        except OSError as exc:
            say(f"{cmd}: {arg}: {exc.strerror or type(exc).__name__}")
            return None
        if located is None:
            say(f"{cmd}: {arg}: No such file or directory")
            return None
        if file and statmod.S_ISDIR(located[1].st_mode):
            say(f"{cmd}: {arg}: Is a directory")
            return None
        return located

    def _locate(self, arg: str) -> Located | None:
        """(path, stat) of an agent path, or None when nothing is there; a name shown with ``\\xff``
        escapes is found too. Raises `SandboxError` and `OSError` (naming ``arg``)."""
        for candidate in dict.fromkeys([arg, unshown(arg)]):
            path = self.sandbox.resolve(candidate)
            try:
                return path, os.stat(path)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                raise OSError(exc.errno, exc.strerror, arg) from None
        return None

    def _readable(self, io: _IO, cmd: str, arg: str, st: os.stat_result, *, report: bool = True) -> bool:
        """Whether a located file may be read: a folder, a special file (never opened) and a hard
        link to a file outside the profile (an escape) are refused."""
        say = io.err if report else io.fail
        if statmod.S_ISDIR(st.st_mode):
            say(f"{cmd}: {arg}: Is a directory")
            return False
        kind = _special(st.st_mode)
        if kind is not None:
            say(f"{cmd}: {arg}: refused: a {kind}, not a regular file (it is not opened)")
            return False
        if self._outside_link(st):
            self._escaped = True
            self.sandbox.escapes += 1
            say(f"{cmd}: {arg}: refused: a hard link to a file outside the profile")
            return False
        return True

    def _outside_link(self, st: os.stat_result) -> bool:
        """Whether a file's inode has links outside the profile (more links than the profile holds)."""
        if st.st_nlink <= 1 or self.hard_links == "any":
            return False
        if self._links is None:
            quota = Quota(_wider(self.limits), self._quota.deadline - time.monotonic(), self._quota.why)
            links: dict[int, int] = {}
            for _parts, entry in tree(self.sandbox.root, quota):
                if entry.is_file(follow_symlinks=False):
                    links[entry.inode()] = links.get(entry.inode(), 0) + 1
            self._links = links
        return self._links.get(st.st_ino, 0) < st.st_nlink

    def _read(self, io: _IO, cmd: str, label: str, path: Path, st: os.stat_result, *, lines: int | None = None,
              tail: bool = False, limit: int | None = None, note: bool = True) -> bytes | None:  # fmt: skip
        """A regular file's bytes (already checked with `_readable`), opened without following links
        or blocking: at most `TerminalLimits.max_file_bytes` (the last ones for ``tail``), stopping
        after ``lines`` lines; reading in part is noted."""
        fd = os.open(path, _OPEN_FLAGS)
        chunks: list[bytes] = []
        got = newlines = 0
        try:
            now = os.fstat(fd)
            if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) or not statmod.S_ISREG(now.st_mode):
                io.err(f"{cmd}: {label}: refused: the file changed while it was opened")
                return None
            cap = min(limit or self.limits.max_file_bytes, self._quota.read_room())
            if tail and now.st_size > cap:
                os.lseek(fd, now.st_size - cap, os.SEEK_SET)
            while got < cap:
                self._quota.check()
                chunk = os.read(fd, min(_CHUNK, cap - got))
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
                if lines is not None:
                    newlines += chunk.count(b"\n")
                    if newlines >= lines:
                        break
        finally:
            self._quota.bytes_read += got
            os.close(fd)
        data = b"".join(chunks)
        if tail and now.st_size > cap:
            data = data[data.find(b"\n") + 1 :]  # the first line is cut
        if note and limit is None and got < now.st_size and (lines is None or newlines < lines):
            self._partial(io, cmd, label, now.st_size, got, tail)
        return data

    def _partial(self, io: _IO, cmd: str, label: str, size: int, got: int, tail: bool) -> None:
        if got == 0 and size:
            io.note(f"{cmd}: {label}: not read: this command line read its limit of "
                    f"{_human(self.limits.max_read_bytes)}B")  # fmt: skip
        else:
            where = "last" if tail else "first"
            io.note(f"{cmd}: {label}: only the {where} {_human(got)}B of {_human(size)}B were read (the limit "
                    "per file); head, tail and grep get at the rest")  # fmt: skip

    def _read_arg(self, io: _IO, cmd: str, arg: str, **kwargs: Any) -> tuple[bytes, os.stat_result] | None:
        located = self._target(io, cmd, arg, file=True)
        if located is None or not self._readable(io, cmd, arg, located[1]):
            return None
        data = self._read(io, cmd, arg, located[0], located[1], **kwargs)
        return None if data is None else (data, located[1])

    def _inputs(self, cmd: str, args: list[str], stdin: str | None, io: _IO, *, lines: int | None = None,
                tail: bool = False) -> Iterator[tuple[str, str, int | None]]:  # fmt: skip
        """``(name, text, size in bytes)`` of each file argument (``-`` or none: stdin, size None),
        one at a time; errors reported."""
        if not args:
            if stdin is None:
                raise _Usage("no input: give a file or pipe text into it")
            yield "-", stdin, None
            return
        for arg in args:
            if arg == "-":
                yield "-", stdin or "", None
                continue
            read = self._read_arg(io, cmd, arg, lines=lines, tail=tail)
            if read is not None:
                yield arg, read[0].decode("utf-8", "replace"), read[1].st_size

    def _gather(self, cmd: str, args: list[str], stdin: str | None, io: _IO) -> list[str]:
        """The lines of every input, at most `TerminalLimits.max_lines` of them (for sort)."""
        lines: list[str] = []
        most = self.limits.max_lines
        for _name, text, _size in self._inputs(cmd, args, stdin, io):
            for line in _iter_lines(text):
                if len(lines) % 4096 == 0:
                    self._quota.check()
                if len(lines) >= most:
                    io.note(f"{cmd}: only the first {most} lines were read (the limit of lines a command holds)")
                    return lines
                lines.append(line)
        return lines

    def _display(self, path: Path) -> str:
        return "/" + self.sandbox.rel(path) if path != self.sandbox.root else "/"

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

    # -- release tools -------------------------------------------------------------------------------
    def _tool(self, io: _IO, success: bool, data: Any = None, count: int = 0, error: str | None = None) -> int:
        io.print(_release_json(success, data, count, error))
        if error is not None:
            io.fail(error)
        return 0 if success else 1

    def _tool_file(self, cmd: str, args: list[str], io: _IO) -> Path | str:
        """The file a release tool names (an unquoted path with spaces is joined back), or an error."""
        if not args:
            return f"usage: {_HELP[cmd].split('  ')[0]}"
        arg = " ".join(args)
        probe = _IO(0)
        located = self._target(probe, cmd, arg, report=False)
        if located is None or not self._readable(probe, cmd, arg, located[1], report=False):
            return probe.errors[0]
        return located[0]

    def _list_files(self, args: list[str], stdin: str | None, io: _IO) -> int:
        try:
            match = _list_glob(" ".join(args), self.limits)
        except PatternError as exc:
            return self._tool(io, False, error=f"list_files: {exc}")
        files = []
        try:
            for parts, entry in tree(self.sandbox.root, self._quota):
                if entry.is_symlink():
                    path = Path(entry.path)
                    if self.sandbox.is_escape_link(path) or not path.is_file():
                        continue
                elif not entry.is_file(follow_symlinks=False):
                    continue  # folders, FIFOs, devices, sockets
                rel = "/".join(parts)
                if match(rel):
                    files.append(rel)
        except OverLimit as exc:
            return self._tool(io, False, error=f"list_files: stopped: {exc}")
        files.sort()
        return self._tool(io, True, files, len(files))

    def _return_txt(self, args: list[str], stdin: str | None, io: _IO) -> int:
        path = self._tool_file("return_txt", args, io)
        if isinstance(path, str):
            return self._tool(io, False, error=path)
        rel = self.sandbox.rel(path)
        try:
            segments = self._texts(rel)
        except Exception as exc:  # a reader or a caller's callable failing: reported to the agent
            return self._tool(io, False, error=f"return_txt: {rel}: {self._scrub(str(exc))}")
        data = [
            {"content": s.text, "locator": s.locator.dump() if s.locator is not None else None, "where": s.where()}
            for s in segments
        ]
        return self._tool(io, True, data, len(data))

    def _return_img(self, args: list[str], stdin: str | None, io: _IO) -> int:
        page, rest, i = 1, [], 0
        while i < len(args):
            arg = args[i]
            value = None
            if arg == "--page":
                value, i = (args[i + 1] if i + 1 < len(args) else ""), i + 2
            elif arg.startswith("--page="):
                value, i = arg.split("=", 1)[1], i + 1
            else:
                rest.append(arg)
                i += 1
                continue
            if not value.isdigit() or int(value) < 1:
                return self._tool(io, False, error=f"return_img: --page needs a page number from 1, got {value!r}")
            page = int(value)
        path = self._tool_file("return_img", rest, io)
        if isinstance(path, str):
            return self._tool(io, False, error=path)
        rel = self.sandbox.rel(path)
        try:
            image = self._page_image(rel, page)
        except Exception as exc:  # a renderer failing on one file is the agent's observation, not a crash
            return self._tool(io, False, error=f"return_img: {rel}: {self._scrub(str(exc))}")
        return self._tool(io, True, str(image), 1)

    def _return_ori(self, args: list[str], stdin: str | None, io: _IO) -> int:
        path = self._tool_file("return_ori", args, io)
        if isinstance(path, str):
            return self._tool(io, False, error=path)
        data = {"path": str(path), "size": path.stat().st_size, "type": extension(path.name)}
        return self._tool(io, True, data, 1)

    def _return_metadata(self, args: list[str], stdin: str | None, io: _IO) -> int:
        path = self._tool_file("return_metadata", args, io)
        if isinstance(path, str):
            return self._tool(io, False, error=path)
        st = path.stat()
        rel = self.sandbox.rel(path)
        data = {
            "path": rel,
            "size": st.st_size,
            "extension": extension(rel),
            "modality": modality_of(rel),
            "mtime": _iso(st.st_mtime),
            "ctime": _iso(st.st_ctime),
        }
        return self._tool(io, True, data, 1)

    def _default_texts(self, rel: str) -> list[Segment]:
        from hippocamp.perceive.run import perceive_file

        result = perceive_file(self.sandbox.root, rel, hash_file=False)
        if not result.segments and result.status != "ok":
            raise ValueError(result.reason or result.status)
        return result.segments

    def _render_page(self, rel: str, page: int) -> Path:
        """The default renderer: a PDF page as PNG in a cache outside the profile; an image is its own page."""
        path = self.sandbox.root / rel
        ext = extension(rel)
        if modality_of(rel) == "image":
            if page != 1:
                raise ValueError(f"an image has one page, not {page}")
            return path
        if ext != "pdf":
            raise ValueError(f"cannot render .{ext or '(no extension)'} files as pages (PDF and images only)")
        import pypdfium2 as pdfium

        st = path.stat()
        key = hashlib.sha256(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:20]
        out = self._cache_dir() / f"{key}-p{page}.png"
        if out.exists():
            return out
        try:
            doc = pdfium.PdfDocument(str(path))
        except pdfium.PdfiumError as exc:
            raise ValueError(f"not a readable PDF: {exc}") from None
        try:
            if not 1 <= page <= len(doc):
                raise ValueError(f"page {page} out of range (the PDF has {len(doc)} pages)")
            pdf_page = doc[page - 1]
            side = max(pdf_page.get_size()) or 1.0
            bitmap = pdf_page.render(scale=min(2.0, _MAX_PAGE_PIXELS / side))  # a huge page stays a sane image
            bitmap.to_pil().save(out)
            bitmap.close()
            pdf_page.close()
        finally:
            doc.close()
        return out

    def _cache_dir(self) -> Path:
        if self._cache is None:
            cache = Path(tempfile.mkdtemp(prefix="hippocamp-pages-")).resolve()
            if cache == self.sandbox.root or self.sandbox.root in cache.parents:
                shutil.rmtree(cache, ignore_errors=True)
                raise ValueError("the page cache would be inside the profile; set TMPDIR elsewhere")
            self._cache = cache
            self._finalizer = weakref.finalize(self, shutil.rmtree, cache, True)
        return self._cache

    # -- navigation --------------------------------------------------------------------------------
    def _cd(self, args: list[str], stdin: str | None, io: _IO) -> int:
        if len(args) > 1:
            raise _Usage("too many arguments")
        arg = args[0] if args else "/"
        try:
            self.sandbox.chdir(arg)
        except SandboxError as exc:
            self._escaped = True
            io.err(f"cd: {arg}: refused: {exc.reason}")
            return 1
        except FileNotFoundError:
            io.err(f"cd: {arg}: No such file or directory")
            return 1
        except NotADirectoryError:
            io.err(f"cd: {arg}: Not a directory")
            return 1
        except OSError as exc:
            io.err(f"cd: {arg}: {exc.strerror or type(exc).__name__}")
            return 1
        return 0

    def _pwd(self, args: list[str], stdin: str | None, io: _IO) -> int:
        io.print(self.cwd)
        return 0

    def _ls(self, args: list[str], stdin: str | None, io: _IO) -> int:
        flags, paths = _flags("ls", args, "laAR1hF")
        status = 0
        files: list[tuple[str, Path]] = []
        dirs: list[tuple[str, Path]] = []
        for arg in paths or ["."]:
            located = self._target(io, "ls", arg)
            if located is None:
                status = 2
            else:
                (dirs if statmod.S_ISDIR(located[1].st_mode) else files).append((arg, located[0]))
        blocks: list[list[str]] = []
        if files:
            blocks.append(self._ls_entries(files, flags))
        headers = len(paths) > 1 or bool(files) or "R" in flags
        for arg, path in dirs:
            if not self._ls_dir(arg, path, flags, headers, blocks, io):
                status = 2
        io.write("\n".join("".join(line + "\n" for line in block) for block in blocks))
        return status

    def _ls_dir(self, label: str, path: Path, flags: set[str], header: bool, blocks: list[list[str]],
                io: _IO) -> bool:  # fmt: skip
        """A folder's block (and with -R every subfolder's, in order, without recursion); False if
        one could not be listed."""
        ok = True
        stack = [(label, path, header)]
        while stack:
            label, path, header = stack.pop()
            try:
                entries = scan(path, self._quota)
            except OSError as exc:
                io.err(f"ls: cannot open directory '{label}': {exc.strerror or type(exc).__name__}")
                ok = False
                continue
            if not ({"a", "A"} & flags):
                entries = [e for e in entries if not e.name.startswith(".")]
            listed = [(e.name, Path(e.path)) for e in entries]
            if "a" in flags:
                parent = path.parent if path != self.sandbox.root else path
                listed = [(".", path), ("..", parent), *listed]
            blocks.append(([f"{label}:"] if header else []) + self._ls_entries(listed, flags))
            if "R" in flags:
                subs = [(f"{label.rstrip('/')}/{e.name}", Path(e.path), True) for e in entries if is_real_dir(e)]
                stack.extend(reversed(subs))
        return ok

    def _ls_entries(self, entries: list[tuple[str, Path]], flags: set[str]) -> list[str]:
        def name_of(name: str, path: Path) -> str:
            if "F" in flags:
                if path.is_symlink():
                    return name + "@"
                if path.is_dir():
                    return name + "/"
            return name

        if "l" not in flags:
            return [name_of(n, p) for n, p in entries]
        lines = []
        stats = []
        for name, path in entries:
            self._quota.check()
            stats.append((name, path, path.lstat()))
        sizes = [_human(st.st_size) if "h" in flags else str(st.st_size) for _, _, st in stats]
        width = max((len(s) for s in sizes), default=1)
        for (name, path, st), size in zip(stats, sizes, strict=True):
            when = datetime.fromtimestamp(st.st_mtime, tz=UTC).strftime("%Y-%m-%d %H:%M")
            line = f"{statmod.filemode(st.st_mode)} {size:>{width}} {when} {name_of(name, path)}"
            if statmod.S_ISLNK(st.st_mode):
                if self.sandbox.is_escape_link(path):
                    line += " -> (outside the profile)"
                else:
                    line += " -> " + self._display(Path(os.path.realpath(path)))
            lines.append(line)
        return lines

    def _find(self, args: list[str], stdin: str | None, io: _IO) -> int:
        starts: list[str] = []
        i = 0
        while i < len(args) and not args[i].startswith("-") and args[i] not in ("!", "("):
            starts.append(args[i])
            i += 1
        tests: list[Callable[[str, str, str], bool]] = []
        maxdepth, mindepth = None, 0
        while i < len(args):
            pred = args[i]
            if pred in ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprintf", "-fls"):
                raise _Usage(f"{pred} is refused: the terminal is read-only")
            if pred == "-print":
                i += 1
                continue
            if pred not in ("-name", "-iname", "-path", "-ipath", "-type", "-maxdepth", "-mindepth"):
                raise _Usage(f"unknown or unsupported predicate `{pred}'")
            if i + 1 >= len(args):
                raise _Usage(f"missing argument to `{pred}'")
            value = args[i + 1]
            i += 2
            if pred in ("-name", "-iname", "-path", "-ipath"):
                tests.append(self._find_pattern(pred, value))
            elif pred == "-type":
                if value not in ("f", "d", "l", "p", "s", "c", "b"):
                    raise _Usage(f"unknown argument to -type: {value}")
                tests.append(lambda name, disp, kind, v=value: kind == v)
            else:
                if not value.isdigit():
                    raise _Usage(f"{pred}: expected a non-negative number, got {value!r}")
                if pred == "-maxdepth":
                    maxdepth = int(value)
                else:
                    mindepth = int(value)
        status = 0
        for start in starts or ["."]:
            located = self._target(io, "find", start)
            if located is None:
                status = 1
                continue
            path, st = located
            label = start if start == "/" else start.rstrip("/") or start
            kind = "d" if statmod.S_ISDIR(st.st_mode) else "f" if statmod.S_ISREG(st.st_mode) else "?"
            if mindepth == 0 and all(t(label, label, kind) for t in tests):
                io.print(label)
            if not statmod.S_ISDIR(st.st_mode) or maxdepth == 0:
                continue
            lead = label if label.endswith("/") else label + "/"

            def unlisted(parts: tuple[str, ...], exc: OSError, lead: str = lead) -> None:
                io.err(f"find: '{lead}{'/'.join(parts)}': {exc.strerror or type(exc).__name__}")

            for parts, entry in tree(path, self._quota, maxdepth=maxdepth, on_error=unlisted):
                if len(parts) < mindepth:
                    continue
                shown_as = lead + "/".join(parts)
                if all(t(entry.name, shown_as, _entry_kind(entry)) for t in tests):
                    io.print(shown_as)
        return 1 if status or io.errors else 0

    def _find_pattern(self, pred: str, value: str) -> Callable[[str, str, str], bool]:
        """A ``-name``/``-iname``/``-path``/``-ipath`` test; a pattern RE2 cannot take (``[z-a]``) matches nothing."""
        try:
            rx = compile_glob(value, ignore_case=pred.startswith("-i"), slash=pred.endswith("path"), limits=self.limits)
        except PatternError:
            return lambda name, disp, kind: False
        if pred.endswith("path"):
            return lambda name, disp, kind: bool(rx.fullmatch(matchable(disp)))
        return lambda name, disp, kind: bool(rx.fullmatch(matchable(name)))

    # -- reading -------------------------------------------------------------------------------------
    def _grep(self, args: list[str], stdin: str | None, io: _IO) -> int:
        flags: set[str] = set()
        patterns: list[str] = []
        include: list[str] = []
        exclude: list[str] = []
        positional: list[str] = []
        i, done = 0, False
        while i < len(args):
            arg = args[i]
            i += 1
            if done or arg == "-" or not arg.startswith("-"):
                positional.append(arg)
            elif arg == "--":
                done = True
            elif arg.startswith("--"):
                key, _, value = arg[2:].partition("=")
                if key == "include" and value:
                    include.append(value)
                elif key == "exclude" and value:
                    exclude.append(value)
                elif key == "ignore-case":
                    flags.add("i")
                elif key != "color" and key != "colour":
                    raise _Usage(f"unrecognized option '{arg}'")
            else:
                for k, ch in enumerate(arg[1:], start=1):
                    if ch == "e":
                        rest = arg[k + 1 :]
                        if not rest and i >= len(args):
                            raise _Usage("option requires an argument -- 'e'")
                        patterns.append(rest or args[i])
                        i += 0 if rest else 1
                        break
                    if ch not in "irRnlcvEFwxoHhs":
                        raise _Usage(f"invalid option -- '{ch}'")
                    flags.add(ch)
        if not patterns:
            if not positional:
                raise _Usage("usage: grep [OPTION]... PATTERNS [FILE]...")
            patterns.append(positional.pop(0))
        if "F" in flags:
            source = "|".join(literal(p) for p in patterns)
        else:
            source = "|".join(f"(?:{_grep_regex(p, basic='E' not in flags)})" for p in patterns)
        word = "w" in flags and "x" not in flags
        if "x" in flags:
            source = rf"^(?:{source})$"
        elif word:  # a match with a non-word character (or the line's edge) on each side
            source = rf"(?:^|{_NOT_WORD})({source})(?:{_NOT_WORD}|$)"
        rx = compile_regex(source, ignore_case="i" in flags, limits=self.limits)
        includes = [compile_glob(g, limits=self.limits) for g in include]
        excludes = [compile_glob(g, limits=self.limits) for g in exclude]
        quiet = "s" in flags
        recursive = bool({"r", "R"} & flags)
        sources: list[tuple[str, Path | None, os.stat_result | None]] = []
        status = 0
        if not positional and not recursive:
            if stdin is None:
                raise _Usage("no input: give a file (or -r for the current folder) or pipe text into it")
            sources.append(("(standard input)", None, None))
        for arg in positional or (["."] if recursive else []):
            located = self._target(io, "grep", arg, report=not quiet)
            if located is None:
                status = 2
            elif not statmod.S_ISDIR(located[1].st_mode):
                if self._readable(io, "grep", arg, located[1], report=not quiet):
                    sources.append((arg, located[0], located[1]))
                else:
                    status = 2
            elif not recursive:
                if not quiet:
                    io.err(f"grep: {arg}: Is a directory")
                status = 2
            else:
                prefix = "" if not positional else ("/" if arg == "/" else arg.rstrip("/") + "/")

                def unlisted(parts: tuple[str, ...], exc: OSError, prefix: str = prefix) -> None:
                    if not quiet:
                        io.err(f"grep: {prefix}{'/'.join(parts)}: {exc.strerror or type(exc).__name__}")

                found: list[tuple[str, Path]] = []
                for parts, entry in tree(located[0], self._quota, on_error=unlisted):
                    if entry.is_symlink() or not entry.is_file(follow_symlinks=False):
                        continue  # links (in or out) are not followed; FIFOs, devices and sockets are skipped
                    name = matchable(entry.name)
                    if includes and not any(g.fullmatch(name) for g in includes):
                        continue
                    if any(g.fullmatch(name) for g in excludes):
                        continue
                    found.append(("/".join(parts), Path(entry.path)))
                sources.extend((prefix + rel, file, None) for rel, file in sorted(found))
        named = ("H" in flags or len(sources) > 1 or recursive) and "h" not in flags
        found_any = False
        for label, path, st in sources:
            if path is None:
                data, binary = (stdin or "").encode("utf-8", "replace"), False
            else:
                if st is None:  # a file met while walking: special files and outside links are skipped
                    st = os.stat(path)
                    if _special(st.st_mode) is not None or self._outside_link(st):
                        continue
                read = self._read(io, "grep", label, path, st, note=False)
                if read is None:
                    status = 2
                    continue
                data, binary = read, b"\x00" in read[:_BINARY_SNIFF]
                if len(data) < st.st_size and not binary:
                    self._partial(io, "grep", label, st.st_size, len(data), False)
            hits = self._grep_lines(rx, data, invert="v" in flags)
            if "l" in flags:
                if next(hits, None) is not None:
                    found_any = True
                    io.print(label)
            elif "c" in flags:
                count = sum(1 for _ in hits)
                found_any = found_any or bool(count)
                io.print(f"{label}:{count}" if named else str(count))
            elif binary:
                if next(hits, None) is not None:
                    found_any = True
                    io.print(f"grep: {label}: binary file matches")
            else:
                for n, start, end in hits:
                    found_any = True
                    line = data[start:end]
                    lead = (f"{label}:" if named else "") + (f"{n}:" if "n" in flags else "")
                    if "o" in flags and "v" not in flags:
                        for a, b in self._spans(rx, line, 1 if word else 0):
                            io.print(lead + line[a:b].decode("utf-8", "replace"))
                    else:
                        io.print(lead + line.decode("utf-8", "replace"))
        return status if status else (0 if found_any else 1)

    def _grep_lines(self, rx: Any, data: bytes, *, invert: bool) -> Iterator[tuple[int, int, int]]:
        """(line number, start, end) of each line of ``data`` that matches (or, ``invert``, does not):
        one RE2 search per matching line over the whole text, never a search per line."""
        matching = self._matching_lines(rx, data)
        if not invert:
            yield from matching
            return
        upcoming = next(matching, None)
        pos, number, size = 0, 1, len(data)
        while pos < size:
            self._quota.check()
            end = data.find(b"\n", pos)
            end = size if end < 0 else end
            if upcoming is not None and upcoming[0] == number:
                upcoming = next(matching, None)
            else:
                yield number, pos, end
            pos, number = end + 1, number + 1

    def _matching_lines(self, rx: Any, data: bytes) -> Iterator[tuple[int, int, int]]:
        pos, number, size = 0, 1, len(data)
        while pos < size:
            self._quota.check()
            m = rx.search(data, pos)
            if m is None:
                return
            at = m.start()
            start = data.rfind(b"\n", pos, at) + 1 or pos
            if start >= size:
                return  # the empty string after the last newline is not a line
            end = data.find(b"\n", at)
            end = size if end < 0 else end
            number += data.count(b"\n", pos, start)
            yield number, start, end
            pos, number = end + 1, number + 1

    def _spans(self, rx: Any, line: bytes, group: int) -> Iterator[tuple[int, int]]:
        """Where ``rx`` matches in ``line`` (``group`` 1: the part inside a -w match), non-empty, in order."""
        pos = 0
        while pos <= len(line):
            self._quota.check()
            m = rx.search(line, pos)
            if m is None:
                return
            a, b = m.span(group)
            if 0 <= a < b:
                yield a, b
                pos = b
            else:
                pos = max(m.end(), pos + 1)

    def _head_tail(self, cmd: str, args: list[str], stdin: str | None, io: _IO) -> int:
        count, from_start = 10, False
        files: list[str] = []
        i = 0
        while i < len(args):
            arg = args[i]
            i += 1
            value: str | None = None
            if arg in ("-n", "--lines"):
                if i >= len(args):
                    raise _Usage("option requires an argument -- 'n'")
                value, i = args[i], i + 1
            elif arg.startswith("--lines="):
                value = arg.split("=", 1)[1]
            elif arg.startswith("-n"):
                value = arg[2:]
            elif re.fullmatch(r"-\d+", arg):
                value = arg[1:]
            elif arg.startswith("-") and arg != "-":
                raise _Usage(f"invalid option -- '{arg[1:]}'")
            else:
                files.append(arg)
            if value is not None:
                from_start = cmd == "tail" and value.startswith("+")
                count = _count_arg(value.lstrip("+"))
        head = cmd == "head"
        inputs = self._inputs(cmd, files, stdin, io, lines=count if head else None, tail=not head and not from_start)
        for k, (name, text, _size) in enumerate(inputs):
            if len(files) > 1:
                io.write(("\n" if k else "") + f"==> {name} <==\n")
            if head:
                io.write(_join(list(islice(_iter_lines(text), max(count, 0)))))
            elif from_start:  # tail -n +N: from line N on
                pos = 0
                for _ in range(max(count - 1, 0)):
                    pos = text.find("\n", pos) + 1
                    if not pos:
                        pos = len(text)
                        break
                rest = text[pos:]
                io.write(rest + ("\n" if rest and not rest.endswith("\n") else ""))
            else:
                io.write(_join(_last_lines(text, count)))
        return 1 if io.errors else 0

    def _head(self, args: list[str], stdin: str | None, io: _IO) -> int:
        return self._head_tail("head", args, stdin, io)

    def _tail_cmd(self, args: list[str], stdin: str | None, io: _IO) -> int:
        return self._head_tail("tail", args, stdin, io)

    def _cat(self, args: list[str], stdin: str | None, io: _IO) -> int:
        flags, files = _flags("cat", args, "n")
        number = 0
        for _name, text, _size in self._inputs("cat", files, stdin, io):
            if "n" in flags:
                for line in _iter_lines(text):
                    self._quota.check()
                    number += 1
                    io.print(f"{number:6}\t{line}")
            else:
                io.write(text)
        return 1 if io.errors else 0

    def _wc(self, args: list[str], stdin: str | None, io: _IO) -> int:
        flags, files = _flags("wc", args, "lwcm")
        flags = flags or {"l", "w", "c"}
        rows: list[tuple[list[int], str]] = []
        for name, text, size in self._inputs("wc", files, stdin, io):
            counts = {
                "l": text.count("\n"),
                "w": _count_words(text),
                "m": len(text),
                "c": len(text.encode("utf-8", "surrogateescape")) if size is None else size,
            }
            rows.append(([counts[k] for k in "lwmc" if k in flags], "" if name == "-" else name))
        if len(rows) > 1:
            rows.append(([sum(col) for col in zip(*(r[0] for r in rows), strict=True)], "total"))
        if rows:
            single = len(rows) == 1 and len(rows[0][0]) == 1
            width = 1 if single else max(len(str(v)) for values, _ in rows for v in values)
            for values, name in rows:
                io.print(" ".join(f"{v:>{width}}" for v in values) + (f" {name}" if name else ""))
        return 1 if io.errors else 0

    def _stat(self, args: list[str], stdin: str | None, io: _IO) -> int:
        if not args:
            raise _Usage("missing operand")
        for arg in args:
            located = self._target(io, "stat", arg)
            if located is None:
                continue
            st = located[1]
            if statmod.S_ISREG(st.st_mode) and not self._readable(io, "stat", arg, st):
                continue
            kind = "directory" if statmod.S_ISDIR(st.st_mode) else _special(st.st_mode) or "regular file"
            io.print(f"  File: {arg}")
            io.print(f"  Size: {st.st_size}\tType: {kind}")
            io.print(f"  Mode: ({statmod.S_IMODE(st.st_mode):04o}/{statmod.filemode(st.st_mode)})")
            io.print(f"Modify: {_iso(st.st_mtime)}")
            io.print(f"Change: {_iso(st.st_ctime)}")
            birth = getattr(st, "st_birthtime", None)
            io.print(f" Birth: {_iso(birth) if birth else '-'}")
        return 1 if io.errors else 0

    def _file(self, args: list[str], stdin: str | None, io: _IO) -> int:
        if not args:
            raise _Usage("missing operand")
        for arg in args:
            located = self._target(io, "file", arg)
            if located is None:
                continue
            path, st = located
            if statmod.S_ISDIR(st.st_mode) or _special(st.st_mode):
                io.print(f"{arg}: {'directory' if statmod.S_ISDIR(st.st_mode) else _special(st.st_mode)}")
            elif self._readable(io, "file", arg, st):
                head = self._read(io, "file", arg, path, st, limit=_BINARY_SNIFF)
                if head is not None:
                    io.print(f"{arg}: {_describe_file(head, path.name)}")
        return 1 if io.errors else 0

    def _echo(self, args: list[str], stdin: str | None, io: _IO) -> int:
        newline = not args or args[0] != "-n"
        io.write(" ".join(args if newline else args[1:]) + ("\n" if newline else ""))
        return 0

    def _sort(self, args: list[str], stdin: str | None, io: _IO) -> int:
        flags, files = _flags("sort", args, "rnuf")
        lines = self._gather("sort", files, stdin, io)
        key: Callable[[str], Any] | None = None
        if "n" in flags:

            def key(line: str) -> tuple[float, str]:
                m = re.match(r"\s*(-?\d+(?:\.\d+)?)", line)
                return (float(m.group(1)) if m else 0.0, line.casefold() if "f" in flags else line)

        elif "f" in flags:
            key = str.casefold
        keys: list[Any] = lines
        if key is not None:
            keys = []
            for k, line in enumerate(lines):
                if k % 4096 == 0:
                    self._quota.check()
                keys.append(key(line))
        order = sorted(range(len(lines)), key=keys.__getitem__, reverse="r" in flags)  # stable, like lines.sort
        self._quota.check()
        chosen, seen = [], set()
        for k, i in enumerate(order):
            if k % 4096 == 0:
                self._quota.check()
            if "u" in flags:
                if keys[i] in seen:
                    continue
                seen.add(keys[i])
            chosen.append(lines[i])
        io.write(_join(chosen))
        return 1 if io.errors else 0

    def _uniq(self, args: list[str], stdin: str | None, io: _IO) -> int:
        flags, files = _flags("uniq", args, "c")
        if len(files) > 1:
            raise _Usage("writing an output file is refused: the terminal is read-only")
        previous: str | None = None
        count = 0

        def flush() -> None:
            if previous is not None:
                io.print(f"{count:7} {previous}" if "c" in flags else previous)

        for _name, text, _size in self._inputs("uniq", files[:1], stdin, io):
            for line in _iter_lines(text):
                self._quota.check()
                if line == previous:
                    count += 1
                else:
                    flush()
                    previous, count = line, 1
        flush()
        return 1 if io.errors else 0

    def _help(self, args: list[str], stdin: str | None, io: _IO) -> int:
        io.print("Read-only terminal over the profile (/ is the profile root). Pipes |, ; && || work.")
        for line in _HELP.values():
            io.print("  " + line)
        return 0


def _wider(limits: TerminalLimits) -> TerminalLimits:
    """Limits for counting the profile's hard links once: ten times the entries of a command."""
    return replace(limits, max_entries=limits.max_entries * 10)
