"""The template engine's banks as data: hidden facts (``data/facts.json``) and phrases (``data/phrases.json``),
read by one loader that validates every entry and is cached, so that importing the package reads neither
file.

**Facts** (`FactBank`): per category several possible facts, each with its canonical label, close synonyms
(leakage terms), behavioral cues, and paraphrased signals that imply it. Every signal (messenger line,
calendar title/notes) holds at least one cue and none of any fact's label or synonyms (tests check the
whole bank). Slots: ``{day}``, ``{time}``, ``{amount}``, ``{month}``; decoys use ``{other}`` (a third
person, named in the sentence) and ``{pos}`` (his/her). Each fact also carries the T1/T2 question that only
it answers (``ask``; a fact that changes names what changes, ``change``, for T3, and its successor state,
``then``). Where two facts would answer one question, or contradict each other, they exclude each other in
the audit: an ``x:`` tag that every member also lists under ``conflicts`` (so a persona holds at most one
of, say, a commute mode or a stage of parenting), or tags such as the faith traditions and ``eats_meat``
that the other side lists. ``when.groups`` is a list of occupation-group substrings or the name of a set
in ``occupation_groups``.

**Interview** (`InterviewBank`, ``data/interview.json``): the life-story questions in order, each with the
fact category it asks about (and, for a narrow question, the tags it is about) and answers written for it
that commit to no hidden fact.

**Phrases** (`PhraseBank`): filler, replies, contacts, T4
patterns. Filler chats are built from ``exchanges`` (`Exchange`): a dialogue act (``question``, ``news``,
``plan``, ``request``, ``small_talk``, ``complaint``, ``share``), the tone of the news where it matters
(``good``, ``bad``, ``neutral``), opening lines, replies that fit every opening line, and optional
follow-ups by the opener, so that a reply never answers a message it does not fit. ``hellos`` (a
contact to the persona) and ``signoffs`` (the persona to a contact) frame evidence sessions;
``neutral_replies`` answer evidence lines without guessing their tone. Templates name their slots
(``{food}``); a slot must be a ``words`` list or one the generator fills per message (`MESSAGE_SLOTS`).
Filler and replies never name a hidden fact (tests check them against every label and synonym of the
fact bank). Slots are filled from word lists so that the same line rarely repeats.

Errors: `BankError` names the file, the entry (``facts[12] ('veteran')``, ``questions``) and the field
(``then.requests.0.boundary``): unknown keys, wrong types, missing fields, duplicate JSON keys, duplicate
spec keys, a ``change`` without ``then``, a conflict tag that no spec carries, an unknown category,
boundary, mechanism, occupation group set, dialogue act, tone or template slot.
"""

from __future__ import annotations

import json
import os
import re
import string
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from hippocamp.schema.pcontext import BOUNDARIES, CATEGORIES, MECHANISMS

__all__ = [
    "ACTS",
    "FACT_SLOT",
    "INTERVIEW_SLOTS",
    "KIND_ROLES",
    "MESSAGE_SLOTS",
    "ROLES",
    "SEED_SLOTS",
    "SLOT_NAMES",
    "TONES",
    "TOPIC_OF",
    "BankError",
    "Exchange",
    "FactBank",
    "FactSpec",
    "InterviewBank",
    "InterviewQuestion",
    "Pattern",
    "Perspective",
    "PhraseBank",
    "Request",
    "When",
    "fact_bank",
    "fill_slots",
    "interview_bank",
    "load_fact_bank",
    "load_interview_bank",
    "load_phrase_bank",
    "phrase_bank",
]

#: the version of both files' layout; another value is refused
BANK_VERSION = 1

Perspective = Literal["demographic", "behavioral", "psychological", "political"]
_FROZEN = ConfigDict(frozen=True, extra="forbid", defer_build=True)  # schemas built on first load, not import
_Strings = tuple[str, ...]
_NonEmpty = Annotated[tuple[str, ...], Field(min_length=1)]

#: a fact's own parameter in its texts: ``{@pet}``, or ``{@pet[1]}`` for one part of a linked choice
#: (``"pet": [["dog", "Biscuit"], ["cat", "Miso"]]``)
FACT_SLOT = re.compile(r"\{@([a-z][a-z0-9_]*)(?:\[(\d)\])?\}")
#: parameters every fact may use without declaring them, filled from the persona's seed
SEED_SLOTS = ("city", "state")
#: a seed predicate of ``FactSpec.likely`` (`facts.seed_matches` evaluates them)
LIKELY = re.compile(
    r"^(?:(?:group|occupation|household|education|region|status|sex|mentions):[a-z0-9 '&,/-]+"
    r"|age:\d{2}-\d{2,3}|working|not_working)$"
)
SlotChoice = str | tuple[str, ...]

