"""What the stories produce before anything is rendered: artifacts (files to write) and asks
(questions whose evidence points at keys inside artifacts).

A story never writes a file or a locator itself. It adds an ``Artifact`` (a path, the renderer to
use and its spec, the file's times) and an ``Ask`` whose evidence names ``(path, key)`` pairs; the
builder renders every artifact, learns where each key landed and only then writes the records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["Artifact", "Ask", "Cite", "Plan"]


@dataclass
class Artifact:
    """A file to render: ``renderer`` names a function in ``synth.build.RENDERERS``, called with
    the absolute path and ``spec`` as keyword arguments."""

    path: str
    renderer: str
    spec: dict[str, Any]
    created: datetime
    modified: datetime
    location: str = ""
    #: paths of artifacts that must be rendered first (an e-mail's attachments, a copied file)
    needs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Cite:
    """One evidence item: the keys (all in one file) whose locators and texts it carries."""

    path: str
    keys: tuple[str, ...]
    note: str = ""  # replaces the rendered text as evidence_text (e.g. a region description)


@dataclass
class Ask:
    """A question with its normalized answer and the evidence that settles it."""

    kind: str  # single-file, multi-file, cross-modal, temporal, arithmetic, counting, unanswerable, routine, ...
    question: str
    answer: str
    evidence: list[Cite]
    steps: list[tuple[str, list[int]]]  # rationale text, 1-based evidence ids
    search: list[str] = field(default_factory=lambda: ["semantic"])
    perception: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=lambda: ["basic"])
    qa_type: str = "factual_retention"
    profiling_type: str = ""
    #: short strings that must be readable at the cited locators (checked by the tests)
    facts: list[str] = field(default_factory=list)


@dataclass
class Plan:
    artifacts: dict[str, Artifact] = field(default_factory=dict)
    asks: list[Ask] = field(default_factory=list)

    def add(self, artifact: Artifact) -> str:
        if artifact.path in self.artifacts:
            raise ValueError(f"two artifacts at {artifact.path!r}")
        self.artifacts[artifact.path] = artifact
        return artifact.path

    def ask(self, ask: Ask) -> None:
        """Add a question; its cited files are checked once every story has run (the calendar comes last)."""
        if not ask.evidence:
            raise ValueError(f"ask {ask.question!r} cites no evidence")
        self.asks.append(ask)
