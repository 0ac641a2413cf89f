"""Evidence renderers of hippocamp studio (`hippocamp.studio.render`), on tiny real files made here: a
3-page PDF, pictures (one upright by EXIF, two whose headers claim too many pixels), a workbook, a CSV, a
text file, a PPTX, a mail and a calendar; and the bad ones (corrupt, missing, too large)."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from conftest import make_pdf
from hippocamp.schema.locators import TimeRange, parse_locator
from hippocamp.studio.render import (
    Limits,
    RenderError,
    cell_grid,
    describe,
    image_png,
    matching_text,
    media_fragment,
    pdf_page_png,
    render_grid,
    render_lines,
    render_plan,
    render_png,
    slide_text,
    text_lines,
)

WHITE = (255, 255, 255)


def _png(data: bytes) -> Image.Image:
    img = Image.open(io.BytesIO(data))
    assert img.format == "PNG"
    img.load()
    return img.convert("RGB")


def _pdf(tmp_path: Path) -> Path:
    # pages labelled i, ii, 1 (a preface numbered in roman, then the body)
    return make_pdf(
        tmp_path / "report.pdf", ["first page", "second page", "third page"], [(0, 1, "/r", 1), (2, 2, "/D", 1)]
    )


def _png_header_only(path: Path, width: int, height: int) -> Path:
    """A PNG whose IHDR claims ``width`` x ``height`` pixels with almost no pixel data behind it."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b"")
    )
    return path


# -- PDF -----------------------------------------------------------------------------------------------
def test_pdf_page_renders_at_scale_and_draws_the_region(tmp_path: Path) -> None:
    pdf = _pdf(tmp_path)
    plain = _png(pdf_page_png(pdf, 2))
    assert abs(plain.width - 595 * 1.5) <= 1 and abs(plain.height - 842 * 1.5) <= 1
    # a box in pt from the top-left corner: (300, 400)-(500, 600) is blank paper on page 2
    boxed = _png(pdf_page_png(pdf, 2, box=(300, 400, 500, 600)))
    assert boxed.size == plain.size
    inside = (round(400 * 1.5), round(500 * 1.5))
    assert plain.getpixel(inside) == WHITE and boxed.getpixel(inside) != WHITE
    assert boxed.getpixel((round(100 * 1.5), round(500 * 1.5))) == WHITE  # left of the box: untouched
    assert boxed.getpixel((round(400 * 1.5), round(300 * 1.5))) == WHITE  # above it: untouched
    # the same box as fractions of the page lands on the same place
    norm = _png(pdf_page_png(pdf, 2, box=(300 / 595, 400 / 842, 500 / 595, 600 / 842), box_units="norm"))
    assert norm.getpixel(inside) == boxed.getpixel(inside)
    # a page never passes max_side
    small = _png(pdf_page_png(pdf, 1, limits=Limits(max_side=400)))
    assert max(small.size) <= 400 and small.height > small.width


def test_pdf_errors_name_the_file(tmp_path: Path) -> None:
    pdf = _pdf(tmp_path)
    with pytest.raises(RenderError, match=r"report\.pdf: page 4 is outside the document \(it has 3 pages\)"):
        pdf_page_png(pdf, 4)
    with pytest.raises(RenderError, match=r"report\.pdf: pages are numbered from 1"):
        pdf_page_png(pdf, 0)
    with pytest.raises(RenderError, match=r"report\.pdf: the region .* lies outside page 1"):
        pdf_page_png(pdf, 1, box=(700, 900, 800, 1000))
    with pytest.raises(RenderError, match=r"report\.pdf: box units 'furlongs' not understood"):
        pdf_page_png(pdf, 1, box=(1, 1, 2, 2), box_units="furlongs")
    corrupt = tmp_path / "broken.pdf"
    corrupt.write_bytes(b"%PDF-1.4\nthis is not a PDF at all\n")
    with pytest.raises(RenderError, match=r"broken\.pdf: not a readable PDF"):
        pdf_page_png(corrupt, 1)
    with pytest.raises(RenderError, match=r"gone\.pdf: no such file"):
        pdf_page_png(tmp_path / "gone.pdf", 1)
    with pytest.raises(RenderError, match=r"report\.pdf: the file is .* more than the .* shown here"):
        pdf_page_png(pdf, 1, limits=Limits(max_bytes=100))