#: the interview topic that asks about each fact category
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


def fill_slots(text: str, values: dict[str, Any]) -> str:
    """``text`` with its fact parameters (`FACT_SLOT`) replaced by ``values``; other slots untouched."""

    def one(m: re.Match[str]) -> str:
        value = values.get(m.group(1))
        if value is None:
            return m.group(0)
        if m.group(2) is None:
            return value if isinstance(value, str) else str(value[0])
        return str(value[int(m.group(2))])

    return FACT_SLOT.sub(one, text)


class BankError(ValueError):
    """A bank file that cannot be used, with where: the file, the entry and the field."""

    def __init__(self, file: str, entry: str, field: str, reason: str) -> None:
        self.file, self.entry, self.field, self.reason = file, entry, field, reason
        super().__init__(f"{file}: {entry}, field {field!r}: {reason}")


def _one_of(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise PydanticCustomError("unknown_value", f"unknown {what} {value!r}; one of {', '.join(allowed)}")
    return value


class Request(BaseModel):
    """A first-person T5 request that touches the fact, with the expected action boundary."""

    model_config = _FROZEN

    text: str
    boundary: str
    why: str

    @field_validator("boundary")
    @classmethod
    def _known_boundary(cls, v: str) -> str:
        return _one_of(v, BOUNDARIES, "boundary")


class When(BaseModel):
    """The demographic conditions a fact needs (each optional); the audit replaces a fact that misses one."""

    model_config = _FROZEN

    min_age: StrictInt | None = None
    max_age: StrictInt | None = None
    #: any of these words in the household, not negated ("no children at home")
    household: _Strings | None = None
    working: StrictBool | None = None
    #: the work status (``Seed.occupation``) is one of these
    status: _Strings | None = None
    #: the occupation group holds one of these (case-insensitive); in the file, a list or a set's name
    groups: _Strings | None = None
    #: the education holds one of these
    education: _Strings | None = None
    #: the occupation (``Seed.occupation``, case-insensitive) holds one of these words ...
    occupation: _Strings | None = None
    #: ... and none of these ("teaches 8th grade" is not a high-school teacher's fact)
    not_occupation: _Strings | None = None
    #: income band index bounds
    max_income: StrictInt | None = None
    min_income: StrictInt | None = None

    @field_validator("groups", mode="before")
    @classmethod
    def _named_set(cls, v: object, info: ValidationInfo) -> object:
        if not isinstance(v, str):
            return v
        sets = (info.context or {}).get("occupation_groups", {})
        if v not in sets:
            raise PydanticCustomError("unknown_group_set", f"no occupation group set {v!r} in occupation_groups")
        return sets[v]


class FactSpec(BaseModel):
    """One possible hidden fact of the template engine (see the module's docstring)."""

    model_config = _FROZEN

    key: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    category: str
    label: str
    synonyms: _NonEmpty
    cues: _NonEmpty
    say: str
    msgs: _NonEmpty
    cals: Annotated[tuple[tuple[str, str], ...], Field(min_length=1)]
    decoys: _Strings
    #: the T1/T2 question only this fact answers among the facts a persona holds at once (third person;
    #: ``{name}`` and the pronoun slots ``{subj}``, ``{obj}``, ``{poss}``, ``{self}``), naming neither the
    #: label, a synonym nor a cue; specs that would answer the same question exclude each other (a shared
    #: ``x:`` tag in ``tags`` and ``conflicts``)
    ask: str
    tags: _Strings = ()
    when: When = Field(default_factory=When)
    #: tag -> audit perspective under which this fact contradicts a fact carrying the tag
    conflicts: dict[str, Perspective] = Field(default_factory=dict)
    requests: tuple[Request, ...] = ()
    #: for a spec with ``then``: what changes, for the T3 question ("what changed about {change}?")
    change: str = ""
    #: the state it changes into during the window (a T3 pair); it shares the spec's parameters
    then: FactSpec | None = None
    #: the fact's parameters (``{@name}`` in its texts): each persona holding it gets one choice per slot,
    #: so two personas with the same spec rarely hold the same fact; every slot appears in the label
    slots: dict[str, tuple[SlotChoice, ...]] = Field(default_factory=dict)
    #: seed predicates that make the fact likelier (each one the seed meets triples its weight):
    #: ``group:healthcare``, ``occupation:nurse``, ``household:children``, ``education:bachelor``,
    #: ``region:south``, ``status:retired``, ``sex:female``, ``mentions:garden`` (occupation, hobbies,
    #: goals and narrative), ``age:18-29``, ``working``, ``not_working``
    likely: _Strings = ()

    def texts(self) -> list[tuple[str, str]]:
        """(field, text) for every text the spec states, its successor's excluded."""
        out = [("label", self.label), ("say", self.say), ("ask", self.ask), ("change", self.change)]
        for name in ("synonyms", "cues", "msgs", "decoys"):
            out += [(f"{name}.{i}", t) for i, t in enumerate(getattr(self, name))]
        out += [(f"cals.{i}.{j}", t) for i, pair in enumerate(self.cals) for j, t in enumerate(pair)]
        for i, r in enumerate(self.requests):
            out += [(f"requests.{i}.text", r.text), (f"requests.{i}.why", r.why)]
        return out

    def filled(self, values: dict[str, Any]) -> FactSpec:
        """The spec with its parameters set to ``values`` (the successor too)."""

        def f(text: str) -> str:
            return fill_slots(text, values)

        update: dict[str, Any] = {
            "label": f(self.label),
            "say": f(self.say),
            "ask": f(self.ask),
            "change": f(self.change),
            "synonyms": tuple(map(f, self.synonyms)),
            "cues": tuple(map(f, self.cues)),
            "msgs": tuple(map(f, self.msgs)),
            "decoys": tuple(map(f, self.decoys)),
            "cals": tuple((f(a), f(b)) for a, b in self.cals),
            "requests": tuple(r.model_copy(update={"text": f(r.text), "why": f(r.why)}) for r in self.requests),
            "then": self.then.filled(values) if self.then is not None else None,
        }
        return self.model_copy(update=update)

    @field_validator("category")
    @classmethod
    def _known_category(cls, v: str) -> str:
        return _one_of(v, CATEGORIES, "category")

    @model_validator(mode="after")
    def _question_and_change(self) -> FactSpec:
        if not self.ask.strip():
            raise PydanticCustomError("no_question", "the fact has no question", {"field": "ask"})
        if bool(self.change) != (self.then is not None):
            why = "a change topic needs a successor state" if self.change else "a successor state needs a change topic"
            raise PydanticCustomError("change_then", why, {"field": "change"})
        for i, tag in enumerate(self.tags):
            if tag.startswith("x:") and tag not in self.conflicts:
                why = f"the exclusive tag {tag!r} is missing from conflicts"
                raise PydanticCustomError("exclusive_tag", why, {"field": f"tags.{i}"})
        for i, pred in enumerate(self.likely):
            if not LIKELY.match(pred):
                why = f"not a seed predicate: {pred!r} (group:, occupation:, household:, education:, region:, "
                why += "status:, sex:, mentions: a word; age:LO-HI; working; not_working)"
                raise PydanticCustomError("likely", why, {"field": f"likely.{i}"})
        for name, choices in self.slots.items():
            where = {"field": f"slots.{name}"}
            if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or name in SEED_SLOTS:
                why = f"{name!r} is not a slot name (lower case; not one of the seed's {', '.join(SEED_SLOTS)})"
                raise PydanticCustomError("slot_name", why, where)
            if len(choices) < 2:
                raise PydanticCustomError("slot_choices", "a slot needs at least two choices", where)
            if len(set(choices)) != len(choices):
                raise PydanticCustomError("slot_choices", "a choice is listed twice", where)
            arity = {1 if isinstance(c, str) else len(c) for c in choices}
            if len(arity) != 1 or (not isinstance(choices[0], str) and min(arity) < 2):
                why = "every choice must be one text, or every one a list of the same length (two or more)"
                raise PydanticCustomError("slot_choices", why, where)
            if any(not (c if isinstance(c, str) else all(c)) for c in choices):
                raise PydanticCustomError("slot_choices", "an empty choice", where)
        return self


class FactBank(BaseModel):
    """The content of ``facts.json``."""

    model_config = _FROZEN

    version: Literal[1]
    #: category -> theme (what circles and fragment clusters group facts by)
    theme: dict[str, str]
    #: the question about a category, for model facts (which have no spec and so no question of their own)
    category_ask: dict[str, str]
    #: named lists of occupation-group substrings, for ``when.groups``
    occupation_groups: dict[str, _Strings]
    facts: tuple[FactSpec, ...]

    def specs(self) -> list[FactSpec]:
        """Every spec, each followed by its successor state."""
        return [x for s in self.facts for x in (s, s.then) if x is not None]


#: what a slot of a T4 pattern contributes to the inference, and the fact tags that can play that part. Every
#: alternative of a slot must require one of its role's tags (``Pattern.slots``), so that the conclusion
#: holds for any fact the slot admits: a whole category never qualifies (``cat:diet`` admits a grilling
#: hobby, which does not "manage" a peanut allergy), and a tag outside the role is refused
# fmt: off
ROLES: dict[str, frozenset[str]] = {
    # a demand or pressure that has to be coped with or paid for
    "strain": frozenset({
        "health_constraint", "time_constraint", "budget", "mobility_constraint", "mobility_limited", "anxious",
        "stress", "shift_work", "night_worker", "night_owl", "pessimist", "raising_kids", "caretaker",
    }),
    # a deliberate practice that answers a strain
    "response": frozenset({"coping", "planner", "creative", "active", "athletic", "outdoors", "caffeine", "introvert"}),
    # a fixed limit that choices must respect
    "limit": frozenset({
        "food_constraint", "health_constraint", "sugar_limit", "salt_limit", "no_alcohol", "mobility_constraint",
        "mobility_limited", "budget", "x:thrift", "no_flying", "faith", "light_sensitive",
    }),
    # a target being worked toward
    "goal": frozenset({"money_goal", "career_goal", "fitness_goal", "health_goal", "ambitious"}),
    # a habit or resource put to work for a goal or a limit
    "means": frozenset({
        "disciplined", "planner", "early_riser", "learner", "x:enrolled", "athletic", "active", "x:thrift", "budget",
    }),
    # a value or view held
    "conviction": frozenset({
        "faith", "family_first", "green", "pro_climate_reg", "pro_labor", "civic", "community", "integrity",
        "independent", "tradition",
    }),
    # where a value or a trait shows in what the persona does
    "practice": frozenset({
        "civic", "community", "faith", "green", "tradition", "family_first", "extrovert", "introvert", "creative",
        "learner", "x:enrolled", "athletic", "active", "outdoors", "disciplined", "early_riser",
    }),
    # a lasting disposition
    "trait": frozenset({
        "introvert", "extrovert", "anxious", "planner", "disciplined", "independent", "pessimist", "spontaneous",
    }),
    # a habit pulling against a goal
    "temptation": frozenset({"health_risk", "sedentary", "sweet_tooth"}),
}
#: the roles a pattern of each mechanism needs among its slots (one of each inner set, every inner set)
KIND_ROLES: dict[str, tuple[frozenset[str], ...]] = {
    "coping_strategy": (frozenset({"strain"}), frozenset({"response", "means"})),
    "decision_rule": (
        frozenset({"limit", "goal", "conviction", "trait"}),
        frozenset({"means", "practice", "goal", "trait", "strain"}),
    ),
    "tradeoff": (
        frozenset({"strain", "limit", "goal", "temptation"}),
        frozenset({"strain", "goal", "conviction", "trait"}),
    ),
    "motive": (frozenset({"goal", "conviction", "trait"}), frozenset({"means", "practice", "goal", "response"})),
    "identity": (frozenset({"conviction", "trait", "practice"}), frozenset({"practice", "conviction", "means"})),
}
# fmt: on
#: the fact placeholders of a pattern's slots, in order
SLOT_NAMES = ("a", "b", "c", "d")


class Pattern(BaseModel):
    """A T4 pattern: an inference from two to four facts to a higher-level conclusion.

    ``slots`` are filled by distinct facts, each slot by a fact matching one of its alternatives. An
    alternative is a conjunction joined by ``+``: tags the fact carries, ``cat:<category>`` (the fact's
    category), and ``!tag`` / ``!cat:<category>`` (what it must not be); it must require at least one tag of
    the slot's role (``roles``, one per slot, from `ROLES`), and the roles must be the ones the mechanism
    needs (`KIND_ROLES`): the conclusion must follow for any fact a slot admits. ``conclusion`` is the
    inferred pattern (never a fact's label), ``rule`` states the inference rule in general terms, and
    ``why`` ties the persona's facts (``{a}``, ``{b}``, ...) to it, using every slot."""

    model_config = _FROZEN

    slots: Annotated[tuple[_NonEmpty, ...], Field(min_length=2, max_length=len(SLOT_NAMES))]
    roles: tuple[str, ...] = ()
    kind: str
    question: str
    conclusion: str
    rule: str = Field(min_length=1)
    why: str

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, v: str) -> str:
        return _one_of(v, MECHANISMS, "mechanism")

    def matches(self, slot: int, category: str, tags: tuple[str, ...] | list[str]) -> bool:
        """Whether a fact of ``category`` carrying ``tags`` may fill slot ``slot``."""
        have = {*tags, f"cat:{category}"}
        return any(
            all((part[1:] not in have) if part.startswith("!") else (part in have) for part in alt.split("+"))
            for alt in self.slots[slot]
        )


