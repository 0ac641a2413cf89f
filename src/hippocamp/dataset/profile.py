"""Loading a HippoCamp profile: the file tree, its records and per-file metadata.

The release lays a profile out as ``<Name>/{Subset,Fullset}/`` holding the raw file tree
``<Name>/``, the annotations ``<Name>.json`` and ``<Name>_files.xlsx`` (per-file creation time,
modification time and location). `load_profile` accepts the profile folder, one of its variants,
or a records file directly; ``root`` overrides where the files are. Files without a row in the
spreadsheet take their times from the file system.
"""

from __future__ import annotations

import math
import os
import posixpath
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from datetime import time as clock_time
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from hippocamp.schema.io import RecordsFile, read_records
from hippocamp.schema.problems import Problem, Severity

__all__ = [
    "FileMeta",
    "Profile",
    "ProfileError",
    "SheetRow",
    "file_meta_of",
    "load_profile",
    "normalize_path",
    "read_files_xlsx",
    "read_metadata_sheet",
    "sheet_row_for",
]

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


# -- the metadata spreadsheet -----------------------------------------------------------------------
#: the fields of a spreadsheet row (named as the release's ``return_metadata`` names them), each with
#: the headers read as it, compared in lower case without spaces, underscores, hyphens or dots
_SHEET_FIELDS: dict[str, tuple[str, ...]] = {
    "file_path": ("filepath", "path", "relativepath", "filename", "file"),
    "file_type": ("filetype", "type", "extension", "kind"),
    "file_modality": ("filemodality", "modality"),
    "id": ("id", "fileid"),
    "creation_date": ("creationdate", "created", "creationtime", "createdat", "datecreated", "ctime", "birthtime"),
    "modification_date": (
        "modificationdate",
        "modified",
        "modificationtime",
        "modifiedat",
        "datemodified",
        "lastmodified",
        "mtime",
    ),
    "location": ("location", "place", "address", "locationname", "gps", "geo", "coordinates"),
    "latitude": ("latitude", "lat"),
    "longitude": ("longitude", "lon", "lng", "long"),
}
_DATE_FORMATS = (
    "%Y/%m/%d %H:%M:%S",
    "%Y/%m/%d %H:%M",
    "%Y/%m/%d",
    "%d/%m/%Y %H:%M:%S",
    "%d/%m/%Y %H:%M",
    "%d/%m/%Y",
    "%m/%d/%Y %H:%M",
    "%Y-%m-%d %H:%M",
    "%Y.%m.%d %H:%M:%S",
)
#: a location written as coordinates: ``1.3031, 103.8317`` or ``51.9180 N, 4.4720 E``
_COORDS = re.compile(
    r"^\s*([+-]?\d{1,3}(?:\.\d+)?)\s*°?\s*([NS])?\s*[,;]\s*([+-]?\d{1,3}(?:\.\d+)?)\s*°?\s*([EW])?\s*$", re.I
)


@dataclass
class SheetRow:
    """One file's row of a metadata spreadsheet: its times, and every field as JSON-able values."""

    path: str
    row: int
    created: datetime | None = None
    modified: datetime | None = None
    fields: dict[str, Any] = field(default_factory=dict)


def _header_key(cell: Any) -> str:
    return re.sub(r"[\s_\-.]+", "", str(cell).strip().lower()) if cell is not None else ""


def _sheet_columns(header: list[Any]) -> tuple[dict[str, int], dict[int, str]]:
    """(field -> column) for the fields the release uses, and (column -> header) for the other columns."""
    keys = [_header_key(h) for h in header]
    found: dict[str, int] = {}
    for role, names in _SHEET_FIELDS.items():
        for name in names:
            i = next((i for i, k in enumerate(keys) if k == name and i not in found.values()), None)
            if i is not None:
                found[role] = i
                break
    used = set(found.values())
    others = {i: str(h).strip() for i, h in enumerate(header) if i not in used and keys[i]}
    return found, others


