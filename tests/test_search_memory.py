"""In-memory BM25 against FTS5's own bm25 (the reference), filters, and cache invalidation."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from hippocamp.store import Searcher, SearchFilters, Store
from hippocamp.store.bm25 import MemoryBM25, averages
from hippocamp.store.search import fts_query

WORDS = [f"w{i}" for i in range(300)] + ["invoice", "invoices", "Café", "cafe", "naïve", "running", "runs", "ran"]
FOLDERS = ["Documents", "Documents/Finance", "Downloads", "Música", "a[b]"]


def _fill(store: Store, files: int, seed: int) -> None:
    rng = random.Random(seed)
    with store.transaction() as db:
        for f in range(files):
            folder = rng.choice(FOLDERS)
            ext = rng.choice(["pdf", "md", "eml"])
            path = f"{folder}/{rng.choice(WORDS)} {f}.{ext}"
            fid = db.execute(
                "INSERT INTO files (path, modality, type, status, indexed_at) VALUES (?, ?, ?, 'ok', 0)",
                (path, "email" if ext == "eml" else "document", ext),
            ).lastrowid
            for i in range(rng.randint(1, 12)):
                text = " ".join(rng.choices(WORDS, k=rng.randint(0, 40)))  # some rows: the path's tokens only
                when = None if rng.random() < 0.2 else f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
                sid = db.execute(
                    "INSERT INTO segments (file_id, ordinal, modality, text, time) VALUES (?, ?, ?, ?, ?)",
                    (fid, i, "email" if ext == "eml" else "document", text, when),
                ).lastrowid
                db.execute("INSERT INTO fts (rowid, text, path) VALUES (?, ?, ?)", (sid, text, path))


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "s.sqlite", root=tmp_path)
    _fill(s, 400, seed=1)
    return s


def _reference(store: Store, words: list[str], limit: int) -> list[tuple[int, float]]:
    rows = store.db.execute(
        "SELECT rowid, bm25(fts, 1.0, 0.5) AS r FROM fts WHERE fts MATCH ? ORDER BY r, rowid LIMIT ?",
        (fts_query(words), limit),
    ).fetchall()
    return [(sid, -score) for sid, score in rows]


def test_averages_and_lengths_are_fts5s(store: Store):
    rows, total = averages(store.db)
    assert rows == store.db.execute("SELECT COUNT(*) FROM fts").fetchone()[0] > 2000
    index = MemoryBM25.load(store.db)
    assert total == index.lengths.sum() > 0
    assert index.n_rows == rows


def test_memory_bm25_gives_fts5s_scores_and_order(store: Store):
    searcher = Searcher(store, bm25_in_memory=True)
    index = searcher._load_bm25(store.generation)
    rng = random.Random(2)
    for _ in range(80):
        words = list(dict.fromkeys(rng.choices(WORDS, k=rng.randint(1, 4))))
        tokens = [searcher._tokenize(w)[0] for w in words]
        mine = index.top(tokens, 30)
        ref = _reference(store, words, 30)
        assert [sid for sid, _ in mine] == [sid for sid, _ in ref], words
        assert [s for _, s in mine] == [s for _, s in ref]  # the same floating-point numbers


def test_searcher_in_memory_equals_sqlite_with_every_filter(store: Store):
    memory = Searcher(store, bm25_in_memory=True)
    sqlite = Searcher(store, bm25_in_memory=False)
    filters = [
        SearchFilters(),
        SearchFilters(glob="Documents/*"),
        SearchFilters(glob="*/Finance/*.pdf"),
        SearchFilters(glob="M[^o]*"),  # SQLite's negated class: fnmatch would read it otherwise
        SearchFilters(glob="a[[]b]/*"),
        SearchFilters(modality=("email",)),
        SearchFilters(types=(".PDF", "md")),
        SearchFilters(after="2024-06-01"),
        SearchFilters(before="2024-03-15", modality=("document",)),
        SearchFilters(after="2024-02-01", before="2024-11-01", types=("eml",), glob="D*"),
    ]
    rng = random.Random(3)
    checked = 0
    for f in filters:
        for _ in range(8):
            query = " ".join(rng.choices(WORDS, k=3))
            a = memory._fts(query, 40, f, in_memory=True)
            b = sqlite._fts(query, 40, f, in_memory=False)
            assert a == b, (query, f)
            checked += len(a)
    assert checked > 500


def test_a_word_fts5_splits_into_a_phrase_falls_back_to_sqlite(store: Store):
    with store.transaction() as db:
        fid = db.execute(
            "INSERT INTO files (path, modality, type, status, indexed_at) VALUES ('x.md', 'text', 'md', 'ok', 0)"
        ).lastrowid
        sid = db.execute(
            "INSERT INTO segments (file_id, ordinal, modality, text) VALUES (?, 0, 'text', 'send an e_mail w1')",
            (fid,),
        ).lastrowid
        db.execute("INSERT INTO fts (rowid, text, path) VALUES (?, 'send an e_mail w1', 'x.md')", (sid,))
    searcher = Searcher(store, bm25_in_memory=True)
    assert searcher._tokenize("e_mail") == ("e", "mail")
    hits = searcher.search("e_mail", k=3, mode="fts")
    assert hits[0].segment_id == sid


def test_the_cache_follows_the_store_also_when_another_connection_writes(store: Store, tmp_path: Path):
    searcher = Searcher(store, bm25_in_memory=True)
    assert searcher.search("zebra", mode="fts") == []
    other = Store(tmp_path / "s.sqlite", root=tmp_path)  # another connection, as another process would be
    with other.transaction() as db:
        fid = db.execute(
            "INSERT INTO files (path, modality, type, status, indexed_at) VALUES ('z.md', 'text', 'md', 'ok', 0)"
        ).lastrowid
        sid = db.execute(
            "INSERT INTO segments (file_id, ordinal, modality, text) VALUES (?, 0, 'text', 'a zebra')", (fid,)
        ).lastrowid
        db.execute("INSERT INTO fts (rowid, text, path) VALUES (?, 'a zebra', 'z.md')", (sid,))
    assert [h.segment_id for h in searcher.search("zebra", mode="fts")] == [sid]
    other.remove_files(["z.md"])
    assert searcher.search("zebra", mode="fts") == []
    store.remove_files([p for p in store.files() if p.startswith("Documents/")])  # through the same object
    assert all(not h.path.startswith("Documents/") for h in searcher.search("w1 w2 w3", k=50, mode="fts"))


def test_the_first_search_asks_sqlite_and_later_ones_use_memory(store: Store):
    searcher = Searcher(store)
    first = searcher.search("w5 w6", k=5, mode="fts")
    assert searcher._bm25 is None
    second = searcher.search("w5 w6", k=5, mode="fts")
    assert searcher._bm25 is not None
    assert [(h.segment_id, h.score) for h in first] == [(h.segment_id, h.score) for h in second]
    assert np.all(np.diff(searcher._bm25[1].row_ids) > 0)
