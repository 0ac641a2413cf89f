"""Stage 2a: the life-story interview, 108 questions over nine topics, answered in the persona's voice.

Templates (`template_interview`): each hidden fact is anchored to a question of its topic; its answer
states the fact, and the fact's ``sources`` list that turn's id. The other answers come from per-topic
phrase banks filled from the seed. A model (`model_interview`) answers every question itself, topic by
topic; its facts are then distilled from the answers (`facts.model_facts`).
"""

from __future__ import annotations

import random
from collections import defaultdict
from functools import cache
from typing import Any

from pydantic import BaseModel, Field

from hippocamp.schema.pcontext import CATEGORIES, Fact, InterviewTurn, Seed
from hippocamp.synth.personas.banks import TOPIC_OF, interview_bank
from hippocamp.synth.personas.facts import sample_facts
from hippocamp.synth.personas.model import ModelStageError, ask, first_failure
from hippocamp.synth.personas.seeds import working

__all__ = [
    "TOPIC_OF",
    "answers_question",
    "check_interview",
    "distill",
    "elicits",
    "model_interview",
    "question_list",
    "restate",
    "template_interview",
]


def question_list() -> list[tuple[str, str, str]]:
    """(turn id, topic, question) for every interview question, in order."""
    return [(f"q{i:03d}", q.topic, q.question) for i, q in enumerate(interview_bank().questions, start=1)]


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


@cache
def elicits() -> dict[str, tuple[str, frozenset[str]]]:
    """What each interview question asks about (``data/interview.json``): question -> the fact category its
    answer states and, for a narrow question, the fact tags it is about (a fact without one of them does
    not answer it). Open questions are not listed; they get a generic answer."""
    return {q.question: (q.category, frozenset(q.about)) for q in interview_bank().questions if q.category}


#: how a second or later statement of one answer begins
_JOINS = ("Also, ", "And ", "Besides that, ", "On top of that, ", "Oh, and ")


def answers_question(fact: Fact, question: str) -> bool:
    """Whether ``fact`` is an answer to ``question`` (`elicits`)."""
    asked = elicits().get(question)
    if asked is None or asked[0] != fact.category:
        return False
    return not asked[1] or bool(asked[1] & set(fact.tags))


def _place(fact: Fact, questions: list[tuple[str, str, str]], load: dict[int, int]) -> int | None:
    """The question ``fact`` answers best: a narrow question about it, else the broad question of its
    category with the fewest statements so far."""
    fitting = [i for i, (_, _, q) in enumerate(questions) if answers_question(fact, q)]
    if not fitting:
        return None
    narrow = [i for i in fitting if elicits()[questions[i][2]][1] and load[i] < 2]
    return min(narrow or fitting, key=lambda i: (load[i], i))


def _statement(fact: Fact, by_id: dict[str, Fact]) -> str:
    text = fact.value or f"If I had to sum it up: {fact.label}."
    if fact.prior_of and fact.prior_of in by_id:
        nxt = by_id[fact.prior_of]
        when = nxt.valid_from.strftime("%B") if nxt.valid_from else "recently"
        text += f" That changed in {when}; these days the short version is: {nxt.label}."
    return text


#: sentence openings a joined statement may lower-case ("Also, my mother ..."); any other first word may
#: be a name and keeps its capital
_COMMON_OPENINGS = frozenset(
    "a after an as at back being by during every for from growing having in it it's most my no now on once our "
    "since so that the there these they this those to two three we we're what when where while with".split()
)


def _answer(statements: list[str], rng: random.Random) -> str:
    """One answer holding several statements, the later ones joined with a connective."""
    out = [statements[0]]
    for text in statements[1:]:
        first = text.split(" ", 1)[0]
        head = text[:1].lower() + text[1:] if first.lower() in _COMMON_OPENINGS else text
        out.append(rng.choice(_JOINS) + head)
    return " ".join(out)


def _states(answer: str, value: str) -> bool:
    """Whether ``answer`` states ``value`` (a joined statement may begin in lower case)."""
    return bool(value) and (value in answer or (value[:1].lower() + value[1:]) in answer)


