"""Calendars (``.ics``, ``.ical``, ``.ifb``): one segment per event occurrence, to-do and free/busy block.

Events are read with ``icalendar``; recurring ones (RRULE/RDATE, with EXDATE and RECURRENCE-ID
overrides) are expanded with ``recurring-ical-events`` over ``options.ics_window_days`` days either
side of the series' first start, at most `IcsReader.max_occurrences` occurrences per series (a note
says when a series was cut). Each occurrence is a segment like::

    Gym — Tue 2024-09-03 07:00–08:00 (Europe/Amsterdam) at FitHub Blaak, Rotterdam; attendees: Ann
    <ann@example.com>; organizer: Me <me@example.com>; repeats weekly on TU,TH

Times are written in the event's own zone (named in parentheses; nothing for floating times),
all-day events as ``Fri 2024-12-20 (all day)`` (DTEND is exclusive). An event without DTEND or
DURATION has no end. Locators:

* event occurrence: ``ItemLocator(unit="event", id=UID, at=ISO start of the occurrence)``
* to-do / free-busy block: ``ItemLocator(unit="item", id=UID, at=ISO start or due)``, ``meta["kind"]``
  says which (``todo``, ``freebusy``); recurring to-dos are not expanded.

``meta`` of an event: uid, summary, start, end (ISO; dates for all-day), all_day, tz, location,
attendees (list), organizer, rrule (string), recurring, status, calendar (X-WR-CALNAME).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from hippocamp.perceive.base import Part, ReadContext, ReadError
from hippocamp.registry import register
from hippocamp.schema.locators import ItemLocator
from hippocamp.schema.segment import Segment

__all__ = ["IcsReader"]

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_FREQ_WORDS = {
    "SECONDLY": ("every second", "seconds"),
    "MINUTELY": ("every minute", "minutes"),
    "HOURLY": ("hourly", "hours"),
    "DAILY": ("daily", "days"),
    "WEEKLY": ("weekly", "weeks"),
    "MONTHLY": ("monthly", "months"),
    "YEARLY": ("yearly", "years"),
}


@register("reader", "ics")
class IcsReader:
    """iCalendar files: events (recurrences expanded), to-dos and free/busy blocks."""

    name: ClassVar[str] = "ics"
    extensions: ClassVar[tuple[str, ...]] = ("ics", "ical", "ifb")
    parts: ClassVar[tuple[Part, ...]] = (
        Part(
            "recurring_ical_events",
            "module",
            "expand recurring calendar events (RRULE, RDATE, EXDATE, moved occurrences)",
            "pip install recurring-ical-events",
        ),
    )
    #: occurrences of one recurring series kept at most
    max_occurrences: ClassVar[int] = 200

    def read(self, path: Path, ctx: ReadContext) -> list[Segment]:
        try:
            import icalendar
        except ImportError as exc:  # a core dependency; only a broken install lands here
            raise ReadError("icalendar is not installed (pip install icalendar)") from exc
        calendars = _parse(path.read_bytes(), ctx, icalendar)
        segments: list[Segment] = []
        for cal in calendars:
            segments.extend(self._read_calendar(cal, ctx))
        return segments

    # -- one VCALENDAR ---------------------------------------------------------------------------
    def _read_calendar(self, cal: Any, ctx: ReadContext) -> list[Segment]:
        try:
            import x_wr_timezone  # comes with recurring-ical-events: Google's X-WR-TIMEZONE calendars

            cal = x_wr_timezone.to_standard(cal)
        except ImportError:
            pass
        except Exception as exc:
            ctx.note(f"X-WR-TIMEZONE not applied: {type(exc).__name__}: {exc}")
        calname = _text(cal.get("X-WR-CALNAME"))
        timezones = list(cal.walk("VTIMEZONE"))
        segments: list[Segment] = []

        events = list(cal.walk("VEVENT"))
        series: dict[str, list[Any]] = {}
        order: list[tuple[str, Any]] = []  # (uid, component) in file order; one entry per series
        for i, event in enumerate(events):
            uid = _text(event.get("UID")) or f"event-{i + 1}"
            if uid not in series:
                series[uid] = []
                order.append((uid, event))
            series[uid].append(event)
        for uid, _first in order:
            if len(segments) >= ctx.options.max_events:
                ctx.note(f"more than {ctx.options.max_events:,} events: the rest not read (max_events)")
                del segments[ctx.options.max_events :]
                break
            group = series[uid]
            if any("RRULE" in c or "RDATE" in c for c in group):
                segments.extend(self._expand(uid, group, cal, timezones, ctx, calname))
            else:
                for component in group:
                    seg = self._event_segment(uid, component, component, ctx, calname, _NOT_RECURRING)
                    if seg is not None:
                        segments.append(seg)

        for i, todo in enumerate(cal.walk("VTODO")):
            seg = _todo_segment(todo, i, ctx, calname)
            if seg is not None:
                segments.append(seg)
        for i, fb in enumerate(cal.walk("VFREEBUSY")):
            seg = _freebusy_segment(fb, i, ctx, calname)
            if seg is not None:
                segments.append(seg)
        return segments

    def _expand(
        self, uid: str, group: list[Any], cal: Any, timezones: list[Any], ctx: ReadContext, calname: str | None
    ) -> list[Segment]:
        master = next((c for c in group if "RECURRENCE-ID" not in c), group[0])
        recurrence = _recurrence(master)
        try:
            import recurring_ical_events
        except ImportError:
            ctx.note("recurring events not expanded (pip install recurring-ical-events): first occurrences only")
            segs = (self._event_segment(uid, c, master, ctx, calname, recurrence) for c in group)
            return [s for s in segs if s is not None]
        try:
            first = _start_of(master)
        except Exception as exc:
            ctx.note(f"event {uid!r}: unreadable start ({exc})")
            return []
        if first is None:
            ctx.note(f"event {uid!r}: no DTSTART")
            return []
        window = dt.timedelta(days=ctx.options.ics_window_days)
        mini = _subcalendar(cal, timezones, group)
        query = recurring_ical_events.of(mini)
        gap = _rule_gap(master)
        lo, hi = first - window, first + window
        # Expanded over a span that holds about as many occurrences as are kept, grown fourfold until
        # it holds more or reaches the window: a FREQ=SECONDLY rule is never expanded over 400 days.
        span = window if gap is None else dt.timedelta(seconds=gap * (self.max_occurrences + 1))
        try:
            while True:
                stop = hi if span >= window else min(hi, first + span)
                occurrences = list(query.between(lo, stop))
                if len(occurrences) > self.max_occurrences or stop >= hi:
                    break
                span *= 4
        except Exception as exc:
            ctx.note(f"event {uid!r}: recurrence not expanded ({type(exc).__name__}: {exc}); first occurrence only")
            seg = self._event_segment(uid, master, master, ctx, calname, recurrence)
            return [] if seg is None else [seg]
        more = len(occurrences) > self.max_occurrences
        occurrences.sort(key=lambda c: _sort_key(_start_of(c)))
        if more:
            occurrences = occurrences[: self.max_occurrences]
            ctx.note(
                f"event {uid!r}: more than {self.max_occurrences} occurrences within {ctx.options.ics_window_days}"
                f" days, kept the first {self.max_occurrences}"
            )
        out = []
        for occ in occurrences:
            seg = self._event_segment(uid, occ, master, ctx, calname, recurrence)
            if seg is not None:
                out.append(seg)
        return out

    def _event_segment(
        self, uid: str, comp: Any, master: Any, ctx: ReadContext, calname: str | None, recurrence: _Recurrence
    ) -> Segment | None:
        try:
            start = _start_of(comp)
            end = _end_of(comp, master, start)
        except Exception as exc:
            ctx.note(f"event {uid!r}: unreadable times ({exc})")
            start, end = None, None
        summary = _text(comp.get("SUMMARY")) or "(no title)"
        location = _text(comp.get("LOCATION"))
        description = _text(comp.get("DESCRIPTION"))
        status = _text(comp.get("STATUS"))
        attendees = [a for a in (_address(x) for x in _as_list(comp.get("ATTENDEE"))) if a]
        organizer = _address(comp.get("ORGANIZER"))

        text = summary
        if status and status.upper() == "CANCELLED":
            text += " (cancelled)"
        if start is not None:
            text += f" — {_when(start, end)}"
        if location:
            text += f" at {location}"
        if attendees:
            text += f"; attendees: {', '.join(attendees)}"
        if organizer:
            text += f"; organizer: {organizer}"
        if recurrence.repeats:
            text += f"; {recurrence.repeats}"
        if description:
            text += f"\n{description}"
        start_iso = _iso(start)
        return ctx.segment(
            text,
            ItemLocator(unit="event", id=uid, at=start_iso) if uid or start_iso else None,
            uid=uid,
            summary=summary,
            start=start_iso,
            end=_iso(end),
            all_day=start is not None and not isinstance(start, dt.datetime),
            tz=_tzname(start),
            location=location,
            attendees=attendees,
            organizer=organizer,
            rrule=recurrence.rrule,
            recurring=recurrence.recurring,
            status=status,
            calendar=calname,
        )


# -- parsing -------------------------------------------------------------------------------------
_BEGIN_RE = re.compile(r"^BEGIN:(\S+)\s*$", re.IGNORECASE)
_END_RE = re.compile(r"^END:(\S+)\s*$", re.IGNORECASE)


def _decode(data: bytes, ctx: ReadContext) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        ctx.note("calendar is not valid UTF-8: decoded as Windows-1252")
        return data.decode("cp1252", errors="replace")


def _parse(data: bytes, ctx: ReadContext, icalendar: Any) -> list[Any]:
    text = _decode(data, ctx)
    head = text.lstrip()[:4096].upper()
    if not head.startswith("BEGIN:VCALENDAR") and "\nBEGIN:VCALENDAR" not in head:
        raise ReadError("not an iCalendar file (no BEGIN:VCALENDAR)")
    try:
        calendars = list(icalendar.Calendar.from_ical(text, multiple=True))
    except Exception as exc:
        calendars = []
        error: Exception | None = exc
    else:
        error = None
    if not calendars:
        repaired = _close_open_components(text)
        if repaired != text:
            try:
                calendars = list(icalendar.Calendar.from_ical(repaired, multiple=True))
            except Exception as exc:
                error = exc
            else:
                ctx.note("calendar is truncated (components left open): read what was there")
    if not calendars:
        reason = f": {error}" if error else ""
        raise ReadError(f"not a readable iCalendar file{reason}")
    for cal in calendars:
        for comp in cal.walk():
            for prop, message in getattr(comp, "errors", None) or []:
                ctx.note(f"{comp.name} {_text(comp.get('UID')) or ''}: broken {prop}: {message}".replace("  ", " "))
    return calendars


def _close_open_components(text: str) -> str:
    """Append the END lines a truncated file lacks (a half-written last line is dropped)."""
    lines = text.splitlines()
    if lines and not text.endswith(("\n", "\r")):
        lines = lines[:-1]  # the cut line is partial
    stack: list[str] = []
    for line in lines:
        if m := _BEGIN_RE.match(line):
            stack.append(m.group(1).upper())
        elif (m := _END_RE.match(line)) and stack and stack[-1] == m.group(1).upper():
            stack.pop()
    if not stack:
        return text
    return "\r\n".join([*lines, *(f"END:{name}" for name in reversed(stack))]) + "\r\n"


def _subcalendar(cal: Any, timezones: list[Any], components: Iterable[Any]) -> Any:
    """A calendar holding one series and the zone definitions it may refer to."""
    import icalendar

    mini = icalendar.Calendar()
    for key in ("VERSION", "PRODID", "CALSCALE"):
        if key in cal:
            mini[key] = cal[key]
    for tz in timezones:
        mini.add_component(tz)
    for comp in components:
        mini.add_component(comp)
    return mini


_FREQ_SECONDS = {"SECONDLY": 1, "MINUTELY": 60, "HOURLY": 3600, "DAILY": 86400, "WEEKLY": 7 * 86400,
                 "MONTHLY": 28 * 86400, "YEARLY": 365 * 86400}  # fmt: skip


def _rule_gap(master: Any) -> float | None:
    """A lower bound on the seconds between two occurrences of the series' rules (None: no rule, or
    one that cannot be read): the rule's period over the product of its BY-lists' lengths, which
    can only make more occurrences per period."""
    gaps = []
    for rule in _as_list(master.get("RRULE")):
        try:
            freq = str(_as_list(rule.get("FREQ"))[0]).upper()
            interval = max(1, int(_as_list(rule.get("INTERVAL") or [1])[0]))
            per = 1
            for key, value in rule.items():
                if key.upper().startswith("BY"):
                    per *= max(1, len(_as_list(value)))
            gaps.append(_FREQ_SECONDS[freq] * interval / per)
        except (KeyError, IndexError, TypeError, ValueError):
            return None
    return min(gaps) if gaps else None


class _Recurrence(NamedTuple):
    """What a series' master says of its recurrence (computed once, shared by its occurrences)."""

    recurring: bool
    rrule: str | None  # as written, several RRULEs one per line
    repeats: str | None  # "repeats weekly on TU,TH"