# -- pictures ------------------------------------------------------------------------------------------
def test_image_is_downscaled_and_boxes_follow(tmp_path: Path) -> None:
    photo = tmp_path / "IMG_1.jpg"
    Image.new("RGB", (3200, 1600), WHITE).save(photo, quality=95)
    plain = _png(image_png(photo))
    assert plain.size == (1600, 800)
    boxed = _png(image_png(photo, [(1000, 400, 1400, 800)]))  # pixels of the full picture
    assert boxed.size == (1600, 800)
    assert plain.getpixel((600, 300)) == boxed.getpixel((100, 100)) == WHITE
    assert boxed.getpixel((600, 300)) != WHITE  # the box's middle, halved
    assert _png(image_png(photo, [(0.3125, 0.25, 0.4375, 0.5)], "norm")).getpixel((600, 300)) != WHITE


def test_image_is_shown_upright_with_boxes_in_displayed_pixels(tmp_path: Path) -> None:
    photo = tmp_path / "turned.jpg"
    exif = Image.Exif()
    exif[0x0112] = 6  # stored landscape, displayed portrait (rotate 90° clockwise)
    Image.new("RGB", (400, 200), WHITE).save(photo, exif=exif, quality=95)
    shown = _png(image_png(photo, [(10, 300, 100, 390)]))
    assert shown.size == (200, 400)
    assert shown.getpixel((50, 350)) != WHITE and shown.getpixel((150, 100)) == WHITE


def test_picture_bombs_are_refused_before_decoding(tmp_path: Path) -> None:
    bomb = _png_header_only(tmp_path / "bomb.png", 50000, 50000)
    with pytest.raises(RenderError, match=r"bomb\.png: the picture claims 2,500,000,000 pixels, more than the 40 MP"):
        image_png(bomb)
    big = _png_header_only(tmp_path / "IMG_2.png", 7000, 7000)  # under Pillow's own limit, over ours
    with pytest.raises(RenderError, match=r"IMG_2\.png: the picture is 7000x7000 pixels, more than the 40 MP"):
        image_png(big)


