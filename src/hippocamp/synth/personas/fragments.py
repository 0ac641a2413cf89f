"""Stage 4a: the evidence. Facts -> clusters of 2-3 -> 4-5 fragments each -> verified.

Clusters group facts of one theme (health, money, home, ...) in runs of two or three. Each cluster
gets four or five fragments, messenger exchanges and calendar events, so that every fact has at least
two (one per app, plus extras), each implying the fact through a behavior (a cue) without its label;
a fragment may carry two facts of the cluster when their validity intervals overlap. A fragment of
a prior state lies before the change, one of the current state after it.

The templates write a cluster's fragments from the bank's signals, a new wording per attempt
(`template_fragments`); a model writes them from the facts' cues and dates (`model_fragments`, refused
unless every fact has two fragments inside its validity, from known contacts). The lexical verifier
(`lexical_verify`) recovers each fact from its cues in two fragments and finds no label or synonym of
any fact; the model verifier (`model_verify`) sees the fragments' words and each fact's category, never
labels or ids.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field

from hippocamp.schema.pcontext import Circle, Fact, Fragment, FragmentLine, Persona, VerifierAttempt
from hippocamp.synth.personas.banks import fact_bank, phrase_bank
from hippocamp.synth.personas.clock import agree, clock_text, dated_slots
from hippocamp.synth.personas.facts import spec_of
from hippocamp.synth.personas.model import ModelStageError, ask
from hippocamp.synth.personas.verify import find_leaks, lexical_recovery, normalize
from hippocamp.synth.world import rng_for

__all__ = [
    "CONFIDENT",
    "LogContext",
    "details",
    "fill",
    "fragment_window",
    "lexical_verify",
    "make_clusters",
    "model_fragments",
    "model_verify",
    "random_time",
    "template_fragments",
]

#: confidence at which the model verifier's inference counts as recovered
CONFIDENT = 0.7


class _Slots(dict[str, str]):
    def __init__(self, rng: random.Random, given: dict[str, str]):
        super().__init__(given)
        self.rng = rng

    def __missing__(self, key: str) -> str:
        words = phrase_bank().words
        return self.rng.choice(words[key]) if key in words else "{" + key + "}"


def fill(template: str, rng: random.Random, **given: str) -> str:
    """``template`` with its slots filled: given values first, random words for the rest."""
    return string.Formatter().vformat(template, (), _Slots(rng, given))


@dataclass
class LogContext:
    """What stage 4 needs about one persona."""

    seed: int
    persona: Persona
    facts: list[Fact]
    circle: Circle
    filler_ratio: float
    decoy_share: float
    by_id: dict[str, Fact] = field(init=False)

    def __post_init__(self) -> None:
        self.by_id = {f.id: f for f in self.facts}

    @property
    def start(self) -> date:
        return self.persona.window_start

    @property
    def end(self) -> date:
        return self.persona.window_start + timedelta(days=self.persona.window_days)

    def rng(self, *parts: object) -> random.Random:
        return rng_for(self.seed, self.persona.id, *parts)


def make_clusters(ctx: LogContext) -> list[tuple[str, str, list[str]]]:
    """(cluster id, theme, fact ids): facts of one theme together, in runs of two or three."""
    rng = ctx.rng("clusters")
    themes: dict[str, list[Fact]] = {}
    for fact in ctx.facts:
        themes.setdefault(fact_bank().theme[fact.category], []).append(fact)
    ordered: list[tuple[str, Fact]] = []
    for theme in sorted(themes):
        group = list(themes[theme])
        rng.shuffle(group)
        ordered += [(theme, f) for f in group]
    out = []
    i = 0
    while i < len(ordered):
        rest = len(ordered) - i
        size = rest if rest <= 3 else 2 if rest == 4 else rng.choice((2, 3))
        chunk = ordered[i : i + size]
        out.append((f"c{len(out) + 1:02d}", chunk[0][0], [f.id for _, f in chunk]))
        i += size
    return out


def fragment_window(facts: list[Fact], start: date, end: date) -> tuple[date, date] | None:
    """The days (half-open) on which all ``facts`` hold inside the window, or None."""
    lo = max([start, *(f.valid_from for f in facts if f.valid_from)])
    hi = min([end, *(f.valid_to for f in facts if f.valid_to)])
    return (lo, hi) if lo < hi else None


def random_time(rng: random.Random, window: tuple[date, date], app: str) -> datetime:
    """A time on a random day of ``window`` (half-open): 8:00-18:45 for an event, 7:00-20:59 for a message."""
    day = window[0] + timedelta(days=rng.randrange((window[1] - window[0]).days))
    if app == "calendar":
        return datetime.combine(day, time(rng.randint(8, 18), rng.choice((0, 15, 30, 45))))
    return datetime.combine(day, time(rng.randint(7, 20), rng.randint(0, 59)))


#: the chance that a fact's second piece of evidence is a calendar event rather than another message
#: (0.7 gives 66/34 messenger/calendar over 20 template personas; the paper's main set is about 65/35)
CALENDAR_SHARE = 0.7


def _plan_slots(facts: list[Fact], rng: random.Random, start: date, end: date) -> list[list[tuple[Fact, str]]]:
    """Groups of (fact, app) pieces, one group per fragment: 4-5 fragments, each fact twice: once in a
    message, and once more in a calendar event (`CALENDAR_SHARE` of the facts) or another message."""
    k = len(facts)
    n = rng.choice((4, 5))
    second = ["calendar" if rng.random() < CALENDAR_SHARE else "messenger" for _ in facts]
    pieces: list[list[tuple[Fact, str]]] = [[(f, "messenger")] for f in facts] + [
        [(f, app)] for f, app in zip(facts, second, strict=True)
    ]
    for _ in range(max(0, n - 2 * k)):
        pieces.append([(rng.choice(facts), "messenger")])
    merges = max(0, 2 * k - n)
    for _ in range(merges):
        done = False
        order = list(range(len(pieces)))
        rng.shuffle(order)
        for a in order:
            for b in order:
                pa, pb = pieces[a], pieces[b]
                if a == b or len(pa) > 1 or len(pb) > 1 or pa[0][1] != pb[0][1] or pa[0][0].id == pb[0][0].id:
                    continue
                if fragment_window([pa[0][0], pb[0][0]], start, end) is None:
                    continue
                pieces[a] = pa + pb
                del pieces[b]
                done = True
                break
            if done:
                break
    rng.shuffle(pieces)
    return pieces


def _contact_for(ctx: LogContext, facts: list[Fact], rng: random.Random) -> str:
    ids = {f.id for f in facts}
    linked = [c.id for c in ctx.circle.contacts if ids & set(c.fact_ids)]
    pool = linked or [c.id for c in ctx.circle.contacts]
    return rng.choice(pool) if pool else "c0"


def details(fact: Fact) -> list[str]:
    """The parameter values a template fact's label states ("Miso" of "has a cat named Miso"): its answer
    key needs them, so the logs must state them."""
    values = [v for value in fact.slots.values() for v in ([value] if isinstance(value, str) else value)]
    return [v for v in values if v and v in fact.label]


def _stems(text: str) -> set[str]:
    """Content words folded roughly as a search engine's stemmer would (a preference, not the check)."""
    from hippocamp.store.search import query_words

    return {w[:5] for w in query_words(text) if len(w) > 2}


