"""Stage 4b: recoverability measured by retrieval. A cluster's fragments count as recoverable when each
of its facts' own questions (`cases.ask`, the question T1 and T2 put to an agent), run through a lexical
search over the persona's assembled logs, finds one of the fact's fragments among the first `RECOVERY_K`
items; the lexical verifier (`fragments.lexical_verify`) only asks whether the cues the fragments were
written from appear in them, which the templates always satisfy.

The search is the store's BM25 (`hippocamp.store.search`): the same query words (stop words dropped,
digit runs expanded), an FTS5 table with the store's tokenizer (porter, unicode61, diacritics removed)
and FTS5's ``bm25()``; ties are broken by position in the logs. An item's text is what an agent's search
sees of it: a message's text; an event's title, location and notes. The index lives in memory and is
built per check (about a thousand items a persona: milliseconds), so no embedder or store is needed.

`verdict` folds a retrieval check into the cluster's attempt (one `VerifierAttempt` per written
attempt, so attempt counts stay the number of times the fragments were written). `redraft` is the
template engine's rewrite for a cluster that failed the check: among several template wordings it
keeps the one whose fragments the fact's question finds best in the current logs (what a person
whose messages an agent must search would not control, but a generator may).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hippocamp.schema.pcontext import (
    CalendarEvent,
    CheckResult,
    Cluster,
    Fact,
    Fragment,
    Message,
    Persona,
    VerifierAttempt,
)
from hippocamp.synth.personas.cases import ask
from hippocamp.synth.personas.fragments import LogContext, lexical_verify, template_fragments

__all__ = [
    "DRAFTS",
    "RANK_DEPTH",
    "RECOVERY_K",
    "LogIndex",
    "LogItem",
    "checked",
    "draft_keys",
    "fact_ranks",
    "feedback",
    "fragment_items",
    "log_items",
    "recoverability_check",
    "redraft",
    "support_of",
    "verdict",
]

#: a fact is recovered when one of its fragments is among this many search results for its question
RECOVERY_K = 10
#: ranks are recorded down to this depth (a fragment found deeper, or not at all, has no rank)
RANK_DEPTH = 100
#: template wordings `redraft` compares for a cluster that failed the check
DRAFTS = 8
#: the tokenizer of the store's ``fts`` table (`hippocamp.store.db`)
TOKENIZE = "porter unicode61 remove_diacritics 2"


@dataclass(frozen=True)
class LogItem:
    """One searchable item: a message or an event, with the fragment it belongs to (None for filler)."""

    id: str
    fragment_id: str | None
    text: str


def log_items(messages: Sequence[Message], events: Sequence[CalendarEvent]) -> list[LogItem]:
    """The persona's logs as search sees them: messages, then events, in file order."""
    out = [LogItem(m.id, m.fragment_id, m.text) for m in messages]
    out += [LogItem(e.id, e.fragment_id, _event_text(e.title, e.location, e.notes)) for e in events]
    return out


def fragment_items(fragments: Iterable[Fragment]) -> list[LogItem]:
    """The items a cluster's fragments become in the logs (each message line one item, an event one)."""
    out = []
    for frag in fragments:
        if frag.app == "messenger":
            out += [LogItem(f"{frag.id}#{i}", frag.id, line.text) for i, line in enumerate(frag.lines)]
        else:
            out.append(LogItem(frag.id, frag.id, _event_text(frag.title, frag.location, frag.notes)))
    return out


def _event_text(title: str, location: str, notes: str) -> str:
    return "\n".join(x for x in (title, location, notes) if x)


