"""The terminal's text commands: ``grep [-irRnlcvEFwxoHhs] [-e PAT] [--include/--exclude=GLOB]``
(GNU pattern syntax matched by RE2, one search per matching line), ``head``, ``tail`` (``-n N``,
``-N``, ``-n +N``), ``cat [-n]``, ``wc [-lwcm]``, ``sort [-rnuf]``, ``uniq [-c]`` and ``echo``; each
reads files or its standard input.
"""

from __future__ import annotations

import os
import re
import stat as statmod
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from hippocamp.envs.access import BINARY_SNIFF, CHUNK, ProfileAccess, iter_lines, special_kind
from hippocamp.envs.bounded import compile_glob, compile_regex, literal, matchable, tree
from hippocamp.envs.shell import CommandIO, Usage, split_flags

__all__ = ["TextUtils"]


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
        end = min(pos + CHUNK, size)
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
        raise Usage(f"invalid number of lines: {value!r}") from None


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


_NOT_WORD = r"[^\p{L}\p{N}_]"


class TextUtils(ProfileAccess):
    """``grep``, ``head``, ``tail``, ``cat``, ``wc``, ``sort``, ``uniq`` and ``echo``."""

    def _grep(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
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
                    raise Usage(f"unrecognized option '{arg}'")
            else:
                for k, ch in enumerate(arg[1:], start=1):
                    if ch == "e":
                        rest = arg[k + 1 :]
                        if not rest and i >= len(args):
                            raise Usage("option requires an argument -- 'e'")
                        patterns.append(rest or args[i])
                        i += 0 if rest else 1
                        break
                    if ch not in "irRnlcvEFwxoHhs":
                        raise Usage(f"invalid option -- '{ch}'")
                    flags.add(ch)
        if not patterns:
            if not positional:
                raise Usage("usage: grep [OPTION]... PATTERNS [FILE]...")
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
                raise Usage("no input: give a file (or -r for the current folder) or pipe text into it")
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
                    if special_kind(st.st_mode) is not None or self._outside_link(st):
                        continue
                read = self._read(io, "grep", label, path, st, note=False)
                if read is None:
                    status = 2
                    continue
                data, binary = read, b"\x00" in read[:BINARY_SNIFF]
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

    def _head_tail(self, cmd: str, args: list[str], stdin: str | None, io: CommandIO) -> int:
        count, from_start = 10, False
        files: list[str] = []
        i = 0
        while i < len(args):
            arg = args[i]
            i += 1
            value: str | None = None
            if arg in ("-n", "--lines"):
                if i >= len(args):
                    raise Usage("option requires an argument -- 'n'")
                value, i = args[i], i + 1
            elif arg.startswith("--lines="):
                value = arg.split("=", 1)[1]
            elif arg.startswith("-n"):
                value = arg[2:]
            elif re.fullmatch(r"-\d+", arg):
                value = arg[1:]
            elif arg.startswith("-") and arg != "-":
                raise Usage(f"invalid option -- '{arg[1:]}'")
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
                io.write(_join(list(islice(iter_lines(text), max(count, 0)))))
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

    def _head(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        return self._head_tail("head", args, stdin, io)

    def _tail_cmd(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        return self._head_tail("tail", args, stdin, io)

    def _cat(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        flags, files = split_flags("cat", args, "n")
        number = 0
        for _name, text, _size in self._inputs("cat", files, stdin, io):
            if "n" in flags:
                for line in iter_lines(text):
                    self._quota.check()
                    number += 1
                    io.print(f"{number:6}\t{line}")
            else:
                io.write(text)
        return 1 if io.errors else 0

    def _wc(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        flags, files = split_flags("wc", args, "lwcm")
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

    def _echo(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        newline = not args or args[0] != "-n"
        io.write(" ".join(args if newline else args[1:]) + ("\n" if newline else ""))
        return 0

    def _sort(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        flags, files = split_flags("sort", args, "rnuf")
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

    def _uniq(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        flags, files = split_flags("uniq", args, "c")
        if len(files) > 1:
            raise Usage("writing an output file is refused: the terminal is read-only")
        previous: str | None = None
        count = 0

        def flush() -> None:
            if previous is not None:
                io.print(f"{count:7} {previous}" if "c" in flags else previous)

        for _name, text, _size in self._inputs("uniq", files[:1], stdin, io):
            for line in iter_lines(text):
                self._quota.check()
                if line == previous:
                    count += 1
                else:
                    flush()
                    previous, count = line, 1
        flush()
        return 1 if io.errors else 0
