"""The terminal's commands over files and folders: ``cd``, ``pwd``, ``ls [-laAR1hF]``, ``find``
(``-name -iname -path -ipath -type -maxdepth -mindepth``; ``-exec`` and ``-delete`` refused), ``stat``
and ``file`` (a type told from a file's first bytes, like ``file(1)``).
"""

from __future__ import annotations

import os
import stat as statmod
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from hippocamp.envs.access import BINARY_SNIFF, ProfileAccess, human_size, iso_time, special_kind
from hippocamp.envs.bounded import PatternError, compile_glob, is_real_dir, matchable, scan, tree
from hippocamp.envs.sandbox import SandboxError
from hippocamp.envs.shell import CommandIO, Usage, split_flags
from hippocamp.schema.filetypes import extension

__all__ = ["FileUtils"]

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


class FileUtils(ProfileAccess):
    """``cd``, ``pwd``, ``ls``, ``find``, ``stat`` and ``file``."""

    def _cd(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        if len(args) > 1:
            raise Usage("too many arguments")
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

    def _pwd(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        io.print(self.cwd)
        return 0

    def _ls(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        flags, paths = split_flags("ls", args, "laAR1hF")
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
                io: CommandIO) -> bool:  # fmt: skip
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
        sizes = [human_size(st.st_size) if "h" in flags else str(st.st_size) for _, _, st in stats]
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

    def _find(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
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
                raise Usage(f"{pred} is refused: the terminal is read-only")
            if pred == "-print":
                i += 1
                continue
            if pred not in ("-name", "-iname", "-path", "-ipath", "-type", "-maxdepth", "-mindepth"):
                raise Usage(f"unknown or unsupported predicate `{pred}'")
            if i + 1 >= len(args):
                raise Usage(f"missing argument to `{pred}'")
            value = args[i + 1]
            i += 2
            if pred in ("-name", "-iname", "-path", "-ipath"):
                tests.append(self._find_pattern(pred, value))
            elif pred == "-type":
                if value not in ("f", "d", "l", "p", "s", "c", "b"):
                    raise Usage(f"unknown argument to -type: {value}")
                tests.append(lambda name, disp, kind, v=value: kind == v)
            else:
                if not value.isdigit():
                    raise Usage(f"{pred}: expected a non-negative number, got {value!r}")
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

    def _stat(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        if not args:
            raise Usage("missing operand")
        for arg in args:
            located = self._target(io, "stat", arg)
            if located is None:
                continue
            st = located[1]
            if statmod.S_ISREG(st.st_mode) and not self._readable(io, "stat", arg, st):
                continue
            kind = "directory" if statmod.S_ISDIR(st.st_mode) else special_kind(st.st_mode) or "regular file"
            io.print(f"  File: {arg}")
            io.print(f"  Size: {st.st_size}\tType: {kind}")
            io.print(f"  Mode: ({statmod.S_IMODE(st.st_mode):04o}/{statmod.filemode(st.st_mode)})")
            io.print(f"Modify: {iso_time(st.st_mtime)}")
            io.print(f"Change: {iso_time(st.st_ctime)}")
            birth = getattr(st, "st_birthtime", None)
            io.print(f" Birth: {iso_time(birth) if birth else '-'}")
        return 1 if io.errors else 0

    def _file(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        if not args:
            raise Usage("missing operand")
        for arg in args:
            located = self._target(io, "file", arg)
            if located is None:
                continue
            path, st = located
            if statmod.S_ISDIR(st.st_mode) or special_kind(st.st_mode):
                io.print(f"{arg}: {'directory' if statmod.S_ISDIR(st.st_mode) else special_kind(st.st_mode)}")
            elif self._readable(io, "file", arg, st):
                head = self._read(io, "file", arg, path, st, limit=BINARY_SNIFF)
                if head is not None:
                    io.print(f"{arg}: {_describe_file(head, path.name)}")
        return 1 if io.errors else 0