def _sheet_datetime(value: Any) -> datetime:
    """A cell as a naive datetime (aware times converted to UTC); raises ValueError."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if not isinstance(value, str):
        raise ValueError(f"not a date/time: {value!r}")
    text = value.strip()
    try:
        return _sheet_datetime(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        pass
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            pass
    raise ValueError(f"not a date/time: {value!r}")


def _coordinate(value: Any, limit: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"not a number: {value!r}")
    try:
        number = float(value.strip()) if isinstance(value, str) else float(value)
    except ValueError:
        raise ValueError(f"not a number: {value!r}") from None
    if not math.isfinite(number) or abs(number) > limit:
        raise ValueError(f"out of range -{limit:g}..{limit:g}: {value!r}")
    return number


def _coordinates_in(location: str) -> tuple[float, float] | None:
    """(latitude, longitude) of a location written as two coordinates, else None."""
    match = _COORDS.match(location)
    if match is None:
        return None
    lat, ns, lon, ew = match.groups()
    latitude = -float(lat) if (ns or "").upper() == "S" else float(lat)
    longitude = -float(lon) if (ew or "").upper() == "W" else float(lon)
    return (latitude, longitude) if abs(latitude) <= 90 and abs(longitude) <= 180 else None


def _json_cell(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, date | clock_time):
        return value.isoformat()
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool | int) or (isinstance(value, float) and math.isfinite(value)):
        return value
    return str(value)


def read_metadata_sheet(path: Path) -> tuple[dict[str, SheetRow], list[Problem]]:
    """The file rows of a metadata spreadsheet (``<Name>_files.xlsx`` or ``<Name>_Subset.xlsx``) by
    normalized path, and the problems met. Never raises: a workbook that cannot be read, or has no
    file-path column, is one problem and no rows; a cell that cannot be read is a problem naming the
    row and the column, and the rest of its row is kept; a row without a path, or repeating an earlier
    path, is a problem and skipped. Folder rows (``FileType`` ``folder``) are skipped."""
    from openpyxl import load_workbook

    problems: list[Problem] = []

    def problem(message: str, where: str = "", severity: Severity = "warning", **extra: Any) -> None:
        problems.append(
            Problem(severity=severity, rule="metadata", file=str(path), field=where, message=message, **extra)
        )

    rows: dict[str, SheetRow] = {}
    try:
        wb = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many types for a corrupt workbook
        problem(f"cannot read the metadata spreadsheet: {type(exc).__name__}: {exc}", severity="error")
        return rows, problems
    try:
        if not wb.worksheets:
            problem("the metadata spreadsheet has no sheet", severity="error")
            return rows, problems
        cells = wb.worksheets[0].iter_rows(values_only=True)
        header = list(next(cells, None) or [])
        columns, others = _sheet_columns(header)
        if "file_path" not in columns:
            shown = [h for h in header if h is not None]
            problem(f"no file path column (FilePath); header: {shown}", "row 1", "error", expected="FilePath")
            return rows, problems
        names = {role: str(header[i]).strip() for role, i in columns.items()}
        for rownum, values in enumerate(cells, start=2):
            if not any(v not in (None, "") for v in values):
                continue
            row = _sheet_row(values, rownum, columns, others, names, problem)
            if row is None:
                continue
            if row.path in rows:
                problem(f"{row.path!r} again (first in row {rows[row.path].row}); row skipped", f"row {rownum}")
                continue
            rows[row.path] = row
    except Exception as exc:  # a workbook broken past its header (bad zip member, XML): keep what was read
        problem(f"stopped reading the metadata spreadsheet: {type(exc).__name__}: {exc}", severity="error")
    finally:
        wb.close()
    return rows, problems


def _sheet_row(
    values: tuple[Any, ...],
    rownum: int,
    columns: dict[str, int],
    others: dict[int, str],
    names: dict[str, str],
    problem: Any,
) -> SheetRow | None:
    def cell(i: int) -> Any:
        value = values[i] if i < len(values) else None
        return None if value is None or (isinstance(value, str) and not value.strip()) else value

    raw_path = cell(columns["file_path"])
    if not isinstance(raw_path, str):
        found = None if raw_path is None else repr(raw_path)
        problem(f"no file path in column {names['file_path']!r}; row skipped", f"row {rownum}", found=found)
        return None
    if str(cell(columns["file_type"]) if "file_type" in columns else "").strip().lower() == "folder":
        return None
    rel = normalize_path(raw_path)
    if not rel:
        problem(f"no file path in column {names['file_path']!r}; row skipped", f"row {rownum}", found=repr(raw_path))
        return None
    row = SheetRow(path=rel, row=rownum)
    for role, i in columns.items():
        value = cell(i)
        if value is None:
            continue
        where = f"row {rownum}, column {names[role]!r}"
        try:
            if role == "file_path":
                row.fields[role] = rel
            elif role in ("creation_date", "modification_date"):
                when = _sheet_datetime(value)
                row.fields[role] = when.isoformat(sep=" ")
                if role == "creation_date":
                    row.created = when
                else:
                    row.modified = when
            elif role in ("latitude", "longitude"):
                row.fields[role] = _coordinate(value, 90.0 if role == "latitude" else 180.0)
            else:
                row.fields[role] = _json_cell(value)
        except ValueError as exc:
            expected = "a date/time" if role.endswith("_date") else f"a {role} in degrees"
            problem(f"{exc}; the field is left out", where, expected=expected, found=repr(value))
    location = row.fields.get("location")
    if isinstance(location, str) and "latitude" not in row.fields and "longitude" not in row.fields:
        coords = _coordinates_in(location)
        if coords is not None:
            row.fields["latitude"], row.fields["longitude"] = coords
    for i, name in others.items():
        value = cell(i)
        if value is not None and name not in row.fields:
            row.fields[name] = _json_cell(value)
    return row


def sheet_row_for(rel: str, rows: dict[str, SheetRow], by_name: dict[str, list[str]]) -> SheetRow | None:
    """A store file's spreadsheet row: by its path, else the one row whose path ends like it (or it
    like the row's), else the one row of that file name."""
    if rel in rows:
        return rows[rel]
    candidates = by_name.get(PurePosixPath(rel).name, [])
    same = [k for k in candidates if k.endswith("/" + rel) or rel.endswith("/" + k)]
    if len(same) == 1:
        return rows[same[0]]
    return rows[candidates[0]] if len(candidates) == 1 else None


