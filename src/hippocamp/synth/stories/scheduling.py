"""Scheduling: a course's evening options against weekly recurring commitments (a constraint)."""

from __future__ import annotations

from datetime import timedelta

from hippocamp.synth.plan import Ask, Cite
from hippocamp.synth.render import Line
from hippocamp.synth.render.text import CalEvent
from hippocamp.synth.stories.base import ICS_DAYS, WEEKDAYS, Context, calendar_path, story, weekday_on_or_after


@story("scheduling")
def scheduling(ctx: Context) -> None:
    w, rng = ctx.world, ctx.rng("scheduling")
    course = w.persona.course
    options = [0, 2, 3]  # Monday, Wednesday, Thursday evenings
    free = rng.choice(options)
    busy = [d for d in options if d != free]
    activities = [("Choir rehearsal", "Community hall"), ("Book club", w.places["cafe"].name)]
    keys = []
    for (title, where), d in zip(activities, busy, strict=True):
        first = weekday_on_or_after(w.start, d)
        t = w.at(first, 19, 30)
        key = title.lower().replace(" ", "-")
        keys.append(key)
        ctx.event(
            CalEvent(
                f"{key}@synth",
                title,
                t,
                t + timedelta(hours=1, minutes=30),
                where,
                rrule=f"FREQ=WEEKLY;BYDAY={ICS_DAYS[d]};UNTIL={w.end:%Y%m%d}T235959",
                key=key,
            )
        )
    sent = w.at(w.end - timedelta(days=rng.randint(15, 25)), 11, 20)
    school = rng.choice(["Open Arts Academy", "Evening School Nova", "Learning Lab"])
    mail = ctx.add(
        f"Mail/Inbox/{sent:%Y-%m-%d} {course} - choose your evening.eml",
        "eml",
        sent,
        sender=f"{school} <courses@{school.lower().replace(' ', '')}.example>",
        to=[f"{w.owner.name} <{w.owner.email}>"],
        sent=sent,
        subject=f"{course} - choose your evening",
        message_id=f"<course-{sent:%Y%m%d}@example.org>",
        body=[
            Line(f"Dear {w.owner.first},"),
            Line(""),
            Line(f"{course} runs weekly from 19:00 to 21:00.", key="options"),
            Line("Please pick one evening: Monday, Wednesday or Thursday.", key="options"),
            Line(""),
            Line(school),
        ],
    )
    clash = ", ".join(f"{WEEKDAYS[d]} clashes with {t.lower()}" for (t, _), d in zip(activities, busy, strict=True))
    ctx.plan.ask(
        Ask(
            "scheduling",
            f"Which evening option for the {course} fits my weekly commitments?",
            f"{WEEKDAYS[free]}: {clash}.",
            [Cite(mail, ("options",)), Cite(calendar_path(w), (keys[0],)), Cite(calendar_path(w), (keys[1],))],
            [
                ("Compare the course's evenings with recurring evening commitments.", []),
                ("The school offers Monday, Wednesday or Thursday, 19:00-21:00.", [1]),
                ("Two of those evenings already have weekly events.", [2, 3]),
            ],
            qa_type="profiling",
            profiling_type="constraint",
            perception=["document_understanding"],
            reasoning=["verification"],
            facts=[WEEKDAYS[free]],
        )
    )
