"""Rewriting files in their own formats (`hippocamp.build.rewrite`): every format built on the spot with planted
identifiers, rewritten with a dictionary editor, then read back with hippocamp's own readers and the formats'
libraries: new strings present, planted ones gone (`texts_of` included), identifying metadata removed, dates
kept, the source untouched, damaged packages refused with a `RewriteError` that names the file."""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from collections.abc import Callable
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path

import pytest

from hippocamp.build import rewrite_office
from hippocamp.build.rewrite import (
    Edit,
    EditError,
    Editor,
    RewriteError,
    TextUnit,
    apply_edits,
    rewrite_file,
    spread,
    texts_of,
)
from hippocamp.perceive import perceive_file

NAME, MAIL, PHONE, STREET = "Priya Raman", "priya.raman@example.org", "+1 415 555 0142", "12 Larch Street"
NEW = {NAME: "Dana Holt", MAIL: "dana.holt@example.net", PHONE: "+1 415 555 0199", STREET: "48 Birch Road"}
PLANTED = (NAME, MAIL, PHONE, STREET)


def dict_editor(mapping: dict[str, str]) -> Editor:
    """An editor replacing every key of ``mapping`` (longest first) wherever it occurs."""
    pattern = re.compile("|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True)))

    def edit(text: str) -> list[Edit]:
        return [Edit(m.start(), m.end(), mapping[m.group(0)]) for m in pattern.finditer(text)]

    return edit


EDITOR = dict_editor(NEW)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rewrite(src: Path, editor: Editor = EDITOR) -> tuple[Path, object]:
    """Rewrite ``src`` into a sibling folder; check the source is untouched and the output is clean."""
    before = digest(src)
    out = src.parent / "out"
    out.mkdir(exist_ok=True)
    dst = out / src.name
    result = rewrite_file(src, dst, editor)
    assert digest(src) == before
    leftover = [(u.where, p) for u in texts_of(dst) for p in PLANTED if p in u.text]
    assert leftover == []
    return dst, result


def read_back(path: Path) -> str:
    """What hippocamp's reader makes of a file (it must read it, with segments)."""
    res = perceive_file(path.parent, path.name, hash_file=False)
    assert res.status in ("ok", "partial"), (res.status, res.reason)
    assert res.segments
    return "\n".join([s.text for s in res.segments] + [json.dumps(s.meta, default=str) for s in res.segments])


def wheres(units: list[TextUnit]) -> set[str]:
    return {u.where for u in units}


# -- the editor contract ----------------------------------------------------------------------------------
def test_apply_edits_and_bad_edits() -> None:
    text = "Hi Priya Raman, see you"
    assert apply_edits(text, EDITOR(text)) == "Hi Dana Holt, see you"
    assert apply_edits("abc", [Edit(0, 0, "x"), Edit(3, 3, "y")]) == "xabcy"
    for bad in ([Edit(2, 1, "")], [Edit(0, 2, ""), Edit(1, 3, "")], [Edit(0, 9, "")]):
        with pytest.raises(EditError):
            apply_edits("abc", bad)


def test_spread_over_pieces() -> None:
    pieces = ["Call Priya ", "Raman today"]
    assert spread(pieces, EDITOR("".join(pieces))) == ["Call Dana Holt", " today"]
    assert spread(["Pri", "ya Raman"], EDITOR("Priya Raman")) == ["Dana Holt", ""]
    # a fixed piece (a tab, a line break) loses characters but never takes new text
    assert spread(["Priya", "\n", "Raman"], [Edit(0, 11, "Dana Holt")], [False, True, False]) == ["Dana Holt", "", ""]
    assert spread(["x", "\t", "y"], [Edit(1, 2, "-")], [False, True, False]) == ["x-", "", "y"]
    assert spread(["\t"], [Edit(0, 1, "x")], [True]) is None


def test_editor_errors_are_not_file_errors(tmp_path: Path) -> None:
    src = tmp_path / "a.txt"
    src.write_text("Priya Raman\n")

    def broken(text: str) -> list[Edit]:
        raise KeyError("detector bug")

    with pytest.raises(KeyError):
        rewrite_file(src, tmp_path / "b.txt", broken)
    with pytest.raises(EditError):
        rewrite_file(src, tmp_path / "b.txt", lambda t: [Edit(0, 99, "")])


# -- text, JSON, calendar ---------------------------------------------------------------------------------
def test_text_keeps_encoding_and_newlines(tmp_path: Path) -> None:
    src = tmp_path / "notes.txt"
    src.write_bytes(f"Café with {NAME}\r\nCall {PHONE} or write to {MAIL}\r\n{STREET}\r\n".encode("cp1252"))
    dst, result = rewrite(src)
    data = dst.read_bytes()
    assert (
        data.decode("cp1252")
        == "Café with Dana Holt\r\nCall +1 415 555 0199 or write to dana.holt@example.net\r\n48 Birch Road\r\n"
    )
    assert result.changed == ("line 1", "line 2", "line 3") and result.edits == 4  # type: ignore[attr-defined]
    assert "Dana Holt" in read_back(dst)


def test_text_family_markdown_csv_html(tmp_path: Path) -> None:
    files = {
        "a.md": f"# Notes\n\nMet **{NAME}** at {STREET}.\n",
        "b.csv": f"name,phone\n{NAME},{PHONE}\n",
        "c.html": f"<html><body><p>Mail {MAIL}</p></body></html>\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        dst, _ = rewrite(tmp_path / name)
        shown = read_back(dst)
        assert any(v in shown for v in NEW.values()), name


def test_json_keys_values_and_layout(tmp_path: Path) -> None:
    doc = {"owner": NAME, NAME: {"mail": MAIL, "phones": [PHONE]}, "n": 3}
    indented, compact = tmp_path / "a.json", tmp_path / "b.json"
    indented.write_text(json.dumps(doc, indent=2) + "\n")
    compact.write_text(json.dumps(doc, separators=(",", ":")))
    dst, result = rewrite(indented)
    assert json.loads(dst.read_text()) == {
        "owner": "Dana Holt",
        "Dana Holt": {"mail": NEW[MAIL], "phones": [NEW[PHONE]]},
        "n": 3,
    }
    assert dst.read_text().startswith('{\n  "owner"') and dst.read_text().endswith("}\n")
    assert not any(NAME in w for w in result.changed)  # type: ignore[attr-defined]
    assert "Dana Holt" in read_back(dst)
    dst2, _ = rewrite(compact)
    assert "\n" not in dst2.read_text() and '"n":3' in dst2.read_text()
    broken = tmp_path / "c.json"
    broken.write_text(f'{{"owner": "{NAME}",')
    dst3, result3 = rewrite(broken)
    assert "Dana Holt" in dst3.read_text() and any("not valid JSON" in n for n in result3.notes)  # type: ignore[attr-defined]


def test_jsonl_lines_are_json(tmp_path: Path) -> None:
    src = tmp_path / "chat.jsonl"
    src.write_text(json.dumps({"from": NAME, "text": "hi \u00e9"}) + "\nplain " + NAME + "\n")
    dst, _ = rewrite(src)
    first, second = dst.read_text().splitlines()
    assert json.loads(first) == {"from": "Dana Holt", "text": "hi \u00e9"} and second == "plain Dana Holt"


def test_ics_people_places_and_dates(tmp_path: Path) -> None:
    import datetime as dt

    import icalendar

    cal = icalendar.Calendar()
    cal.add("prodid", "-//test//EN")
    cal.add("version", "2.0")
    event = icalendar.Event()
    event.add("uid", f"evt-1-{MAIL}")
    event.add("summary", f"Lunch with {NAME}")
    event.add("description", f"Call {PHONE}, then walk; bring the keys")
    event.add("location", STREET)
    event.add("dtstart", dt.datetime(2024, 5, 3, 12, 30))
    event.add("dtend", dt.datetime(2024, 5, 3, 13, 30))
    event.add("rrule", {"freq": "weekly", "count": 3})
    event.add("geo", (37.77, -122.41))
    organizer = icalendar.vCalAddress(f"mailto:{MAIL}")
    organizer.params["cn"] = icalendar.vText(NAME)
    event["organizer"] = organizer
    attendee = icalendar.vCalAddress(f"mailto:{MAIL}")
    attendee.params["cn"] = icalendar.vText(NAME)
    event.add("attendee", attendee)
    cal.add_component(event)
    src = tmp_path / "cal.ics"
    src.write_bytes(cal.to_ical())
    units = texts_of(src)
    assert any(u.where.endswith("ORGANIZER CN") and u.text == NAME for u in units)
    assert any(u.where == "iCalendar GEO" for u in units)
    dst, result = rewrite(src)
    back = icalendar.Calendar.from_ical(dst.read_bytes())
    ev = next(iter(back.walk("VEVENT")))
    assert str(ev["summary"]) == "Lunch with Dana Holt" and str(ev["location"]) == "48 Birch Road"
    assert str(ev["description"]) == "Call +1 415 555 0199, then walk; bring the keys"
    assert str(ev["organizer"]) == f"mailto:{NEW[MAIL]}" and ev["organizer"].params["CN"] == "Dana Holt"
    assert "GEO" not in ev and "iCalendar GEO" in result.scrubbed  # type: ignore[attr-defined]
    assert ev.decoded("dtstart") == dt.datetime(2024, 5, 3, 12, 30) and ev["rrule"]["COUNT"] == [3]
    assert "Dana Holt" in read_back(dst)


def test_vcard_fields_and_photo(tmp_path: Path) -> None:
    src = tmp_path / "people.vcf"
    card = (
        f"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:{NAME}\r\nN:Raman;Priya;;;\r\nEMAIL;TYPE=INTERNET:{MAIL}\r\n"
        f"TEL;TYPE=CELL:{PHONE}\r\nADR;TYPE=HOME:;;{STREET};Springfield;;;\r\nNOTE:met at {STREET}\\, nice\r\n"
        "PHOTO;ENCODING=b;TYPE=JPEG:/9j/4AAQSkZJRg==\r\nREV:2024-01-01T00:00:00Z\r\nEND:VCARD\r\n"
    )
    src.write_text(card, newline="")
    dst, result = rewrite(src)
    text = dst.read_bytes().decode()
    assert "FN:Dana Holt\r\n" in text and f"EMAIL;TYPE=INTERNET:{NEW[MAIL]}" in text
    assert "NOTE:met at 48 Birch Road\\, nice" in text and "REV:2024-01-01T00:00:00Z" in text
    assert "PHOTO" not in text and "vCard PHOTO" in result.scrubbed  # type: ignore[attr-defined]


# -- mail -------------------------------------------------------------------------------------------------
def make_docx(path: Path | None = None, split: bool = True) -> bytes:
    import docx

    doc = docx.Document()
    p = doc.add_paragraph()
    if split:
        p.add_run("Pri").bold = True
        p.add_run("ya Raman")
    else:
        p.add_run(NAME)
    p.add_run(f" lives at {STREET}")
    doc.core_properties.author = NAME
    buf = io.BytesIO()
    doc.save(buf)
    if path is not None:
        path.write_bytes(buf.getvalue())
    return buf.getvalue()


def make_mail(attachment: bytes | None = None) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = f"{NAME} <{MAIL}>"
    msg["To"] = "Bob Stone <bob@example.com>"
    msg["Subject"] = f"Dinner at {STREET}"
    msg["Date"] = "Fri, 03 May 2024 12:30:00 +0000"
    msg["Message-ID"] = f"<abc.{MAIL}>"
    msg["Received"] = "from mail.example.org (203.0.113.9) by mx.example.com"
    msg["X-Mailer"] = "Apple Mail (2.3731)"
    msg["X-Originating-IP"] = "[203.0.113.9]"
    msg.set_content(f"Hi Bob,\n\ncall me on {PHONE}.\n\n-- \n{NAME}\n")
    msg.add_alternative(f"<p>Hi Bob, call me on {PHONE}.</p><p>{NAME}</p>", subtype="html")
    if attachment is not None:
        msg.add_attachment(attachment, maintype="application",
                           subtype="vnd.openxmlformats-officedocument.wordprocessingml.document",
                           filename=f"{NAME} notes.docx")  # fmt: skip
    return msg


def test_eml_headers_bodies_and_docx_attachment(tmp_path: Path) -> None:
    import docx

    src = tmp_path / "mail.eml"
    raw = make_mail(make_docx()).as_bytes()
    src.write_bytes(raw.replace(f"From: {NAME} <".encode(), b"From: =?utf-8?q?Priya_Raman?= <"))
    assert b"=?utf-8?q?Priya_Raman?=" in src.read_bytes()
    units = texts_of(src)
    assert any(u.where == "header From" and NAME in u.text for u in units)
    assert any("core author" in u.where and u.text == NAME for u in units)  # the attachment's metadata too
    dst, result = rewrite(src)
    raw = dst.read_bytes()
    assert b"=?utf-8?" in raw.split(b"\n\n")[0]  # the display name is still an encoded word
    msg = BytesParser(policy=policy.default).parsebytes(raw)
    assert msg["From"].addresses[0].display_name == "Dana Holt"
    assert msg["From"].addresses[0].addr_spec == NEW[MAIL]
    assert msg["Subject"] == "Dinner at 48 Birch Road" and msg["Date"] == "Fri, 03 May 2024 12:30:00 +0000"
    assert msg["Received"] is None and msg["X-Mailer"] is None and msg["X-Originating-IP"] is None
    assert {"mail header Received", "mail header X-Mailer", "mail header X-Originating-IP"} <= set(result.scrubbed)  # type: ignore[attr-defined]
    body = msg.get_body(("plain",))
    assert body is not None and "+1 415 555 0199" in body.get_content() and "Dana Holt" in body.get_content()
    attachment = next(msg.iter_attachments())
    assert attachment.get_filename() == "Dana Holt notes.docx"
    doc = docx.Document(io.BytesIO(attachment.get_content()))
    assert doc.paragraphs[0].text == "Dana Holt lives at 48 Birch Road"
    assert doc.core_properties.author == ""
    shown = read_back(dst)
    assert "Dana Holt" in shown and "48 Birch Road" in shown


def test_mbox_messages(tmp_path: Path) -> None:
    one = make_mail().as_bytes()
    src = tmp_path / "box.mbox"
    src.write_bytes(
        b"From "
        + MAIL.encode()
        + b" Fri May  3 12:30:00 2024\n"
        + one
        + b"\n"
        + b"From x@y Sat May  4 1:00:00 2024\n"
        + one
        + b"\n"
    )
    dst, _ = rewrite(src)
    assert dst.read_bytes().count(b"\nFrom ") + dst.read_bytes().startswith(b"From ") == 2
    assert "Dana Holt" in read_back(dst)


def test_nested_messages_stop_at_depth(tmp_path: Path) -> None:
    inner = make_mail()
    for _ in range(4):
        outer = make_mail()
        outer.add_attachment(inner)
        inner = outer
    src = tmp_path / "deep.eml"
    src.write_bytes(inner.as_bytes())
    with pytest.raises(RewriteError, match=r"deep\.eml"):
        rewrite_file(src, tmp_path / "out.eml", EDITOR)


# -- Office -----------------------------------------------------------------------------------------------
def add_custom_properties(data: bytes) -> bytes:
    """A package with a docProps/custom.xml part (python-docx cannot write one)."""
    custom = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/custom-properties" '
        'xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes">'
        '<property fmtid="{D5CDD505-2E9C-101B-9397-08002B2CF9AE}" pid="2" name="Client">'
        f"<vt:lpwstr>{NAME}</vt:lpwstr></property></Properties>"
    )
    src, buf = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            body = src.read(info)
            if info.filename == "[Content_Types].xml":
                override = (
                    b'<Override PartName="/docProps/custom.xml" '
                    b'ContentType="application/vnd.openxmlformats-officedocument.custom-properties+xml"/>'
                )
                body = body.replace(b"</Types>", override + b"</Types>")
            if info.filename == "_rels/.rels":
                rel = (
                    b'<Relationship Id="rIdC" Target="docProps/custom.xml" '
                    b'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/custom-properties"/>'
                )
                body = body.replace(b"</Relationships>", rel + b"</Relationships>")
            out.writestr(info, body)
        out.writestr("docProps/custom.xml", custom)
    return buf.getvalue()


def test_docx_runs_tables_headers_and_properties(tmp_path: Path) -> None:
    import datetime as dt

    import docx

    doc = docx.Document()
    p = doc.add_paragraph("Dear ")
    first = p.add_run("Pri")
    first.bold = True
    p.add_run("ya Raman")
    p.add_run(", see you")
    spanning = doc.add_paragraph()
    spanning.add_run("Call Priya ").italic = True
    spanning.add_run("Raman today")
    untouched = doc.add_paragraph()
    untouched.add_run("Nothing here").underline = True
    cell = doc.add_table(rows=1, cols=2).rows[0].cells
    cell[0].text, cell[1].text = PHONE, STREET
    doc.sections[0].header.paragraphs[0].text = f"Private: {NAME}"
    doc.sections[0].footer.paragraphs[0].text = MAIL
    cp = doc.core_properties
    cp.author, cp.last_modified_by, cp.comments, cp.title = NAME, NAME, f"for {NAME}", f"Letter to {NAME}"
    cp.created = dt.datetime(2023, 1, 2, 3, 4, 5)
    buf = io.BytesIO()
    doc.save(buf)
    src = tmp_path / "letter.docx"
    src.write_bytes(add_custom_properties(buf.getvalue()))
    units = texts_of(src)
    assert {"paragraph 1", "header1 paragraph 1", "core property title"} <= wheres(units)
    assert TextUnit("docx core author", NAME) in units and TextUnit("docx custom property Client", NAME) in units
    dst, result = rewrite(src)
    out = docx.Document(str(dst))
    paras = out.paragraphs
    assert paras[0].text == "Dear Dana Holt, see you"
    assert [r.text for r in paras[0].runs] == ["Dear ", "Dana Holt", "", ", see you"] and paras[0].runs[1].bold
    assert [r.text for r in paras[1].runs] == ["Call Dana Holt", " today"] and paras[1].runs[0].italic
    assert paras[2].runs[0].text == "Nothing here" and paras[2].runs[0].underline
    assert [c.text for c in out.tables[0].rows[0].cells] == [NEW[PHONE], NEW[STREET]]
    assert out.sections[0].header.paragraphs[0].text == "Private: Dana Holt"
    assert out.sections[0].footer.paragraphs[0].text == NEW[MAIL]
    cp = out.core_properties
    assert (cp.author, cp.last_modified_by, cp.comments, cp.title) == ("", "", "", "Letter to Dana Holt")
    assert cp.created.replace(tzinfo=None) == dt.datetime(2023, 1, 2, 3, 4, 5)
    names = zipfile.ZipFile(dst).namelist()
    assert "docProps/custom.xml" not in names and b"custom.xml" not in zipfile.ZipFile(dst).read("[Content_Types].xml")
    assert {"docx core author", "docx core last_modified_by", "docx core comments"} <= set(result.scrubbed)  # type: ignore[attr-defined]
    assert "paragraph 1" in result.changed and "paragraph 3" not in result.changed  # type: ignore[attr-defined]
    shown = read_back(dst)
    assert "Dana Holt" in shown and NEW[PHONE] in shown


def test_xlsx_cells_sheet_names_formulas_comments(tmp_path: Path) -> None:
    import datetime as dt

    import openpyxl
    from openpyxl.comments import Comment

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = NAME
    ws["A1"], ws["B4"], ws["C1"], ws["D1"] = "Contact", MAIL, 1234.5, dt.datetime(2024, 5, 3, 9, 0)
    ws["A2"] = f"{NAME} at {STREET}"
    ws["A1"].comment = Comment(f"ask {NAME}", NAME)
    other = wb.create_sheet("Budget")
    other["A1"] = f"='{NAME}'!B4"
    other["A2"] = PHONE
    wb.properties.creator = NAME
    src = tmp_path / "book.xlsx"
    wb.save(src)
    units = texts_of(src)
    assert TextUnit("sheet Priya Raman!B4", MAIL) in units and TextUnit("xlsx core author", NAME) in units
    dst, result = rewrite(src)
    out = openpyxl.load_workbook(dst)
    assert out.sheetnames == ["Dana Holt", "Budget"]
    ws2 = out["Dana Holt"]
    assert ws2["B4"].value == NEW[MAIL] and ws2["A2"].value == "Dana Holt at 48 Birch Road"
    assert ws2["C1"].value == 1234.5 and ws2["D1"].value == dt.datetime(2024, 5, 3, 9, 0)
    assert ws2["A1"].comment.text.endswith("ask Dana Holt")
    assert out["Budget"]["A1"].value == "='Dana Holt'!B4" and out["Budget"]["A2"].value == NEW[PHONE]
    assert b"creator" not in zipfile.ZipFile(dst).read("docProps/core.xml")
    assert "sheet Dana Holt!B4" in result.changed  # type: ignore[attr-defined]
    shown = read_back(dst)
    assert NEW[MAIL] in shown and "Dana Holt" in shown


def test_pptx_shapes_tables_groups_notes(tmp_path: Path) -> None:
    import pptx
    from pptx.util import Inches

    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[5])
    slide.shapes.title.text = f"Meeting {NAME}"
    box = slide.shapes.add_textbox(Inches(1), Inches(2), Inches(4), Inches(1))
    para = box.text_frame.paragraphs[0]
    para.add_run().text = "Call Pri"
    para.add_run().text = f"ya Raman on {PHONE}"
    para.runs[1].hyperlink.address = f"mailto:{MAIL}"
    table = slide.shapes.add_table(1, 1, Inches(1), Inches(3), Inches(4), Inches(1)).table
    table.cell(0, 0).text = STREET
    group = slide.shapes.add_group_shape()
    group.shapes.add_textbox(Inches(1), Inches(4), Inches(2), Inches(1)).text_frame.text = MAIL
    slide.notes_slide.notes_text_frame.text = f"remind {NAME}"
    prs.core_properties.author = NAME
    src = tmp_path / "deck.pptx"
    prs.save(src)
    assert any(u.where.startswith("slide 1 shape") for u in texts_of(src))
    dst, result = rewrite(src)
    out = pptx.Presentation(str(dst))
    s = out.slides[0]
    texts = [sh.text_frame.text for sh in s.shapes if sh.has_text_frame]
    assert "Meeting Dana Holt" in texts and f"Call Dana Holt on {NEW[PHONE]}" in texts
    tables = [sh.table.cell(0, 0).text for sh in s.shapes if sh.has_table]
    assert tables == [NEW[STREET]]
    grouped = next(sh for sh in s.shapes if sh.shape_type == 6)
    assert grouped.shapes[0].text_frame.text == NEW[MAIL]
    assert s.notes_slide.notes_text_frame.text == "remind Dana Holt"
    assert out.core_properties.author == "" and "pptx core author" in result.scrubbed  # type: ignore[attr-defined]
    assert any(w.startswith("slide 1 notes") for w in result.changed)  # type: ignore[attr-defined]
    rels = zipfile.ZipFile(dst).read("ppt/slides/_rels/slide1.xml.rels")
    assert f"mailto:{NEW[MAIL]}".encode() in rels and MAIL.encode() not in rels
    shown = read_back(dst)
    assert "Dana Holt" in shown and NEW[STREET] in shown


