"""Search over a store: BM25 (FTS5), exact vector search (numpy), and hybrid: both fused, with the files'
paths as evidence.

Filters (path glob, modality, file type, time range) apply to every mode. The vector matrix is loaded
once and reused until the store changes. Hybrid falls back to BM25 alone when the store has no
vectors (and says so in ``Searcher.mode_used``).

**Query words.** Stop words are dropped (`query_words`); a word that mixes letters and digits also
brings its runs of two or more digits (`expand_words`: "FY2018" finds "2018", "Q2'23" finds "23"),
since files and pages write years and periods apart from their prefixes.

**Hybrid.** Each list (the top ``max(100, 5k)`` of BM25 and of the vectors) is min-max normalised
to [0, 1] and the two are combined, ``fusion_weight`` for BM25 and the rest for the vectors (a
segment missing from a list scores 0 there). Then a **file prior** is added, ``path_weight`` times
how well the query's words name the segment's file: the idf-weighted share (over the store's files)
of the query words found among the words of its path (folders, file name), normalised by the best
file. A message of a conversation (locator unit ``message``) also gains ``context_weight`` times the
fused score of its best neighbour among the candidates (the message before or after it in the same
log): the turns of a conversation answer together, and the reply rarely repeats the question's
words. A segment whose speaker, sender or author the query names by a word of the name gains
``speaker_weight``; one whose time falls in a date the query names (`hippocamp.store.query`: "March
2024", "Q2 2023", "last week") gains ``date_weight``. Reciprocal-rank fusion (`_rrf`, the former
default) lost to its best part on both dev slices (FinanceBench: vectors win; LoCoMo: BM25 wins); the
normalised fusion with the file prior beats both there (bench/RESULTS.md: weights chosen on the
even-numbered questions, reported on the odd).

**Other queries for the same need.** ``search(q, also=[...])`` ranks each extra query the same way
and adds `EXPANSION_WEIGHT` times a segment's best share (score over the list's top score) for any of
them to its share for ``q`` (`hippocamp.agents.expand` makes them with a model). `search_read` turns
the dates and kinds of file the query names into filters, relaxed with a note when nothing passes.
docs/search.md has every weight with how it was chosen.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from hippocamp.schema.segment import Segment
from hippocamp.store.bm25 import COLUMN_WEIGHTS, MemoryBM25
from hippocamp.store.db import Store, to_segment
from hippocamp.store.query import MONTHS, QueryParts, month_numbers, read_query, times_within

__all__ = [
    "CHAT_FUSION_WEIGHT",
    "CONTEXT_WEIGHT",
    "DATE_WEIGHT",
    "EXPANSION_WEIGHT",
    "FILE_SEGMENTS",
    "FUSION_WEIGHT",
    "PATH_WEIGHT",
    "SPEAKER_WEIGHT",
    "FileHit",
    "Hit",
    "Mode",
    "ReadSearch",
    "SearchFilters",
    "Searcher",
    "expand_words",
    "fts_query",
    "path_words",
    "query_words",
]

Mode = Literal["hybrid", "fts", "vector"]
RRF_K = 60
#: hybrid: the share of BM25's normalised score in the fusion (the vectors have the rest)
FUSION_WEIGHT = 0.5
#: hybrid: BM25's share for a message of a conversation (short turns: names and dates carry the match)
CHAT_FUSION_WEIGHT = 0.7
#: hybrid: the weight of the file prior (query words naming the file's path) added to the fused score
PATH_WEIGHT = 0.3
#: hybrid: a message of a conversation also gets this share of its best neighbouring message's score
CONTEXT_WEIGHT = 0.5
#: hybrid: added to a segment whose speaker or sender the query names ("What did Caroline ...")
SPEAKER_WEIGHT = 0.1
#: hybrid: added to a segment whose time falls in a date the query names ("in March 2024", "last week")
DATE_WEIGHT = 0.2
#: ``search(..., also=[...])``: the weight of a segment's best share for another query of the same need
EXPANSION_WEIGHT = 0.3
#: file ranking: a file's score is the sum of the scores of its best this many segments
FILE_SEGMENTS = 5
#: file ranking: how many segments are ranked before they are grouped by file
FILE_DEPTH = 100
#: hybrid: how deep each list is read before fusing
HYBRID_POOL = 100
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


_DIGITS = re.compile(r"\d{2,}")
_LETTER = re.compile(r"[^\W\d_]")


def expand_words(words: list[str]) -> list[str]:
    """The words, then the runs of two or more digits of those that mix letters and digits
    ("fy2018" also gives "2018"), each once."""
    extra = [d for w in words if _LETTER.search(w) for d in _DIGITS.findall(w)]
    return list(dict.fromkeys([*words, *extra]))


#: a month's name (full, three letters, "sept") as the two digits a path writes it with
_MONTHS = {name: f"{number:02d}" for name, number in MONTHS.items()}


def path_words(path: str) -> set[str]:
    """The words of a path as the file prior compares them, lower case: runs of letters, runs of
    digits, and each letter run with the digit run beside it ("Best Buy/2019/BESTBUY_2023Q2_10K.pdf":
    best, buy, 2019, bestbuy, 2023, q, 2, 10, k, pdf, 2023q, q2, 10k)."""
    words: set[str] = set()
    for chunk in re.findall(r"[^\W_]+", path.lower()):
        runs = re.findall(r"[^\W\d_]+|\d+", chunk)
        words.update(runs)
        words.update(a + b for a, b in itertools.pairwise(runs))
    return words


def _prior_words(query: str) -> list[str]:
    """The query's words for the file prior: `expand_words`, and a month's name also as its number
    ("July" finds the "07" of "8K_dated-2022-07-01")."""
    words = expand_words(query_words(query))
    return list(dict.fromkeys([*words, *(_MONTHS[w] for w in words if w in _MONTHS)]))


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
    #: any of these half-open ranges of ISO dates (``(start, end)``), on the same time
    periods: tuple[tuple[str, str], ...] = ()
    #: months of any year (1-12), on the same time
    months: tuple[int, ...] = ()

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
        if self.periods or self.months:
            either = ["(s.time >= ? AND s.time < ?)" for _ in self.periods]
            args.extend(x for p in self.periods for x in p)
            if self.months:
                either.append(
                    "(substr(s.time, 5, 1) = '-' AND CAST(substr(s.time, 6, 2) AS INTEGER)"
                    f" IN ({','.join('?' * len(self.months))}))"
                )
                args.extend(self.months)
            clauses.append(f"({' OR '.join(either)})")
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
class FileHit:
    """A ranked file: its path, its score (the sum of its best segments' scores) and those segments."""

    path: str
    score: float
    hits: list[Hit]


@dataclass
class ReadSearch:
    """`Searcher.search_read`'s answer: the hits, what the query was read as, the filters that were
    used in the end, and notes saying what was relaxed."""

    hits: list[Hit]
    parts: QueryParts
    filters: SearchFilters
    notes: list[str] = field(default_factory=list)


@dataclass
class _Catalog:
    """Every segment of one store generation, by ascending id, with what the filters look at."""

    generation: Any
    ids: np.ndarray
    path_codes: np.ndarray  # index into `paths`
    paths: list[str]
    modality_codes: np.ndarray  # index into `modalities`
    modalities: list[str]
    type_codes: np.ndarray  # index into `types`
    types: list[str]
    times: np.ndarray  # '' when the segment has no time
    ordinals: np.ndarray  # the segment's place in its file
    chat: np.ndarray  # True for a message of a conversation (locator unit "message")
    speaker_codes: np.ndarray  # index into `speakers`; -1 when the segment names none
    speakers: list[str]
    #: word -> speaker codes (`_speaker_index`), built at the first query that needs it
    speaker_index: dict[str, set[int]] | None = None
    #: word -> {path code: idf} (`Searcher._path_index`), built at the first query that needs it
    path_index: dict[str, dict[int, float]] | None = None
    masks: dict[SearchFilters, np.ndarray | None] = field(default_factory=dict)
    _months: np.ndarray | None = None
    _latest: str | None = None

    def month_numbers(self) -> np.ndarray:
        """Each segment's month (1-12; 0 without a time), computed at the first query that needs it."""
        if self._months is None:
            self._months = month_numbers(self.times)
        return self._months

    def latest(self) -> str | None:
        """The latest segment time (ISO), the store's present: the anchor of relative dates."""
        if self._latest is None:
            self._latest = max(self.times.tolist(), default="")
        return self._latest or None


@dataclass
class _Matrix:
    generation: Any
    rows: np.ndarray  # positions in the catalog
    ids: np.ndarray
    vectors: np.ndarray


class Searcher:
    """Searches one store. Keeps what it loaded (the vector matrix, the in-memory BM25 index) until
    the store changes; reuse one searcher for many queries.

    ``bm25_in_memory``: True scores BM25 in memory (`MemoryBM25`, built once per store generation),
    False always asks SQLite, None (the default) asks SQLite for the first query and uses memory from
    the second on, so a one-off search (the command line) does not pay for building the index."""

    def __init__(
        self,
        store: Store,
        embedder: Any | None = None,
        bm25_in_memory: bool | None = None,
        fusion_weight: float = FUSION_WEIGHT,
        path_weight: float = PATH_WEIGHT,
        context_weight: float = CONTEXT_WEIGHT,
        speaker_weight: float = SPEAKER_WEIGHT,
        date_weight: float = DATE_WEIGHT,
        chat_fusion_weight: float = CHAT_FUSION_WEIGHT,
    ):
        if not (0.0 <= fusion_weight <= 1.0 and 0.0 <= chat_fusion_weight <= 1.0):
            raise ValueError(
                "fusion_weight and chat_fusion_weight must be between 0 and 1, "
                f"got {fusion_weight}, {chat_fusion_weight}"
            )
        self.chat_fusion_weight = chat_fusion_weight
        if path_weight < 0.0 or context_weight < 0.0:
            raise ValueError(f"path_weight and context_weight must be 0 or more, got {path_weight}, {context_weight}")
        self.context_weight = context_weight
        self.speaker_weight = max(0.0, speaker_weight)
        self.date_weight = max(0.0, date_weight)
        self.fusion_weight = fusion_weight
        self.path_weight = path_weight
        self.store = store
        self._embedder = embedder
        self._bm25_in_memory = bm25_in_memory
        self._searches = 0
        self._catalog: _Catalog | None = None
        self._matrix: _Matrix | None = None
        self._bm25: tuple[Any, MemoryBM25] | None = None
        self._rows: tuple[Any, int] | None = None
        self._tokens: dict[str, tuple[str, ...]] = {}
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
    def search(
        self,
        query: str,
        k: int = 10,
        filters: SearchFilters | None = None,
        mode: Mode = "hybrid",
        also: Sequence[str] = (),
    ) -> list[Hit]:
        """The ``k`` best segments for ``query``. ``also``: other queries for the same need (a model's
        expansion of a multi-hop question), each ranked the same way; a segment's score is then its
        score for ``query`` plus `EXPANSION_WEIGHT` times its best score for any of them, every
        ranking first divided by its top score."""
        filters = filters or SearchFilters()
        pool = max(HYBRID_POOL if mode == "hybrid" else 50, 5 * k)
        has_vectors = self.store.has_vectors()
        if mode == "vector" and not has_vectors:
            raise ValueError("this store has no vectors: index it with an embedder, or search with mode 'fts'")
        if mode == "hybrid" and not has_vectors:
            mode = "fts"
        self.mode_used = mode
        generation = self.store.generation
        in_memory = self._bm25_in_memory if self._bm25_in_memory is not None else self._searches > 0
        self._searches += 1
        if mode != "fts" and self.embedder() is not None:
            self._load_matrix(generation)  # here, not in the worker thread: one connection, one loader
        ranked, lists = self._rank(query, pool, filters, mode, generation, in_memory)
        others = [q for q in dict.fromkeys(str(a).strip() for a in also) if q and q != query.strip()]
        if others and ranked:
            ranked = _widen(ranked, [self._rank(q, pool, filters, mode, generation, in_memory)[0] for q in others])
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

    def _rank(
        self, query: str, pool: int, filters: SearchFilters, mode: Mode, generation: Any, in_memory: bool
    ) -> tuple[list[tuple[int, float]], dict[str, list[tuple[int, float]]]]:
        """One query's ranking in ``mode`` (`_fuse` for hybrid) and the lists it was made from."""
        lists: dict[str, list[tuple[int, float]]] = {}
        if mode == "hybrid":  # BM25 and the vectors at the same time: SQLite and numpy release the GIL
            vector = _POOL.submit(self._vector, query, pool, filters, generation)
            lists["fts"] = self._fts(query, pool, filters, generation, in_memory)
            lists["vector"] = vector.result()
        elif mode == "fts":
            lists["fts"] = self._fts(query, pool, filters, generation, in_memory)
        else:
            lists["vector"] = self._vector(query, pool, filters, generation)
        ranked = self._fuse(query, lists, generation) if mode == "hybrid" else lists[mode]
        return ranked, lists

    def search_files(
        self, query: str, k: int = 10, filters: SearchFilters | None = None, mode: Mode = "hybrid",
        also: Sequence[str] = (),
    ) -> list[FileHit]:  # fmt: skip
        """The ``k`` files that best answer ``query``: the top `FILE_DEPTH` segments grouped by file, a
        file scored by the sum of its best `FILE_SEGMENTS` segments' scores (a file that answers in
        several places beats one that matches once), each with those segments in rank order."""
        by_file: dict[str, list[Hit]] = {}
        for hit in self.search(query, k=max(FILE_DEPTH, k), filters=filters, mode=mode, also=also):
            by_file.setdefault(hit.path, []).append(hit)
        ranked = [
            FileHit(path, sum(h.score for h in hits[:FILE_SEGMENTS]), hits[:FILE_SEGMENTS])
            for path, hits in by_file.items()
        ]
        ranked.sort(key=lambda f: (-f.score, f.path))
        return ranked[:k]

    def read(self, query: str, now: str | None = None) -> QueryParts:
        """What ``query`` names besides its words (`read_query`): dates, relative ones read against
        ``now`` or else the store's latest time (a profile is a snapshot: its present is its newest
        item, not today), and kinds of file."""
        anchor = now or self._load_catalog(self.store.generation).latest()
        return read_query(query, now=anchor)

    def search_read(
        self, query: str, k: int = 10, filters: SearchFilters | None = None, mode: Mode = "hybrid",
        now: str | None = None, also: Sequence[str] = (),
    ) -> ReadSearch:  # fmt: skip
        """Search with the dates and kinds of file the query names as filters ("photos from last
        March": images, March of last year), beside any given ``filters``. Never an empty page for
        their sake: when nothing passes, the kinds are dropped, then the dates, then both, and a
        note says so. Filters the caller gave are kept as given."""
        base = filters or SearchFilters()
        parts = self.read(query, now)
        catalog = self._load_catalog(self.store.generation)
        kinds: dict[str, Any] = {}
        notes: list[str] = []
        if parts.types and not base.types:
            present = [t for t in parts.types if t in catalog.types]
            if present:
                kinds["types"] = tuple(present)
            else:
                notes.append(f"no {'/'.join(parts.types)} files in this store; file type not used as a filter")
        if parts.modalities and not base.modality:
            present = [m for m in parts.modalities if m in catalog.modalities]
            if present:
                kinds["modality"] = tuple(present)
            else:
                notes.append(f"no {'/'.join(parts.modalities)} files in this store; not used as a filter")
        dates: dict[str, Any] = {}
        if parts.has_dates and not (base.after or base.before or base.periods or base.months):
            dates = {"periods": tuple((p.start, p.end) for p in parts.periods), "months": tuple(sorted(parts.months))}
        shown = {"kinds": ", ".join(parts.kinds_said), "dates": ", ".join(
            [p.said for p in parts.periods] + list(parts.months_said))}  # fmt: skip
        tries = [(kinds | dates, None)]
        if kinds and dates:
            tries += [(dates, "kinds"), (kinds, "dates")]
        if kinds or dates:
            tries.append(({}, "kinds and dates" if kinds and dates else ("kinds" if kinds else "dates")))
        hits: list[Hit] = []
        used = base
        for extra, dropped in tries:
            used = replace(base, **extra)
            hits = self.search(query, k=k, filters=used, mode=mode, also=also)
            if dropped is not None:
                said = "; ".join(shown[w] for w in ("kinds", "dates") if w in dropped and shown[w])
                notes.append(f"nothing matched with the {dropped} the query names ({said}); searched without them")
            if hits:
                break
        return ReadSearch(hits, parts, used, notes)

    # -- the two lists -------------------------------------------------------------------------------
    def _fts(
        self, query: str, limit: int, filters: SearchFilters, generation: Any = None, in_memory: bool = False
    ) -> list[tuple[int, float]]:
        generation = self.store.generation if generation is None else generation
        index = self._load_bm25(generation) if in_memory else None
        words = self._informative(expand_words(query_words(query)), index)
        if not words:
            return []
        if index is not None:
            phrases = [self._tokenize(w) for w in words]
            if all(len(p) == 1 for p in phrases):  # a word FTS5 splits into a phrase is left to SQLite
                catalog = self._load_catalog(generation)
                return index.top([p[0] for p in phrases], limit, _mask(catalog, filters, self.store))
        match = fts_query(words)
        where, args = filters.sql()
        joins = " JOIN segments s ON s.id = fts.rowid JOIN files f ON f.id = s.file_id" if where else ""
        rows = self.store.db.execute(
            f"SELECT fts.rowid, bm25(fts, {COLUMN_WEIGHTS[0]}, {COLUMN_WEIGHTS[1]}) AS rank FROM fts{joins}"
            f" WHERE fts MATCH ?{where} ORDER BY rank, fts.rowid LIMIT ?",
            [match, *args, limit],
        ).fetchall()
        return [(int(r[0]), -float(r[1])) for r in rows]

    def _informative(self, words: list[str], index: MemoryBM25 | None = None) -> list[str]:
        """Words that can change a BM25 ranking. FTS5 clamps the idf of a term found in at least half
        of the rows to 1e-6, so such a term adds nothing to any score, yet scoring every row it matches
        is most of the cost on a large store: drop it (keeping the rarest word if all are common).
        Rankings of rows that match the other words are unchanged."""
        if len(words) < 2:
            return words
        rows = self._row_count()
        if rows < PRUNE_FROM_ROWS:
            return words
        df = {w: self._doc_frequency(w, index) for w in words}
        kept = [w for w in words if 2 * df[w] < rows]
        return kept or [min(words, key=lambda w: df[w])]

    def _row_count(self) -> int:
        generation = self.store.generation
        if self._rows is None or self._rows[0] != generation:
            self._rows = (generation, self.store.db.execute("SELECT COUNT(*) FROM segments").fetchone()[0])
        return self._rows[1]

    def _tokenize(self, word: str) -> tuple[str, ...]:
        """The tokens FTS5 makes of a word (stemmed, folded), in order; remembered."""
        tokens = self._tokens.get(word)
        if tokens is None:
            db = self.store.db
            if not self._tokenizer_ready:
                db.execute(
                    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_tokens USING fts5(x, tokenize = {_TOKENIZE})"
                )
                db.execute(
                    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_vocab"
                    " USING fts5vocab(temp, query_tokens, 'instance')"
                )
                self._tokenizer_ready = True
            db.execute("DELETE FROM temp.query_tokens")  # a temp table: autocommit, no lock on the store
            db.execute("INSERT INTO temp.query_tokens (x) VALUES (?)", (word,))
            tokens = tuple(r[0] for r in db.execute("SELECT term FROM temp.query_vocab ORDER BY offset"))
            if len(self._tokens) > 10_000:
                self._tokens.clear()
            self._tokens[word] = tokens
        return tokens

    def _doc_frequency(self, word: str, index: MemoryBM25 | None = None) -> int:
        """Rows containing the word as FTS5 tokenizes it (stemmed; the most frequent of its tokens)."""
        terms = set(self._tokenize(word))
        if index is not None:
            return max((index.doc_frequency(t) for t in terms), default=0)
        db = self.store.db
        counts = [db.execute("SELECT doc FROM fts_vocab WHERE term = ?", (t,)).fetchone() for t in terms]
        return max((c[0] for c in counts if c), default=0)

    # -- fusion ------------------------------------------------------------------------------------------
    def _fuse(self, query: str, lists: dict[str, list[tuple[int, float]]], generation: Any) -> list[tuple[int, float]]:
        """The hybrid ranking: normalised BM25 and vector scores combined, plus the conversation context,
        the named speaker and the file prior (see the module doc)."""
        shares: dict[str, dict[int, float]] = {}
        for name, items in lists.items():
            if not items:
                continue
            values = [v for _, v in items]
            low, high = min(values), max(values)
            span = high - low
            shares[name] = {sid: (value - low) / span if span > 0 else 1.0 for sid, value in items}
        sids = list(dict.fromkeys(sid for part in shares.values() for sid in part))
        if not sids:
            return []
        catalog = self._load_catalog(generation)
        at = np.searchsorted(catalog.ids, np.asarray(sids, dtype=np.int64))
        codes = catalog.path_codes[at].tolist()
        lexical, semantic = shares.get("fts", {}), shares.get("vector", {})
        scores: dict[int, float] = {}
        for sid, chat in zip(sids, catalog.chat[at].tolist(), strict=True):
            # a conversation's short turns lean on their words (names, dates) more than a page does
            w = self.chat_fusion_weight if chat else self.fusion_weight
            scores[sid] = w * lexical.get(sid, 0.0) + (1.0 - w) * semantic.get(sid, 0.0)
        if self.context_weight > 0 and catalog.chat[at].any():
            # a conversation's turns answer together: a message gains from its best neighbour (the
            # message before or after it in the same log) among the candidates
            ordinals, chat = catalog.ordinals[at].tolist(), catalog.chat[at].tolist()
            fused = {(c, o): scores[sid] for sid, c, o, m in zip(sids, codes, ordinals, chat, strict=True) if m}
            for sid, c, o, m in zip(sids, codes, ordinals, chat, strict=True):
                if m:
                    near = max(fused.get((c, o - 1), 0.0), fused.get((c, o + 1), 0.0))
                    scores[sid] += self.context_weight * near
        if self.speaker_weight > 0 and catalog.speakers:
            if catalog.speaker_index is None:
                catalog.speaker_index = _speaker_index(catalog.speakers)
            named = {code for w in query_words(query) for code in catalog.speaker_index.get(w, ())}
            if named:
                for sid, code in zip(sids, catalog.speaker_codes[at].tolist(), strict=True):
                    if code in named:
                        scores[sid] += self.speaker_weight
        if self.date_weight > 0:
            parts = self.read(query)
            if parts.has_dates:
                times = catalog.times[at]
                months = catalog.month_numbers()[at] if parts.months else None
                for sid, inside in zip(sids, parts.time_mask(times, months).tolist(), strict=True):
                    if inside:
                        scores[sid] += self.date_weight
        if self.path_weight > 0:
            prior = self._file_prior(query, generation)
            for sid, code in zip(sids, codes, strict=True):
                scores[sid] += self.path_weight * prior.get(code, 0.0)
        return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))

    def _file_prior(self, query: str, generation: Any) -> dict[int, float]:
        """Path code -> how well the query's words name that file (see the module doc), in [0, 1]."""
        index = self._path_index(generation)
        found: dict[int, float] = {}
        for word in _prior_words(query):
            for code, idf in index.get(word, {}).items():
                found[code] = found.get(code, 0.0) + idf
        best = max(found.values(), default=0.0)
        return {code: value / best for code, value in found.items()} if best > 0 else {}

    # -- what is loaded once per store generation ----------------------------------------------------
    def _path_index(self, generation: Any) -> dict[str, dict[int, float]]:
        """Word -> {path code: the word's idf over the store's files}, built once per store generation
        (kept on its catalog); words in more than half of the files are left out (from 4 files on)."""
        catalog = self._load_catalog(generation)
        if catalog.path_index is None:
            by_word: dict[str, list[int]] = {}
            for code, path in enumerate(catalog.paths):
                for word in path_words(path):
                    by_word.setdefault(word, []).append(code)
            n = len(catalog.paths)
            # a word in half the files or more ("pdf", "documents") tells files apart too little to be
            # worth its cost on a large store (every such file would be touched by every query naming it)
            catalog.path_index = {
                w: dict.fromkeys(codes, math.log(1.0 + n / len(codes)))
                for w, codes in by_word.items()
                if n < 4 or 2 * len(codes) <= n
            }
        return catalog.path_index

    def _load_catalog(self, generation: Any) -> _Catalog:
        if self._catalog is not None and self._catalog.generation == generation:
            return self._catalog
        rows = self.store.db.execute(
            "SELECT s.id, f.path, s.modality, f.type, COALESCE(s.time, ''), s.ordinal,"
            ' COALESCE(instr(s.locator, \'"unit": "message"\'), 0) > 0,'
            " CASE WHEN json_valid(s.meta) THEN COALESCE(json_extract(s.meta, '$.sender'),"
            " json_extract(s.meta, '$.from'), json_extract(s.meta, '$.author'), '') ELSE '' END"
            " FROM segments s JOIN files f ON f.id = s.file_id ORDER BY s.id"
        ).fetchall()
        paths: dict[str, int] = {}
        speakers: dict[str, int] = {}
        modalities: dict[str, int] = {}
        types: dict[str, int] = {}

        def codes(column: int, names: dict[str, int]) -> np.ndarray:
            return np.fromiter((names.setdefault(r[column], len(names)) for r in rows), dtype=np.int32, count=len(rows))

        self._catalog = _Catalog(
            generation=generation,
            ids=np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
            path_codes=codes(1, paths),
            paths=list(paths),
            modality_codes=codes(2, modalities),
            modalities=list(modalities),
            type_codes=codes(3, types),
            types=list(types),
            times=np.array([r[4] for r in rows], dtype=str),
            ordinals=np.fromiter((r[5] for r in rows), dtype=np.int64, count=len(rows)),
            chat=np.fromiter((bool(r[6]) for r in rows), dtype=bool, count=len(rows)),
            speaker_codes=np.fromiter(
                (speakers.setdefault(str(r[7]), len(speakers)) if r[7] else -1 for r in rows),
                dtype=np.int32,
                count=len(rows),
            ),
            speakers=[],
        )
        self._catalog.speakers = list(speakers)
        return self._catalog

    def _load_bm25(self, generation: Any) -> MemoryBM25:
        if self._bm25 is None or self._bm25[0] != generation:
            catalog = self._load_catalog(generation)
            self._bm25 = (generation, MemoryBM25.load(self.store.db, catalog.ids))
        return self._bm25[1]

    def _load_matrix(self, generation: Any) -> _Matrix:
        if self._matrix is not None and self._matrix.generation == generation:
            return self._matrix
        catalog = self._load_catalog(generation)
        db = self.store.db
        count = db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
        first = db.execute("SELECT vector FROM vectors LIMIT 1").fetchone()
        dim = len(first[0]) // 4 if first else 0
        ids = np.zeros(count, dtype=np.int64)
        vectors = np.zeros((count, dim), dtype=np.float32)
        cursor = db.execute("SELECT segment_id, vector FROM vectors ORDER BY segment_id")
        done = 0
        while (chunk := cursor.fetchmany(4096)) and done < count:  # a chunk at a time: no second copy
            chunk = chunk[: count - done]
            block = np.frombuffer(b"".join(r[1] for r in chunk), dtype=np.float32)
            ids[done : done + len(chunk)] = [r[0] for r in chunk]
            vectors[done : done + len(chunk)] = block.reshape(len(chunk), dim)
            done += len(chunk)
        ids, vectors = ids[:done], vectors[:done]
        positions = np.searchsorted(catalog.ids, ids)
        self._matrix = _Matrix(generation=generation, rows=positions, ids=ids, vectors=vectors)
        return self._matrix

    def _vector(
        self, query: str, limit: int, filters: SearchFilters, generation: Any = None
    ) -> list[tuple[int, float]]:
        embedder = self.embedder()
        if embedder is None:
            return []
        generation = self.store.generation if generation is None else generation
        m = self._load_matrix(generation)
        if len(m.ids) == 0:
            return []
        q = np.asarray(embedder.embed([query], side="query"), dtype=np.float32)[0]
        scores = m.vectors @ q
        mask = _mask(self._load_catalog(generation), filters, self.store)
        if mask is not None:
            mask = mask[m.rows]
            scores = np.where(mask, scores, -np.inf)
            n = min(limit, int(mask.sum()))
        else:
            n = min(limit, len(scores))
        if n == 0:
            return []
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.argsort(-scores[top])]
        return [(int(m.ids[i]), float(scores[i])) for i in top]


