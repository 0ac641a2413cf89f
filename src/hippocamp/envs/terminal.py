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
  left as is).

Refused with an error observation: every other program (``rm``, ``python``, ``curl``, ...), redirects
(``>``, ``>>``, ``<``), ``$VAR`` / ``$(...)`` / backticks, subshells ``( )``, background ``&``, env
assignments, ``find -exec/-delete``. Paths leaving the profile (``..`` above the root, ``/..``,
symlinks out, NUL bytes) are refused, counted in ``sandbox.escapes`` and flag ``escaped``.
Files are read up to 64 MiB each.
"""

from __future__ import annotations

import fnmatch
import glob
import hashlib
import json
import os
import re
import shutil
import stat as statmod
import tempfile
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hippocamp.envs.base import Observation
from hippocamp.envs.sandbox import Sandbox, SandboxError
from hippocamp.schema.filetypes import extension, modality_of
from hippocamp.schema.segment import Segment

__all__ = ["Observation", "Terminal", "tool_schema"]

MAX_READ = 64 * 1024 * 1024
_BINARY_SNIFF = 32 * 1024

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

    @property
    def pattern(self) -> str:
        return "".join(glob.escape(c) if q else c for c, q in self.chars)


@dataclass
class _Command:
    words: list[_Word]
    quiet: bool = False  # 2>/dev/null


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
            k = j
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
            current.quiet = current.quiet or tok == "2>/dev/null"
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
    """One command's output: stdout chunks, shown stderr lines, and every error message."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.shown: list[str] = []
        self.errors: list[str] = []

    def print(self, line: str = "") -> None:
        self.out.append(line + "\n")

    def err(self, message: str) -> None:
        self.shown.append(message + "\n")
        self.errors.append(message)

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
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds")


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


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
    "[:punct:]": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
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


def _list_glob(pattern: str) -> Callable[[str], bool]:
    """A matcher for ``list_files``: ``**`` spans folders, ``*``/``?``/``[...]`` stay within one name.

    A pattern without ``/`` also matches file names anywhere (``*.pdf``); a pattern without glob
    characters names a file or a folder prefix (``Docs``)."""
    pattern = pattern.strip().lstrip("/") if pattern.strip() not in ("/", "") else "**"
    if not any(ch in pattern for ch in "*?["):
        prefix = pattern.rstrip("/")
        return lambda rel: rel == prefix or rel.startswith(prefix + "/")
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    rx = re.compile("".join(out))
    by_name = "/" not in pattern
    return lambda rel: bool(rx.fullmatch(rel) or (by_name and rx.fullmatch(rel.rsplit("/", 1)[-1])))


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


def _describe_file(path: Path) -> str:
    """A short type description like ``file(1)``'s, by magic bytes, then by extension for text."""
    if path.is_dir():
        return "directory"
    with path.open("rb") as fh:
        head = fh.read(_BINARY_SNIFF)
    if not head:
        return "empty"
    ext = extension(path.name)
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


