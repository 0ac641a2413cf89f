"""The cheaper hot path of perception and indexing gives exactly what the validated path gave."""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path

import pytest
from pydantic import ValidationError

from conftest import make_pdf
from hippocamp.models.local_models import sha256_of
from hippocamp.perceive import run as perceive_run
from hippocamp.perceive.base import ReadContext
from hippocamp.schema.locators import ItemLocator, PageLocator, parse_locator
from hippocamp.schema.segment import FileInfo, Segment
from hippocamp.store import IndexOptions, Store, index_profile, indexer


def _same(a: Segment, b: Segment) -> None:
    assert a == b
    assert a.__dict__ == b.__dict__ and list(a.__dict__) == list(b.__dict__)
    assert a.__pydantic_fields_set__ == b.__pydantic_fields_set__
    assert a.__pydantic_extra__ == b.__pydantic_extra__ and a.__pydantic_private__ == b.__pydantic_private__
    assert a.model_dump() == b.model_dump() and a.model_dump_json() == b.model_dump_json()
    assert a.model_dump(exclude_unset=True) == b.model_dump(exclude_unset=True)


@pytest.mark.parametrize(
    "locator, within, meta",
    [
        (PageLocator(system_page=3, printed_page="iii"), [], {"pages": 9, "size_pt": [612, 792]}),
        (None, [], {}),
        (PageLocator(system_page=1), [ItemLocator(unit="email", id="m1"), ItemLocator(unit="attachment", id="a.pdf")],
         {"attachment": "a.pdf"}),
    ],
)  # fmt: skip
def test_trusted_segment_is_the_validated_one(locator, within, meta):
    args = ("Docs/a.pdf", "document", "Rent EUR 1,450", locator, within, meta)
    fast = Segment.trusted(*args)
    slow = Segment(path=args[0], modality=args[1], text=args[2], locator=locator, within=within, meta=meta)
    _same(fast, slow)
    fast.ordinal = slow.ordinal = 4  # set later by the dispatcher: counted as set on both
    _same(fast, slow)
    _same(pickle.loads(pickle.dumps(fast)), slow)
    _same(fast.model_copy(deep=True), slow)
    assert Segment.model_validate(fast.model_dump()) == Segment.model_validate(slow.model_dump())


def test_trusted_segment_validates_what_is_not_of_the_fields_types():
    raw = {"unit": "page", "position": {"system_page": 2}}
    seg = Segment.trusted("a.pdf", "document", "x", raw, [], {})  # type: ignore[arg-type]
    assert seg.locator == parse_locator(raw) and isinstance(seg.locator, PageLocator)
    with pytest.raises(ValidationError):
        Segment.trusted("a.pdf", "document", 5, None, [], {})  # type: ignore[arg-type]
    lax = Segment.trusted("a.pdf", "document", b"bytes", None, [], {})  # type: ignore[arg-type]
    assert lax == Segment(path="a.pdf", modality="document", text=b"bytes") and lax.text == "bytes"  # type: ignore[arg-type]
    nested = Segment.trusted("a.pdf", "document", "x", None, [raw], {})  # type: ignore[list-item]
    assert isinstance(nested.within[0], PageLocator)


def test_read_context_segments_and_modality():
    info = FileInfo(size=1, type="pdf")
    ctx = ReadContext(rel_path="Docs/a.pdf", info=info, within=[ItemLocator(unit="email", id="m1")])
    seg = ctx.segment("text", PageLocator(system_page=1), heading=None, pages=2)
    expected = Segment(path="Docs/a.pdf", modality="document", text="text", locator=PageLocator(system_page=1),
                       within=[ItemLocator(unit="email", id="m1")], meta={"pages": 2})  # fmt: skip
    _same(seg, expected)
    assert seg.within is not ctx.within  # a copy per segment
    assert ctx.modality == "document"
    ctx.rel_path = "Notes/b.md"  # the cached modality follows the path
    assert ctx.modality == "text" and ctx.segment("x").modality == "text"


@pytest.mark.parametrize("whole_bytes", [perceive_run.HASH_WHOLE_BYTES, 10])
def test_perceive_file_hash_is_the_file_sha256(tmp_path: Path, monkeypatch, whole_bytes: int):
    monkeypatch.setattr(perceive_run, "HASH_WHOLE_BYTES", whole_bytes)  # small files, then block by block
    pdf = make_pdf(tmp_path / "Docs/a.pdf", ["one page", "two pages"])
    (tmp_path / "note.md").write_text("a note\n\nwith two paragraphs", encoding="utf-8")
    for rel in ("Docs/a.pdf", "note.md"):
        result = perceive_run.perceive_file(tmp_path, rel)
        assert result.status == "ok" and result.sha256 == sha256_of(tmp_path / rel)
    assert perceive_run.perceive_file(tmp_path, "Docs/a.pdf").sha256 == hashlib.sha256(pdf.read_bytes()).hexdigest()