_EMAIL = re.compile(r"<[^>]*>|\S+@\S+")


def _speaker_index(speakers: list[str]) -> dict[str, set[int]]:
    """Word -> the codes of the speakers (senders, authors) whose name has it: words of three letters
    or more, not stop words, e-mail addresses left out ("Anna Berg <anna@x.org>": anna, berg)."""
    index: dict[str, set[int]] = {}
    for code, name in enumerate(speakers):
        for token in re.findall(r"[^\W\d_]{3,}", _EMAIL.sub(" ", name.lower())):
            if token not in _STOP:
                index.setdefault(token, set()).add(code)
    return index


def _mask(c: _Catalog, f: SearchFilters, store: Store) -> np.ndarray | None:
    """Which catalog rows pass the filters, with the same meaning as `SearchFilters.sql` (the glob is
    SQLite's GLOB, asked of SQLite); remembered per filter for the catalog's generation."""
    if f in c.masks:
        return c.masks[f]
    mask = None

    def both(a: np.ndarray | None, b: np.ndarray) -> np.ndarray:
        return b if a is None else (a & b)

    def among(codes: np.ndarray, names: list[str], wanted: set[str]) -> np.ndarray:
        return np.isin(codes, [i for i, name in enumerate(names) if name in wanted])

    if f.glob:
        matching = {r[0] for r in store.db.execute("SELECT path FROM files WHERE path GLOB ?", (f.glob,))}
        mask = both(mask, among(c.path_codes, c.paths, matching))
    if f.modality:
        mask = both(mask, among(c.modality_codes, c.modalities, set(f.modality)))
    if f.types:
        mask = both(mask, among(c.type_codes, c.types, {t.lower().lstrip(".") for t in f.types}))
    if f.after:
        mask = both(mask, (c.times != "") & (c.times >= f.after))
    if f.before:
        mask = both(mask, (c.times != "") & (c.times < f.before))
    if f.periods or f.months:
        mask = both(mask, times_within(c.times, f.periods, f.months, c.month_numbers() if f.months else None))
    if len(c.masks) >= 64:
        c.masks.clear()
    c.masks[f] = mask
    return mask


def _widen(ranked: list[tuple[int, float]], others: list[list[tuple[int, float]]]) -> list[tuple[int, float]]:
    """``ranked`` (the query's ranking) widened by the rankings of other queries for the same need:
    each divided by its top score, a segment scored by its share for the query plus
    `EXPANSION_WEIGHT` times its best share for any other query."""

    def shares(items: list[tuple[int, float]]) -> dict[int, float]:
        top = items[0][1] if items and items[0][1] > 0 else 1.0
        return {sid: score / top for sid, score in items}

    scores = shares(ranked)
    best: dict[int, float] = {}
    for items in others:
        for sid, share in shares(items).items():
            best[sid] = max(best.get(sid, 0.0), share)
    for sid, share in best.items():
        scores[sid] = scores.get(sid, 0.0) + EXPANSION_WEIGHT * share
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def _rrf(lists: dict[str, list[tuple[int, float]]]) -> list[tuple[int, float]]:
    """Reciprocal-rank fusion: score = sum over lists of 1 / (60 + rank)."""
    scores: dict[int, float] = {}
    for items in lists.values():
        for rank, (sid, _) in enumerate(items, start=1):
            scores[sid] = scores.get(sid, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
