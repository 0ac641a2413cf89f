"""Calendar text agrees with its event: the start a title or notes state is the event's start."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from hippocamp.synth.personas.clock import agree, clock_text, stated_start


@pytest.mark.parametrize(
    ("title", "notes", "expected"),
    [
        ("Work 7pm-7am", "clock in at 7pm, pack dinner", (19 * 60, None)),
        ("VA clinic", "bring DD-214 copy, 10:15", (10 * 60 + 15, None)),
        ("Coffee with sponsor", "Sat 9am", (9 * 60, 5)),
        ("DoorDash block", "5-8pm", (17 * 60, None)),
        ("Walk with Marcus", "2:15", (14 * 60 + 15, None)),  # a bare afternoon hour on a calendar
        ("Lunch 11-2pm", "", (11 * 60, None)),
        ("Dinner at 7:30pm", "", (19 * 60 + 30, None)),
        ("9am standup", "Zoom", (9 * 60, None)),
        ("Gym", "noon", (12 * 60, None)),
        ("Sunday cooking", "", (None, 6)),
        ("Refill Mom's pill organizer", "weekly, Sunday night", (20 * 60, 6)),
        # times about something else, and numbers that are not times
        ("Mom - her cardiology visit", "pick her up 9:15, bring the pill organizer list", (None, None)),
        ("Daycare pickup", "leave work by 5:10", (None, None)),
        ("Run 5k", "30 min easy", (None, None)),
        ("Room 14", "", (None, None)),
    ],
)
def test_the_start_a_text_states(title: str, notes: str, expected: tuple[int | None, int | None]) -> None:
    assert stated_start(title, notes) == expected


def test_an_event_moves_to_its_stated_start_within_its_window() -> None:
    tuesday = datetime(2024, 3, 12, 10, 15)
    assert agree(tuesday, "Coffee with sponsor", "Sat 9am") == datetime(2024, 3, 9, 9, 0)  # the nearest Saturday
    window = (date(2024, 3, 10), date(2024, 3, 20))
    assert agree(tuesday, "Coffee with sponsor", "Sat 9am", window) == datetime(2024, 3, 16, 9, 0)  # a week on
    assert agree(tuesday, "Work 7pm-7am", "") == datetime(2024, 3, 12, 19, 0)
    assert agree(tuesday, "Dentist", "bring the insurance card") == tuesday  # nothing stated: unchanged


def test_times_are_written_as_the_banks_write_them() -> None:
    assert [clock_text(datetime(2024, 1, 1, h, m)) for h, m in ((9, 0), (12, 0), (13, 30), (0, 5), (19, 0))] == [
        "9am", "noon", "1:30pm", "12:05am", "7pm"]  # fmt: skip


def test_words_about_the_date_agree_with_the_send_time() -> None:
    import random

    from hippocamp.synth.personas.clock import dated_slots, fits_date

    sent = datetime(2025, 3, 12, 9, 30)  # a Wednesday morning
    for seed in range(20):
        slots = dated_slots(sent, random.Random(seed))
        assert slots["today"] == "Wednesday" and slots["this_month"] == "March"
        assert slots["day"] != "Wednesday" and slots["past_month"] in ("February", "January", "December")
        assert slots["month"] in ("April", "May")
    assert not fits_date("can't believe it's already {this_month}", sent)  # the 12th: not "already"
    assert fits_date("can't believe it's already {this_month}", datetime(2025, 3, 3, 9))
    assert fits_date("happy {today}!! almost the weekend-ish", sent)
    assert not fits_date("happy {today}!! almost the weekend-ish", datetime(2025, 3, 16, 9))  # a Sunday
    assert fits_date("morning!", sent) and not fits_date("morning!", datetime(2025, 3, 12, 19, 25))
    assert fits_date("hey", datetime(2025, 3, 12, 19, 25))
