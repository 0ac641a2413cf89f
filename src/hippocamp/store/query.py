"""What a search query says besides its words: the dates it names and the kinds of file it asks for.

`read_query` finds, in the words a person would use,

* **dates**: an ISO date or month ("2023-03-14", "2023-03"), a day or a month with its year ("14 March
  2023", "March 14, 2023", "Mar 2023"), a year ("in 2019", "FY2019"), a quarter with its year ("Q2 2023",
  "2023Q2", "Q2'23", "second quarter of 2023"), and dates relative to ``now`` ("today", "yesterday",
  "last week", "this month", "last year", "3 days ago", "two months ago", "last March"), each as a
  `Period` (a half-open range of days); a month or a quarter named without a year ("in March", "Q2")
  as months of any year;
* **kinds of file**: "pdf", "spreadsheet", "slides", "photo", "voice memo", "video", "email",
  "calendar" ... as file types or modalities.

A month's name counts only when it is written with a capital letter or beside a day or a year, so the
verb in "may I" or "we march" is not a date. What was read is kept on `QueryParts` with the words that
said it (``said``), so a caller can show it ("read as: March 2023; pdf").

``now`` anchors the relative dates. A personal environment is a snapshot, so the searcher passes the
latest time found in the store (the profile's present), not the wall clock; callers may pass their own.

The searcher uses what was read in two ways (`hippocamp.store.search`): as a boost in hybrid search
(a segment whose time falls in a named period gains ``date_weight``), and, in `Searcher.search_read`,
as filters that are dropped again, with a note, when nothing passes them.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

import numpy as np

__all__ = ["MONTHS", "Period", "QueryParts", "month_numbers", "read_query", "times_within"]

_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
                "october", "november", "december")  # fmt: skip
MONTHS: dict[str, int] = {name: i for i, name in enumerate(_MONTH_NAMES, start=1)}
MONTHS.update({name[:3]: i for name, i in list(MONTHS.items())})
MONTHS["sept"] = 9
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
            "ten": 10, "a": 1, "an": 1}  # fmt: skip
_ORDINAL_QUARTERS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}

#: words that ask for a kind of file: (file types, modalities)
KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "pdf": (("pdf",), ()),
    "spreadsheet": (("xlsx", "xls", "csv", "ods"), ()),
    "workbook": (("xlsx", "xls", "ods"), ()),
    "csv": (("csv",), ()),
    "excel": (("xlsx", "xls"), ()),
    "slides": (("pptx", "ppt", "odp", "key"), ()),
    "slide": (("pptx", "ppt", "odp", "key"), ()),
    "presentation": (("pptx", "ppt", "odp", "key"), ()),
    "docx": (("docx", "doc"), ()),
    "word document": (("docx", "doc"), ()),
    "email": (("eml", "msg", "mbox"), ()),
    "e-mail": (("eml", "msg", "mbox"), ()),
    "calendar": (("ics",), ()),
    "photo": ((), ("image",)),
    "picture": ((), ("image",)),
    "image": ((), ("image",)),
    "screenshot": ((), ("image",)),
    "voice memo": ((), ("audio",)),
    "recording": ((), ("audio", "video")),
    "audio": ((), ("audio",)),
    "video": ((), ("video",)),
}
_KIND = re.compile(
    r"\b(?P<kind>" + "|".join(re.escape(k) for k in sorted(KINDS, key=len, reverse=True)) + r")(?:e?s)?\b", re.I
)


@dataclass(frozen=True)
class Period:
    """Days from ``start`` up to, not including, ``end`` (ISO dates), and the words that named them."""

    start: str
    end: str
    said: str

    def label(self) -> str:
        first = date.fromisoformat(self.start)
        last = date.fromisoformat(self.end) - timedelta(days=1)
        if first == last:
            return self.start
        if first.day == 1 and last.day == calendar.monthrange(last.year, last.month)[1]:
            if first.month == 1 and last.month == 12 and first.year == last.year:
                return str(first.year)
            if (first.year, first.month) == (last.year, last.month):
                return self.start[:7]
            return f"{self.start[:7]}..{last.isoformat()[:7]}"
        return f"{self.start}..{last.isoformat()}"


@dataclass(frozen=True)
class QueryParts:
    """What `read_query` found in a query besides its words."""

    text: str
    periods: tuple[Period, ...] = ()
    #: months named without a year ("in March", "Q2"): 1-12, any year
    months: frozenset[int] = frozenset()
    months_said: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    modalities: tuple[str, ...] = ()
    kinds_said: tuple[str, ...] = ()
    #: the anchor the relative dates were read against (ISO date), when one was needed
    now: str | None = None
    relative: bool = False

    @property
    def has_dates(self) -> bool:
        return bool(self.periods or self.months)

    def describe(self) -> str:
        """What was read, for a person: "2023-03 (March 2023); months 4-6 (Q2); pdf (pdf)"."""
        parts = [f"{p.label()} ({p.said})" for p in self.periods]
        if self.months:
            parts.append(f"month {', '.join(calendar.month_abbr[m] for m in sorted(self.months))} of any year "
                         f"({'; '.join(self.months_said)})")  # fmt: skip
        kinds = [*self.types, *self.modalities]
        if kinds:
            parts.append(f"{' '.join(kinds)} ({'; '.join(self.kinds_said)})")
        if self.relative and self.now:
            parts.append(f"relative to {self.now}")
        return "; ".join(parts)

    def time_mask(self, times: np.ndarray, months: np.ndarray | None = None) -> np.ndarray:
        """Which of ``times`` (ISO strings, '' for none) fall in a named period or month. ``months``:
        the times' month numbers (0 for none), when the caller keeps them."""
        return times_within(times, [(p.start, p.end) for p in self.periods], self.months, months)


