"""Stories: each adds the files of one thread of a person's life and the questions they answer.

A story reads the world, draws from its own random stream (``ctx.rng(name)``), adds artifacts and
asks to the plan, and may add calendar events to the shared calendar (written once, at the end).
Keys are local to a file. Questions never depend on text a language model may rewrite: only unkeyed
filler lines are ever enriched.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from hippocamp.synth.plan import Artifact, Ask, Cite, Plan
from hippocamp.synth.render import Exif, Line, Page, Scene, Sheet, Slide, Table, Utterance
from hippocamp.synth.render.text import CalEvent
from hippocamp.synth.world import RESTAURANTS, TRIP_CITIES, Place, World, rng_for

__all__ = ["STORIES", "Context", "Scale", "calendar_path", "money", "nice_date"]

Story = Callable[["Context"], None]
STORIES: dict[str, Story] = {}
#: how many distinct instances a story can tell (a scale asks for up to ``Scale.repeat``)
REPEATS: dict[str, int] = {}


def story(name: str, repeats: int = 1) -> Callable[[Story], Story]:
    def deco(fn: Story) -> Story:
        STORIES[name] = fn
        REPEATS[name] = repeats
        return fn

    return deco


@dataclass(frozen=True)
class Scale:
    name: str
    months: int
    receipts: int  # supermarket receipts in the arithmetic month
    filler: int  # approximate number of filler files
    repeat: int  # instances of each repeatable story (memos, videos, plans, trips, receipt months)


SCALES = {
    "small": Scale("small", 3, 3, 33, 1),
    "medium": Scale("medium", 4, 6, 440, 3),
    "large": Scale("large", 12, 10, 3000, 5),
}


@dataclass
class Context:
    world: World
    plan: Plan
    scale: Scale
    events: list[CalEvent] = field(default_factory=list)
    #: which telling of a repeatable story is running (0 for the first)
    instance: int = 0
    _img: int = 1000

    def rng(self, name: str) -> random.Random:
        if self.instance:
            return rng_for(self.world.seed, "story", name, self.instance)
        return rng_for(self.world.seed, "story", name)

    def img_name(self, ext: str = "jpg") -> str:
        self._img += 1 + (self._img * 7919) % 13
        return f"IMG_{self._img:04d}.{ext}"

    def add(
        self,
        path: str,
        renderer: str,
        when: datetime,
        modified: datetime | None = None,
        *,
        location: str = "",
        needs: tuple[str, ...] = (),
        **spec: object,
    ) -> str:
        return self.plan.add(Artifact(path, renderer, dict(spec), when, modified or when, location, needs))

    def event(self, ev: CalEvent) -> None:
        self.events.append(ev)


def calendar_path(world: World) -> str:
    return f"Calendar/{world.owner.first} personal.ics"


def money(currency: str, amount: float) -> str:
    return f"{currency} {amount:,.2f}"


def nice_date(d: date | datetime) -> str:
    return f"{d.day} {d:%B %Y}"


def plain(x: float) -> str:
    """A number as a spreadsheet shows it: ``167.8``, ``1450``, ``2085.37``."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def hm(t: datetime) -> str:
    return f"{t:%H:%M}"


def gps(lat: float, lon: float) -> str:
    return f"{abs(lat):.4f} {'N' if lat >= 0 else 'S'}, {abs(lon):.4f} {'E' if lon >= 0 else 'W'}"


def cap_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _weekday_on_or_after(d: date, weekday: int) -> date:
    return d + timedelta(days=(weekday - d.weekday()) % 7)


WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
ICS_DAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")


# -- housing -----------------------------------------------------------------------------------------
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


# -- pets and decoys ---------------------------------------------------------------------------------
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


