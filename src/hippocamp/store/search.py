"""Search over a store: BM25 (FTS5), exact vector search (numpy), and hybrid by reciprocal-rank fusion.

Filters (path glob, modality, file type, time range) apply to every mode. The vector matrix is loaded
once and reused until the store changes. Hybrid falls back to BM25 alone when the store has no
vectors (and says so in ``Searcher.mode_used``).
"""

from __future__ import annotations

import fnmatch
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from hippocamp.schema.segment import Segment
from hippocamp.store.db import Store, to_segment

__all__ = ["Hit", "Mode", "SearchFilters", "Searcher", "fts_query"]

Mode = Literal["hybrid", "fts", "vector"]
RRF_K = 60
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hippocamp-search")

_STOP = frozenset(
    """a an and are as at be been but by can could did do does for from had has have he her his how i if in
    into is it its me my of on or our she so than that the their them then there these they this to us
    was we were what when where which who whom why will with would you your""".split()
)


def fts_query(text: str) -> str | None:
    """An FTS5 query matching any of the text's words (stop words dropped unless nothing is left)."""
    words = re.findall(r"\w+", text.lower())
    kept = [w for w in words if w not in _STOP] or words
    if not kept:
        return None
    unique = list(dict.fromkeys(kept))
    return " OR ".join(f'"{w}"' for w in unique)


@dataclass(frozen=True)
class SearchFilters:
    #: shell-style pattern on the profile-relative path (``*`` also crosses folders)
    glob: str | None = None
    modality: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    #: ISO dates/times; compared with the segment's time (an event, a mail, a photo) or its file's
    after: str | None = None
    before: str | None = None

    def sql(self) -> tuple[str, list[Any]]:
        clauses, args = [], []
        if self.glob:
            clauses.append("f.path GLOB ?")
            args.append(self.glob)
        if self.modality:
            clauses.append(f"s.modality IN ({','.join('?' * len(self.modality))})")
            args.extend(self.modality)
        if self.types:
            clauses.append(f"f.type IN ({','.join('?' * len(self.types))})")
            args.extend(t.lower().lstrip(".") for t in self.types)
        if self.after:
            clauses.append("s.time >= ?")
            args.append(self.after)
        if self.before:
            clauses.append("s.time < ?")
            args.append(self.before)
        return (" AND " + " AND ".join(clauses)) if clauses else "", args


_ROW_FIELDS = ("path", "modality", "text", "locator", "within", "meta", "ordinal", "time")


@dataclass
class Hit:
    """A ranked segment: where it is, what it says, and how it ranked in each list."""

    segment_id: int
    score: float
    path: str
    modality: str
    text: str
    locator: Any
    within: list[Any]
    meta: dict[str, Any]
    ordinal: int
    time: str | None
    ranks: dict[str, int] = field(default_factory=dict)

    def segment(self) -> Segment:
        return to_segment(self.__dict__ | {"id": self.segment_id})

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "modality": self.modality,
            "locator": self.locator,
            "within": self.within,
            "score": round(self.score, 6),
            "ranks": self.ranks,
            "time": self.time,
            "text": self.text,
        }


@dataclass
class _Matrix:
    generation: int
    ids: np.ndarray
    vectors: np.ndarray
    paths: np.ndarray
    modality: np.ndarray
    types: np.ndarray
    times: np.ndarray


