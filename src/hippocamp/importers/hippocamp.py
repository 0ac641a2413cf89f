"""A downloaded HippoCamp release as a ready suite, referenced in place (nothing is copied).

``import_hippocamp(PATH, DIR)`` takes the folder holding ``Adam/``, ``Bei/``, ``Victoria/`` (and
optionally ``HippoCamp_Gold/``), or one profile folder, or one variant folder. For each profile it
validates the records (``DIR/<Name>.validation.json``), indexes the files into ``DIR/stores/<Name>.sqlite``
(files that ``HippoCamp_Gold`` covers take its parsed text), applies the metadata spreadsheet's times
to the store's file rows (the release's file-system times are download times) and keeps every field
of a file's row (dates, location, latitude, longitude, ...) in the store, where the terminal's
``return_metadata`` finds it; then it writes ``DIR/suite.json``:

.. code-block:: json

    {"format": "hippocamp-suite/1", "source": "/data/HippoCamp", "variant": "Fullset",
     "profiles": [{"name": "Adam", "variant": "Fullset",
                   "records": "/data/HippoCamp/Adam/Fullset/Adam.json",
                   "root": "/data/HippoCamp/Adam/Fullset/Adam",
                   "files_xlsx": "/data/HippoCamp/Adam/Fullset/Adam_files.xlsx",
                   "gold": "/data/HippoCamp/HippoCamp_Gold/Adam",
                   "store": "stores/Adam.sqlite", "validation_report": "Adam.validation.json",
                   "validation": {"records": 123, "errors": 2, "...": "..."},
                   "index": {"files": 344, "from_gold": 340, "...": "..."}, "error": null}]}

The metadata spreadsheet is ``<Name>_files.xlsx`` (Fullset) or ``<Name>_Subset.xlsx`` (Subset), read
by one reader (`read_metadata_sheet`) that takes the release's headers (``FilePath``, ``FileType``,
``creation_date``, ``modification_date``, ``location``, ``latitude``, ``longitude``) in any case and
with or without underscores or spaces, and keeps other columns under their own header. A cell that
cannot be read is a problem naming the spreadsheet, the row and the column (in the validation
report); the rest of the row, and every other row, is kept.

Paths are absolute, or relative to the folder holding ``suite.json``. A profile loads with
``load_profile(entry["records"], root=entry["root"])`` (`ProfileEntry.load`); its store opens with
``Store(entry["store"], root=entry["root"])`` and re-indexing it keeps the Gold text when given
``IndexOptions(gold_dir=entry["gold"])``. Problems in the release (a record citing a missing file, a
locator past the end of a document, an unreadable records file) are counted in the entry and listed
in its validation report; they never stop the import.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from hippocamp.dataset.profile import (
    VARIANTS,
    Profile,
    ProfileError,
    SheetRow,
    file_meta_of,
    load_profile,
    read_metadata_sheet,
    sheet_row_for,
)
from hippocamp.importers._common import ImporterError, validation_summary, write_json
from hippocamp.registry import register
from hippocamp.schema.io import RecordsFileError
from hippocamp.schema.problems import Problem

__all__ = [
    "SUITE_FORMAT",
    "ProfileEntry",
    "SheetRow",
    "SuiteManifest",
    "apply_metadata_times",
    "find_release_profiles",
    "import_hippocamp",
    "metadata_sheet",
    "read_metadata_sheet",
    "read_suite",
    "with_metadata_sheet",
]

SUITE_FORMAT = "hippocamp-suite/1"
SUITE_FILE = "suite.json"
GOLD_FOLDER = "HippoCamp_Gold"


@dataclass
class ProfileEntry:
    """One profile of a suite: where its records, files, Gold text and store are, and what was found."""

    name: str
    variant: str | None
    records: Path | None
    root: Path | None
    files_xlsx: Path | None = None
    gold: Path | None = None
    store: Path | None = None
    validation_report: Path | None = None
    validation: dict[str, Any] | None = None
    index: dict[str, Any] | None = None
    error: str | None = None

    def load(self) -> Profile:
        """The profile, through `load_profile` (records file plus its file root), with the metadata
        spreadsheet the import used (``<Name>_Subset.xlsx`` too, which `load_profile` does not look for)."""
        if self.records is None:
            raise ProfileError(f"suite profile {self.name!r}: no records file ({self.error or 'none recorded'})")
        profile = load_profile(self.records, root=self.root, name=self.name)
        sheet = self.files_xlsx
        if (
            sheet is not None
            and sheet.is_file()
            and (profile.meta_path is None or profile.meta_path.resolve() != sheet.resolve())
        ):
            profile = with_metadata_sheet(profile, sheet, *read_metadata_sheet(sheet))
        return profile

    def to_json(self, base: Path) -> dict[str, Any]:
        def rel(p: Path | None) -> str | None:
            if p is None:
                return None
            return p.relative_to(base).as_posix() if p.is_relative_to(base) else str(p)

        return {
            "name": self.name,
            "variant": self.variant,
            "records": rel(self.records),
            "root": rel(self.root),
            "files_xlsx": rel(self.files_xlsx),
            "gold": rel(self.gold),
            "store": rel(self.store),
            "validation_report": rel(self.validation_report),
            "validation": self.validation,
            "index": self.index,
            "error": self.error,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], base: Path, where: str) -> ProfileEntry:
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            raise ImporterError(f"{where}: a profile entry needs a 'name' (found {data!r:.80})")

        def path(key: str) -> Path | None:
            value = data.get(key)
            if value is None:
                return None
            if not isinstance(value, str):
                raise ImporterError(f"{where}: profile {data['name']!r}, field {key!r}: expected a path string")
            return base / value

        return cls(
            name=data["name"],
            variant=data.get("variant"),
            records=path("records"),
            root=path("root"),
            files_xlsx=path("files_xlsx"),
            gold=path("gold"),
            store=path("store"),
            validation_report=path("validation_report"),
            validation=data.get("validation"),
            index=data.get("index"),
            error=data.get("error"),
        )


@dataclass
class SuiteManifest:
    """``suite.json``: the profiles of an imported release."""

    path: Path
    source: Path | None
    variant: str
    profiles: list[ProfileEntry] = field(default_factory=list)
    seconds: float = 0.0

    def profile(self, name: str) -> ProfileEntry:
        for entry in self.profiles:
            if entry.name == name:
                return entry
        raise KeyError(f"{self.path}: no profile {name!r} (has {', '.join(p.name for p in self.profiles)})")

    def to_json(self) -> dict[str, Any]:
        base = self.path.parent
        return {
            "format": SUITE_FORMAT,
            "source": None if self.source is None else str(self.source),
            "variant": self.variant,
            "profiles": [p.to_json(base) for p in self.profiles],
        }

    def write(self) -> None:
        write_json(self.path, self.to_json())


def read_suite(path: str | Path) -> SuiteManifest:
    """Read ``suite.json`` (or the folder holding it)."""

    path = Path(path)
    if path.is_dir():
        path = path / SUITE_FILE
    from hippocamp.schema.io import JsonInputError, read_json

    try:
        data = read_json(path, "suite file")
    except JsonInputError as exc:
        raise ImporterError(f"not a readable suite file: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != SUITE_FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ImporterError(f"{path}: field 'format': expected {SUITE_FORMAT!r}, found {found!r}")
    if not isinstance(data.get("profiles"), list):
        raise ImporterError(f"{path}: field 'profiles': expected a list")
    base = path.parent
    return SuiteManifest(
        path=path,
        source=Path(data["source"]) if data.get("source") else None,
        variant=str(data.get("variant") or "Fullset"),
        profiles=[ProfileEntry.from_json(p, base, str(path)) for p in data["profiles"]],
    )


# -- finding profiles in a release -----------------------------------------------------------------
def _flat_name(folder: Path) -> str | None:
    """The profile name of a folder holding ``<Name>.json`` beside the tree ``<Name>/`` (a release
    variant, or a profile written flat), else None."""
    names = sorted(p.stem for p in folder.glob("*.json") if p.is_file() and (folder / p.stem).is_dir())
    return (folder.name if folder.name in names else names[0]) if names else None


def _variant_of(folder: Path, variant: str) -> tuple[Path, str | None]:
    """The variant folder of a profile folder (the asked one, else the other), and its variant name."""
    for v in (variant, *VARIANTS):
        if (folder / v).is_dir():
            return folder / v, v
    return folder, None


def find_release_profiles(path: Path, variant: str = "Fullset") -> list[tuple[str, Path, str | None]]:
    """(name, folder to load, variant) for each profile of a release folder, a profile folder or a
    variant folder. Raises `ImporterError` when there is none."""
    if not path.is_dir():
        raise ImporterError(f"{path}: not a folder")
    if any((path / v).is_dir() for v in VARIANTS):
        folder, used = _variant_of(path, variant)
        return [(path.name, folder, used)]
    flat = _flat_name(path)
    if flat is not None:
        if path.name in VARIANTS:
            return [(path.parent.name, path, path.name)]
        return [(flat, path, None)]
    found = []
    for child in sorted(p for p in path.iterdir() if p.is_dir() and p.name != GOLD_FOLDER):
        if any((child / v).is_dir() for v in VARIANTS):
            folder, used = _variant_of(child, variant)
            found.append((child.name, folder, used))
        elif (flat := _flat_name(child)) is not None:
            found.append((flat, child, None))
    if not found:
        raise ImporterError(
            f"{path}: no HippoCamp profiles here (expected <Name>/{{Fullset,Subset}}/ folders, "
            "or <Name>.json beside <Name>/)"
        )
    return found


def _gold_for(name: str, variant: str | None, gold_root: Path | None, names: list[str]) -> Path | None:
    """The Gold folder of one profile: ``<Gold>/<Name>/<variant>``, else ``<Gold>/<Name>``; the whole
    folder only when it has no per-profile folders at all (then files are matched by path)."""
    if gold_root is None or not gold_root.is_dir():
        return None
    for candidate in ([gold_root / name / variant] if variant else []) + [gold_root / name]:
        if candidate.is_dir():
            return candidate
    if any((gold_root / other).is_dir() for other in names):
        return None
    return gold_root


def metadata_sheet(profile: Profile) -> Path | None:
    """The profile's metadata spreadsheet: the ``<Name>_files.xlsx`` `load_profile` found, else the
    Subset's ``<Name>_Subset.xlsx`` (named like its records file) beside the records, else None."""
    if profile.meta_path is not None:
        return profile.meta_path
    if profile.records_file is not None:
        folder, stem = Path(profile.records_file.path).parent, Path(profile.records_file.path).stem
    elif profile.root is not None:
        folder, stem = profile.root.parent, profile.root.name
    else:
        return None
    names = [f"{stem}.xlsx"] if stem != profile.name else []
    names += [f"{profile.name}_Subset.xlsx", f"{stem}_files.xlsx", f"{profile.name}_files.xlsx"]
    return next((folder / n for n in dict.fromkeys(names) if (folder / n).is_file()), None)


