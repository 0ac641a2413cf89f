"""Office readers end to end through `perceive_file`, on real files built in tmp_path: DOCX
(python-docx), XLSX (XlsxWriter for cached formula values, openpyxl without), XLS (a fixture),
CSV/TSV, PPTX (python-pptx); and the bad inputs (truncated, renamed, password-protected files)."""

from __future__ import annotations

import base64
import zipfile
import zlib
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

from hippocamp.perceive import FileResult, perceive_file, reader_for
from hippocamp.perceive.office import MAX_ROWS, column_letter, sniff_delimiter
from hippocamp.schema.locators import CellRange, LineLocator, RegionLocator, SlideLocator, parse_locator

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def perceive(root: Path, rel: str) -> FileResult:
    return perceive_file(root, rel)


def positions(result: FileResult) -> list[object]:
    return [seg.locator.dump() if seg.locator else None for seg in result.segments]


def test_office_extensions_have_readers() -> None:
    for ext, name in [("docx", "docx"), ("XLSX", "xlsx"), ("xlsm", "xlsx"), ("xls", "xls"), ("csv", "csv")]:
        reader = reader_for(ext)
        assert reader is not None and reader.name == name, ext
    assert reader_for("tsv").name == "csv" and reader_for("pptx").name == "pptx"  # type: ignore[union-attr]


# -- DOCX ------------------------------------------------------------------------------------------
def make_docx(path: Path) -> Path:
    import docx

    d = docx.Document()
    d.add_heading("Lease", 0)  # paragraph 1 (Title)
    d.add_paragraph("Between Amara Okafor and Oskar Lindqvist.")  # 2
    d.add_heading("Payments", 1)  # 3
    d.add_paragraph("Rent is EUR 1,450 a month.")  # 4
    d.add_paragraph("")  # 5 (empty, still counted)
    d.add_paragraph("Deposit: EUR 2,900.")  # 6
    table = d.add_table(rows=3, cols=3)
    for r, row in enumerate([("Item", "Due", "Amount"), ("Rent", "1st", "1450"), ("Deposit", "now", "2900")]):
        for c, text in enumerate(row):
            table.cell(r, c).text = text
    table.cell(2, 1).merge(table.cell(2, 2))  # a merged cell is read once
    d.add_heading("Keys", 2)  # 7
    d.add_paragraph("Two keys, one fob.")  # 8
    d.add_page_break()  # 9: a paragraph holding a page break
    d.add_paragraph("Signed in Malmö.")  # 10
    d.sections[0].header.paragraphs[0].text = "ACME Lettings"
    d.sections[0].footer.paragraphs[0].text = "Page footer"
    path.parent.mkdir(parents=True, exist_ok=True)
    d.save(path)
    return path


def test_docx_paragraphs_headings_tables_and_parts(tmp_path: Path) -> None:
    make_docx(tmp_path / "Docs/lease.docx")
    result = perceive(tmp_path, "Docs/lease.docx")
    assert result.status == "ok" and result.reader == "docx"
    assert [s.text for s in result.segments] == [
        "Lease\nBetween Amara Okafor and Oskar Lindqvist.",
        "Payments\nRent is EUR 1,450 a month.\nDeposit: EUR 2,900.",
        "Item | Due | Amount\nRent | 1st | 1450\nDeposit | now 2900",  # merged: both paragraphs, once
        "Keys\nTwo keys, one fob.\nSigned in Malmö.",
        "ACME Lettings",
        "Page footer",
    ]
    assert positions(result) == [
        {"unit": "paragraph", "position": {"line": 1, "line_end": 2}},
        {"unit": "paragraph", "position": {"line": 3, "line_end": 6}},
        {"unit": "table", "position": {"label": "Table 1"}},
        {"unit": "paragraph", "position": {"line": 7, "line_end": 10}},
        {"unit": "part", "position": {"id": "header"}},
        {"unit": "part", "position": {"id": "footer"}},
    ]
    assert [s.meta for s in result.segments] == [
        {"heading": "Lease", "page": 1},
        {"heading": "Payments", "headings": ["Lease", "Payments"], "page": 1},
        {"table": 1, "row": 1, "row_end": 3, "heading": "Payments", "headings": ["Lease", "Payments"], "page": 1},
        {"heading": "Keys", "headings": ["Lease", "Payments", "Keys"], "page": 1, "page_end": 2},
        {"part": "header"},
        {"part": "footer"},
    ]
    assert all(s.modality == "document" for s in result.segments)
    assert isinstance(parse_locator(result.segments[0].locator.dump()), LineLocator)
    assert isinstance(parse_locator(result.segments[2].locator.dump()), RegionLocator)
    # paragraph N is python-docx's document.paragraphs[N - 1]
    import docx

    paragraphs = docx.Document(str(tmp_path / "Docs/lease.docx")).paragraphs
    assert paragraphs[9].text == "Signed in Malmö." and paragraphs[6].text == "Keys"