_NOT_RECURRING = _Recurrence(False, None, None)


def _recurrence(master: Any) -> _Recurrence:
    rules = _as_list(master.get("RRULE"))
    rrule = "\n".join(t for t in (_rrule_text(r) for r in rules) if t) or None
    if rules:
        repeats = " and ".join(_describe_rrule(r) for r in rules)
    elif "RDATE" in master:
        repeats = "repeats on set dates"
    else:
        repeats = None
    return _Recurrence(True, rrule, repeats)


# -- values --------------------------------------------------------------------------------------
def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        value = ", ".join(str(v) for v in value)
    text = str(value).strip()
    return text or None


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _address(value: Any) -> str | None:
    if value is None:
        return None
    email = re.sub(r"^mailto:", "", str(value).strip(), flags=re.IGNORECASE)
    params = getattr(value, "params", {}) or {}
    name = params.get("CN")
    name = str(name).strip().strip('"') if name else ""
    if name and email and name.lower() != email.lower():
        return f"{name} <{email}>"
    return email or name or None


def _dt_value(value: Any) -> Any:
    if value is None:
        return None
    return getattr(value, "dt", value)


def _start_of(comp: Any) -> dt.date | None:
    if "DTSTART" not in comp:
        return None
    value = _dt_value(comp.get("DTSTART"))
    return value if isinstance(value, dt.date) else None


