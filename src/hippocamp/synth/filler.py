"""Filler: the everyday files that answer no question but make search hard (downloads, notes,
photos, newsletters, memos, app exports, screenshots and near-duplicate copies).

Filler is drawn after the stories, from its own random stream, so its amount (the scale) never
changes a story's files. Unkeyed note lines are what a language model may rewrite (``enrich``).
"""

from __future__ import annotations

from datetime import timedelta

from hippocamp.synth.render import Exif, Line, Page, Utterance
from hippocamp.synth.stories import Context, gps

__all__ = ["add_filler"]

NOTE_TOPICS = {
    "Shopping list": ["washing-up liquid", "rice", "light bulbs", "coffee filters", "bin bags", "lemons", "tea"],
    "Books to read": ["The Overstory", "Piranesi", "Educated", "The Dispossessed", "Braiding Sweetgrass"],
    "Gift ideas": ["a plant pot", "concert tickets", "a cookbook", "hand cream", "a board game", "a scarf"],
    "Ideas": ["try the new bakery", "fix the bike bell", "call the bank about the card", "backup the laptop"],
    "Packing list": ["charger", "passport", "swimsuit", "adapter", "sunscreen", "headphones"],
    "Recipes to try": ["lentil soup", "shakshuka", "mushroom risotto", "banana bread", "miso aubergine"],
}
MANUALS = [
    (
        "Router quick start guide",
        [
            "Connect the grey cable to the WAN port.",
            "Wait until the light turns white.",
            "Open the app and follow the steps.",
        ],
    ),
    ("Coffee machine manual", ["Descale every 3 months.", "Use filtered water.", "Clean the milk frother daily."]),
    ("Bike lock instructions", ["Set your code before first use.", "Keep the spare key safe.", "Oil twice a year."]),
    ("Museum floor plan", ["Ground floor: tickets and cloakroom.", "First floor: modern art.", "Cafe on the roof."]),
    (
        "Terms and conditions",
        [
            "Orders can be returned within 30 days.",
            "Refunds take 5 working days.",
            "Gift cards are valid for one year.",
        ],
    ),
]
NEWSLETTERS = [
    ("Weekend deals", "Shop", ["This weekend only: 20% off garden furniture.", "Free delivery above 50."]),
    ("Your monthly update", "Library", ["New arrivals in the reading room.", "The library closes early on Friday."]),
    ("Upcoming events", "Neighbourhood", ["Street market on the first Sunday.", "Volunteers wanted for cleanup."]),
    ("Order shipped", "Store", ["Your parcel is on its way.", "Track it with the link in your account."]),
]
MEMO_LINES = [
    "Remember to water the plants on the balcony.",
    "Idea for the weekend: walk along the river and try the new bakery.",
    "Call the insurance company about the renewal letter.",
    "Pick up the parcel at the post office before Friday.",
    "Book a table for the family lunch next month.",
]


