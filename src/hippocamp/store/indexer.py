"""Incremental indexing of a profile into its store.

``index_profile`` walks the profile (never following symlinks out of it), compares every file with
the store by size and mtime and, when those changed, by sha256; reads only new and changed files, in
parallel worker processes; removes vanished files; and finally embeds segments that have no vector
yet. Each file is committed with its segments in one transaction, so an interrupted run leaves a
consistent store and the next run continues. Every failure is recorded with its reason and the run
goes on.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from hippocamp import __version__
from hippocamp.models.errors import ModelNotAvailableError
from hippocamp.models.local_models import sha256_of
from hippocamp.paths import process_context
from hippocamp.perceive.base import PerceiveOptions
from hippocamp.perceive.run import FileResult, perceive_file, reader_for
from hippocamp.schema.filetypes import extension, modality_of
from hippocamp.store.db import Store
from hippocamp.store.gold import GoldIndex

__all__ = ["IndexOptions", "IndexReport", "Progress", "index_profile", "walk_profile"]

#: files are committed in batches of this many, or at least this often (seconds)
COMMIT_FILES = 64
COMMIT_SECONDS = 1.0

#: progress(stage, done, total, path): stage is "scan", "read" or "embed"
Progress = Callable[[str, int, int, str | None], None]


@dataclass(frozen=True)
class IndexOptions:
    perceive: PerceiveOptions = field(default_factory=PerceiveOptions)
    #: worker processes for reading; 1 reads in this process
    workers: int = field(default_factory=lambda: max(1, min(4, os.cpu_count() or 1)))
    #: embed segments after reading (needs an embedder)
    embed: bool = True
    #: registered embedder name; None = the default one
    embedder: str | None = None
    #: a HippoCamp_Gold folder: files it covers take its parsed text instead of being perceived
    gold_dir: Path | None = None
    #: read again files that failed last time even if unchanged
    retry_failed: bool = False


@dataclass
class IndexReport:
    scanned: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    from_gold: int = 0
    segments: int = 0
    embedded: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    embedder: str | None = None


@dataclass(frozen=True)
class Entry:
    rel: str
    size: int
    mtime_ns: int
    skip_reason: str | None = None


def walk_profile(root: Path, ignore: tuple[str, ...] = (".hippocamp",)) -> list[Entry]:
    """Every file under ``root`` (sorted), symlinked folders reported and not followed."""
    root = root.resolve()
    entries: list[Entry] = []
    for dirpath, dirs, files in os.walk(root, followlinks=False):
        base = Path(dirpath)
        for name in list(dirs):
            full = base / name
            if name in ignore:
                dirs.remove(name)
            elif full.is_symlink():
                dirs.remove(name)
                target = os.path.realpath(full)
                inside = target == str(root) or target.startswith(str(root) + os.sep)
                why = (
                    "symlinked folder inside the profile (not followed)"
                    if inside
                    else "symlink to a folder outside the profile (not followed)"
                )
                entries.append(Entry(full.relative_to(root).as_posix(), 0, 0, why))
        for name in files:
            full = base / name
            rel = full.relative_to(root).as_posix()
            try:
                st = full.stat() if not full.is_symlink() else full.lstat()
            except OSError as exc:
                entries.append(Entry(rel, 0, 0, f"cannot stat: {exc.strerror or exc}"))
                continue
            entries.append(Entry(rel, st.st_size, st.st_mtime_ns))
    entries.sort(key=lambda e: e.rel)
    return entries


def signature(rel: str, options: PerceiveOptions, gold: bool = False) -> str:
    """What a file's segments depend on besides its bytes: the reader of its type, hippocamp's version
    and the perception options. A file whose signature changed is read again even if unchanged."""
    if gold:
        return f"gold|{__version__}"
    reader = reader_for(extension(rel))
    return f"{reader.name if reader else '-'}|{__version__}|{_options_digest(options)}"


@functools.lru_cache(maxsize=16)
def _options_digest(options: PerceiveOptions) -> str:
    return hashlib.sha1(json.dumps(asdict(options), sort_keys=True).encode()).hexdigest()[:8]


def _read_chunk(root: str, rels: list[str], options: PerceiveOptions) -> list[FileResult]:
    """Several files read by one task of a worker process (one round trip for many small files)."""
    return [perceive_file(Path(root), rel, options) for rel in rels]


#: a task of a worker process reads up to this many files, or fewer once they add up to CHUNK_BYTES
CHUNK_FILES = 8
CHUNK_BYTES = 4 * 1024 * 1024


def _chunks(entries: list[Entry], workers: int) -> list[list[Entry]]:
    """Consecutive files grouped into tasks; small enough that every worker gets several tasks."""
    per = max(1, min(CHUNK_FILES, len(entries) // (workers * 4)))
    chunks: list[list[Entry]] = []
    current: list[Entry] = []
    size = 0
    for entry in entries:
        current.append(entry)
        size += entry.size
        if len(current) >= per or size >= CHUNK_BYTES:
            chunks.append(current)
            current, size = [], 0
    if current:
        chunks.append(current)
    return chunks


class _Signatures:
    """`signature` worked out once per file type within a run (it depends on the type, not the name)."""

    def __init__(self, options: PerceiveOptions) -> None:
        self.options = options
        self.by_type: dict[tuple[str, bool], str] = {}

    def __call__(self, rel: str, gold: bool = False, ext: str | None = None) -> str:
        key = (extension(rel) if ext is None else ext, gold)
        sig = self.by_type.get(key)
        if sig is None:
            sig = self.by_type[key] = signature(rel, self.options, gold)
        return sig


def index_profile(
    root: Path,
    store: Store,
    options: IndexOptions | None = None,
    progress: Progress | None = None,
) -> IndexReport:
    """Bring ``store`` up to date with the files under ``root``; returns what was done."""
    options = options or IndexOptions()
    progress = progress or (lambda *_: None)
    start = time.perf_counter()
    report = IndexReport()
    entries = walk_profile(root)
    report.scanned = len(entries)
    known = store.files()
    present = {e.rel for e in entries}
    vanished = [p for p in known if p not in present]
    report.removed = store.remove_files(vanished)
    gold = GoldIndex.load(options.gold_dir) if options.gold_dir else None

    sign = _Signatures(options.perceive)
    todo: list[Entry] = []
    for i, entry in enumerate(entries):
        progress("scan", i + 1, len(entries), entry.rel)
        row = known.get(entry.rel)
        if entry.skip_reason is not None:
            if row is None or row.reason != entry.skip_reason:
                store.put_file(_skipped(entry), None)
            report.failed.append((entry.rel, entry.skip_reason))
            continue
        if row is None:
            todo.append(entry)
            continue
        retry = options.retry_failed and row.status in ("failed", "skipped")
        covered_by_gold = gold is not None and gold.find(entry.rel) is not None
        if row.signature != sign(entry.rel, covered_by_gold):
            todo.append(entry)  # a new reader, another hippocamp version or other options: read again
            continue
        if row.size == entry.size and row.mtime_ns == entry.mtime_ns and not retry:
            report.unchanged += 1
            if row.status in ("failed", "skipped") and row.reason:
                report.failed.append((entry.rel, row.reason))
            continue
        if row.sha256 and row.size == entry.size and not retry:
            try:
                same = sha256_of(root / entry.rel) == row.sha256
            except OSError:
                same = False
            if same:
                store.touch_file(entry.rel, entry.mtime_ns)
                report.unchanged += 1
                continue
        todo.append(entry)

    pending: list[tuple[FileResult, int | None, int | None, str | None]] = []
    last_flush = time.monotonic()

    def flush() -> None:
        nonlocal last_flush
        if pending:
            store.put_files(pending)  # one transaction: a killed run keeps every committed file whole
            pending.clear()
        last_flush = time.monotonic()

    def record(entry: Entry, result: FileResult) -> None:
        sig = sign(entry.rel, result.reader == "gold", result.info.type if result.info is not None else None)
        pending.append((result, entry.mtime_ns, entry.size, sig))
        if len(pending) >= COMMIT_FILES or time.monotonic() - last_flush >= COMMIT_SECONDS:
            flush()
        if entry.rel in known:
            report.updated += 1
        else:
            report.added += 1
        report.segments += len(result.segments)
        if result.status in ("failed", "skipped") and result.reason:
            report.failed.append((entry.rel, result.reason))
        report.notes.extend((entry.rel, note) for note in result.notes)

    perceive_todo = []
    for entry in todo:
        gold_result = gold.result_for(root, entry.rel) if gold else None
        if gold_result is not None:
            record(entry, gold_result)
            report.from_gold += 1
        else:
            perceive_todo.append(entry)
    try:
        _read_all(root, perceive_todo, options, record, progress)
    finally:
        flush()  # what was read is kept, even when the run is interrupted
    if options.embed:
        try:
            report.embedder, report.embedded = embed_missing(store, options.embedder, progress)
        except ModelNotAvailableError as exc:
            if options.embedder is not None:
                raise  # asked for by name: say so
            report.notes.append(("(embeddings)", f"no embedder, BM25 search only: {exc}"))
    report.seconds = time.perf_counter() - start
    return report


def _skipped(entry: Entry) -> FileResult:
    return FileResult(entry.rel, None, modality_of(entry.rel) or "other", "skipped", reason=entry.skip_reason)


def _read_all(
    root: Path,
    entries: list[Entry],
    options: IndexOptions,
    record: Callable[[Entry, FileResult], None],
    progress: Progress,
) -> None:
    total = len(entries)
    if total == 0:
        return
    if options.workers <= 1 or total == 1:
        for i, entry in enumerate(entries):
            progress("read", i, total, entry.rel)
            record(entry, perceive_file(root, entry.rel, options.perceive))
        progress("read", total, total, None)
        return
    done = 0
    pending: dict[Future[list[FileResult]], list[Entry]] = {}
    queue = iter(_chunks(entries, options.workers))

    def submit(chunk: list[Entry]) -> None:
        pending[pool.submit(_read_chunk, str(root), [e.rel for e in chunk], options.perceive)] = chunk

    with ProcessPoolExecutor(max_workers=options.workers, mp_context=process_context()) as pool:  # type: ignore[arg-type]
        try:
            for chunk in queue:  # keep a bounded number of tasks in flight
                submit(chunk)
                if len(pending) >= options.workers * 2:
                    break
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    chunk = pending.pop(future)
                    try:
                        results = future.result()
                    except Exception as exc:  # a worker died (e.g. a native crash): recorded, the run goes on
                        results = [
                            FileResult(entry.rel, None, modality_of(entry.rel) or "other", "failed",
                                       reason=f"reader process failed: {type(exc).__name__}: {exc}")
                            for entry in chunk
                        ]  # fmt: skip
                    for entry, result in zip(chunk, results, strict=True):
                        record(entry, result)
                        done += 1
                        progress("read", done, total, entry.rel)
                    nxt = next(queue, None)
                    if nxt is not None:
                        submit(nxt)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def embed_missing(store: Store, name: str | None, progress: Progress, batch: int = 128) -> tuple[str | None, int]:
    """Embed every segment without a vector; re-embed all when the embedder changed."""
    from hippocamp.models.embedding import default_embedder_name, get_embedder

    name = name or default_embedder_name()
    embedder = get_embedder(name)
    if store.get_meta("embedder") != embedder.id:
        store.clear_vectors()
        store.set_meta("embedder", embedder.id)
        store.set_meta("embedder_name", name)
    total = store.counts()["segments"] - store.counts()["vectors"]
    done = 0
    while True:
        rows = store.segments_without_vectors(batch)
        if not rows:
            break
        vectors = np.asarray(embedder.embed([text for _, text in rows], side="passage"), dtype=np.float32)
        store.put_vectors((sid, vec.tobytes()) for (sid, _), vec in zip(rows, vectors, strict=True))
        done += len(rows)
        progress("embed", done, total, None)
    return embedder.id, done