def test_bad_pictures_name_the_file(tmp_path: Path) -> None:
    good = io.BytesIO()
    Image.new("RGB", (300, 300), (10, 20, 30)).save(good, "PNG")
    cut = tmp_path / "cut.png"
    cut.write_bytes(good.getvalue()[:60])
    with pytest.raises(RenderError, match=r"cut\.png: (corrupt or truncated|not a picture)"):
        image_png(cut)
    fake = tmp_path / "fake.jpg"
    fake.write_bytes(b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\n")  # never handed to Ghostscript
    with pytest.raises(RenderError, match=r"fake\.jpg: not a picture that can be shown"):
        image_png(fake)
    with pytest.raises(RenderError, match=r"none\.png: no such file"):
        image_png(tmp_path / "none.png")
    ok = tmp_path / "ok.png"
    ok.write_bytes(good.getvalue())
    with pytest.raises(RenderError, match=r"ok\.png: a region in pt does not fit a picture"):
        image_png(ok, [(1, 1, 5, 5)], "pt")


# -- cells ---------------------------------------------------------------------------------------------
def _workbook(path: Path) -> Path:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "Budget"
    ws.append(["Item", "Q1", "Q2", "Q3"])
    for i in range(2, 31):
        ws.append([f"row {i}", i * 10, i + 0.5, None])
    wb.create_sheet("Notes")["A1"] = "hello"
    wb.save(path)
    return path


def test_grid_highlights_exactly_the_range(tmp_path: Path) -> None:
    book = _workbook(tmp_path / "budget.xlsx")
    grid = cell_grid(book, "B2:C3", "Budget")
    assert grid.highlighted() == ["B2", "C2", "B3", "C3"]
    assert grid.sheet == "Budget" and grid.sheets == ("Budget", "Notes")
    assert [row.number for row in grid.rows] == [1, 2, 3, 4, 5, 6]  # 3 rows of context below, none above row 1
    assert grid.columns == ("A", "B", "C", "D")  # one column of context to the right
    assert [cell.text for cell in grid.rows[1]] == ["row 2", "20", "2.5", ""]
    assert not any(row.header for row in grid.rows)


def test_grid_far_down_repeats_the_header_and_stays_within_limits(tmp_path: Path) -> None:
    book = _workbook(tmp_path / "budget.xlsx")
    grid = cell_grid(book, "b20:B21", "budget")  # sheet names match case-insensitively
    assert grid.rows[0].header and grid.rows[0].number == 1 and grid.rows[0].cells[0].text == "Item"
    assert [row.number for row in grid.rows[1:]] == list(range(17, 25))
    assert grid.highlighted() == ["B20", "B21"]
    cut = cell_grid(book, "A1:C30", "Budget", Limits(max_cells=30))
    assert sum(len(row.cells) for row in cut.rows) <= 30 and cut.note and "rows 1-7 shown" in cut.note
    assert cell_grid(book, "A2:B3", "Notes").columns == ("A", "B")  # C is empty: trimmed
    first = cell_grid(book, "A1", None)
    assert first.sheet == "Budget" and first.note == "no sheet named: the first sheet shown"


def test_grid_errors(tmp_path: Path) -> None:
    book = _workbook(tmp_path / "budget.xlsx")
    with pytest.raises(RenderError, match=r"budget\.xlsx: no sheet 'Taxes' \(the workbook has 'Budget', 'Notes'\)"):
        cell_grid(book, "A1", "Taxes")
    with pytest.raises(RenderError, match=r"budget\.xlsx: 'B2:C' is not a cell range"):
        cell_grid(book, "B2:C", None)
    broken = tmp_path / "broken.xlsx"
    broken.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(RenderError, match=r"broken\.xlsx: not a valid XLSX"):
        cell_grid(broken, "A1", None)


def test_csv_grid(tmp_path: Path) -> None:
    table = tmp_path / "spend.csv"
    table.write_text("date,shop,amount\n2024-10-01,Bakery,3.50\n2024-10-02,Books,12\n2024-10-03,Cafe,4\n")
    grid = cell_grid(table, "B2:C3", None)
    assert grid.highlighted() == ["B2", "C2", "B3", "C3"]
    assert [cell.text for cell in grid.rows[2]] == ["2024-10-02", "Books", "12"]
    assert [row.number for row in grid.rows] == [1, 2, 3, 4]  # the data ends at row 4
    tsv = tmp_path / "spend.tsv"
    tsv.write_text("a\tb\n1\t2\n")
    assert cell_grid(tsv, "B2", None).highlighted() == ["B2"]


# -- lines and slides ----------------------------------------------------------------------------------
def test_lines_window_highlights_the_range(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("".join(f"line {n}\r\n" for n in range(1, 51)))
    window = text_lines(notes, 10, 12)
    assert [line.number for line in window.lines] == list(range(5, 18))
    assert [line.number for line in window.lines if line.highlighted] == [10, 11, 12]
    assert window.lines[5].text == "line 10" and window.total == 50
    few = text_lines(notes, 1, 50, Limits(max_lines=10))
    assert len(few.lines) == 10 and few.note and "at most 10" in few.note
    with pytest.raises(RenderError, match=r"notes\.md: line 51 is past the end of the file \(it has 50 lines\)"):
        text_lines(notes, 51)
    blob = tmp_path / "blob.txt"
    blob.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(RenderError, match=r"blob\.txt: not a text file"):
        text_lines(blob)


def _pptx(path: Path) -> Path:
    from pptx import Presentation

    prs = Presentation()
    one = prs.slides.add_slide(prs.slide_layouts[1])
    one.shapes.title.text = "Trip plan"
    one.placeholders[1].text = "Day 1: Oslo\nDay 2: Bergen"
    one.notes_slide.notes_text_frame.text = "Remember the train tickets."
    two = prs.slides.add_slide(prs.slide_layouts[5])
    two.shapes.title.text = "Costs"
    prs.save(path)
    return path


def test_slide_text(tmp_path: Path) -> None:
    deck = _pptx(tmp_path / "trip.pptx")
    slide = slide_text(deck, 1)
    assert (slide.title, slide.lines, slide.notes, slide.count) == (
        "Trip plan",
        ("Day 1: Oslo", "Day 2: Bergen"),
        ("Remember the train tickets.",),
        2,
    )
    with pytest.raises(RenderError, match=r"trip\.pptx: slide 3 is outside the presentation \(it has 2 slides\)"):
        slide_text(deck, 3)


# -- the reader's own segments -------------------------------------------------------------------------
def test_matching_text_finds_a_calendar_event_and_a_mail_paragraph(tmp_path: Path) -> None:
    ics = tmp_path / "cal.ics"
    ics.write_text(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\n"
        "BEGIN:VEVENT\r\nUID:uid-1\r\nDTSTART:20241012T070000Z\r\nSUMMARY:Gym\r\nEND:VEVENT\r\n"
        "BEGIN:VEVENT\r\nUID:uid-2\r\nDTSTART:20241013T090000Z\r\nSUMMARY:Dentist\r\nEND:VEVENT\r\n"
        "END:VCALENDAR\r\n"
    )
    found = matching_text(ics, {"unit": "event", "position": {"id": "uid-2"}})
    assert len(found.items) == 1 and "Dentist" in found.items[0].text and "uid-2" in found.items[0].where
    with pytest.raises(RenderError, match=r"cal\.ics: no text found at event uid-9"):
        matching_text(ics, {"unit": "event", "position": {"id": "uid-9"}})
    mail = tmp_path / "note.eml"
    mail.write_text(
        "From: Ann <ann@example.com>\nTo: me@example.com\nSubject: Keys\nDate: Sat, 12 Oct 2024 10:00:00 +0000\n\n"
        "Hi,\n\nthe keys are under the mat.\n\nAnn\n"
    )
    plan = render_plan(mail, {"unit": "paragraph", "position": {"line": 2}})
    assert plan.kind == "text"
    lines = render_lines(mail, plan)
    assert any("under the mat" in line.text for line in lines) and all(line.highlighted for line in lines)


# -- fragments, descriptions, plans --------------------------------------------------------------------
def test_media_fragment() -> None:
    assert media_fragment("1.5-3") == "#t=1.5,3"
    assert media_fragment("00:01:05-00:01:12") == "#t=65,72"
    assert media_fragment(TimeRange(start=65)) == "#t=65"
    with pytest.raises(RenderError, match="not a time range"):
        media_fragment("soon")


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ({"unit": "page", "position": {"system_page": 3, "printed_page": "1"}}, "page 3 (printed 1)"),
        ({"unit": "pages", "position": "3-5"}, "pages 3-5"),
        ({"unit": "printed_page", "position": "iii"}, "printed page iii"),
        (
            {"unit": "region", "position": {"page": 3, "bbox": [72, 100, 300, 220]}},
            "page 3, region 72-300 x 100-220 pt",
        ),
        ({"unit": "bbox", "position": [0.1, 0.2, 0.5, 0.8]}, "region 10%-50% x 20%-80%"),
        ({"unit": "table", "position": {"page": 2, "label": "Table 3"}}, "page 2, Table 3"),
        ({"unit": "timestamp", "position": {"start": "00:01:05", "end": "00:01:12"}}, "00:01:05-00:01:12"),
        ({"unit": "time", "position": 62.5}, "00:01:02.500"),
        ({"unit": "cells", "position": "Sheet1!B4:C6"}, "Sheet1!B4:C6"),
        ({"unit": "cells", "position": "A1:C30"}, "A1:C30"),
        ({"unit": "slides", "position": "4-5"}, "slides 4-5"),
        ({"unit": "slide", "position": 4}, "slide 4"),
        ({"unit": "lines", "position": {"line": 12, "line_end": 15}}, "lines 12-15"),
        ({"unit": "paragraph", "position": {"line": 2}}, "paragraph 2"),
        ({"unit": "message", "position": "m3"}, "message m3"),
        ({"unit": "event", "position": {"id": "uid-1", "at": "2024-10-12T10:30"}}, "event uid-1 at 2024-10-12T10:30"),
        ({"unit": "email", "position": 3}, "email #3"),
        ({"unit": "frame", "position": 12}, "unknown unit 'frame': 12"),
        (None, "the whole file"),
    ],
)
def test_describe(raw: object, text: str) -> None:
    assert describe(raw) == text
    if raw is not None:
        assert describe(parse_locator(raw)) == text