def read_files_xlsx(path: Path, problems: list[Problem] | None = None) -> dict[str, FileMeta]:
    """Rows of a metadata spreadsheet as FileMeta by normalized path (`read_metadata_sheet`); a cell
    that cannot be read is a problem added to ``problems``. Raises `ProfileError` for a workbook that
    cannot be read or has no FilePath column."""
    rows, found = read_metadata_sheet(path)
    fatal = [x for x in found if x.severity == "error" and not rows]
    if fatal:
        raise ProfileError(f"{path}: {fatal[0].message}")
    if problems is not None:
        problems.extend(found)
    return file_meta_of(rows)


def file_meta_of(rows: dict[str, SheetRow]) -> dict[str, FileMeta]:
    """FileMeta (times, location) of spreadsheet rows."""
    return {
        rel: FileMeta(
            path=rel,
            created=row.created,
            modified=row.modified,
            location=None if row.fields.get("location") is None else str(row.fields["location"]),
            source="xlsx",
        )
        for rel, row in rows.items()
    }


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
    # the Fullset's <Name>_files.xlsx, or the Subset's own <Name>_Subset.xlsx (named like its records)
    sheets = [f"{stem}_files.xlsx", f"{profile_name}_files.xlsx"]
    sheets += [f"{stem}.xlsx"] if stem.endswith("_Subset") else []
    sheets += [f"{profile_name}_Subset.xlsx"] if not profile_name.endswith("_Subset") else []
    meta_path = next((folder / n for n in dict.fromkeys(sheets) if (folder / n).is_file()), None)
    file_meta: dict[str, FileMeta] = {}
    if meta_path is not None:
        try:
            file_meta = read_files_xlsx(meta_path, problems)
        except ProfileError as exc:  # a damaged spreadsheet: the records and files are still usable
            why = "a readable spreadsheet with a FilePath column"
            problems.append(Problem(severity="error", rule="metadata", file=str(meta_path), field="(spreadsheet)",
                                    message=str(exc), expected=why))  # fmt: skip
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