def _end_of(comp: Any, master: Any, start: dt.date | None) -> dt.date | None:
    """The end: DTEND, else start + DURATION; None when the event states neither."""
    if start is None:
        return None
    if "DTEND" not in master and "DURATION" not in master and "DTEND" not in comp and "DURATION" not in comp:
        return None
    if "DTEND" in comp:
        end = _dt_value(comp.get("DTEND"))
    elif "DURATION" in comp:
        end = start + _dt_value(comp.get("DURATION"))
    else:
        return None
    if not isinstance(end, dt.date) or isinstance(end, dt.datetime) != isinstance(start, dt.datetime):
        return None
    return end


def _iso(value: dt.date | None) -> str | None:
    return None if value is None else value.isoformat()


def _tzname(value: Any) -> str | None:
    if not isinstance(value, dt.datetime) or value.tzinfo is None:
        return None
    tz = value.tzinfo
    name = getattr(tz, "key", None) or getattr(tz, "zone", None) or value.tzname()
    if name in ("UTC", "Etc/UTC", "Z", "GMT", "Etc/GMT") or (name is None and value.utcoffset() == dt.timedelta(0)):
        return "UTC"
    return str(name) if name else None


def _sort_key(value: dt.date | None) -> tuple[int, dt.datetime]:
    if value is None:
        return (1, dt.datetime.min)
    if not isinstance(value, dt.datetime):
        return (0, dt.datetime(value.year, value.month, value.day))
    if value.tzinfo is not None:
        return (0, value.astimezone(dt.UTC).replace(tzinfo=None))
    return (0, value)