def test_describe_an_unreadable_locator() -> None:
    assert describe({"unit": "page", "position": "abc"}).startswith("unreadable page: ")


def test_render_plan_picks_the_renderer(tmp_path: Path) -> None:
    pdf = _pdf(tmp_path)
    plan = render_plan(pdf, {"unit": "page", "position": {"system_page": 2}})
    assert (plan.kind, plan.page, plan.box) == ("pdf-page", 2, None)
    assert render_plan(pdf, {"unit": "printed_page", "position": "1"}).page == 3  # by the PDF's page labels
    region = render_plan(pdf, {"unit": "region", "position": {"page": 2, "bbox": [300, 400, 500, 600]}})
    assert (region.kind, region.page, region.box, region.box_units) == ("pdf-page", 2, (300, 400, 500, 600), "pt")
    assert _png(render_png(pdf, region)).getpixel((600, 750)) != WHITE
    assert render_plan(pdf, {"unit": "slide", "position": 2}).kind == "none"

    photo = render_plan(Path("IMG_1.JPG"), {"unit": "bbox", "position": {"bbox": [10, 20, 30, 40], "units": "pixels"}})
    assert (photo.kind, photo.box, photo.box_units) == ("image", (10, 20, 30, 40), "px")
    song = render_plan(Path("voice.mp3"), {"unit": "timestamp", "position": "00:01:05-00:01:12"})
    assert (song.kind, song.media, song.fragment) == ("media", "audio", "#t=65,72")
    assert render_plan(Path("clip.mp4"), {"unit": "time", "position": [1.5, 3]}).media == "video"
    grid = render_plan(Path("budget.xlsx"), {"unit": "cells", "position": "'My Sheet'!B2:C3"})
    assert (grid.kind, grid.sheet, grid.cells) == ("grid", "My Sheet", "B2:C3")
    lines = render_plan(Path("notes.md"), {"unit": "lines", "position": {"line": 3, "line_end": 9}})
    assert (lines.kind, lines.start, lines.end) == ("lines", 3, 9)
    slide = render_plan(Path("trip.pptx"), {"unit": "slide", "position": 2})
    assert (slide.kind, slide.slide) == ("slide", 2)
    assert render_plan(Path("cal.ics"), {"unit": "event", "position": {"id": "u"}}).kind == "text"
    assert render_plan(Path("data.json"), {"unit": "record", "position": {"index": 4}}).kind == "text"
    unknown = render_plan(Path("notes.md"), {"unit": "frame", "position": 12})
    assert unknown.kind == "none" and unknown.message and "'frame'" in unknown.message
    invalid = render_plan(pdf, {"unit": "page", "position": "abc"})
    assert invalid.kind == "none" and invalid.message and invalid.message.startswith("the locator cannot be read")
    assert render_plan(Path("thing.xyz"), None).kind == "none"