def test_office_images_lose_gps(tmp_path: Path) -> None:
    import pptx
    from PIL import Image
    from pptx.util import Inches

    photo = tmp_path / "photo.jpg"
    make_jpeg(photo)
    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    slide.shapes.add_picture(str(photo), Inches(1), Inches(1))
    src = tmp_path / "pics.pptx"
    prs.save(src)
    dst, result = rewrite(src)
    media = [n for n in zipfile.ZipFile(dst).namelist() if n.startswith("ppt/media/")]
    assert media
    with Image.open(io.BytesIO(zipfile.ZipFile(dst).read(media[0]))) as im:
        assert 0x8825 not in im.getexif()
    assert any(s.endswith("EXIF GPSInfo") for s in result.scrubbed)  # type: ignore[attr-defined]


@pytest.mark.parametrize("ext", ["docx", "xlsx", "pptx"])
def test_damaged_packages_raise(tmp_path: Path, ext: str) -> None:
    src = tmp_path / f"broken.{ext}"
    src.write_bytes(b"PK\x03\x04 not really a zip at all")
    with pytest.raises(RewriteError, match=rf"broken\.{ext}"):
        rewrite_file(src, tmp_path / f"out.{ext}", EDITOR)
    with pytest.raises(RewriteError, match=rf"broken\.{ext}"):
        texts_of(src)
    assert not (tmp_path / f"out.{ext}").exists()
    empty = tmp_path / f"empty.{ext}"
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("hello.txt", "not an office file")
    with pytest.raises(RewriteError, match=rf"empty\.{ext}.*no "):
        rewrite_file(empty, tmp_path / f"out.{ext}", EDITOR)


