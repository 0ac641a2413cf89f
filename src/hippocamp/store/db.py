"""The profile store: one SQLite file per profile holding files, segments, an FTS5 index and vectors.

Tables: ``meta`` (schema version, root, embedder), ``files`` (one row per file seen, with its
status and the reason when it could not be read), ``segments``, ``fts`` (FTS5 over segment text and
file path, rowid = segment id), ``vectors`` (float32 blobs, one per segment) and ``file_metadata``
(what a release's metadata spreadsheet says of a file: dates, location, ...; one JSON object per
path, kept apart from ``files`` so re-indexing a file keeps it). Tables and columns added since a
store's version are added when it is opened (``CREATE ... IF NOT EXISTS``, ``ALTER TABLE``); the
version changes only when old rows would be read wrongly. Every file is
written in one transaction with its segments, so a killed run leaves a consistent store and the next
run continues where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from hippocamp.paths import cache_dir
from hippocamp.schema.segment import Segment
from hippocamp.text.names import clean_text, raw_name, shown_name

__all__ = ["STORE_VERSION", "FileRow", "Store", "StoreError", "default_store_path"]

STORE_VERSION = "2"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    size INTEGER,
    mtime_ns INTEGER,
    sha256 TEXT,
    modality TEXT NOT NULL,
    type TEXT NOT NULL,
    created TEXT,
    modified TEXT,
    status TEXT NOT NULL,
    reader TEXT,
    signature TEXT,
    reason TEXT,
    notes TEXT NOT NULL DEFAULT '[]',
    segments INTEGER NOT NULL DEFAULT 0,
    indexed_at REAL NOT NULL,
    raw BLOB
);
CREATE TABLE IF NOT EXISTS segments (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    modality TEXT NOT NULL,
    text TEXT NOT NULL,
    locator TEXT,
    within TEXT NOT NULL DEFAULT '[]',
    meta TEXT NOT NULL DEFAULT '{}',
    time TEXT
);
CREATE INDEX IF NOT EXISTS segments_file ON segments(file_id);
CREATE INDEX IF NOT EXISTS segments_time ON segments(time);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(text, path, tokenize = 'porter unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS fts_vocab USING fts5vocab(fts, 'row');
CREATE TABLE IF NOT EXISTS vectors (
    segment_id INTEGER PRIMARY KEY REFERENCES segments(id) ON DELETE CASCADE,
    vector BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS file_metadata (path TEXT PRIMARY KEY, fields TEXT NOT NULL);
"""


class StoreError(Exception):
    """A store that cannot be opened or does not belong to the profile."""


def default_store_path(root: Path) -> Path:
    """``<cache>/stores/<folder name>-<hash of its absolute path>.sqlite``: outside the profile, so
    agents listing its files never see the index."""
    resolved = str(root.resolve())
    digest = hashlib.sha1(resolved.encode()).hexdigest()[:10]
    return cache_dir() / "stores" / f"{root.resolve().name or 'root'}-{digest}.sqlite"


@dataclass(frozen=True)
class FileRow:
    id: int
    path: str
    size: int | None
    mtime_ns: int | None
    sha256: str | None
    modality: str
    type: str
    created: str | None
    modified: str | None
    status: str
    reader: str | None
    signature: str | None
    reason: str | None
    notes: list[str]
    segments: int


_ENCODE = json.JSONEncoder(ensure_ascii=False, default=str).encode


def _dumps(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, default=str)``, the encoder made once."""
    return _ENCODE(value)


def _segment_time(seg: Segment, fallback: str | None) -> str | None:
    """When a segment happened: its own time (an event, a mail, a photo) else the file's."""
    for key in ("time", "start", "date", "taken"):
        value = seg.meta.get(key)
        if isinstance(value, str) and len(value) >= 10 and value[:4].isdigit():
            return value
    return fallback