def add_filler(ctx: Context) -> None:
    """Add about ``ctx.scale.filler`` filler files."""
    w, rng = ctx.world, ctx.rng("filler")
    n = ctx.scale.filler
    span = (w.end - w.start).days
    kinds = (
        ["photo"] * 45
        + ["note"] * 14
        + ["newsletter"] * 14
        + ["download"] * 8
        + ["memo"] * 4
        + ["screenshot"] * 5
        + ["steps"] * 2
        + ["copy"] * 4
        + ["txt"] * 4
    )
    made: list[str] = []
    counters: dict[str, int] = {}
    for _ in range(n):
        kind = rng.choice(kinds)
        counters[kind] = counters.get(kind, 0) + 1
        k = counters[kind]
        when = w.at(w.start + timedelta(days=rng.randint(0, span)), rng.randint(7, 22), rng.randint(0, 59))
        if kind == "photo":
            lat, lon = w.city.lat + rng.uniform(-0.04, 0.04), w.city.lon + rng.uniform(-0.04, 0.04)
            made.append(
                ctx.add(
                    f"Pictures/Camera/{ctx.img_name()}",
                    "image",
                    when,
                    location=gps(lat, lon),
                    kind="photo",
                    lines=[],
                    seed=rng.randint(0, 10**6),
                    exif=Exif(when, lat, lon, "Fairphone", "FP4"),
                )
            )
        elif kind == "note":
            topic = rng.choice(list(NOTE_TOPICS))
            items = rng.sample(NOTE_TOPICS[topic], min(len(NOTE_TOPICS[topic]), rng.randint(3, 5)))
            made.append(
                ctx.add(
                    f"Notes/{topic.lower()} {k}.md",
                    "text",
                    when,
                    lines=[Line(f"# {topic}"), Line(""), *[Line(f"- {i}") for i in items]],
                    enrich=True,
                )
            )
        elif kind == "txt":
            made.append(
                ctx.add(
                    f"Desktop/todo {k}.txt",
                    "text",
                    when,
                    enrich=True,
                    lines=[Line(x) for x in rng.sample(MEMO_LINES, 3)],
                )
            )
        elif kind == "newsletter":
            subject, org, body = rng.choice(NEWSLETTERS)
            made.append(
                ctx.add(
                    f"Mail/Newsletters/{when:%Y-%m-%d} {subject} ({k}).eml",
                    "eml",
                    when,
                    sender=f"{org} news <news@{org.lower()}.example>",
                    to=[f"{w.owner.name} <{w.owner.email}>"],
                    sent=when,
                    subject=subject,
                    message_id=f"<news-{k}-{when:%Y%m%d%H%M}@{org.lower()}.example>",
                    body=[
                        Line(f"Hello {w.owner.first},"),
                        Line(""),
                        *[Line(b) for b in body],
                        Line(""),
                        Line("Unsubscribe at any time."),
                    ],
                )
            )
        elif kind == "download":
            title, lines = rng.choice(MANUALS)
            made.append(
                ctx.add(
                    f"Downloads/{title} ({k}).pdf",
                    "pdf",
                    when,
                    title=title,
                    author="",
                    created=when,
                    pages=[Page([Line(title.upper(), style="title"), *[Line(x) for x in lines]])],
                )
            )
        elif kind == "memo":
            made.append(
                ctx.add(
                    f"Recordings/Memo {when:%Y-%m-%d %H%M} ({k}).{'mp3' if k % 2 else 'wav'}",
                    "speech",
                    when,
                    utterances=[Utterance(rng.choice(MEMO_LINES))],
                )
            )
        elif kind == "screenshot":
            made.append(
                ctx.add(
                    f"Pictures/Screenshots/Screenshot {when:%Y-%m-%d at %H.%M.%S}.png",
                    "image",
                    when,
                    kind="screenshot",
                    seed=rng.randint(0, 10**6),
                    lines=[
                        Line(rng.choice(["Weather", "Bus times", "Step counter", "Battery"]), style="title"),
                        Line(f"{when:%H:%M}  {rng.randint(3, 24)} C"),
                        Line(rng.choice(MEMO_LINES)[:34]),
                    ],
                )
            )
        elif kind == "steps":
            days = [w.start + timedelta(days=i) for i in range(0, span, max(1, span // 20))]
            made.append(
                ctx.add(
                    f"Documents/Exports/steps {k}.json",
                    "json",
                    when,
                    header={"app": "StepTrack", "unit": "steps"},
                    items_key="days",
                    items=[{"date": f"{d:%Y-%m-%d}", "steps": rng.randint(2000, 16000)} for d in days],
                )
            )
        elif kind == "copy" and made:
            source = rng.choice(made)
            art = ctx.plan.artifacts[source]
            stem, _, ext = source.rpartition(".")
            path = f"{stem} (copy {k}).{ext}"
            later = art.created + timedelta(days=rng.randint(1, 20))
            made.append(ctx.add(path, "copy", later, needs=(source,), source=source))
