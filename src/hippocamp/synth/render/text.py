"""Text renderers: notes (MD/TXT), e-mail (EML), calendars (ICS), app exports (JSON) and tables (CSV).

Locators are 1-based line ranges of the written file (``{"unit": "line", "position": "4-7"}``), the
unit the validator measures for text files. Files are UTF-8 with ``\\n`` line ends except ICS, which
RFC 5545 writes with CRLF (line numbers count either the same way).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import format_datetime
from pathlib import Path
from typing import Any

from hippocamp.synth.render import Line, Placements, merge_placed

__all__ = ["CalEvent", "line_locator", "render_csv", "render_eml", "render_ics", "render_json", "render_text"]


def line_locator(first: int, last: int) -> dict[str, Any]:
    """The JSON line locator for lines ``first..last`` (1-based, inclusive)."""
    return {"unit": "line", "position": first if first == last else f"{first}-{last}"}


def _place_lines(placements: Placements, keyed: Iterable[tuple[int, str | None, str]]) -> None:
    """Group consecutive lines by key into line ranges: ``keyed`` yields (line number, key, text)."""
    spans: dict[str, list[tuple[int, str]]] = {}
    for number, key, text in keyed:
        if key is not None:
            spans.setdefault(key, []).append((number, text))
    for key, items in spans.items():
        numbers = [n for n, _ in items]
        if numbers != list(range(numbers[0], numbers[-1] + 1)):
            raise ValueError(f"key {key!r} marks lines that are not consecutive: {numbers}")
        merge_placed(placements, key, line_locator(numbers[0], numbers[-1]), " ".join(t.strip() for _, t in items))


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def render_text(path: Path, lines: list[Line]) -> Placements:
    """A note: each ``Line`` is one line of the file, verbatim (Markdown markup is the caller's)."""
    for i, line in enumerate(lines):
        if "\n" in line.text:
            raise ValueError(f"{path.name}: line {i + 1} contains a line break")
    _write(Path(path), ("\n".join(line.text for line in lines) + "\n").encode("utf-8"))
    placements: Placements = {}
    _place_lines(placements, ((i + 1, line.key, line.text) for i, line in enumerate(lines)))
    return placements


def render_eml(
    path: Path,
    *,
    sender: str,
    to: list[str],
    sent: datetime,
    subject: str,
    body: list[Line],
    message_id: str,
    in_reply_to: str | None = None,
    cc: list[str] | None = None,
    attachments: list[tuple[str, str]] | None = None,
) -> Placements:
    """An RFC 5322 message with a UTF-8 body (8bit, so body lines appear verbatim in the file).

    ``attachments`` are ``(file name, path of a file already rendered)``; the body lines' locators
    are their line numbers in the written file.
    """
    msg = EmailMessage(policy=SMTP.clone(linesep="\n", max_line_length=998))
    msg["From"] = sender
    msg["To"] = ", ".join(to)
    if cc:
        msg["Cc"] = ", ".join(cc)
    msg["Date"] = format_datetime(sent)
    msg["Subject"] = subject
    msg["Message-ID"] = message_id
    if in_reply_to:
        msg["In-Reply-To"] = in_reply_to
        msg["References"] = in_reply_to
    msg.set_content("\n".join(line.text for line in body) + "\n", charset="utf-8", cte="8bit")
    for name, source in attachments or []:
        data = Path(source).read_bytes()
        maintype, subtype = _mime(name)
        msg.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    if msg.is_multipart():
        msg.set_boundary("=_" + hashlib.sha256(message_id.encode()).hexdigest()[:24])
    data = msg.as_bytes()
    _write(Path(path), data)
    file_lines = data.decode("utf-8", errors="replace").split("\n")
    start = _body_start(file_lines, body)
    placements: Placements = {}
    _place_lines(placements, ((start + i, line.key, line.text) for i, line in enumerate(body)))
    return placements


def _body_start(file_lines: list[str], body: list[Line]) -> int:
    """The 1-based line number where ``body`` begins in the written message."""
    first = body[0].text if body else ""
    for i, text in enumerate(file_lines):
        # the body follows the blank line after the (part) headers
        if (
            text == first
            and i > 0
            and file_lines[i - 1] == ""
            and all(i + j < len(file_lines) and file_lines[i + j] == line.text for j, line in enumerate(body))
        ):
            return i + 1
    raise ValueError("the message body was re-encoded; cannot locate its lines")


def _mime(name: str) -> tuple[str, str]:
    ext = name.rsplit(".", 1)[-1].lower()
    return {
        "pdf": ("application", "pdf"),
        "jpg": ("image", "jpeg"),
        "jpeg": ("image", "jpeg"),
        "png": ("image", "png"),
        "docx": ("application", "vnd.openxmlformats-officedocument.wordprocessingml.document"),
        "xlsx": ("application", "vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
        "ics": ("text", "calendar"),
    }.get(ext, ("application", "octet-stream"))


@dataclass(frozen=True)
class CalEvent:
    """One VEVENT. ``rrule`` is an RFC 5545 rule (``FREQ=WEEKLY;BYDAY=TU,TH;COUNT=12``)."""

    uid: str
    summary: str
    start: datetime
    end: datetime
    location: str = ""
    description: str = ""
    rrule: str = ""
    attendees: list[str] = field(default_factory=list)
    key: str | None = None


def _ics_time(value: datetime | date) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y%m%dT%H%M%S")
    return value.strftime("%Y%m%d")


def _ics_text(value: str) -> str:
    return value.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,").replace("\n", "\\n")


def render_ics(path: Path, events: list[CalEvent], *, name: str = "Calendar", stamp: datetime) -> Placements:
    """A calendar; each keyed event's locator is the line range of its VEVENT block."""
    lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//hippocamp synth//EN", f"X-WR-CALNAME:{_ics_text(name)}"]
    keyed: list[tuple[int, str | None, str]] = []
    for ev in events:
        block = [
            "BEGIN:VEVENT",
            f"UID:{ev.uid}",
            f"DTSTAMP:{_ics_time(stamp)}Z",
            f"DTSTART:{_ics_time(ev.start)}",
            f"DTEND:{_ics_time(ev.end)}",
        ]
        if ev.rrule:
            block.append(f"RRULE:{ev.rrule}")
        block.append(f"SUMMARY:{_ics_text(ev.summary)}")
        if ev.location:
            block.append(f"LOCATION:{_ics_text(ev.location)}")
        if ev.description:
            block.append(f"DESCRIPTION:{_ics_text(ev.description)}")
        block += [f"ATTENDEE;CN={_ics_text(a)}:mailto:{_slug(a)}@example.org" for a in ev.attendees]
        block.append("END:VEVENT")
        first = len(lines) + 1
        lines += block
        text = f"{ev.summary}, {ev.start:%Y-%m-%d %H:%M}-{ev.end:%H:%M}" + (f", {ev.location}" if ev.location else "")
        if ev.rrule:
            text += f", repeats {ev.rrule}"
        keyed += [(first + i, ev.key, text if i == 0 else "") for i in range(len(block))]
    lines.append("END:VCALENDAR")
    _write(Path(path), ("\r\n".join(lines) + "\r\n").encode("utf-8"))
    placements: Placements = {}
    _place_lines(placements, keyed)
    return {k: type(v)(v.locator, v.text.strip()) for k, v in placements.items()}


def _slug(name: str) -> str:
    return ".".join(part.lower() for part in name.split() if part.isalnum()) or "guest"


def render_json(path: Path, items: list[dict[str, Any]], *, header: dict[str, Any] | None = None,
                items_key: str = "items", keys: dict[str, list[int]] | None = None,
                text_of: str | None = None) -> Placements:  # fmt: skip
    """An app export: ``{**header, items_key: [...]}`` pretty-printed with one item per block.

    ``keys`` maps a key to the indexes of consecutive items it marks; its locator is their line
    range and its text the items' ``text_of`` field (or their JSON).
    """
    out = ["{"]
    for name, value in (header or {}).items():
        out.append(f"  {json.dumps(name)}: {json.dumps(value, ensure_ascii=False)},")
    out.append(f"  {json.dumps(items_key)}: [")
    spans: list[tuple[int, int]] = []
    for i, item in enumerate(items):
        block = json.dumps(item, ensure_ascii=False, indent=2).split("\n")
        block = ["    " + b for b in block]
        if i < len(items) - 1:
            block[-1] += ","
        spans.append((len(out) + 1, len(out) + len(block)))
        out += block
    out += ["  ]", "}"]
    _write(Path(path), ("\n".join(out) + "\n").encode("utf-8"))
    placements: Placements = {}
    for key, indexes in (keys or {}).items():
        if indexes != list(range(indexes[0], indexes[-1] + 1)):
            raise ValueError(f"{Path(path).name}: key {key!r} marks items that are not consecutive: {indexes}")
        first, last = spans[indexes[0]][0], spans[indexes[-1]][1]
        texts = [str(items[i].get(text_of, "")) if text_of else json.dumps(items[i]) for i in indexes]
        merge_placed(placements, key, line_locator(first, last), " ".join(texts))
    return placements


def render_csv(path: Path, header: list[str], rows: list[list[Any]], *,
               keys: dict[str, list[int]] | None = None) -> Placements:  # fmt: skip
    """A comma-separated table (header on line 1); ``keys`` map to consecutive row indexes."""
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    _write(Path(path), buf.getvalue().encode("utf-8"))
    lines = buf.getvalue().split("\n")
    placements: Placements = {}
    for key, indexes in (keys or {}).items():
        if indexes != list(range(indexes[0], indexes[-1] + 1)):
            raise ValueError(f"{Path(path).name}: key {key!r} marks rows that are not consecutive: {indexes}")
        first, last = indexes[0] + 2, indexes[-1] + 2
        merge_placed(placements, key, line_locator(first, last), " ".join(lines[first - 1 : last]))
    return placements