# -- the terminal ------------------------------------------------------------------------------------
class Terminal:
    """A read-only HippoCamp terminal over one profile; `run` one command line at a time."""

    def __init__(
        self,
        root: Path | str,
        *,
        texts: TextsFn | None = None,
        page_image: PageImageFn | None = None,
        budget_chars: int = 8000,
    ) -> None:
        self.sandbox = Sandbox(root)
        self.budget_chars = budget_chars
        self._texts = texts or self._default_texts
        self._page_image = page_image or self._render_page
        self._cache: Path | None = None
        self._finalizer: weakref.finalize | None = None
        self._escaped = False
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
            "tail": self._tail,
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
    def run(self, command: str) -> Observation:
        """Run one command line and return what the agent sees."""
        self._escaped = False
        try:
            sequence = _parse(_lex(command))
        except _Refused as exc:
            return Observation(f"refused: {exc}", ok=False, error=f"refused: {exc}")
        except ValueError as exc:
            return Observation(f"error: {exc}", ok=False, error=f"error: {exc}")
        chunks: list[str] = []
        errors: list[str] = []
        status = 0
        for connector, pipeline in sequence:
            if (connector == "&&" and status != 0) or (connector == "||" and status == 0):
                continue
            status = self._pipeline(pipeline, chunks, errors)
        text = "".join(chunks)
        text = text[:-1] if text.endswith("\n") else text
        truncated = len(text) > self.budget_chars
        if truncated:
            text = text[: self.budget_chars] + f"\n[... truncated {len(text) - self.budget_chars} chars]"
        return Observation(
            text=text,
            ok=not errors,
            error="\n".join(errors) if errors else None,
            truncated=truncated,
            escaped=self._escaped,
        )

    def _pipeline(self, pipeline: list[_Command], chunks: list[str], errors: list[str]) -> int:
        stdin: str | None = None
        status = 0
        for k, command in enumerate(pipeline):
            io = _IO()
            status = self._exec(command.words, stdin, io)
            if not command.quiet:
                chunks.extend(io.shown)
            errors.extend(io.errors)
            stdin = io.stdout
            if k == len(pipeline) - 1:
                chunks.append(stdin)
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
        args = [w.text for w in words[1:]] if name.startswith(("list_", "return_")) else self._expand(words[1:])
        try:
            return handler(args, stdin, io)
        except _Usage as exc:
            io.err(f"{name}: {exc}")
            return 2
        except OSError as exc:  # a file vanishing or unreadable mid-command
            io.err(f"{name}: {exc.filename or ''}: {exc.strerror or exc}")
            return 1

    def _expand(self, words: list[_Word]) -> list[str]:
        """Unquoted globs expanded inside the profile (sorted; kept literally when nothing matches)."""
        args: list[str] = []
        for i, word in enumerate(words):
            if not word.magic or (i and words[i - 1].text in ("-name", "-iname", "-path", "-ipath")):
                args.append(word.text)
                continue
            pattern = word.pattern
            absolute = pattern.startswith("/")
            base = self.sandbox.root / ("" if absolute else self.sandbox.cwd)
            found = sorted(glob.glob(pattern.lstrip("/") if absolute else pattern, root_dir=base))
            found = [("/" + m if absolute else m) for m in found]
            found = [m for m in found if self.sandbox.allows(m)]
            args.extend(found or [word.text])
        return args

    # -- helpers ---------------------------------------------------------------------------------
    def _target(self, io: _IO, cmd: str, arg: str, *, file: bool = False, report: bool = True) -> Path | None:
        """Resolve an argument inside the profile; on failure print the error and return None."""
        try:
            path = self.sandbox.resolve(arg)
        except SandboxError as exc:
            self._escaped = True
            (io.err if report else io.fail)(f"{cmd}: {arg}: refused: {exc.reason}")
            return None
        if not path.exists():
            (io.err if report else io.fail)(f"{cmd}: {arg}: No such file or directory")
            return None
        if file and path.is_dir():
            (io.err if report else io.fail)(f"{cmd}: {arg}: Is a directory")
            return None
        return path

    @staticmethod
    def _load(path: Path) -> tuple[str, bool]:
        """A file's text (UTF-8, undecodable bytes replaced; first 64 MiB) and whether it looks binary."""
        with path.open("rb") as fh:
            data = fh.read(MAX_READ)
        return data.decode("utf-8", "replace"), b"\x00" in data[:_BINARY_SNIFF]

    def _inputs(self, cmd: str, args: list[str], stdin: str | None, io: _IO) -> list[tuple[str, str]]:
        """``(name, text)`` of each file argument (``-`` or none: stdin), errors reported."""
        if not args:
            if stdin is None:
                raise _Usage("no input: give a file or pipe text into it")
            return [("-", stdin)]
        out = []
        for arg in args:
            if arg == "-":
                out.append(("-", stdin or ""))
                continue
            path = self._target(io, cmd, arg, file=True)
            if path is not None:
                out.append((arg, self._load(path)[0]))
        return out

    def _display(self, path: Path) -> str:
        return "/" + self.sandbox.rel(path) if path != self.sandbox.root else "/"

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
        probe = _IO()
        path = self._target(probe, cmd, arg, file=True, report=False)
        return path if path is not None else probe.errors[0]

    def _list_files(self, args: list[str], stdin: str | None, io: _IO) -> int:
        match = _list_glob(" ".join(args))
        files = []
        for top, _dirs, names in self.sandbox.walk(self.sandbox.root):
            for name in names:
                path = top / name
                if path.is_symlink() and (self.sandbox.is_escape_link(path) or not path.is_file()):
                    continue
                rel = self.sandbox.rel(path)
                if match(rel):
                    files.append(rel)
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
            return self._tool(io, False, error=f"return_txt: {rel}: {exc}")
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
            return self._tool(io, False, error=f"return_img: {rel}: {exc}")
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
            bitmap = pdf_page.render(scale=2)
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
            path = self._target(io, "ls", arg)
            if path is None:
                status = 2
            else:
                (dirs if path.is_dir() else files).append((arg, path))
        blocks: list[list[str]] = []
        if files:
            blocks.append(self._ls_entries([(arg, path) for arg, path in files], flags))
        headers = len(paths) > 1 or bool(files) or "R" in flags
        for arg, path in dirs:
            self._ls_dir(arg, path, flags, headers, blocks)
        io.out.append("\n".join("".join(line + "\n" for line in block) for block in blocks))
        return status

    def _ls_dir(self, label: str, path: Path, flags: set[str], header: bool, blocks: list[list[str]]) -> None:
        names = sorted(os.listdir(path))
        if not ({"a", "A"} & flags):
            names = [n for n in names if not n.startswith(".")]
        entries = [(n, path / n) for n in names]
        if "a" in flags:
            parent = path.parent if path != self.sandbox.root else path
            entries = [(".", path), ("..", parent), *entries]
        block = [f"{label}:"] if header else []
        blocks.append(block + self._ls_entries(entries, flags))
        if "R" in flags:
            for name, sub in entries:
                if name not in (".", "..") and not sub.is_symlink() and sub.is_dir():
                    self._ls_dir(f"{label.rstrip('/')}/{name}", sub, flags, True, blocks)

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
        stats = [(n, p, p.lstat()) for n, p in entries]
        sizes = [_human(st.st_size) if "h" in flags else str(st.st_size) for _, _, st in stats]
        width = max((len(s) for s in sizes), default=1)
        lines = []
        for (name, path, st), size in zip(stats, sizes, strict=True):
            when = datetime.fromtimestamp(st.st_mtime, tz=UTC).strftime("%Y-%m-%d %H:%M")
            line = f"{statmod.filemode(st.st_mode)} {size:>{width}} {when} {name_of(name, path)}"
            if path.is_symlink():
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
        tests: list[Callable[[str, str, Path], bool]] = []
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
            if pred == "-name":
                tests.append(lambda name, disp, p, v=value: fnmatch.fnmatchcase(name, v))
            elif pred == "-iname":
                tests.append(lambda name, disp, p, v=value: fnmatch.fnmatchcase(name.casefold(), v.casefold()))
            elif pred == "-path":
                tests.append(lambda name, disp, p, v=value: fnmatch.fnmatchcase(disp, v))
            elif pred == "-ipath":
                tests.append(lambda name, disp, p, v=value: fnmatch.fnmatchcase(disp.casefold(), v.casefold()))
            elif pred == "-type":
                if value not in ("f", "d", "l"):
                    raise _Usage(f"unknown argument to -type: {value}")
                tests.append(lambda name, disp, p, v=value: _kind(p) == v)
            else:
                if not value.isdigit():
                    raise _Usage(f"{pred}: expected a non-negative number, got {value!r}")
                if pred == "-maxdepth":
                    maxdepth = int(value)
                else:
                    mindepth = int(value)
        status = 0
        for start in starts or ["."]:
            path = self._target(io, "find", start)
            if path is None:
                status = 1
                continue
            label = start if start == "/" else start.rstrip("/") or start
            for disp, p, depth in _find_walk(label, path, maxdepth):
                if depth >= mindepth and all(t(p.name if depth else label, disp, p) for t in tests):
                    io.print(disp)
        return status

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
            source = "|".join(re.escape(p) for p in patterns)
        else:
            source = "|".join(f"(?:{_grep_regex(p, basic='E' not in flags)})" for p in patterns)
        if "w" in flags:
            source = rf"(?<!\w)(?:{source})(?!\w)"
        if "x" in flags:
            source = rf"\A(?:{source})\Z"
        try:
            rx = re.compile(source, re.IGNORECASE if "i" in flags else 0)
        except re.error as exc:
            raise _Usage(f"invalid regular expression: {exc}") from None
        recursive = bool({"r", "R"} & flags)
        sources: list[tuple[str, Path | None]] = []
        status = 0
        if not positional and not recursive:
            if stdin is None:
                raise _Usage("no input: give a file (or -r for the current folder) or pipe text into it")
            sources.append(("(standard input)", None))
        for arg in positional or (["."] if recursive else []):
            path = self._target(io, "grep", arg, report="s" not in flags)
            if path is None:
                status = 2
            elif not path.is_dir():
                sources.append((arg, path))
            elif not recursive:
                if "s" not in flags:
                    io.err(f"grep: {arg}: Is a directory")
                status = 2
            else:
                prefix = "" if not positional else ("/" if arg == "/" else arg.rstrip("/") + "/")
                found_files: list[tuple[str, Path]] = []
                for top, _dirs, names in self.sandbox.walk(path):
                    for name in names:
                        if (top / name).is_symlink():
                            continue
                        if include and not any(fnmatch.fnmatchcase(name, g) for g in include):
                            continue
                        if any(fnmatch.fnmatchcase(name, g) for g in exclude):
                            continue
                        found_files.append(((top / name).relative_to(path).as_posix(), top / name))
                sources.extend((prefix + rel, file) for rel, file in sorted(found_files))
        named = ("H" in flags or len(sources) > 1 or recursive) and "h" not in flags
        found = False
        for label, path in sources:
            text, binary = (stdin or "", False) if path is None else self._load(path)
            hits = [(n, line) for n, line in enumerate(_lines(text), 1) if bool(rx.search(line)) != ("v" in flags)]
            found = found or bool(hits)
            if "l" in flags:
                if hits:
                    io.print(label)
            elif "c" in flags:
                io.print(f"{label}:{len(hits)}" if named else str(len(hits)))
            elif binary:
                if hits:
                    io.print(f"grep: {label}: binary file matches")
            else:
                for n, line in hits:
                    lead = (f"{label}:" if named else "") + (f"{n}:" if "n" in flags else "")
                    if "o" in flags and "v" not in flags:
                        for m in rx.finditer(line):
                            if m.group(0):
                                io.print(lead + m.group(0))
                    else:
                        io.print(lead + line)
        return status if status else (0 if found else 1)

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
        inputs = self._inputs(cmd, files, stdin, io)
        for k, (name, text) in enumerate(inputs):
            if len(inputs) > 1:
                io.out.append(("\n" if k else "") + f"==> {name} <==\n")
            lines = _lines(text)
            if cmd == "head":
                chosen = lines[:count]
            elif from_start:
                chosen = lines[max(count - 1, 0) :]
            else:
                chosen = lines[-count:] if count > 0 else []
            io.out.append(_join(chosen))
        return 1 if io.errors else 0

    def _head(self, args: list[str], stdin: str | None, io: _IO) -> int:
        return self._head_tail("head", args, stdin, io)

    def _tail(self, args: list[str], stdin: str | None, io: _IO) -> int:
        return self._head_tail("tail", args, stdin, io)

    def _cat(self, args: list[str], stdin: str | None, io: _IO) -> int:
        flags, files = _flags("cat", args, "n")
        number = 0
        for _name, text in self._inputs("cat", files, stdin, io):
            if "n" in flags:
                for line in _lines(text):
                    number += 1
                    io.print(f"{number:6}\t{line}")
            else:
                io.out.append(text)
        return 1 if io.errors else 0

    def _wc(self, args: list[str], stdin: str | None, io: _IO) -> int:
        flags, files = _flags("wc", args, "lwcm")
        flags = flags or {"l", "w", "c"}
        rows: list[tuple[list[int], str]] = []
        for name, text in self._inputs("wc", files, stdin, io):
            counts = {
                "l": text.count("\n"),
                "w": len(text.split()),
                "m": len(text),
                "c": len(text.encode("utf-8", "surrogateescape"))
                if name == "-"
                else self.sandbox.resolve(name).stat().st_size,
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
            path = self._target(io, "stat", arg)
            if path is None:
                continue
            st = path.stat()
            kind = "directory" if path.is_dir() else "regular file" if path.is_file() else "other"
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
            path = self._target(io, "file", arg)
            if path is not None:
                io.print(f"{arg}: {_describe_file(path)}")
        return 1 if io.errors else 0

    def _echo(self, args: list[str], stdin: str | None, io: _IO) -> int:
        newline = not args or args[0] != "-n"
        io.out.append(" ".join(args if newline else args[1:]) + ("\n" if newline else ""))
        return 0

    def _sort(self, args: list[str], stdin: str | None, io: _IO) -> int:
        flags, files = _flags("sort", args, "rnuf")
        lines = [line for _name, text in self._inputs("sort", files, stdin, io) for line in _lines(text)]

        def key(line: str) -> tuple[float, str]:
            text = line.casefold() if "f" in flags else line
            if "n" in flags:
                m = re.match(r"\s*(-?\d+(?:\.\d+)?)", line)
                return (float(m.group(1)) if m else 0.0, text)
            return (0.0, text)

        lines.sort(key=key, reverse="r" in flags)
        if "u" in flags:
            unique, seen = [], set()
            for line in lines:
                if key(line) not in seen:
                    seen.add(key(line))
                    unique.append(line)
            lines = unique
        io.out.append(_join(lines))
        return 1 if io.errors else 0

    def _uniq(self, args: list[str], stdin: str | None, io: _IO) -> int:
        flags, files = _flags("uniq", args, "c")
        if len(files) > 1:
            raise _Usage("writing an output file is refused: the terminal is read-only")
        runs: list[list[Any]] = []
        for _name, text in self._inputs("uniq", files[:1], stdin, io):
            for line in _lines(text):
                if runs and runs[-1][0] == line:
                    runs[-1][1] += 1
                else:
                    runs.append([line, 1])
        io.out.append(_join([f"{n:7} {line}" if "c" in flags else line for line, n in runs]))
        return 1 if io.errors else 0

    def _help(self, args: list[str], stdin: str | None, io: _IO) -> int:
        io.print("Read-only terminal over the profile (/ is the profile root). Pipes |, ; && || work.")
        for line in _HELP.values():
            io.print("  " + line)
        return 0


def _kind(path: Path) -> str:
    return "l" if path.is_symlink() else "d" if path.is_dir() else "f"


def _find_walk(label: str, path: Path, maxdepth: int | None) -> list[tuple[str, Path, int]]:
    """Pre-order ``(display, path, depth)`` under ``path``, names sorted, symlinks never descended."""
    out = [(label, path, 0)]

    def visit(disp: str, here: Path, depth: int) -> None:
        if maxdepth is not None and depth >= maxdepth:
            return
        try:
            names = sorted(os.listdir(here))
        except OSError:
            return
        for name in names:
            child = here / name
            child_disp = disp + name if disp.endswith("/") else f"{disp}/{name}"
            out.append((child_disp, child, depth + 1))
            if child.is_dir() and not child.is_symlink():
                visit(child_disp, child, depth + 1)

    if path.is_dir():
        visit(label, path, 0)
    return out
