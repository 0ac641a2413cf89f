"""Stage 3: the social circle, a configurable number of frequent contacts checked against the facts.

The templates (`template_circle`) ground each contact's relationship, history and shared activities in
the facts; a model writes them instead (`model_circle`). Either way the check (`check_circle`) removes
what contradicts the persona: a relationship the household rules out (a spouse for someone unmarried),
a contact with the persona's own name or another contact's, links to facts that do not exist, and
shared activities whose facts are gone.
"""

from __future__ import annotations

import random
from typing import Any

from pydantic import BaseModel, Field

from hippocamp.schema.pcontext import Circle, Contact, Fact, Persona, Seed
from hippocamp.synth.personas.banks import fact_bank, phrase_bank
from hippocamp.synth.personas.facts import spec_of
from hippocamp.synth.personas.model import ModelStageError, ask
from hippocamp.synth.personas.seeds import marginals

__all__ = ["check_circle", "model_circle", "template_circle"]

#: which kinds of facts a relationship plausibly shares
_THEMES_FOR = {
    "spouse": ("home", "family", "money", "health"),
    "partner": ("home", "family", "money", "leisure"),
    "parent": ("family", "history", "health"),
    "co-parent": ("family", "home"),
    "cousin": ("family", "history", "leisure"),
    "roommate": ("home", "money", "leisure"),
    "sibling": ("family", "history", "health"),
    "friend": ("leisure", "values", "money", "health"),
    "coworker": ("work", "money"),
    "neighbor": ("home", "leisure", "values"),
}
_NEEDS = {
    "spouse": ("married",),
    "partner": ("partner",),
    "co-parent": ("children", "single parent"),
    "roommate": ("roommates",),
}
_FAMILY = ("spouse", "parent", "sibling", "cousin")


def _kinds(seed: Seed, n: int, rng: random.Random) -> list[str]:
    contact_kinds = phrase_bank().contact_kinds
    kinds = [k for key, ks in contact_kinds.items() if key != "*" and key in seed.household for k in ks]
    pool = list(contact_kinds["*"])
    rng.shuffle(pool)
    for k in pool:
        if len(kinds) >= n:
            break
        if k not in kinds or k == "friend":
            kinds.append(k)
    while len(kinds) < n:
        kinds.append(rng.choice(("friend", "coworker", "neighbor")))
    return kinds[:n]


def _activity(fact: Fact) -> str:
    spec = spec_of(fact)
    if spec is not None and spec.cals:
        return spec.cals[0][0].replace("{time}", "").replace("{day}", "").strip(" -,")
    return fact.cues[0] if fact.cues else fact.category


def template_circle(seed: Seed, facts: list[Fact], n: int, rng: random.Random) -> Circle:
    """``n`` contacts with relationship, history and shared activities grounded in the facts."""
    data = marginals()
    persona_first, _, persona_last = seed.name.partition(" ")
    used_names = {persona_first}
    current = [f for f in facts if not f.valid_to]
    taken: set[str] = set()
    contacts = []
    for i, kind in enumerate(_kinds(seed, n, rng)):
        sex = rng.choice(("female", "male"))
        first = rng.choice([x for x in data["first_names"][sex] if x not in used_names])
        used_names.add(first)
        last = persona_last if kind in _FAMILY and persona_last else rng.choice(data["last_names"])
        years = rng.randint(2, 25)
        history = rng.choice(phrase_bank().contact_history[kind]).format(
            name=persona_first, years=years, since=2024 - years, state=seed.state
        )
        theme = fact_bank().theme
        fitting = [f for f in current if theme[f.category] in _THEMES_FOR[kind] and f.id not in taken]
        linked = rng.sample(fitting, min(2, len(fitting)))
        taken.update(f.id for f in linked)
        contacts.append(
            Contact(
                id=f"c{i + 1}",
                name=f"{first} {last}",
                relationship=kind,
                history=history,
                shared_activities=[_activity(f) for f in linked],
                fact_ids=[f.id for f in linked],
            )
        )
    return Circle(persona_id=seed.id, contacts=contacts)


def check_circle(circle: Circle, seed: Seed, facts: list[Fact]) -> Circle:
    """The circle with contradicting details removed and each removal recorded."""
    known = {f.id: f for f in facts}
    removed = list(circle.removed)
    names = {seed.name.lower()}
    contacts = []
    for c in circle.contacts:
        rel = c.relationship
        needs = _NEEDS.get(rel)
        if needs and not any(x in seed.household for x in needs):
            removed.append(f"{c.id}: relationship {rel!r} contradicts household {seed.household!r}; now 'friend'")
            rel = "friend"
        name = c.name
        if name.lower() in names:
            removed.append(f"{c.id}: name {name!r} is the persona's or another contact's; renamed")
            name = f"{name} {c.id.upper()}"
        names.add(name.lower())
        keep_ids, keep_acts = [], []
        for j, fid in enumerate(c.fact_ids):
            if fid in known:
                keep_ids.append(fid)
                if j < len(c.shared_activities):
                    keep_acts.append(c.shared_activities[j])
            else:
                removed.append(f"{c.id}: linked fact {fid} does not exist; link and its activity removed")
        keep_acts += c.shared_activities[len(c.fact_ids) :]
        contacts.append(
            c.model_copy(
                update={"relationship": rel, "name": name, "fact_ids": keep_ids, "shared_activities": keep_acts}
            )
        )
    return circle.model_copy(update={"contacts": contacts, "removed": removed})


# ------------------------------------------------------------------------------------------ model half


class _Contact(BaseModel):
    name: str = Field(min_length=1)
    relationship: str
    history: str = ""
    shared_activities: list[str] = Field(default_factory=list)
    fact_ids: list[str] = Field(default_factory=list)


class _Contacts(BaseModel):
    contacts: list[_Contact]


async def model_circle(model: Any, persona: Persona, facts: list[Fact], n: int) -> Circle:
    """``n`` contacts written by the model from the persona and its current facts (fewer is unusable)."""
    payload = {
        "persona": persona.summary,
        "contacts_wanted": n,
        "facts": [f.model_dump(include={"id", "category", "label"}) for f in facts if not f.valid_to],
    }
    parsed = await ask(model, "circle", payload, _Contacts)
    if len(parsed.contacts) < n:
        raise ModelStageError(f"circle: {len(parsed.contacts)} contacts, {n} wanted")
    contacts = [
        Contact(id=f"c{i}", name=c.name, relationship=c.relationship.lower(), history=c.history,
                shared_activities=c.shared_activities, fact_ids=c.fact_ids)
        for i, c in enumerate(parsed.contacts[:n], start=1)
    ]  # fmt: skip
    return Circle(persona_id=persona.id, contacts=contacts, generator=f"model:{model.id}")