#: dialogue acts of filler exchanges, and the tones of their news
ACTS = ("question", "news", "plan", "request", "small_talk", "complaint", "share")
TONES = ("good", "bad", "neutral")
#: slots the generator fills per message rather than from ``words``: the addressee's first name and the
#: dated slots of `clock.dated_slots`
MESSAGE_SLOTS = frozenset({"name", "today", "day", "this_month", "past_month", "month"})


class Exchange(BaseModel):
    """A filler exchange: an opening line, a reply that fits every opening line, and maybe a follow-up."""

    model_config = _FROZEN

    act: str
    #: the tone of the news (replies to good news cheer, to bad news commiserate)
    tone: str = "neutral"
    #: what it is about (for reading the bank; entries are named by it in errors)
    topic: str = Field(min_length=1)
    open: _NonEmpty
    reply: _NonEmpty
    #: the opener's next line after the reply (optional)
    follow: _Strings = ()

    @field_validator("act")
    @classmethod
    def _known_act(cls, v: str) -> str:
        return _one_of(v, ACTS, "dialogue act")

    @field_validator("tone")
    @classmethod
    def _known_tone(cls, v: str) -> str:
        return _one_of(v, TONES, "tone")


#: the seed's slots an interview answer may use (`interview._slots` fills them)
INTERVIEW_SLOTS = frozenset({"city", "state", "age", "household", "occupation_phrase", "goal", "hobby"})