def test_zip_bombs_and_unsafe_names_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = make_docx()
    src = tmp_path / "big.docx"
    src.write_bytes(data)
    monkeypatch.setattr(rewrite_office, "MAX_MEMBER", 1000)
    with pytest.raises(RewriteError, match=r"big\.docx.*unpacks"):
        rewrite_file(src, tmp_path / "out.docx", EDITOR)
    monkeypatch.undo()
    evil = tmp_path / "evil.docx"
    with zipfile.ZipFile(io.BytesIO(data)) as zin, zipfile.ZipFile(evil, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info, zin.read(info))
        zout.writestr("../../escape.xml", "<x/>")
    with pytest.raises(RewriteError, match=r"evil\.docx.*unsafe name"):
        rewrite_file(evil, tmp_path / "out.docx", EDITOR)


# -- PDF --------------------------------------------------------------------------------------------------
XMP = f"""<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF
xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/">
<dc:creator><rdf:Seq><rdf:li>{NAME}</rdf:li></rdf:Seq></dc:creator></rdf:Description></rdf:RDF></x:xmpmeta>
<?xpacket end="w"?>"""


def make_pdf(path: Path) -> None:
    from pypdf import PdfReader, PdfWriter
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=(595, 842), invariant=1)
    c.setAuthor(NAME)
    c.setTitle(f"Notes of {NAME}")
    c.setSubject("private")
    c.setFont("Helvetica", 12)
    c.drawString(72, 770, f"Hello {NAME}, call {PHONE}")
    text = c.beginText(72, 700)
    text.setFont("Helvetica", 12)
    text.textLine(STREET)
    text.textOut("priya.raman")  # one address in two strings of one text object
    text.textOut("@example.org")
    c.drawText(text)
    c.addLiteral("BT /F1 12 Tf 72 600 Td [(Pri) 20 (ya) -250 (Raman) 10 ( signed)] TJ ET")
    c.showPage()
    c.drawString(72, 770, "Page two has nothing to hide")
    c.showPage()
    c.save()
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(buf.getvalue())))
    writer.xmp_metadata = XMP.encode()
    with path.open("wb") as fh:
        writer.write(fh)


