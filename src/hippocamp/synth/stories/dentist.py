"""The dentist: two check-ups in the calendar, the user's own and a sibling's they give a lift to."""

from __future__ import annotations

from datetime import timedelta

from hippocamp.synth.plan import Ask, Cite
from hippocamp.synth.render.text import CalEvent
from hippocamp.synth.stories.base import Context, calendar_path, hm, nice_date, story


@story("dentist")
def dentist(ctx: Context) -> None:
    w, rng = ctx.world, ctx.rng("dentist")
    sibling = w.person("sibling")
    clinic = w.places["dentist"]
    mine = w.at(w.end - timedelta(days=rng.randint(10, 20)), rng.choice([8, 9, 15]), 30)
    theirs = mine - timedelta(days=rng.randint(2, 6), hours=1)
    ctx.event(
        CalEvent(
            f"dentist-{mine:%Y%m%d}@synth",
            "Dentist check-up",
            mine,
            mine + timedelta(minutes=45),
            clinic.name,
            key="dentist-me",
        )
    )
    ctx.event(
        CalEvent(
            f"dentist-sib-{theirs:%Y%m%d}@synth",
            f"Dentist ({sibling.first}) - give a lift",
            theirs,
            theirs + timedelta(minutes=45),
            clinic.name,
            key="dentist-sibling",
        )
    )
    ctx.plan.ask(
        Ask(
            "temporal",
            "When is my own dentist appointment?",
            f"On {nice_date(mine)} at {hm(mine)}, a check-up at {clinic.name}.",
            [Cite(calendar_path(w), ("dentist-me",))],
            [
                ("Dentist visits are in the calendar; some are for other people.", []),
                (f"The check-up is the user's own; the other dentist event is {sibling.first}'s.", [1]),
            ],
            perception=["grounding"],
            search=["semantic", "system"],
            facts=[f"{mine:%Y%m%d}"],
        )
    )
