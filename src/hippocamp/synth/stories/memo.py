"""Voice memos: a practical fact said once aloud (a locker code, where the bike is, when the plumber comes)."""

from __future__ import annotations

from datetime import timedelta

from hippocamp.synth.plan import Ask, Cite
from hippocamp.synth.render import Utterance
from hippocamp.synth.stories.base import WEEKDAYS, Context, story


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