def times_within(
    times: np.ndarray, periods: Iterable[tuple[str, str]], months: Collection[int], numbers: np.ndarray | None = None
) -> np.ndarray:
    """Which of ``times`` (ISO strings, '' for none) fall in any of ``periods`` (half-open ranges of ISO
    dates) or in any of ``months`` of any year; ``numbers``: the times' `month_numbers`, when the caller
    keeps them."""
    hit = np.zeros(len(times), dtype=bool)
    has = times != ""
    for start, end in periods:
        hit |= has & (times >= start) & (times < end)
    if months:
        hit |= np.isin(month_numbers(times) if numbers is None else numbers, sorted(months))
    return hit


def month_numbers(times: np.ndarray) -> np.ndarray:
    """The month of each ISO time (0 when there is none or it is not a date)."""
    out = np.zeros(len(times), dtype=np.int8)
    for i, t in enumerate(times.tolist()):
        if len(t) >= 7 and t[4] == "-" and t[5:7].isdigit():
            out[i] = int(t[5:7])
    return out


def _month_period(year: int, month: int, said: str) -> Period:
    end = date(year + (month == 12), month % 12 + 1, 1)
    return Period(date(year, month, 1).isoformat(), end.isoformat(), said)


def _year_period(year: int, said: str) -> Period:
    return Period(f"{year:04d}-01-01", f"{year + 1:04d}-01-01", said)


def _quarter_period(year: int, quarter: int, said: str) -> Period:
    first = 3 * (quarter - 1) + 1
    end = date(year + (quarter == 4), first + 3 if quarter < 4 else 1, 1)
    return Period(date(year, first, 1).isoformat(), end.isoformat(), said)


def _day_period(day: date, said: str, days: int = 1) -> Period:
    return Period(day.isoformat(), (day + timedelta(days=days)).isoformat(), said)


def _year(text: str) -> int | None:
    value = int(text)
    if len(text) == 2:
        value += 2000 if value < 70 else 1900
    return value if 1900 <= value <= 2100 else None


def _anchor(now: date | datetime | str | None) -> date:
    if now is None:
        return date.today()
    if isinstance(now, datetime):
        return now.date()
    if isinstance(now, date):
        return now
    return date.fromisoformat(str(now)[:10])