def test_pdf_text_metadata_and_xmp(tmp_path: Path) -> None:
    import pypdfium2 as pdfium
    from pypdf import PdfReader

    src = tmp_path / "notes.pdf"
    make_pdf(src)
    units = texts_of(src)
    assert TextUnit("pdf /Author", NAME) in units and any(u.where == "pdf XMP" and NAME in u.text for u in units)
    assert any(u.where == "page 1" and "Priya Raman signed" in u.text for u in units)
    dst, result = rewrite(src)
    reader = PdfReader(dst)
    assert "/Author" not in reader.metadata and "/Producer" not in reader.metadata
    assert reader.metadata["/Title"] == "Notes of Dana Holt"
    assert reader.metadata["/CreationDate"] == PdfReader(src).metadata["/CreationDate"]
    assert "/Metadata" not in reader.trailer["/Root"]
    assert {"pdf /Author", "pdf /Producer", "pdf XMP"} <= set(result.scrubbed)  # type: ignore[attr-defined]
    page1 = reader.pages[0].extract_text()
    assert "Hello Dana Holt, call +1 415 555 0199" in page1 and NEW[STREET] in page1 and NEW[MAIL] in page1
    doc = pdfium.PdfDocument(str(dst))
    try:
        text = doc[0].get_textpage().get_text_range()
    finally:
        doc.close()
    assert "Dana Holt" in text and "signed" in text
    # nothing of the old text survives anywhere in the file (old streams, the XMP packet)
    for obj_text in all_pdf_strings(dst):
        assert not any(p in obj_text for p in PLANTED), obj_text[:200]
    shown = read_back(dst)
    assert "Dana Holt" in shown and "Page two" in shown


