"""Supermarket receipts: a month of photographed receipts to add up, and the milk on every one
(a preference)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from hippocamp.synth.plan import Ask, Cite
from hippocamp.synth.render import Exif, Line
from hippocamp.synth.stories.base import Context, gps, money, story


@dataclass
class _Receipt:
    path: str
    total: float
    when: datetime


GROCERIES = [
    ("Oat milk 1L", 1.89),
    ("Sourdough bread", 3.2),
    ("Bananas", 1.45),
    ("Tomatoes", 2.3),
    ("Greek yoghurt", 2.75),
    ("Coffee beans", 8.9),
    ("Pasta 500g", 1.6),
    ("Cheddar", 4.1),
    ("Apples", 2.6),
    ("Spinach", 1.95),
    ("Eggs x10", 3.4),
    ("Rice 1kg", 2.2),
    ("Hummus", 2.45),
]


@story("receipts", repeats=11)
def receipts(ctx: Context) -> None:
    w, rng = ctx.world, ctx.rng("receipts")
    shop = w.places["supermarket"]
    month_start = w.start.replace(day=1)
    for _ in range(ctx.instance + 1):
        month_start = (month_start + timedelta(days=32)).replace(day=1)
    if month_start.replace(day=27) > w.end:
        return
    days = sorted(rng.sample(range(1, 27), ctx.scale.receipts))
    made: list[_Receipt] = []
    for d in days:
        when = w.at(month_start.replace(day=d), rng.randint(9, 19), rng.randint(0, 59))
        items = [GROCERIES[0], *rng.sample(GROCERIES[1:], rng.randint(2, 4))]
        total = round(sum(p for _, p in items), 2)
        lines = [
            Line(shop.name, style="title"),
            Line(shop.address, style="small"),
            Line(f"{when:%d/%m/%Y %H:%M}", key="date"),
        ]
        lines += [Line(f"{name}  {price:.2f}", key="items") for name, price in items]
        lines.append(Line(f"TOTAL {money(w.currency, total)}", key="total"))
        lines.append(Line("Card payment - thank you", style="small"))
        path = ctx.add(
            f"Pictures/Receipts/{ctx.img_name()}",
            "image",
            when,
            location=gps(shop.lat, shop.lon),
            kind="receipt",
            lines=lines,
            seed=rng.randint(0, 10**6),
            exif=Exif(when, shop.lat, shop.lon, "Fairphone", "FP4"),
        )
        made.append(_Receipt(path, total, when))
    total = round(sum(r.total for r in made), 2)
    month = f"{month_start:%B %Y}"
    ctx.plan.ask(
        Ask(
            "arithmetic",
            f"How much did I spend at {shop.name} in {month}, in total?",
            f"{money(w.currency, total)} over {len(made)} receipts.",
            [Cite(r.path, ("total",)) for r in made],
            [
                (f"Collect every {shop.name} receipt from {month}.", []),
                *[(f"Receipt of {r.when:%d %B}: {money(w.currency, r.total)}.", [i + 1]) for i, r in enumerate(made)],
                (
                    "Add the totals: " + " + ".join(f"{r.total:.2f}" for r in made) + f" = {total:.2f}.",
                    list(range(1, len(made) + 1)),
                ),
            ],
            perception=["image_understanding"],
            reasoning=["computation"],
            search=["semantic", "system"],
            facts=[f"{r.total:.2f}" for r in made],
        )
    )
    if ctx.instance:
        return
    # preference: oat milk on every receipt
    chosen = made[:2]
    ctx.plan.ask(
        Ask(
            "preference",
            "What kind of milk do I usually buy?",
            "Oat milk: it is on every supermarket receipt.",
            [Cite(r.path, ("items",)) for r in chosen],
            [
                ("Preferences show in repeated purchases.", []),
                *[(f"The receipt of {r.when:%d %B} lists oat milk.", [i + 1]) for i, r in enumerate(chosen)],
            ],
            qa_type="profiling",
            profiling_type="preference",
            perception=["image_understanding"],
            reasoning=["summarization"],
            facts=["Oat milk"],
        )
    )