def test_docx_long_sections_are_split_and_keep_their_heading(tmp_path: Path) -> None:
    import docx

    d = docx.Document()
    d.add_heading("Diary", 1)
    sentence = "Today I walked along the river and counted the boats. " * 8  # 440 characters
    for _ in range(5):
        d.add_paragraph(sentence.strip())
    d.add_paragraph("x" * 2500)  # one paragraph longer than a segment
    d.save(tmp_path / "diary.docx")
    result = perceive(tmp_path, "diary.docx")
    assert all(len(s.text) <= 1000 for s in result.segments)
    assert positions(result)[:3] == [
        {"unit": "paragraph", "position": {"line": 1, "line_end": 3}},
        {"unit": "paragraph", "position": {"line": 4, "line_end": 5}},
        {"unit": "paragraph", "position": {"line": 6}},
    ]
    assert positions(result)[3:] == [{"unit": "paragraph", "position": {"line": 7}}] * 3
    assert "".join(s.text for s in result.segments[3:]) == "x" * 2500
    assert {s.meta["heading"] for s in result.segments} == {"Diary"}
    assert all("page" not in s.meta for s in result.segments)  # no page breaks recorded: no page guess


def test_docx_tracked_changes_and_text_boxes(tmp_path: Path) -> None:
    import docx
    from docx.oxml import parse_xml

    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    d = docx.Document()
    p = d.add_paragraph("Meet at ")
    p._p.append(parse_xml(f'<w:ins {w} w:id="1" w:author="A"><w:r><w:t>noon</w:t></w:r></w:ins>'))
    p._p.append(parse_xml(f'<w:del {w} w:id="2" w:author="A"><w:r><w:delText>nine</w:delText></w:r></w:del>'))
    p._p.append(
        parse_xml(
            f'<w:r {w}><w:pict><v:shape xmlns:v="urn:schemas-microsoft-com:vml"><v:textbox>'
            "<w:txbxContent><w:p><w:r><w:t>Boxed note</w:t></w:r></w:p></w:txbxContent>"
            "</v:textbox></v:shape></w:pict></w:r>"
        )
    )
    d.save(tmp_path / "changes.docx")
    result = perceive(tmp_path, "changes.docx")
    assert [s.text for s in result.segments] == ["Meet at noon\nBoxed note"]
    assert positions(result) == [{"unit": "paragraph", "position": {"line": 1}}]


# -- XLSX ------------------------------------------------------------------------------------------
def make_budget(path: Path) -> Path:
    """A workbook whose formulas carry cached values (XlsxWriter writes them, openpyxl cannot)."""
    import xlsxwriter

    path.parent.mkdir(parents=True, exist_ok=True)
    wb = xlsxwriter.Workbook(str(path))
    ws = wb.add_worksheet("October")
    ws.write_row(0, 0, ["Category", "Amount", "Paid"])
    ws.write_row(1, 0, ["Groceries", 310.25, True])
    ws.write_row(2, 0, ["Rent", 1450, False])
    ws.write_datetime(3, 2, datetime(2024, 10, 31), wb.add_format({"num_format": "yyyy-mm-dd"}))
    ws.write(3, 0, "Total")
    ws.write_formula("B4", "=SUM(B2:B3)", None, 1760.25)
    ws.write(4, 0, "multi\nline\tcell")
    wb.add_worksheet("Empty")
    wb.close()
    return path


def test_xlsx_rows_with_cached_formula_values(tmp_path: Path) -> None:
    make_budget(tmp_path / "Finance/budget.xlsx")
    result = perceive(tmp_path, "Finance/budget.xlsx")
    assert result.status == "ok" and result.reader == "xlsx" and result.notes == []
    assert [s.text for s in result.segments] == [
        "Category\tAmount\tPaid\nGroceries\t310.25\tTRUE\nRent\t1450\tFALSE\n"
        "Total\t1760.25\t2024-10-31\nmulti line cell"
    ]
    assert positions(result) == [{"unit": "cells", "position": "October!A1:C5"}]
    assert result.segments[0].meta == {"sheet": "October", "formulas": {"B4": "=SUM(B2:B3)"}}
    loc = parse_locator(result.segments[0].locator.dump())
    assert isinstance(loc, CellRange) and loc.sheet == "October" and loc.bounds() == (1, 1, 3, 5)