_ISO_DAY = re.compile(r"\b(?P<y>(?:19|20)\d\d)-(?P<m>0[1-9]|1[0-2])-(?P<d>[0-2]\d|3[01])\b")
_ISO_MONTH = re.compile(r"\b(?P<y>(?:19|20)\d\d)-(?P<m>0[1-9]|1[0-2])\b(?!-\d)")
_DAY_MONTH_YEAR = re.compile(
    r"\b(?P<d>[0-3]?\d)(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r",?\s+(?P<y>(?:19|20)\d\d)\b", re.I
)
_MONTH_DAY_YEAR = re.compile(r"\b" + _MONTH + r"\s+(?P<d>[0-3]?\d)(?:st|nd|rd|th)?,?\s+(?P<y>(?:19|20)\d\d)\b", re.I)
_MONTH_YEAR = re.compile(r"\b" + _MONTH + r",?\s+(?:of\s+)?(?P<y>(?:19|20)\d\d|'\d\d)\b", re.I)
_QUARTER_YEAR = re.compile(
    r"\b(?:Q(?P<q>[1-4])(?:\s*(?:of\s+)?(?:FY\s*)?|'|\s*-\s*)(?P<y>(?:19|20)\d\d|\d\d)\b"
    r"|(?:FY\s*)?(?P<y2>(?:19|20)\d\d)\s*-?\s*Q(?P<q2>[1-4])\b"
    r"|(?P<ord>first|second|third|fourth|1st|2nd|3rd|4th)\s+(?:fiscal\s+)?quarter\s+(?:of\s+)?(?:(?:fiscal|FY)\s*)?(?P<y3>(?:19|20)\d\d))",
    re.I,
)
_QUARTER = re.compile(r"\bQ(?P<q>[1-4])\b|\b(?P<ord>first|second|third|fourth)\s+quarter\b", re.I)
_FISCAL_YEAR = re.compile(r"\b(?:FY|fiscal\s+(?:year\s+)?)\s*'?(?P<y>(?:19|20)\d\d|\d\d)\b", re.I)
_YEAR = re.compile(r"(?<![\w-])(?P<y>(?:19|20)\d\d)(?![\w-])")
_RELATIVE = re.compile(
    r"\b(?P<which>last|this|past|previous|next)\s+(?P<unit>week|month|year|quarter)\b"
    r"|\b(?P<word>today|yesterday|tonight)\b"
    r"|\b(?P<n>\d{1,3}|one|two|three|four|five|six|seven|eight|nine|ten|a|an)\s+(?P<unit2>day|week|month|year)s?\s+ago\b",
    re.I,
)
_RELATIVE_MONTH = re.compile(r"\b(?P<which>last|this|next)\s+" + _MONTH + r"(?!\w)", re.I)
_BARE_MONTH = re.compile(
    r"(?:\b(?P<prep>in|during|of|since|until|by|from|on|for)\s+)?(?<!\w)" + _MONTH + r"(?!\w)", re.I
)


