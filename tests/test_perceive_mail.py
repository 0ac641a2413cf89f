"""Mail readers end to end: real .eml and .mbox files built with the standard library, read by `perceive_file`."""

from __future__ import annotations

import io
import mailbox
from email.message import EmailMessage
from pathlib import Path

import pytest

from hippocamp.perceive import perceive_file, reader_for
from hippocamp.perceive.mail import chunk_paragraphs, html_to_text
from hippocamp.schema.locators import ItemLocator, LineLocator, PageLocator

PAGE_1 = "Revenue rose 12 percent in the third quarter"
PAGE_2 = "Hiring plan: two engineers in 2025"


def _pdf_bytes(pages: list[str]) -> bytes:
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=(595, 842), invariant=1)
    for text in pages:
        c.drawString(72, 770, text)
        c.showPage()
    c.save()
    return buf.getvalue()


def _pdf_readable() -> bool:
    return reader_for("pdf") is not None


def _report_mail(**headers: str) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "Ann Smith <ann@example.com>"
    msg["To"] = "Bob Jones <bob@example.com>, carol@example.com"
    msg["Cc"] = "Dan <dan@example.com>"
    msg["Date"] = "Tue, 03 Sep 2024 09:15:00 +0200"
    msg["Subject"] = "Quarterly report — draft"
    msg["Message-ID"] = "<q3-report@example.com>"
    for key, value in headers.items():
        del msg[key]
        msg[key] = value
    msg.set_content("Hi Bob,\n\nThe draft report is attached.\nPlease check page 2.\n\nAnn\n")
    msg.add_alternative("<html><body><p>Hi Bob,</p><p>HTML version</p></body></html>", subtype="html")
    msg.add_attachment(_pdf_bytes([PAGE_1, PAGE_2]), maintype="application", subtype="pdf", filename="report.pdf")
    msg.add_attachment("Budget meeting moved to Friday.\n", filename="notes.txt")
    return msg


def _write(root: Path, rel: str, data: bytes) -> str:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return rel


def _attachment_segments(segments, name):  # type: ignore[no-untyped-def]
    return [s for s in segments if s.meta.get("attachment") == name]


# -- .eml ----------------------------------------------------------------------------------------
def test_eml_header_body_and_attachments(tmp_path: Path) -> None:
    rel = _write(tmp_path, "mail/report.eml", _report_mail().as_bytes())
    result = perceive_file(tmp_path, rel)
    assert result.reader == "email"
    assert result.status == "ok", (result.reason, result.notes)

    header, body = result.segments[0], result.segments[1]
    assert header.text == (
        "From: Ann Smith <ann@example.com>\n"
        "To: Bob Jones <bob@example.com>, carol@example.com\n"
        "Cc: Dan <dan@example.com>\n"
        "Date: Tue, 03 Sep 2024 09:15:00 +0200\n"
        "Subject: Quarterly report — draft\n"
        "Attachments: report.pdf, notes.txt"
    )
    assert header.locator is None
    assert header.within == []
    assert header.path == "mail/report.eml"
    assert header.meta == {
        "from": "Ann Smith <ann@example.com>",
        "to": ["Bob Jones <bob@example.com>", "carol@example.com"],
        "cc": ["Dan <dan@example.com>"],
        "date": "2024-09-03T09:15:00+02:00",
        "subject": "Quarterly report — draft",
        "message_id": "q3-report@example.com",
        "attachments": ["report.pdf", "notes.txt"],
    }
    # text/plain is preferred over the HTML alternative
    assert body.text == "Hi Bob,\n\nThe draft report is attached.\nPlease check page 2.\n\nAnn"
    assert body.locator == LineLocator(unit="paragraph", line=1, line_end=3)
    assert body.within == []
    assert body.meta == {"subject": "Quarterly report — draft", "message_id": "q3-report@example.com"}
    assert not any("HTML version" in s.text for s in result.segments)

    notes = _attachment_segments(result.segments, "notes.txt")
    if reader_for("txt") is not None:
        assert [s.text for s in notes] == ["Budget meeting moved to Friday."]
        assert notes[0].within == [ItemLocator(unit="attachment", id="notes.txt")]
        assert notes[0].path == "mail/report.eml"

    if _pdf_readable():
        pages = _attachment_segments(result.segments, "report.pdf")
        assert [s.text for s in pages] == [PAGE_1, PAGE_2]
        assert pages[1].locator == PageLocator(system_page=2)
        assert pages[1].within == [ItemLocator(unit="attachment", id="report.pdf")]
        assert pages[1].path == "mail/report.eml"
    assert [s.ordinal for s in result.segments] == list(range(len(result.segments)))


