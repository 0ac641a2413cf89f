"""The run directory as a file format: the manifest, episodes and score lines, versioned.

A run directory holds ``manifest.json`` (`RunManifest`: what ran, over which benchmark's suite, with which
config), ``episodes.jsonl`` (one `Episode` per finished (task, agent, epoch): the task's question and the
agent's `Answer` with its trace) and ``scores.jsonl`` (one score line per (task, agent, epoch, judge,
mode)). A score line is a `ScoreLine` subclass named by its ``benchmark``: `HippoCampScoreLine` (the
judge's verdict, file P/R/F1 and atomic units) or `PContextScoreLine` (the T1–T5 rubric's grade); a
benchmark plug-in may define its own. Every model carries its ``format``; readers accept the earlier
formats (`upgrade_manifest`, `ScoreLine.upgrade`), so run directories of version 1 still read.

This module depends on nothing of hippocamp's but the schema: the agents, the runner, scoring and
reports import these models from here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "EPISODE_FORMAT",
    "RUN_FORMAT",
    "RUN_FORMATS_READ",
    "SCORE_FORMAT",
    "Answer",
    "Episode",
    "EpisodeKey",
    "EvidenceItem",
    "HippoCampScoreLine",
    "PContextScoreLine",
    "RunManifest",
    "ScoreKey",
    "ScoreLine",
    "Step",
    "StopReason",
    "Task",
    "Usage",
    "benchmark_of",
    "upgrade_manifest",
]

#: ``manifest.json``; version 2 names the benchmark (version 1 said ``suite.kind: "pcontext"`` or nothing)
RUN_FORMAT = "hippocamp-run/2"
#: the manifest formats read (an earlier one is upgraded as it is read)
RUN_FORMATS_READ = ("hippocamp-run/1", RUN_FORMAT)
#: an ``episodes.jsonl`` line (``Answer.touched``/``retrieved`` and ``Step.files`` came later with defaults:
#: lines written before them read with them empty)
EPISODE_FORMAT = "hippocamp-episode/1"
#: a ``scores.jsonl`` line; version 2 is typed per benchmark (version 1 put a rubric's grade in ``facts``)
SCORE_FORMAT = "hippocamp-score/2"

StopReason = Literal["answered", "max_steps", "max_tokens", "timeout", "max_evidence", "error", "no_answer"]
#: (task_id, agent, epoch)
EpisodeKey = tuple[str, str, int]
#: (task_id, agent, epoch, judge, mode)
ScoreKey = tuple[str, str, int, str, str]


def _line(model: BaseModel) -> bytes:
    return (json.dumps(model.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")) + "\n").encode()


# -- what an agent is asked and what it answers ----------------------------------------------------------
@dataclass(frozen=True)
class Task:
    """What an agent is asked: never the gold answer, files or evidence."""

    id: str
    #: what is asked, in the asker's words: what an agent searches for
    question: str
    profile: str = ""
    #: what the task family allows an agent to know (e.g. ``{"qa_type": "profiling"}``); never gold
    meta: dict[str, Any] = field(default_factory=dict)
    #: how to answer (framing, what to cite): shown to the model with the question, never searched for
    instructions: str = ""

    @property
    def prompt(self) -> str:
        """The question as the model reads it: the question, then the instructions if any."""
        return f"{self.question}\n{self.instructions}" if self.instructions else self.question


class Usage(BaseModel):
    """Tokens of one call or a sum of calls; ``cost_usd`` is None when the price is unknown."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    cached_calls: int = 0
    cost_usd: float | None = 0.0

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            calls=self.calls + other.calls,
            cached_calls=self.cached_calls + other.cached_calls,
            cost_usd=cost,
        )


class EvidenceItem(BaseModel):
    """A piece of evidence an agent cites: a profile-relative file, where in it, what it says."""

    file_path: str
    locator: dict[str, Any] | None = None
    text: str = ""


class Step(BaseModel):
    """One step of an episode: a model turn, a tool call with its observation, or the answer."""

    index: int
    kind: Literal["model", "tool", "answer", "note"]
    thought: str = ""
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    observation: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    #: the files a tool step returned (a search's hit files in rank order, once each); empty for others
    files: list[str] = Field(default_factory=list)


class Answer(BaseModel):
    """What an agent returns: the answer text, the files and evidence it cites, and how it got there.

    Three file lists, for file P/R/F1 the way HippoCamp's release computes it
    (`hippocamp.agents.filelists`): ``files`` (cited), ``touched`` (what its actions named) and
    ``retrieved`` (what its retrieval steps returned). Episodes written before the last two existed
    read with them empty."""

    text: str = ""
    #: the files the answer cites
    files: list[str] = Field(default_factory=list)
    #: the files its actions named (commands' file arguments by the release's rule, tools' path arguments)
    touched: list[str] = Field(default_factory=list)
    #: the files of every hit of every retrieval step (or of what it put in its context), in order
    retrieved: list[str] = Field(default_factory=list)
    evidence: list[EvidenceItem] = Field(default_factory=list)
    trace: list[Step] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    stop: StopReason = "answered"
    error: str | None = None
    #: seconds spent waiting for the model (the rest of the wall time is the harness and the tools)
    model_seconds: float = 0.0
    #: paths the agent tried that would have left the profile (refused)
    escapes: int = 0


