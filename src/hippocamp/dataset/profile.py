"""Loading a HippoCamp profile: the file tree, its records and per-file metadata.

The release lays a profile out as ``<Name>/{Subset,Fullset}/`` holding the raw file tree
``<Name>/``, the annotations ``<Name>.json`` and ``<Name>_files.xlsx`` (per-file creation time,
modification time and location). `load_profile` accepts the profile folder, one of its variants,
or a records file directly; ``root`` overrides where the files are. Files without a row in the
spreadsheet take their times from the file system.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from hippocamp.schema.io import RecordsFile, read_records
from hippocamp.schema.problems import Problem

__all__ = ["FileMeta", "Profile", "ProfileError", "load_profile", "normalize_path", "read_files_xlsx"]

VARIANTS = ("Fullset", "Subset")


class ProfileError(Exception):
    """A profile that cannot be found or read."""


@dataclass(frozen=True)
class FileMeta:
    """What is known of one file of a profile."""

    path: str
    created: datetime | None = None
    modified: datetime | None = None
    location: str | None = None
    source: Literal["xlsx", "fs"] = "fs"
    size: int | None = None

    def timestamps(self) -> list[datetime]:
        return [t for t in (self.created, self.modified) if t is not None]


def normalize_path(path: str) -> str:
    """Profile-relative POSIX form: backslashes to slashes, no leading ``./`` or ``/``, no ``a/./b``."""
    text = path.replace("\\", "/").strip()
    while text.startswith("./"):
        text = text[2:]
    text = text.lstrip("/")
    if not text:
        return ""
    norm = posixpath.normpath(text)
    return "" if norm == "." else norm


@dataclass
class Profile:
    """A profile: where its files are, its records (if any) and per-file metadata."""

    name: str
    root: Path | None
    records_file: RecordsFile | None = None
    meta_path: Path | None = None
    file_meta: dict[str, FileMeta] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    _by_name: dict[str, list[FileMeta]] = field(default_factory=dict, repr=False)

    @property
    def records(self) -> list[Any]:
        return self.records_file.records if self.records_file else []

    def __post_init__(self) -> None:
        for meta in self.file_meta.values():
            self._by_name.setdefault(PurePosixPath(meta.path).name, []).append(meta)

    def resolve(self, path: str) -> Path | None:
        """The file on disk for a profile-relative path, or None when it is missing or escapes the root."""
        if self.root is None:
            return None
        rel = normalize_path(path)
        if not rel or rel.startswith("../") or rel == ".." or os.path.isabs(path.strip()):
            return None
        candidate = self.root / rel
        try:
            resolved = candidate.resolve()
            resolved.relative_to(self.root.resolve())
        except (OSError, ValueError):
            return None
        return candidate if candidate.is_file() else None

    def meta(self, path: str) -> FileMeta | None:
        """Metadata of a file: its spreadsheet row (by path, else by unique file name), else the file system."""
        rel = normalize_path(path)
        if rel in self.file_meta:
            return self.file_meta[rel]
        same_name = self._by_name.get(PurePosixPath(rel).name, [])
        if same_name:
            return same_name[0]
        found = self.resolve(rel)
        if found is None:
            return None
        st = found.stat()
        return FileMeta(
            path=rel,
            created=_naive_utc(getattr(st, "st_birthtime", None) or st.st_ctime),
            modified=_naive_utc(st.st_mtime),
            source="fs",
            size=st.st_size,
        )

    def times_of(self, path: str) -> list[datetime]:
        """Creation and modification times of a file, for time spans; [] when unknown.

        Like the release's analysis, a path missing from the spreadsheet is looked up by file name
        there; unlike it, a file with no row at all falls back to its file-system times.
        """
        meta = self.meta(path)
        return meta.timestamps() if meta else []


def _naive_utc(stamp: float) -> datetime:
    return datetime.fromtimestamp(stamp, tz=UTC).replace(tzinfo=None)


# -- the metadata spreadsheet ----------------------------------------------------------------------
_COLUMNS = {
    "path": ("filepath", "file_path", "path", "relativepath", "relative_path", "filename", "file"),
    "type": ("filetype", "file_type", "type", "kind"),
    "created": ("creation_date", "creationdate", "created", "creation_time", "createdat", "ctime", "birthtime"),
    "modified": ("modification_date", "modificationdate", "modified", "modification_time", "modifiedat", "mtime"),
    "location": ("location", "gps", "place", "geo", "coordinates"),
}


def _header_map(header: list[Any]) -> dict[str, int]:
    norm = [str(h).strip().lower().replace(" ", "_") if h is not None else "" for h in header]
    found: dict[str, int] = {}
    for role, names in _COLUMNS.items():
        for i, h in enumerate(norm):
            if h in names or h.replace("_", "") in names:
                found.setdefault(role, i)
                break
    return found


def _to_datetime(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    text = str(value).strip()
    for candidate in (text, text.replace("Z", "+00:00")):
        try:
            return _to_datetime(datetime.fromisoformat(candidate))
        except ValueError:
            pass
    for fmt in (
        "%Y/%m/%d %H:%M:%S",
        "%Y/%m/%d %H:%M",
        "%Y/%m/%d",
        "%d/%m/%Y %H:%M",
        "%m/%d/%Y %H:%M",
        "%Y-%m-%d %H:%M",
    ):
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            pass
    raise ValueError(f"not a date/time: {value!r}")


def read_files_xlsx(path: Path, problems: list[Problem] | None = None) -> dict[str, FileMeta]:
    """Rows of a ``<Name>_files.xlsx`` as FileMeta by normalized path. Folders are skipped; a bad cell
    becomes a warning naming the sheet row and column, and the rest of the row is kept."""
    from openpyxl import load_workbook

    problems = problems if problems is not None else []
    try:
        wb = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many types for a corrupt workbook
        raise ProfileError(f"{path}: cannot read the metadata spreadsheet: {exc}") from None
    out: dict[str, FileMeta] = {}
    try:
        ws = wb.worksheets[0]
        rows = ws.iter_rows(values_only=True)
        header = next(rows, None)
        if header is None:
            return out
        cols = _header_map(list(header))
        if "path" not in cols:
            raise ProfileError(f"{path}: the metadata spreadsheet has no FilePath column (header: {list(header)})")
        for rownum, row in enumerate(rows, start=2):

            def cell(role: str, row: tuple[Any, ...] = row) -> Any:
                i = cols.get(role)
                return row[i] if i is not None and i < len(row) else None

            raw_path = cell("path")
            if not isinstance(raw_path, str) or not raw_path.strip():
                continue
            if str(cell("type") or "").strip().lower() == "folder":
                continue
            times: dict[str, datetime | None] = {}
            for role in ("created", "modified"):
                try:
                    times[role] = _to_datetime(cell(role))
                except ValueError as exc:
                    times[role] = None
                    problems.append(
                        Problem(
                            severity="warning",
                            rule="metadata",
                            file=str(path),
                            field=f"row {rownum}, {role}",
                            message=str(exc),
                            expected="a date/time",
                        )
                    )
            location = cell("location")
            rel = normalize_path(raw_path)
            out[rel] = FileMeta(
                path=rel,
                created=times["created"],
                modified=times["modified"],
                location=None if location in (None, "") else str(location),
                source="xlsx",
            )
    finally:
        wb.close()
    return out


# -- finding a profile -----------------------------------------------------------------------------
def _find_records_in(folder: Path) -> Path | None:
    preferred = folder / f"{folder.name}.json"
    if preferred.is_file():
        return preferred
    jsons = sorted(p for p in folder.glob("*.json") if p.is_file())
    beside_tree = [p for p in jsons if (folder / p.stem).is_dir()]  # the release layout: <Name>.json beside <Name>/
    if len(beside_tree) == 1:
        return beside_tree[0]
    if len(jsons) == 1:
        return jsons[0]
    return None


def load_profile(
    path: str | Path,
    root: str | Path | None = None,
    variant: str = "Fullset",
    name: str | None = None,
) -> Profile:
    """Load a profile from a release folder (``<Name>/``, ``<Name>/Fullset``) or a records file.

    Raises `ProfileError` when nothing usable is found; `RecordsFileError` when the records file is
    not JSON. Problems with single records or spreadsheet cells are collected in ``problems``.
    """
    path = Path(path)
    if not path.exists():
        raise ProfileError(f"{path}: no such file or folder")
    records_path: Path | None = None
    folder: Path
    if path.is_file():
        records_path, folder = path, path.parent
        stem = path.stem
    else:
        folder = path
        for v in (variant, *VARIANTS):
            if (folder / v).is_dir():
                folder = folder / v
                break
        records_path = _find_records_in(folder)
        stem = records_path.stem if records_path else folder.name
        if folder.name in VARIANTS and records_path is None:
            stem = folder.parent.name
    profile_name = name or (folder.parent.name if folder.name in VARIANTS else stem)
    if root is not None:
        file_root: Path | None = Path(root)
        if not file_root.is_dir():
            raise ProfileError(f"{file_root}: the profile root is not a folder")
    elif (folder / stem).is_dir():
        file_root = folder / stem
    elif (folder / profile_name).is_dir():
        file_root = folder / profile_name
    elif path.is_dir():
        file_root = folder
    else:
        file_root = None
    problems: list[Problem] = []
    meta_path = next(
        (p for p in (folder / f"{stem}_files.xlsx", folder / f"{profile_name}_files.xlsx") if p.is_file()), None
    )
    file_meta = read_files_xlsx(meta_path, problems) if meta_path else {}
    records_file = None
    if records_path is not None:
        records_file = read_records(records_path)
        problems.extend(records_file.problems)
    elif file_root is None:
        raise ProfileError(f"{path}: found neither a records file nor a file tree")
    return Profile(
        name=profile_name,
        root=file_root,
        records_file=records_file,
        meta_path=meta_path,
        file_meta=file_meta,
        problems=problems,
    )