# -- audio and video ---------------------------------------------------------------------------------
@story("memo", repeats=3)
def memo(ctx: Context) -> None:
    w, rng = ctx.world, ctx.rng("memo")
    when = w.at(w.start + timedelta(days=rng.randint(5, 15) + 23 * ctx.instance), 12, 31)
    if ctx.instance == 0:
        locker, code = rng.randint(11, 48), rng.randint(2000, 9800)
        said = f"The storage locker is number {locker} and the code is {', '.join(str(code))}."
        note = f"The storage locker is number {locker} and the code is {code} (said digit by digit)."
        question = "What is the number and the code of my storage locker?"
        answer, facts = f"Locker {locker}, code {code}.", [str(locker), str(code)]
    elif ctx.instance == 1:
        level, row = rng.randint(2, 5), rng.choice("BCDFGH")
        said = f"My bike is in the station garage on level {level}, row {row}."
        note = ""
        question = "Where did I leave my bike in the station garage?"
        answer, facts = f"On level {level}, row {row}.", [f"level {level}"]
    else:
        day = rng.choice(WEEKDAYS[:5])
        hour = rng.randint(8, 11)
        said = f"The plumber is coming on {day} at {hour} o'clock to fix the boiler."
        note = ""
        question = "When is the plumber coming to fix the boiler?"
        answer, facts = f"On {day} at {hour}:00.", [day]
    ext = ("wav", "mp3", "m4a")[ctx.instance % 3]
    path = ctx.add(
        f"Recordings/Voice memo {when:%Y-%m-%d %H%M}.{ext}",
        "speech",
        when,
        location=w.city.name,
        utterances=[
            Utterance(rng.choice(["Quick note before I forget.", "Note to self.", "Okay, reminder."])),
            Utterance(said, key="fact"),
            Utterance(rng.choice(["Also buy batteries for the bike light.", "That's it.", "And call Mum back."])),
        ],
    )
    ctx.plan.ask(
        Ask(
            "cross-modal",
            question,
            answer,
            [Cite(path, ("fact",), note=note)],
            [
                ("Small practical facts like this are often only in a voice memo.", []),
                ("The voice memo says it.", [1]),
            ],
            perception=["audio_understanding"],
            facts=facts,
        )
    )


@story("video", repeats=3)
def video(ctx: Context) -> None:
    w, rng = ctx.world, ctx.rng("video")
    when = w.at(w.start + timedelta(days=rng.randint(20, 40) + 20 * ctx.instance), 16, 5)
    if ctx.instance == 0:
        project = w.project
        review = w.at(w.end - timedelta(days=rng.randint(8, 20)), 14)
        room = f"{rng.randint(1, 5)}.{rng.randint(10, 40)}"
        lead = w.person("colleague1") if w.persona.kind != "student" else w.person("colleague2")
        name = f"{project} walkthrough"
        scenes = [
            Scene([Line(project, style="title"), Line("Project walkthrough")], seconds=2.5),
            Scene(
                [Line("Final review"), Line(f"{nice_date(review)}, {hm(review)}"), Line(f"Room {room}")],
                seconds=3.5,
                key="fact",
                speech=f"The final review is on {nice_date(review)} at 2 pm in room {room}.",
            ),
            Scene([Line("Questions?"), Line(f"Ask {lead.name}")], seconds=2.0),
        ]
        question = f"According to the walkthrough video, when and where is the final review of {project}?"
        answer, facts = f"On {nice_date(review)} at {hm(review)}, in room {room}.", [room]
    elif ctx.instance == 1:
        dish = rng.choice(["Lemon drizzle cake", "Vegetable lasagne", "Focaccia", "Banana bread"])
        temp, minutes = rng.choice([180, 190, 200, 220]), rng.choice([25, 35, 40, 45])
        name = f"Cooking class - {dish}"
        scenes = [
            Scene([Line("Cooking class", style="title"), Line(dish)], seconds=2.5),
            Scene(
                [Line("Bake"), Line(f"{temp} C for {minutes} minutes")],
                seconds=3.5,
                key="fact",
                speech=f"Bake it at {temp} degrees for {minutes} minutes.",
            ),
            Scene([Line("Enjoy!")], seconds=1.5),
        ]
        question = f"At what temperature and for how long does the {dish.lower()} from the cooking class bake?"
        answer, facts = f"At {temp} °C for {minutes} minutes.", [str(temp), f"{minutes} minutes"]
    else:
        deadline = w.end - timedelta(days=rng.randint(3, 12))
        topic = rng.choice(["Open data meetup", "City cycling forum", "Design systems talk"])
        name = f"{topic} recording"
        scenes = [
            Scene([Line(topic, style="title"), Line("Call for proposals")], seconds=2.5),
            Scene(
                [Line("Submission deadline"), Line(nice_date(deadline))],
                seconds=3.5,
                key="fact",
                speech=f"Please send your proposals by {nice_date(deadline)}.",
            ),
            Scene([Line("Thank you")], seconds=1.5),
        ]
        question = f"What submission deadline was announced in the {topic} recording?"
        answer, facts = f"{nice_date(deadline)}.", [nice_date(deadline)]
    path = ctx.add(f"Videos/{name}.mp4", "video", when, scenes=scenes)
    ctx.plan.ask(
        Ask(
            "cross-modal",
            question,
            answer,
            [Cite(path, ("fact",))],
            [
                ("This was presented in a recorded video.", []),
                ("The frame shown in the video gives it, and the narration repeats it.", [1]),
            ],
            perception=["video_understanding"],
            facts=facts,
        )
    )


