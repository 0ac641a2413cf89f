"""The profile store end to end: bad input, incremental re-index, interruption, search, Gold in and out."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import make_pdf, make_wav
from hippocamp import registry
from hippocamp.cli import main
from hippocamp.models import embedding
from hippocamp.perceive.base import PerceiveOptions
from hippocamp.store import IndexOptions, Searcher, SearchFilters, Store, index_profile
from hippocamp.store.gold import export_gold
from hippocamp.store.search import _prior_words, _rrf, fts_query


@registry.register("embedder", "test-hash")
class HashEmbedder:
    """A deterministic bag-of-words embedder for tests: shared words make vectors close."""

    id = "test-hash@1"
    dim = 256

    def embed(self, texts, side="passage", batch_size=64):  # type: ignore[no-untyped-def]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        return embedding.normalize_rows(out)


@pytest.fixture(autouse=True)
def _fresh_embedders():
    embedding._instances.clear()
    yield
    embedding._instances.clear()


OPTS = IndexOptions(embed=True, embedder="test-hash", workers=1)


def encrypted_pdf(path: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    plain = make_pdf(path.with_suffix(".plain.pdf"), ["secret page"])
    writer = PdfWriter(clone_from=PdfReader(str(plain)))
    writer.encrypt(user_password="pw", owner_password="owner")
    with path.open("wb") as fh:
        writer.write(fh)
    plain.unlink()


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    root = tmp_path / "Profile"
    make_pdf(root / "Documents/Lease (final) & signed.pdf", ["Cover page", "Monthly rent EUR 1,450", "Landlord Oskar"])
    make_pdf(root / "Documents/Receipts/vet bill.pdf", ["Paws & Claws vet: Biscuit vaccination EUR 86"])
    make_pdf(root / "Загрузки/отчёт 2024.pdf", ["Quarterly report: revenue grew 12 percent"])
    deep = root.joinpath(*[f"level{i}" for i in range(25)])
    make_pdf(deep / "deep.pdf", ["A file twenty-five folders down"])
    (root / "Documents/empty.pdf").write_bytes(b"")
    (root / "Documents/corrupt.pdf").write_bytes(b"%PDF-1.7\n this is not a pdf at all")
    encrypted_pdf(root / "Documents/locked.pdf")
    (root / "Misc").mkdir()
    (root / "Misc/data.bin").write_bytes(os.urandom(64))
    make_wav(root / "Audio/memo.wav", 1.0)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.pdf").write_bytes((root / "Documents/Receipts/vet bill.pdf").read_bytes())
    (root / "Misc/link-to-secret.pdf").symlink_to(outside / "secret.pdf")
    (root / "Misc/linked-folder").symlink_to(outside, target_is_directory=True)
    return root


def open_store(tmp_path: Path, root: Path) -> Store:
    return Store(tmp_path / "store.sqlite", root=root)


def test_index_records_every_bad_input_and_finishes(tmp_path: Path, profile: Path):
    store = open_store(tmp_path, profile)
    report = index_profile(profile, store, OPTS)
    files = store.files()
    reasons = dict(report.failed)
    assert reasons["Documents/empty.pdf"] == "empty file (0 bytes)"
    assert reasons["Documents/corrupt.pdf"].startswith("not a readable PDF")
    assert reasons["Documents/locked.pdf"] == "encrypted PDF: needs a password"
    assert reasons["Misc/link-to-secret.pdf"] == "symlink pointing outside the profile (not followed)"
    assert reasons["Misc/linked-folder"] == "symlink to a folder outside the profile (not followed)"
    assert files["Misc/data.bin"].status == "metadata" and files["Misc/data.bin"].modality == "other"
    assert files["Загрузки/отчёт 2024.pdf"].segments == 1
    assert any(p.endswith("level24/deep.pdf") and r.segments == 1 for p, r in files.items())
    assert files["Documents/Lease (final) & signed.pdf"].segments == 3
    assert report.added == len(files) - 1  # the symlinked folder is recorded, not read
    assert report.segments == store.counts()["segments"]
    assert store.counts()["vectors"] == store.counts()["segments"]  # everything embedded
    secret = [h for h in Searcher(store).search("Biscuit vaccination", k=10) if "secret" in h.path]
    assert secret == []  # the symlinked copy outside the profile was never read


def test_size_cap_and_unreadable_files(tmp_path: Path, profile: Path, monkeypatch):
    options = IndexOptions(perceive=PerceiveOptions(max_bytes=1500), embed=False, workers=1)
    store = open_store(tmp_path, profile)
    report = index_profile(profile, store, options)
    reasons = dict(report.failed)
    assert "larger than the cap" in reasons["Documents/Lease (final) & signed.pdf"]
    assert store.files()["Documents/Lease (final) & signed.pdf"].sha256  # metadata kept
    import hippocamp.perceive.run as run

    real = os.access
    monkeypatch.setattr(run.os, "access", lambda p, mode: "vet bill" not in str(p) and real(p, mode))
    in_process = IndexOptions(embed=False, workers=1, isolate=False)  # the patch lives in this process
    report = index_profile(profile, open_store(tmp_path / "b", profile), in_process)
    assert dict(report.failed)["Documents/Receipts/vet bill.pdf"] == "permission denied"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_unreadable_permissions_for_real(tmp_path: Path, profile: Path):
    target = profile / "Documents/Receipts/vet bill.pdf"
    target.chmod(0)
    report = index_profile(profile, open_store(tmp_path, profile), IndexOptions(embed=False, workers=1))
    assert dict(report.failed)["Documents/Receipts/vet bill.pdf"] == "permission denied"


def test_reindex_is_incremental(tmp_path: Path, profile: Path):
    store = open_store(tmp_path, profile)
    first = index_profile(profile, store, OPTS)
    again = index_profile(profile, store, OPTS)
    assert again.added == again.updated == again.removed == 0
    assert again.unchanged == first.scanned - 1  # the symlinked folder is reported each time, not a file
    vet = profile / "Documents/Receipts/vet bill.pdf"
    os.utime(vet, ns=(vet.stat().st_atime_ns, vet.stat().st_mtime_ns + 5_000_000_000))
    touched = index_profile(profile, store, OPTS)
    assert touched.updated == 0 and touched.unchanged == again.unchanged  # same sha256: not read again
    make_pdf(vet, ["Paws & Claws vet: Biscuit dental cleaning EUR 120"])
    (profile / "Audio/memo.wav").unlink()
    changed = index_profile(profile, store, OPTS)
    assert (changed.updated, changed.removed) == (1, 1)
    assert "Audio/memo.wav" not in store.files()
    hits = Searcher(store).search("dental cleaning", k=1, mode="fts")
    assert hits[0].path == "Documents/Receipts/vet bill.pdf"
    assert not Searcher(store).search("vaccination", k=5, mode="fts")  # the old text is gone


def test_an_interrupted_run_leaves_a_consistent_store_and_the_next_continues(tmp_path: Path, profile: Path):
    store = open_store(tmp_path, profile)
    seen = []

    def stop_after_three(stage, done, total, path):  # type: ignore[no-untyped-def]
        if stage == "read" and done == 3:
            raise KeyboardInterrupt
        seen.append(path)

    with pytest.raises(KeyboardInterrupt):
        index_profile(profile, store, IndexOptions(embed=False, workers=1), stop_after_three)
    partial = store.files()
    assert 0 < len(partial) < 10
    for path, row in partial.items():  # every stored file has exactly its segments
        assert len(store.segments_of(path)) == row.segments
    fts_rows = store.db.execute("SELECT COUNT(*) FROM fts").fetchone()[0]
    assert fts_rows == store.counts()["segments"]
    done = index_profile(profile, store, OPTS)
    clean = index_profile(profile, open_store(tmp_path / "clean", profile), OPTS)
    assert done.added + len([p for p in partial if partial[p].status != "skipped"]) >= clean.added - 1
    assert store.counts() == open_store(tmp_path / "clean", profile).counts()


def test_parallel_workers_give_the_same_store(tmp_path: Path, profile: Path):
    one = open_store(tmp_path / "one", profile)
    two = open_store(tmp_path / "two", profile)
    index_profile(profile, one, IndexOptions(embed=False, workers=1))
    index_profile(profile, two, IndexOptions(embed=False, workers=2))
    strip = lambda rows: {p: (r.status, r.segments, r.sha256, r.reason) for p, r in rows.items()}  # noqa: E731
    assert strip(one.files()) == strip(two.files())


def test_search_modes_and_filters(tmp_path: Path, profile: Path):
    store = open_store(tmp_path, profile)
    index_profile(profile, store, OPTS)
    s = Searcher(store)
    fts = s.search("monthly rent", k=3, mode="fts")
    assert fts[0].path == "Documents/Lease (final) & signed.pdf"
    assert fts[0].locator == {"unit": "page", "position": {"system_page": 2}}
    vec = s.search("rent monthly", k=3, mode="vector")
    assert vec[0].path == fts[0].path and vec[0].ranks == {"vector": 1}
    hybrid = s.search("monthly rent landlord", k=5)
    assert s.mode_used == "hybrid" and set(hybrid[0].ranks) == {"fts", "vector"}
    assert s.search("revenue", filters=SearchFilters(glob="Documents/*"), mode="fts") == []
    assert s.search("revenue", filters=SearchFilters(glob="Загрузки/*"))[0].path == "Загрузки/отчёт 2024.pdf"
    assert s.search("rent", filters=SearchFilters(modality=("audio",)), mode="fts") == []
    assert s.search("rent", filters=SearchFilters(types=("pdf",)), mode="vector")
    assert s.search("rent", filters=SearchFilters(after="2999-01-01")) == []
    assert s.search("rent", filters=SearchFilters(before="2999-01-01"), mode="vector")
    assert s.search("the of and") == [] or all(h.path for h in s.search("the of and"))


def test_fts_query_and_rrf():
    assert fts_query("What is the rent?") == '"rent"'
    assert fts_query("the") == '"the"'
    assert fts_query("!!") is None
    assert fts_query('say "hi" OR drop') == '"say" OR "hi" OR "drop"'  # user syntax cannot break the query
    fused = _rrf({"fts": [(1, 9.0), (2, 8.0)], "vector": [(2, 0.9), (3, 0.8)]})
    assert [sid for sid, _ in fused] == [2, 1, 3]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)


def test_store_belongs_to_one_root(tmp_path: Path, profile: Path):
    from hippocamp.store import StoreError

    open_store(tmp_path, profile)
    with pytest.raises(StoreError, match="indexes"):
        Store(tmp_path / "store.sqlite", root=tmp_path)
    with pytest.raises(StoreError, match="no index here"):
        Store(tmp_path / "none.sqlite", create=False)
    (tmp_path / "junk.sqlite").write_text("not sqlite")
    with pytest.raises(StoreError, match="not a hippocamp store"):
        Store(tmp_path / "junk.sqlite")


def test_gold_in_and_out(tmp_path: Path, profile: Path):
    gold = tmp_path / "Gold"
    (gold / "Audio").mkdir(parents=True)
    (gold / "Audio/memo.wav.json").write_text(json.dumps({
        "file_info": {"file_path": "/annotators/box/Profile/Audio/memo.wav", "file_name": "memo.wav"},
        "summary": "A short memo about the dentist.",
        "segments": [{"content": "Dentist on Friday at nine.", "start_time": 0.0, "end_time": 0.9}],
    }))  # fmt: skip
    (gold / "broken.json").write_text("{not json")
    store = open_store(tmp_path, profile)
    report = index_profile(profile, store, IndexOptions(embed=False, workers=1, gold_dir=gold))
    assert report.from_gold == 1
    memo = store.segments_of("Audio/memo.wav")
    assert memo[0].text == "Dentist on Friday at nine."
    assert memo[0].locator.dump() == {"unit": "timestamp", "position": {"start": "00:00:00", "end": "00:00:00.900"}}
    assert memo[1].meta["summary"] is True
    out = tmp_path / "export"
    assert export_gold(store, out) == store.db.execute("SELECT COUNT(DISTINCT file_id) FROM segments").fetchone()[0]
    lease = json.loads((out / "Documents/Lease (final) & signed.pdf.json").read_text())
    assert lease["file_info"]["file_path"] == "Documents/Lease (final) & signed.pdf"
    assert [s["page"] for s in lease["segments"]] == [1, 2, 3]
    assert lease["segments"][1]["content"] == "Monthly rent EUR 1,450"
    again = open_store(tmp_path / "again", profile)
    index_profile(profile, again, IndexOptions(embed=False, workers=1, gold_dir=out))
    assert [s.text for s in again.segments_of("Documents/Lease (final) & signed.pdf")] == [
        s.text for s in store.segments_of("Documents/Lease (final) & signed.pdf")
    ]
    assert again.segments_of("Documents/Lease (final) & signed.pdf")[1].locator.system_page == 2


def test_cli_index_search_export_doctor(tmp_path: Path, profile: Path):
    store = tmp_path / "cli.sqlite"
    runner = CliRunner()
    result = runner.invoke(
        main, ["index", str(profile), "--store", str(store), "--embedder", "test-hash", "--workers", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "encrypted PDF: needs a password" in result.output and "files:" in result.output
    report = json.loads(
        runner.invoke(main, ["index", str(profile), "--store", str(store), "--no-embed", "--json"]).output
    )
    assert report["added"] == 0 and report["counts"]["segments"] > 0
    hits = json.loads(
        runner.invoke(main, ["search", str(profile), "monthly rent", "--store", str(store), "--json"]).output
    )
    assert hits[0]["path"] == "Documents/Lease (final) & signed.pdf"
    assert hits[0]["locator"] == {"unit": "page", "position": {"system_page": 2}}
    text = runner.invoke(main, ["search", str(profile), "monthly rent", "--store", str(store), "-k", "1"]).output
    assert "Lease (final) & signed.pdf" in text and "system_page=2" in text
    # what the query names is read and shown; a kind the store lacks is said and not used
    read = runner.invoke(main, ["search", str(profile), "rent spreadsheet from last March", "--store", str(store),
                                "--now", "2024-02-10", "-k", "1"])  # fmt: skip
    assert read.exit_code == 0, read.output
    shown = " ".join(read.output.split())  # the console wraps long lines
    assert "read as: 2023-03 (last March); xlsx xls csv ods (spreadsheet); relative to 2024-02-10" in shown
    assert "no xlsx/xls/csv/ods files in this store" in shown and "Lease (final) & signed.pdf" in shown
    literal = runner.invoke(main, ["search", str(profile), "rent spreadsheet from last March", "--store", str(store),
                                   "--literal", "-k", "1"])  # fmt: skip
    assert literal.exit_code == 0 and "read as" not in literal.output
    missing = runner.invoke(main, ["search", str(profile), "x", "--store", str(tmp_path / "none.sqlite")])
    assert missing.exit_code == 2 and "no index here" in missing.output
    exported = runner.invoke(main, ["export-gold", str(profile), "--store", str(store), "--out", str(tmp_path / "g")])
    assert exported.exit_code == 0 and "wrote" in exported.output
    doctor = runner.invoke(main, ["doctor"])
    assert doctor.exit_code == 0 and "pdf" in doctor.output


def test_files_are_read_again_when_their_reader_or_options_change(tmp_path: Path, profile: Path):
    from hippocamp.perceive import run as perceive_run
    from hippocamp.schema.segment import Segment

    (profile / "Misc/notes.xyz").write_text("custom format: the boiler was serviced in May")
    store = open_store(tmp_path, profile)
    index_profile(profile, store, IndexOptions(embed=False, workers=1))
    assert store.files()["Misc/notes.xyz"].status == "metadata"

    @registry.register("reader", "test-xyz")
    class XyzReader:
        name = "test-xyz"
        extensions = ("xyz",)
        parts = ()

        def read(self, path, ctx):  # type: ignore[no-untyped-def]
            return [ctx.segment(path.read_text())]

    perceive_run._by_ext = None
    try:
        report = index_profile(profile, store, IndexOptions(embed=False, workers=1))
        assert report.updated == 1  # a reader for .xyz now exists: read again although unchanged
        assert store.segments_of("Misc/notes.xyz")[0].text.startswith("custom format")
        again = index_profile(profile, store, IndexOptions(embed=False, workers=1))
        assert again.updated == 0
        changed = index_profile(
            profile, store, IndexOptions(perceive=PerceiveOptions(ocr=False), embed=False, workers=1)
        )
        assert changed.updated == again.unchanged  # other options: everything is read again
        assert isinstance(store.segments_of("Misc/notes.xyz")[0], Segment)
    finally:
        registry._registry["reader"].pop("test-xyz")
        perceive_run._by_ext = None


def test_common_words_are_left_out_of_bm25_without_changing_the_ranking(tmp_path: Path):
    import random

    from hippocamp.store import search as search_module

    rng = random.Random(4)
    rare = [f"word{i}" for i in range(400)]
    store = Store(tmp_path / "s.sqlite", root=tmp_path)
    with store.transaction() as db:
        fid = db.execute(
            "INSERT INTO files (path, modality, type, status, indexed_at) VALUES ('a.txt', 'text', 'txt', 'ok', 0)"
        ).lastrowid
        for i in range(3000):
            words = rng.choices(rare, k=12) + (["invoice"] if rng.random() < 0.8 else [])  # "invoice": 80% of rows
            text = " ".join(words)
            sid = db.execute(
                "INSERT INTO segments (file_id, ordinal, modality, text) VALUES (?, ?, 'text', ?)", (fid, i, text)
            ).lastrowid
            db.execute("INSERT INTO fts (rowid, text, path) VALUES (?, ?, 'a.txt')", (sid, text))
    searcher = Searcher(store)
    assert searcher._doc_frequency("Invoices") == searcher._doc_frequency("invoice") > 1500  # stemmed like FTS5
    assert searcher._informative(["invoice", "word7", "word9"]) == ["word7", "word9"]
    assert searcher._informative(["invoice"]) == ["invoice"]
    for query in ("invoice word7 word9", "invoice word3", "word10 word11 invoice word12"):
        pruned = searcher._fts(query, 10, SearchFilters())
        full = searcher.store.db.execute(
            "SELECT rowid, bm25(fts, 1.0, 0.5) AS r FROM fts WHERE fts MATCH ? ORDER BY r LIMIT 10",
            (search_module.fts_query(query),),
        ).fetchall()
        assert [sid for sid, _ in pruned] == [sid for sid, _ in full]  # the same top 10, in the same order


def test_interrupted_between_small_batches_keeps_every_committed_file_whole(tmp_path: Path, profile: Path, monkeypatch):
    from hippocamp.store import indexer

    monkeypatch.setattr(indexer, "COMMIT_FILES", 2)  # batches of two: several committed before the stop
    store = open_store(tmp_path, profile)

    def stop(stage, done, total, path):  # type: ignore[no-untyped-def]
        if stage == "read" and done == 7:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        index_profile(profile, store, IndexOptions(embed=False, workers=1), stop)
    reopened = open_store(tmp_path, profile)  # what another process would see
    files = reopened.files()
    assert 6 <= len([p for p, r in files.items() if r.status != "skipped"]) < 10
    for path, row in files.items():
        assert len(reopened.segments_of(path)) == row.segments
    counts = reopened.counts()
    assert reopened.db.execute("SELECT COUNT(*) FROM fts").fetchone()[0] == counts["segments"]
    index_profile(profile, reopened, IndexOptions(embed=False, workers=1))
    clean = open_store(tmp_path / "clean", profile)
    index_profile(profile, clean, IndexOptions(embed=False, workers=1))
    assert reopened.counts() == clean.counts()


def test_one_batch_may_replace_the_same_file_twice(tmp_path: Path, profile: Path):
    from hippocamp.perceive.run import perceive_file

    store = open_store(tmp_path, profile)
    first = perceive_file(profile, "Documents/Lease (final) & signed.pdf", PerceiveOptions())
    make_pdf(profile / "Documents/Lease (final) & signed.pdf", ["Only one page now"])
    second = perceive_file(profile, "Documents/Lease (final) & signed.pdf", PerceiveOptions())
    store.put_files([(first, 1, 1, "s"), (second, 2, 2, "s")])
    assert [s.text for s in store.segments_of("Documents/Lease (final) & signed.pdf")] == ["Only one page now"]
    assert store.db.execute("SELECT COUNT(*) FROM fts").fetchone()[0] == store.counts()["segments"] == 1
    assert Searcher(store).search("landlord", mode="fts") == []


def test_query_words_expand_periods_and_paths_have_words():
    from hippocamp.store.search import expand_words, path_words

    assert expand_words(["fy2018", "capex", "q2", "2019"]) == ["fy2018", "capex", "q2", "2019", "2018"]
    assert expand_words(["10k"]) == ["10k", "10"] and expand_words(["h2o"]) == ["h2o"]  # one digit: no run
    assert path_words("Best Buy/2019/BESTBUY_2019_10K.pdf") == {"best", "buy", "2019", "bestbuy", "10", "k", "10k",
                                                                 "pdf"}  # fmt: skip
    assert {"2023q", "q2", "07"} <= path_words("AMCOR_2023Q2_10Q.pdf") | path_words("8K_dated-2022-07-01.pdf")


def test_hybrid_fuses_normalised_scores_and_the_file_prior(tmp_path: Path):
    root = tmp_path / "Filings"
    make_pdf(root / "Acme/2018/ACME_2018_10K.pdf", ["Capital expenditure was 120 million in the year"])
    make_pdf(root / "Acme/2019/ACME_2019_10K.pdf", ["Capital expenditure was 150 million in the year"])
    make_pdf(root / "Other/2018/OTHER_2018_10K.pdf", ["Capital expenditure was 90 million in the year"])
    store = open_store(tmp_path, root)
    index_profile(root, store, OPTS)
    # "FY2018" reaches the year in the paths; "Acme" the company: the file prior puts that filing first
    hits = Searcher(store).search("What was Acme's FY2018 capital expenditure?", k=3)
    assert hits[0].path == "Acme/2018/ACME_2018_10K.pdf"
    assert Searcher(store).search("FY2019 capex", k=1, mode="fts")[0].path == "Acme/2019/ACME_2019_10K.pdf"
    # a month by name finds its number in a file name; a quarter its letter-digit pair
    assert _prior_words("filed in July, Q2") == ["filed", "july", "q2", "07"]
    # without the prior, the three near-identical pages score alike: the path decided
    plain = Searcher(store, path_weight=0.0).search("What was Acme's FY2018 capital expenditure?", k=3)
    assert plain[0].score - plain[-1].score < hits[0].score - hits[-1].score
    # the fused score: each list min-max normalised, BM25 weighted by fusion_weight
    only_fts = Searcher(store, fusion_weight=1.0, path_weight=0.0)
    assert [h.path for h in only_fts.search("capital expenditure", k=3)] == [
        h.path for h in Searcher(store).search("capital expenditure", k=3, mode="fts")
    ]
    assert only_fts.search("capital expenditure", k=1)[0].score == pytest.approx(1.0)
    with pytest.raises(ValueError, match="fusion_weight"):
        Searcher(store, fusion_weight=1.5)
    # the file ranking: segments grouped by file, a file scored by the sum of its best segments
    searcher = Searcher(store)
    files = searcher.search_files("What was Acme's FY2018 capital expenditure?", k=2)
    segments = searcher.search("What was Acme's FY2018 capital expenditure?", k=100)
    assert files[0].path == "Acme/2018/ACME_2018_10K.pdf" and len(files) == 2
    best = files[0]
    assert best.score == pytest.approx(sum(h.score for h in segments if h.path == best.path))
    assert all(h.path == best.path for h in best.hits)


def _chat_store(tmp_path: Path, logs: dict[str, list[tuple[str, str]]]) -> tuple[Store, HashEmbedder]:
    """A store of conversation logs: path -> [(sender, message)], each message a segment with a message
    locator, its sender in the meta, a BM25 row and a hash vector."""
    store = Store(tmp_path / "chat.sqlite", root=tmp_path)
    embedder = HashEmbedder()
    with store.transaction() as db:
        for path, messages in logs.items():
            fid = db.execute("INSERT INTO files (path, modality, type, status, indexed_at) VALUES (?, 'text', 'txt', "
                             "'ok', 0)", (path,)).lastrowid  # fmt: skip
            vectors = embedder.embed([text for _, text in messages])
            for i, (sender, text) in enumerate(messages):
                locator = json.dumps({"unit": "message", "position": {"id": f"{path}:{i}"}})
                meta = json.dumps({"sender": sender})
                sid = db.execute("INSERT INTO segments (file_id, ordinal, modality, text, locator, meta) VALUES (?, ?, "
                                 "'text', ?, ?, ?)", (fid, i, text, locator, meta)).lastrowid  # fmt: skip
                db.execute("INSERT INTO fts (rowid, text, path) VALUES (?, ?, ?)", (sid, text, path))
                db.execute("INSERT INTO vectors (segment_id, vector) VALUES (?, ?)", (sid, vectors[i].tobytes()))
    return store, embedder


def test_a_message_gains_from_its_neighbours_and_its_named_speaker(tmp_path: Path):
    store, embedder = _chat_store(tmp_path, {
        "chat/session_1.txt": [("Mel", "Are you coming to the picnic on Sunday?"),
                               ("Cara", "Yes, bringing lemonade and the dog"), ("Mel", "Great, see you there")],
        "chat/session_2.txt": [("Mel", "Lemon prices went up again"), ("Cara", "The dog needs a walk"),
                               ("Mel", "Sunday the shop is closed"), ("Cara", "Bring the blue umbrella"),
                               ("Mel", "Coming home late tonight")],
    })  # fmt: skip
    question = "Who is coming to the picnic?"

    def rank(searcher: Searcher, query: str, text: str) -> int:
        return [h.text for h in searcher.search(query, k=8)].index(text) + 1

    reply = "Yes, bringing lemonade and the dog"
    alone = rank(Searcher(store, embedder=embedder, context_weight=0.0, path_weight=0.0), question, reply)
    together = rank(Searcher(store, embedder=embedder, path_weight=0.0), question, reply)
    assert together == 2 < alone  # the reply right after the question that names the picnic
    # a question naming a speaker lifts what that speaker said
    asked = "What does Cara say about the dog?"
    plain = Searcher(store, embedder=embedder, speaker_weight=0.0, context_weight=0.0, path_weight=0.0)
    named = Searcher(store, embedder=embedder, context_weight=0.0, path_weight=0.0)
    assert named.search(asked, k=1)[0].meta["sender"] == "Cara"
    cara = [h for h in named.search(asked, k=8) if h.meta["sender"] == "Cara"]
    assert all(h.score > p.score for h in cara for p in plain.search(asked, k=8) if p.segment_id == h.segment_id)
    # messages fuse with their own BM25 share (chat_fusion_weight), pages with fusion_weight
    bare = {"context_weight": 0.0, "path_weight": 0.0, "speaker_weight": 0.0, "date_weight": 0.0}
    words = Searcher(store, embedder=embedder, fusion_weight=0.0, chat_fusion_weight=1.0, **bare)
    lexical = words.search(asked, k=5, mode="fts")
    low, high = lexical[-1].score, lexical[0].score
    fused = {h.segment_id: h.score for h in words.search(asked, k=8)}
    assert len(lexical) >= 2 and all(
        fused[h.segment_id] == pytest.approx((h.score - low) / (high - low)) for h in lexical
    )
    with pytest.raises(ValueError, match="chat_fusion_weight"):
        Searcher(store, chat_fusion_weight=1.2)


def test_other_queries_for_the_same_need_widen_the_ranking(tmp_path: Path):
    from hippocamp.store.search import EXPANSION_WEIGHT

    store, embedder = _chat_store(tmp_path, {
        "chat/s1.txt": [("Mel", "We went camping by the lake with the kids"), ("Cara", "The weather was awful"),
                        ("Mel", "Pottery class tonight, the kids made bowls"), ("Cara", "I read a book on family law"),
                        ("Mel", "What family plans do you have?"), ("Cara", "Family dinner on Sunday"),
                        ("Mel", "Her family has done a lot"), ("Mel", "Activities with family are the best")],
    })  # fmt: skip
    searcher = Searcher(store, embedder=embedder, context_weight=0.0, path_weight=0.0)
    question = "What activities has Mel done with her family?"
    also = ["camping lake kids", "pottery class kids"]
    alone = [h.text for h in searcher.search(question, k=6)]
    widened = searcher.search(question, k=6, also=also)
    for answer in ("We went camping by the lake with the kids", "Pottery class tonight, the kids made bowls"):
        assert [h.text for h in widened].index(answer) < (alone.index(answer) if answer in alone else 6)
    # the score: the question's share of its top score plus the weight times the best expansion share
    top = {h.segment_id: h.score for h in searcher.search(question, k=50)}
    best = max(top.values())
    per = [{h.segment_id: h.score for h in searcher.search(q, k=50)} for q in also]
    for h in widened:
        expected = top.get(h.segment_id, 0.0) / best + EXPANSION_WEIGHT * max(
            p.get(h.segment_id, 0.0) / max(p.values()) for p in per
        )
        assert h.score == pytest.approx(expected)
    # the question itself, blanks and repeats among the expansions change nothing
    assert [h.segment_id for h in searcher.search(question, k=6, also=[question, " ", ""])] == [
        h.segment_id for h in searcher.search(question, k=6)
    ]
    files = searcher.search_files(question, k=1, also=also)
    assert files[0].path == "chat/s1.txt"
