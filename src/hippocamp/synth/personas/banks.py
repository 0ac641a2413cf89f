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

**Phrases** (`PhraseBank`): interview questions and generic answers, filler, replies, contacts, T4
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
    "MESSAGE_SLOTS",
    "TONES",
    "BankError",
    "Exchange",
    "FactBank",
    "FactSpec",
    "Pattern",
    "Perspective",
    "PhraseBank",
    "Request",
    "When",
    "fact_bank",
    "load_fact_bank",
    "load_phrase_bank",
    "phrase_bank",
]

#: the version of both files' layout; another value is refused
BANK_VERSION = 1

Perspective = Literal["demographic", "behavioral", "psychological", "political"]
_FROZEN = ConfigDict(frozen=True, extra="forbid", defer_build=True)  # schemas built on first load, not import
_Strings = tuple[str, ...]
_NonEmpty = Annotated[tuple[str, ...], Field(min_length=1)]


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
    #: the state it changes into during the window (a T3 pair)
    then: FactSpec | None = None

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


class Pattern(BaseModel):
    """A T4 pattern: slots of alternatives (a tag, or ``cat:<category>``), each filled by a distinct fact."""

    model_config = _FROZEN

    slots: Annotated[tuple[_NonEmpty, ...], Field(min_length=2)]
    kind: str
    question: str
    conclusion: str
    why: str

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, v: str) -> str:
        return _one_of(v, MECHANISMS, "mechanism")


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


class PhraseBank(BaseModel):
    """The content of ``phrases.json``."""

    model_config = _FROZEN

    version: Literal[1]
    #: the life-story interview by topic (9 x 12 = 108, after Park et al.'s 100+ question protocol)
    questions: dict[str, _NonEmpty]
    #: per topic: generic answers in the persona's voice (slots from the seed)
    generic_answers: dict[str, _NonEmpty]
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
    return bank


def load_phrase_bank(path: str | os.PathLike[str] | Traversable, facts: FactBank | None = None) -> PhraseBank:
    """Read and validate a phrases file (`BankError` on the first problem); with ``facts``, the T4 patterns'
    tags and the shared activities' themes are checked against that bank."""
    file, raw = _read(path)
    try:
        bank = PhraseBank.model_validate(raw)
    except ValidationError as exc:
        raise _from_validation(file, raw, exc) from None
    for topic in [*bank.questions, *bank.generic_answers]:
        if (topic in bank.questions) != (topic in bank.generic_answers):
            why = "no interview questions for the topic" if topic in bank.generic_answers else "no generic answers"
            raise _error(file, raw, ("generic_answers", topic), why)
    if "*" not in bank.contact_kinds:
        raise _error(file, raw, ("contact_kinds", "*"), "missing: the kinds that always fit")
    for household, kinds in bank.contact_kinds.items():
        for i, kind in enumerate(kinds):
            if kind not in bank.contact_history:
                raise _error(file, raw, ("contact_kinds", household, i), f"no contact_history for {kind!r}")
    _check_slots(file, raw, bank)
    carried = {tag for spec in facts.specs() for tag in spec.tags} if facts is not None else None
    for p, pattern in enumerate(bank.patterns):
        for s, slot in enumerate(pattern.slots):
            for a, alt in enumerate(slot):
                where = ("patterns", p, "slots", s, a)
                if alt.startswith("cat:") and alt[4:] not in CATEGORIES:
                    raise _error(file, raw, where, f"unknown category {alt[4:]!r}; one of {', '.join(CATEGORIES)}")
                if not alt.startswith("cat:") and carried is not None and alt not in carried:
                    raise _error(file, raw, where, f"no spec carries the tag {alt!r}")
    if facts is not None:
        themes = set(facts.theme.values())
        for theme in bank.shared_activity:
            if theme not in themes:
                raise _error(file, raw, ("shared_activity", theme), f"not a theme; one of {', '.join(sorted(themes))}")
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


@cache
def fact_bank() -> FactBank:
    """The shipped fact bank, read once."""
    return load_fact_bank(_shipped("facts.json"))


@cache
def phrase_bank() -> PhraseBank:
    """The shipped phrase bank, read once (checked against the shipped fact bank)."""
    return load_phrase_bank(_shipped("phrases.json"), fact_bank())