def _day(value: dt.date) -> str:
    return f"{_DAYS[value.weekday()]} {value.isoformat()[:10]}"


def _when(start: dt.date, end: dt.date | None) -> str:
    if not isinstance(start, dt.datetime):
        last = end - dt.timedelta(days=1) if end is not None and end > start else start
        return f"{_day(start)} (all day)" if last == start else f"{_day(start)} – {_day(last)} (all day)"
    if isinstance(end, dt.datetime) and end.tzinfo is not None and start.tzinfo is not None:
        end = end.astimezone(start.tzinfo)
    text = f"{_day(start)} {start:%H:%M}"
    if isinstance(end, dt.datetime) and end != start:
        text += f"–{end:%H:%M}" if end.date() == start.date() else f" – {_day(end)} {end:%H:%M}"
    tz = _tzname(start)
    return f"{text} ({tz})" if tz else text


def _rrule_text(rule: Any) -> str | None:
    try:
        raw = rule.to_ical()
    except Exception:
        return _text(rule)
    return raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw)


def _describe_rrule(rule: Any) -> str:
    """``repeats weekly on TU,TH``, ``repeats every 2 weeks until 2024-12-31``, ``repeats daily (10 times)``."""
    try:
        parts = {str(k).upper(): v if isinstance(v, list) else [v] for k, v in dict(rule).items()}
    except Exception:
        return f"repeats ({_rrule_text(rule)})"
    freq = str(parts.get("FREQ", [""])[0]).upper()
    word, unit = _FREQ_WORDS.get(freq, (freq.lower() or "repeatedly", "times"))
    interval = parts.get("INTERVAL", [1])[0]
    try:
        interval = int(interval)
    except (TypeError, ValueError):
        interval = 1
    text = f"repeats every {interval} {unit}" if interval > 1 else f"repeats {word}"
    for key, label in (("BYDAY", "on"), ("BYMONTHDAY", "on day"), ("BYMONTH", "in month")):
        if parts.get(key):
            text += f" {label} {','.join(str(v) for v in parts[key])}"
    if parts.get("UNTIL"):
        until = parts["UNTIL"][0]
        text += f" until {until.isoformat()[:10] if isinstance(until, dt.date) else until}"
    if parts.get("COUNT"):
        text += f" ({parts['COUNT'][0]} times)"
    return text


