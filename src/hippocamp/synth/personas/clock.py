"""Times written in calendar text, kept true to the event: an event whose title or notes state when it
starts ("Work 7pm-7am", "bring DD-214 copy, 10:15", "Coffee with sponsor / Sat 9am") starts then.

The phrase banks write times as people do ("9am", "10:15", "noon", "5-8pm"); before this module an
event's start was drawn at random and its ``{time}`` slot filled with another random time, so nearly
every note contradicted its own event (issue 20). Now the ``{time}`` slot is filled with the event's
own start (`clock_text`), and a start the text states by itself (`stated_start`) moves the event to it
(`agree`): to that time of day, and to the nearest day with that weekday when a weekday is named.

What counts as a stated start: a time or a time range at the start of the title, after "at" or "@" at
its end, or anywhere in it as a range ("Work 7pm-7am"); a piece of the notes (between commas or
semicolons) that is only a time, a range or a weekday with a time. A weekday: one that starts the
title ("Sunday cooking") or is a piece of the notes on its own ("Saturday", "every Sunday", "Sunday
night": then the part of the day sets the time). A time inside other words ("pick her up 9:15",
"leave work by 5:10") is about something else and is left alone. A time without am/pm
is read within the day's waking hours: 1-6 as afternoon (2:15 is 14:15), 7-11 as morning.
"""

from __future__ import annotations

import random
import re
from datetime import date, datetime, time, timedelta

__all__ = ["agree", "clock_text", "dated_slots", "fits_date", "stated_start"]

_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                "November", "December")  # fmt: skip
_DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

_WEEKDAYS = {name[:3].lower(): i for i, name in enumerate(_DAY_NAMES)}
_TIME = r"(?:noon|midnight|\d{1,2}(?::[0-5]\d)?\s*(?:am|pm|a\.m\.|p\.m\.)?)"
_RANGE = rf"{_TIME}\s*(?:-|–|to)\s*{_TIME}"
_DAY = r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|nesday|sday|urday|rsday)?\.?"
_ONLY = re.compile(rf"^\s*(?:(?P<day>{_DAY})\s+)?(?P<t>{_RANGE}|{_TIME})\s*$", re.I)
_LEADING = re.compile(
    rf"^\s*(?:(?P<day>{_DAY})\s+)?(?P<t>{_RANGE}|{_TIME})\b(?!\s*(?:min|minutes|hours|h\b|%|x\b))", re.I
)
_WEEKDAY_FIRST = re.compile(rf"^\s*(?P<day>{_DAY})(?:'?s)?\b", re.I)
_WEEKDAY_ONLY = re.compile(
    rf"^\s*(?:every\s+|on\s+)?(?P<day>{_DAY})s?(?:\s+(?P<part>morning|afternoon|evening|night))?\s*$", re.I
)
#: the start a part of the day stands for when no time is written ("Sunday night")
_PARTS = {"morning": 9 * 60, "afternoon": 14 * 60, "evening": 18 * 60 + 30, "night": 20 * 60}
_TRAILING = re.compile(rf"(?:\bat|@)\s*(?P<t>{_TIME})\s*$", re.I)
_ANY_RANGE = re.compile(rf"(?<![\w:])(?P<t>{_RANGE})(?![\w:])", re.I)


def clock_text(at: datetime) -> str:
    """A time as the banks write it: "9am", "10:15", "noon", "3pm", "7:30pm"."""
    if at.hour == 12 and at.minute == 0:
        return "noon"
    hour = at.hour % 12 or 12
    suffix = "am" if at.hour < 12 else "pm"
    return f"{hour}{suffix}" if at.minute == 0 else f"{hour}:{at.minute:02d}{suffix}"


def _minutes(text: str) -> int | None:
    """Minutes after midnight of one time as written, or None when it is not a time of day."""
    t = text.strip().lower().replace(".", "")
    if t == "noon":
        return 12 * 60
    if t == "midnight":
        return 0
    m = re.fullmatch(r"(\d{1,2})(?::([0-5]\d))?\s*(am|pm)?", t)
    if not m:
        return None
    hour, minute, half = int(m[1]), int(m[2] or 0), m[3]
    if hour > 23 or (half and not 1 <= hour <= 12):
        return None
    if half == "pm" and hour != 12:
        hour += 12
    elif half == "am" and hour == 12:
        hour = 0
    elif half is None and 1 <= hour <= 6:  # "2:15" on a calendar is the afternoon
        hour += 12
    elif half is None and hour > 12 and not m[2]:
        return None  # a bare "14" is a number, not a time
    return hour * 60 + minute


