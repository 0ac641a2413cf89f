"""A work project: three versions of a proposal (the final one counts), the kickoff slides and a
photographed whiteboard of action items."""

from __future__ import annotations

from datetime import datetime, timedelta

from hippocamp.synth.plan import Ask, Cite
from hippocamp.synth.render import Exif, Line, Slide, Table
from hippocamp.synth.stories.base import Context, gps, nice_date, story


@story("project")
def project(ctx: Context) -> None:
    w, rng = ctx.world, ctx.rng("project")
    name, cur = w.project, w.currency
    budgets = sorted(rng.sample(range(38, 70), 3))
    b1, b2, b3 = (b * 1000 + rng.choice([0, 500]) for b in budgets)
    final_budget = b2  # the final version settles between the two drafts
    lead, helper = w.person("colleague1"), w.person("colleague2")
    folder = f"Documents/Work/{name}"
    t0 = w.at(w.start + timedelta(days=rng.randint(8, 15)), 10)

    def proposal(version: str, amount: int, when: datetime, extra: str) -> list[Line | Table]:
        return [
            Line(f"{name}: {w.persona.project_kind} ({version})", style="title"),
            Line(f"Prepared by {w.owner.name} for {w.org}."),
            Line("Goals", style="heading"),
            Line(f"Deliver the first phase of {name.lower()} within the term."),
            Line("Budget", style="heading"),
            Line(f"Total budget: {cur} {amount:,}", key="budget"),
            Table(
                [
                    ["Phase", "Owner", "Weeks"],
                    ["Research", w.owner.name, "4"],
                    ["Pilot", lead.name, "6"],
                    ["Report", helper.name, "2"],
                ],
                key="phases",
            ),
            Line(extra),
        ]

    v1 = ctx.add(
        f"{folder}/{name} {w.persona.project_kind} v1.docx",
        "docx",
        t0,
        title=name,
        author=w.owner.name,
        created=t0,
        blocks=proposal("draft 1", b1, t0, "Open question: is the pilot budget enough?"),
    )
    t1 = t0 + timedelta(days=9, hours=3)
    v2 = ctx.add(
        f"{folder}/{name} {w.persona.project_kind} v2.docx",
        "docx",
        t1,
        title=name,
        author=w.owner.name,
        created=t0,
        blocks=proposal("draft 2", b3, t1, "Raised the budget after the supplier quote."),
    )
    t2 = t1 + timedelta(days=6, hours=5)
    final = ctx.add(
        f"{folder}/{name} {w.persona.project_kind} v2_final (1).docx",
        "docx",
        t2,
        title=name,
        author=w.owner.name,
        created=t0,
        blocks=proposal("final", final_budget, t2, "Agreed with the team; this version is final."),
    )
    t3 = t2 + timedelta(days=2)
    slides = ctx.add(
        f"{folder}/{name} kickoff.pptx",
        "pptx",
        t3,
        title=f"{name} kickoff",
        author=w.owner.name,
        created=t3,
        slides=[
            Slide(name, [Line(f"Kickoff, {nice_date(t3)}"), Line(w.org)]),
            Slide(
                "Team",
                [
                    Line(f"Research: {w.owner.name}"),
                    Line(f"Pilot lead: {lead.name}", key="lead"),
                    Line(f"Report: {helper.name}", key="helper"),
                ],
                notes=[Line(f"{lead.first} has run two pilots before.")],
            ),
            Slide("Timeline", [Line("Research: 4 weeks"), Line("Pilot: 6 weeks"), Line("Report: 2 weeks")]),
        ],
    )
    snap = t3 + timedelta(hours=2, minutes=14)
    due = (snap + timedelta(days=rng.randint(5, 12))).date()
    work = w.places["work"]
    board = ctx.add(
        f"Pictures/Camera/{ctx.img_name()}",
        "image",
        snap,
        location=gps(work.lat, work.lon),
        kind="whiteboard",
        seed=rng.randint(0, 10**6),
        exif=Exif(snap, work.lat, work.lon, "Fairphone", "FP4"),
        lines=[
            Line("Kickoff - action items", style="title"),
            Line(f"{lead.first}: pilot site list"),
            Line(f"{helper.first}: supplier quote by {due:%d %b}", key="quote"),
            Line(f"{w.owner.first}: research plan"),
        ],
    )
    ctx.plan.ask(
        Ask(
            "cross-modal",
            f"Who took the supplier quote after the {name} kickoff, and by when?",
            f"{helper.first} ({helper.name}), by {due.day} {due:%B}.",
            [Cite(board, ("quote",)), Cite(slides, ("helper",))],
            [
                ("Action items from the kickoff were written on a whiteboard and photographed.", []),
                ("The whiteboard photo lists the supplier quote with its owner and date.", [1]),
                ("The kickoff slides give the full name of that team member.", [2]),
            ],
            perception=["image_understanding"],
            reasoning=["verification"],
            facts=[f"{due:%d %b}", helper.first],
        )
    )
    ctx.plan.ask(
        Ask(
            "temporal",
            f"What is the total budget in the final version of the {name} {w.persona.project_kind}?",
            f"{cur} {final_budget:,} (the final version; the drafts said {cur} {b1:,} and {cur} {b3:,}).",
            [Cite(final, ("budget",)), Cite(v1, ("budget",)), Cite(v2, ("budget",))],
            [
                ("There are several versions of the document; find the final one.", []),
                ("The file marked final gives the agreed budget.", [1]),
                ("The two drafts had other figures and are superseded.", [2, 3]),
            ],
            perception=["document_understanding", "file_system_understanding"],
            reasoning=["verification"],
            search=["system", "semantic"],
            facts=[f"{final_budget:,}"],
        )
    )
    ctx.plan.ask(
        Ask(
            "single-file",
            f"Who leads the pilot phase of {name}?",
            f"{lead.name}, according to the kickoff slides.",
            [Cite(slides, ("lead",))],
            [("The team is presented in the kickoff deck.", []), ("The team slide names the pilot lead.", [1])],
            perception=["document_understanding"],
            facts=[lead.last],
        )
    )
