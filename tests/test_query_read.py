"""What a query names besides its words: dates (absolute, fiscal, quarters, relative) and kinds of file,
and how the searcher uses them (a boost in hybrid, filters that relax in `search_read`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hippocamp.store import Searcher, SearchFilters, Store
from hippocamp.store.query import read_query
from hippocamp.store.search import DATE_WEIGHT
from test_store import HashEmbedder

NOW = "2024-02-10"  # a Saturday


@pytest.mark.parametrize(
    ("query", "periods", "months"),
    [
        ("What is the FY2018 capital expenditure for 3M?", [("2018-01-01", "2019-01-01")], set()),
        ("receipts from March 2024", [("2024-03-01", "2024-04-01")], set()),
        ("Mar. 2021 statement", [("2021-03-01", "2021-04-01")], set()),
        ("What happened on 14 March 2023?", [("2023-03-14", "2023-03-15")], set()),
        ("on March 14th, 2023", [("2023-03-14", "2023-03-15")], set()),
        ("2023-03-14 and 2023-04", [("2023-03-14", "2023-03-15"), ("2023-04-01", "2023-05-01")], set()),
        ("What did I spend in Q2 2023?", [("2023-04-01", "2023-07-01")], set()),
        ("AMCOR 2023Q2 10-Q", [("2023-04-01", "2023-07-01")], set()),
        ("Q4'23 results", [("2023-10-01", "2024-01-01")], set()),
        ("second quarter of fiscal 2022", [("2022-04-01", "2022-07-01")], set()),
        ("revenue in 2019 and 2020", [("2019-01-01", "2020-01-01"), ("2020-01-01", "2021-01-01")], set()),
        ("photos from last March", [("2023-03-01", "2023-04-01")], set()),  # March 2024 has not come yet
        ("what did I do last month", [("2024-01-01", "2024-02-01")], set()),
        ("last week", [("2024-01-29", "2024-02-05")], set()),  # Monday to Monday
        ("this year", [("2024-01-01", "2025-01-01")], set()),
        ("last quarter", [("2023-10-01", "2024-01-01")], set()),
        ("yesterday", [("2024-02-09", "2024-02-10")], set()),
        ("3 days ago", [("2024-02-07", "2024-02-08")], set()),
        ("two months ago", [("2023-12-01", "2024-01-01")], set()),
        ("Q2 revenue", [], {4, 5, 6}),
        ("the meeting in May", [], {5}),
        ("invoices from December", [], {12}),
        # not dates: a verb, a modal, a form number, an amount
        ("we march on", [], set()),
        ("may I see it", [], set()),
        ("May I see the 10-Q?", [], set()),
        ("it cost 2500 dollars", [], set()),
        ("call 555-2019-4411", [], set()),
    ],
)
def test_dates_are_read(query: str, periods: list[tuple[str, str]], months: set[int]):
    parts = read_query(query, now=NOW)
    assert [(p.start, p.end) for p in parts.periods] == periods
    assert parts.months == months
    assert parts.has_dates == bool(periods or months)


def test_what_was_read_is_shown_with_the_words_that_said_it():
    parts = read_query("the pdf from last March", now=NOW)
    assert parts.types == ("pdf",) and parts.relative and parts.now == NOW
    assert parts.describe() == "2023-03 (last March); pdf (pdf); relative to 2024-02-10"
    assert read_query("voice memos and photos").modalities == ("audio", "image")
    assert read_query("my spreadsheets").types == ("xlsx", "xls", "csv", "ods")
    assert read_query("Q2").describe() == "month Apr, May, Jun of any year (Q2)"
    assert read_query("nothing here").describe() == ""


def test_time_mask_reads_periods_and_months():
    parts = read_query("in Q1 or December 2023", now=NOW)
    times = np.array(["2023-12-31T23:00:00", "2024-01-01", "2022-02-03T10:00", "", "2023-11-30"], dtype=str)
    assert parts.time_mask(times).tolist() == [True, True, True, False, False]  # January is in Q1 of any year


def _dated_store(tmp_path: Path) -> tuple[Store, HashEmbedder]:
    """Receipts, one per month of 2023, each with the same words; a photo and a mail in March."""
    store = Store(tmp_path / "dated.sqlite", root=tmp_path)
    embedder = HashEmbedder()
    text = "Receipt: groceries, oat milk, bread"
    items = [(f"Receipts/2023-{m:02d}.pdf", "document", "pdf", f"2023-{m:02d}-15", text) for m in range(1, 13)]
    items += [("Photos/IMG_0001.jpg", "image", "jpg", "2023-03-02T09:00:00", "receipt photo: oat milk on the table"),
              ("Mail/note.eml", "email", "eml", "2024-01-20", "the receipt for oat milk is attached")]  # fmt: skip
    with store.transaction() as db:
        for path, modality, ftype, when, text in items:
            fid = db.execute("INSERT INTO files (path, modality, type, status, indexed_at) VALUES (?, ?, ?, 'ok', 0)",
                             (path, modality, ftype)).lastrowid  # fmt: skip
            sid = db.execute(
                "INSERT INTO segments (file_id, ordinal, modality, text, time, meta) VALUES (?, 0, ?, ?, ?, ?)",
                (fid, modality, text, when, json.dumps({})),
            ).lastrowid
            db.execute("INSERT INTO fts (rowid, text, path) VALUES (?, ?, ?)", (sid, text, path))
            db.execute("INSERT INTO vectors (segment_id, vector) VALUES (?, ?)",
                       (sid, embedder.embed([text])[0].tobytes()))  # fmt: skip
    return store, embedder


def test_a_named_date_lifts_the_segments_of_that_time(tmp_path: Path):
    store, embedder = _dated_store(tmp_path)
    searcher = Searcher(store, embedder=embedder, path_weight=0.0)
    assert searcher.search("oat milk receipt June 2023", k=1)[0].path == "Receipts/2023-06.pdf"
    assert searcher.search("oat milk receipt from 2023-09-15", k=1)[0].path == "Receipts/2023-09.pdf"
    top = [h.path for h in searcher.search("oat milk receipts in Q4 2023", k=3)]
    assert sorted(top) == ["Receipts/2023-10.pdf", "Receipts/2023-11.pdf", "Receipts/2023-12.pdf"]
    # relative dates are read against the store's latest item (2024-01-20), not the wall clock
    assert searcher.read("last March").periods[0].start == "2023-03-01"
    assert searcher.search("oat milk receipt from last November", k=1)[0].path == "Receipts/2023-11.pdf"
    # the boost is the date weight, nothing else
    off = Searcher(store, embedder=embedder, path_weight=0.0, date_weight=0.0)
    on = {h.segment_id: h.score for h in searcher.search("oat milk receipt June 2023", k=20)}
    june = next(h for h in off.search("oat milk receipt June 2023", k=20) if h.path.endswith("06.pdf"))
    assert on[june.segment_id] == pytest.approx(june.score + DATE_WEIGHT)


def test_search_read_filters_by_what_the_query_names_and_relaxes_when_nothing_is_left(tmp_path: Path):
    store, embedder = _dated_store(tmp_path)
    searcher = Searcher(store, embedder=embedder)
    found = searcher.search_read("oat milk photos from last March", k=5)
    assert [h.path for h in found.hits] == ["Photos/IMG_0001.jpg"] and not found.notes
    assert found.filters.modality == ("image",) and found.filters.periods == (("2023-03-01", "2023-04-01"),)
    # no photo in June: the kind goes, the dates stay, and a note says so
    found = searcher.search_read("oat milk photos from June 2023", k=5)
    assert found.hits[0].path == "Receipts/2023-06.pdf" and found.filters.modality == ()
    assert found.notes == ["nothing matched with the kinds the query names (photos); searched without them"]
    # the kinds the store does not hold are not filters, and that is said
    found = searcher.search_read("oat milk spreadsheet", k=3)
    assert len(found.hits) == 3 and "no xlsx/xls/csv/ods files" in found.notes[0]
    # filters the caller gave are kept as given (a caller's date beats the query's)
    found = searcher.search_read("oat milk in March 2023", k=5, filters=SearchFilters(after="2023-12-01"))
    assert {h.path for h in found.hits} == {"Receipts/2023-12.pdf", "Mail/note.eml"}
    # SQLite's filter and the in-memory mask agree on periods and months
    for f in (SearchFilters(periods=(("2023-03-01", "2023-04-01"),)), SearchFilters(months=(1, 12)),
              SearchFilters(periods=(("2023-06-01", "2023-07-01"),), months=(2,), modality=("document",))):  # fmt: skip
        memory = Searcher(store, bm25_in_memory=True)._fts("oat milk", 50, f, in_memory=True)
        sqlite = Searcher(store, bm25_in_memory=False)._fts("oat milk", 50, f, in_memory=False)
        assert memory == sqlite and memory
