"""The gym routine: a note, a weekly recurring event and photos taken at the gym."""

from __future__ import annotations

from datetime import timedelta

from hippocamp.synth.plan import Ask, Cite
from hippocamp.synth.render import Exif, Line
from hippocamp.synth.render.text import CalEvent
from hippocamp.synth.stories.base import (
    ICS_DAYS,
    WEEKDAYS,
    Context,
    calendar_path,
    gps,
    hm,
    money,
    story,
    weekday_on_or_after,
)


@story("routine")
def routine(ctx: Context) -> None:
    w, rng = ctx.world, ctx.rng("routine")
    gym = w.places["gym"]
    days = sorted(rng.sample([0, 1, 2, 3, 4], 2))
    hour = rng.choice([6, 7, 18])
    fee = w.extra.setdefault("gym_fee", rng.choice([29, 35, 39, 45]))
    first = weekday_on_or_after(w.start, days[0])
    start = w.at(first, hour, 0 if hour != 18 else 30)
    byday = ",".join(ICS_DAYS[d] for d in days)
    ctx.event(
        CalEvent(
            "gym@synth",
            f"Gym - {gym.name}",
            start,
            start + timedelta(hours=1),
            gym.address,
            rrule=f"FREQ=WEEKLY;BYDAY={byday};UNTIL={w.end:%Y%m%d}T235959",
            key="gym",
        )
    )
    names = " and ".join(f"{WEEKDAYS[d]}s" for d in days)
    note = ctx.add(
        "Notes/gym routine.md",
        "text",
        w.at(first - timedelta(days=1), 20),
        w.at(first + timedelta(days=30), 8, 10),
        lines=[
            Line("# Gym routine"),
            Line(""),
            Line(f"- Gym on {names}, {hm(start)}, at {gym.name}", key="days"),
            Line(f"- Membership: {money(w.currency, float(fee))} per month, paid on the 5th", key="fee"),
            Line("- Goal: 5 km run under 30 minutes"),
        ],
    )
    photos: list[str] = []
    weeks = 2 if ctx.scale.name == "small" else 8
    for k in range(weeks):
        d = first + timedelta(days=7 * k + (days[k % 2] - days[0]))
        if d > w.end:
            break
        t = w.at(d, start.hour, start.minute + 10 + k % 20)
        photos.append(
            ctx.add(
                f"Pictures/Camera/{ctx.img_name()}",
                "image",
                t,
                location=gps(gym.lat, gym.lon),
                kind="sign",
                seed=rng.randint(0, 10**6),
                exif=Exif(t, gym.lat, gym.lon, "Fairphone", "FP4"),
                lines=[Line(gym.name.upper(), key="sign"), Line("Open 6:00 - 23:00", style="small")],
            )
        )
    ctx.plan.ask(
        Ask(
            "routine",
            "What is my weekly exercise routine?",
            f"The gym on {names} at {hm(start)}, at {gym.name}.",
            [
                Cite(note, ("days",)),
                Cite(calendar_path(w), ("gym",)),
                Cite(photos[0], ("sign",)),
                Cite(photos[1], ("sign",)),
            ],
            [
                ("Routines show in notes, recurring events and photos taken at the same place.", []),
                ("The note names the days, time and gym.", [1]),
                ("A weekly recurring event agrees.", [2]),
                ("Photos taken at the gym on those days at that time confirm it.", [3, 4]),
            ],
            qa_type="profiling",
            profiling_type="routine",
            perception=["image_understanding", "document_understanding"],
            reasoning=["summarization"],
            facts=[gym.name],
        )
    )
