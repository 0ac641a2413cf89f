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

__all__ = ["Hit", "Mode", "SearchFilters", "Searcher", "fts_query", "query_words"]

Mode = Literal["hybrid", "fts", "vector"]
RRF_K = 60
#: from this many segments on, query words found in half the rows or more are left out of BM25
PRUNE_FROM_ROWS = 2000
_TOKENIZE = "'porter unicode61 remove_diacritics 2'"
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hippocamp-search")

_STOP = frozenset(
    """a an and are as at be been but by can could did do does for from had has have he her his how i if in
    into is it its me my of on or our she so than that the their them then there these they this to us
    was we were what when where which who whom why will with would you your""".split()
)


def query_words(text: str) -> list[str]:
    """The words of a query, stop words dropped unless nothing else is left, each once."""
    words = re.findall(r"\w+", text.lower())
    kept = [w for w in words if w not in _STOP] or words
    return list(dict.fromkeys(kept))


def fts_query(text: str | list[str]) -> str | None:
    """An FTS5 query matching any of the words (given, or taken from a text by `query_words`)."""
    words = query_words(text) if isinstance(text, str) else text
    return " OR ".join(f'"{w}"' for w in words) if words else None


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
    globs: dict[str, np.ndarray] = field(default_factory=dict)


class Searcher:
    def __init__(self, store: Store, embedder: Any | None = None):
        self.store = store
        self._embedder = embedder
        self._matrix: _Matrix | None = None
        self._rows: tuple[int, int] | None = None
        self._tokenizer_ready = False
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
        match = fts_query(self._informative(query_words(query)))
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

    def _informative(self, words: list[str]) -> list[str]:
        """Words that can change a BM25 ranking. FTS5 clamps the idf of a term found in at least half
        of the rows to 1e-6, so such a term adds nothing to any score, yet scoring every row it matches
        is most of the cost on a large store: drop it (keeping the rarest word if all are common).
        Rankings of rows that match the other words are unchanged."""
        if len(words) < 2:
            return words
        rows = self._row_count()
        if rows < PRUNE_FROM_ROWS:
            return words
        df = {w: self._doc_frequency(w) for w in words}
        kept = [w for w in words if 2 * df[w] < rows]
        return kept or [min(words, key=lambda w: df[w])]

    def _row_count(self) -> int:
        if self._rows is None or self._rows[0] != self.store.generation:
            self._rows = (self.store.generation, self.store.db.execute("SELECT COUNT(*) FROM segments").fetchone()[0])
        return self._rows[1]

    def _doc_frequency(self, word: str) -> int:
        """Rows containing the word as FTS5 tokenizes it (stemmed; the most frequent of its tokens)."""
        db = self.store.db
        if not self._tokenizer_ready:
            db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_tokens USING fts5(x, tokenize = {_TOKENIZE})")
            db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_vocab USING fts5vocab(temp, query_tokens, 'row')")
            self._tokenizer_ready = True
        db.execute("DELETE FROM temp.query_tokens")  # a temp table: autocommit, no lock on the store
        db.execute("INSERT INTO temp.query_tokens (x) VALUES (?)", (word,))
        terms = [r[0] for r in db.execute("SELECT term FROM temp.query_vocab")]
        counts = [db.execute("SELECT doc FROM fts_vocab WHERE term = ?", (t,)).fetchone() for t in terms]
        return max((c[0] for c in counts if c), default=0)

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
            times=np.array([r[5] for r in rows], dtype=str),
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
        if f.glob not in m.globs:  # one match per distinct path, remembered per pattern
            unique, inverse = np.unique(m.paths.astype(str), return_inverse=True)
            hits = np.array([fnmatch.fnmatchcase(p, f.glob) for p in unique], dtype=bool)
            m.globs[f.glob] = hits[inverse]
        mask = both(mask, m.globs[f.glob])
    if f.modality:
        mask = both(mask, np.isin(m.modality, list(f.modality)))
    if f.types:
        mask = both(mask, np.isin(m.types, [t.lower().lstrip(".") for t in f.types]))
    if f.after:
        mask = both(mask, (m.times != "") & (m.times >= f.after))
    if f.before:
        mask = both(mask, (m.times != "") & (m.times < f.before))
    return mask


def _rrf(lists: dict[str, list[tuple[int, float]]]) -> list[tuple[int, float]]:
    """Reciprocal-rank fusion: score = sum over lists of 1 / (60 + rank)."""
    scores: dict[int, float] = {}
    for items in lists.values():
        for rank, (sid, _) in enumerate(items, start=1):
            scores[sid] = scores.get(sid, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
