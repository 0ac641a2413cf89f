"""Suites: a set of tasks plus the environment they run in, and the gold kept apart for scoring.

``load_suite(spec)`` reads a HippoCamp-format profile (a profile folder, one of its variants, or a
records file) or generates a synthetic one (``synth:SCALE:SEED[:PERSONA]``, e.g. ``synth:small:7``,
into a cache folder, reused when present) or reads P-ContextBench personas (``pcontext:DIR``, see
`hippocamp.pcontext.applog`), indexes its files incrementally into the profile's store,
and returns a `Suite`: the tasks agents get (id, question, profile name and the QA type only),
``gold[task_id]`` (the full records, never shown to agents) and ``env()`` (a fresh `FilesEnv` per
episode over the shared store).

The dataset hash (``dataset_sha256``) is the sha256 of the records file's bytes followed by one line
``path\\0size\\0sha256\\n`` per file of the tree, in path order, where the file hashes are the content
hashes the store keeps for change detection (no extra pass over the files): it changes when a record or
a file's content changes, and not when files are copied elsewhere or touched.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocamp.agents.base import Task
from hippocamp.dataset.profile import ProfileError, load_profile
from hippocamp.envs.files import FilesEnv
from hippocamp.paths import cache_dir
from hippocamp.perceive.base import PerceiveOptions
from hippocamp.schema.io import RecordsFileError, read_json
from hippocamp.schema.record import HippoCampRecord
from hippocamp.store import IndexOptions, IndexReport, Store, StoreError, index_profile
from hippocamp.store.indexer import Progress

__all__ = ["Suite", "SuiteError", "SuiteOptions", "dataset_hash", "load_suite", "synth_cache_dir"]

SYNTH_PREFIX = "synth:"


class SuiteError(Exception):
    """A suite that cannot be loaded: names the spec, file or record."""


@dataclass(frozen=True)
class SuiteOptions:
    """How a suite's profile is indexed (``ocr``/``asr``/``embed`` change what agents can find, so
    they are part of a run's config) and where things go."""

    ocr: bool = True
    asr: bool = True
    embed: bool = True
    #: registered embedder name; None = the default one
    embedder: str | None = None
    #: the store file; None = the profile's default store (``Store.for_root``)
    store: Path | None = None
    #: reader processes; None = the indexer's default
    workers: int | None = None
    #: where ``synth:`` profiles are generated; None = ``<cache>/suites``
    synth_dir: Path | None = None

    def index_options(self) -> IndexOptions:
        kwargs: dict[str, Any] = {"workers": self.workers} if self.workers else {}
        perceive = PerceiveOptions(ocr=self.ocr, asr=self.asr)
        return IndexOptions(perceive=perceive, embed=self.embed, embedder=self.embedder, **kwargs)

    def config(self) -> dict[str, Any]:
        """The settings that change what agents see (compared when a run resumes)."""
        return {"ocr": self.ocr, "asr": self.asr, "embed": self.embed, "embedder": self.embedder}


@dataclass
class Suite:
    """Tasks, their environment, and the gold records (``gold[task_id]``) kept for scoring."""

    name: str
    spec: str
    tasks: list[Task]
    #: HippoCamp records; for ``pcontext:`` suites the cases (answer keys) as dicts
    gold: dict[str, Any]
    root: Path
    records_path: Path | None
    store: Store
    options: SuiteOptions = field(default_factory=SuiteOptions)
    index_report: IndexReport | None = None
    records_sha256: str | None = None
    dataset_sha256: str = ""
    #: the terminal's hard-link rule (`hippocamp.envs.terminal`): "inside" refuses a file that shares
    #: its inode with a file outside the profile; "any" for a profile hippocamp's own importer made of
    #: hard links (its ``<Name>.import.json`` says so), whose links point at the user's source files
    hard_links: str = "inside"
    _searcher: Any = field(default=None, repr=False)

    def env(self, task: Task | None = None) -> FilesEnv:
        """A fresh environment for one episode (its own call and escape counters), sharing the
        store and the searcher's caches with every other episode. ``task`` lets a suite of several
        profiles (app-log personas) confine the episode to the task's own profile."""
        if self._searcher is None:
            from hippocamp.store.search import Searcher

            self._searcher = Searcher(self.store)
        return FilesEnv(self.root, self.store, self._searcher, hard_links=self.hard_links)

    def describe(self) -> dict[str, Any]:
        """Where the suite came from (recorded in a run's manifest, not compared on resume)."""
        return {
            "spec": self.spec,
            "name": self.name,
            "root": str(self.root),
            "records": str(self.records_path) if self.records_path else None,
            "records_sha256": self.records_sha256,
            "store": str(self.store.path),
            "files": len(self.store.files()),
            "tasks": len(self.tasks),
            "dataset_hash": "sha256(records bytes + per file 'path\\0size\\0content sha256\\n', path order)",
        }

    def config(self) -> dict[str, Any]:
        """What a run over this suite depends on (compared on resume)."""
        return {
            "name": self.name,
            "dataset_sha256": self.dataset_sha256,
            "tasks": len(self.tasks),
            "index": self.options.config(),
        }

    def close(self) -> None:
        self.store.close()


def synth_cache_dir(options: SuiteOptions | None = None) -> Path:
    return (options.synth_dir if options and options.synth_dir else None) or cache_dir() / "suites"


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
    os.replace(tmp, target)
    return target


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


def load_suite(spec: str | Path, options: SuiteOptions | None = None, progress: Progress | None = None) -> Suite:
    """Load a suite and make sure its profile is indexed (incrementally; ``progress`` as for
    `index_profile`). A folder without records gives a suite with no tasks (for ``hippocamp ask``)."""
    options = options or SuiteOptions()
    text = str(spec)
    if text.startswith("pcontext:"):
        from hippocamp.pcontext.applog import load_pcontext_suite

        return load_pcontext_suite(text, options, progress)
    path = _synth_profile(text, options) if text.startswith(SYNTH_PREFIX) else Path(text)
    try:
        profile = load_profile(path)
    except (ProfileError, RecordsFileError) as exc:
        raise SuiteError(f"suite {text!r}: {exc}") from exc
    if profile.root is None or not profile.root.is_dir():
        raise SuiteError(f"suite {text!r}: no file tree found for profile {profile.name!r}")
    records_path = profile.records_file.path if profile.records_file is not None else None
    tasks: list[Task] = []
    gold: dict[str, HippoCampRecord] = {}
    for record in profile.records:
        task_id = str(record.id)
        if task_id in gold:
            raise SuiteError(f"{records_path}: record id {task_id!r} appears twice; task ids must be unique")
        gold[task_id] = record
        tasks.append(Task(id=task_id, question=record.question, profile=profile.name,
                          meta={"qa_type": record.qa_type}))  # fmt: skip
    try:
        store = Store(options.store, root=profile.root) if options.store else Store.for_root(profile.root)
    except StoreError as exc:
        raise SuiteError(f"suite {text!r}: {exc}") from exc
    report = index_profile(profile.root, store, options.index_options(), progress)
    records_sha, data_sha = dataset_hash(records_path, store)
    return Suite(
        name=profile.name,
        spec=text,
        tasks=tasks,
        gold=gold,
        root=profile.root,
        records_path=records_path,
        store=store,
        options=options,
        index_report=report,
        records_sha256=records_sha,
        dataset_sha256=data_sha,
        hard_links="any" if _imported_with_links(records_path) else "inside",
    )


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
