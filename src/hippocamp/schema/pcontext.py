"""P-ContextBench artifacts: seeds, personas, hidden facts, contacts, app logs, clusters, test cases, checks.

Every artifact the construction pipeline writes is one of these models with a ``version`` field; a
persona directory holds ``persona.json``, ``facts.json``, ``circle.json``, ``clusters.jsonl``,
``messenger.jsonl``, ``calendar.jsonl`` (+ ``calendar.ics``), ``cases.jsonl`` and ``verification.json``.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer

__all__ = [
    "BOUNDARIES",
    "CASE_TYPES",
    "CATEGORIES",
    "GENERATED_TYPES",
    "MECHANISMS",
    "PCONTEXT_VERSION",
    "AuditFinding",
    "AuditReport",
    "CalendarEvent",
    "Case",
    "CheckResult",
    "Circle",
    "Cluster",
    "Contact",
    "Fact",
    "FactsFile",
    "Fragment",
    "FragmentLine",
    "InterviewTurn",
    "Message",
    "Persona",
    "Seed",
    "SetSummary",
    "VerificationReport",
    "VerifierAttempt",
]

#: the version every artifact of this module carries; changing a field is a migration
PCONTEXT_VERSION = 1

#: the 18 hidden-fact categories. The paper names the count but not the list; these cover its interview
#: topics (history, family, relationships, work, health, finances, values, routines, social views) and the
#: traits, routines, goals and constraints it says facts hold.
CATEGORIES: tuple[str, ...] = (
    "background",
    "family",
    "relationships",
    "work",
    "education",
    "health",
    "diet",
    "fitness",
    "finances",
    "housing",
    "transportation",
    "routine",
    "hobby",
    "values",
    "social_views",
    "goals",
    "personality",
    "constraints",
)
#: every type of case a persona can hold, in report order: the paper's five, and ``abstain`` (LoCoMo's
#: adversarial questions, whose right answer is that the logs do not tell)
CaseType = Literal["T1", "T2", "T3", "T4", "T5", "abstain"]
CASE_TYPES: tuple[str, ...] = get_args(CaseType)
#: the types the generator makes
GENERATED_TYPES: tuple[str, ...] = CASE_TYPES[:5]
#: T5 action boundaries, from the paper
BOUNDARIES: tuple[str, ...] = ("comply", "warn", "clarify", "suggest_alternative", "require_confirmation", "refuse")
#: T4 mechanisms, from the paper
MECHANISMS: tuple[str, ...] = ("motive", "identity", "tradeoff", "coping_strategy", "decision_rule")

Kind = Literal["evidence", "filler", "decoy"]
App = Literal["messenger", "calendar"]


class _Artifact(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: int = PCONTEXT_VERSION


class Seed(_Artifact):
    """A demographic seed: sampled from the shipped census marginals or read from a user's file."""

    id: str
    name: str
    age: int = Field(ge=18, le=100)
    sex: Literal["female", "male"]
    state: str
    region: str
    city: str = ""
    household: str
    education: str
    occupation: str
    occupation_group: str
    income_band: str
    hobbies: list[str] = Field(default_factory=list)
    goals: list[str] = Field(default_factory=list)
    #: free-text descriptions a seed file carries (Nemotron-Personas-USA's persona, professional, sports,
    #: arts, travel, culinary and cultural-background columns, skills), read for what makes facts likely
    narrative: str = ""
    #: where the seed came from: "census-marginals" or "file:<name>:<row>"
    source: str = "census-marginals"


class InterviewTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    topic: str
    question: str
    answer: str


class AuditFinding(BaseModel):
    model_config = ConfigDict(extra="forbid")
    perspective: Literal["demographic", "behavioral", "psychological", "political"]
    fact_ids: list[str]
    issue: str
    repair: str = ""


class AuditReport(BaseModel):
    model_config = ConfigDict(extra="forbid")
    findings: list[AuditFinding] = Field(default_factory=list)
    repaired: int = 0
    #: contradictions left after repair (0 when the audit passed)
    remaining: int = 0
    auditor: str = "rules"