def _month_of(text: str) -> int:
    return MONTHS[text.lower().rstrip(".")]


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def read_query(text: str, now: date | datetime | str | None = None) -> QueryParts:
    """Read the dates and kinds of file a query names (see the module doc). ``now``: the anchor of
    relative dates (a date, a datetime or an ISO string; default today)."""
    taken: list[tuple[int, int]] = []
    periods: list[Period] = []
    months: set[int] = set()
    months_said: list[str] = []
    relative = False

    def free(m: re.Match[str]) -> bool:
        start, end = m.span()
        return all(end <= a or start >= b for a, b in taken)

    def take(m: re.Match[str]) -> str:
        taken.append(m.span())
        return " ".join(m.group(0).split())

    for m in _ISO_DAY.finditer(text):
        try:
            day = date(int(m["y"]), int(m["m"]), int(m["d"]))
        except ValueError:
            continue
        periods.append(_day_period(day, take(m)))
    for pattern in (_DAY_MONTH_YEAR, _MONTH_DAY_YEAR):
        for m in pattern.finditer(text):
            if not free(m):
                continue
            try:
                day = date(int(m["y"]), _month_of(m["month"]), int(m["d"]))
            except ValueError:
                continue
            periods.append(_day_period(day, take(m)))
    for m in _ISO_MONTH.finditer(text):
        if free(m):
            periods.append(_month_period(int(m["y"]), int(m["m"]), take(m)))
    for m in _MONTH_YEAR.finditer(text):
        if free(m) and (year := _year(m["y"].lstrip("'"))):
            periods.append(_month_period(year, _month_of(m["month"]), take(m)))
    for m in _QUARTER_YEAR.finditer(text):
        if not free(m):
            continue
        quarter = m["q"] or m["q2"] or (_ORDINAL_QUARTERS[m["ord"].lower()] if m["ord"] else None)
        year = _year(m["y"] or m["y2"] or m["y3"])
        if quarter and year:
            periods.append(_quarter_period(year, int(quarter), take(m)))
    for m in _FISCAL_YEAR.finditer(text):
        if free(m) and (year := _year(m["y"])):
            periods.append(_year_period(year, take(m)))
    for m in _YEAR.finditer(text):
        if free(m):
            periods.append(_year_period(int(m["y"]), take(m)))

    anchor = _anchor(now)
    for m in _RELATIVE.finditer(text):
        if not free(m):
            continue
        relative = True
        said = take(m)
        if m["word"]:
            day = anchor - timedelta(days=1) if m["word"].lower() == "yesterday" else anchor
            periods.append(_day_period(day, said))
        elif m["unit"]:
            which, unit = m["which"].lower(), m["unit"].lower()
            step = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1}[which]
            if unit == "week":
                monday = anchor - timedelta(days=anchor.weekday()) + timedelta(weeks=step)
                periods.append(_day_period(monday, said, days=7))
            elif unit == "month":
                first = _add_months(anchor, step)
                periods.append(_month_period(first.year, first.month, said))
            elif unit == "quarter":
                first = _add_months(date(anchor.year, 3 * ((anchor.month - 1) // 3) + 1, 1), 3 * step)
                periods.append(_quarter_period(first.year, (first.month - 1) // 3 + 1, said))
            else:
                periods.append(_year_period(anchor.year + step, said))
        else:
            n = int(m["n"]) if m["n"].isdigit() else _NUMBERS[m["n"].lower()]
            unit = m["unit2"].lower()
            if unit == "day":
                periods.append(_day_period(anchor - timedelta(days=n), said))
            elif unit == "week":
                monday = anchor - timedelta(days=anchor.weekday()) - timedelta(weeks=n)
                periods.append(_day_period(monday, said, days=7))
            elif unit == "month":
                first = _add_months(anchor, -n)
                periods.append(_month_period(first.year, first.month, said))
            else:
                periods.append(_year_period(anchor.year - n, said))
    for m in _RELATIVE_MONTH.finditer(text):
        if not free(m):
            continue
        relative = True
        month = _month_of(m["month"])
        which = m["which"].lower()
        if which == "last":  # the latest such month strictly before the anchor's month
            year = anchor.year if month < anchor.month else anchor.year - 1
        elif which == "next":
            year = anchor.year if month > anchor.month else anchor.year + 1
        else:
            year = anchor.year
        periods.append(_month_period(year, month, take(m)))
    for m in _QUARTER.finditer(text):
        if free(m):
            quarter = int(m["q"]) if m["q"] else _ORDINAL_QUARTERS[m["ord"].lower()]
            months.update(range(3 * quarter - 2, 3 * quarter + 1))
            months_said.append(take(m))
    for m in _BARE_MONTH.finditer(text):
        if not free(m):
            continue
        word = m["month"]
        # a month's name alone counts when capitalised ("in March", not "we march"), and "May" only
        # after a preposition ("in May", not "May I ...")
        if not word[:1].isupper() or (word.lower() == "may" and not m["prep"]):
            continue
        months.add(_month_of(word))
        months_said.append(take(m))

    types: list[str] = []
    modalities: list[str] = []
    kinds_said: list[str] = []
    for m in _KIND.finditer(text):
        found_types, found_modalities = KINDS[m["kind"].lower()]
        types.extend(found_types)
        modalities.extend(found_modalities)
        kinds_said.append(m.group(0))
    return QueryParts(
        text=text,
        periods=tuple(dict.fromkeys(periods)),
        months=frozenset(months),
        months_said=tuple(months_said),
        types=tuple(dict.fromkeys(types)),
        modalities=tuple(dict.fromkeys(modalities)),
        kinds_said=tuple(kinds_said),
        now=anchor.isoformat() if relative else None,
        relative=relative,
    )