def test_plans_carried_out(tmp_path: Path) -> None:
    book = _workbook(tmp_path / "budget.xlsx")
    grid = render_grid(book, render_plan(book, {"unit": "cells", "position": "Budget!B2:C3"}))
    assert grid.highlighted() == ["B2", "C2", "B3", "C3"]
    deck = _pptx(tmp_path / "trip.pptx")
    shown = render_lines(deck, render_plan(deck, {"unit": "slide", "position": 1}))
    assert [(line.label, line.text) for line in shown][:2] == [("title", "Trip plan"), ("slide", "Day 1: Oslo")]
    assert shown[-1].label == "notes"
    with pytest.raises(RenderError, match=r"budget\.xlsx: .*not shown as a picture"):
        render_png(book, render_plan(book, None))


def test_a_recording_is_drawn_as_a_waveform_with_its_duration(tmp_path: Path) -> None:
    from conftest import make_wav
    from hippocamp.studio.render import RenderError, waveform_png

    wav = make_wav(tmp_path / "memo.wav", seconds=3.0)
    data, duration = waveform_png(wav, width=400, height=80)
    with Image.open(io.BytesIO(data)) as img:
        assert img.format == "PNG" and img.size == (400, 80)
    assert abs(duration - 3.0) < 0.05
    (tmp_path / "silent.wav").write_bytes(b"RIFF not really a wave file")
    with pytest.raises(RenderError, match=r"silent\.wav"):
        waveform_png(tmp_path / "silent.wav")
