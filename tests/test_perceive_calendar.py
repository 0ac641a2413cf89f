"""Calendar reader end to end: hand-written .ics files read by `perceive_file`."""

from __future__ import annotations

import time
from pathlib import Path

from hippocamp.perceive import PerceiveOptions, perceive_file
from hippocamp.schema.locators import ItemLocator

VTIMEZONE = """BEGIN:VTIMEZONE
TZID:Europe/Amsterdam
BEGIN:DAYLIGHT
TZOFFSETFROM:+0100
TZOFFSETTO:+0200
TZNAME:CEST
DTSTART:19700329T020000
RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU
END:DAYLIGHT
BEGIN:STANDARD
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
TZNAME:CET
DTSTART:19701025T030000
RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU
END:STANDARD
END:VTIMEZONE
"""

GYM = """BEGIN:VEVENT
UID:gym-1@example.com
DTSTAMP:20240801T000000Z
SUMMARY:Gym - FitHub Blaak
DTSTART;TZID=Europe/Amsterdam:20240903T070000
DTEND;TZID=Europe/Amsterdam:20240903T080000
RRULE:FREQ=WEEKLY;BYDAY=TU,TH;UNTIL=20240919T235959Z
EXDATE;TZID=Europe/Amsterdam:20240905T070000
LOCATION:FitHub Blaak\\, Rotterdam
ATTENDEE;CN=Ann Smith;ROLE=REQ-PARTICIPANT:mailto:ann@example.com
ATTENDEE:mailto:bob@example.com
ORGANIZER;CN=Sam:mailto:sam@example.com
END:VEVENT
BEGIN:VEVENT
UID:gym-1@example.com
DTSTAMP:20240801T000000Z
RECURRENCE-ID;TZID=Europe/Amsterdam:20240912T070000
SUMMARY:Gym - FitHub Blaak (evening)
DTSTART;TZID=Europe/Amsterdam:20240912T183000
DTEND;TZID=Europe/Amsterdam:20240912T193000
LOCATION:FitHub Blaak\\, Rotterdam
END:VEVENT
"""

OTHERS = """BEGIN:VEVENT
UID:holiday-1
DTSTAMP:20240801T000000Z
SUMMARY:Christmas trip to Maastricht
DTSTART;VALUE=DATE:20241220
DTEND;VALUE=DATE:20241223
DESCRIPTION:Train at 9:12 from Rotterdam Centraal.\\nHotel booked.
END:VEVENT
BEGIN:VEVENT
UID:xmas
DTSTAMP:20240801T000000Z
SUMMARY:Christmas dinner
DTSTART;VALUE=DATE:20241225
END:VEVENT
BEGIN:VEVENT
UID:call-1
DTSTAMP:20240801T000000Z
SUMMARY:Call with the bank
DTSTART:20240910T120000Z
DURATION:PT1H30M
STATUS:CANCELLED
END:VEVENT
BEGIN:VEVENT
UID:dentist
DTSTAMP:20240801T000000Z
SUMMARY:Dentist
DTSTART:20240911T090000
END:VEVENT
BEGIN:VTODO
UID:todo-1
DTSTAMP:20240801T000000Z
SUMMARY:Renew passport
DUE;VALUE=DATE:20240915
STATUS:NEEDS-ACTION
END:VTODO
"""


def _calendar(*bodies: str, name: str = "Personal") -> bytes:
    text = f"BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//hippocamp//tests//EN\nX-WR-CALNAME:{name}\n"
    text += VTIMEZONE + "".join(bodies) + "END:VCALENDAR\n"
    return text.replace("\n", "\r\n").encode("utf-8")


def _write(root: Path, rel: str, data: bytes) -> str:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(data)
    return rel


