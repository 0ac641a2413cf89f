"""The vet: a photographed receipt for the pet's booster, and a decoy: the sibling's e-mail about
their pet's dental cleaning (asked about the wrong animal, the question has no answer)."""

from __future__ import annotations

from datetime import timedelta

from hippocamp.synth.plan import Ask, Cite
from hippocamp.synth.render import Exif, Line
from hippocamp.synth.render.text import CalEvent
from hippocamp.synth.stories.base import Context, gps, hm, money, story


@story("vet")
def vet(ctx: Context) -> None:
    w, rng = ctx.world, ctx.rng("vet")
    pet, other = w.pets[0], w.pets[1]
    sibling = w.person("sibling")
    clinic = w.places["vet"]
    day = w.start + timedelta(days=rng.randint(20, 40))
    visit = w.at(day, rng.choice([9, 10, 11, 14, 16]), rng.choice([0, 15, 30]))
    price = rng.choice([64.5, 72.0, 86.0, 91.5])
    chip = rng.choice([18.0, 22.5, 25.0])
    total = price + chip
    ctx.event(
        CalEvent(
            f"vet-{day:%Y%m%d}@synth",
            f"{pet.name} - vaccination booster",
            visit,
            visit + timedelta(minutes=30),
            clinic.name,
            key="vet",
        )
    )
    taken = visit + timedelta(minutes=42)
    img = ctx.add(
        f"Pictures/Receipts/{ctx.img_name()}",
        "image",
        taken,
        location=gps(clinic.lat, clinic.lon),
        kind="receipt",
        exif=Exif(taken, clinic.lat, clinic.lon, "Fairphone", "FP4"),
        seed=rng.randint(0, 10**6),
        lines=[
            Line(clinic.name, style="title", key="patient"),
            Line(clinic.address, style="small", key="patient"),
            Line(f"Patient: {pet.name} ({pet.species})", key="patient"),
            Line(f"Date: {visit:%d %b %Y}  {hm(visit)}", key="patient"),
            Line(f"Vaccination booster  {money(w.currency, price)}", key="total"),
            Line(f"Microchip check  {money(w.currency, chip)}", key="total"),
            Line(f"TOTAL PAID  {money(w.currency, total)}", key="total"),
            Line("Thank you!", style="small"),
        ],
    )
    ctx.plan.ask(
        Ask(
            "cross-modal",
            f"How much did I pay in total at the vet for {pet.name}'s vaccination booster?",
            f"{money(w.currency, total)} ({money(w.currency, price)} for the booster and "
            f"{money(w.currency, chip)} for a microchip check), at {clinic.name}.",
            [Cite(img, ("total",)), Cite(img, ("patient",))],
            [
                ("Vet bills may only exist as photographed receipts.", []),
                ("The receipt lists the booster, the microchip check and the total.", [1]),
                ("Its header names the patient and the date of the visit.", [2]),
            ],
            perception=["image_understanding"],
            reasoning=["basic"],
            facts=[f"{total:.2f}"],
        )
    )
    # the decoy: the sibling's pet had a dental cleaning
    dental = rng.choice([180.0, 215.0, 240.0])
    sent = w.at(day + timedelta(days=6), 20, 41)
    mail = ctx.add(
        f"Mail/Inbox/{sent:%Y-%m-%d} {other.name}'s teeth.eml",
        "eml",
        sent,
        sender=f"{sibling.name} <{sibling.email}>",
        to=[f"{w.owner.name} <{w.owner.email}>"],
        sent=sent,
        subject=f"{other.name}'s teeth",
        message_id=f"<teeth-{sent:%Y%m%d}@example.org>",
        body=[
            Line(f"Hey {w.owner.first},"),
            Line(""),
            Line(f"{other.name} finally had the dental cleaning today at {clinic.name}.", key="dental"),
            Line(f"It cost {money(w.currency, dental)}, which is a lot for one {other.species}!", key="dental"),
            Line(f"How is {pet.name} doing after the booster? Love, {sibling.first}", key="dental"),
        ],
    )
    ctx.plan.ask(
        Ask(
            "unanswerable",
            f"How much did {pet.name}'s dental cleaning cost?",
            f"The files show no dental cleaning for {pet.name}. The dental cleaning that cost "
            f"{money(w.currency, dental)} was for {other.name}, {sibling.first}'s {other.species}; {pet.name} only had "
            f"a vaccination booster ({money(w.currency, price)}).",
            [Cite(mail, ("dental",)), Cite(img, ("total",)), Cite(img, ("patient",))],
            [
                ("Check every vet record and bind each to its animal.", []),
                (f"The dental cleaning in the e-mail was for {other.name}, not {pet.name}.", [1]),
                (f"The only receipt for {pet.name} is the booster.", [2, 3]),
            ],
            perception=["image_understanding", "grounding"],
            reasoning=["verification"],
            facts=[f"{dental:.2f}"],
        )
    )