class InterviewQuestion(BaseModel):
    """One question of the life-story interview: what it asks about, and answers written for it."""

    model_config = _FROZEN

    topic: str
    question: str = Field(min_length=1)
    #: the fact category an answer to it states (None: an open question, answered generically)
    category: str | None = None
    #: for a narrow question: the fact tags it is about (a fact with none of them does not answer it)
    about: _Strings = ()
    #: answers in the persona's voice for when it has no fact to tell here; they commit to nothing a
    #: hidden fact could state (slots: `INTERVIEW_SLOTS`)
    answers: _NonEmpty

    @field_validator("topic")
    @classmethod
    def _known_topic(cls, v: str) -> str:
        return _one_of(v, tuple(sorted(set(TOPIC_OF.values()))), "topic")

    @field_validator("category")
    @classmethod
    def _known_category(cls, v: str | None) -> str | None:
        return None if v is None else _one_of(v, CATEGORIES, "category")


class InterviewBank(BaseModel):
    """The content of ``interview.json``: the questions in the order they are asked."""

    model_config = _FROZEN

    version: Literal[1]
    questions: Annotated[tuple[InterviewQuestion, ...], Field(min_length=1)]


class PhraseBank(BaseModel):
    """The content of ``phrases.json``."""

    model_config = _FROZEN

    version: Literal[1]
    #: contact relationships by household word (the first fits; ``*``: those that always fit)
    contact_kinds: dict[str, _NonEmpty]
    contact_history: dict[str, _NonEmpty]
    #: theme -> an activity shared with a contact
    shared_activity: dict[str, str]
    #: slot -> fillers
    words: dict[str, _NonEmpty]
    openers: _NonEmpty
    signoffs: _NonEmpty
    #: replies a contact may send after an evidence line (no facts in them)
    replies: _NonEmpty
    #: persona lines of ordinary filler conversations
    filler_lines: _NonEmpty
    filler_replies: _NonEmpty
    #: filler chats as exchanges of fitting lines (see the module's docstring)
    exchanges: Annotated[tuple[Exchange, ...], Field(min_length=1)]
    #: a contact's first line before an evidence session (``{name}``: the persona's first name)
    hellos: _NonEmpty
    #: a contact's answer to an evidence line, fitting good and bad news alike
    neutral_replies: _NonEmpty
    #: calendar filler: (title, notes)
    filler_events: Annotated[tuple[tuple[str, str], ...], Field(min_length=1)]
    patterns: tuple[Pattern, ...]