def test_xlsx_formula_without_cached_value_keeps_formula_text(tmp_path: Path) -> None:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "Q1 & Q2 (draft)"
    ws.append(["x", "double"])
    ws.append([21, "=A2*2"])
    wb.save(tmp_path / "draft.xlsx")
    result = perceive(tmp_path, "draft.xlsx")
    assert result.status == "partial"
    assert result.notes == ["1 formula cell(s) have no cached value (never calculated): formula text kept"]
    assert result.segments[0].text == "x\tdouble\n21\t=A2*2"
    assert positions(result) == [{"unit": "cells", "position": "'Q1 & Q2 (draft)'!A1:B2"}]
    assert result.segments[0].meta == {"sheet": "Q1 & Q2 (draft)", "formulas": {"B2": "=A2*2"}}


def test_xlsx_blocks_of_rows_repeat_the_header_and_skip_empty_sheets(tmp_path: Path) -> None:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "Log"
    ws["C3"], ws["D3"], ws["E3"] = "Day", "Note", "Done"
    for i in range(65):
        ws.cell(row=4 + i, column=3, value=date(2024, 1, 1) + timedelta(days=i))
        ws.cell(row=4 + i, column=4, value=f"note {i}")
        ws.cell(row=4 + i, column=5, value=i % 2 == 0)
    wb.create_sheet("Empty")
    hidden = wb.create_sheet("Secret")
    hidden["B2"] = "pin 1234"
    hidden.sheet_state = "hidden"
    wb.save(tmp_path / "log.xlsx")
    result = perceive(tmp_path, "log.xlsx")
    assert result.status == "ok"
    assert positions(result) == [
        {"unit": "cells", "position": "Log!C3:E32"},
        {"unit": "cells", "position": "Log!C33:E62"},
        {"unit": "cells", "position": "Log!C63:E68"},
        {"unit": "cells", "position": "Secret!B2"},
    ]
    first, second, third, secret = result.segments
    assert first.text.splitlines()[:2] == ["Day\tNote\tDone", "2024-01-01\tnote 0\tTRUE"]
    assert len(first.text.splitlines()) == MAX_ROWS
    assert second.text.splitlines()[:2] == ["Day\tNote\tDone", "2024-01-30\tnote 29\tFALSE"]
    assert third.text.splitlines()[-1] == "2024-03-05\tnote 64\tTRUE"
    assert first.meta == {"sheet": "Log"}
    assert second.meta == third.meta == {"sheet": "Log", "header_row": 3}
    assert secret.text == "pin 1234" and secret.meta == {"sheet": "Secret", "hidden": True}


def test_xlsx_with_only_empty_sheets_has_no_segments(tmp_path: Path) -> None:
    from openpyxl import Workbook

    wb = Workbook()
    wb.create_sheet("Also empty")
    wb.save(tmp_path / "blank.xlsx")
    result = perceive(tmp_path, "blank.xlsx")
    assert result.status == "ok" and result.segments == []


def test_non_ascii_names_with_spaces_ampersands_and_parentheses(tmp_path: Path) -> None:
    rel = "Finanzen & Steuern/Miete (2024) – Übersicht.xlsx"
    make_budget(tmp_path / rel)
    result = perceive(tmp_path, rel)
    assert result.status == "ok" and result.segments[0].path == rel
    assert result.segments[0].where() == f"{rel} › cells October!A1:C5"
    doc_rel = "Briefe/Zoë & Amara (Entwurf) #1.docx"
    make_docx(tmp_path / doc_rel)
    assert perceive(tmp_path, doc_rel).status == "ok"