# -- episodes.jsonl ------------------------------------------------------------------------------------
class Episode(BaseModel):
    """One finished episode: the task, who answered it, the `Answer`, and where the time went."""

    format: str = EPISODE_FORMAT
    task_id: str
    agent: str
    model: str
    epoch: int
    question: str
    answer: Answer
    #: seconds from the episode's start (its concurrency slot taken) to its answer
    wall_s: float
    #: seconds spent waiting for the model, as the agent's meter counted them
    model_s: float
    #: wall_s - model_s: the harness, the tools and the agent's own code
    harness_s: float
    #: ISO 8601 UTC
    started: str
    finished: str

    @property
    def key(self) -> EpisodeKey:
        return (self.task_id, self.agent, self.epoch)

    def line(self) -> bytes:
        return _line(self)


# -- scores.jsonl --------------------------------------------------------------------------------------
class ScoreLine(BaseModel):
    """What every benchmark's score line holds: which episode, which judge and mode, the verdict, the
    episode's cost. A benchmark adds its own typed fields in a subclass (`benchmark` names it)."""

    model_config = ConfigDict(extra="forbid")

    format: str = SCORE_FORMAT
    benchmark: str
    task_id: str
    agent: str
    epoch: int
    judge: str
    mode: str
    #: None: not scored (a judge outage, never a zero)
    correct: bool | None
    score: int | None
    status: str
    error: str | None = None
    rationale: str = ""
    decided_by: str = ""
    seconds: float
    tokens: int
    cost: float | None
    stop: str

    @property
    def key(self) -> ScoreKey:
        return (self.task_id, self.agent, self.epoch, self.judge, self.mode)

    def line(self) -> bytes:
        return _line(self)

    @classmethod
    def upgrade(cls, raw: Any) -> Any:
        """A line of an earlier format (decoded JSON) as this one; anything else is returned as is, for
        validation to refuse. Version 1 lines carry no ``format`` and no ``benchmark``."""
        if not isinstance(raw, dict) or "format" in raw:
            return raw
        return {**raw, "format": SCORE_FORMAT, "benchmark": cls.model_fields["benchmark"].default}

    @classmethod
    def parse(cls, raw: Any) -> ScoreLine:
        """Validate a decoded line of any format."""
        return cls.model_validate(cls.upgrade(raw))


class HippoCampScoreLine(ScoreLine):
    """HippoCamp: the judge's verdict (``facts``: what the deterministic layer found), file precision/
    recall/F1 of the cited files in both conventions (``files["hippocamp"]``, ``files["set"]``) and
    atomic-unit matches of the cited evidence (``au``). ``file_lists`` holds precision/recall/F1 of the
    cited, touched and retrieved files under hippocamp's path rules and the release's
    (``file_lists["release"]["touched"]["f1"]``); ``paper_list`` is the list the paper used for the
    agent's family. Lines written before these existed read with them empty and ``cited``."""

    benchmark: Literal["hippocamp"] = "hippocamp"
    facts: dict[str, Any] | None = None
    files: dict[str, dict[str, Any]]
    file_lists: dict[str, dict[str, dict[str, float]]] = Field(default_factory=dict)
    paper_list: str = "cited"
    au: dict[str, Any]


class PContextScoreLine(ScoreLine):
    """P-ContextBench: the rubric's grade of the case (`hippocamp.scoring.pcontext.Grade`: type, verdict,
    covered and missing items, failure categories, cited support, the T5 parts and score, retrieval
    reach)."""

    benchmark: Literal["pcontext"] = "pcontext"
    grade: dict[str, Any]

    @classmethod
    def upgrade(cls, raw: Any) -> Any:
        """Version 1 held the grade in ``facts`` beside empty ``files`` and ``au``."""
        if not isinstance(raw, dict) or "format" in raw:
            return raw
        line = dict(super().upgrade(raw))
        line["grade"] = line.pop("facts", None) or {}
        line.pop("files", None)
        line.pop("au", None)
        return line


# -- manifest.json -------------------------------------------------------------------------------------
class RunManifest(BaseModel):
    """``manifest.json``: the config compared on resume (``config``), where the suite came from
    (``suite``), the model, the sessions that ran, and the benchmark whose suite it is. Other keys are
    kept as they are."""

    model_config = ConfigDict(extra="allow")

    format: str = RUN_FORMAT
    benchmark: str
    created: str = ""
    resumed: int = 0
    config: dict[str, Any] = Field(default_factory=dict)
    suite: dict[str, Any] = Field(default_factory=dict)
    model: dict[str, Any] = Field(default_factory=dict)
    sessions: list[dict[str, Any]] = Field(default_factory=list)
    summary: dict[str, Any] | None = None


def benchmark_of(raw: dict[str, Any]) -> str:
    """The benchmark a manifest (decoded JSON, any format) names."""
    if isinstance(raw.get("benchmark"), str) and raw["benchmark"]:
        return str(raw["benchmark"])
    suite = raw.get("suite")
    kind = suite.get("kind") if isinstance(suite, dict) else None
    return kind if isinstance(kind, str) and kind else "hippocamp"


def upgrade_manifest(raw: dict[str, Any]) -> dict[str, Any]:
    """A manifest of an earlier format as the current one: version 1 named a P-ContextBench suite by
    ``suite.kind``, and HippoCamp by nothing."""
    if raw.get("format") == RUN_FORMAT and raw.get("benchmark"):
        return raw
    return {**raw, "format": RUN_FORMAT, "benchmark": benchmark_of(raw)}