class Searcher:
    def __init__(self, store: Store, embedder: Any | None = None):
        self.store = store
        self._embedder = embedder
        self._matrix: _Matrix | None = None
        self.mode_used: Mode | None = None

    # -- embedder ----------------------------------------------------------------------------------
    def embedder(self) -> Any | None:
        if self._embedder is None:
            name = self.store.get_meta("embedder_name")
            if name is None:
                return None
            from hippocamp.models.embedding import get_embedder

            self._embedder = get_embedder(name)
        return self._embedder

    # -- public --------------------------------------------------------------------------------------
    def search(self, query: str, k: int = 10, filters: SearchFilters | None = None, mode: Mode = "hybrid") -> list[Hit]:
        filters = filters or SearchFilters()
        pool = max(50, 5 * k)
        has_vectors = self.store.has_vectors()
        if mode == "vector" and not has_vectors:
            raise ValueError("this store has no vectors: index it with an embedder, or search with mode 'fts'")
        if mode == "hybrid" and not has_vectors:
            mode = "fts"
        self.mode_used = mode
        lists: dict[str, list[tuple[int, float]]] = {}
        if mode == "hybrid":  # BM25 waits on SQLite, the vectors on numpy: both release the GIL, so overlap
            vector = _POOL.submit(self._vector, query, pool, filters)
            lists["fts"] = self._fts(query, pool, filters)
            lists["vector"] = vector.result()
        elif mode == "fts":
            lists["fts"] = self._fts(query, pool, filters)
        else:
            lists["vector"] = self._vector(query, pool, filters)
        ranked = _rrf(lists) if mode == "hybrid" else lists[mode]
        top = ranked[:k]
        rows = self.store.segment_rows(sid for sid, _ in top)
        ranks = {name: {sid: i + 1 for i, (sid, _) in enumerate(items)} for name, items in lists.items()}
        hits = []
        for sid, score in top:
            row = rows.get(sid)
            if row is None:
                continue
            fields = {key: row[key] for key in _ROW_FIELDS}
            hits.append(
                Hit(segment_id=sid, score=score, ranks={n: r[sid] for n, r in ranks.items() if sid in r}, **fields)
            )
        return hits

    # -- the two lists -------------------------------------------------------------------------------
    def _fts(self, query: str, limit: int, filters: SearchFilters) -> list[tuple[int, float]]:
        match = fts_query(query)
        if match is None:
            return []
        where, args = filters.sql()
        joins = " JOIN segments s ON s.id = fts.rowid JOIN files f ON f.id = s.file_id" if where else ""
        rows = self.store.db.execute(
            f"SELECT fts.rowid, bm25(fts, 1.0, 0.5) AS rank FROM fts{joins}"
            f" WHERE fts MATCH ?{where} ORDER BY rank LIMIT ?",
            [match, *args, limit],
        ).fetchall()
        return [(int(r[0]), -float(r[1])) for r in rows]

    def _load_matrix(self) -> _Matrix:
        if self._matrix is not None and self._matrix.generation == self.store.generation:
            return self._matrix
        rows = self.store.db.execute(
            "SELECT v.segment_id, v.vector, f.path, s.modality, f.type, COALESCE(s.time, '')"
            " FROM vectors v JOIN segments s ON s.id = v.segment_id JOIN files f ON f.id = s.file_id"
            " ORDER BY v.segment_id"
        ).fetchall()
        if rows:
            vectors = np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
        else:
            vectors = np.zeros((0, 0), dtype=np.float32)
        self._matrix = _Matrix(
            generation=self.store.generation,
            ids=np.array([r[0] for r in rows], dtype=np.int64),
            vectors=vectors,
            paths=np.array([r[2] for r in rows], dtype=object),
            modality=np.array([r[3] for r in rows], dtype=object),
            types=np.array([r[4] for r in rows], dtype=object),
            times=np.array([r[5] for r in rows], dtype=object),
        )
        return self._matrix

    def _vector(self, query: str, limit: int, filters: SearchFilters) -> list[tuple[int, float]]:
        embedder = self.embedder()
        if embedder is None:
            return []
        m = self._load_matrix()
        if len(m.ids) == 0:
            return []
        q = np.asarray(embedder.embed([query], side="query"), dtype=np.float32)[0]
        scores = m.vectors @ q
        mask = _mask(m, filters)
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
            n = min(limit, int(mask.sum()))
        else:
            n = min(limit, len(scores))
        if n == 0:
            return []
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.argsort(-scores[top])]
        return [(int(m.ids[i]), float(scores[i])) for i in top]


def _mask(m: _Matrix, f: SearchFilters) -> np.ndarray | None:
    mask = None

    def both(a: np.ndarray | None, b: np.ndarray) -> np.ndarray:
        return b if a is None else (a & b)

    if f.glob:
        mask = both(mask, np.array([fnmatch.fnmatchcase(p, f.glob) for p in m.paths], dtype=bool))
    if f.modality:
        mask = both(mask, np.isin(m.modality, list(f.modality)))
    if f.types:
        mask = both(mask, np.isin(m.types, [t.lower().lstrip(".") for t in f.types]))
    if f.after:
        mask = both(mask, np.array([t != "" and t >= f.after for t in m.times], dtype=bool))
    if f.before:
        mask = both(mask, np.array([t != "" and t < f.before for t in m.times], dtype=bool))
    return mask


def _rrf(lists: dict[str, list[tuple[int, float]]]) -> list[tuple[int, float]]:
    """Reciprocal-rank fusion: score = sum over lists of 1 / (60 + rank)."""
    scores: dict[int, float] = {}
    for items in lists.values():
        for rank, (sid, _) in enumerate(items, start=1):
            scores[sid] = scores.get(sid, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
