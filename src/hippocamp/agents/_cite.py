"""What the baseline agents share: numbered passages, citations parsed from answers, file names
mentioned in answers, metered tool calls, and ending an episode on a model error or a budget."""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from hippocamp.agents.base import Answer, BudgetExceeded, EvidenceItem, Meter
from hippocamp.agents.filelists import RETRIEVAL_TOOLS
from hippocamp.envs.base import Observation
from hippocamp.models.errors import ModelError

__all__ = [
    "Draft",
    "Passage",
    "Passages",
    "cited_numbers",
    "containing",
    "hit_files",
    "mentioned_files",
    "model_failure",
    "render_passages",
    "run_episode",
    "run_tool",
]


@dataclass(frozen=True)
class Passage:
    """A retrieved segment under the number the agent shows it with."""

    number: int
    path: str
    locator: dict[str, Any] | None
    text: str
    where: str
    time: str | None = None

    def render(self, max_chars: int) -> str:
        when = f" ({self.time})" if self.time else ""
        text = self.text if len(self.text) <= max_chars else self.text[:max_chars] + " [...]"
        return f"[{self.number}] {self.where}{when}\n{text}"

    def evidence(self) -> EvidenceItem:
        return EvidenceItem(file_path=self.path, locator=self.locator, text=self.text)


@dataclass
class Passages:
    """The passages of an episode, numbered from 1; a passage retrieved again keeps its number."""

    items: list[Passage] = field(default_factory=list)
    _index: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def add(self, hits: Iterable[dict[str, Any]]) -> list[Passage]:
        """The passages of search hits (``FilesEnv`` hit dicts), one per hit in hit order (so the
        env's ``[i]`` is ``out[i - 1]``), numbering the ones not seen before."""
        out: list[Passage] = []
        for hit in hits:
            key = f"{hit['path']}\x00{hit.get('locator')!r}\x00{hit.get('text', '')}"
            if key not in self._index:
                self._index[key] = len(self.items)
                self.items.append(
                    Passage(
                        number=len(self.items) + 1,
                        path=hit["path"],
                        locator=hit.get("locator"),
                        text=hit.get("text", ""),
                        where=hit.get("where") or hit["path"],
                        time=hit.get("time"),
                    )
                )
            out.append(self.items[self._index[key]])
        return out

    def get(self, number: int) -> Passage | None:
        return self.items[number - 1] if 1 <= number <= len(self.items) else None


def render_passages(passages: Sequence[Passage], max_chars: int, empty: str = "(no passages)") -> str:
    return "\n\n".join(p.render(max_chars) for p in passages) if passages else empty


_BRACKETS = re.compile(r"\[\s*(\d+(?:\s*(?:[,;]|-|–|and)\s*\d+)*)\s*\]")
_DOC = re.compile(r"\b(?:doc(?:ument)?|passage)\s*#?\s*(\d+)\b", re.IGNORECASE)


def cited_numbers(text: str, highest: int) -> list[int]:
    """Passage numbers cited in an answer, in order of first citation: ``[2]``, ``[1, 3]``, ``[2-4]``,
    ``Doc 2``, ``passage 3``; numbers outside ``1..highest`` are ignored."""
    found: list[tuple[int, int]] = []
    for m in _BRACKETS.finditer(text):
        for part in re.split(r"\s*(?:[,;]|and)\s*", m.group(1)):
            bounds = [int(x) for x in re.split(r"\s*[-–]\s*", part) if x]
            lo, hi = bounds[0], bounds[-1]
            numbers = range(lo, hi + 1) if lo <= hi and hi - lo < 50 else [lo, hi]
            found.extend((m.start(), n) for n in numbers)
    found.extend((m.start(), int(m.group(1))) for m in _DOC.finditer(text))
    found.sort(key=lambda pair: pair[0])
    return list(dict.fromkeys(n for _, n in found if 1 <= n <= highest))


def mentioned_files(text: str, paths: Iterable[str]) -> list[str]:
    """The paths (in the given order) that an answer names, by relative path or by file name."""
    low = text.lower()
    out: list[str] = []
    for path in dict.fromkeys(paths):
        for name in (path, PurePosixPath(path).name):
            if re.search(rf"(?<!\w){re.escape(name.lower())}(?!\w)", low):
                out.append(path)
                break
    return out


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w.,:/-]+", " ", text.lower())).strip(" .")


def containing(answer: str, passages: Sequence[Passage]) -> list[Passage]:
    """The passages whose text contains the whole answer (case and punctuation relaxed)."""
    needle = _norm(answer)
    if len(needle) < 2:
        return []
    return [p for p in passages if needle in _norm(p.text)]


def run_tool(meter: Meter, env: Any, name: str, arguments: dict[str, Any]) -> Observation:
    """One tool call through the environment, recorded in the trace with exactly what it answered (and,
    for a retrieval tool, the files of its hits in rank order). A tool that crashes on arguments a model
    invented becomes an error observation."""
    began = time.perf_counter()
    try:
        obs: Observation = env.call(name, arguments)
    except Exception as exc:  # FilesEnv maps most bad arguments itself; this covers the rest (e.g. k="ten")
        message = f"bad arguments for {name}: {type(exc).__name__}: {exc}"
        obs = Observation(f"error: {message}", ok=False, error=message)
    files = hit_files(obs) if name in RETRIEVAL_TOOLS else []
    meter.observe(name, arguments, obs.text, seconds=time.perf_counter() - began, files=files)
    return obs


def hit_files(obs: Observation) -> list[str]:
    """The files of an observation's items (search hits) in their order, once each."""
    if not obs.ok:
        return []
    return list(dict.fromkeys(p for d in obs.data if isinstance(p := d.get("path"), str) and p))


@dataclass
class Draft:
    """The best answer of an episode so far: what a stopped episode returns."""

    text: str = ""
    evidence: list[EvidenceItem] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


async def run_episode(meter: Meter, best: Draft, body: Awaitable[Answer]) -> Answer:
    """Await an agent's episode; a model error or an exhausted budget ends it with the best answer so
    far, the trace so far and the stop reason (nothing raises out)."""
    try:
        return await body
    except BudgetExceeded as exc:
        meter.note(f"stopped: {exc}")
        return meter.answer(best.text, best.files, best.evidence, stop=exc.reason, error=str(exc))
    except ModelError as exc:
        meter.note(f"model error: {exc}")
        return meter.answer(best.text, best.files, best.evidence, stop="error", error=str(exc))


def model_failure(meter: Meter, exc: Exception) -> Answer:
    """The answer of an episode a model (or tool) failure ended: ``stop="error"``, the trace kept."""
    kind = "model error" if isinstance(exc, ModelError) else type(exc).__name__
    return meter.answer("", stop="error", error=f"{kind}: {exc}")
