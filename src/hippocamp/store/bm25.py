"""FTS5's bm25, computed in memory from FTS5's own tokens.

SQLite's ``bm25()`` scores every row matching any query word through a per-row callback; on a store
of 100k segments a query with mid-frequency words costs tens of milliseconds. `MemoryBM25` reads the
index once (the ``fts5vocab`` 'instance' table: every token FTS5 stored, so the tokens are exactly
FTS5's, porter and unicode61 included) into postings arrays and scores a query with numpy, with
FTS5's formula in the same floating-point order (k1 = 1.2, b = 0.75, column weights text 1.0 and
path 0.5, idf clamped to 1e-6, document length = tokens of both columns, average length from FTS5's
own totals), so scores are the same numbers and the ranking the same as ``ORDER BY bm25(...)``.
Only single-token words are handled here; a query word FTS5 splits into a phrase ("e_mail") is left
to SQLite by the caller.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass

import numpy as np

__all__ = ["COLUMN_WEIGHTS", "MemoryBM25", "averages"]

K1 = 1.2
B = 0.75
#: weights of the fts table's columns (text, path), as passed to bm25(fts, 1.0, 0.5)
COLUMN_WEIGHTS = (1.0, 0.5)


def _varint(blob: bytes, pos: int) -> tuple[int, int]:
    """An SQLite varint (big-endian 7-bit groups, the 9th byte whole) at ``pos``: (value, next pos)."""
    value = 0
    for i in range(9):
        byte = blob[pos + i]
        if i == 8:
            return (value << 8) | byte, pos + 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, pos + i + 1
    raise AssertionError("unreachable")


def averages(db: sqlite3.Connection, table: str = "fts") -> tuple[int, int]:
    """FTS5's row count and total token count (all columns), from its averages record."""
    row = db.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0, 0
    blob = bytes(row[0])
    rows, pos = _varint(blob, 0)
    total = 0
    while pos < len(blob):
        size, pos = _varint(blob, pos)
        total += size
    return rows, total


@dataclass
class MemoryBM25:
    #: rowids (segment ids) of the rows, ascending; postings refer to positions in ``row_ids``
    row_ids: np.ndarray
    #: tokens of each row, both columns (FTS5's xColumnSize(-1))
    lengths: np.ndarray
    #: term -> (start, end) into the postings arrays
    terms: dict[str, tuple[int, int]]
    post_rows: np.ndarray
    #: weighted term frequency of each posting (text occurrences count 1.0, path ones 0.5), float32
    post_freq: np.ndarray
    n_rows: int
    avgdl: float

    @classmethod
    def load(cls, db: sqlite3.Connection, row_ids: np.ndarray | None = None) -> MemoryBM25:
        """Read the ``fts`` table's tokens. ``row_ids`` (ascending) fixes the row positions, e.g. the
        store's segment ids; tokens of rowids not in it are left out."""
        db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_instances USING fts5vocab(main, fts, 'instance')")
        if row_ids is None:
            row_ids = np.array([r[0] for r in db.execute("SELECT rowid FROM fts ORDER BY rowid")], dtype=np.int64)
        n_rows, total = averages(db)
        lengths = np.zeros(len(row_ids), dtype=np.int64)
        terms: dict[str, tuple[int, int]] = {}
        rows_parts: list[np.ndarray] = []
        freq_parts: list[np.ndarray] = []
        done = 0
        # one row per term: its instances as doc * 2 + (column is path); read a few thousand terms at a
        # time so that only the compact postings stay in memory
        cursor = db.execute("SELECT term, group_concat(doc * 2 + (col = 'path')) FROM temp.fts_instances GROUP BY term")
        while groups := cursor.fetchmany(4096):
            counts = np.fromiter((g[1].count(",") + 1 for g in groups), dtype=np.int64, count=len(groups))
            codes = np.fromstring(",".join(g[1] for g in groups), sep=",", dtype=np.int64)
            term_of = np.repeat(np.arange(len(groups), dtype=np.int64), counts)
            docs = codes >> 1
            pos = np.searchsorted(row_ids, docs)
            known = pos < len(row_ids)
            known[known] = row_ids[pos[known]] == docs[known]
            if not known.all():  # tokens of rows that are not segments: left out
                codes, term_of, pos = codes[known], term_of[known], pos[known]
            lengths += np.bincount(pos, minlength=len(row_ids))
            weights = np.where(codes & 1, COLUMN_WEIGHTS[1], COLUMN_WEIGHTS[0]).astype(np.float32)
            key = term_of * (len(row_ids) + 1) + pos
            if len(key) > 1 and not (key[1:] >= key[:-1]).all():  # FTS5 gives them in order; just in case
                order = np.argsort(key, kind="stable")
                key, weights, pos, term_of = key[order], weights[order], pos[order], term_of[order]
            # postings: one per (term, row), frequencies summed over the row's instances
            starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else np.zeros(0, dtype=np.int64)
            rows_parts.append(pos[starts].astype(np.int32))
            freq_parts.append(np.add.reduceat(weights, starts) if len(key) else np.zeros(0, dtype=np.float32))
            bounds = np.searchsorted(term_of[starts], np.arange(len(groups) + 1)) + done
            for i, g in enumerate(groups):
                terms[g[0]] = (int(bounds[i]), int(bounds[i + 1]))
            done += len(starts)
        return cls(
            row_ids=row_ids,
            lengths=lengths.astype(np.float64),
            terms=terms,
            post_rows=np.concatenate(rows_parts) if rows_parts else np.zeros(0, dtype=np.int32),
            post_freq=np.concatenate(freq_parts) if freq_parts else np.zeros(0, dtype=np.float32),
            n_rows=n_rows,
            avgdl=(total / n_rows) if n_rows else 0.0,
        )

    def doc_frequency(self, term: str) -> int:
        start, end = self.terms.get(term, (0, 0))
        return end - start

    def scores(self, phrases: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(score of every row, whether it matches any phrase): bm25 as FTS5 computes it, negated back
        to "higher is better". Each phrase is one token."""
        score = np.zeros(len(self.row_ids), dtype=np.float64)
        matched = np.zeros(len(self.row_ids), dtype=bool)
        n = self.n_rows
        for term in phrases:
            start, end = self.terms.get(term, (0, 0))
            hits = end - start
            idf = math.log((n - hits + 0.5) / (hits + 0.5))  # C's log, as in fts5Bm25GetData
            if idf <= 0.0:
                idf = 1e-6
            if hits == 0:
                continue
            rows = self.post_rows[start:end]
            freq = self.post_freq[start:end].astype(np.float64)  # halves and wholes: exact in float32
            d = self.lengths[rows]
            # fts5Bm25Function: score += idf * ((f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl)))
            score[rows] += idf * ((freq * (K1 + 1.0)) / (freq + K1 * (1 - B + B * d / self.avgdl)))
            matched[rows] = True
        return score, matched

    def top(self, phrases: list[str], limit: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The best ``limit`` rows as (rowid, score), best first, ties by rowid."""
        score, matched = self.scores(phrases)
        if mask is not None:
            matched &= mask
        candidates = np.flatnonzero(matched)
        if len(candidates) == 0 or limit <= 0:
            return []
        if len(candidates) > limit:
            s = score[candidates]
            kth = np.partition(-s, limit - 1)[limit - 1]
            candidates = candidates[-s <= kth]  # the best `limit` and every row tied with the last
        order = np.lexsort((self.row_ids[candidates], -score[candidates]))[:limit]
        best = candidates[order]
        return [(int(self.row_ids[i]), float(score[i])) for i in best]
