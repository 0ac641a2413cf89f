"""Stage 2a: the life-story interview, 108 questions over nine topics, answered in the persona's voice.

Templates (`template_interview`): each hidden fact is anchored to a question of its topic; its answer
states the fact, and the fact's ``sources`` list that turn's id. The other answers come from per-topic
phrase banks filled from the seed. A model (`model_interview`) answers every question itself, topic by
topic; its facts are then distilled from the answers (`facts.model_facts`).
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

from pydantic import BaseModel, Field

from hippocamp.schema.pcontext import Fact, InterviewTurn, Seed
from hippocamp.synth.personas.banks import phrase_bank
from hippocamp.synth.personas.model import ModelStageError, ask, first_failure
from hippocamp.synth.personas.seeds import working

__all__ = ["TOPIC_OF", "model_interview", "question_list", "template_interview"]

TOPIC_OF = {
    "background": "history",
    "family": "family",
    "relationships": "relationships",
    "work": "work",
    "education": "work",
    "transportation": "work",
    "health": "health",
    "diet": "health",
    "fitness": "health",
    "constraints": "health",
    "finances": "finances",
    "housing": "finances",
    "values": "values",
    "goals": "values",
    "personality": "values",
    "routine": "routines",
    "hobby": "routines",
    "social_views": "social_views",
}


def question_list() -> list[tuple[str, str, str]]:
    """(turn id, topic, question) for every interview question, in order."""
    out = []
    for topic, questions in phrase_bank().questions.items():
        for q in questions:
            out.append((f"q{len(out) + 1:03d}", topic, q))
    return out


def _occupation_phrase(seed: Seed) -> str:
    if working(seed):
        article = "an" if seed.occupation[:1].lower() in "aeiou" else "a"
        return f"{article} {seed.occupation}"
    return {
        "retired": "retired",
        "student": "a full-time student",
        "homemaker": "at home running the household",
        "unemployed": "between jobs right now",
    }.get(seed.occupation, "not working right now")


def _slots(seed: Seed) -> dict[str, str]:
    phrase = _occupation_phrase(seed)
    return {
        "state": seed.state,
        "city": seed.city or seed.state,
        "age": str(seed.age),
        "household": seed.household,
        "occupation_phrase": phrase,
        "occupation_phrase_cap": f"I'm {phrase}",
        "income_band": seed.income_band,
        "goal": seed.goals[0] if seed.goals else "keeping things steady",
        "hobby": seed.hobbies[0] if seed.hobbies else "some quiet time",
    }


def template_interview(seed: Seed, facts: list[Fact], rng: random.Random) -> tuple[list[InterviewTurn], list[Fact]]:
    """The interview and the facts with their ``sources`` set to the turns that state them."""
    questions = question_list()
    by_topic: dict[str, list[int]] = defaultdict(list)
    for i, (_, topic, _) in enumerate(questions):
        by_topic[topic].append(i)
    statements: dict[int, list[str]] = defaultdict(list)
    sources: dict[str, list[str]] = {}
    cursor: dict[str, int] = defaultdict(int)
    by_id = {f.id: f for f in facts}
    successors = {f.prior_of for f in facts if f.prior_of}
    for fact in facts:
        if fact.id in successors:
            continue  # stated together with its prior state below
        topic = TOPIC_OF[fact.category]
        slot = by_topic[topic][cursor[topic] % len(by_topic[topic])]
        cursor[topic] += 1
        text = fact.value or f"If I had to sum it up: {fact.label}."
        ids = [fact.id]
        if fact.prior_of and fact.prior_of in by_id:
            nxt = by_id[fact.prior_of]
            when = nxt.valid_from.strftime("%B") if nxt.valid_from else "recently"
            text += f" That changed in {when}; these days the short version is: {nxt.label}."
            ids.append(nxt.id)
        statements[slot].append(text)
        for fid in ids:
            sources[fid] = [questions[slot][0]]
    slots = _slots(seed)
    turns = []
    for i, (qid, topic, question) in enumerate(questions):
        generic = rng.choice(phrase_bank().generic_answers[topic]).format(**slots)
        answer = " ".join(statements[i]) if statements[i] else generic
        turns.append(InterviewTurn(id=qid, topic=topic, question=question, answer=answer))
    return turns, [f.model_copy(update={"sources": sources.get(f.id, [])}) for f in facts]


# ------------------------------------------------------------------------------------------ model half


class _Answer(BaseModel):
    id: str
    answer: str = Field(min_length=1)


class _Answers(BaseModel):
    answers: list[_Answer]


async def model_interview(model: Any, seed: Seed) -> list[InterviewTurn]:
    """The 108 questions, asked topic by topic (the first alone, the others concurrently), answered in
    the persona's voice."""
    questions = question_list()
    topics = sorted({t for _, t, _ in questions})
    seed_json = seed.model_dump(exclude={"version", "source"})

    async def one(topic: str) -> dict[str, str]:
        qs = [{"id": i, "question": q} for i, t, q in questions if t == topic]
        parsed = await ask(model, "interview", {"seed": seed_json, "topic": topic, "questions": qs}, _Answers)
        got = {a.id: a.answer for a in parsed.answers}
        missing = [q["id"] for q in qs if q["id"] not in got]
        if missing:
            raise ModelStageError(f"interview topic {topic}: no answer for {', '.join(missing[:5])}")
        return got

    answers: dict[str, str] = await one(topics[0])  # a probe: a model that cannot answer costs one call
    for got in await first_failure([one(t) for t in topics[1:]]):
        answers.update(got)
    return [InterviewTurn(id=i, topic=t, question=q, answer=answers[i]) for i, t, q in questions]