class LogIndex:
    """A persona's log items in an in-memory FTS5 table, searched as the store searches (BM25).

    Rows can be taken out and put in (`swap`) so that a cluster's other wordings are ranked against
    the same logs without rebuilding the index."""

    def __init__(self, items: Sequence[LogItem]):
        self.db = sqlite3.connect(":memory:")
        self.db.execute(f"CREATE VIRTUAL TABLE fts USING fts5(text, tokenize = '{TOKENIZE}')")
        self.items: dict[int, LogItem] = {}
        self._add(items)
        self._queries: dict[str, str | None] = {}
        self._taken: list[tuple[int, LogItem]] = []

    def _add(self, items: Sequence[LogItem], rows: list[int] | None = None) -> list[int]:
        if rows is None:
            start = max(self.items, default=0) + 1
            rows = list(range(start, start + len(items)))
        self.db.executemany(
            "INSERT INTO fts (rowid, text) VALUES (?, ?)", [(r, i.text) for r, i in zip(rows, items, strict=True)]
        )
        self.items.update(zip(rows, items, strict=True))
        return rows

    def _remove(self, rows: Iterable[int]) -> None:
        rows = list(rows)
        self.db.executemany("DELETE FROM fts WHERE rowid = ?", [(r,) for r in rows])
        for r in rows:
            del self.items[r]

    def close(self) -> None:
        self.db.close()

    def search(self, question: str, depth: int = RANK_DEPTH) -> list[LogItem]:
        """The best ``depth`` items for ``question``, best first (BM25 over any query word, ties by position)."""
        if question not in self._queries:
            from hippocamp.store.search import expand_words, fts_query, query_words  # the store's query words

            self._queries[question] = fts_query(expand_words(query_words(question)))
        match = self._queries[question]
        if match is None:
            return []
        rows = self.db.execute(
            "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts), rowid LIMIT ?", (match, depth)
        ).fetchall()
        return [self.items[r[0]] for r in rows]

    def fragment_rows(self, fragment_ids: set[str]) -> list[int]:
        return [r for r, item in self.items.items() if item.fragment_id in fragment_ids]

    def swap(self, out_rows: list[int], items: Sequence[LogItem]) -> list[int]:
        """Take rows ``out_rows`` out and put ``items`` in (after every other row); the new rows."""
        self._taken = [(r, self.items[r]) for r in out_rows]
        self._remove(out_rows)
        return self._add(items)

    def restore(self, new_rows: list[int]) -> None:
        """Undo the last `swap`: its items out, the rows it took out back in their places."""
        self._remove(new_rows)
        self._add([i for _, i in self._taken], [r for r, _ in self._taken])
        self._taken = []


def fact_ranks(
    index: LogIndex, persona: Persona, facts: Sequence[Fact], support: dict[str, set[str]], depth: int = RANK_DEPTH
) -> dict[str, int | None]:
    """Per fact: the rank (1 = first) of the best of its ``support`` fragments' items in a search for
    the fact's question, or None when none is among the first ``depth``."""
    out: dict[str, int | None] = {}
    for fact in facts:
        mine = support.get(fact.id, set())
        hits = index.search(ask(fact, persona), depth)
        out[fact.id] = next((n for n, item in enumerate(hits, start=1) if item.fragment_id in mine), None)
    return out


def support_of(fragments: Iterable[Fragment]) -> dict[str, set[str]]:
    """fact id -> ids of the fragments that carry it."""
    out: dict[str, set[str]] = {}
    for frag in fragments:
        for fid in frag.fact_ids:
            out.setdefault(fid, set()).add(frag.id)
    return out


def checked(attempt: VerifierAttempt) -> bool:
    """Whether the retrieval check has been run on this attempt."""
    return "retrieval@" in attempt.verifier


def verdict(
    attempt: VerifierAttempt, ranks: dict[str, int | None], k: int = RECOVERY_K, enforce: bool = True
) -> VerifierAttempt:
    """``attempt`` (the lexical / model verdict of one writing) with the retrieval check folded in: a fact
    is recovered only if both found it, and the attempt passes only if every fact was found in the top ``k``
    (with ``enforce`` False, ``--recovery measure``: the ranks are recorded and the verdict stands)."""
    found = {fid: 1.0 if r is not None and r <= k else 0.0 for fid, r in ranks.items()}
    recovered = {fid: min(v, found.get(fid, 0.0)) for fid, v in attempt.recovered.items()}
    return attempt.model_copy(
        update={
            "recovered": recovered,
            "ranks": dict(ranks),
            "passed": attempt.passed and (not enforce or all(v >= 1.0 for v in found.values())),
            "verifier": f"{attempt.verifier}+retrieval@{k}",
        }
    )


def feedback(attempt: VerifierAttempt, facts: Sequence[Fact], persona: Persona, k: int = RECOVERY_K) -> list[str]:
    """What a model rewriting the cluster is told about each fact the search did not find."""
    out = []
    for fact in facts:
        rank = attempt.ranks.get(fact.id)
        if fact.id in attempt.ranks and (rank is None or rank > k):
            where = f"ranked {rank}" if rank is not None else f"not in the first {RANK_DEPTH}"
            out.append(
                f"fact {fact.id} not recoverable: searching the logs for {ask(fact, persona)!r} finds its fragments "
                f"{where}, not in the top {k}; let its fragments share the question's everyday words"
            )
    return out


def _score(ranks: dict[str, int | None], k: int) -> tuple[int, int]:
    """Higher is better: facts found in the top ``k``, then the ranks (not found counts as depth + 1)."""
    found = sum(1 for r in ranks.values() if r is not None and r <= k)
    return found, -sum(RANK_DEPTH + 1 if r is None else r for r in ranks.values())


