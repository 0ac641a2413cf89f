"""Stage 2b: the hidden-fact inventory (18 categories), with prior/current states for facts that change.

The template engine samples facts from the fact bank (`banks.fact_bank`) per category, deliberately *without*
looking at the seed or at other facts: the audit (`audit.py`) must find and repair what does not fit.
A model distills facts from the interview instead (`pipeline.py`).
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from functools import cache

from hippocamp.pcontext.banks import FactSpec, fact_bank
from hippocamp.schema.pcontext import CATEGORIES, Fact

__all__ = ["DEFAULT_CHANGES", "DEFAULT_FACTS", "apply_changes", "bank", "fact_from_spec", "sample_facts", "spec_of"]

#: the paper's instance: 10,088 hidden facts over 100 personas, about 7 of them changing (663 T3 cases)
DEFAULT_FACTS = 100
DEFAULT_CHANGES = 7


@cache
def bank() -> dict[str, FactSpec]:
    """Every spec by key, current states (``then``) included."""
    out: dict[str, FactSpec] = {}
    for spec in fact_bank().facts:
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


def sample_facts(persona_id: str, rng: random.Random, n: int = DEFAULT_FACTS - DEFAULT_CHANGES) -> list[Fact]:
    """``n`` facts spread evenly over the 18 categories (as many as the bank holds), drawn blindly from
    the bank (the audit repairs misfits). Categories take turns, in a new random order each round."""
    pools = {c: [s for s in fact_bank().facts if s.category == c] for c in CATEGORIES}
    for pool in pools.values():
        rng.shuffle(pool)
    chosen: dict[str, list[FactSpec]] = {c: [] for c in CATEGORIES}
    total = 0
    while total < n and any(pools.values()):
        order = [c for c in CATEGORIES if pools[c]]
        rng.shuffle(order)
        for category in order[: n - total]:
            chosen[category].append(pools[category].pop())
            total += 1
    out: list[Fact] = []
    for category in CATEGORIES:
        for spec in chosen[category]:
            out.append(fact_from_spec(spec, f"{persona_id}-F{len(out) + 1:03d}"))
    return out


def apply_changes(
    facts: list[Fact], persona_id: str, start: date, days: int, rng: random.Random, changes: int = DEFAULT_CHANGES
) -> list[Fact]:
    """Up to ``changes`` facts that can change (of distinct categories while there are some) get a
    successor: the prior ends, the current begins, on a day in the middle third of the window. Returns
    the facts with the successors appended."""
    out = [f.model_copy() for f in facts]
    candidates = [i for i, f in enumerate(out) if (s := spec_of(f)) is not None and s.then is not None]
    rng.shuffle(candidates)
    first: dict[str, int] = {}  # one change per category first: T3 asks about a category
    for i in candidates:
        first.setdefault(out[i].category, i)
    ranked = [*first.values(), *(i for i in candidates if i not in first.values())]
    chosen = sorted(ranked[:changes])
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