def test_recurring_event_expanded_with_exdate_and_moved_occurrence(tmp_path: Path) -> None:
    rel = _write(tmp_path, "cal/personal.ics", _calendar(GYM))
    result = perceive_file(tmp_path, rel)
    assert result.reader == "ics"
    assert result.status == "ok", (result.reason, result.notes)
    tail = (
        " at FitHub Blaak, Rotterdam; attendees: Ann Smith <ann@example.com>, bob@example.com; "
        "organizer: Sam <sam@example.com>; repeats weekly on TU,TH until 2024-09-19"
    )
    gym = "Gym - FitHub Blaak"
    assert [s.text for s in result.segments] == [
        f"{gym} — Tue 2024-09-03 07:00–08:00 (Europe/Amsterdam){tail}",
        # 2024-09-05 is an EXDATE
        f"{gym} — Tue 2024-09-10 07:00–08:00 (Europe/Amsterdam){tail}",
        # the 12th was moved to the evening (RECURRENCE-ID override, no attendees of its own)
        f"{gym} (evening) — Thu 2024-09-12 18:30–19:30 (Europe/Amsterdam) at FitHub Blaak, Rotterdam; "
        "repeats weekly on TU,TH until 2024-09-19",
        f"{gym} — Tue 2024-09-17 07:00–08:00 (Europe/Amsterdam){tail}",
        f"{gym} — Thu 2024-09-19 07:00–08:00 (Europe/Amsterdam){tail}",
    ]
    first = result.segments[0]
    assert first.locator == ItemLocator(unit="event", id="gym-1@example.com", at="2024-09-03T07:00:00+02:00")
    assert first.within == []
    assert first.path == "cal/personal.ics"
    assert first.meta == {
        "uid": "gym-1@example.com",
        "summary": gym,
        "start": "2024-09-03T07:00:00+02:00",
        "end": "2024-09-03T08:00:00+02:00",
        "all_day": False,
        "tz": "Europe/Amsterdam",
        "location": "FitHub Blaak, Rotterdam",
        "attendees": ["Ann Smith <ann@example.com>", "bob@example.com"],
        "organizer": "Sam <sam@example.com>",
        "rrule": "FREQ=WEEKLY;UNTIL=20240919T235959Z;BYDAY=TU,TH",
        "recurring": True,
        "calendar": "Personal",
    }
    moved = result.segments[2]
    assert moved.locator == ItemLocator(unit="event", id="gym-1@example.com", at="2024-09-12T18:30:00+02:00")
    assert moved.meta["recurring"] is True
    assert [s.locator.dump() for s in result.segments][-1] == {
        "unit": "event",
        "position": {"id": "gym-1@example.com", "at": "2024-09-19T07:00:00+02:00"},
    }


def test_all_day_utc_floating_and_open_ended_events_and_todos(tmp_path: Path) -> None:
    result = perceive_file(tmp_path, _write(tmp_path, "other.ical", _calendar(OTHERS, name="Home")))
    assert result.status == "ok", result.notes
    texts = [s.text for s in result.segments]
    assert texts == [
        "Christmas trip to Maastricht — Fri 2024-12-20 – Sun 2024-12-22 (all day)\n"
        "Train at 9:12 from Rotterdam Centraal.\nHotel booked.",
        "Christmas dinner — Wed 2024-12-25 (all day)",
        "Call with the bank (cancelled) — Tue 2024-09-10 12:00–13:30 (UTC)",
        "Dentist — Wed 2024-09-11 09:00",
        "To-do: Renew passport — due Sun 2024-09-15 (all day) [needs-action]",
    ]
    trip, dinner, call, dentist, todo = result.segments
    assert trip.meta == {
        "uid": "holiday-1",
        "summary": "Christmas trip to Maastricht",
        "start": "2024-12-20",
        "end": "2024-12-23",
        "all_day": True,
        "attendees": [],
        "recurring": False,
        "calendar": "Home",
    }
    assert trip.locator == ItemLocator(unit="event", id="holiday-1", at="2024-12-20")
    assert "end" not in dinner.meta and dinner.meta["all_day"] is True
    # DURATION gives the end; UTC is named
    assert (call.meta["start"], call.meta["end"], call.meta["tz"]) == (
        "2024-09-10T12:00:00+00:00",
        "2024-09-10T13:30:00+00:00",
        "UTC",
    )
    assert call.meta["status"] == "CANCELLED"
    # floating time (no zone), no DTEND nor DURATION: no end
    assert dentist.meta["start"] == "2024-09-11T09:00:00"
    assert "end" not in dentist.meta and "tz" not in dentist.meta
    assert dentist.locator == ItemLocator(unit="event", id="dentist", at="2024-09-11T09:00:00")
    assert todo.locator == ItemLocator(unit="item", id="todo-1", at="2024-09-15")
    assert todo.meta["kind"] == "todo" and todo.meta["due"] == "2024-09-15"


def test_expansion_window_and_cap(tmp_path: Path) -> None:
    daily = """BEGIN:VEVENT
UID:standup
DTSTAMP:20240801T000000Z
SUMMARY:Standup
DTSTART:20240101T091500Z
DTEND:20240101T093000Z
RRULE:FREQ=DAILY
END:VEVENT
"""
    rel = _write(tmp_path, "work.ics", _calendar(daily))
    result = perceive_file(tmp_path, rel, PerceiveOptions(ics_window_days=10))
    assert result.status == "ok", result.notes
    assert [s.meta["start"][:10] for s in result.segments] == [f"2024-01-{d:02d}" for d in range(1, 11)]
    assert result.segments[0].text == "Standup — Mon 2024-01-01 09:15–09:30 (UTC); repeats daily"

    result = perceive_file(tmp_path, rel, PerceiveOptions(ics_window_days=400))
    assert len(result.segments) == 200
    assert result.segments[-1].meta["start"] == "2024-07-18T09:15:00+00:00"
    assert result.status == "partial"
    assert result.notes == ["event 'standup': more than 200 occurrences within 400 days, kept the first 200"]