def with_metadata_sheet(profile: Profile, sheet: Path, rows: dict[str, SheetRow], problems: list[Problem]) -> Profile:
    """The profile with its file metadata (times, location) and spreadsheet problems from ``rows`` of
    ``sheet`` (replacing what `load_profile` read of a spreadsheet, so nothing is reported twice)."""
    file_meta = file_meta_of(rows)
    return Profile(
        name=profile.name,
        root=profile.root,
        records_file=profile.records_file,
        meta_path=sheet,
        file_meta=file_meta,
        problems=[p for p in profile.problems if p.rule != "metadata"] + problems,
    )


def apply_metadata_times(store: Any, profile: Profile, rows: dict[str, SheetRow] | None = None) -> tuple[int, int]:
    """Give the store's file rows the spreadsheet's creation and modification times (moving the segments
    that took their time from the file along), and keep each file's spreadsheet fields in the store
    (`Store.file_metadata`). ``rows`` default to the profile's spreadsheet (`metadata_sheet`).
    Returns (files given times, files without them)."""
    if rows is None:
        sheet = metadata_sheet(profile)
        rows = read_metadata_sheet(sheet)[0] if sheet is not None else {}
    by_name: dict[str, list[str]] = {}
    for key in rows:
        by_name.setdefault(PurePosixPath(key).name, []).append(key)
    updated, missing = 0, 0
    changes: list[tuple[str, str | None, str | None, str | None]] = []
    metadata: dict[str, dict[str, Any]] = {}
    for rel, file_row in sorted(store.files().items()):
        row = sheet_row_for(rel, rows, by_name)
        if row is not None and row.fields:
            metadata[rel] = row.fields
        if row is None or (row.created is None and row.modified is None):
            missing += 1
            continue
        created = row.created.isoformat() if row.created else None
        latest = row.modified or row.created
        modified = latest.isoformat() if latest else None
        if (created, modified) != (file_row.created, file_row.modified):
            changes.append((rel, created, modified, file_row.modified))
        updated += 1
    if changes:
        with store.transaction() as db:
            for rel, created, modified, old in changes:
                db.execute("UPDATE files SET created = ?, modified = ? WHERE path = ?", (created, modified, rel))
                if old is not None:
                    db.execute(
                        "UPDATE segments SET time = ? WHERE time = ?"
                        " AND file_id = (SELECT id FROM files WHERE path = ?)",
                        (modified, old, rel),
                    )
    store.set_file_metadata(metadata)
    return updated, missing


