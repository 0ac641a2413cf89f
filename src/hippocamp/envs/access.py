"""How the terminal's commands reach the profile's files: an agent's path resolved inside the
sandbox, what may be read (folders, FIFOs, devices and sockets are refused without being opened, and
so is a hard link to a file outside the profile), reads bounded in bytes and time that say when they
stop early, and a command's inputs as files or its standard input.
"""

from __future__ import annotations

import os
import stat as statmod
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from hippocamp.envs.bounded import Quota, TerminalLimits, tree, unshown
from hippocamp.envs.sandbox import SandboxError
from hippocamp.envs.shell import CommandIO, Shell, Usage

__all__ = ["BINARY_SNIFF", "CHUNK", "Located", "ProfileAccess", "human_size", "iso_time", "iter_lines", "special_kind"]

#: bytes looked at to tell a binary file from text
BINARY_SNIFF = 32 * 1024
#: bytes read at a time
CHUNK = 1024 * 1024

_OPEN_FLAGS = os.O_RDONLY | sum(getattr(os, f, 0) for f in ("O_NONBLOCK", "O_NOFOLLOW", "O_CLOEXEC", "O_NOCTTY"))

#: a path inside the profile and its stat
Located = tuple[Path, os.stat_result]


def iso_time(ts: float) -> str:
    """A POSIX time as ISO 8601 in UTC, to the second."""
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds")


def iter_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` one at a time (a last newline ends the last line, it does not start another)."""
    pos, size = 0, len(text)
    while pos < size:
        end = text.find("\n", pos)
        if end < 0:
            yield text[pos:]
            return
        yield text[pos:end]
        pos = end + 1


def human_size(size: int) -> str:
    """A size as ``ls -h`` shows it: ``512``, ``1.5K``, ``12M``."""
    value = float(size)
    for unit in ("", "K", "M", "G", "T"):
        if value < 1024 or unit == "T":
            return str(size) if unit == "" else (f"{value:.1f}{unit}" if value < 10 else f"{value:.0f}{unit}")
        value /= 1024
    return str(size)


_SPECIAL_KINDS = {
    statmod.S_IFIFO: "fifo (named pipe)",
    statmod.S_IFCHR: "character special",
    statmod.S_IFBLK: "block special",
    statmod.S_IFSOCK: "socket",
}


def special_kind(mode: int) -> str | None:
    """What a special file is (FIFO, device, socket), or None for a regular file or a folder."""
    if statmod.S_ISREG(mode) or statmod.S_ISDIR(mode):
        return None
    return _SPECIAL_KINDS.get(statmod.S_IFMT(mode), "special file")


def _wider(limits: TerminalLimits) -> TerminalLimits:
    """Limits for counting the profile's hard links once: ten times the entries of a command."""
    return replace(limits, max_entries=limits.max_entries * 10)


class ProfileAccess(Shell):
    """What the commands share to reach the profile's files (see the module)."""

    #: "inside": a file with hard links outside the profile is refused; "any": it is read
    hard_links: Literal["inside", "any"]
    #: inode -> links to it inside the profile (counted once, when a hard-linked file is first read)
    _links: dict[int, int] | None

    def _target(self, io: CommandIO, cmd: str, arg: str, *, file: bool = False, report: bool = True) -> Located | None:
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

    def _readable(self, io: CommandIO, cmd: str, arg: str, st: os.stat_result, *, report: bool = True) -> bool:
        """Whether a located file may be read: a folder, a special file (never opened) and a hard
        link to a file outside the profile (an escape) are refused."""
        say = io.err if report else io.fail
        if statmod.S_ISDIR(st.st_mode):
            say(f"{cmd}: {arg}: Is a directory")
            return False
        kind = special_kind(st.st_mode)
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

    def _read(self, io: CommandIO, cmd: str, label: str, path: Path, st: os.stat_result, *, lines: int | None = None,
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
                chunk = os.read(fd, min(CHUNK, cap - got))
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

    def _partial(self, io: CommandIO, cmd: str, label: str, size: int, got: int, tail: bool) -> None:
        if got == 0 and size:
            io.note(f"{cmd}: {label}: not read: this command line read its limit of "
                    f"{human_size(self.limits.max_read_bytes)}B")  # fmt: skip
        else:
            where = "last" if tail else "first"
            io.note(f"{cmd}: {label}: only the {where} {human_size(got)}B of {human_size(size)}B were read (the limit "
                    "per file); head, tail and grep get at the rest")  # fmt: skip

    def _read_arg(self, io: CommandIO, cmd: str, arg: str, **kwargs: Any) -> tuple[bytes, os.stat_result] | None:
        located = self._target(io, cmd, arg, file=True)
        if located is None or not self._readable(io, cmd, arg, located[1]):
            return None
        data = self._read(io, cmd, arg, located[0], located[1], **kwargs)
        return None if data is None else (data, located[1])

    def _inputs(self, cmd: str, args: list[str], stdin: str | None, io: CommandIO, *, lines: int | None = None,
                tail: bool = False) -> Iterator[tuple[str, str, int | None]]:  # fmt: skip
        """``(name, text, size in bytes)`` of each file argument (``-`` or none: stdin, size None),
        one at a time; errors reported."""
        if not args:
            if stdin is None:
                raise Usage("no input: give a file or pipe text into it")
            yield "-", stdin, None
            return
        for arg in args:
            if arg == "-":
                yield "-", stdin or "", None
                continue
            read = self._read_arg(io, cmd, arg, lines=lines, tail=tail)
            if read is not None:
                yield arg, read[0].decode("utf-8", "replace"), read[1].st_size

    def _gather(self, cmd: str, args: list[str], stdin: str | None, io: CommandIO) -> list[str]:
        """The lines of every input, at most `TerminalLimits.max_lines` of them (for sort)."""
        lines: list[str] = []
        most = self.limits.max_lines
        for _name, text, _size in self._inputs(cmd, args, stdin, io):
            for line in iter_lines(text):
                if len(lines) % 4096 == 0:
                    self._quota.check()
                if len(lines) >= most:
                    io.note(f"{cmd}: only the first {most} lines were read (the limit of lines a command holds)")
                    return lines
                lines.append(line)
        return lines

    def _display(self, path: Path) -> str:
        return "/" + self.sandbox.rel(path) if path != self.sandbox.root else "/"
