"""Incremental indexing of a profile into its store.

``index_profile`` walks the profile (never following symlinks out of it), compares every file with
the store by size and mtime and, when those changed, by sha256; reads only new and changed files, in
parallel worker processes; re-cuts each file's segments with the index's chunker (`IndexOptions.chunker`,
see `hippocamp.store.chunking`); removes vanished files; and finally embeds segments that have no vector
yet. Each file is committed with its segments in one transaction, so an interrupted run leaves a
consistent store and the next run continues. Every failure is recorded with its reason and the run
goes on.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hippocamp import __version__
from hippocamp.models.errors import ModelNotAvailableError
from hippocamp.models.local_models import sha256_of
from hippocamp.perceive.base import PerceiveOptions
from hippocamp.perceive.run import FileResult, file_info, perceive_file, reader_for
from hippocamp.perceive.wall import ReaderPool, ReadLimits, shippable_readers
from hippocamp.schema.filetypes import extension, modality_of
from hippocamp.store.chunking import DEFAULT_CHUNKER, Chunker, ChunkerError, chunker_identity, parse_chunker
from hippocamp.store.db import Store
from hippocamp.store.gold import GoldIndex
from hippocamp.text.names import shown_name

if TYPE_CHECKING:
    from hippocamp.executors import Executor
    from hippocamp.models.embedding import Embedder

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
    #: read every file behind the wall (worker processes with time and memory limits); False reads in
    #: this process with no limits but the readers' own (for trusted files, and tests of the readers)
    isolate: bool = True
    #: the wall's limits per file
    limits: ReadLimits = field(default_factory=ReadLimits)
    #: how segments are re-cut before they are stored: ``native`` (as read), ``recursive[:SIZE:OVERLAP]``
    #: or ``semantic[:THRESHOLD]`` (needs the embedder); part of the index's identity: indexing with
    #: another chunker reads and chunks every file again (see `hippocamp.store.chunking`)
    chunker: str = DEFAULT_CHUNKER
    #: where files are read when `index_profile` is given none (None: this machine; `hippocamp.executors`)
    executor: Any = field(default=None, compare=False, hash=False, repr=False)


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
    #: the chunker the store's segments were cut with (its spec, and the embedder's id when it embeds)
    chunker: str = DEFAULT_CHUNKER


@dataclass(frozen=True)
class Entry:
    rel: str
    size: int
    mtime_ns: int
    skip_reason: str | None = None
    #: its name is shown like an earlier file's: reported, never stored (it would replace that file's row)
    shadowed: bool = False


def walk_profile(root: Path, ignore: tuple[str, ...] = (".hippocamp",)) -> list[Entry]:
    """Every file under ``root`` (sorted), symlinked folders reported and not followed.

    The walk is iterative (a tree thousands of levels deep is walked, not a RecursionError), names of
    any bytes are kept as Python gives them (see `hippocamp.text.names`), and a folder that cannot
    be listed is reported as an entry with the reason.
    """
    root = root.resolve()
    entries: list[Entry] = []
    stack: list[str] = [""]  # folders still to list, profile-relative ("" is the root)
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(os.path.join(root, folder) if folder else root) as it:
                items = list(it)
        except OSError as exc:
            if folder:
                entries.append(Entry(folder, 0, 0, f"cannot list folder: {exc.strerror or type(exc).__name__}"))
            continue
        for item in items:
            rel = f"{folder}/{item.name}" if folder else item.name
            try:
                if item.is_dir(follow_symlinks=False):
                    if item.name not in ignore:
                        stack.append(rel)
                    continue
                if item.is_symlink() and os.path.isdir(item.path):
                    target = os.path.realpath(item.path)
                    inside = target == str(root) or target.startswith(str(root) + os.sep)
                    why = (
                        "symlinked folder inside the profile (not followed)"
                        if inside
                        else "symlink to a folder outside the profile (not followed)"
                    )
                    entries.append(Entry(rel, 0, 0, why))
                    continue
                st = item.stat(follow_symlinks=not item.is_symlink())
            except OSError as exc:
                entries.append(Entry(rel, 0, 0, f"cannot stat: {exc.strerror or type(exc).__name__}"))
                continue
            entries.append(Entry(rel, st.st_size, st.st_mtime_ns))
    entries.sort(key=lambda e: e.rel)
    return _unique_names(entries)


def _unique_names(entries: list[Entry]) -> list[Entry]:
    """Two names that are shown the same (``a\\xff`` typed out, and the byte 0xff) cannot both be
    stored under that name: the second is reported, not read."""
    seen: set[str] = set()
    out: list[Entry] = []
    for entry in entries:
        key = shown_name(entry.rel)
        if key in seen:
            why = f"its name is shown as {key!r}, like another file's: not read"
            out.append(Entry(entry.rel, entry.size, entry.mtime_ns, why, shadowed=True))
            continue
        seen.add(key)
        out.append(entry)
    return out


def signature(rel: str, options: PerceiveOptions, gold: bool = False, chunker: str = DEFAULT_CHUNKER) -> str:
    """What a file's segments depend on besides its bytes: the reader of its type, hippocamp's version,
    the perception options and the chunker (`chunker_identity`; the native one adds nothing, so stores
    made before chunkers keep their files). A file whose signature changed is read again even if
    unchanged."""
    chunking = "" if chunker == DEFAULT_CHUNKER else f"|chunker={chunker}"
    if gold:
        return f"gold|{__version__}{chunking}"
    reader = reader_for(extension(rel))
    return f"{reader.name if reader else '-'}|{__version__}|{_options_digest(options)}{chunking}"


@functools.lru_cache(maxsize=16)
def _options_digest(options: PerceiveOptions) -> str:
    return hashlib.sha1(json.dumps(asdict(options), sort_keys=True).encode()).hexdigest()[:8]


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

    def __init__(self, options: PerceiveOptions, chunker: str = DEFAULT_CHUNKER) -> None:
        self.options = options
        self.chunker = chunker
        self.by_type: dict[tuple[str, bool], str] = {}

    def __call__(self, rel: str, gold: bool = False, ext: str | None = None) -> str:
        key = (extension(rel) if ext is None else ext, gold)
        sig = self.by_type.get(key)
        if sig is None:
            sig = self.by_type[key] = signature(rel, self.options, gold, self.chunker)
        return sig


def index_profile(
    root: Path,
    store: Store,
    options: IndexOptions | None = None,
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> IndexReport:
    """Bring ``store`` up to date with the files under ``root``; returns what was done.

    ``executor``: where files are read (default: this machine's walled reader processes). On a cluster
    (`hippocamp.executors.ray_cluster`) each task reads a few files behind the same wall on a worker,
    re-cuts their segments and embeds them there; this process stays the one writer of the store.

    Raises `ChunkerError` before anything changes when ``options.chunker`` cannot be used (a bad spec,
    or a chunker that needs an embedder with embeddings off or none installed)."""
    options = options or IndexOptions()
    executor = executor or options.executor
    progress = progress or (lambda *_: None)
    start = time.perf_counter()
    report = IndexReport()
    chunker, chunk_embedder = _chunker_for(options)
    report.chunker = chunker_identity(chunker, chunk_embedder)
    stored = store.get_meta("chunker")  # a store made before chunkers has none: native
    before = stored or DEFAULT_CHUNKER
    if before != report.chunker and store.counts()["files"]:
        report.notes.append(("(chunker)", f"chunked with {before}, now {report.chunker}: every file is read again"))
    if stored != report.chunker:
        store.set_meta("chunker", report.chunker)  # files' signatures carry it too: no file keeps old chunks
    entries = walk_profile(root)
    report.scanned = len(entries)
    known = store.files()  # keyed by the name as shown (a name of any bytes is stored escaped, and raw)
    present = {shown_name(e.rel) for e in entries}
    vanished = [p for p in known if p not in present]
    report.removed = store.remove_files(vanished)
    gold = GoldIndex.load(options.gold_dir) if options.gold_dir else None

    sign = _Signatures(options.perceive, report.chunker)
    todo: list[Entry] = []
    for i, entry in enumerate(entries):
        progress("scan", i + 1, len(entries), shown_name(entry.rel))
        row = known.get(shown_name(entry.rel))
        if entry.skip_reason is not None:
            if not entry.shadowed and (row is None or row.reason != entry.skip_reason):
                store.put_file(_skipped(entry), None)
            report.failed.append((shown_name(entry.rel), entry.skip_reason))
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
                report.failed.append((shown_name(entry.rel), row.reason))
            continue
        if row.sha256 and row.size == entry.size and not retry:
            try:
                same = sha256_of(root / entry.rel) == row.sha256
            except OSError:
                same = False
            if same:
                store.touch_file(shown_name(entry.rel), entry.mtime_ns)
                report.unchanged += 1
                continue
        todo.append(entry)

    pending: list[tuple[FileResult, int | None, int | None, str | None]] = []
    pending_vectors: list[list[bytes] | None] = []
    last_flush = time.monotonic()
    remote = executor is not None and executor.remote
    if remote and options.embed:
        report.embedder = _prepare_vectors(store, options.embedder)

    def flush() -> None:
        nonlocal last_flush
        if pending:
            ids = store.put_files(pending)  # one transaction: a killed run keeps every committed file whole
            vectors = [(i, v) for i, v in zip(ids, pending_vectors, strict=True) if v]
            for file_id, vecs in vectors:  # embedded where the file was read; any left over are embedded below
                segment_ids = store.segment_ids(file_id)
                if len(segment_ids) == len(vecs):
                    store.put_vectors(zip(segment_ids, vecs, strict=True))
            pending.clear()
            pending_vectors.clear()
        last_flush = time.monotonic()

    def record(entry: Entry, result: FileResult, vectors: list[bytes] | None = None, chunked: bool = False) -> None:
        sig = sign(entry.rel, result.reader == "gold", result.info.type if result.info is not None else None)
        if not chunked:
            result = _chunked(result, chunker, chunk_embedder)
        pending.append((result, entry.mtime_ns, entry.size, sig))
        pending_vectors.append(vectors)
        if len(pending) >= COMMIT_FILES or time.monotonic() - last_flush >= COMMIT_SECONDS:
            flush()
        if shown_name(entry.rel) in known:
            report.updated += 1
        else:
            report.added += 1
        report.segments += len(result.segments)
        if result.status in ("failed", "skipped") and result.reason:
            report.failed.append((shown_name(entry.rel), result.reason))
        report.notes.extend((shown_name(entry.rel), note) for note in result.notes)

    perceive_todo = []
    for entry in todo:
        try:
            gold_result = gold.result_for(root, entry.rel) if gold else None
        except Exception as exc:  # Gold JSON that is not what it says: recorded, the file is not lost
            reason = f"its HippoCamp_Gold JSON is unusable: {type(exc).__name__}: {exc}"
            gold_result = FileResult(entry.rel, None, modality_of(entry.rel) or "other", "failed", reason=reason)
        if gold_result is not None:
            record(entry, gold_result)
            report.from_gold += 1
        else:
            perceive_todo.append(entry)
    try:
        if remote:
            assert executor is not None
            _read_on_cluster(root, perceive_todo, options, record, progress, executor, report)
        else:
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


def _chunker_for(options: IndexOptions) -> tuple[Chunker, Embedder | None]:
    """The chunker of ``options`` and, when it needs one, the index's embedder (checked now, so a run
    that cannot chunk stops before it changes anything)."""
    chunker = parse_chunker(options.chunker)
    if not chunker.needs_embedder:
        return chunker, None
    if not options.embed:
        raise ChunkerError(
            f"chunker {chunker.spec!r} needs an embedder, and embeddings are off: index with embeddings"
            " (no --no-embed), or choose --chunker recursive"
        )
    from hippocamp.models.embedding import get_embedder

    try:
        return chunker, get_embedder(options.embedder)
    except ModelNotAvailableError as exc:
        raise ChunkerError(f"chunker {chunker.spec!r} needs an embedder: {exc}") from None


def _chunked(result: FileResult, chunker: Chunker, embedder: Embedder | None) -> FileResult:
    """``result`` with its segments re-cut; a file that cannot be chunked is recorded as failed, with
    the reason (its old chunks are not kept, so the store never mixes chunkers)."""
    if not result.segments or chunker.spec == DEFAULT_CHUNKER:
        return result
    try:
        return replace(result, segments=chunker.chunk(result.segments, embedder))
    except Exception as exc:  # an embedder or plug-in failing on one file: the run goes on
        reason = f"could not be chunked ({chunker.spec}): {type(exc).__name__}: {exc}"
        return replace(result, status="failed", segments=[], reason=reason)


def _skipped(entry: Entry) -> FileResult:
    return FileResult(entry.rel, None, modality_of(entry.rel) or "other", "skipped", reason=entry.skip_reason)


def _read_unshippable_here(
    root: Path,
    entries: list[Entry],
    options: IndexOptions,
    record: Callable[..., None],
    progress: Progress,
) -> list[Entry]:
    """Files whose reader was registered at run time in this process (it cannot be sent to a worker
    process or a cluster) are read here, without the wall; returns the others."""
    _, local = shippable_readers()
    here = [e for e in entries if (r := reader_for(extension(e.rel))) is not None and r.name in local] if local else []
    if not here:
        return entries
    _read_all(root, here, replace(options, isolate=False), record, progress)
    done_here = set(here)
    return [e for e in entries if e not in done_here]


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
    if not options.isolate:
        for i, entry in enumerate(entries):
            progress("read", i, total, shown_name(entry.rel))
            record(entry, perceive_file(root, entry.rel, options.perceive))
        progress("read", total, total, None)
        return
    entries = _read_unshippable_here(root, entries, options, record, progress)
    total = len(entries)
    by_rel = {entry.rel: entry for entry in entries}
    tasks = [[(entry.rel, entry.size) for entry in chunk] for chunk in _chunks(entries, options.workers)]
    with ReaderPool(root, options.perceive, options.limits, min(options.workers, len(tasks))) as pool:
        for done, result in enumerate(pool.read(tasks), start=1):
            entry = by_rel[result.path]
            record(entry, result)
            progress("read", done, total, shown_name(entry.rel))


def embed_missing(store: Store, name: str | None, progress: Progress, batch: int = 128) -> tuple[str | None, int]:
    """Embed every segment without a vector; re-embed all when the embedder changed."""
    from hippocamp.models.embedding import default_embedder_name, get_embedder

    name = name or default_embedder_name()
    known = _embedder_id(name)
    counts = store.counts()
    if known is not None and store.get_meta("embedder") == known and counts["segments"] == counts["vectors"]:
        return known, 0  # nothing to embed: the model is not even loaded
    embedder = get_embedder(name)
    _use_embedder(store, embedder.id, name)
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


def _embedder_id(name: str) -> str | None:
    """The id of a registered embedder without loading its model (None when it only says once built)."""
    from hippocamp import registry

    try:
        value = getattr(registry.get("embedder", name), "id", None)
    except Exception:
        return None
    return value if isinstance(value, str) else None


def _prepare_vectors(store: Store, name: str | None) -> str | None:
    """Before a cluster embeds: the store's vectors are dropped when they came from another embedder,
    and the embedder to use is recorded. Its id, or None when it is not known without loading it (then
    the embedding is left to `embed_missing`, here)."""
    from hippocamp.models.embedding import default_embedder_name

    name = name or default_embedder_name()
    known = _embedder_id(name)
    if known is not None:
        _use_embedder(store, known, name)
    return known


def _use_embedder(store: Store, embedder_id: str, name: str) -> None:
    """Record the store's embedder; vectors made by another one are dropped (they would not compare)."""
    if store.get_meta("embedder") != embedder_id:
        store.clear_vectors()
        store.set_meta("embedder", embedder_id)
        store.set_meta("embedder_name", name)


