"""HippoCamp suites: a profile's records and files, a generated profile, or an imported release.

A spec is a HippoCamp-format profile (a profile folder, one of its variants, or a records file), or
``synth:SCALE:SEED[:PERSONA]`` (e.g. ``synth:small:7``: generated into a cache folder, reused when
present), or the ``suite.json`` that ``hippocamp import hippocamp`` writes (one or several profiles of a
release, each with its own store; their task ids are ``<profile>/<record id>`` when there are several).
Each profile's files are indexed incrementally into its store. The tasks carry the question, the
profile name and the QA type only; ``gold[task_id]`` holds the full records.

The dataset hash (``dataset_sha256``) is the sha256 of the records file's bytes followed by one line
``path\\0size\\0sha256\\n`` per file of the tree, in path order, where the file hashes are the content
hashes the store keeps for change detection (no extra pass over the files): it changes when a record or
a file's content changes, and not when files are copied elsewhere or touched. A suite of several
profiles hashes each profile's name and hash in turn.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocamp.dataset.profile import ProfileError, load_profile
from hippocamp.envs.files import FilesEnv, terminal_description
from hippocamp.paths import cache_dir
from hippocamp.runs.suite import Suite, SuiteError, SuiteOptions
from hippocamp.schema.io import RecordsFileError, read_json
from hippocamp.schema.record import HippoCampRecord
from hippocamp.schema.run import Task
from hippocamp.store import IndexOptions, Store, StoreError, index_profile
from hippocamp.store.indexer import Progress

__all__ = ["SYNTH_PREFIX", "Part", "ProfileSuite", "dataset_hash", "load_profile_suite", "synth_cache_dir"]

SYNTH_PREFIX = "synth:"
SUITE_FILE = "suite.json"


@dataclass
class Part:
    """One profile of a suite: its file tree, store, records and the terminal's hard-link rule."""

    name: str
    root: Path
    store: Store
    records_path: Path | None
    records_sha256: str | None = None
    dataset_sha256: str = ""
    #: "inside" refuses a file sharing its inode with a file outside the profile; "any" for a profile
    #: hippocamp's own importer made of hard links (its ``<Name>.import.json`` says so)
    hard_links: str = "inside"
    searcher: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "searcher": None}


@dataclass
class ProfileSuite(Suite):
    """A HippoCamp suite: one profile (``parts`` of one) or an imported release's several."""

    benchmark: str = "hippocamp"
    parts: dict[str, Part] = field(default_factory=dict)
    #: profiles of an imported release that could not be run, with why
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def records_path(self) -> Path | None:
        return next(iter(self.parts.values())).records_path if len(self.parts) == 1 else None

    @property
    def records_sha256(self) -> str | None:
        return next(iter(self.parts.values())).records_sha256 if len(self.parts) == 1 else None

    @property
    def hard_links(self) -> str:
        return next(iter(self.parts.values())).hard_links

    def _part(self, task: Task | None) -> Part:
        if task is not None and task.profile in self.parts:
            return self.parts[task.profile]
        return next(iter(self.parts.values()))

    def env(self, task: Task | None = None) -> FilesEnv:
        part = self._part(task)
        if part.searcher is None:
            if part.store is self.store:
                part.searcher = self.searcher
            else:
                from hippocamp.store.search import Searcher

                part.searcher = Searcher(part.store)
        return FilesEnv(
            part.root, part.store, part.searcher, hard_links=part.hard_links, terminal=self.options.terminal
        )

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        if len(self.parts) == 1:
            part = next(iter(self.parts.values()))
            out.update({"records": str(part.records_path) if part.records_path else None,
                        "records_sha256": part.records_sha256})  # fmt: skip
        else:
            out["files"] = sum(len(p.store.files()) for p in self.parts.values())
            out["profiles"] = [
                {"name": p.name, "root": str(p.root), "records": str(p.records_path) if p.records_path else None,
                 "records_sha256": p.records_sha256, "store": str(p.store.path)}
                for p in self.parts.values()
            ]  # fmt: skip
        if self.skipped:
            out["skipped_profiles"] = self.skipped
        out["terminal"] = terminal_description(self.options.terminal)
        out["dataset_hash"] = "sha256(records bytes + per file 'path\\0size\\0content sha256\\n', path order)"
        return out

    def close(self) -> None:
        for part in self.parts.values():
            part.store.close()

    def shared_paths(self) -> tuple[Path, ...]:
        paths = [self.root, self.store.path]
        for part in self.parts.values():
            paths += [p for p in (part.root, part.store.path) if p not in paths]
        return tuple(paths)

    def relocated(self, mapping: dict[str, str]) -> ProfileSuite:
        moved = super().relocated(mapping)
        assert isinstance(moved, ProfileSuite)
        stores = {str(self.store.path): moved.store}
        parts = {}
        for name, part in self.parts.items():
            where = str(part.store.path)
            if where not in stores:
                stores[where] = Store.reader(mapping.get(where, where))
            root = Path(mapping.get(str(part.root), part.root))
            parts[name] = dataclasses.replace(part, root=root, store=stores[where], searcher=None)
        moved.parts = parts
        return moved


