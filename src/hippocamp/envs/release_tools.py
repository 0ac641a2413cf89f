"""The HippoCamp release's terminal tools, answering in the release's JSON shapes.

The release's Docker images put these commands on the shell's ``PATH`` (``docs/docker_api.md`` and the
tool interfaces of ``agent/prompt_modules/config.py`` in the release); each prints one JSON object:

- ``list_files [pattern]`` → ``{"success", "count", "data": [paths], "error"}``;
- ``return_txt <file_path>`` → ``{"success", "data": {"file_info", "summary", "segments"}, "error"}``:
  ``file_info`` as the release's parsed-text files have it (``id``, ``user``, ``file_path``,
  ``file_name``, ``file_type``, ``file_modality``, the dates, the location), ``segments`` in the Gold
  shape (`hippocamp.store.gold.gold_item`: ``content``, ``start_time``/``end_time``, ``page``, and
  hippocamp's ``locator``); ``--page`` is refused as the release refuses it;
- ``return_metadata <file_path>`` → ``{"success", "metadata": {"id", "file_path", "file_type",
  "file_modality", "creation_date", "modification_date", "latitude", "longitude", "location", ...},
  "error"}``: the profile spreadsheet's row when the profile has one, else what the store and the
  file system know;
- ``return_img <file_path> [output_path] [--page N]`` → ``{"success", "image_path", "image_paths",
  "image_b64", "image_b64_list", "page_count", "error"}``: a PDF page (or the first
  `MAX_IMAGE_PAGES` pages without ``--page``) rendered as PNG, an image file as itself; written to
  ``output_path`` or ``/hippocamp/output/<name>_page<N>.png``; ``page_count`` is the document's pages;
- ``return_ori <file_path> [output_path]`` → ``{"success", "file_path", "file_b64", "error"}``;
- ``set_flags <return_txt 0|1> <return_img 0|1>`` turns those two tools off and on; ``hhelp`` lists
  the commands; ``txt``, ``img``, ``ori`` and ``ls_files`` are the release's short names.

Paths are relative to the profile (the release's ``/hippocamp/data``; that prefix is accepted).
Their arguments are not glob-expanded, and an unquoted path with spaces is joined back into one.
Files a tool writes go through `ReleaseTools._emit`: the emulated terminal keeps them in a private
scratch folder outside the profile (``/hippocamp/output`` and ``/tmp`` map there); the jail's tool
broker (`hippocamp.envs.jail`) hands them to the tool inside the jail, which writes them itself.
"""

from __future__ import annotations

import base64
import hashlib
import io as _io
import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from hippocamp.envs.access import ProfileAccess
from hippocamp.envs.bounded import OverLimit, PatternError, TerminalLimits, compile_glob, matchable, shown, tree
from hippocamp.envs.shell import CommandIO
from hippocamp.schema.filetypes import extension, modality_of
from hippocamp.schema.segment import Segment

__all__ = [
    "DATA_DIR",
    "HELP",
    "MAX_IMAGE_PAGES",
    "OUTPUT_DIR",
    "MetadataFn",
    "PageImageFn",
    "ReleaseTools",
    "TextsFn",
    "images_of",
]

#: where the release mounts the profile, and where its tools write
DATA_DIR = "/hippocamp/data"
OUTPUT_DIR = "/hippocamp/output"
#: the largest side of a rendered page, in pixels (a hostile PDF can declare a page of any size)
_MAX_PAGE_PIXELS = 4096
#: pages rendered by ``return_img`` without ``--page``
MAX_IMAGE_PAGES = 10
#: the largest original file ``return_ori`` returns as base64 (the release's HIPPOCAMP_RETURN_ORI_BYTES)
MAX_ORI_BYTES = 16 * 1024 * 1024

TextsFn = Callable[[str], list[Segment]]
PageImageFn = Callable[[str, int], Path]
#: a file's spreadsheet metadata by profile-relative path (`Store.file_metadata`), None when it has none
MetadataFn = Callable[[str], dict[str, Any] | None]

_IMAGE_MIME = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif",
               "bmp": "image/bmp", "webp": "image/webp"}  # fmt: skip