def all_pdf_strings(path: Path) -> list[str]:
    from pypdf import PdfReader
    from pypdf.generic import StreamObject

    reader = PdfReader(path)
    out = []
    for num in range(1, int(reader.trailer["/Size"])):
        try:
            obj = reader.get_object(num)
        except Exception:
            continue
        if isinstance(obj, StreamObject):
            out.append(obj.get_data().decode("latin-1"))
        out.append(str(obj))
    return out


def test_pdf_damaged_raises(tmp_path: Path) -> None:
    src = tmp_path / "bad.pdf"
    src.write_bytes(b"%PDF-1.4\nthis is not a pdf body\n")
    with pytest.raises(RewriteError, match=r"bad\.pdf"):
        rewrite_file(src, tmp_path / "out.pdf", EDITOR)


# -- images -----------------------------------------------------------------------------------------------
def make_jpeg(path: Path) -> None:
    from PIL import ExifTags, Image

    img = Image.new("RGB", (64, 48))
    img.putdata([(x * 4 % 256, y * 5 % 256, (x * y) % 256) for y in range(48) for x in range(64)])
    exif = Image.Exif()
    exif[ExifTags.Base.Make], exif[ExifTags.Base.Model] = "Apple", "iPhone 12"
    exif[ExifTags.Base.Artist], exif[ExifTags.Base.Copyright] = NAME, f"(c) {NAME}"
    exif[ExifTags.Base.Orientation] = 6
    exif[ExifTags.Base.DateTime] = "2024:10:12 11:02:33"
    exif[ExifTags.Base.ImageDescription] = f"At {STREET}"
    sub = exif.get_ifd(ExifTags.IFD.Exif)
    sub[ExifTags.Base.DateTimeOriginal] = "2024:10:12 11:02:33"
    sub[ExifTags.Base.BodySerialNumber] = "SN-0042"
    gps = exif.get_ifd(ExifTags.IFD.GPSInfo)
    gps.update({1: "N", 2: (37.0, 46.0, 30.0), 3: "W", 4: (122.0, 25.0, 10.0)})
    img.save(path, exif=exif, quality=90, comment=f"shot by {NAME}".encode(), xmp=XMP.encode())


