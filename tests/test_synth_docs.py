"""Document renderers (hippocamp.synth.render.docs): byte-identical output, every key read back by
hippocamp's own readers at the reported locator, locators the validator's measurements accept, and
bad specs refused."""

from __future__ import annotations

import time
import zipfile
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from hippocamp.perceive.run import perceive_file
from hippocamp.schema.locators import CellRange, LineLocator, Locator, parse_locator
from hippocamp.schema.segment import Segment
from hippocamp.synth.render import Line, Page, Placements, Sheet, Slide, Table
from hippocamp.synth.render.docs import normalize_zip, render_docx, render_pdf, render_pptx, render_xlsx
from hippocamp.validate.media import probe
from hippocamp.validate.rules import _check_cells, _check_line, _check_pages, _check_region, _check_slide, _fits_unit

CREATED = datetime(2024, 10, 12, 9, 30)
META: dict[str, Any] = {"title": "Spec", "author": "Mira Okafor", "created": CREATED}

LONG = (
    "Rent is EUR 1,450 a month, due on the first working day of each month and paid into the landlord's "
    "account; a late payment costs EUR 25 – “no exceptions”, says the lease."
)
PDF_PAGES = [
    Page(
        [
            Line("Lease agreement", "title", "title"),
            Line("Payments", None, "heading"),
            Line(LONG, "rent"),
            Line("Deposit: EUR 2,900", "deposit", "bullet"),
            Line("returned within 30 days", "deposit", "bullet"),
            Line("Signed copies only.", "small", "small"),
        ]
    ),
    Page([Line("Keys", "keys-h", "heading"), Line("Two keys and one fob, handed over on 31 August 2024.", "keys")]),
    Page([Line("Appendix: house rules", "appendix")]),
]
PDF_LABELS = [(0, "/r", 1), (1, "/D", 1)]

DOCX_BLOCKS: list[Line | Table] = [
    Line("Lease", "title", "title"),  # paragraph 1
    Line("Between Mira Okafor and Oskar Lindqvist.", "parties"),  # 2
    Line("Payments", "payments", "heading"),  # 3: this key covers the whole heading block 3-5
    Line("Rent is EUR 1,450 a month.", "payments"),  # 4
    Line("Due on the first of the month.", "payments"),  # 5
    Table([["Item", "Amount"], ["Rent", "1450"], ["", ""], ["Deposit", "2900"]], key="costs"),  # Table 1
    Line("", None),  # 6: empty, still counted
    Line("Keys", None, "heading"),  # 7
    Line("Two keys", "keys", "bullet"),  # 8
    Line("and one fob.", "keys", "bullet"),  # 9
    Table([["Room", "State"], ["Kitchen", "good"]]),  # Table 2 (no key)
    Line("Fine print\tapplies.", "fine", "small"),  # 10
    Table([["Meter", "Reading"], ["Gas", "1234"]], key="meters"),  # Table 3
]

SHEETS = [
    Sheet(
        "October",
        [
            ["Category", "Amount (EUR)", "Paid on"],
            ["Rent", 1450, date(2024, 10, 1)],
            ["Groceries", 310.25, datetime(2024, 10, 3, 18, 5)],
            ["Vet", 86, None],
            ["Total", "=SUM(B2:B4)", "=MAX(C2:C3)"],
        ],
        cached={"B5": 1846.25, "C5": datetime(2024, 10, 3, 18, 5)},
        keys={"oct-total": "A5:B5", "oct-amounts": "B2:B4", "oct-all": "A1:C5", "rent-day": "C2"},
        widths={"A": 18, "B:C": 14},
    ),
    Sheet("Sep Budget", [["Category", "Amount (EUR)"], ["Rent", 1450], ["Gym", 39.5]], keys={"sep-gym": "A3:B3"}),
]

SLIDES = [
    Slide(
        "Q3 review",
        [Line("Revenue up 12%", "revenue"), Line("two hires in Rotterdam", "hires", "small")],
        [Line("Mention the churn numbers.", "churn"), Line("Keep it short.")],
        key="q3",
    ),
    Slide("Thanks", key="thanks"),
    Slide("Next steps", [Line("Budget by 1 November", "budget")]),
]

Render = Callable[[Path], Placements]
RENDERERS: dict[str, Render] = {
    "pdf": lambda p: render_pdf(p, PDF_PAGES, labels=PDF_LABELS, page_numbers=True, **META),
    "docx": lambda p: render_docx(p, DOCX_BLOCKS, **META),
    "xlsx": lambda p: render_xlsx(p, SHEETS, **META),
    "pptx": lambda p: render_pptx(p, SLIDES, **META),
}