#: the release tools' usage lines, as `help`, `hhelp` and the tool's description show them
HELP = {
    "list_files": "list_files [pattern]  files of the profile as JSON, e.g. list_files '*.pdf'",
    "return_txt": "return_txt <file_path>  the parsed text of a file: file_info and segments (JSON)",
    "return_metadata": "return_metadata <file_path>  dates, type, modality and location of a file (JSON)",
    "return_img": "return_img <file_path> [output_path] [--page N]  page images of a PDF or an image (JSON, base64)",
    "return_ori": "return_ori <file_path> [output_path]  the original file as base64 (JSON)",
    "set_flags": "set_flags <return_txt 0|1> <return_img 0|1>  turn return_txt / return_img off or on",
    "hhelp": "hhelp  the release tools' commands (JSON)",
}
#: the release's short names
ALIASES = {"txt": "return_txt", "img": "return_img", "ori": "return_ori", "ls_files": "list_files"}


def _dumps(payload: dict[str, Any]) -> str:
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


def images_of(text: str) -> list[dict[str, str]]:
    """The images a ``return_img`` answer carries (``{"image_b64", "mime", "image_path"}`` each), from
    its full JSON text; none when the text is not such an answer."""
    text = text.strip()
    if not text.startswith("{") or '"image_b64' not in text:
        return []
    try:
        payload = json.loads(text)
    except ValueError:
        return []
    if not isinstance(payload, dict) or not payload.get("success"):
        return []
    blobs = payload.get("image_b64_list") or ([payload["image_b64"]] if payload.get("image_b64") else [])
    paths = payload.get("image_paths") or [payload.get("image_path") or ""]
    out = []
    for i, blob in enumerate(blobs):
        if not isinstance(blob, str) or not blob:
            continue
        path = str(paths[i]) if i < len(paths) else ""
        mime = _IMAGE_MIME.get(extension(path), "image/png")
        out.append({"image_b64": blob, "mime": mime, "image_path": path})
    return out


def _date(value: Any) -> str | None:
    """A date as the release writes it: ``YYYY-MM-DD HH:MM:SS``."""
    if value is None or value == "":
        return None
    text = str(value)
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return text


def _list_glob(pattern: str, limits: TerminalLimits) -> Callable[[str], bool]:
    """A matcher for ``list_files``: ``**`` spans folders, ``*``/``?``/``[...]`` stay within one name.

    A pattern without ``/`` also matches file names anywhere (``*.pdf``); a pattern without glob
    characters names a file or a folder prefix (``Docs``). Raises `PatternError` (``[z-a]``)."""
    pattern = pattern.strip()
    if pattern.startswith(DATA_DIR):
        pattern = pattern[len(DATA_DIR) :]
    pattern = pattern.lstrip("/") if pattern.strip("/") else "**"
    if not any(ch in pattern for ch in "*?["):
        prefix = pattern.rstrip("/")
        return lambda rel: rel == prefix or rel.startswith(prefix + "/")
    rx = compile_glob(pattern, globstar=True, limits=limits)
    by_name = "/" not in pattern

    def match(rel: str) -> bool:
        return bool(rx.fullmatch(matchable(rel)) or (by_name and rx.fullmatch(matchable(rel.rsplit("/", 1)[-1]))))

    return match