class Store:
    """A profile's store. Safe to share between threads of one process (one connection, a lock)."""

    def __init__(self, path: Path, root: Path | None = None, create: bool = True):
        self.path = path
        if not create and not path.is_file():
            raise StoreError(f"{path}: no index here; run `hippocamp index` first")
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self.db.executescript(_SCHEMA)
            columns = {row[1] for row in self.db.execute("PRAGMA table_info(files)")}
            if "raw" not in columns:  # a store made before names of any bytes were kept
                self.db.execute("ALTER TABLE files ADD COLUMN raw BLOB")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path}: not a hippocamp store ({exc})") from None
        self._lock = threading.RLock()
        self._writes = 0  # bumped on every commit through this object
        version = self.get_meta("schema_version")
        if version is None:
            self.set_meta("schema_version", STORE_VERSION)
        elif version != STORE_VERSION:
            raise StoreError(
                f"{path}: store format {version}, this hippocamp reads {STORE_VERSION}; rebuild it (index --rebuild)"
            )
        if root is not None:
            stored_root = self.get_meta("root")
            if stored_root is None:
                self.set_meta("root", str(root.resolve()))
            elif stored_root != str(root.resolve()):
                raise StoreError(f"{path}: indexes {stored_root}, not {root.resolve()}")

    @classmethod
    def reader(cls, path: str | Path) -> Store:
        """A read-only view of the store at ``path``, opened on first use (``immutable``: no locks and no
        WAL, so it works on shared storage; the store must not change while it is read). This is what a
        pickled store becomes on a cluster's worker."""
        store = cls.__new__(cls)
        store.path = Path(path)
        store.db = _LazyReadOnly(store.path)  # type: ignore[assignment]
        store._lock = threading.RLock()
        store._writes = 0
        return store

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its path (a cluster's workers open it read-only): the write-ahead log is folded
        into the file first, so a reader that ignores it sees every committed file."""
        if not isinstance(self.db, _LazyReadOnly):
            try:
                busy = self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: cannot fold its write-ahead log into the file ({exc})") from None
            if busy:
                raise StoreError(
                    f"{self.path}: another process is writing this store; wait for it to finish before running "
                    "on a cluster (its workers would not see the latest writes)"
                )
        return (Store.reader, (str(self.path),))

    @classmethod
    def for_root(cls, root: Path, path: Path | None = None) -> Store:
        return cls(path or default_store_path(root), root=root)

    @property
    def root(self) -> Path | None:
        value = self.get_meta("root")
        return Path(value) if value else None

    def close(self) -> None:
        self.db.close()

    # -- meta --------------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
            self._writes += 1

    @property
    def generation(self) -> tuple[int, int]:
        """Changes whenever the store does: a commit through this object, or one by another connection
        (another process indexing the same store). Search caches key on it."""
        return self._writes, self.db.execute("PRAGMA data_version").fetchone()[0]

    # -- files -------------------------------------------------------------------------------------
    def files(self) -> dict[str, FileRow]:
        rows = self.db.execute(
            "SELECT id, path, size, mtime_ns, sha256, modality, type, created, modified, status, reader, signature,"
            " reason, notes, segments FROM files"
        ).fetchall()
        return {r[1]: FileRow(*r[:13], json.loads(r[13]), r[14]) for r in rows}

    def file(self, path: str) -> FileRow | None:
        return self.files().get(path) if path else None

    def put_file(self, result: Any, mtime_ns: int | None, size: int | None = None, signature: str | None = None) -> int:
        """Replace a file and its segments (a `FileResult`) in one transaction; returns the file id.
        ``mtime_ns`` and ``size`` are what the walk saw (what the next walk compares with)."""
        return self.put_files([(result, mtime_ns, size, signature)])[0]

    def put_files(self, items: list[tuple[Any, int | None, int | None, str | None]]) -> list[int]:
        """Several files in one transaction (one commit for many small files); returns their ids. The
        segments and their FTS rows of the whole batch go in with one statement each.

        A file name that is not UTF-8 is stored as shown (``bad\\xff.txt``) with its bytes in ``raw``;
        text that cannot be stored as it is (lone surrogates) is stored escaped. Should a batch still
        fail, its files are stored one by one, and a file that cannot be stored at all is recorded as
        failed with the reason: one bad file never costs the others."""
        try:
            return self._put_batch(items, clean=False)
        except UnicodeEncodeError:
            pass  # text with lone surrogates somewhere in the batch (rare): store it escaped
        try:
            return self._put_batch(items, clean=True)
        except (sqlite3.Error, ValueError, OverflowError, TypeError) as exc:
            if len(items) == 1:
                return self._put_batch([_unstorable(items[0], exc)], clean=True)
        return [self.put_files([item])[0] for item in items]

    def _put_batch(self, items: list[tuple[Any, int | None, int | None, str | None]], clean: bool) -> list[int]:
        if clean:
            items = [(_cleaned(item[0]), *item[1:]) for item in items]
        with self.transaction() as db:
            next_id = db.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM segments").fetchone()[0]
            segments: list[tuple[Any, ...]] = []
            fts: list[tuple[int, str, str]] = []
            ids = []
            seen: set[str] = set()
            for item in items:
                if item[0].path in seen:  # the same file twice: its first segments go in before it is replaced
                    self._insert_segments(db, segments, fts)
                    segments, fts = [], []
                seen.add(item[0].path)
                file_id, rows = self._put(db, *item, first_id=next_id, clean=clean)
                next_id += len(rows)
                segments.extend(rows)
                path = shown_name(item[0].path)
                fts.extend((row[0], row[4], path) for row in rows)
                ids.append(file_id)
            self._insert_segments(db, segments, fts)
            return ids

    @staticmethod
    def _insert_segments(db: sqlite3.Connection, segments: list[tuple[Any, ...]], fts: list[Any]) -> None:
        db.executemany(
            "INSERT INTO segments (id, file_id, ordinal, modality, text, locator, within, meta, time)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            segments,
        )
        db.executemany("INSERT INTO fts (rowid, text, path) VALUES (?, ?, ?)", fts)

    def _put(
        self,
        db: sqlite3.Connection,
        result: Any,
        mtime_ns: int | None,
        size: int | None,
        signature: str | None,
        first_id: int,
        clean: bool = False,
    ) -> tuple[int, list[tuple[Any, ...]]]:
        """Replace the file's row; returns its id and the rows of its segments (ids from ``first_id``)
        for the caller to insert with the rest of the batch."""
        info = result.info
        path = shown_name(result.path)
        raw = raw_name(result.path) if path is not result.path else None
        old = db.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
        if old is not None:
            self._delete_segments(db, old[0])
            db.execute("DELETE FROM files WHERE id = ?", (old[0],))
        cur = db.execute(
            "INSERT INTO files (path, size, mtime_ns, sha256, modality, type, created, modified, status, reader,"
            " signature, reason, notes, segments, indexed_at, raw)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                path,
                info.size if info else size,
                mtime_ns,
                result.sha256,
                result.modality,
                shown_name(info.type) if info else Path(path).suffix.lstrip(".").lower(),
                info.created.isoformat() if info and info.created else None,
                info.modified.isoformat() if info and info.modified else None,
                result.status,
                result.reader,
                signature,
                result.reason,
                json.dumps(result.notes, ensure_ascii=False),
                len(result.segments),
                time.time(),
                raw,
            ),
        )
        file_id = int(cur.lastrowid or 0)
        fallback = info.modified.isoformat() if info and info.modified else None
        dumps = (lambda value: clean_text(_dumps(value))) if clean else _dumps
        rows = [
            (
                first_id + n,
                file_id,
                seg.ordinal,
                seg.modality,
                seg.text,
                None if seg.locator is None else dumps(seg.locator.dump()),
                dumps([w.dump() for w in seg.within]) if seg.within else "[]",
                dumps(seg.meta) if seg.meta else "{}",
                _segment_time(seg, fallback),
            )
            for n, seg in enumerate(result.segments)
        ]
        return file_id, rows

    # -- spreadsheet metadata ------------------------------------------------------------------------
    def set_file_metadata(self, items: dict[str, dict[str, Any]]) -> None:
        """Replace every file's spreadsheet metadata (path as stored -> JSON-able fields) in one transaction."""
        with self.transaction() as db:
            db.execute("DELETE FROM file_metadata")
            db.executemany(
                "INSERT INTO file_metadata (path, fields) VALUES (?, ?)",
                [(path, clean_text(_dumps(fields))) for path, fields in sorted(items.items())],
            )

    def file_metadata(self, path: str) -> dict[str, Any] | None:
        """The spreadsheet metadata of a file (dates, location, ...), or None when there is none."""
        row = self.db.execute("SELECT fields FROM file_metadata WHERE path = ?", (path,)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def real_name(self, path: str) -> str:
        """The name a stored file has on disk (as Python spells it: undecodable bytes as surrogates),
        for a name as stored and shown."""
        row = self.db.execute("SELECT raw FROM files WHERE path = ?", (path,)).fetchone()
        if row is None or row[0] is None:
            return path
        return bytes(row[0]).decode("utf-8", "surrogateescape")

    def touch_file(self, path: str, mtime_ns: int) -> None:
        """A file whose content did not change (same sha256) but whose mtime did."""
        with self.transaction() as db:
            db.execute("UPDATE files SET mtime_ns = ? WHERE path = ?", (mtime_ns, path))

    def remove_files(self, paths: Iterable[str]) -> int:
        removed = 0
        with self.transaction() as db:
            for path in paths:
                row = db.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
                if row is not None:
                    self._delete_segments(db, row[0])
                    db.execute("DELETE FROM files WHERE id = ?", (row[0],))
                    removed += 1
        return removed

    @staticmethod
    def _delete_segments(db: sqlite3.Connection, file_id: int) -> None:
        db.execute("DELETE FROM fts WHERE rowid IN (SELECT id FROM segments WHERE file_id = ?)", (file_id,))
        db.execute("DELETE FROM segments WHERE file_id = ?", (file_id,))  # vectors cascade

    # -- segments ----------------------------------------------------------------------------------
    def segment_rows(self, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        ids = list(ids)
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.db.execute(
            "SELECT s.id, f.path, s.modality, s.text, s.locator, s.within, s.meta, s.ordinal, s.time, f.type"
            f" FROM segments s JOIN files f ON f.id = s.file_id WHERE s.id IN ({marks})",
            ids,
        ).fetchall()
        return {r[0]: _row_dict(r) for r in rows}

    def segment_ids(self, file_id: int) -> list[int]:
        """The ids of a file's segments, in the order they were stored."""
        rows = self.db.execute("SELECT id FROM segments WHERE file_id = ? ORDER BY id", (file_id,)).fetchall()
        return [r[0] for r in rows]

    def segments_of(self, path: str) -> list[Segment]:
        rows = self.db.execute(
            "SELECT s.id, f.path, s.modality, s.text, s.locator, s.within, s.meta, s.ordinal, s.time, f.type"
            " FROM segments s JOIN files f ON f.id = s.file_id WHERE f.path = ? ORDER BY s.ordinal",
            (path,),
        ).fetchall()
        return [to_segment(_row_dict(r)) for r in rows]

    def counts(self) -> dict[str, int]:
        q = self.db.execute
        return {
            "files": q("SELECT COUNT(*) FROM files").fetchone()[0],
            "segments": q("SELECT COUNT(*) FROM segments").fetchone()[0],
            "vectors": q("SELECT COUNT(*) FROM vectors").fetchone()[0],
            "failed": q("SELECT COUNT(*) FROM files WHERE status IN ('failed', 'skipped')").fetchone()[0],
        }

    # -- vectors -----------------------------------------------------------------------------------
    def has_vectors(self) -> bool:
        return self.db.execute("SELECT EXISTS (SELECT 1 FROM vectors)").fetchone()[0] == 1

    def segments_without_vectors(self, limit: int = 1000) -> list[tuple[int, str]]:
        return self.db.execute(
            "SELECT s.id, s.text FROM segments s LEFT JOIN vectors v ON v.segment_id = s.id"
            " WHERE v.segment_id IS NULL ORDER BY s.id LIMIT ?",
            (limit,),
        ).fetchall()

    def put_vectors(self, items: Iterable[tuple[int, bytes]]) -> None:
        with self.transaction() as db:
            db.executemany("INSERT OR REPLACE INTO vectors (segment_id, vector) VALUES (?, ?)", list(items))

    def clear_vectors(self) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM vectors")


class _LazyReadOnly:
    """A connection to a store opened read-only when first used; a store that is not there is a
    `StoreError` naming the machine and the path."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._db: sqlite3.Connection | None = None

    def _open(self) -> sqlite3.Connection:
        if self._db is None:
            if not self._path.is_file():
                import socket

                raise StoreError(
                    f"{self._path}: no such store on {socket.gethostname()}: put the store on storage every "
                    "machine mounts at the same path, or ship it (--ship objects)"
                )
            uri = f"file:{quote(str(self._path))}?immutable=1"
            self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        return self._db

    def __getattr__(self, name: str) -> Any:
        return getattr(self._open(), name)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


def _cleaned(result: Any) -> Any:
    """A copy of a `FileResult` whose text, notes and segment fields encode as UTF-8."""
    import dataclasses

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return clean_text(value)
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        return value

    segments = []
    for seg in result.segments:
        seg = seg.model_copy()
        seg.text = clean_text(seg.text)
        seg.meta = clean(seg.meta)
        segments.append(seg)
    return dataclasses.replace(
        result,
        reason=None if result.reason is None else clean_text(result.reason),
        notes=[clean_text(n) for n in result.notes],
        segments=segments,
    )


def _unstorable(item: tuple[Any, int | None, int | None, str | None], exc: Exception) -> tuple[Any, ...]:
    """A file whose segments could not be stored: kept as a failed file without them."""
    import dataclasses

    result = dataclasses.replace(
        item[0], status="failed", segments=[], reason=f"could not be stored: {type(exc).__name__}: {exc}"
    )
    return (result, *item[1:])


def _row_dict(r: tuple[Any, ...]) -> dict[str, Any]:
    return {
        "id": r[0],
        "path": r[1],
        "modality": r[2],
        "text": r[3],
        "locator": None if r[4] is None else json.loads(r[4]),
        "within": json.loads(r[5]),
        "meta": json.loads(r[6]),
        "ordinal": r[7],
        "time": r[8],
        "type": r[9],
    }


def to_segment(row: dict[str, Any]) -> Segment:
    return Segment(
        path=row["path"],
        modality=row["modality"],
        text=row["text"],
        locator=row["locator"],
        within=row["within"],
        meta=row["meta"],
        ordinal=row["ordinal"],
    )