@dataclass
class ReadJob:
    """Reading files on a cluster's worker: a batch of ``(rel, size)`` files behind the same wall as here
    (a reader process of the worker's own, with its limits), their segments re-cut by the chunker and,
    with ``embedder``, embedded. Returns ``(result, vectors)`` per file (vectors as stored: float32 bytes)."""

    root: str
    perceive: PerceiveOptions
    limits: ReadLimits
    chunker: str
    #: the embedder to embed with on the worker (None: no vectors here)
    embedder: str | None
    #: the semantic chunker's embedder, when the chunker needs one
    chunk_embedder: str | None = None
    _pool: ReaderPool | None = field(default=None, repr=False)

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_pool": None}

    def prepare(self) -> None:
        """On a worker, once: a node that does not have the profile is the index's error."""
        if not Path(self.root).is_dir():
            import socket

            raise FileNotFoundError(
                f"{self.root}: no such folder on {socket.gethostname()}: put the profile on storage every machine "
                "mounts at the same path, or ship it (--ship objects)"
            )

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def relocated(self, mapping: dict[str, str]) -> ReadJob:
        return replace(self, root=mapping.get(self.root, self.root), _pool=None)

    def __call__(self, batch: list[tuple[str, int]]) -> list[tuple[FileResult, list[bytes] | None]]:
        from hippocamp.models.embedding import get_embedder

        if self._pool is None:
            self._pool = ReaderPool(Path(self.root), self.perceive, self.limits, 1)
        chunker = parse_chunker(self.chunker)
        chunk_embedder = get_embedder(self.chunk_embedder) if chunker.needs_embedder else None
        results = [_chunked(result, chunker, chunk_embedder) for result in self._pool.read([batch])]
        if self.embedder is None:
            return [(result, None) for result in results]
        # the whole batch's segments in one call (the embedder groups texts by length; a text's vector does
        # not depend on the others it is embedded with)
        texts = [segment.text for result in results for segment in result.segments]
        matrix = np.asarray(get_embedder(self.embedder).embed(texts, side="passage"), dtype=np.float32)
        out: list[tuple[FileResult, list[bytes] | None]] = []
        start = 0
        for result in results:
            rows = matrix[start : start + len(result.segments)]
            start += len(result.segments)
            out.append((result, [row.tobytes() for row in rows] if result.segments else None))
        return out