# -- XLS -------------------------------------------------------------------------------------------
# A real BIFF8 workbook made offline with xlwt 1.3.0 (zlib-compressed, base64):
#   Trips: Date | Place | Cost; 2024-10-12 | Malmö | 412.5; 2024-11-02 | Oslo | 99; (row 5) B5 = TRUE
#   Empty: nothing; "Notes & more" (hidden): A1 = "hidden note"
XLS_FIXTURE = (
    "eNrtWE1IlEEYfmb8vv0xdVfTQANZhLYyPUSXIHT7WfO0ZhH0Q1Cr+0Hiuiu7e9FDabqn6Ac6FV0EO3SxuvRDHYouHgKjDkEQaB07"
    "BRUd1K933u9bXW0NF1RQvmeZd2bemWfmnZl3fvZ7P1U5PfakbgbL0IoSzJteuPJ0goI3l/GDyk1TJXOxh4LpYFPB66GFdOl4Wf7O"
    "rdZQrfcMJB5rb0gCXylcQD86kgkjsIE4yjZEhbKhRbjI9yR55H2SFahly6pYdrPczvIR137F8jBrbrBsobrT4jymQh2NB21PPisb"
    "uKyCpMAz5nxmzX7UYFJ58tXbwqqr40iqJxrfKgX1WhnGQavdbiSMlMr78AClwDlCcyTSHA5Po5o8YRy/zADwM7flXwcc/cbqBUj/"
    "Z6nevYLeQ4tYSO8toL8jNWAI5iWhvD+LcgxrqkTH6VRPf1opbrksRVtff2YgS+28dSsfKqOTIGOkA8FAXzJlzOIQnxgqUAPhaMbQ"
    "gc54tNug7LFkOkPZSDTe95uyJ9Lx5Dbgck8sZiQCCWqmVF0ofAD5lxxA5bwpy0jG4ON0JW9NPw1y9uGPD5GuztBF1gzxpWNdTbvU"
    "oGBiWDGIXAFrBAolFBqZsY/lNW51J6frWFZTTYqDnTV24vgI1xnl0iD1c4DxMbQ7L72H0tnvJ5/XZ7+F9lJ6on1msHriU2gMDTTx"
    "MeKr3wiaRJO4d1fhRSgXC/sI+8Ky9p/jzCP9tu2mff/6MKf2KaGSpZVTsyMWctKeK8UWy9hXZCnrqhCclFxfMFvNjlWm2NdHJbNl"
    "AbZl3aDNtlZGs9mS2TeF1bfGtiyydekhnWVrq6zCU9UUHdOLWDtvwIresIjN5g08Z1i/OVt5B4kFuVl3kCi4g/T/zqoDBw4cOHCw"
    "hSH4mWY9kDX7uaweEG77u84chXnnM8mWxSkk6Zeh/4dtSFCcwkBR/rMDusi1JVbJyX0vVDhDvafQiy62o7do/6UHoMgfz6qJ/rXb"
    "QsX2P1+Mnevc/18PfEU+"
)


def xls_bytes() -> bytes:
    return zlib.decompress(base64.b64decode("".join(XLS_FIXTURE)))


def test_xls_cached_values(tmp_path: Path) -> None:
    (tmp_path / "trips.xls").write_bytes(xls_bytes())
    result = perceive(tmp_path, "trips.xls")
    assert result.status == "ok" and result.reader == "xls"
    assert [s.text for s in result.segments] == [
        "Date\tPlace\tCost\n2024-10-12\tMalmö\t412.5\n2024-11-02\tOslo\t99\n\tTRUE",
        "hidden note",
    ]
    assert positions(result) == [
        {"unit": "cells", "position": "Trips!A1:C5"},
        {"unit": "cells", "position": "'Notes & more'!A1"},
    ]
    assert [s.meta for s in result.segments] == [{"sheet": "Trips"}, {"sheet": "Notes & more", "hidden": True}]


def test_xls_that_is_a_text_export_or_a_renamed_xlsx(tmp_path: Path) -> None:
    (tmp_path / "bank.xls").write_text("Date\tAmount\n2024-10-01\t-45.10\n", encoding="utf-8")
    text = perceive(tmp_path, "bank.xls")
    assert text.status == "partial" and text.notes == ["a text table under an .xls name: read as CSV/TSV"]
    assert positions(text) == [{"unit": "cells", "position": "A1:B2"}]
    assert text.segments[0].text == "Date\tAmount\n2024-10-01\t-45.10"
    make_budget(tmp_path / "renamed.xls")
    renamed = perceive(tmp_path, "renamed.xls")
    assert renamed.notes == ["an .xlsx workbook under an .xls name: read as XLSX"]
    assert positions(renamed) == [{"unit": "cells", "position": "October!A1:C5"}]


def test_corrupt_and_encrypted_xls(tmp_path: Path) -> None:
    (tmp_path / "cut.xls").write_bytes(xls_bytes()[:1500])
    cut = perceive(tmp_path, "cut.xls")
    assert cut.status == "failed" and cut.reason.startswith("not a valid XLS file: ")
    (tmp_path / "locked.xls").write_bytes(OLE_MAGIC + bytes(600) + "EncryptedPackage".encode("utf-16-le"))
    locked = perceive(tmp_path, "locked.xls")
    assert (locked.status, locked.reason) == ("failed", "password-protected workbook")


