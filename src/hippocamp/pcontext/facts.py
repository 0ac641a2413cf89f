"""Stage 2b: the hidden-fact inventory (18 categories), with prior/current states for facts that change.

The template engine samples facts from `templates.facts.BANK` per category, deliberately *without*
looking at the seed or at other facts: the audit (`audit.py`) must find and repair what does not fit.
A model distills facts from the interview instead (`pipeline.py`).
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from functools import cache

from hippocamp.pcontext.templates.facts import BANK, FactSpec
from hippocamp.schema.pcontext import CATEGORIES, Fact

__all__ = ["apply_changes", "bank", "fact_from_spec", "sample_facts", "spec_of"]


@cache
def bank() -> dict[str, FactSpec]:
    """Every spec by key, current states (``then``) included."""
    out: dict[str, FactSpec] = {}
    for spec in BANK:
        out[spec.key] = spec
        if spec.then is not None:
            out[spec.then.key] = spec.then
    return out


def spec_of(fact: Fact) -> FactSpec | None:
    """The bank spec a template fact came from (its ``bank:<key>`` tag), None for model facts."""
    for tag in fact.tags:
        if tag.startswith("bank:"):
            return bank().get(tag[5:])
    return None


def fact_from_spec(spec: FactSpec, fid: str) -> Fact:
    return Fact(
        id=fid,
        category=spec.category,
        label=spec.label,
        synonyms=list(spec.synonyms),
        cues=list(spec.cues),
        value=spec.say,
        tags=[f"bank:{spec.key}", *spec.tags],
    )


def sample_facts(persona_id: str, rng: random.Random, per_category: int = 2) -> list[Fact]:
    """``per_category`` facts per category, drawn blindly from the bank (the audit repairs misfits)."""
    out: list[Fact] = []
    for category in CATEGORIES:
        options = [s for s in BANK if s.category == category]
        for spec in rng.sample(options, min(per_category, len(options))):
            out.append(fact_from_spec(spec, f"{persona_id}-F{len(out) + 1:03d}"))
    return out


def apply_changes(
    facts: list[Fact], persona_id: str, start: date, days: int, rng: random.Random, changes: int = 3
) -> list[Fact]:
    """Up to ``changes`` facts that can change get a successor: the prior ends, the current begins, on a
    day in the middle third of the window. Returns the facts with the successors appended."""
    out = [f.model_copy() for f in facts]
    candidates = [i for i, f in enumerate(out) if (s := spec_of(f)) is not None and s.then is not None]
    chosen = sorted(rng.sample(candidates, min(changes, len(candidates))))
    n = max((int(f.id.rsplit("-F", 1)[-1]) for f in out), default=0)
    for i in chosen:
        spec = spec_of(out[i])
        if spec is None or spec.then is None:
            continue
        n += 1
        on = start + timedelta(days=rng.randint(days // 3, max(days // 3, 2 * days // 3)))
        current = fact_from_spec(spec.then, f"{persona_id}-F{n:03d}").model_copy(update={"valid_from": on})
        out[i] = out[i].model_copy(update={"valid_to": on, "prior_of": current.id})
        out.append(current)
    return out