# -- reading -----------------------------------------------------------------------------------------------

Loc = tuple[str | int, ...]
_LISTS = ("facts", "patterns", "exchanges")  # sections whose entries are named by index (and key)


class _Object(dict[str, Any]):
    """A JSON object that remembers its first repeated key."""

    repeated: str | None = None


def _pairs(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object()
    for k, v in pairs:
        if k in obj and obj.repeated is None:
            obj.repeated = k
        obj[k] = v
    return obj


def _repeated(value: Any, loc: Loc = ()) -> Loc | None:
    """Where the first repeated key of a parsed document is."""
    if isinstance(value, _Object):
        if value.repeated is not None:
            return (*loc, value.repeated)
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for k, v in items:
        if (found := _repeated(v, (*loc, k))) is not None:
            return found
    return None


def _where(raw: Any, loc: Loc) -> tuple[str, str]:
    """(entry, field) of a location in a bank file: ``facts[3] ('veteran')`` and ``then.ask``."""
    if len(loc) <= 1:
        return "(top level)", ".".join(map(str, loc)) or "-"
    section, rest = str(loc[0]), loc[1:]
    entry = section
    if section in _LISTS and isinstance(rest[0], int):
        i, rest = rest[0], rest[1:]
        entry = f"{section}[{i}]"
        items = raw.get(section) if isinstance(raw, dict) else None
        item = items[i] if isinstance(items, list) and i < len(items) else None
        name = item.get("key", item.get("topic")) if isinstance(item, dict) else None
        if isinstance(name, str):
            entry += f" ({name!r})"
    return entry, ".".join(map(str, rest)) or "(the whole entry)"


def _error(file: str, raw: Any, loc: Loc, reason: str) -> BankError:
    return BankError(file, *_where(raw, loc), reason)


#: errors whose message says all (the input is a whole object, or already quoted)
_NO_INPUT = frozenset({"missing", "unknown_value", "no_question", "change_then", "exclusive_tag", "unknown_group_set"})


def _from_validation(file: str, raw: Any, exc: ValidationError) -> BankError:
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc: Loc = tuple(first["loc"])
    field = (first.get("ctx") or {}).get("field")
    if isinstance(field, str):  # a check over a whole spec names its field itself
        loc = (*loc, *field.split("."))
    reason = first["msg"]
    if first["type"] not in _NO_INPUT:
        reason += f" (got {first['input']!r:.80})"
    if len(errors) > 1:
        reason += f"; {len(errors) - 1} more error(s) in the file"
    return _error(file, raw, loc, reason)


def _read(path: str | os.PathLike[str] | Traversable) -> tuple[str, Any]:
    """(file name, parsed JSON) of a bank file, refusing repeated keys."""
    file = str(path)
    source: Traversable = path if isinstance(path, Traversable) else Path(path)
    try:
        raw = json.loads(source.read_text(encoding="utf-8"), object_pairs_hook=_pairs)
    except json.JSONDecodeError as exc:
        raise BankError(file, f"line {exc.lineno} column {exc.colno}", "-", f"not valid JSON: {exc.msg}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise BankError(file, "(file)", "-", f"cannot be read: {exc}") from exc
    if not isinstance(raw, dict):
        raise BankError(file, "(top level)", "-", f"expected a JSON object, got {type(raw).__name__}")
    if (loc := _repeated(raw)) is not None:
        raise _error(file, raw, loc, "the key is repeated in its JSON object")
    if type(raw.get("version")) is not int or raw["version"] != BANK_VERSION:
        raise _error(file, raw, ("version",), f"expected {BANK_VERSION} (got {raw.get('version')!r})")
    return file, raw


def load_fact_bank(path: str | os.PathLike[str] | Traversable) -> FactBank:
    """Read and validate a facts file (`BankError` on the first problem)."""
    file, raw = _read(path)
    try:
        sets = TypeAdapter(dict[str, _Strings]).validate_python(raw.get("occupation_groups"))
    except ValidationError:
        sets = {}  # reported in its place below
    try:
        bank = FactBank.model_validate(raw, context={"occupation_groups": sets})
    except ValidationError as exc:
        raise _from_validation(file, raw, exc) from None
    for name in ("theme", "category_ask"):
        table: dict[str, str] = getattr(bank, name)
        for category in [*CATEGORIES, *table]:
            if (category in CATEGORIES) != (category in table):
                why = "an unknown category" if category in table else "the category is missing"
                raise _error(file, raw, (name, category), why)
    located: list[tuple[Loc, FactSpec]] = []  # in document order
    for i, spec in enumerate(bank.facts):
        located.append((("facts", i), spec))
        if spec.then is not None:
            located.append((("facts", i, "then"), spec.then))
    first: dict[str, Loc] = {}
    for loc, spec in located:
        if spec.key in first:
            entry, field = _where(raw, (*first[spec.key], "key"))
            also = f"{entry}, field {field!r}" if field != "key" else entry
            raise _error(file, raw, (*loc, "key"), f"{spec.key!r} is already the key of {also}")
        first[spec.key] = loc
    carried = {tag for _, spec in located for tag in spec.tags}
    for loc, spec in located:
        for tag in spec.conflicts:
            if tag not in carried:
                raise _error(file, raw, (*loc, "conflicts", tag), f"no spec carries the tag {tag!r}")
    for i, spec in enumerate(bank.facts):
        _check_fact_slots(file, raw, ("facts", i), spec, {})
        if spec.then is not None:
            _check_fact_slots(file, raw, ("facts", i, "then"), spec.then, spec.slots)
    return bank


def _check_fact_slots(file: str, raw: Any, loc: Loc, spec: FactSpec, inherited: dict[str, tuple[Any, ...]]) -> None:
    """Every ``{@slot}`` a spec's texts use is declared (by it, by the spec it succeeds, or the seed's),
    indexed as its choices allow; every slot of its own is in its label (the label tells facts apart)."""
    known = {**inherited, **spec.slots}
    for field, text in spec.texts():
        at = (*loc, *(int(x) if x.isdigit() else x for x in field.split(".")))
        for m in FACT_SLOT.finditer(text):
            name, index = m.group(1), m.group(2)
            if name in SEED_SLOTS:
                continue
            if name not in known:
                declared = ", ".join(sorted(known)) or "none"
                raise _error(file, raw, at, f"unknown slot {m.group(0)} (declared: {declared})")
            linked = not isinstance(known[name][0], str)
            if linked and index is None:
                why = f"{m.group(0)}: the slot's choices are lists, name a part ({{@{name}[0]}})"
                raise _error(file, raw, at, why)
            if index is not None and (not linked or int(index) >= len(known[name][0])):
                raise _error(file, raw, at, f"{m.group(0)}: no such part of the slot")
    in_label = {m.group(1) for m in FACT_SLOT.finditer(spec.label)}
    for name in spec.slots:
        if name not in in_label:
            raise _error(file, raw, (*loc, "slots", name), "the label does not use the slot")


def load_phrase_bank(path: str | os.PathLike[str] | Traversable, facts: FactBank | None = None) -> PhraseBank:
    """Read and validate a phrases file (`BankError` on the first problem); with ``facts``, the T4 patterns'
    tags and the shared activities' themes are checked against that bank."""
    file, raw = _read(path)
    try:
        bank = PhraseBank.model_validate(raw)
    except ValidationError as exc:
        raise _from_validation(file, raw, exc) from None
    if "*" not in bank.contact_kinds:
        raise _error(file, raw, ("contact_kinds", "*"), "missing: the kinds that always fit")
    for household, kinds in bank.contact_kinds.items():
        for i, kind in enumerate(kinds):
            if kind not in bank.contact_history:
                raise _error(file, raw, ("contact_kinds", household, i), f"no contact_history for {kind!r}")
    _check_slots(file, raw, bank)
    carried = {tag for spec in facts.specs() for tag in spec.tags} if facts is not None else None
    for p, pattern in enumerate(bank.patterns):
        _check_pattern(file, raw, p, pattern, carried)
    if facts is not None:
        themes = set(facts.theme.values())
        for theme in bank.shared_activity:
            if theme not in themes:
                raise _error(file, raw, ("shared_activity", theme), f"not a theme; one of {', '.join(sorted(themes))}")
    return bank


def _check_pattern(file: str, raw: Any, p: int, pattern: Pattern, carried: set[str] | None) -> None:
    """A T4 pattern's slots name known categories and (with a fact bank) tags some spec carries; each
    alternative requires a tag of its slot's role; the roles are those its mechanism needs; the mechanism
    uses every slot and the conclusion none (it is the inference, not a restatement of a fact)."""
    if len(pattern.roles) != len(pattern.slots):
        why = f"{len(pattern.roles)} role(s) for {len(pattern.slots)} slots; one role per slot"
        raise _error(file, raw, ("patterns", p, "roles"), why)
    for s, slot in enumerate(pattern.slots):
        role = pattern.roles[s]
        if role not in ROLES:
            raise _error(file, raw, ("patterns", p, "roles", s), f"unknown role {role!r}; one of {', '.join(ROLES)}")
        for a, alt in enumerate(slot):
            where = ("patterns", p, "slots", s, a)
            positive: list[str] = []
            for part in alt.split("+"):
                name = part.removeprefix("!")
                if name.startswith("cat:"):
                    if name[4:] not in CATEGORIES:
                        raise _error(file, raw, where, f"unknown category {name[4:]!r}; one of {', '.join(CATEGORIES)}")
                elif not name or (carried is not None and name not in carried):
                    raise _error(file, raw, where, f"no spec carries the tag {name!r}")
                elif not part.startswith("!"):
                    positive.append(name)
            if not set(positive) & ROLES[role]:
                why = (
                    f"{alt!r} requires no tag of the role {role!r} ({', '.join(sorted(ROLES[role]))}); "
                    "a category or an unrelated tag admits facts the conclusion does not follow from"
                )
                raise _error(file, raw, where, why)
    for need in KIND_ROLES[pattern.kind]:
        if not need & set(pattern.roles):
            why = f"a {pattern.kind} pattern needs a slot of the role {' or '.join(sorted(need))}"
            raise _error(file, raw, ("patterns", p, "roles"), why)
    names = SLOT_NAMES[: len(pattern.slots)]
    for field in ("conclusion", "why"):
        try:
            used = {n for _, n, _, _ in string.Formatter().parse(getattr(pattern, field)) if n}
        except ValueError as exc:
            raise _error(file, raw, ("patterns", p, field), f"not a template: {exc}") from None
        if field == "conclusion" and used & set(SLOT_NAMES):
            raise _error(file, raw, ("patterns", p, field), "the conclusion names a fact; it must state the inference")
        if field == "why" and not set(names) <= used:
            missing = ", ".join(f"{{{n}}}" for n in names if n not in used)
            raise _error(file, raw, ("patterns", p, field), f"the mechanism does not use the slot(s) {missing}")


def load_interview_bank(path: str | os.PathLike[str] | Traversable, facts: FactBank | None = None) -> InterviewBank:
    """Read and validate an interview file (`BankError` on the first problem): questions unique, answers'
    slots the seed's (`INTERVIEW_SLOTS`), every fact category asked by a broad question (so every fact
    has an answer to go in), and with ``facts`` every ``about`` tag carried by some spec."""
    file, raw = _read(path)
    try:
        bank = InterviewBank.model_validate(raw)
    except ValidationError as exc:
        raise _from_validation(file, raw, exc) from None
    carried = {tag for spec in facts.specs() for tag in spec.tags} if facts is not None else None
    seen: set[str] = set()
    for i, q in enumerate(bank.questions):
        if q.question in seen:
            raise _error(file, raw, ("questions", i, "question"), "the question is asked twice")
        seen.add(q.question)
        if q.about and q.category is None:
            raise _error(file, raw, ("questions", i, "about"), "tags for a question without a category")
        for t, tag in enumerate(q.about):
            if carried is not None and tag not in carried:
                raise _error(file, raw, ("questions", i, "about", t), f"no spec carries the tag {tag!r}")
        for a, answer in enumerate(q.answers):
            try:
                slots = {name for _, name, _, _ in string.Formatter().parse(answer) if name is not None}
            except ValueError as exc:
                raise _error(file, raw, ("questions", i, "answers", a), f"not a template: {exc}") from None
            if slots - INTERVIEW_SLOTS:
                why = f"unknown slot {{{sorted(slots - INTERVIEW_SLOTS)[0]}}}; one of {sorted(INTERVIEW_SLOTS)}"
                raise _error(file, raw, ("questions", i, "answers", a), why)
    broad = {q.category for q in bank.questions if q.category and not q.about}
    for category in CATEGORIES:
        if category not in broad:
            raise _error(file, raw, ("questions",), f"no broad question (without 'about') asks about {category!r}")
    return bank


def _check_slots(file: str, raw: Any, bank: PhraseBank) -> None:
    """Every slot of a chat template is a ``words`` list or a per-message slot."""
    known = MESSAGE_SLOTS | set(bank.words)
    located: list[tuple[Loc, str]] = [(("hellos", i), t) for i, t in enumerate(bank.hellos)]
    located += [(("signoffs", i), t) for i, t in enumerate(bank.signoffs)]
    for e, ex in enumerate(bank.exchanges):
        for part in ("open", "reply", "follow"):
            located += [(("exchanges", e, part, i), t) for i, t in enumerate(getattr(ex, part))]
    for loc, template in located:
        try:
            slots = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
        except ValueError as exc:
            raise _error(file, raw, loc, f"not a template: {exc} (got {template!r:.80})") from None
        for slot in slots:
            if slot not in known:
                raise _error(
                    file, raw, loc, f"unknown slot {{{slot}}}; not in words nor one of {sorted(MESSAGE_SLOTS)}"
                )


def _shipped(name: str) -> Traversable:
    return resources.files("hippocamp.synth.personas").joinpath(f"data/{name}")


#: environment variables naming a fact, phrase or interview bank to use instead of the shipped one (a
#: benchmark builder's own); read once per process
FACT_BANK_ENV = "HIPPOCAMP_FACT_BANK"
PHRASE_BANK_ENV = "HIPPOCAMP_PHRASE_BANK"
INTERVIEW_BANK_ENV = "HIPPOCAMP_INTERVIEW_BANK"


@cache
def fact_bank() -> FactBank:
    """The fact bank, read once: the file ``$HIPPOCAMP_FACT_BANK`` names, else the shipped one."""
    return load_fact_bank(os.environ.get(FACT_BANK_ENV) or _shipped("facts.json"))


@cache
def phrase_bank() -> PhraseBank:
    """The phrase bank, read once: ``$HIPPOCAMP_PHRASE_BANK`` or the shipped one (checked against the fact
    bank)."""
    return load_phrase_bank(os.environ.get(PHRASE_BANK_ENV) or _shipped("phrases.json"), fact_bank())


@cache
def interview_bank() -> InterviewBank:
    """The interview bank, read once: ``$HIPPOCAMP_INTERVIEW_BANK`` or the shipped one (its tags checked
    against the fact bank)."""
    return load_interview_bank(os.environ.get(INTERVIEW_BANK_ENV) or _shipped("interview.json"), fact_bank())