def _variant(
    options: tuple,  # type: ignore[type-arg]
    used: set[int],
    rng: random.Random,
    missing: Sequence[str] = (),
    asked: set[str] | None = None,
) -> int:
    """A wording not used yet: among them one stating as many of the ``missing`` details as any does,
    then (with ``asked``, the words of the fact's own question) one sharing as many of its words: a
    person mentions a topic in the words one would ask about it, which is what makes evidence findable."""
    fresh = [i for i in range(len(options)) if i not in used] or list(range(len(options)))
    text = [" ".join(o) if isinstance(o, tuple) else o for o in options]
    if missing:
        stated = {i: sum(v in text[i] for v in missing) for i in fresh}
        fresh = [i for i in fresh if stated[i] == max(stated.values())]
    if asked:
        shared = {i: len(_stems(text[i]) & asked) for i in fresh}
        fresh = [i for i in fresh if shared[i] == max(shared.values())]
    i = rng.choice(fresh)
    used.add(i)
    return i


def template_fragments(ctx: LogContext, cluster_id: str, fact_ids: list[str], attempt: int) -> list[Fragment]:
    """The template engine's fragments of one cluster (a new wording per attempt)."""
    rng = ctx.rng("fragments", cluster_id, attempt)
    facts = [ctx.by_id[f] for f in fact_ids]
    used: dict[tuple[str, str], set[int]] = {}
    unsaid = {f.id: details(f) for f in facts}  # the details of each key no fragment has stated yet
    asked = {f.id: _stems(re.sub(r"\{[^}]*\}", " ", s.ask)) if (s := spec_of(f)) else set() for f in facts}
    out = []
    for j, group in enumerate(_plan_slots(facts, rng, ctx.start, ctx.end)):
        group_facts = [f for f, _ in group]
        app = group[0][1]
        window = fragment_window(group_facts, ctx.start, ctx.end)
        if window is None:
            continue
        at = random_time(rng, window, app)
        fid = f"{ctx.persona.id}-{cluster_id}-f{j + 1}"
        ids = [f.id for f in group_facts]
        if app == "messenger":
            contact = _contact_for(ctx, group_facts, rng)
            lines = []
            for fact in group_facts:
                spec = spec_of(fact)
                msgs = spec.msgs if spec else tuple(f"dealing with the {c} thing again" for c in fact.cues[:3])
                i = _variant(msgs, used.setdefault((fact.id, "m"), set()), rng, unsaid[fact.id], asked[fact.id])
                said = fill(msgs[i], rng, **dated_slots(at, rng))  # {day} ahead, {month} to come
                unsaid[fact.id] = [v for v in unsaid[fact.id] if v not in said]
                lines.append(FragmentLine(sender="me", text=rng.choice(phrase_bank().openers) + said))
            if rng.random() < 0.6:
                lines.append(FragmentLine(sender=contact, text=rng.choice(phrase_bank().neutral_replies)))
            out.append(
                Fragment(
                    id=fid,
                    cluster_id=cluster_id,
                    app="messenger",
                    fact_ids=ids,
                    at=at,
                    contact_ids=[contact],
                    lines=lines,
                )
            )
        else:
            parts = []
            for fact in group_facts:
                spec = spec_of(fact)
                cals = spec.cals if spec else tuple((c.capitalize(), "") for c in fact.cues[:2])
                i = _variant(cals, used.setdefault((fact.id, "c"), set()), rng, unsaid[fact.id], asked[fact.id])
                own = clock_text(at)  # a {time} slot is the event's own start
                parts.append((fill(cals[i][0], rng, time=own), fill(cals[i][1], rng, time=own)))
                unsaid[fact.id] = [v for v in unsaid[fact.id] if v not in " ".join(parts[-1])]
            title, notes = parts[0]
            at = agree(at, title, notes, window)  # a start the text states is the start
            for t, n in parts[1:]:
                notes = "; ".join(x for x in (notes, f"{t}: {n}" if n else t) if x)
            attendees = [_contact_for(ctx, group_facts, rng)] if rng.random() < 0.3 else []
            out.append(
                Fragment(
                    id=fid,
                    cluster_id=cluster_id,
                    app="calendar",
                    fact_ids=ids,
                    at=at,
                    contact_ids=attendees,
                    title=title,
                    notes=notes,
                    minutes=rng.choice((30, 45, 60, 90)),
                )
            )
    return out


