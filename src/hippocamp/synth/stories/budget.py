"""The budget workbook: a sheet per month; a month's total and the change of one category."""

from __future__ import annotations

from datetime import date, timedelta

from hippocamp.synth.plan import Ask, Cite
from hippocamp.synth.render import Sheet
from hippocamp.synth.stories.base import Context, money, plain, story

BUDGET_CATEGORIES = ("Rent", "Groceries", "Transport", "Eating out", "Gym", "Pet care")


@story("budget")
def budget(ctx: Context) -> None:
    w, rng = ctx.world, ctx.rng("budget")
    lease_rent = float(w.extra.get("rent", 1200))  # type: ignore[arg-type]
    gym = float(w.extra.setdefault("gym_fee", rng.choice([29, 35, 39, 45])))  # type: ignore[arg-type]
    months: list[date] = []
    d = w.start
    while d <= w.end:
        months.append(d)
        d = (d.replace(day=28) + timedelta(days=4)).replace(day=1)
    sheets: list[Sheet] = []
    values: dict[date, dict[str, float]] = {}
    for m in months:
        v = {
            "Rent": lease_rent,
            "Groceries": round(rng.uniform(220, 380), 2),
            "Transport": round(rng.uniform(40, 95), 2),
            "Eating out": round(rng.uniform(60, 210), 2),
            "Gym": gym,
            "Pet care": round(rng.uniform(20, 140), 2),
        }
        values[m] = v
        n = len(BUDGET_CATEGORIES)
        rows: list[list[object]] = [["Category", f"Amount ({w.currency})"]]
        rows += [[c, v[c]] for c in BUDGET_CATEGORIES]
        rows.append(["Total", f"=SUM(B2:B{n + 1})"])
        total = round(sum(v.values()), 2)
        keys = {f"{m:%B}/total": f"A{n + 2}:B{n + 2}"}
        keys |= {f"{m:%B}/cat-{c}": f"A{i + 2}:B{i + 2}" for i, c in enumerate(BUDGET_CATEGORIES)}
        sheets.append(Sheet(f"{m:%B}", rows, cached={f"B{n + 2}": total}, keys=keys, widths={"A": 18, "B": 16}))
    last = w.at(w.end, 21, 40)
    path = ctx.add(
        f"Documents/Finance/Budget {w.start.year}.xlsx",
        "xlsx",
        w.at(w.start, 20),
        last,
        sheets=sheets,
        title=f"Budget {w.start.year}",
        author=w.owner.name,
        created=w.at(w.start, 20),
    )
    m2 = months[1]
    t2 = round(sum(values[m2].values()), 2)
    ctx.plan.ask(
        Ask(
            "single-file",
            f"According to my budget workbook, what were my total expenses in {m2:%B %Y}?",
            f"{money(w.currency, t2)}.",
            [Cite(path, (f"{m2:%B}/total",))],
            [("Open the budget workbook.", []), (f"Read the total row of the {m2:%B} sheet.", [1])],
            perception=["document_understanding"],
            facts=[plain(t2)],
        )
    )
    a, b = months[0], months[-1]
    ea, eb = values[a]["Eating out"], values[b]["Eating out"]
    diff = round(eb - ea, 2)
    more = "more" if diff >= 0 else "less"
    ctx.plan.ask(
        Ask(
            "arithmetic",
            f"How much more or less did I spend on eating out in {b:%B} than in {a:%B}?",
            f"{money(w.currency, abs(diff))} {more} ({money(w.currency, eb)} in {b:%B} against "
            f"{money(w.currency, ea)} in {a:%B}).",
            [Cite(path, (f"{a:%B}/cat-Eating out",)), Cite(path, (f"{b:%B}/cat-Eating out",))],
            [
                ("Compare the eating-out rows of two monthly sheets.", []),
                (f"{a:%B}: {ea:.2f}.", [1]),
                (f"{b:%B}: {eb:.2f}; the difference is {abs(diff):.2f}.", [1, 2]),
            ],
            perception=["document_understanding"],
            reasoning=["computation"],
            facts=[plain(ea), plain(eb)],
        )
    )
