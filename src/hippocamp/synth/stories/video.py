"""Videos: a fact shown on a frame and said by the narration (a review date, a baking temperature,
a submission deadline)."""

from __future__ import annotations

from datetime import timedelta

from hippocamp.synth.plan import Ask, Cite
from hippocamp.synth.render import Line, Scene
from hippocamp.synth.stories.base import Context, hm, nice_date, story


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