# -- the import ------------------------------------------------------------------------------------
def _open_store(path: Path, root: Path) -> Any:
    """The suite's store for ``root``; one left by an import of another release location is replaced."""
    from hippocamp.store import Store, StoreError

    try:
        return Store(path, root=root)
    except StoreError:
        for leftover in path.parent.glob(path.name + "*"):
            leftover.unlink()
        return Store(path, root=root)


def _import_profile(
    name: str,
    folder: Path,
    variant: str | None,
    out: Path,
    gold_root: Path | None,
    names: list[str],
    index: bool,
    index_options: Any,
    progress: Any,
) -> ProfileEntry:
    from hippocamp.validate import validate_profile

    entry = ProfileEntry(name=name, variant=variant, records=None, root=None)
    try:
        profile = load_profile(folder, name=name)
    except (ProfileError, RecordsFileError) as exc:
        entry.error = str(exc)
        return entry
    sheet = metadata_sheet(profile)
    rows: dict[str, SheetRow] = {}
    if sheet is not None:
        rows, sheet_problems = read_metadata_sheet(sheet)
        profile = with_metadata_sheet(profile, sheet, rows, sheet_problems)
    entry.records = profile.records_file.path.resolve() if profile.records_file else None
    entry.root = profile.root.resolve() if profile.root else None
    entry.files_xlsx = sheet.resolve() if sheet else None
    entry.gold = _gold_for(name, variant, gold_root, names)
    if entry.gold is not None:
        entry.gold = entry.gold.resolve()
    if profile.records_file is None:
        entry.error = f"{folder}: no records file ({name}.json)"
    else:
        report = validate_profile(profile)
        entry.validation_report = out / f"{name}.validation.json"
        entry.validation_report.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        entry.validation = validation_summary(report)
    if index and profile.root is not None:
        from dataclasses import replace

        from hippocamp.store import IndexOptions, index_profile

        options = replace(index_options or IndexOptions(), gold_dir=entry.gold)
        entry.store = out / "stores" / f"{name}.sqlite"
        store = _open_store(entry.store, profile.root)
        try:
            done = index_profile(profile.root, store, options, progress)
            updated, without = apply_metadata_times(store, profile, rows)
            with_fields = store.db.execute("SELECT COUNT(*) FROM file_metadata").fetchone()[0]
            counts = store.counts()
        finally:
            store.close()
        entry.index = {
            "files": done.scanned,
            "added": done.added,
            "updated": done.updated,
            "unchanged": done.unchanged,
            "removed": done.removed,
            "from_gold": done.from_gold,
            "segments": counts.get("segments", 0),
            "vectors": counts.get("vectors", 0),
            "embedder": done.embedder,
            "failed": len(done.failed),
            "times_from_xlsx": updated,
            "times_from_fs": without,
            "metadata_rows": len(rows),
            "metadata_files": with_fields,
            "metadata_problems": sum(p.rule == "metadata" for p in profile.problems),
        }
    return entry