# -- to-dos and free/busy ------------------------------------------------------------------------
def _todo_segment(todo: Any, i: int, ctx: ReadContext, calname: str | None) -> Segment | None:
    uid = _text(todo.get("UID")) or f"todo-{i + 1}"
    summary = _text(todo.get("SUMMARY")) or "(no title)"
    try:
        start = _dt_value(todo.get("DTSTART"))
        due = _dt_value(todo.get("DUE"))
        completed = _dt_value(todo.get("COMPLETED"))
    except Exception as exc:
        ctx.note(f"to-do {uid!r}: unreadable times ({exc})")
        start = due = completed = None
    status = _text(todo.get("STATUS"))
    text = f"To-do: {summary}"
    if isinstance(due, dt.date):
        text += f" — due {_when(due, None)}"
    if status:
        text += f" [{status.lower()}]"
    if description := _text(todo.get("DESCRIPTION")):
        text += f"\n{description}"
    at = _iso(due if isinstance(due, dt.date) else start if isinstance(start, dt.date) else None)
    return ctx.segment(
        text,
        ItemLocator(unit="item", id=uid, at=at),
        kind="todo",
        uid=uid,
        summary=summary,
        start=_iso(start) if isinstance(start, dt.date) else None,
        due=_iso(due) if isinstance(due, dt.date) else None,
        completed=_iso(completed) if isinstance(completed, dt.date) else None,
        status=status,
        priority=_text(todo.get("PRIORITY")),
        rrule=_rrule_text(todo.get("RRULE")) if "RRULE" in todo else None,
        calendar=calname,
    )


def _freebusy_segment(fb: Any, i: int, ctx: ReadContext, calname: str | None) -> Segment | None:
    uid = _text(fb.get("UID")) or f"freebusy-{i + 1}"
    who = _address(fb.get("ORGANIZER")) or _address(fb.get("ATTENDEE"))
    blocks: list[str] = []
    starts: list[dt.date] = []
    for prop in _as_list(fb.get("FREEBUSY")):
        kind = str(getattr(prop, "params", {}).get("FBTYPE", "BUSY")).lower().replace("-", " ")
        periods = prop if isinstance(prop, list) else [prop]
        for period in periods:
            value = getattr(period, "dt", period)
            if isinstance(value, tuple) and len(value) == 2:
                begin, stop = value
                if isinstance(stop, dt.timedelta):
                    stop = begin + stop
                blocks.append(f"{kind} {_when(begin, stop)}")
                starts.append(begin)
            else:
                blocks.append(f"{kind} {value}")
    if not blocks:
        return None
    text = f"Free/busy{' of ' + who if who else ''}: " + "; ".join(blocks)
    return ctx.segment(
        text,
        ItemLocator(unit="item", id=uid, at=_iso(starts[0]) if starts else None),
        kind="freebusy",
        uid=uid,
        who=who,
        calendar=calname,
    )