# -- plans that change -------------------------------------------------------------------------------
@story("plan-change", repeats=4)
def plan_change(ctx: Context) -> None:
    w, rng = ctx.world, ctx.rng("plan-change")
    friend = w.person(f"friend{ctx.instance + 1}")
    if ctx.instance == 0:
        first_place, final_place = w.places["restaurant"], w.places["restaurant2"]
    else:
        a, b = rng.sample(RESTAURANTS, 2)
        first_place, final_place = Place(a, "restaurant", "", 0, 0), Place(b, "restaurant", "", 0, 0)
    friday = _weekday_on_or_after(w.start + timedelta(days=rng.randint(30, 50) + 17 * ctx.instance), 4)
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


# -- money -------------------------------------------------------------------------------------------
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


# -- work --------------------------------------------------------------------------------------------
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


# -- travel ------------------------------------------------------------------------------------------
@story("trip", repeats=5)
def trip(ctx: Context) -> None:
    w, rng = ctx.world, ctx.rng("trip")
    dest = TRIP_CITIES[(TRIP_CITIES.index(w.trip_city) + ctx.instance) % len(TRIP_CITIES)]
    airline, code = rng.choice([("Skylark Air", "SK"), ("Aurora Airways", "AU"), ("Northwind", "NW")])
    flight = f"{code} {rng.randint(100, 989)}"
    depart_day = w.start + timedelta(days=rng.randint(45, 60) + 30 * ctx.instance)
    if depart_day + timedelta(days=5) > w.end:
        return
    depart = w.at(depart_day, rng.choice([7, 9, 11, 13]), rng.choice([5, 20, 40]))
    arrive = depart + timedelta(hours=2, minutes=rng.choice([5, 25, 50]))
    nights = rng.randint(2, 4)
    checkout = depart_day + timedelta(days=nights)
    hotel = rng.choice(["Hotel Alcova", "The Lantern Inn", "Parkside Suites", "Hotel Meridia"])
    booking = f"{rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZ')}{rng.randint(10000, 99999)}"
    me = w.owner
    booked = w.at(depart_day - timedelta(days=24), 20, 15)
    ticket = ctx.add(
        f"Documents/Travel/E-ticket {flight.replace(' ', '')}.pdf",
        "pdf",
        booked,
        title=f"{airline} e-ticket",
        author=airline,
        created=booked,
        pages=[
            Page(
                [
                    Line(f"{airline.upper()} E-TICKET", style="title"),
                    Line(f"Passenger: {me.name.upper()}"),
                    Line(f"Booking reference: {booking}"),
                    Line(f"Flight {flight} ({airline})  {w.city.name} - {dest.name}", key="flight"),
                    Line(f"Departure {nice_date(depart)} {hm(depart)}, arrival {hm(arrive)}", key="flight"),
                    Line(f"Seat {rng.randint(3, 30)}{rng.choice('ACDF')}, cabin bag 8 kg"),
                ]
            )
        ],
    )
    conf = ctx.add(
        f"Mail/Inbox/{booked:%Y-%m-%d} Booking confirmation {hotel}.eml",
        "eml",
        booked + timedelta(minutes=9),
        sender=f"{hotel} <reservations@{hotel.lower().replace(' ', '')}.example>",
        to=[f"{me.name} <{me.email}>"],
        sent=booked + timedelta(minutes=9),
        subject=f"Booking confirmation {hotel}",
        message_id=f"<booking-{booked:%Y%m%d}@{hotel.lower().replace(' ', '')}.example>",
        body=[
            Line(f"Dear {me.name},"),
            Line(""),
            Line(f"Your stay at {hotel}, {dest.streets[0]}, {dest.name} is confirmed.", key="hotel"),
            Line(f"Check-in: {nice_date(depart_day)} from 15:00", key="hotel"),
            Line(f"Check-out: {nice_date(checkout)} until 11:00", key="hotel"),
            Line(f"Confirmation number {booking}-H"),
            Line(""),
            Line("We look forward to welcoming you."),
        ],
    )
    photos = []
    for i in range(2 if ctx.scale.name == "small" else 6):
        t = w.at(depart_day + timedelta(days=min(i, nights - 1) + 1 if i else 0), 10 + (i * 3) % 9, 7 * i % 60)
        lat, lon = dest.lat + rng.uniform(-0.01, 0.01), dest.lon + rng.uniform(-0.01, 0.01)
        photos.append(
            ctx.add(
                f"Pictures/{depart_day:%Y-%m} {dest.name}/{ctx.img_name()}",
                "image",
                t,
                location=gps(lat, lon),
                kind="sign" if i == 0 else "photo",
                seed=rng.randint(0, 10**6),
                exif=Exif(t, lat, lon, "Fairphone", "FP4"),
                lines=[Line(f"Welcome to {dest.name}", key="sign")] if i == 0 else [],
            )
        )
    ctx.plan.ask(
        Ask(
            "multi-file",
            f"Which flight did I take to {dest.name}, and where did I stay?",
            f"Flight {flight} ({airline}) on {nice_date(depart)} at {hm(depart)}; I stayed at {hotel}.",
            [Cite(ticket, ("flight",)), Cite(conf, ("hotel",))],
            [
                ("Travel bookings are in the travel documents and the mail.", []),
                ("The e-ticket gives the flight.", [1]),
                ("The hotel's confirmation gives the stay.", [2]),
            ],
            perception=["document_understanding"],
            reasoning=["basic"],
            facts=[flight, hotel],
        )
    )
    ctx.plan.ask(
        Ask(
            "arithmetic",
            f"How many nights did I spend at the hotel in {dest.name}?",
            f"{nights} nights, from {nice_date(depart_day)} to {nice_date(checkout)}.",
            [Cite(conf, ("hotel",))],
            [
                ("The hotel confirmation has the check-in and check-out dates.", []),
                (f"From {nice_date(depart_day)} to {nice_date(checkout)} is {nights} nights.", [1]),
            ],
            perception=["document_understanding"],
            reasoning=["computation"],
            facts=[nice_date(checkout)],
        )
    )