def test_jpeg_metadata_scrubbed_pixels_untouched(tmp_path: Path) -> None:
    from PIL import ExifTags, Image

    src = tmp_path / "photo.jpg"
    make_jpeg(src)
    units = texts_of(src)
    assert TextUnit("EXIF Artist", NAME) in units and any(u.where == "EXIF GPSInfo" for u in units)
    assert any(u.where == "JPEG comment" for u in units) and any(u.where == "XMP" for u in units)
    dst, result = rewrite(src)
    with Image.open(src) as a, Image.open(dst) as b:
        assert a.tobytes() == b.tobytes()
        exif = b.getexif()
        assert ExifTags.IFD.GPSInfo not in exif
        for tag in (ExifTags.Base.Make, ExifTags.Base.Model, ExifTags.Base.Artist, ExifTags.Base.Copyright):
            assert tag not in exif
        assert exif[ExifTags.Base.Orientation] == 6 and exif[ExifTags.Base.DateTime] == "2024:10:12 11:02:33"
        assert exif[ExifTags.Base.ImageDescription] == "At 48 Birch Road"
        sub = exif.get_ifd(ExifTags.IFD.Exif)
        assert sub[ExifTags.Base.DateTimeOriginal] == "2024:10:12 11:02:33"
        assert ExifTags.Base.BodySerialNumber not in sub
        assert "xmp" not in b.info and b.info.get("comment") == b"shot by Dana Holt"
    assert {"EXIF GPSInfo", "EXIF Make", "EXIF Model", "EXIF Artist", "XMP"} <= set(result.scrubbed)  # type: ignore[attr-defined]
    res = perceive_file(dst.parent, dst.name, hash_file=False)
    assert res.status in ("ok", "partial") and res.segments[0].meta.get("taken") == "2024-10-12T11:02:33"
    assert "gps_lat" not in res.segments[0].meta


