"""Suites: a set of tasks plus the environment they run in, and the gold kept apart for scoring.

``load_suite(spec)`` asks the registered benchmarks (kind ``benchmark``, `hippocamp.benchmarks`) which
one reads ``spec`` and lets it load the suite: ``NAME:REST`` names the benchmark (``pcontext:DIR``);
otherwise each benchmark says whether the spec is one of its own (a HippoCamp profile folder or records
file, ``synth:SCALE:SEED``, an imported ``suite.json``; a persona folder). A `Suite` holds the tasks
agents get (id, question, profile name and what the task family allows them to know), ``gold[task_id]``
(never shown to agents), the store its files are indexed into, and ``env(task)``: a fresh environment
per episode over the shared store. Its ``dataset_sha256`` changes when a question or a file's content
does, and is compared when a run resumes.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocamp import registry
from hippocamp.envs.files import FilesEnv
from hippocamp.perceive.base import PerceiveOptions
from hippocamp.schema.run import Task
from hippocamp.store import IndexOptions, IndexReport, Store
from hippocamp.store.indexer import Progress

__all__ = ["Suite", "SuiteError", "SuiteOptions", "benchmark_for", "load_suite"]


class SuiteError(Exception):
    """A suite that cannot be loaded: names the spec, file or record."""


@dataclass(frozen=True)
class SuiteOptions:
    """How a suite's files are indexed (``ocr``/``asr``/``embed`` change what agents can find, so
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
    #: where generated suites (``synth:``) go; None = ``<cache>/suites``
    synth_dir: Path | None = None
    #: the terminal agents get: "auto" (a bubblewrap jail when this machine can make one, else the
    #: emulated terminal), "jail" or "emulated"
    terminal: str = "auto"
    #: where the suite's files are indexed (None: this machine; `hippocamp.executors`)
    executor: Any = field(default=None, compare=False, hash=False, repr=False)

    def index_options(self) -> IndexOptions:
        kwargs: dict[str, Any] = {"workers": self.workers} if self.workers else {}
        perceive = PerceiveOptions(ocr=self.ocr, asr=self.asr)
        return IndexOptions(perceive=perceive, embed=self.embed, embedder=self.embedder, executor=self.executor,
                            **kwargs)  # fmt: skip

    def config(self) -> dict[str, Any]:
        """The settings that change what agents see (compared when a run resumes)."""
        return {"ocr": self.ocr, "asr": self.asr, "embed": self.embed, "embedder": self.embedder}


@dataclass
class Suite:
    """Tasks, their environment, and the gold (``gold[task_id]``) kept for scoring. A benchmark
    subclasses it for what its suites hold besides (records files, personas)."""

    name: str
    spec: str
    tasks: list[Task]
    gold: dict[str, Any]
    #: the file tree agents see
    root: Path
    store: Store
    #: the registered benchmark whose suite this is (recorded in a run's manifest)
    benchmark: str = ""
    options: SuiteOptions = field(default_factory=SuiteOptions)
    index_report: IndexReport | None = None
    dataset_sha256: str = ""
    _searcher: Any = field(default=None, repr=False)

    @property
    def searcher(self) -> Any:
        """One searcher shared by every episode (its caches too)."""
        if self._searcher is None:
            from hippocamp.store.search import Searcher

            self._searcher = Searcher(self.store)
        return self._searcher

    def env(self, task: Task | None = None) -> FilesEnv:
        """A fresh environment for one episode (its own call and escape counters), sharing the store
        and the searcher's caches with every other episode; ``task`` lets a suite of several profiles
        confine an episode to its own."""
        return FilesEnv(self.root, self.store, self.searcher)

    def describe(self) -> dict[str, Any]:
        """Where the suite came from (recorded in a run's manifest, not compared on resume)."""
        return {
            "spec": self.spec,
            "name": self.name,
            "root": str(self.root),
            "store": str(self.store.path),
            "files": len(self.store.files()),
            "tasks": len(self.tasks),
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

    # -- on a cluster's workers ------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its searcher (a worker builds its own); the store pickles as its path."""
        options = dataclasses.replace(self.options, executor=None)  # the executor stays with the driver
        return {**self.__dict__, "_searcher": None, "options": options}

    def shared_paths(self) -> tuple[Path, ...]:
        """What a cluster's workers must see to run this suite's episodes: the file trees and stores."""
        return (self.root, self.store.path)

    def relocated(self, mapping: dict[str, str]) -> Suite:
        """A copy whose file trees and stores are where ``mapping`` (old path -> new) says: a worker that
        got them through Ray's object store. Stores are opened read-only there."""
        moved = copy.copy(self)
        moved.root = Path(mapping.get(str(self.root), self.root))
        moved.store = Store.reader(mapping.get(str(self.store.path), self.store.path))
        moved._searcher = None
        return moved


def _benchmarks() -> list[tuple[str, Any]]:
    return [(name, registry.instance("benchmark", name)) for name in registry.names("benchmark")]


def benchmark_for(spec: str) -> tuple[str, Any]:
    """(name, plug-in) of the benchmark that reads ``spec``: the one its ``NAME:`` prefix names, else
    the only one that claims it."""
    text = str(spec)
    found = _benchmarks()
    prefix, sep, _ = text.partition(":")
    for name, bench in found:
        if sep and prefix == name:
            return name, bench
    claiming = [(name, bench) for name, bench in found if bench.claims(text)]
    if len(claiming) == 1:
        return claiming[0]
    names = ", ".join(name for name, _ in found)
    if not claiming:
        if not sep and not Path(text).expanduser().exists():
            raise SuiteError(f"suite {text!r}: no such file or folder")
        raise SuiteError(f"suite {text!r}: no benchmark reads it (registered: {names})")
    both = " and ".join(name for name, _ in claiming)
    raise SuiteError(f"suite {text!r}: {both} could each read it; name one, e.g. {claiming[0][0]}:{text}")


def load_suite(spec: str | Path, options: SuiteOptions | None = None, progress: Progress | None = None) -> Suite:
    """Load a suite through its benchmark and make sure its files are indexed (incrementally;
    ``progress`` as for `index_profile`)."""
    name, bench = benchmark_for(str(spec))
    suite: Suite = bench.load(str(spec), options or SuiteOptions(), progress)
    if suite.benchmark != name:
        raise SuiteError(f"suite {str(spec)!r}: benchmark {name!r} loaded a suite of {suite.benchmark!r}")
    return suite