def lexical_verify(
    fragments: list[Fragment], cluster_facts: list[Fact], all_facts: list[Fact], attempt: int
) -> VerifierAttempt:
    """The offline verifier: recovers each fact from cues in two or more fragments, and finds no
    label or synonym of any of the persona's facts in the fragments."""
    recovered = lexical_recovery(fragments, cluster_facts)
    leaks = [f"{frag.id}: {fid}: {term!r}" for frag in fragments for fid, term in find_leaks(frag.text(), all_facts)]
    passed = not leaks and all(v >= 1.0 for v in recovered.values())
    return VerifierAttempt(attempt=attempt, recovered=recovered, leaks=leaks, passed=passed, verifier="lexical")


# ------------------------------------------------------------------------------------------ model half


class _Line(BaseModel):
    sender: str
    text: str = Field(min_length=1)


class _Fragment(BaseModel):
    app: Literal["messenger", "calendar"]
    fact_ids: list[str] = Field(min_length=1)
    date: date
    time: str = "12:00"
    contact_id: str | None = None
    lines: list[_Line] = Field(default_factory=list)
    title: str = ""
    notes: str = ""
    location: str = ""
    minutes: int = 60


class _Fragments(BaseModel):
    fragments: list[_Fragment]


def _clock(value: str) -> time:
    m = re.match(r"^(\d{1,2}):(\d{2})", value.strip())
    if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        return time(12, 0)
    return time(int(m.group(1)), int(m.group(2)))