# -- routines, preferences, constraints --------------------------------------------------------------
@story("routine")
def routine(ctx: Context) -> None:
    w, rng = ctx.world, ctx.rng("routine")
    gym = w.places["gym"]
    days = sorted(rng.sample([0, 1, 2, 3, 4], 2))
    hour = rng.choice([6, 7, 18])
    fee = w.extra.setdefault("gym_fee", rng.choice([29, 35, 39, 45]))
    first = _weekday_on_or_after(w.start, days[0])
    start = w.at(first, hour, 0 if hour != 18 else 30)
    byday = ",".join(ICS_DAYS[d] for d in days)
    ctx.event(
        CalEvent(
            "gym@synth",
            f"Gym - {gym.name}",
            start,
            start + timedelta(hours=1),
            gym.address,
            rrule=f"FREQ=WEEKLY;BYDAY={byday};UNTIL={w.end:%Y%m%d}T235959",
            key="gym",
        )
    )
    names = " and ".join(f"{WEEKDAYS[d]}s" for d in days)
    note = ctx.add(
        "Notes/gym routine.md",
        "text",
        w.at(first - timedelta(days=1), 20),
        w.at(first + timedelta(days=30), 8, 10),
        lines=[
            Line("# Gym routine"),
            Line(""),
            Line(f"- Gym on {names}, {hm(start)}, at {gym.name}", key="days"),
            Line(f"- Membership: {money(w.currency, float(fee))} per month, paid on the 5th", key="fee"),
            Line("- Goal: 5 km run under 30 minutes"),
        ],
    )
    photos: list[str] = []
    weeks = 2 if ctx.scale.name == "small" else 8
    for k in range(weeks):
        d = first + timedelta(days=7 * k + (days[k % 2] - days[0]))
        if d > w.end:
            break
        t = w.at(d, start.hour, start.minute + 10 + k % 20)
        photos.append(
            ctx.add(
                f"Pictures/Camera/{ctx.img_name()}",
                "image",
                t,
                location=gps(gym.lat, gym.lon),
                kind="sign",
                seed=rng.randint(0, 10**6),
                exif=Exif(t, gym.lat, gym.lon, "Fairphone", "FP4"),
                lines=[Line(gym.name.upper(), key="sign"), Line("Open 6:00 - 23:00", style="small")],
            )
        )
    ctx.plan.ask(
        Ask(
            "routine",
            "What is my weekly exercise routine?",
            f"The gym on {names} at {hm(start)}, at {gym.name}.",
            [
                Cite(note, ("days",)),
                Cite(calendar_path(w), ("gym",)),
                Cite(photos[0], ("sign",)),
                Cite(photos[1], ("sign",)),
            ],
            [
                ("Routines show in notes, recurring events and photos taken at the same place.", []),
                ("The note names the days, time and gym.", [1]),
                ("A weekly recurring event agrees.", [2]),
                ("Photos taken at the gym on those days at that time confirm it.", [3, 4]),
            ],
            qa_type="profiling",
            profiling_type="routine",
            perception=["image_understanding", "document_understanding"],
            reasoning=["summarization"],
            facts=[gym.name],
        )
    )


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
        first = _weekday_on_or_after(w.start, d)
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