def test_eml_html_only_body_is_visible_text(tmp_path: Path) -> None:
    msg = EmailMessage()
    msg["From"] = "news@example.com"
    msg["Subject"] = "Newsletter"
    msg.set_content(
        "<html><head><title>x</title><style>p {color: red}</style><script>var a = 1;</script></head>"
        "<body><h1>Big&nbsp;news</h1><p>Tickets for <b>Lowlands</b> &amp; more.</p>"
        "<ul><li>Friday</li><li>Saturday</li></ul></body></html>",
        subtype="html",
    )
    rel = _write(tmp_path, "news.eml", msg.as_bytes())
    result = perceive_file(tmp_path, rel)
    assert result.status == "ok", result.notes
    assert [s.text for s in result.segments] == [
        "From: news@example.com\nSubject: Newsletter",
        "Big news\n\nTickets for Lowlands & more.\n\n- Friday\n- Saturday",
    ]
    assert result.segments[1].locator == LineLocator(unit="paragraph", line=1, line_end=3)


def test_eml_inline_image_unnamed_parts_and_forwarded_message(tmp_path: Path) -> None:
    inner = EmailMessage()
    inner["From"] = "carol@example.com"
    inner["Subject"] = "Original question"
    inner["Message-ID"] = "<orig@example.com>"
    inner.set_content("Can we meet on Monday?\n")

    msg = EmailMessage()
    msg["From"] = "bob@example.com"
    msg["Subject"] = "Fwd: Original question"
    msg.set_content("See below.\n")
    msg.add_alternative('<p>See below.</p><img src="cid:logo">', subtype="html")
    html_part = msg.get_payload()[1]
    html_part.add_related(b"\x89PNG\r\n\x1a\n not really", maintype="image", subtype="png", cid="<logo>")
    msg.add_attachment(inner)  # message/rfc822 without a filename
    rel = _write(tmp_path, "fwd.eml", msg.as_bytes())

    result = perceive_file(tmp_path, rel)
    header = result.segments[0]
    # the inline image (in the HTML alternative) and the forwarded mail get names from their types
    assert header.meta["attachments"] == ["attachment-1.png", "attachment-2.eml"]
    assert header.text.endswith("Attachments: attachment-1.png, attachment-2.eml")
    assert result.segments[1].text == "See below."

    forwarded = _attachment_segments(result.segments, "attachment-2.eml")
    assert [s.text for s in forwarded] == [
        "From: carol@example.com\nSubject: Original question",
        "Can we meet on Monday?",
    ]
    assert forwarded[0].meta["message_id"] == "orig@example.com"
    assert forwarded[1].within == [ItemLocator(unit="attachment", id="attachment-2.eml")]
    assert forwarded[1].locator == LineLocator(unit="paragraph", line=1)
    for seg in _attachment_segments(result.segments, "attachment-1.png"):
        assert seg.within == [ItemLocator(unit="attachment", id="attachment-1.png")]


