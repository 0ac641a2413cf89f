"""A plan that changes: a friend's dinner invitation, then an e-mail that moves it."""

from __future__ import annotations

from datetime import timedelta

from hippocamp.synth.plan import Ask, Cite
from hippocamp.synth.render import Line
from hippocamp.synth.stories.base import WEEKDAYS, Context, hm, nice_date, story, weekday_on_or_after
from hippocamp.synth.world import RESTAURANTS, Place


@story("plan-change", repeats=4)
def plan_change(ctx: Context) -> None:
    w, rng = ctx.world, ctx.rng("plan-change")
    friend = w.person(f"friend{ctx.instance + 1}")
    if ctx.instance == 0:
        first_place, final_place = w.places["restaurant"], w.places["restaurant2"]
    else:
        a, b = rng.sample(RESTAURANTS, 2)
        first_place, final_place = Place(a, "restaurant", "", 0, 0), Place(b, "restaurant", "", 0, 0)
    friday = weekday_on_or_after(w.start + timedelta(days=rng.randint(30, 50) + 17 * ctx.instance), 4)
    if friday + timedelta(days=1) > w.end:
        return
    planned = w.at(friday, 19)
    final = w.at(friday + timedelta(days=1), 20)
    sent1 = w.at(friday - timedelta(days=8), 9, 12)
    sent2 = w.at(friday - timedelta(days=3), 22, 40)
    me = w.owner
    first = ctx.add(
        f"Mail/Inbox/{sent1:%Y-%m-%d} Dinner with {friend.first}.eml",
        "eml",
        sent1,
        sender=f"{friend.name} <{friend.email}>",
        to=[f"{me.name} <{me.email}>"],
        sent=sent1,
        subject="Dinner?",
        message_id=f"<dinner-1-{sent1:%Y%m%d}-{ctx.instance}@example.org>",
        body=[
            Line(f"Hi {me.first}!"),
            Line(""),
            Line(
                f"Dinner at {first_place.name} on {WEEKDAYS[planned.weekday()]} {nice_date(planned)} at {hm(planned)}?",
                key="plan",
            ),
            Line("I booked a table for two."),
            Line(""),
            Line(friend.first),
        ],
    )
    second = ctx.add(
        f"Mail/Inbox/{sent2:%Y-%m-%d} Re Dinner with {friend.first}.eml",
        "eml",
        sent2,
        sender=f"{friend.name} <{friend.email}>",
        to=[f"{me.name} <{me.email}>"],
        sent=sent2,
        subject="Re: Dinner?",
        message_id=f"<dinner-2-{sent2:%Y%m%d}-{ctx.instance}@example.org>",
        in_reply_to=f"<dinner-1-{sent1:%Y%m%d}-{ctx.instance}@example.org>",
        body=[
            Line("Change of plans, sorry!"),
            Line(""),
            Line(
                f"Can we move dinner to {WEEKDAYS[final.weekday()]} {nice_date(final)} at {hm(final)}, "
                f"at {final_place.name} instead?",
                key="change",
            ),
            Line(f"{first_place.name} is closed for a private event."),
            Line(""),
            Line(friend.first),
        ],
    )
    ctx.plan.ask(
        Ask(
            "temporal",
            f"When and where am I having dinner with {friend.first}?",
            f"On {WEEKDAYS[final.weekday()]} {nice_date(final)} at {hm(final)}, at {final_place.name}; "
            f"the earlier plan for {nice_date(planned)} at {first_place.name} was changed.",
            [Cite(first, ("plan",)), Cite(second, ("change",))],
            [
                (f"Find the messages with {friend.first} about dinner and take the latest plan.", []),
                ("The first e-mail proposes the original date and place.", [1]),
                ("A later reply moves the dinner; this is the current plan.", [2]),
            ],
            perception=["document_understanding"],
            reasoning=["verification"],
            facts=[final_place.name],
        )
    )
