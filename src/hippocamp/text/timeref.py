"""Relative time in a message, resolved against the message's own timestamp.

A small model copies "yesterday" instead of computing the date, so the app-log environment stores the
resolved dates beside the text. `resolve(text, anchor)` finds the phrases and returns one `TimeRef`
per phrase: the phrase as written, its first and last day (a day is ``start == end``; a week, weekend
or month is a range) and where it sits in the text.

Conventions (documented because people disagree): ``last <weekday>`` is the latest such day strictly
before the anchor's day, ``next <weekday>`` the first strictly after it, ``this <weekday>`` the one in
the anchor's Monday–Sunday week; weeks run Monday–Sunday; a weekend is Saturday–Sunday, ``this
weekend`` the coming one (or the current one on a Saturday or Sunday). A bare weekday ("Saturday")
and vague spans ("a few days ago", "recently") are left alone: guessing would put a wrong date
beside the text.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

__all__ = ["WEEKDAYS", "TimeRef", "annotate", "resolve", "week_of", "weekday_after", "weekday_before"]

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a couple": 2,
            "couple of": 2}  # fmt: skip
_NUM = r"(\d{1,3}|a couple of|a couple|couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT = r"(days?|weeks?|months?|years?)"
_WD = "(" + "|".join(WEEKDAYS) + ")"

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("day_before_yesterday", re.compile(r"\bthe day before yesterday\b", re.I)),
    ("day_after_tomorrow", re.compile(r"\bthe day after tomorrow\b", re.I)),
    ("yesterday", re.compile(r"\byesterday\b|\blast night\b", re.I)),
    ("tomorrow", re.compile(r"\btomorrow\b", re.I)),
    ("today", re.compile(r"\btoday\b|\btonight\b|\bthis (?:morning|afternoon|evening)\b", re.I)),
    ("rel_weekday", re.compile(r"\b(last|next|this|coming)\s+" + _WD + r"\b", re.I)),
    ("rel_weekend", re.compile(r"\b(last|next|this)\s+weekend\b", re.I)),
    ("rel_period", re.compile(r"\b(last|next|this)\s+(week|month|year)\b", re.I)),
    ("in_n", re.compile(r"\bin\s+" + _NUM + r"\s+" + _UNIT + r"\b", re.I)),
    ("n_ago", re.compile(r"\b" + _NUM + r"\s+" + _UNIT + r"\s+ago\b", re.I)),
]


@dataclass(frozen=True)
class TimeRef:
    phrase: str
    start: date
    end: date
    span: tuple[int, int]

    def shown(self) -> str:
        """``yesterday = Sun 2023-05-07`` or ``next week = 2023-05-15..2023-05-21``."""
        if self.start == self.end:
            return f"{self.phrase} = {self.start.strftime('%a')} {self.start.isoformat()}"
        return f"{self.phrase} = {self.start.isoformat()}..{self.end.isoformat()}"

    def as_dict(self) -> dict[str, str]:
        return {"phrase": self.phrase, "start": self.start.isoformat(), "end": self.end.isoformat()}


def _add_months(d: date, n: int) -> date:
    y, m = divmod(d.month - 1 + n, 12)
    year, month = d.year + y, m + 1
    return date(year, month, min(d.day, calendar.monthrange(year, month)[1]))


def _month(d: date) -> tuple[date, date]:
    return d.replace(day=1), d.replace(day=calendar.monthrange(d.year, d.month)[1])


def week_of(d: date) -> tuple[date, date]:
    """The Monday–Sunday week holding ``d``."""
    monday = d - timedelta(days=d.weekday())
    return monday, monday + timedelta(days=6)


def weekday_before(d: date, weekday: int) -> date:
    """The latest day strictly before ``d`` that falls on ``weekday`` (0 = Monday)."""
    return d - timedelta(days=(d.weekday() - weekday) % 7 or 7)


def weekday_after(d: date, weekday: int) -> date:
    """The first day strictly after ``d`` that falls on ``weekday`` (0 = Monday)."""
    return d + timedelta(days=(weekday - d.weekday()) % 7 or 7)


def _number(word: str) -> int:
    w = word.lower()
    return int(w) if w.isdigit() else _NUMBERS[w]


def _shift(d: date, n: int, unit: str) -> date:
    unit = unit.lower().rstrip("s")
    if unit == "day":
        return d + timedelta(days=n)
    if unit == "week":
        return d + timedelta(weeks=n)
    if unit == "month":
        return _add_months(d, n)
    return _add_months(d, 12 * n)


def _range(kind: str, m: re.Match[str], d: date) -> tuple[date, date]:
    if kind in ("yesterday", "tomorrow", "today", "day_before_yesterday", "day_after_tomorrow"):
        offset = {"yesterday": -1, "tomorrow": 1, "today": 0, "day_before_yesterday": -2, "day_after_tomorrow": 2}
        day = d + timedelta(days=offset[kind])
        return day, day
    if kind == "rel_weekday":
        which, target = m.group(1).lower(), WEEKDAYS.index(m.group(2).lower())
        if which == "last":
            day = weekday_before(d, target)
        elif which in ("next", "coming"):
            day = weekday_after(d, target)
        else:
            day = week_of(d)[0] + timedelta(days=target)
        return day, day
    if kind == "rel_weekend":
        which = m.group(1).lower()
        saturday = d + timedelta(days=5 - d.weekday())  # on a weekend: this weekend's Saturday
        if which == "last":
            saturday -= timedelta(days=7)
        elif which == "next" and d.weekday() >= 5:
            saturday += timedelta(days=7)
        return saturday, saturday + timedelta(days=1)
    if kind == "rel_period":
        which, unit = m.group(1).lower(), m.group(2).lower()
        n = {"last": -1, "next": 1, "this": 0}[which]
        if unit == "week":
            return week_of(d + timedelta(weeks=n))
        if unit == "month":
            return _month(_add_months(d, n))
        year = d.year + n
        return date(year, 1, 1), date(year, 12, 31)
    n = _number(m.group(1))
    day = _shift(d, n if kind == "in_n" else -n, m.group(2))
    return day, day


def resolve(text: str, anchor: datetime | date) -> list[TimeRef]:
    """Every relative-time phrase of ``text`` with its dates, in text order; overlapping matches keep
    the earlier, longer pattern ("the day before yesterday" is not also "yesterday")."""
    d = anchor.date() if isinstance(anchor, datetime) else anchor
    found: list[TimeRef] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            s, e = m.span()
            if any(s < te and ts < e for ts, te in taken):
                continue
            try:
                start, end = _range(kind, m, d)
            except (KeyError, ValueError, OverflowError):
                continue
            taken.append((s, e))
            found.append(TimeRef(m.group(0), start, end, (s, e)))
    return sorted(found, key=lambda r: r.span)


def annotate(text: str, anchor: datetime | date) -> tuple[str, list[TimeRef]]:
    """The text with its resolved phrases beside it (``text  [yesterday = Sun 2023-05-07]``) and the refs."""
    refs = resolve(text, anchor)
    if not refs:
        return text, refs
    return f"{text}  [{'; '.join(r.shown() for r in refs)}]", refs