class Persona(_Artifact):
    """The digital human: the seed, the life-story interview and the audit of its facts."""

    id: str
    seed: Seed
    summary: str
    window_start: date
    window_days: int
    interview: list[InterviewTurn]
    audit: AuditReport = Field(default_factory=AuditReport)
    generator: str = "template"


class Fact(BaseModel):
    """A hidden fact: ground truth for the cases, never written into the logs as its label."""

    model_config = ConfigDict(extra="forbid")
    id: str
    category: str
    label: str
    #: close synonyms of the label: a fragment holding one of them leaks the fact
    synonyms: list[str] = Field(default_factory=list)
    #: behavioral signals that imply the fact without naming it (pharmacy pickups, copays, ...)
    cues: list[str] = Field(default_factory=list)
    value: str = ""
    valid_from: date | None = None
    valid_to: date | None = None
    #: interview turn ids the fact was distilled from
    sources: list[str] = Field(default_factory=list)
    #: for a prior state: the id of the fact that replaced it
    prior_of: str | None = None
    tags: list[str] = Field(default_factory=list)
    #: a template fact's parameters (the bank spec's ``slots``: names, places, amounts chosen for this persona)
    slots: dict[str, str | list[str]] = Field(default_factory=dict)

    @field_validator("category")
    @classmethod
    def _known_category(cls, v: str) -> str:
        if v not in CATEGORIES:
            raise ValueError(f"unknown category {v!r}; one of {', '.join(CATEGORIES)}")
        return v


class FactsFile(_Artifact):
    persona_id: str
    facts: list[Fact]
    generator: str = "template"