def squash(text: str) -> str:
    return " ".join(text.split())


def same(a: Locator, b: Locator) -> bool:
    return a.kind == b.kind and a.position() == b.position()


def covers(seg: Segment, loc: Locator) -> bool:
    """Whether a reader segment's (coarser) locator covers ``loc``: paragraph runs and cell blocks."""
    got = seg.locator
    if isinstance(loc, LineLocator) and isinstance(got, LineLocator) and got.unit == loc.unit:
        assert got.line is not None and loc.line is not None
        return got.line <= loc.line and (loc.line_end or loc.line) <= (got.line_end or got.line)
    if isinstance(loc, CellRange) and isinstance(got, CellRange) and got.sheet == loc.sheet:
        c0, r0, c1, r1 = got.bounds()
        k0, s0, k1, s1 = loc.bounds()
        return c0 <= k0 and r0 <= s0 and k1 <= c1 and s1 <= r1
    return got is not None and same(got, loc)


def measured(path: Path, loc: Locator) -> list[tuple[str, str, str | None, str | None]]:
    """What the validator's locator rule finds measuring ``loc`` against the file."""
    mismatch = _fits_unit(loc, path.name)
    if mismatch:
        return [("error", mismatch, None, None)]
    info = probe(path)
    assert info.error is None
    ext = path.suffix.lstrip(".")
    checks: dict[str, Callable[[], list[tuple[str, str, str | None, str | None]]]] = {
        "page": lambda: _check_pages(info, loc, ext),  # type: ignore[arg-type]
        "cells": lambda: _check_cells(info, loc, path.name),  # type: ignore[arg-type]
        "slide": lambda: _check_slide(info, loc),  # type: ignore[arg-type]
        "line": lambda: _check_line(info, loc),  # type: ignore[arg-type]
        "region": lambda: _check_region(info, loc, ext),  # type: ignore[arg-type]
    }
    return checks[loc.kind]()