def test_eml_long_body_is_chunked_by_paragraph(tmp_path: Path) -> None:
    paragraphs = [f"Paragraph {i}: " + " ".join(["word"] * 60) for i in range(1, 13)]  # ~315 chars each
    msg = EmailMessage()
    msg["From"] = "a@example.com"
    msg["Subject"] = "Long"
    msg.set_content("\n\n".join(paragraphs) + "\n")
    result = perceive_file(tmp_path, _write(tmp_path, "long.eml", msg.as_bytes()))
    body = result.segments[1:]
    assert [s.locator for s in body] == [
        LineLocator(unit="paragraph", line=1, line_end=4),
        LineLocator(unit="paragraph", line=5, line_end=8),
        LineLocator(unit="paragraph", line=9, line_end=12),
    ]
    assert body[0].text == "\n\n".join(paragraphs[:4])
    assert all(len(s.text) <= 1500 for s in body)


def test_mislabelled_and_unknown_charsets_fall_back_with_a_note(tmp_path: Path) -> None:
    raw = (
        b"From: Jos\xc3\xa9 <jose@example.com>\r\n"
        b"Subject: =?utf-8?q?Caf=C3=A9?=\r\n"
        b"Date: Mon, 2 Sep 2024 10:00:00 +0000\r\n"
        b"Content-Type: text/plain; charset=us-ascii\r\n"
        b"Content-Transfer-Encoding: 8bit\r\n"
        b"\r\n"
        b"Cr\xc3\xa8me br\xc3\xbbl\xc3\xa9e for dessert.\r\n"
    )
    result = perceive_file(tmp_path, _write(tmp_path, "wrong.eml", raw))
    assert result.status == "partial"
    assert result.segments[0].meta["subject"] == "Café"
    assert result.segments[0].meta["from"] == "José <jose@example.com>"
    assert result.segments[1].text == "Crème brûlée for dessert."
    assert result.notes == ["message: text is not valid 'us-ascii'; decoded as utf-8"]

    cp1252 = raw.replace(b"charset=us-ascii", b"charset=x-no-such-charset").replace(
        b"Cr\xc3\xa8me br\xc3\xbbl\xc3\xa9e", "Crème brûlée".encode("cp1252")
    )
    result = perceive_file(tmp_path, _write(tmp_path, "unknown.eml", cp1252))
    assert result.segments[1].text == "Crème brûlée for dessert."
    assert result.notes == ["message: unknown charset 'x-no-such-charset'; decoded as cp1252"]


def test_not_mail_is_a_read_error(tmp_path: Path) -> None:
    result = perceive_file(tmp_path, _write(tmp_path, "notes.eml", b"Shopping list\n\n- eggs\n- milk\n"))
    assert result.status == "failed"
    assert result.reason == "not an email message (no mail headers)"
    result = perceive_file(tmp_path, _write(tmp_path, "fake.eml", _pdf_bytes(["not mail"])))
    assert result.status == "failed"


# -- .mbox ---------------------------------------------------------------------------------------
def _mbox(path: Path, messages: list[EmailMessage]) -> None:
    box = mailbox.mbox(str(path))
    try:
        for msg in messages:
            box.add(msg)
        box.flush()
    finally:
        box.close()


def _simple(n: int, body: str) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = f"sender{n}@example.com"
    msg["To"] = "me@example.com"
    msg["Subject"] = f"Message {n}"
    msg["Message-ID"] = f"<m{n}@example.com>"
    msg.set_content(body)
    return msg