def test_png_text_chunks(tmp_path: Path) -> None:
    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Author", NAME)
    info.add_text("Description", f"{NAME} at {STREET}")
    info.add_itxt("Comment", f"mail {MAIL}", zip=True)
    src = tmp_path / "pic.png"
    Image.new("RGB", (8, 8), (10, 200, 30)).save(src, pnginfo=info)
    dst, result = rewrite(src)
    with Image.open(dst) as im:
        assert "Author" not in im.text and im.text["Description"] == "Dana Holt at 48 Birch Road"
        assert im.text["Comment"] == f"mail {NEW[MAIL]}"
        assert im.tobytes() == Image.open(src).tobytes()
    assert "PNG text Author" in result.scrubbed  # type: ignore[attr-defined]


def test_webp_exif(tmp_path: Path) -> None:
    from PIL import ExifTags, Image

    exif = Image.Exif()
    exif[ExifTags.Base.Artist] = NAME
    exif[ExifTags.Base.DateTime] = "2024:10:12 11:02:33"
    src = tmp_path / "pic.webp"
    Image.new("RGB", (8, 8), (1, 2, 3)).save(src, exif=exif, lossless=True)
    dst, _ = rewrite(src)
    with Image.open(dst) as im:
        assert ExifTags.Base.Artist not in im.getexif() and im.getexif()[ExifTags.Base.DateTime].startswith("2024")
        assert im.tobytes() == Image.open(src).tobytes()