@register("importer", "hippocamp")
def import_hippocamp(
    path: str | Path,
    out: str | Path,
    *,
    variant: str = "Fullset",
    index: bool = True,
    gold: str | Path | None = None,
    index_options: Any = None,
    progress: Any = None,
) -> SuiteManifest:
    """Import the release at ``path`` into the suite folder ``out`` (see the module docstring).

    ``gold`` overrides where ``HippoCamp_Gold`` is (default: beside the profiles, or beside the one
    profile folder given); ``index_options`` are `IndexOptions` (their ``gold_dir`` is set per profile);
    ``progress`` is passed to `index_profile`. Raises `ImporterError` only when no profile is found.
    """
    began = time.perf_counter()
    if variant not in VARIANTS:
        raise ImporterError(f"variant {variant!r}: expected one of {', '.join(VARIANTS)}")
    path, out = Path(path).resolve(), Path(out)
    profiles = find_release_profiles(path, variant)
    if gold is not None:
        gold_root: Path | None = Path(gold)
        if not gold_root.is_dir():
            raise ImporterError(f"{gold_root}: the HippoCamp_Gold folder does not exist")
    else:  # beside the profiles: in the release folder, or above the profile (or variant) folder given
        places = (path, path.parent, path.parent.parent)
        gold_root = next((p / GOLD_FOLDER for p in places if (p / GOLD_FOLDER).is_dir()), None)
    out.mkdir(parents=True, exist_ok=True)
    manifest = SuiteManifest(path=(out / SUITE_FILE).resolve(), source=path, variant=variant)
    names = [name for name, _, _ in profiles]
    for name, folder, used in profiles:
        entry = _import_profile(name, folder, used, out.resolve(), gold_root, names, index, index_options, progress)
        manifest.profiles.append(entry)
    manifest.write()
    manifest.seconds = time.perf_counter() - began
    return manifest