def test_expansion_is_bounded_for_rules_that_repeat_every_second(tmp_path: Path) -> None:
    """A 400-byte FREQ=SECONDLY rule once took minutes and gigabytes (every second of 800 days was
    expanded before 200 were kept); BY-lists that multiply occurrences per period are bounded too."""
    rules = {"sec": "FREQ=SECONDLY", "min": "FREQ=MINUTELY", "expanding": "FREQ=DAILY;BYHOUR=0,1,2,3,4,5,6,7,8,9,"
             "10,11,12,13,14,15,16,17,18,19,20,21,22,23;BYMINUTE=0,10,20,30,40,50;BYSECOND=0,15,30,45"}  # fmt: skip
    body = "".join(
        f"BEGIN:VEVENT\nUID:{uid}\nDTSTAMP:20240801T000000Z\nSUMMARY:{uid}\nDTSTART:20240101T091500Z\n"
        f"RRULE:{rule}\nEND:VEVENT\n"
        for uid, rule in rules.items()
    )
    rel = _write(tmp_path, "bomb.ics", _calendar(body))
    began = time.perf_counter()
    result = perceive_file(tmp_path, rel, PerceiveOptions())
    assert time.perf_counter() - began < 20  # about a second; minutes before
    assert len(result.segments) == 600
    assert sorted(s.meta["start"] for s in result.segments if s.meta["summary"] == "sec")[:2] == [
        "2024-01-01T09:15:00+00:00",
        "2024-01-01T09:15:01+00:00",
    ]
    assert len(result.notes) == 3 and all("more than 200 occurrences" in n for n in result.notes)


def test_free_busy_file(tmp_path: Path) -> None:
    fb = """BEGIN:VFREEBUSY
UID:fb-1
DTSTAMP:20240801T000000Z
ORGANIZER;CN=Ann:mailto:ann@example.com
FREEBUSY;FBTYPE=BUSY:20240903T070000Z/20240903T080000Z,20240904T070000Z/PT1H
END:VFREEBUSY
"""
    result = perceive_file(tmp_path, _write(tmp_path, "ann.ifb", _calendar(fb)))
    assert [s.text for s in result.segments] == [
        "Free/busy of Ann <ann@example.com>: busy Tue 2024-09-03 07:00–08:00 (UTC); "
        "busy Wed 2024-09-04 07:00–08:00 (UTC)"
    ]
    assert result.segments[0].locator == ItemLocator(unit="item", id="fb-1", at="2024-09-03T07:00:00+00:00")


def test_not_a_calendar_is_a_read_error(tmp_path: Path) -> None:
    result = perceive_file(tmp_path, _write(tmp_path, "notes.ics", b"Meeting notes\nnothing to see\n"))
    assert result.status == "failed"
    assert result.reason == "not an iCalendar file (no BEGIN:VCALENDAR)"
    result = perceive_file(tmp_path, _write(tmp_path, "bin.ics", bytes(range(256)) * 4))
    assert result.status == "failed"


def test_truncated_calendar_keeps_complete_events(tmp_path: Path) -> None:
    data = _calendar(OTHERS)
    cut = data[: data.index(b"UID:dentist") + 20]
    result = perceive_file(tmp_path, _write(tmp_path, "cut.ics", cut))
    assert result.status == "partial"
    assert "calendar is truncated (components left open): read what was there" in result.notes
    assert [s.meta["uid"] for s in result.segments][:3] == ["holiday-1", "xmas", "call-1"]


def test_broken_property_is_noted_and_the_rest_read(tmp_path: Path) -> None:
    bad = """BEGIN:VEVENT
UID:bad-1
DTSTAMP:20240801T000000Z
SUMMARY:Broken start
DTSTART:2024-99-99
END:VEVENT
BEGIN:VEVENT
UID:good-1
DTSTAMP:20240801T000000Z
SUMMARY:Fine
DTSTART;VALUE=DATE:20240102
END:VEVENT
"""
    result = perceive_file(tmp_path, _write(tmp_path, "bad.ics", _calendar(bad)))
    assert result.status == "partial"
    assert [s.text for s in result.segments] == ["Broken start", "Fine — Tue 2024-01-02 (all day)"]
    assert any("bad-1" in note and "DTSTART" in note for note in result.notes)