def _with_times_here(root: Path, result: FileResult) -> FileResult:
    """``result`` with the file's times as this machine sees them (a worker that read a shipped copy saw
    the copy's)."""
    if result.info is None:
        return result
    try:
        here = file_info(root / result.path, ext=result.info.type)
    except OSError:
        return result
    return replace(result, info=result.info.model_copy(update={"created": here.created, "modified": here.modified}))


def _read_on_cluster(
    root: Path,
    entries: list[Entry],
    options: IndexOptions,
    record: Callable[..., None],
    progress: Progress,
    executor: Executor,
    report: IndexReport,
) -> None:
    """`_read_all` on a cluster: batches of files as tasks, results recorded here as they come."""
    from hippocamp.executors import Job, run_coroutine
    from hippocamp.models.embedding import default_embedder_name

    entries = _read_unshippable_here(root, entries, options, record, progress)
    total = len(entries)
    if total == 0:
        return
    cpus = max(1, int(executor.describe().get("cpus") or 1))
    by_rel = {entry.rel: entry for entry in entries}
    batches = [[(entry.rel, entry.size) for entry in chunk] for chunk in _chunks(entries, cpus)]
    embedder = (options.embedder or default_embedder_name()) if options.embed and report.embedder else None
    reader = ReadJob(str(root.resolve()), options.perceive, options.limits, options.chunker, embedder,
                     options.embedder)  # fmt: skip
    limit = max(sum(options.limits.seconds_for(size) for _, size in batch) for batch in batches)
    job = Job(
        name="read",
        fn=reader,
        # the wall stops each file in time; a batch still running long after (a stuck worker) is cancelled
        timeout=limit + 300.0,
        paths=(root.resolve(),),
        relocate=lambda mapping: replace(job, fn=reader.relocated(mapping)),
    )

    async def consume() -> None:
        done = 0
        async with contextlib.aclosing(executor.map(job, batches, concurrency=cpus * 2)) as outcomes:
            async for outcome in outcomes:
                if outcome.lost is not None or outcome.result is None:  # nothing recorded: read next run
                    for rel, _ in outcome.item:
                        report.notes.append((shown_name(rel), f"not read: {outcome.lost}"))
                    continue
                for result, vectors in outcome.result:
                    entry = by_rel[result.path]
                    record(entry, _with_times_here(root, result), vectors, chunked=True)
                    done += 1
                    progress("read", done, total, shown_name(entry.rel))

    run_coroutine(consume())