# -- determinism -----------------------------------------------------------------------------------
@pytest.mark.parametrize("ext", list(RENDERERS))
def test_same_spec_same_bytes_whatever_the_clock(ext: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = tmp_path / f"a.{ext}"
    placed = RENDERERS[ext](first)
    later = time.time() + 3 * 86400 + 17
    monkeypatch.setattr(time, "time", lambda: later)  # zipfile stamps entries with time.time()
    second = tmp_path / f"b.{ext}"
    assert RENDERERS[ext](second) == placed
    assert first.read_bytes() == second.read_bytes()
    if ext != "pdf":
        with zipfile.ZipFile(second) as zf:
            infos = zf.infolist()
        assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
        assert {(i.compress_type, i.external_attr, i.create_system) for i in infos} == {
            (zipfile.ZIP_DEFLATED, 0o644 << 16, 3)
        }


def test_metadata_comes_from_the_spec(tmp_path: Path) -> None:
    import docx
    from pypdf import PdfReader

    render_pdf(tmp_path / "a.pdf", PDF_PAGES[:1], **META)
    info = PdfReader(tmp_path / "a.pdf").metadata
    assert info is not None and info.title == "Spec" and info.author == "Mira Okafor"
    assert info["/CreationDate"] == info["/ModDate"] == "D:20241012093000"
    render_docx(tmp_path / "a.docx", DOCX_BLOCKS, **META)
    props = docx.Document(str(tmp_path / "a.docx")).core_properties
    assert (props.title, props.author, props.revision) == ("Spec", "Mira Okafor", 1)
    assert props.created == props.modified == props.last_printed == CREATED.replace(tzinfo=UTC)


def test_normalize_zip_keeps_order_and_content(tmp_path: Path) -> None:
    path = tmp_path / "x.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name, stamp in [("z.xml", (2020, 5, 6, 7, 8, 10)), ("a/b.txt", (2023, 1, 2, 3, 4, 6))]:
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.external_attr = 0o644 << 16
            zf.writestr(info, name * 50, compress_type=zipfile.ZIP_STORED)
    normalize_zip(path)
    once = path.read_bytes()
    with zipfile.ZipFile(path) as zf:
        assert zf.namelist() == ["z.xml", "a/b.txt"]
        assert [zf.read(n) for n in zf.namelist()] == [b"z.xml" * 50, b"a/b.txt" * 50]
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    normalize_zip(path)
    assert path.read_bytes() == once


# -- read back by hippocamp's readers ----------------------------------------------------------------
@pytest.mark.parametrize("ext", list(RENDERERS))
def test_every_key_is_read_back_at_its_locator(ext: str, tmp_path: Path) -> None:
    rel = f"Docs/spec.{ext}"
    placed = RENDERERS[ext](tmp_path / rel)
    result = perceive_file(tmp_path, rel)
    assert result.status == "ok", (result.reason, result.notes)
    for key, where in placed.items():
        loc = parse_locator(where.locator)
        assert loc.kind not in ("invalid", "unknown"), (key, where.locator)
        text = squash(where.text)
        assert text, key
        exact = [s for s in result.segments if s.locator is not None and same(s.locator, loc)]
        holders = (
            exact if ext in ("pdf", "pptx") or loc.kind == "region" else [s for s in result.segments if covers(s, loc)]
        )
        assert holders, f"{key}: no segment at {where.locator}"
        if loc.kind == "cells":  # a cell range is a block of the reader's rows: each row is in its text
            assert all(any(squash(row) in squash(s.text) for s in holders) for row in where.text.split("\n")), key
        else:
            assert any(text in squash(s.text) for s in holders), f"{key}: {text!r} not in {[s.text for s in holders]}"
        assert measured(tmp_path / rel, loc) == [], key


def test_locators_are_exact(tmp_path: Path) -> None:
    """The locator forms, and keys that fill a reader segment exactly get that segment's locator."""
    placed = RENDERERS["pdf"](tmp_path / "a.pdf")
    assert placed["rent"].locator == {"unit": "page", "position": {"system_page": 1, "printed_page": "i"}}
    assert placed["appendix"].locator == {"unit": "page", "position": {"system_page": 3, "printed_page": "2"}}
    assert placed["deposit"].text == "Deposit: EUR 2,900 returned within 30 days"  # bullets: dots drawn, not typed
    unlabeled = render_pdf(tmp_path / "b.pdf", PDF_PAGES, **META)
    assert unlabeled["keys"].locator == {"unit": "page", "position": {"system_page": 2}}

    placed = RENDERERS["docx"](tmp_path / "a.docx")
    positions = {key: p.locator["position"] for key, p in placed.items()}
    assert positions == {
        "title": "1",
        "parties": "2",
        "payments": "3-5",
        "costs": {"label": "Table 1"},
        "keys": "8-9",
        "fine": "10",
        "meters": {"label": "Table 3"},
    }
    assert placed["costs"].text == "Item | Amount\nRent | 1450\nDeposit | 2900"
    assert placed["fine"].text == "Fine print applies."
    segments = perceive_file(tmp_path, "a.docx").segments
    payments = [
        s for s in segments if s.locator is not None and same(s.locator, parse_locator(placed["payments"].locator))
    ]
    assert [squash(s.text) for s in payments] == [placed["payments"].text]

    import docx

    paragraphs = docx.Document(str(tmp_path / "a.docx")).paragraphs  # the reader's numbering without content controls
    assert [p.text for p in paragraphs[7:9]] == ["Two keys", "and one fob."]

    placed = RENDERERS["xlsx"](tmp_path / "a.xlsx")
    assert placed["oct-total"] == placed["oct-total"].__class__(
        {"unit": "cells", "position": "October!A5:B5"}, "Total\t1846.25"
    )
    assert placed["sep-gym"].locator == {"unit": "cells", "position": "'Sep Budget'!A3:B3"}
    assert placed["rent-day"].text == "2024-10-01"
    assert placed["oct-amounts"].text == "1450\n310.25\n86"
    whole = [s for s in perceive_file(tmp_path, "a.xlsx").segments if s.meta.get("sheet") == "October"]
    assert [s.locator.dump() for s in whole if s.locator] == [placed["oct-all"].locator]
    assert whole[0].text == placed["oct-all"].text

    placed = RENDERERS["pptx"](tmp_path / "a.pptx")
    assert placed["q3"].locator == {"unit": "slide", "position": 1}
    assert placed["q3"].text == "Q3 review Revenue up 12% two hires in Rotterdam"
    assert placed["churn"].locator == placed["q3"].locator
    assert placed["budget"].locator == {"unit": "slide", "position": 3}


def test_the_validator_measures_what_it_should(tmp_path: Path) -> None:
    """The measurement the read-back test relies on does find locators past the end."""
    RENDERERS["pdf"](tmp_path / "a.pdf")
    RENDERERS["xlsx"](tmp_path / "a.xlsx")
    RENDERERS["pptx"](tmp_path / "a.pptx")
    assert measured(tmp_path / "a.pdf", parse_locator({"unit": "page", "position": {"system_page": 4}}))
    assert measured(
        tmp_path / "a.pdf", parse_locator({"unit": "page", "position": {"system_page": 1, "printed_page": "1"}})
    )
    assert measured(tmp_path / "a.xlsx", parse_locator({"unit": "cells", "position": "October!A1:D6"}))
    assert measured(tmp_path / "a.xlsx", parse_locator({"unit": "cells", "position": "Sep!A1"}))
    assert measured(tmp_path / "a.pptx", parse_locator({"unit": "slide", "position": 4}))


# -- bad specs ---------------------------------------------------------------------------------------
def test_pdf_refuses_what_it_cannot_place(tmp_path: Path) -> None:
    out = tmp_path / "bad.pdf"
    full = Page([Line(f"line {i}") for i in range(60)])
    with pytest.raises(ValueError, match="page 2 overflows"):
        render_pdf(out, [PDF_PAGES[0], full], **META)
    wrapped = Page([Line(LONG * 30)])  # one line that wraps past the bottom margin
    with pytest.raises(ValueError, match="page 1 overflows"):
        render_pdf(out, [wrapped], **META)
    with pytest.raises(ValueError, match="spans two locators"):
        render_pdf(out, [Page([Line("a", "k")]), Page([Line("b", "k")])], **META)
    with pytest.raises(ValueError, match="page 1: key 'k' marks lines that are not consecutive"):
        render_pdf(out, [Page([Line("a", "k"), Line("b"), Line("c", "k")])], **META)
    with pytest.raises(ValueError, match="page 1: key 'k' marks a line without text"):
        render_pdf(out, [Page([Line("  ", "k")])], **META)
    with pytest.raises(ValueError, match="page 1: unknown line style 'caption'"):
        render_pdf(out, [Page([Line("a", style="caption")])], **META)
    with pytest.raises(ValueError, match="wider than"):
        render_pdf(out, [Page([Line("x" * 200)])], **META)
    with pytest.raises(ValueError, match="page 1: '東' cannot be drawn"):
        render_pdf(out, [Page([Line("Tokyo 東京")])], **META)
    with pytest.raises(ValueError, match="page labels must start at page index 0"):
        render_pdf(out, PDF_PAGES, labels=[(1, "/D", 1)], **META)
    with pytest.raises(ValueError, match="bad page label range"):
        render_pdf(out, PDF_PAGES, labels=[(0, "/X", 1)], **META)
    assert not out.exists()


def test_office_renderers_refuse_bad_specs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not consecutive"):
        render_docx(tmp_path / "a.docx", [Line("a", "k"), Line("b"), Line("c", "k")], **META)
    with pytest.raises(ValueError, match="not consecutive"):
        render_docx(tmp_path / "a.docx", [Line("a", "k"), Table([["x"]]), Line("c", "k")], **META)
    with pytest.raises(ValueError, match="table and lines"):
        render_docx(tmp_path / "a.docx", [Line("a", "k"), Table([["x"]], key="k")], **META)
    with pytest.raises(ValueError, match="block 2: key 'k' marks a table without text"):
        render_docx(tmp_path / "a.docx", [Line("a"), Table([["", ""]], key="k")], **META)
    with pytest.raises(ValueError, match="no cached value"):
        render_xlsx(tmp_path / "a.xlsx", [Sheet("S", [[1], ["=A1*2"]])], **META)
    with pytest.raises(ValueError, match="not within the sheet"):
        render_xlsx(tmp_path / "a.xlsx", [Sheet("S", [[1, 2]], keys={"k": "A1:C1"})], **META)
    with pytest.raises(ValueError, match="S!B1 holds no values"):
        render_xlsx(tmp_path / "a.xlsx", [Sheet("S", [[1, None, 2]], keys={"k": "B1"})], **META)
    with pytest.raises(ValueError, match="S!A1: cannot write a dict cell"):
        render_xlsx(tmp_path / "a.xlsx", [Sheet("S", [[{}]])], **META)
    with pytest.raises(ValueError, match="spans two locators"):
        render_pptx(tmp_path / "a.pptx", [Slide("a", key="k"), Slide("b", [Line("x", "k")])], **META)
    with pytest.raises(ValueError, match="slide 1: key 'k' marks a whole slide and something else"):
        render_pptx(tmp_path / "a.pptx", [Slide("a", [Line("x", "k")], key="k")], **META)
    with pytest.raises(ValueError, match="slide 1: key 'k' marks lines that are not consecutive"):
        render_pptx(tmp_path / "a.pptx", [Slide("a", [Line("x", "k"), Line("y"), Line("z", "k")])], **META)
    with pytest.raises(ValueError, match="slide 1: key 'k' marks lines that are not consecutive"):
        render_pptx(tmp_path / "a.pptx", [Slide("a", [Line("x", "k")], [Line("z", "k")])], **META)
