"""A trip: the e-ticket, the hotel's confirmation and photos taken at the destination."""

from __future__ import annotations

from datetime import timedelta

from hippocamp.synth.plan import Ask, Cite
from hippocamp.synth.render import Exif, Line, Page
from hippocamp.synth.stories.base import Context, gps, hm, nice_date, story
from hippocamp.synth.world import TRIP_CITIES


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