def draft_keys(attempt: int) -> list[int]:
    """The ``attempt`` arguments of `template_fragments` that `redraft` compares for an attempt: the
    attempt itself (the plain template wording), then further draws seeded apart from every attempt."""
    return [attempt] + [attempt * 1000 + draw for draw in range(1, DRAFTS)]


def redraft(index: LogIndex, ctx: LogContext, cluster: Cluster, attempt: int, k: int = RECOVERY_K) -> list[Fragment]:
    """The template engine's fragments for ``attempt`` of a cluster whose previous fragments the search
    missed: of the `DRAFTS` template wordings of `draft_keys`, the one whose facts the questions find
    best in ``index`` (the current logs, with the cluster's previous fragments taken out) among those
    the lexical verifier passes. Deterministic: the draws are seeded by the cluster and the attempt,
    the first best wins, and a draw that finds every fact ends the search."""
    facts = [ctx.by_id[f] for f in cluster.fact_ids]
    old = index.fragment_rows({f.id for f in cluster.fragments})
    scored: list[tuple[tuple[int, int], int, list[Fragment]]] = []
    for n, key in enumerate(draft_keys(attempt)):
        frags = template_fragments(ctx, cluster.id, cluster.fact_ids, key)
        new_rows = index.swap(old, fragment_items(frags))
        try:
            ranks = fact_ranks(index, ctx.persona, facts, support_of(frags))
        finally:
            index.restore(new_rows)
        scored.append((_score(ranks, k), -n, frags))
        if scored[-1][0][0] == len(facts):
            break
    scored.sort(key=lambda x: (x[0], x[1]), reverse=True)
    for _, _, frags in scored:  # the best the lexical verifier passes (it checks every fact for leaks)
        if lexical_verify(frags, facts, ctx.facts, attempt).passed:
            return frags
    return template_fragments(ctx, cluster.id, cluster.fact_ids, attempt)


def recoverability_check(
    persona: Persona,
    facts: Sequence[Fact],
    clusters: Sequence[Cluster],
    messages: Sequence[Message],
    events: Sequence[CalendarEvent],
    k: int = RECOVERY_K,
) -> tuple[CheckResult, dict[str, int | None]]:
    """The check for ``verification.json``, on the final logs: every verified cluster passed the
    retrieval check at its last attempt; measured: the attempt at which clusters passed, the rejected
    clusters and fragments, and recall at ``k`` of the verified facts in the final logs (which can
    differ a little from each cluster's own check: clusters rewritten later, and the filler topped up
    around them, move other items). Also the per-fact ranks in the final logs."""
    verified = [c for c in clusters if c.outcome == "verified"]
    present = {i.fragment_id for i in [*messages, *events] if i.fragment_id}
    support = {fid: ids & present for fid, ids in support_of(f for c in verified for f in c.fragments).items()}
    by_id = {f.id: f for f in facts}
    asked = [by_id[fid] for c in verified for fid in c.fact_ids if fid in by_id]
    index = LogIndex(log_items(messages, events))
    try:
        ranks = fact_ranks(index, persona, asked, support)
    finally:
        index.close()
    found = sum(1 for r in ranks.values() if r is not None and r <= k)
    unchecked = [c.id for c in verified if not c.attempts or not checked(c.attempts[-1])]
    rejected = [c for c in clusters if c.outcome != "verified"]
    passed_at = {n: sum(1 for c in verified if c.attempts and c.attempts[-1].attempt == n) for n in (1, 2, 3)}
    measured: dict[str, float | int | str | None] = {
        "k": k,
        "clusters": len(clusters),
        **{f"passed_attempt_{n}": v for n, v in passed_at.items()},
        "rejected_clusters": len(rejected),
        "rejected_fragments": sum(len(c.fragments) for c in rejected),
        "facts": len(asked),
        "recovered_at_k": found,
        "recall_at_k": round(found / len(asked), 4) if asked else 0.0,
    }
    problems = [f"cluster {cid} was never checked by retrieval" for cid in unchecked]
    problems += [
        f"cluster {c.id} rejected after {len(c.attempts)} attempts: "
        + "; ".join(
            f"fact {fid} rank {c.attempts[-1].ranks.get(fid)}" for fid in c.fact_ids if fid in c.attempts[-1].ranks
        )
        for c in rejected
    ]
    return CheckResult(name="recoverability", passed=not unchecked, measured=measured, problems=problems), ranks
