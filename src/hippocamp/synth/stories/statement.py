"""The bank statement (CSV): how often and how much the user paid at the café in a month."""

from __future__ import annotations

from datetime import timedelta

from hippocamp.synth.plan import Ask, Cite
from hippocamp.synth.stories.base import Context, money, story


@story("statement")
def statement(ctx: Context) -> None:
    w, rng = ctx.world, ctx.rng("statement")
    cafe = w.places["cafe"]
    m = (w.start.replace(day=28) + timedelta(days=4)).replace(day=1)
    rows: list[list[object]] = []
    cafe_rows: list[int] = []
    payees = [
        w.places["supermarket"].name,
        "City Transport",
        "Bookshop Atlas",
        w.places["restaurant"].name,
        "Pharmacy Plus",
        "Streaming Co",
    ]
    for day in range(1, 28):
        d = m.replace(day=day)
        if rng.random() < 0.32:
            cafe_rows.append(len(rows))
            rows.append([f"{d:%Y-%m-%d}", cafe.name, f"-{rng.choice([3.2, 3.6, 4.1, 4.5]):.2f}", "card"])
        if rng.random() < 0.5:
            rows.append([f"{d:%Y-%m-%d}", rng.choice(payees), f"-{rng.uniform(4, 60):.2f}", "card"])
    if len(cafe_rows) < 3:
        for day in (3, 11, 19)[: 3 - len(cafe_rows)]:
            cafe_rows.append(len(rows))
            rows.append([f"{m.replace(day=day):%Y-%m-%d}", cafe.name, "-3.60", "card"])
    order = sorted(range(len(rows)), key=lambda i: (rows[i][0], i))
    rows = [rows[i] for i in order]
    cafe_rows = sorted(order.index(i) for i in cafe_rows)
    spent = round(sum(-float(str(rows[i][2])) for i in cafe_rows), 2)
    keys = {f"cafe-{i}": [i] for i in cafe_rows}
    path = ctx.add(
        f"Documents/Finance/Statement {m:%Y-%m}.csv",
        "csv",
        w.at(m + timedelta(days=33), 8),
        header=["date", "description", f"amount_{w.currency.lower()}", "method"],
        rows=rows,
        keys=keys,
    )
    ctx.plan.ask(
        Ask(
            "counting",
            f"How many times did I pay at {cafe.name} in {m:%B %Y}, and how much did I spend there?",
            f"{len(cafe_rows)} times, {money(w.currency, spent)} in total.",
            [Cite(path, tuple(keys))],
            [
                (f"The bank statement for {m:%B} lists card payments.", []),
                (f"Count the {cafe.name} rows and add their amounts.", [1]),
            ],
            perception=["document_understanding"],
            reasoning=["computation"],
            search=["system", "semantic"],
            facts=[cafe.name],
        )
    )