def template_interview(
    seed: Seed, rng: random.Random, n: int, persona_id: str | None = None
) -> tuple[list[InterviewTurn], list[Fact]]:
    """The interview, asked first: every question (`question_list`) is answered in turn, a question that
    asks about a category (`elicits`) by what the persona has to say about it, the others by a generic
    answer; the facts are then distilled from the answers (`distill`). What the persona has to say is
    its life as `sample_facts` draws it for the seed (categories in turns, so that no category's draw
    crowds out another's), each statement put under the question it answers (a narrow question about
    it, else the broad question of its category with the fewest statements)."""
    questions = question_list()
    load: dict[int, int] = defaultdict(int)
    said: dict[int, list[Fact]] = defaultdict(list)
    for fact in sample_facts(persona_id or seed.id, rng, n, seed=seed):
        i = _place(fact, questions, load)
        if i is not None:
            said[i].append(fact)
            load[i] += 1
    slots = _slots(seed)
    turns = []
    for i, (qid, topic, question) in enumerate(questions):
        if said[i]:
            answer = _answer([_statement(f, {}) for f in said[i]], rng)
        else:
            answer = rng.choice(interview_bank().questions[i].answers).format(**slots)
        turns.append(InterviewTurn(id=qid, topic=topic, question=question, answer=answer))
    return turns, distill(turns, [f for i in sorted(said) for f in said[i]], persona_id or seed.id)


def distill(turns: list[InterviewTurn], stated: list[Fact], persona_id: str) -> list[Fact]:
    """The facts the answers state, each with ``sources`` = the turn whose answer states it, numbered
    by category. Exact in template mode: a fact is distilled from the answer that holds its statement."""
    out: list[Fact] = []
    for category in CATEGORIES:
        for fact in stated:
            if fact.category != category:
                continue
            source = [t.id for t in turns if _states(t.answer, fact.value) and answers_question(fact, t.question)]
            out.append(fact.model_copy(update={"id": f"{persona_id}-F{len(out) + 1:03d}", "sources": source[:1]}))
    return out


def restate(
    turns: list[InterviewTurn], facts: list[Fact], seed: Seed, rng: random.Random
) -> tuple[list[InterviewTurn], list[Fact]]:
    """The answers after the audit and the changes: each states the facts distilled from it that the
    audit kept, a fact the audit put in (a repair) under a question it answers, and a fact that changes
    with its successor. Returns the turns and the facts with their ``sources``."""
    questions = [(t.id, t.topic, t.question) for t in turns]
    index = {t.id: i for i, t in enumerate(turns)}
    by_id = {f.id: f for f in facts}
    successors = {f.prior_of for f in facts if f.prior_of}
    load: dict[int, int] = defaultdict(int)
    said: dict[int, list[Fact]] = defaultdict(list)
    placed: dict[str, list[str]] = {}
    later: list[Fact] = []
    for fact in facts:
        if fact.id in successors:
            continue
        i = index.get(fact.sources[0]) if fact.sources else None
        if i is None or not answers_question(fact, turns[i].question):
            later.append(fact)
            continue
        said[i].append(fact)
        load[i] += 1
    for fact in later:
        i = _place(fact, questions, load)
        if i is None:  # a category no question asks about (cannot happen with the shipped questions)
            continue
        said[i].append(fact)
        load[i] += 1
    out: list[InterviewTurn] = []
    for i, turn in enumerate(turns):
        if not said[i]:
            out.append(turn)
            continue
        for fact in said[i]:
            placed[fact.id] = [turn.id]
            if fact.prior_of:
                placed[fact.prior_of] = [turn.id]
        out.append(turn.model_copy(update={"answer": _answer([_statement(f, by_id) for f in said[i]], rng)}))
    return out, [f.model_copy(update={"sources": placed.get(f.id, [])}) for f in facts]


def check_interview(turns: list[InterviewTurn], facts: list[Fact]) -> list[str]:
    """Problems of a template interview: a fact with no source answer, a source answer that does not
    state it, or (for a fact that holds from the start) a source question that does not ask about it."""
    by_id = {t.id: t for t in turns}
    successors = {f.prior_of for f in facts if f.prior_of}
    problems = []
    for fact in facts:
        if not fact.sources:
            problems.append(f"{fact.id}: no interview answer states {fact.label!r}")
        for source in fact.sources:
            turn = by_id.get(source)
            if turn is None:
                problems.append(f"{fact.id}: source {source} is not an interview turn")
            elif fact.value and fact.id not in successors and not _states(turn.answer, fact.value):
                problems.append(f"{fact.id}: the answer to {source} does not state {fact.label!r}")
            elif fact.id not in successors and not answers_question(fact, turn.question):
                problems.append(f"{fact.id}: {turn.question!r} does not ask about {fact.label!r}")
    return problems


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
