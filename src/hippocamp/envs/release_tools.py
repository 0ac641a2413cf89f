"""The HippoCamp release's tools as terminal commands, each answering compact JSON
``{"success", "count", "data", "error"}``: ``list_files [glob]``, ``return_txt <path>`` (a file's parsed
segments with their locators), ``return_img <path> --page N`` (a PDF page rendered into a cache outside
the profile, or an image file), ``return_ori <path>`` and ``return_metadata <path>`` (size, type and
file-system times, and under ``metadata`` what the release's spreadsheet says of the file: creation
and modification dates, location, latitude, longitude, ... when the profile has them). Their
arguments are not glob-expanded, and an unquoted path with spaces is joined back into one.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hippocamp.envs.access import ProfileAccess, iso_time
from hippocamp.envs.bounded import OverLimit, PatternError, TerminalLimits, compile_glob, matchable, shown, tree
from hippocamp.envs.shell import CommandIO
from hippocamp.schema.filetypes import extension, modality_of
from hippocamp.schema.segment import Segment

__all__ = ["HELP", "MetadataFn", "PageImageFn", "ReleaseTools", "TextsFn"]

#: the largest side of a rendered page, in pixels (a hostile PDF can declare a page of any size)
_MAX_PAGE_PIXELS = 4096

TextsFn = Callable[[str], list[Segment]]
PageImageFn = Callable[[str, int], Path]
#: a file's spreadsheet metadata by profile-relative path (`Store.file_metadata`), None when it has none
MetadataFn = Callable[[str], dict[str, Any] | None]

#: the release tools' usage lines, as `help` and the tool's description show them
HELP = {
    "list_files": "list_files [glob]  all files of the profile (JSON), e.g. list_files '**/*.pdf'",
    "return_txt": "return_txt <path>  the parsed text segments of a file with their locators (JSON)",
    "return_img": "return_img <path> --page N  a rendered page image of a PDF, or an image file (JSON)",
    "return_ori": "return_ori <path>  the original file's path, size and type (JSON)",
    "return_metadata": "return_metadata <path>  size, extension, modality, times, dates and location (JSON)",
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


class ReleaseTools(ProfileAccess):
    """``list_files``, ``return_txt``, ``return_img``, ``return_ori`` and ``return_metadata``."""

    _texts: TextsFn
    _page_image: PageImageFn
    #: the spreadsheet metadata of a file; when None, that of the store the parsed text comes from
    _metadata: MetadataFn | None = None
    #: where rendered pages are kept (outside the profile), removed by the finalizer
    _cache: Path | None
    _finalizer: weakref.finalize | None

    def _tool(self, io: CommandIO, success: bool, data: Any = None, count: int = 0, error: str | None = None) -> int:
        io.print(_release_json(success, data, count, error))
        if error is not None:
            io.fail(error)
        return 0 if success else 1

    def _tool_file(self, cmd: str, args: list[str], io: CommandIO) -> Path | str:
        """The file a release tool names (an unquoted path with spaces is joined back), or an error."""
        if not args:
            return f"usage: {HELP[cmd].split('  ')[0]}"
        arg = " ".join(args)
        probe = CommandIO(0)
        located = self._target(probe, cmd, arg, report=False)
        if located is None or not self._readable(probe, cmd, arg, located[1], report=False):
            return probe.errors[0]
        return located[0]

    def _list_files(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
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

    def _return_txt(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
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

    def _return_img(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
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

    def _return_ori(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        path = self._tool_file("return_ori", args, io)
        if isinstance(path, str):
            return self._tool(io, False, error=path)
        data = {"path": str(path), "size": path.stat().st_size, "type": extension(path.name)}
        return self._tool(io, True, data, 1)

    def _return_metadata(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
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
            "mtime": iso_time(st.st_mtime),
            "ctime": iso_time(st.st_ctime),
        }
        fields = self._sheet_metadata(rel)
        if fields:
            data["metadata"] = fields
        return self._tool(io, True, data, 1)

    def _sheet_metadata(self, rel: str) -> dict[str, Any] | None:
        """What the profile's metadata spreadsheet says of a file, from ``_metadata`` or else from the
        store the terminal reads parsed text from (``texts=store.segments_of``); None when nothing has it."""
        lookup = self._metadata
        if lookup is None:
            lookup = getattr(getattr(self._texts, "__self__", None), "file_metadata", None)
        if not callable(lookup):
            return None
        try:
            fields = lookup(rel)
        except Exception:  # a closed or broken store: the tool still answers with what the file system says
            return None
        return dict(fields) if isinstance(fields, dict) and fields else None

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