async def model_fragments(
    model: Any, ctx: LogContext, cid: str, fact_ids: list[str], attempt: int, feedback: list[str]
) -> list[Fragment]:
    """4-5 fragments of one cluster; refused (ModelStageError) unless every fact has two, dated inside
    its validity, from known contacts."""
    facts = [ctx.by_id[f] for f in fact_ids]

    def dates(f: Fact) -> list[str]:
        w = fragment_window([f], ctx.start, ctx.end)
        return [str(w[0]), str(w[1] - timedelta(days=1))] if w else []

    payload = {
        "persona": ctx.persona.summary,
        "contacts": [{"id": c.id, "name": c.name, "relationship": c.relationship} for c in ctx.circle.contacts],
        "facts": [
            {"id": f.id, "label": f.label, "forbidden": [f.label, *f.synonyms], "cues": f.cues, "dates": dates(f)}
            for f in facts
        ],
        "attempt": attempt,
        "feedback": feedback,
    }
    parsed = await ask(model, "fragments", payload, _Fragments)
    contacts = {c.id for c in ctx.circle.contacts}
    out = []
    for j, f in enumerate(parsed.fragments, start=1):
        unknown = [x for x in f.fact_ids if x not in ctx.by_id or x not in fact_ids]
        if unknown:
            raise ModelStageError(f"fragments {cid}: fragment {j} cites facts outside the cluster: {unknown}")
        window = fragment_window([ctx.by_id[x] for x in f.fact_ids], ctx.start, ctx.end)
        if window is None or not window[0] <= f.date < window[1]:
            raise ModelStageError(f"fragments {cid}: fragment {j} dated {f.date} outside its facts' dates")
        fid = f"{ctx.persona.id}-{cid}-f{j}"
        at = datetime.combine(f.date, _clock(f.time))
        if f.app == "messenger":
            contact = f.contact_id if f.contact_id in contacts else None
            if contact is None or not f.lines:
                raise ModelStageError(f"fragments {cid}: messenger fragment {j} needs lines and a known contact_id")
            lines = [
                FragmentLine(sender="me" if ln.sender not in contacts else ln.sender, text=ln.text) for ln in f.lines
            ]
            out.append(Fragment(id=fid, cluster_id=cid, app="messenger", fact_ids=f.fact_ids, at=at,
                                contact_ids=[contact], lines=lines))  # fmt: skip
        else:
            if not f.title.strip():
                raise ModelStageError(f"fragments {cid}: calendar fragment {j} has no title")
            out.append(Fragment(id=fid, cluster_id=cid, app="calendar", fact_ids=f.fact_ids, at=at, title=f.title,
                                notes=f.notes, location=f.location, minutes=max(15, min(f.minutes, 600))))  # fmt: skip
    if not 4 <= len(out) <= 5:
        raise ModelStageError(f"fragments {cid}: {len(out)} fragments; 4 or 5 wanted")
    for fact in facts:
        if sum(fact.id in fr.fact_ids for fr in out) < 2:
            raise ModelStageError(f"fragments {cid}: fact {fact.id} has fewer than 2 fragments")
    return out


# ------------------------------------------------------------------------------------- model verifier


class _Inference(BaseModel):
    slot: int
    statement: str = ""
    confidence: float = Field(ge=0, le=1)


class _Verdict(BaseModel):
    inferences: list[_Inference]
    leaks: list[str] = Field(default_factory=list)


_STOP = frozenset("a an the and or of to in on for with has have is are was be their his her they them who".split())


def _content(text: str) -> set[str]:
    return {w for w in normalize(text).split() if len(w) >= 4 and w not in _STOP}


def _matches(statement: str, fact: Fact) -> bool:
    """The verifier's words name the fact: they share a content word with its label, synonyms or cues."""
    return bool(_content(statement) & _content(" ".join([fact.label, *fact.synonyms, *fact.cues])))


async def model_verify(verifier: Any, frags: list[Fragment], facts: list[Fact], attempt: int) -> VerifierAttempt:
    """The model verifier: it sees the fragments' words and each fact's category, never labels or ids."""
    payload = {
        "fragments": [{"n": i, "app": f.app, "text": f.text()} for i, f in enumerate(frags, start=1)],
        "slots": [{"slot": i, "category": f.category} for i, f in enumerate(facts, start=1)],
    }
    parsed = await ask(verifier, "verifier", payload, _Verdict)
    recovered = {}
    for i, fact in enumerate(facts, start=1):
        best = max(
            (x.confidence for x in parsed.inferences if x.slot == i and _matches(x.statement, fact)), default=0.0
        )
        recovered[fact.id] = best
    passed = not parsed.leaks and all(v >= CONFIDENT for v in recovered.values())
    return VerifierAttempt(
        attempt=attempt, recovered=recovered, leaks=[f"verifier: {x}" for x in parsed.leaks], passed=passed,
        verifier=f"model:{verifier.id}",
    )  # fmt: skip