def _start_of(span: str) -> int | None:
    """The start of a time or a range ("5-8pm": 17:00, the first end taking the second's am/pm)."""
    parts = re.split(r"\s*(?:-|–|to)\s*", span.strip(), maxsplit=1)
    if len(parts) == 2:
        first, second = parts
        half = re.search(r"(am|pm|a\.m\.|p\.m\.)\s*$", second, re.I)
        if half and not re.search(r"(am|pm|a\.m\.|p\.m\.|noon|midnight)\s*$", first, re.I):
            end = _minutes(second)
            start = _minutes(first + half[1])
            if start is not None and end is not None and start > end and half[1].lower().startswith("p"):
                start = _minutes(first + "am")  # "11-2pm" starts at 11am
            return start
        return _minutes(first)
    return _minutes(span)


def stated_start(title: str, notes: str = "") -> tuple[int | None, int | None]:
    """The start (minutes after midnight) and weekday (0 = Monday) the text states for its own event,
    each None when it states none (see the module doc)."""
    minutes: int | None = None
    weekday: int | None = None

    def weekday_of(word: str | None) -> int | None:
        return _WEEKDAYS.get(word.lower()[:3]) if word else None

    m = _LEADING.match(title) or _TRAILING.search(title) or _ANY_RANGE.search(title)
    if m:
        minutes = _start_of(m["t"])
        weekday = weekday_of(m.groupdict().get("day"))
    pieces = re.split(r"[,;/]|\s-\s", notes)
    if minutes is None:
        for piece in pieces:
            m = _ONLY.match(piece)
            if m and (value := _start_of(m["t"])) is not None:
                minutes, weekday = value, weekday_of(m["day"])
                break
    if weekday is None:  # a weekday named on its own: "Sunday cooking", notes "Saturday"
        m = _WEEKDAY_FIRST.match(title) or next(filter(None, (_WEEKDAY_ONLY.match(p) for p in pieces)), None)
        if m:
            weekday = weekday_of(m["day"])
            part = m.groupdict().get("part")
            if minutes is None and part:
                minutes = _PARTS[part.lower()]
    return minutes, weekday


def agree(at: datetime, title: str, notes: str, window: tuple[date, date] | None = None) -> datetime:
    """``at`` moved to the start its event's text states: that time of day, and the nearest day with
    the weekday it names (within ``window``, half-open, when given). Unchanged when nothing is stated."""
    minutes, weekday = stated_start(title, notes)
    if minutes is None and weekday is None:
        return at
    day = at.date()
    if weekday is not None:
        # the one day with that weekday within three days of ``at``; when that leaves the window, the
        # window's day with that weekday nearest to it (none in a window shorter than a week: unmoved)
        near = day + timedelta(days=(weekday - day.weekday() + 3) % 7 - 3)
        if window is None or window[0] <= near < window[1]:
            day = near
        else:
            days = [window[0] + timedelta(days=i) for i in range((window[1] - window[0]).days)]
            fits = [d for d in days if d.weekday() == weekday]
            day = min(fits, key=lambda d: abs((d - day).days)) if fits else day
    clock = time(minutes // 60, minutes % 60) if minutes is not None else at.time()
    return datetime.combine(day, clock)


# -- messages: words about the date agree with the send time ---------------------------------------------
def dated_slots(at: datetime, rng: random.Random) -> dict[str, str]:
    """Slot values that agree with a message sent at ``at``: ``{today}`` its weekday, ``{day}`` a weekday
    one to six days ahead ("are we still on for {day}?"), ``{this_month}``, ``{past_month}`` one to three
    months back, ``{month}`` one or two months ahead ("booked my flight for {month}")."""

    def month(offset: int) -> str:
        return _MONTH_NAMES[(at.month - 1 + offset) % 12]

    return {
        "today": _DAY_NAMES[at.weekday()],
        "day": _DAY_NAMES[(at.weekday() + rng.randint(1, 6)) % 7],
        "this_month": month(0),
        "past_month": month(-rng.randint(1, 3)),
        "month": month(rng.randint(1, 2)),
    }


def fits_date(template: str, at: datetime) -> bool:
    """Whether a line may be sent at ``at``: "already {this_month}" only in a month's first ten days,
    "almost the weekend" only from Wednesday to Friday, "morning"/"good night" greetings only at those hours."""
    text = template.lower()
    if "{this_month}" in text and at.day > 10:
        return False
    if "almost the weekend" in text and at.weekday() not in (2, 3, 4):
        return False
    if re.search(r"\b(?:good )?morning\b", text) and not 5 <= at.hour < 12:
        return False
    late = at.hour >= 20 or at.hour < 3
    return late or not re.search(r"\b(?:good )?night\b!?$", text)