class ReleaseTools(ProfileAccess):
    """The release's tools over the profile (see the module)."""

    _texts: TextsFn
    _page_image: PageImageFn
    #: the spreadsheet metadata of a file; when None, that of the store the parsed text comes from
    _metadata: MetadataFn | None = None
    #: the profile's owner, as ``file_info.user``
    user: str | None = None
    #: whether ``return_img`` answers carry the image bytes (the release's HIPPOCAMP_RETURN_IMG_BYTES=1)
    image_bytes: bool = True
    #: the release's feature flags (``set_flags``)
    flags: dict[str, bool]
    #: files the tools wrote this command line: (the path the agent sees, bytes)
    emitted: list[tuple[str, bytes]]
    #: where rendered pages and written outputs are kept (outside the profile), removed by the finalizer
    _cache: Path | None
    _finalizer: weakref.finalize | None
    _ids: dict[str, int] | None = None
    #: images of a ``return_img`` whose answer is the command line's output, for the agent to attach
    _images: list[dict[str, str]]

    # -- the answers -------------------------------------------------------------------------------
    def _answer(self, io: CommandIO, payload: dict[str, Any]) -> int:
        io.print(_dumps(payload))
        if payload.get("error") is not None:
            io.fail(str(payload["error"]))
        return 0 if payload.get("success") else 1

    def _failed(self, io: CommandIO, keys: dict[str, Any], error: str) -> int:
        return self._answer(io, {"success": False, **keys, "error": error})

    def _tool_file(self, cmd: str, args: list[str]) -> Path | str:
        """The file a release tool names (an unquoted path with spaces is joined back), or an error."""
        if not args:
            return f"usage: {HELP[cmd].split('  ')[0]}"
        arg = self._data_path(" ".join(args))
        probe = CommandIO(0)
        located = self._target(probe, cmd, arg, report=False)
        if located is None or not self._readable(probe, cmd, arg, located[1], report=False):
            return probe.errors[0]
        return located[0]

    def _file_and_output(self, cmd: str, args: list[str]) -> tuple[Path | str, str | None]:
        """``<file_path> [output_path]``: the last argument is an output path when the ones before it
        name a file and it does not continue an unquoted name with spaces."""
        whole = self._tool_file(cmd, args)
        if isinstance(whole, Path) or len(args) < 2:
            return whole, None
        first = self._tool_file(cmd, args[:-1])
        if isinstance(first, Path):
            return first, args[-1]
        return whole, None

    @staticmethod
    def _data_path(arg: str) -> str:
        """A path under the release's ``/hippocamp/data`` as a profile path (``/`` is the profile root)."""
        if arg == DATA_DIR or arg.startswith(DATA_DIR + "/"):
            return arg[len(DATA_DIR) :] or "/"
        return arg

    def _flag_off(self, cmd: str) -> str | None:
        if self.flags.get(cmd, True):
            return None
        return f"{cmd} is disabled by the feature flags (set_flags)"

    # -- list_files --------------------------------------------------------------------------------
    def _list_files(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        if len(args) > 1 and not any(ch in "".join(args) for ch in "*?["):
            args = [" ".join(args)]  # an unquoted name with spaces
        elif len(args) > 1:
            return self._failed(io, {"count": 0, "data": None}, "list_files: only one pattern argument is allowed")
        try:
            match = _list_glob(" ".join(args), self.limits)
        except PatternError as exc:
            return self._failed(io, {"count": 0, "data": None}, f"list_files: {exc}")
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
            return self._failed(io, {"count": 0, "data": None}, f"list_files: stopped: {exc}")
        files.sort()
        return self._answer(io, {"success": True, "count": len(files), "data": files, "error": None})

    # -- return_txt --------------------------------------------------------------------------------
    def _return_txt(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        if off := self._flag_off("return_txt"):
            return self._failed(io, {"data": None}, off)
        if any(a == "--page" or a.startswith("--page=") for a in args):
            return self._failed(
                io, {"data": None}, "return_txt takes only a file path (no --page); use return_img <file_path> --page N"
            )
        path = self._tool_file("return_txt", args)
        if isinstance(path, str):
            return self._failed(io, {"data": None}, path)
        rel = self.sandbox.rel(path)
        try:
            segments = self._texts(rel)
        except Exception as exc:  # a reader or a caller's callable failing: reported to the agent
            return self._failed(io, {"data": None}, f"return_txt: {rel}: {self._scrub(str(exc))}")
        from hippocamp.store.gold import gold_item

        data = {"file_info": self._file_info(rel, path), "summary": "", "segments": [gold_item(s) for s in segments]}
        return self._answer(io, {"success": True, "data": data, "error": None})

    # -- return_metadata ---------------------------------------------------------------------------
    def _return_metadata(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        path = self._tool_file("return_metadata", args)
        if isinstance(path, str):
            return self._failed(io, {"metadata": None}, path)
        rel = self.sandbox.rel(path)
        info = self._file_info(rel, path)
        metadata = {k: v for k, v in info.items() if k not in ("user", "file_name")}
        return self._answer(io, {"success": True, "metadata": metadata, "error": None})

    def _file_info(self, rel: str, path: Path) -> dict[str, Any]:
        """What the release's ``file_info`` holds for a file: the spreadsheet's row over what the store
        and the file system know."""
        store = self._store()
        row = None
        if store is not None:
            try:
                row = store.files().get(rel)
            except Exception:  # a closed or broken store: the file system answers
                row = None
        st = path.stat()
        fs_time = datetime.fromtimestamp(st.st_mtime).strftime("%Y-%m-%d %H:%M:%S")
        info: dict[str, Any] = {
            "id": self._file_id(rel),
            "user": self.user or self.sandbox.root.name,
            "file_path": rel,
            "file_name": PurePosixPath(rel).name,
            "file_type": extension(rel),
            "file_modality": modality_of(rel),
            "creation_date": _date(row.created) if row is not None and row.created else fs_time,
            "modification_date": _date(row.modified) if row is not None and row.modified else fs_time,
            "latitude": None,
            "longitude": None,
            "location": None,
        }
        sheet = self._sheet_metadata(rel) or {}
        info.update({k: v for k, v in sheet.items() if v is not None and k != "file_path"})
        return info

    def _file_id(self, rel: str) -> int:
        """A file's number in the profile (1-based, in path order), as the release numbers its files."""
        if self._ids is None:
            names: list[str] = []
            try:
                for parts, entry in tree(self.sandbox.root, self._quota):
                    if entry.is_file(follow_symlinks=False):
                        names.append("/".join(parts))
            except OverLimit:
                pass
            self._ids = {name: i for i, name in enumerate(sorted(names), 1)}
        return self._ids.get(rel, 0)

    def _store(self) -> Any:
        owner = getattr(self._texts, "__self__", None)
        return owner if owner is not None and callable(getattr(owner, "files", None)) else None

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

    # -- return_img --------------------------------------------------------------------------------
    #: what a failed ``return_img`` answers besides ``success`` and ``error``
    _IMG_KEYS: ClassVar[dict[str, Any]] = {
        "image_path": None, "image_paths": [], "image_b64": None, "image_b64_list": [], "page_count": 0,
    }  # fmt: skip

    def _return_img(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        if off := self._flag_off("return_img"):
            return self._failed(io, dict(self._IMG_KEYS), off)
        page: int | None = None
        rest, i = [], 0
        while i < len(args):
            arg, value = args[i], None
            if arg == "--page":
                value, i = (args[i + 1] if i + 1 < len(args) else ""), i + 2
            elif arg.startswith("--page="):
                value, i = arg.split("=", 1)[1], i + 1
            else:
                rest.append(arg)
                i += 1
                continue
            if not value.isdigit() or int(value) < 1:
                error = f"return_img: --page needs a page number from 1, got {value!r}"
                return self._failed(io, dict(self._IMG_KEYS), error)
            page = int(value)
        path, output = self._file_and_output("return_img", rest)
        if isinstance(path, str):
            return self._failed(io, dict(self._IMG_KEYS), path)
        rel = self.sandbox.rel(path)
        try:
            count = self._page_count(rel)
            pages = [page] if page is not None else list(range(1, min(count, MAX_IMAGE_PAGES) + 1))
            rendered = [(p, self._page_image(rel, p)) for p in pages]
        except Exception as exc:  # a renderer failing on one file is the agent's observation, not a crash
            return self._failed(io, dict(self._IMG_KEYS), f"return_img: {rel}: {self._scrub(str(exc))}")
        stem = PurePosixPath(rel).stem
        paths, blobs = [], []
        for p, image in rendered:
            data = Path(image).read_bytes()
            if output is not None:
                target = output if len(rendered) == 1 else _numbered(output, p)
            else:
                suffix = Path(image).suffix or ".png"
                target = f"{OUTPUT_DIR}/{stem}_page{p}{suffix}" if count > 1 or page else f"{OUTPUT_DIR}/{stem}{suffix}"
            problem = self._emit(target, data)
            if problem is not None:
                return self._failed(io, dict(self._IMG_KEYS), f"return_img: {problem}")
            paths.append(target)
            blobs.append(base64.b64encode(data).decode("ascii") if self.image_bytes else None)
        if self._at_end:
            for target, (_p, image) in zip(paths, rendered, strict=True):
                blob = base64.b64encode(Path(image).read_bytes()).decode("ascii")
                self._images.append({"image_b64": blob, "mime": _IMAGE_MIME.get(extension(target), "image/png"),
                                     "image_path": target})  # fmt: skip
        payload = {
            "success": True,
            "image_path": paths[0],
            "image_paths": paths,
            "image_b64": blobs[0],
            "image_b64_list": [b for b in blobs if b is not None],
            "page_count": count,
            "error": None,
        }
        return self._answer(io, payload)

    def _page_count(self, rel: str) -> int:
        """Pages of a PDF; an image is one page; other files cannot be rendered (ValueError)."""
        ext = extension(rel)
        if modality_of(rel) == "image":
            return 1
        if ext != "pdf":
            raise ValueError(f"cannot render .{ext or '(no extension)'} files as page images (PDF and images only)")
        import pypdfium2 as pdfium

        try:
            doc = pdfium.PdfDocument(str(self.sandbox.root / rel))
        except pdfium.PdfiumError as exc:
            raise ValueError(f"not a readable PDF: {exc}") from None
        try:
            return len(doc)
        finally:
            doc.close()

    # -- return_ori --------------------------------------------------------------------------------
    def _return_ori(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        keys: dict[str, Any] = {"file_path": None, "file_b64": None}
        path, output = self._file_and_output("return_ori", args)
        if isinstance(path, str):
            return self._failed(io, keys, path)
        rel = self.sandbox.rel(path)
        size = path.stat().st_size
        if size > MAX_ORI_BYTES:
            return self._failed(io, keys, f"return_ori: {rel}: {size} bytes is over the {MAX_ORI_BYTES}-byte limit")
        probe = CommandIO(0)
        data = self._read(probe, "return_ori", rel, path, path.stat(), limit=MAX_ORI_BYTES, note=False)
        if data is None:
            return self._failed(io, keys, probe.errors[0] if probe.errors else f"return_ori: {rel}: not read")
        shown_path = f"{DATA_DIR}/{rel}"
        if output is not None:
            problem = self._emit(output, data)
            if problem is not None:
                return self._failed(io, keys, f"return_ori: {problem}")
            shown_path = output
        payload = {
            "success": True,
            "file_path": shown_path,
            "file_b64": base64.b64encode(data).decode("ascii"),
            "error": None,
        }
        return self._answer(io, payload)

    # -- set_flags and hhelp -----------------------------------------------------------------------
    def _set_flags(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        if len(args) != 2 or any(a not in ("0", "1") for a in args):
            return self._failed(io, {"data": None}, f"usage: {HELP['set_flags'].split('  ')[0]}")
        self.flags = {"return_txt": args[0] == "1", "return_img": args[1] == "1"}
        data = {k: int(v) for k, v in self.flags.items()}
        return self._answer(io, {"success": True, "data": data, "error": None})

    def _hhelp(self, args: list[str], stdin: str | None, io: CommandIO) -> int:
        lines = ["AVAILABLE COMMANDS:"] + ["  " + line.split("  ")[0] for line in HELP.values()]
        text = "\n".join(lines) + f"\nFiles are under {DATA_DIR}; outputs go to {OUTPUT_DIR}.\n"
        return self._answer(io, {"success": True, "data": text, "error": None})

    # -- outputs -----------------------------------------------------------------------------------
    def _emit(self, target: str, data: bytes) -> str | None:
        """Write a tool's output file at ``target`` (under ``/hippocamp/output`` or ``/tmp``); returns
        a problem, or None. Kept in the private scratch folder and listed in `emitted`."""
        pure = PurePosixPath(target)
        if not pure.is_absolute():
            pure = PurePosixPath(OUTPUT_DIR) / pure
        if ".." in pure.parts or not any(pure.is_relative_to(d) and pure != PurePosixPath(d)
                                         for d in (OUTPUT_DIR, "/tmp")):  # fmt: skip
            return f"{target}: outputs go under {OUTPUT_DIR}/ or /tmp/"
        self.emitted.append((str(pure), data))
        local = self._cache_dir() / "out" / pure.relative_to("/").as_posix()
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(data)
        return None

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
            raise ValueError(f"cannot render .{ext or '(no extension)'} files as page images (PDF and images only)")
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
            buffer = _io.BytesIO()
            bitmap.to_pil().save(buffer, format="PNG")
            bitmap.close()
            pdf_page.close()
        finally:
            doc.close()
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(buffer.getvalue())
        tmp.replace(out)
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


def _numbered(output: str, page: int) -> str:
    """``out.png`` for page 3 of several: ``out_page3.png``."""
    pure = PurePosixPath(output)
    return str(pure.with_name(f"{pure.stem}_page{page}{pure.suffix or '.png'}"))