# -- CSV -------------------------------------------------------------------------------------------
def test_csv_semicolons_in_cp1252(tmp_path: Path) -> None:
    (tmp_path / "Ausgaben (Zoë).csv").write_bytes("Name;Betrag;Notiz\nZoë;12,50;Café\nRené;3;\n".encode("cp1252"))
    result = perceive(tmp_path, "Ausgaben (Zoë).csv")
    assert result.status == "ok" and result.reader == "csv"
    assert result.segments[0].text == "Name\tBetrag\tNotiz\nZoë\t12,50\tCafé\nRené\t3"
    assert positions(result) == [{"unit": "cells", "position": "A1:C3"}]
    assert result.segments[0].meta == {"delimiter": ";", "encoding": "cp1252"}
    assert result.segments[0].modality == "text"


def test_csv_rows_are_records_and_blocks_repeat_the_header(tmp_path: Path) -> None:
    lines = ["id,comment", '1,"two\nlines"'] + [f"{i},c{i}" for i in range(2, 40)]
    (tmp_path / "comments.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = perceive(tmp_path, "comments.csv")
    assert positions(result) == [
        {"unit": "cells", "position": "A1:B30"},
        {"unit": "cells", "position": "A31:B40"},
    ]
    assert result.segments[0].text.splitlines()[:2] == ["id\tcomment", "1\ttwo lines"]
    assert result.segments[1].text.splitlines()[:2] == ["id\tcomment", "30\tc30"]
    assert result.segments[1].meta == {"delimiter": ",", "header_row": 1}


def test_tsv_and_single_column_and_binary_csv(tmp_path: Path) -> None:
    (tmp_path / "a.tsv").write_text("k\tv\nx\t1\n", encoding="utf-8")
    assert positions(perceive(tmp_path, "a.tsv")) == [{"unit": "cells", "position": "A1:B2"}]
    (tmp_path / "names.csv").write_text("Amara\nOskar\n", encoding="utf-8")
    single = perceive(tmp_path, "names.csv")
    assert single.segments[0].text == "Amara\nOskar"
    assert positions(single) == [{"unit": "cells", "position": "A1:A2"}]
    (tmp_path / "bad.csv").write_bytes(b"PK\x03\x04\x00\x00\x08\x00" * 50)
    bad = perceive(tmp_path, "bad.csv")
    assert (bad.status, bad.reason) == ("failed", "binary content in a text file")


def test_sniff_delimiter_and_column_letters() -> None:
    assert sniff_delimiter("a;b;c\n1;2;3\n") == ";"
    assert sniff_delimiter("a|b\n1|2\n") == "|"
    assert sniff_delimiter("just one line, with a comma") == ","
    assert [column_letter(n) for n in (1, 26, 27, 52, 703)] == ["A", "Z", "AA", "AZ", "AAA"]


# -- PPTX ------------------------------------------------------------------------------------------
def make_pptx(path: Path) -> Path:
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    one = prs.slides.add_slide(prs.slide_layouts[1])
    one.shapes.title.text = "Trip plan"
    one.placeholders[1].text = "Day 1: Oslo\nDay 2: Bergen"
    one.notes_slide.notes_text_frame.text = "Remember the train tickets."
    two = prs.slides.add_slide(prs.slide_layouts[5])
    two.shapes.title.text = "Costs"
    table = two.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for r, row in enumerate([("Hotel", "900 NOK"), ("Train", "120 NOK")]):
        for c, text in enumerate(row):
            table.cell(r, c).text = text
    group = two.shapes.add_group_shape()
    box = group.shapes.add_textbox(Inches(1), Inches(5), Inches(3), Inches(1))
    box.text_frame.text = "Grouped remark"
    note = two.shapes.add_textbox(Inches(1), Inches(1.5), Inches(3), Inches(0.5))
    note.text_frame.text = "Above the table"
    three = prs.slides.add_slide(prs.slide_layouts[6])  # blank, hidden, only notes
    three.element.set("show", "0")
    three.notes_slide.notes_text_frame.text = "Backup slide"
    four = prs.slides.add_slide(prs.slide_layouts[6])
    four.element.set("show", "0")
    four.shapes.add_textbox(Inches(1), Inches(1), Inches(2), Inches(1)).text_frame.text = "Spare"
    path.parent.mkdir(parents=True, exist_ok=True)
    prs.save(path)
    return path


def test_pptx_slides_and_speaker_notes(tmp_path: Path) -> None:
    make_pptx(tmp_path / "Talks/trip (final).pptx")
    result = perceive(tmp_path, "Talks/trip (final).pptx")
    assert result.status == "ok" and result.reader == "pptx"
    assert [s.text for s in result.segments] == [
        "Trip plan\nDay 1: Oslo\nDay 2: Bergen",
        "Remember the train tickets.",
        "Costs\nAbove the table\nHotel | 900 NOK\nTrain | 120 NOK\nGrouped remark",
        "Backup slide",
        "Spare",
    ]
    assert positions(result) == [
        {"unit": "slide", "position": {"slide": 1}},
        {"unit": "slide", "position": {"slide": 1}},
        {"unit": "slide", "position": {"slide": 2}},
        {"unit": "slide", "position": {"slide": 3}},
        {"unit": "slide", "position": {"slide": 4}},
    ]
    assert [s.meta for s in result.segments] == [
        {"title": "Trip plan"},
        {"notes": True, "title": "Trip plan"},
        {"title": "Costs"},
        {"notes": True},
        {"hidden": True},
    ]
    assert isinstance(parse_locator(result.segments[0].locator.dump()), SlideLocator)


# -- bad office files ------------------------------------------------------------------------------
@pytest.fixture
def office_files(tmp_path: Path) -> dict[str, Path]:
    return {
        "docx": make_docx(tmp_path / "src/a.docx"),
        "xlsx": make_budget(tmp_path / "src/a.xlsx"),
        "pptx": make_pptx(tmp_path / "src/a.pptx"),
    }


@pytest.mark.parametrize("ext", ["docx", "xlsx", "pptx"])
def test_truncated_office_files_fail_with_a_reason(tmp_path: Path, office_files: dict[str, Path], ext: str) -> None:
    data = office_files[ext].read_bytes()
    (tmp_path / f"cut.{ext}").write_bytes(data[: len(data) // 2])
    result = perceive(tmp_path, f"cut.{ext}")
    assert (result.status, result.reason) == ("failed", f"not a valid {ext.upper()} (zip) file")
    (tmp_path / f"text.{ext}").write_text("just some text", encoding="utf-8")
    assert perceive(tmp_path, f"text.{ext}").reason == f"not a valid {ext.upper()} (zip) file"


@pytest.mark.parametrize(("ext", "noun"), [("docx", "document"), ("xlsx", "workbook"), ("pptx", "presentation")])
def test_password_protected_office_files(tmp_path: Path, ext: str, noun: str) -> None:
    # an encrypted OOXML file is an OLE compound file holding an "EncryptedPackage" stream
    (tmp_path / f"locked.{ext}").write_bytes(OLE_MAGIC + bytes(600) + "EncryptedPackage".encode("utf-16-le"))
    result = perceive(tmp_path, f"locked.{ext}")
    assert (result.status, result.reason) == ("failed", f"password-protected {noun}")


def test_renamed_and_damaged_packages(tmp_path: Path, office_files: dict[str, Path]) -> None:
    (tmp_path / "sheet.docx").write_bytes(office_files["xlsx"].read_bytes())
    renamed = perceive(tmp_path, "sheet.docx")
    assert renamed.status == "failed"
    assert renamed.reason == (
        "not a valid DOCX file: its main part is "
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"
    )
    (tmp_path / "doc.pptx").write_bytes(office_files["docx"].read_bytes())
    assert perceive(tmp_path, "doc.pptx").reason.startswith("not a valid PPTX file: its main part is ")
    (tmp_path / "doc.xlsx").write_bytes(office_files["docx"].read_bytes())
    assert perceive(tmp_path, "doc.xlsx").reason.startswith("not a valid XLSX file: ")
    # a valid zip whose main part is not XML
    with zipfile.ZipFile(office_files["docx"]) as zin, zipfile.ZipFile(tmp_path / "garbled.docx", "w") as zout:
        for item in zin.infolist():
            zout.writestr(item, b"<not xml" if item.filename == "word/document.xml" else zin.read(item.filename))
    garbled = perceive(tmp_path, "garbled.docx")
    assert garbled.status == "failed" and garbled.reason.startswith("not a valid DOCX file: XMLSyntaxError")
    legacy = tmp_path / "old.docx"
    legacy.write_bytes(OLE_MAGIC + bytes(600))
    assert perceive(tmp_path, "old.docx").reason == "not a valid DOCX (zip) file: a legacy binary Office file (OLE)"