def test_unknown_formats_copied_with_a_note(tmp_path: Path) -> None:
    src = tmp_path / "song.mp3"
    src.write_bytes(b"ID3\x03\x00" + bytes(range(256)) * 4)
    dst = tmp_path / "out.mp3"
    result = rewrite_file(src, dst, EDITOR)
    assert dst.read_bytes() == src.read_bytes()
    assert result.notes == ("copied as is: no text rewriter for .mp3",) and texts_of(src) == []


@pytest.mark.parametrize("maker", [make_jpeg, make_pdf, lambda p: make_docx(p)])
def test_identity_editor_changes_nothing_in_text(tmp_path: Path, maker: Callable[[Path], object]) -> None:
    """With an editor that edits nothing, the strings of the output are those of the source (metadata aside)."""
    suffix = {make_jpeg: ".jpg", make_pdf: ".pdf"}.get(maker, ".docx")  # type: ignore[call-overload]
    src = tmp_path / f"f{suffix}"
    maker(src)
    dst = tmp_path / f"g{suffix}"
    result = rewrite_file(src, dst, lambda text: [])
    assert result.edits == 0 and result.changed == ()
    scrubbed = set(result.scrubbed)
    kept = [u for u in texts_of(src) if u.where not in scrubbed]
    assert kept == texts_of(dst)


def raw_pdf(objects: list[bytes]) -> bytes:
    """A PDF written by hand: object N is ``objects[N - 1]``, object 1 the catalog."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def stream(data: bytes) -> bytes:
    return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def cid(text: str) -> bytes:
    return b"<" + text.encode("utf-16-be").hex().encode() + b">"


def test_pdf_cid_fonts_through_their_unicode_maps(tmp_path: Path) -> None:
    """Identity-H fonts: re-encoded through the ToUnicode map when it has every new character; left as
    they are, with a note, when it lacks one or when there is no map at all."""
    import pypdfium2 as pdfium

    full = b"begincodespacerange <0000> <FFFF> endcodespacerange 1 beginbfrange <0020> <007E> <0020> endbfrange"
    chars = sorted(set(NAME))
    partial = b"begincodespacerange <0000> <FFFF> endcodespacerange %d beginbfchar " % len(chars) + b" ".join(
        cid(c) + b" " + cid(c) for c in chars) + b" endbfchar"  # fmt: skip
    descendant = b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /Test /CIDSystemInfo << /Registry (Adobe) " \
                 b"/Ordering (Identity) /Supplement 0 >> /FontDescriptor 9 0 R /DW 500 >>"  # fmt: skip
    content = b"BT /A 12 Tf 72 700 Td %s Tj ET BT /B 12 Tf 72 650 Td %s Tj ET BT /C 12 Tf 72 600 Td %s Tj ET" % (
        cid(f"Full {NAME}"), cid(NAME), cid(NAME))  # fmt: skip
    type0 = b"<< /Type /Font /Subtype /Type0 /BaseFont /Test /Encoding /Identity-H /DescendantFonts [8 0 R]"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R "
        b"/Resources << /Font << /A 5 0 R /B 6 0 R /C 7 0 R >> >> >>",
        stream(content),
        type0 + b" /ToUnicode 10 0 R >>",
        type0 + b" /ToUnicode 11 0 R >>",
        type0 + b" >>",
        descendant,
        b"<< /Type /FontDescriptor /FontName /Test /Flags 32 /FontBBox [0 0 1000 1000] /ItalicAngle 0 "
        b"/Ascent 800 /Descent -200 /CapHeight 700 /StemV 80 >>",
        stream(full),
        stream(partial),
    ]
    src = tmp_path / "cid.pdf"
    src.write_bytes(raw_pdf(objects))
    dst = tmp_path / "out.pdf"
    result = rewrite_file(src, dst, EDITOR)
    assert result.changed == ("page 1",)
    assert any("cannot be written in font Test" in n for n in result.notes)
    assert any("font C (without a Unicode map)" in n for n in result.notes)
    page = [u.text for u in texts_of(dst) if u.where == "page 1"]
    assert page == ["Full Dana Holt", NAME]  # the map lacking D, H, o, l, t kept the old text
    doc = pdfium.PdfDocument(str(dst))
    try:
        assert "Full Dana Holt" in doc[0].get_textpage().get_text_range()
    finally:
        doc.close()