def test_mbox_messages_are_items_and_attachments_nest_inside(tmp_path: Path) -> None:
    second = _report_mail(Subject="Report for review")
    _mbox(tmp_path / "inbox.mbox", [_simple(1, "First body.\nFrom the top.\n"), second, _simple(3, "Third body.\n")])
    result = perceive_file(tmp_path, "inbox.mbox")
    assert result.reader == "mbox"
    assert result.status == "ok", result.notes

    email = [
        ItemLocator(unit="email", index=1, id="m1@example.com"),
        ItemLocator(unit="email", index=2, id="q3-report@example.com"),
        ItemLocator(unit="email", index=3, id="m3@example.com"),
    ]
    headers = [s for s in result.segments if s.locator is None]
    assert [s.within for s in headers] == [[email[0]], [email[1]], [email[2]]]
    assert headers[0].text == "From: sender1@example.com\nTo: me@example.com\nSubject: Message 1"
    assert headers[1].meta["subject"] == "Report for review"
    assert headers[1].meta["attachments"] == ["report.pdf", "notes.txt"]
    assert headers[2].meta["attachments"] == []

    bodies = [s for s in result.segments if isinstance(s.locator, LineLocator) and "attachment" not in s.meta]
    # the ">From " quoting the mbox writer adds is undone
    assert [(s.text, s.within) for s in bodies] == [
        ("First body.\nFrom the top.", [email[0]]),
        ("Hi Bob,\n\nThe draft report is attached.\nPlease check page 2.\n\nAnn", [email[1]]),
        ("Third body.", [email[2]]),
    ]
    notes = _attachment_segments(result.segments, "notes.txt")
    for seg in notes:
        assert seg.within == [email[1], ItemLocator(unit="attachment", id="notes.txt")]
    if reader_for("txt") is not None:
        assert [s.text for s in notes] == ["Budget meeting moved to Friday."]


def test_mbox_pdf_attachment_pages_are_located_inside_the_message(tmp_path: Path) -> None:
    if not _pdf_readable():
        pytest.skip("no PDF reader registered yet")
    _mbox(tmp_path / "inbox.mbox", [_simple(1, "One.\n"), _report_mail(), _simple(3, "Three.\n")])
    result = perceive_file(tmp_path, "inbox.mbox")
    pages = _attachment_segments(result.segments, "report.pdf")
    assert [s.text for s in pages] == [PAGE_1, PAGE_2]
    page2 = pages[1]
    assert page2.within == [
        ItemLocator(unit="email", index=2, id="q3-report@example.com"),
        ItemLocator(unit="attachment", id="report.pdf"),
    ]
    assert page2.locator == PageLocator(system_page=2)
    assert page2.path == "inbox.mbox"
    assert (
        page2.where()
        == "inbox.mbox › email id=q3-report@example.com, index=2 › attachment id=report.pdf › page system_page=2"
    )
    dumped = page2.model_dump(mode="json")
    assert dumped["within"] == [
        {"unit": "email", "position": {"id": "q3-report@example.com", "index": 2}},
        {"unit": "attachment", "position": {"id": "report.pdf"}},
    ]


def test_truncated_mbox_keeps_what_parses(tmp_path: Path) -> None:
    _mbox(tmp_path / "full.mbox", [_simple(1, "Intact message.\n"), _report_mail()])
    data = (tmp_path / "full.mbox").read_bytes()
    cut = data[: data.index(b'filename="report.pdf"') + 200]  # stops inside the PDF's base64
    result = perceive_file(tmp_path, _write(tmp_path, "cut.mbox", cut))
    assert result.status == "partial"
    texts = [s.text for s in result.segments]
    assert texts[0] == "From: sender1@example.com\nTo: me@example.com\nSubject: Message 1"
    assert texts[1] == "Intact message."
    assert texts[2].startswith("From: Ann Smith <ann@example.com>\n")
    assert "Hi Bob,\n\nThe draft report is attached.\nPlease check page 2.\n\nAnn" in texts
    assert "message 2: damaged (CloseBoundaryNotFoundDefect); read what could be parsed" in result.notes


def test_not_an_mbox_is_a_read_error(tmp_path: Path) -> None:
    result = perceive_file(tmp_path, _write(tmp_path, "x.mbox", b"just some text\nwithout any From line\n"))
    assert result.status == "failed"
    assert result.reason == "not an mbox file (no 'From ' line starting a message)"


