"""A dietary preference, told to friends in exported chat messages."""

from __future__ import annotations

from datetime import timedelta

from hippocamp.synth.plan import Ask, Cite
from hippocamp.synth.stories.base import Context, story


@story("preference")
def preference(ctx: Context) -> None:
    w, rng = ctx.world, ctx.rng("preference")
    friend, friend2 = w.person("friend2"), w.person("friend3")
    diet = rng.choice(["vegetarian", "vegan", "pescatarian"])
    t0 = w.at(w.start + timedelta(days=rng.randint(10, 30)), 19, 3)
    me = w.owner
    messages = [
        {"from": friend.name, "time": f"{t0:%Y-%m-%dT%H:%M}", "text": "Pizza night on Saturday? I'll order."},
        {
            "from": me.name,
            "time": f"{t0 + timedelta(minutes=4):%Y-%m-%dT%H:%M}",
            "text": f"Yes! Remember I'm {diet} now, so no meat for me please.",
        },
        {"from": friend.name, "time": f"{t0 + timedelta(minutes=6):%Y-%m-%dT%H:%M}", "text": "Noted!"},
        {
            "from": friend2.name,
            "time": f"{t0 + timedelta(days=12):%Y-%m-%dT%H:%M}",
            "text": "Birthday dinner ideas? Steakhouse or the new place?",
        },
        {
            "from": me.name,
            "time": f"{t0 + timedelta(days=12, minutes=9):%Y-%m-%dT%H:%M}",
            "text": f"The new place, they have proper {diet} dishes.",
        },
    ]
    path = ctx.add(
        "Documents/Exports/messages_export.json",
        "json",
        w.at(w.end, 22),
        header={"app": "Chatter", "exported": f"{w.end:%Y-%m-%d}", "owner": me.name},
        items_key="messages",
        items=messages,
        keys={"diet": [1], "diet2": [4]},
        text_of="text",
    )
    ctx.plan.ask(
        Ask(
            "preference",
            "What dietary preference should a restaurant booking for me respect?",
            f"I am {diet}: no meat.",
            [Cite(path, ("diet",)), Cite(path, ("diet2",))],
            [
                ("Dietary choices show in what I tell friends.", []),
                ("I told a friend I am now " + diet + ".", [1]),
                ("Later I chose a restaurant for its " + diet + " dishes.", [2]),
            ],
            qa_type="profiling",
            profiling_type="preference",
            perception=["document_understanding"],
            reasoning=["summarization"],
            facts=[diet],
        )
    )
