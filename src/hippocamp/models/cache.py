"""The request cache: SQLite, keyed by the sha256 of the canonical request.

The key covers what changes the output (model id, messages, tools, response format, temperature,
seed, max tokens, stop) and nothing else (not retries, timeouts or concurrency). One connection per
process and file, WAL mode; safe to use from several threads.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from hippocamp.models.types import Generation
from hippocamp.paths import cache_dir

__all__ = ["CacheStats", "RequestCache", "default_cache_path"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS generations (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    created REAL NOT NULL,
    body TEXT NOT NULL
)
"""


def default_cache_path() -> Path:
    return cache_dir() / "requests.sqlite"


@dataclass(frozen=True)
class CacheStats:
    path: Path
    entries: int
    bytes: int
    by_model: dict[str, int]


class RequestCache:
    _shared: ClassVar[dict[Path, RequestCache]] = {}
    _shared_lock = threading.Lock()

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)

    @classmethod
    def open(cls, path: Path | None = None) -> RequestCache:
        """The process-wide cache object of a file (one connection per file)."""
        path = (path or default_cache_path()).resolve()
        with cls._shared_lock:
            if path not in cls._shared:
                cls._shared[path] = cls(path)
            return cls._shared[path]

    def get(self, key: str) -> Generation | None:
        with self._lock:
            row = self._db.execute("SELECT body FROM generations WHERE key = ?", (key,)).fetchone()
        return None if row is None else Generation.model_validate_json(row[0])

    def put(self, key: str, generation: Generation) -> None:
        body = generation.model_dump_json()
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO generations (key, model, created, body) VALUES (?, ?, ?, ?)",
                (key, generation.model, time.time(), body),
            )

    def stats(self) -> CacheStats:
        with self._lock:
            rows = self._db.execute("SELECT model, COUNT(*) FROM generations GROUP BY model ORDER BY 2 DESC").fetchall()
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return CacheStats(self.path, sum(n for _, n in rows), size, dict(rows))

    def clear(self, model: str | None = None) -> int:
        """Delete entries (of one model, or all); returns how many."""
        with self._lock:
            if model is None:
                cur = self._db.execute("DELETE FROM generations")
            else:
                cur = self._db.execute("DELETE FROM generations WHERE model = ?", (model,))
            self._db.execute("VACUUM")
        return cur.rowcount