def test_perceive_file_symlinks_and_missing_files(tmp_path: Path):
    root = tmp_path / "root"
    (root / "Docs").mkdir(parents=True)
    (root / "Docs/real.md").write_text("inside", encoding="utf-8")
    (tmp_path / "secret.md").write_text("outside", encoding="utf-8")
    (root / "Docs/inside.md").symlink_to(root / "Docs/real.md")
    (root / "Docs/outside.md").symlink_to(tmp_path / "secret.md")
    (root / "Docs/dangling.md").symlink_to(root / "Docs/nothing.md")
    inside = perceive_run.perceive_file(root, "Docs/inside.md")
    assert inside.status == "ok" and inside.segments[0].text == "inside" and inside.modality == "text"
    assert perceive_run.perceive_file(root, "Docs/outside.md").status == "skipped"
    for rel in ("Docs/dangling.md", "Docs/gone.md"):
        result = perceive_run.perceive_file(root, rel)
        assert result.status == "failed" and result.reason and result.reason.startswith("cannot stat")
    assert perceive_run.perceive_file(root, "Docs/real.md").info == perceive_run.file_info(root / "Docs/real.md")


def test_modality_of_type_matches_modality_of():
    from hippocamp.schema.filetypes import modality_of

    for rel in ("a/b.PDF", "x", ".bashrc", "a.b/c", "n.md", "a.tar.gz", "weird.", "c d.JPEG", "dir.pdf/f", "m.mbox"):
        assert perceive_run._modality_of_type(perceive_run.ext_of(rel)) == (modality_of(rel) or "other")


def test_signatures_per_type_are_the_signatures():
    from hippocamp.perceive.base import PerceiveOptions

    options = PerceiveOptions(ocr=False)
    sign = indexer._Signatures(options)
    for rel in ("a.pdf", "b/c.PDF", "d.md", "e.unknownext", "noext", "f.pdf"):
        for gold in (False, True):
            assert sign(rel, gold) == indexer.signature(rel, options, gold)


def _entries(sizes: list[int]) -> list[indexer.Entry]:
    return [indexer.Entry(f"f{i:03d}", size, 0) for i, size in enumerate(sizes)]


def test_chunks_keep_order_and_bounds(monkeypatch):
    entries = _entries([10] * 100)
    chunks = indexer._chunks(entries, workers=2)
    assert [e for c in chunks for e in c] == entries
    assert max(map(len, chunks)) == indexer.CHUNK_FILES and len(chunks) >= 8
    assert all(len(c) == 1 for c in indexer._chunks(_entries([10] * 6), workers=2))  # few files: one per task
    monkeypatch.setattr(indexer, "CHUNK_BYTES", 25)
    assert [len(c) for c in indexer._chunks(_entries([10] * 100), workers=2)][:3] == [3, 3, 3]


def _profile(root: Path, files: int) -> Path:
    for i in range(files):
        (root / "Notes").mkdir(parents=True, exist_ok=True)
        (root / f"Notes/n{i:02d}.md").write_text(f"note {i}\n\nabout the landlord {i}", encoding="utf-8")
    make_pdf(root / "Docs/lease.pdf", ["Monthly rent EUR 1,450", "Landlord Oskar"])
    return root


def test_chunked_workers_give_the_same_store_as_one_process(tmp_path: Path):
    root = _profile(tmp_path / "p", 30)
    one, two = Store(tmp_path / "one.sqlite", root=root), Store(tmp_path / "two.sqlite", root=root)
    seen: list[tuple[str, int, int]] = []
    index_profile(root, one, IndexOptions(embed=False, workers=1))
    report = index_profile(root, two, IndexOptions(embed=False, workers=2), lambda *a: seen.append(a[:3]))
    assert report.added == 31 and not report.failed
    strip = lambda rows: {p: (r.status, r.segments, r.sha256, r.reason, r.signature) for p, r in rows.items()}  # noqa: E731
    assert strip(one.files()) == strip(two.files())
    for rel in one.files():
        assert [s.model_dump() for s in one.segments_of(rel)] == [s.model_dump() for s in two.segments_of(rel)]
    reads = [done for stage, done, _ in seen if stage == "read"]
    assert reads == list(range(1, 32))  # progress still file by file