class Contact(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    name: str
    relationship: str
    history: str
    shared_activities: list[str] = Field(default_factory=list)
    #: hidden facts the contact is grounded in
    fact_ids: list[str] = Field(default_factory=list)


class Circle(_Artifact):
    persona_id: str
    contacts: list[Contact]
    #: details the check removed, as "contact id: reason"
    removed: list[str] = Field(default_factory=list)
    generator: str = "template"


class FragmentLine(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: "me" (the persona) or a contact id
    sender: str
    text: str


class Fragment(BaseModel):
    """One app-trace fragment of a cluster: a short messenger exchange or a calendar event."""

    model_config = ConfigDict(extra="forbid")
    id: str
    cluster_id: str
    app: App
    fact_ids: list[str]
    at: datetime
    #: messenger: the other party; calendar: attendees
    contact_ids: list[str] = Field(default_factory=list)
    lines: list[FragmentLine] = Field(default_factory=list)
    title: str = ""
    notes: str = ""
    location: str = ""
    minutes: int = 0

    def text(self) -> str:
        """All the words of the fragment, as the verifier sees them."""
        if self.app == "messenger":
            return "\n".join(line.text for line in self.lines)
        return "\n".join(x for x in (self.title, self.location, self.notes) if x)


class VerifierAttempt(BaseModel):
    model_config = ConfigDict(extra="forbid")
    attempt: int
    #: fact id -> confidence 0..1 that the fact was recovered from the fragments alone
    recovered: dict[str, float] = Field(default_factory=dict)
    #: leaks found: "F-id: fragment id: term" (lexical) or the verifier's words
    leaks: list[str] = Field(default_factory=list)
    passed: bool
    verifier: str = "lexical"
    error: str = ""
    #: the retrieval check (verifier ``...+retrieval@k``): fact id -> rank of its best fragment in a search
    #: of the persona's logs for the fact's question (None: not in the first 100)
    ranks: dict[str, int | None] = Field(default_factory=dict)


class Cluster(_Artifact):
    id: str
    persona_id: str
    theme: str
    fact_ids: list[str]
    fragments: list[Fragment]
    attempts: list[VerifierAttempt] = Field(default_factory=list)
    outcome: Literal["verified", "failed"] = "verified"


class Message(_Artifact):
    id: str
    session_id: str
    sender: str
    recipients: list[str]
    timestamp: datetime
    text: str
    kind: Kind
    fragment_id: str | None = None
    cluster_id: str | None = None
    #: for a decoy: whom it is about (never the persona)
    about: str | None = None


class CalendarEvent(_Artifact):
    id: str
    title: str
    start: datetime
    end: datetime
    location: str = ""
    attendees: list[str] = Field(default_factory=list)
    notes: str = ""
    kind: Kind
    fragment_id: str | None = None
    cluster_id: str | None = None
    about: str | None = None


class Case(_Artifact):
    """A test case with its answer key; T1–T4 ask about the persona, T5 is a first-person request, and
    an ``abstain`` case (LoCoMo's adversarial questions) is answered right by saying the logs do not
    tell. The LoCoMo fields are written only when set, so a generated case has none of them; so is a T4
    case's inference ``rule``."""

    id: str
    persona_id: str
    type: CaseType
    question: str
    fact_ids: list[str]
    #: canonical labels of the required facts
    labels: list[str]
    supporting_fragments: list[str]
    answer: str
    # T3
    prior_state: str | None = None
    current_state: str | None = None
    stale_state: str | None = None
    changed_on: date | None = None
    # T4
    conclusion: str | None = None
    mechanism: str | None = None
    mechanism_kind: str | None = None
    #: the inference rule that takes the facts to the conclusion (a template case states it; written only when set)
    rule: str | None = None
    # T5
    constraints: list[str] = Field(default_factory=list)
    boundary: str | None = None
    # imported from LoCoMo
    locomo_category: int | None = None
    #: an abstain case: the answer the question baits, which must not be given
    adversarial_answer: str | None = None

    @model_serializer(mode="wrap")
    def _without_unset_imports(self, handler: Any) -> Any:
        data = handler(self)
        for key in ("locomo_category", "adversarial_answer", "rule"):
            if isinstance(data, dict) and data.get(key) is None:
                data.pop(key, None)
        return data


class CheckResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    passed: bool
    #: what the check measured (counts, ratios, requested values)
    measured: dict[str, float | int | str | None] = Field(default_factory=dict)
    #: each failing item, naming the fact / fragment / case and why
    problems: list[str] = Field(default_factory=list)


class VerificationReport(_Artifact):
    persona_id: str
    passed: bool
    checks: list[CheckResult]
    rejected_cases: list[str] = Field(default_factory=list)
    #: stages where the model failed and the template engine stood in, with the error
    fallbacks: list[str] = Field(default_factory=list)
    #: fact id -> rank of its best fragment in a lexical search of the final logs for the fact's question
    #: (None: not in the first 100), for the facts of the verified clusters (the ``recoverability`` check)
    recovery_ranks: dict[str, int | None] = Field(default_factory=dict)


class SetSummary(_Artifact):
    """The whole set's counts, in the paper's terms."""

    personas: int
    generator: str
    verifier: str
    seed: int
    days: int
    requested_filler_ratio: float
    requested_decoy_share: float
    contacts: int
    facts: int
    changing_facts: int
    facts_by_category: dict[str, int]
    clusters: int
    clusters_failed: int
    cluster_attempts: dict[str, int]
    fragments: int
    fragments_by_app: dict[str, int]
    messages: int
    events: int
    items_by_kind: dict[str, int]
    tokens_by_kind: dict[str, int]
    filler_ratio: dict[str, float]
    decoy_share: dict[str, float]
    cases_by_type: dict[str, int]
    cases_generated: int
    cases_rejected: int
    case_rejection_rate: float
    fragment_rejection_rate: float
    personas_passed: int
    failed_personas: list[str] = Field(default_factory=list)
    #: the retrieval check's depth: a fact's question must find one of its fragments in the top k (0: not run)
    recovery_k: int = 0
    #: retained fragments (of verified clusters) by the attempt at which their cluster passed ("1".."3"),
    #: and as shares of all retained fragments (the paper: ~87% first, ~10% second, ~3% third)
    fragments_by_attempt: dict[str, int] = Field(default_factory=dict)
    fragment_attempt_shares: dict[str, float] = Field(default_factory=dict)
    #: fragments of clusters that failed their last attempt, left out of the logs (the paper: 2,904)
    fragments_rejected: int = 0
    #: facts of verified clusters whose question finds one of their fragments in the top k of the final
    #: logs, over those facts (the ``recoverability`` check of each ``verification.json``)
    recovery_recall: float = 0.0