def test_mbox_entry_without_headers_is_skipped_with_a_note(tmp_path: Path) -> None:
    _mbox(tmp_path / "a.mbox", [_simple(1, "Fine.\n")])
    data = (tmp_path / "a.mbox").read_bytes() + b"\nFrom garbage Mon Jan  1 00:00:00 2024\n\x00\x01binary junk\n"
    result = perceive_file(tmp_path, _write(tmp_path, "b.mbox", data))
    assert result.status == "partial"
    assert [s.text for s in result.segments] == [
        "From: sender1@example.com\nTo: me@example.com\nSubject: Message 1",
        "Fine.",
    ]
    assert result.notes == ["message 2: no mail headers (truncated or not mail): skipped"]


# -- helpers -------------------------------------------------------------------------------------
def test_chunk_paragraphs_splits_an_overlong_paragraph() -> None:
    text = "Short one.\n\n" + " ".join(["lorem"] * 400) + "\n\nTail."
    chunks = chunk_paragraphs(text, 1000)
    assert [(first, last) for _t, first, last in chunks] == [(1, 1), (2, 2), (2, 2), (2, 2), (3, 3)]
    assert all(len(t) <= 1000 for t, _f, _l in chunks)
    assert " ".join(t for t, first, _l in chunks if first == 2) == " ".join(["lorem"] * 400)


def test_html_to_text_drops_hidden_parts() -> None:
    assert html_to_text("<style>a{}</style><div>One<br>Two</div><script>x()</script><p>Three &lt;3</p>") == (
        "One\nTwo\n\nThree <3"
    )


def test_mbox_without_blank_lines_between_messages(tmp_path: Path) -> None:
    data = (
        b"preamble junk\n"
        b"From a@example.com Mon Sep  2 10:00:00 2024\n"
        b"From: a@example.com\nSubject: One\n\nFirst.\n"
        b"From b@example.com Tue Sep  3 11:00:00 2024\n"
        b"From: b@example.com\nSubject: Two\n\nSecond.\n"
    )
    result = perceive_file(tmp_path, _write(tmp_path, "tight.mbox", data))
    assert [s.text for s in result.segments] == [
        "From: a@example.com\nSubject: One",
        "First.",
        "From: b@example.com\nSubject: Two",
        "Second.",
    ]
    assert result.segments[3].within == [ItemLocator(unit="email", index=2)]
    assert result.notes == ["text before the first message skipped"]


def test_mbox_of_no_mail_is_a_read_error(tmp_path: Path) -> None:
    result = perceive_file(tmp_path, _write(tmp_path, "essay.mbox", b"From my point of view\nthis is an essay.\n"))
    assert result.status == "failed"
    assert result.reason == "not an mbox file (no message has mail headers)"


def test_eml_with_a_from_line_and_a_calendar_invitation(tmp_path: Path) -> None:
    invite = (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\nUID:lunch-7\r\n"
        "SUMMARY:Team lunch\r\nDTSTART:20240906T110000Z\r\nDTEND:20240906T120000Z\r\n"
        "LOCATION:Fenix Food Factory\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    msg = EmailMessage()
    msg["From"] = "ann@example.com"
    msg["Subject"] = "Invitation: Team lunch"
    msg.set_content("You are invited.\n")
    msg.add_alternative(invite, subtype="calendar", params={"method": "REQUEST"})
    data = b"From ann@example.com Mon Sep  2 10:00:00 2024\n" + msg.as_bytes()
    result = perceive_file(tmp_path, _write(tmp_path, "invite.eml", data))
    assert result.status == "ok", result.notes
    assert result.segments[0].meta["attachments"] == ["attachment-1.ics"]
    assert result.segments[1].text == "You are invited."
    event = result.segments[2]
    assert event.text == "Team lunch — Fri 2024-09-06 11:00–12:00 (UTC) at Fenix Food Factory"
    assert event.locator == ItemLocator(unit="event", id="lunch-7", at="2024-09-06T11:00:00+00:00")
    assert event.within == [ItemLocator(unit="attachment", id="attachment-1.ics")]
