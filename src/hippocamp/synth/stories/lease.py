"""The lease: rent and term in the signed agreement (PDF), the landlord's e-mail about the keys."""

from __future__ import annotations

from datetime import timedelta

from hippocamp.synth.plan import Ask, Cite
from hippocamp.synth.render import Line, Page
from hippocamp.synth.stories.base import Context, hm, money, nice_date, story


@story("lease")
def lease(ctx: Context) -> None:
    w, rng = ctx.world, ctx.rng("lease")
    me, landlord = w.owner, w.person("landlord")
    rent = rng.choice([950, 1150, 1275, 1450, 1620, 1800])
    w.extra["rent"] = rent
    deposit = rent * 2
    start = w.start
    signed = w.at(start - timedelta(days=12), 21, 14)
    street = w.home.address
    path = ctx.add(
        f"Documents/Housing/Lease Agreement {start.year}.pdf",
        "pdf",
        signed,
        title="Residential lease agreement",
        author=landlord.name,
        created=signed,
        labels=[(0, "/r", 1), (1, "/D", 1)],
        pages=[
            Page(
                [
                    Line("RESIDENTIAL LEASE AGREEMENT", style="title"),
                    Line(f"Premises: {street}"),
                    Line(f"Tenant: {me.name}"),
                    Line("Contents: 1. Rent and term  2. Parties and deposit"),
                ]
            ),
            Page(
                [
                    Line("1. RENT AND TERM", style="heading"),
                    Line(f"Monthly rent: {money(w.currency, rent)}, due on the 1st of each month.", key="rent"),
                    Line(f"The term starts on {nice_date(start)} and runs for twelve months.", key="rent"),
                    Line("Service charges for water and heating are included in the rent."),
                ]
            ),
            Page(
                [
                    Line("2. PARTIES AND DEPOSIT", style="heading"),
                    Line(f"Landlord: {landlord.name}", key="landlord"),
                    Line(
                        f"Deposit: {money(w.currency, deposit)}, returned within 30 days of the end of the term.",
                        key="deposit",
                    ),
                    Line("Pets are allowed with the landlord's written consent."),
                ]
            ),
        ],
    )
    handover = w.at(start - timedelta(days=1), 17)
    sent = w.at(start - timedelta(days=9), 18, 2)
    mail = ctx.add(
        f"Mail/Inbox/{sent:%Y-%m-%d} Re lease.eml",
        "eml",
        sent,
        sender=f"{landlord.name} <{landlord.email}>",
        to=[f"{me.name} <{me.email}>"],
        sent=sent,
        subject="Re: lease",
        message_id=f"<lease-{sent:%Y%m%d}@{landlord.email.split('@')[1]}>",
        attachments=[("Lease Agreement signed.pdf", path)],
        needs=(path,),
        body=[
            Line(f"Hi {me.first},"),
            Line(""),
            Line("Thanks for signing, I have your copy of the agreement."),
            Line(f"I will hand over the keys on {nice_date(handover)} at {hm(handover)},", key="keys"),
            Line(f"at the flat on {street.split(',')[0]}.", key="keys"),
            Line(""),
            Line("Best,"),
            Line(landlord.name),
        ],
    )
    ctx.plan.ask(
        Ask(
            "single-file",
            "How much is my monthly rent, and when did my lease start?",
            f"{money(w.currency, rent)} per month; the lease started on {nice_date(start)}.",
            [Cite(path, ("rent",))],
            [
                ("Look for the lease among the housing documents.", []),
                ("Read the rent and the start of the term in section 1 of the agreement.", [1]),
            ],
            perception=["document_understanding"],
            facts=[f"{rent:,}"],
        )
    )
    ctx.plan.ask(
        Ask(
            "multi-file",
            "Who is my landlord, and when were the keys handed over?",
            f"{landlord.name}; the keys were handed over on {nice_date(handover)} at {hm(handover)}.",
            [Cite(path, ("landlord",)), Cite(mail, ("keys",))],
            [
                ("The landlord is named in the lease and wrote about the keys.", []),
                ("The lease names the landlord.", [1]),
                ("His e-mail gives the handover date and time.", [2]),
            ],
            perception=["document_understanding"],
            reasoning=["verification"],
            facts=[landlord.last, hm(handover)],
        )
    )