def synth_cache_dir(options: SuiteOptions | None = None) -> Path:
    return (options.synth_dir if options and options.synth_dir else None) or cache_dir() / "suites"


def dataset_hash(records_path: Path | None, store: Store) -> tuple[str | None, str]:
    """(sha256 of the records file, dataset sha256): see the module docstring."""
    digest = hashlib.sha256()
    records_sha = None
    if records_path is not None:
        data = records_path.read_bytes()
        records_sha = hashlib.sha256(data).hexdigest()
        digest.update(data)
    for path, row in sorted(store.files().items()):
        digest.update(f"{path}\0{row.size if row.size is not None else '-'}\0{row.sha256 or '-'}\n".encode())
    return records_sha, digest.hexdigest()


def _synth_profile(spec: str, options: SuiteOptions) -> Path:
    """Generate (or reuse) the profile a ``synth:SCALE:SEED[:PERSONA]`` spec names; returns its folder."""
    from hippocamp.synth.build import SYNTH_VERSION, SynthError, generate
    from hippocamp.synth.stories import SCALES
    from hippocamp.synth.world import PERSONAS

    parts = spec[len(SYNTH_PREFIX) :].split(":")
    if len(parts) not in (2, 3) or not parts[1].lstrip("-").isdigit():
        raise SuiteError(f"suite {spec!r}: expected synth:SCALE:SEED[:PERSONA], e.g. synth:small:7:student")
    scale, seed, persona = parts[0], int(parts[1]), parts[2] if len(parts) == 3 else "professional"
    if scale not in SCALES:
        raise SuiteError(f"suite {spec!r}: unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
    if persona not in PERSONAS:
        raise SuiteError(f"suite {spec!r}: unknown persona {persona!r}; choose one of {', '.join(PERSONAS)}")
    target = synth_cache_dir(options) / f"synth-v{SYNTH_VERSION}-{scale}-{seed}-{persona}"
    if target.is_dir() and any(p.suffix == ".synth" for p in target.iterdir()):
        return target
    # generated beside the target and renamed into place, so an interrupted generation is never reused
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        generate(tmp, persona=persona, seed=seed, scale=scale)
    except SynthError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SuiteError(f"suite {spec!r}: generation failed: {exc}") from exc
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target


def _imported_with_links(records_path: Path | None) -> bool:
    """Whether hippocamp's importer laid this profile out as hard links to the source files (its
    import report, written beside the records outside the agent's tree, counts them)."""
    if records_path is None:
        return False
    report = records_path.with_name(f"{records_path.stem}.import.json")
    if not report.is_file():
        return False
    try:
        data = read_json(report, "import report")
    except ValueError:
        return False
    return isinstance(data, dict) and isinstance(data.get("linked"), int) and data["linked"] > 0


def _tasks(records: list[HippoCampRecord], profile: str, where: Path | None, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for record in records:
        task_id = f"{prefix}{record.id}"
        if task_id in out:
            raise SuiteError(f"{where}: record id {record.id!r} appears twice; task ids must be unique")
        out[task_id] = (record, Task(id=task_id, question=record.question, profile=profile,
                                     meta={"qa_type": record.qa_type}))  # fmt: skip
    return out


def _part(
    name: str,
    records_path: Path | None,
    root: Path,
    store: Store,
    options: IndexOptions,
    progress: Progress | None,
) -> tuple[Part, Any]:
    report = index_profile(root, store, options, progress)
    records_sha, data_sha = dataset_hash(records_path, store)
    hard = "any" if _imported_with_links(records_path) else "inside"
    return Part(name, root, store, records_path, records_sha, data_sha, hard), report


def _apply_sheet(profile: Any, store: Store) -> None:
    """The profile's metadata spreadsheet (``<Name>_files.xlsx`` or ``<Name>_Subset.xlsx``): its times on
    the store's files and its fields (dates, location) for ``return_metadata``, as the importer does.
    A spreadsheet that cannot be read leaves the store as indexed (the validator reports it)."""
    from hippocamp.importers.hippocamp import apply_metadata_times

    with contextlib.suppress(OSError, ValueError, StoreError):
        apply_metadata_times(store, profile)


def load_profile_suite(spec: str, options: SuiteOptions, progress: Progress | None = None) -> ProfileSuite:
    """The suite of a profile, a ``synth:`` spec or an imported ``suite.json`` (see the module doc)."""
    text = spec.removeprefix("hippocamp:")
    path = _synth_profile(text, options) if text.startswith(SYNTH_PREFIX) else Path(text).expanduser()
    if path.name == SUITE_FILE or (path.is_dir() and (path / SUITE_FILE).is_file()):
        return _load_release(path if path.name == SUITE_FILE else path / SUITE_FILE, spec, options, progress)
    try:
        profile = load_profile(path)
    except (ProfileError, RecordsFileError) as exc:
        raise SuiteError(f"suite {text!r}: {exc}") from exc
    if profile.root is None or not profile.root.is_dir():
        raise SuiteError(f"suite {text!r}: no file tree found for profile {profile.name!r}")
    records_path = profile.records_file.path if profile.records_file is not None else None
    found = _tasks(profile.records, profile.name, records_path, "")
    try:
        store = Store(options.store, root=profile.root) if options.store else Store.for_root(profile.root)
    except StoreError as exc:
        raise SuiteError(f"suite {text!r}: {exc}") from exc
    part, report = _part(profile.name, records_path, profile.root, store, options.index_options(), progress)
    _apply_sheet(profile, store)
    return ProfileSuite(
        name=profile.name,
        spec=text,
        tasks=[task for _, task in found.values()],
        gold={tid: record for tid, (record, _) in found.items()},
        root=profile.root,
        store=store,
        options=options,
        index_report=report,
        dataset_sha256=part.dataset_sha256,
        parts={part.name: part},
    )


def _load_release(file: Path, spec: str, options: SuiteOptions, progress: Progress | None) -> ProfileSuite:
    """An imported release (``suite.json``): every profile that imported, each with its own store."""
    from dataclasses import replace

    from hippocamp.importers._common import ImporterError
    from hippocamp.importers.hippocamp import read_suite

    try:
        manifest = read_suite(file)
    except (ImporterError, OSError, ValueError) as exc:
        raise SuiteError(f"suite {spec!r}: {exc}") from exc
    loaded = []
    skipped: dict[str, str] = {}
    for entry in manifest.profiles:
        if entry.records is None or entry.root is None or entry.store is None:
            skipped[entry.name] = entry.error or "not imported completely (records, file tree and store)"
            continue
        try:
            profile = entry.load()
        except (ProfileError, RecordsFileError) as exc:  # the release's own damage: reported, not fatal
            skipped[entry.name] = str(exc)
            continue
        if not profile.records:
            skipped[entry.name] = "no readable records"
            continue
        loaded.append((entry, profile))
    if not loaded:
        why = "; ".join(f"{name}: {reason}" for name, reason in skipped.items())
        raise SuiteError(f"{file}: no profile of the release can be run ({why or 'none listed'})")
    prefix = len(loaded) > 1
    parts: dict[str, Part] = {}
    tasks: list[Task] = []
    gold: dict[str, Any] = {}
    for entry, profile in loaded:
        try:
            store = Store(entry.store, root=entry.root)  # type: ignore[arg-type]
        except StoreError as exc:
            raise SuiteError(f"{file}: profile {entry.name!r}: {exc}") from exc
        index = replace(options.index_options(), gold_dir=entry.gold if entry.gold and entry.gold.is_dir() else None)
        part, _ = _part(entry.name, entry.records, entry.root, store, index, progress)  # type: ignore[arg-type]
        parts[entry.name] = part
        found = _tasks(profile.records, entry.name, entry.records, f"{entry.name}/" if prefix else "")
        for tid, (record, task) in found.items():
            gold[tid] = record
            tasks.append(task)
    digest = hashlib.sha256()
    for part in parts.values():
        digest.update(f"{part.name}\0{part.dataset_sha256}\n".encode())
    first = next(iter(parts.values()))
    name = first.name if len(parts) == 1 else file.parent.name
    return ProfileSuite(
        name=name,
        spec=spec,
        tasks=tasks,
        gold=gold,
        root=first.root,
        store=first.store,
        options=options,
        dataset_sha256=first.dataset_sha256 if len(parts) == 1 else digest.hexdigest(),
        parts=parts,
        skipped=skipped,
    )


def claims(spec: str) -> bool:
    """A ``synth:`` spec, a ``suite.json`` (or a folder holding one), or a folder or records file that
    loads as a HippoCamp profile."""
    if spec.startswith(SYNTH_PREFIX):
        return True
    path = Path(spec).expanduser()
    if path.name == SUITE_FILE and path.is_file():
        return True
    if path.is_dir() and (path / SUITE_FILE).is_file():
        return True
    if path.is_file() and path.suffix.lower() in (".json", ".jsonl"):
        return True
    if path.is_dir():
        if (path / "cases.jsonl").is_file():  # a persona folder, not a profile
            return False
        return not any((p / "cases.jsonl").is_file() for p in path.iterdir() if p.is_dir())
    return False
