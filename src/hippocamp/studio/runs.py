"""The runs the studio shows: each run directory read once (manifest, episodes, scores, gold records).

`OpenRun` holds what the pages need: the run's description, its episodes by key, one judge's score
lines (the first judge and mode found, or the one asked for), and for HippoCamp runs the gold records
and the profile root their files live in. A run that cannot be read is kept with its error, so the
index page says why instead of failing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocamp.runs.rundir import RunDir
from hippocamp.schema.run import Episode, ScoreLine

__all__ = ["EpisodeRow", "OpenRun", "episode_id", "open_run"]


def episode_id(task_id: str, agent: str, epoch: int) -> str:
    """A URL-safe id of one episode of a run (its position is not stable across resumes; its key is)."""
    import hashlib

    return hashlib.sha256(f"{task_id}\x1f{agent}\x1f{epoch}".encode()).hexdigest()[:16]


@dataclass
class EpisodeRow:
    id: str
    episode: Episode
    score: ScoreLine | None
    gold: Any | None  # a HippoCampRecord, when the run's gold is known
    profile_root: Path | None
    #: P-ContextBench: the case as written and its supporting messages/events, each in its session
    case: dict[str, Any] | None = None
    support: list[dict[str, Any]] = field(default_factory=list)

    @property
    def correct(self) -> str:
        if self.score is None or self.score.correct is None:
            return "unscored"
        return "yes" if self.score.correct else "no"

    @property
    def family(self) -> str:
        return str(getattr(self.gold, "qa_type", "") or "")

    @property
    def capabilities(self) -> list[str]:
        cap = getattr(self.gold, "agent_cap", None)
        if cap is None:
            return []
        return sorted({f"{k}:{v}" for k in ("search", "perception", "reasoning") for v in getattr(cap, k, [])})

    @property
    def profile(self) -> str:
        task = self.episode.task_id
        return task.split("/", 1)[0] if "/" in task else str(getattr(self.gold, "data_source", "") or "")

    @property
    def gold_files(self) -> list[str]:
        return list(getattr(self.gold, "file_path", []) or [])


@dataclass
class OpenRun:
    path: Path
    description: dict[str, Any] = field(default_factory=dict)
    rows: dict[str, EpisodeRow] = field(default_factory=dict)
    judge: str = ""
    error: str | None = None
    benchmark: str = ""
    profile_roots: list[Path] = field(default_factory=list)
    pcontext: Any = None  # the persona set's answer keys (`perceive.applog.PersonaSetGold`)
    personas: dict[str, Any] = field(default_factory=dict)  # persona id -> its logs, read on first use

    @property
    def accuracy(self) -> str:
        scored = [r for r in self.rows.values() if r.correct != "unscored"]
        if not scored:
            return "not scored"
        return f"{sum(r.correct == 'yes' for r in scored) / len(scored):.0%} of {len(scored)}"

    @property
    def cost(self) -> float:
        return sum(float(r.episode.answer.usage.cost_usd or 0.0) for r in self.rows.values())


def _profile_roots(run: RunDir) -> dict[str, Path]:
    """Profile name -> the folder its files are in, from the manifest's suite."""
    suite = run.manifest.suite
    out: dict[str, Path] = {}
    for entry in suite.get("profiles") or []:
        if isinstance(entry, dict) and isinstance(entry.get("root"), str):
            out[str(entry.get("name", ""))] = Path(entry["root"])
    if isinstance(suite.get("root"), str):
        out[""] = Path(suite["root"])
    return out


def open_run(path: Path) -> OpenRun:
    """Read one run directory; never raises (an unreadable run carries its error)."""
    opened = OpenRun(Path(path))
    try:
        run = RunDir.open(path)
        opened.description = run.described()
        opened.benchmark = run.benchmark_name
        episodes = run.episodes().episodes
        lines = run.score_lines() if (run.path / "scores.jsonl").exists() else []
    except Exception as exc:  # shown on the index page
        opened.error = f"{type(exc).__name__}: {exc}"
        return opened
    if lines:
        first = lines[0]
        opened.judge = f"{first.judge} ({first.mode})"
        lines = [s for s in lines if s.judge == first.judge and s.mode == first.mode]
    by_key = {(s.task_id, s.agent, s.epoch): s for s in lines}
    gold: dict[str, Any] = {}
    roots = _profile_roots(run)
    opened.profile_roots = sorted(set(roots.values()))
    if run.benchmark_name == "hippocamp":
        try:
            from hippocamp.scoring.hippocamp import gold_records

            gold = gold_records(run)
        except (FileNotFoundError, ValueError) as exc:
            opened.error = f"gold records: {exc}"
    if run.benchmark_name == "pcontext":
        from hippocamp.perceive.applog import read_gold

        opened.pcontext = read_gold(str(run.manifest.suite.get("pcontext_dir") or ""))
        if opened.pcontext.error:
            opened.error = f"answer keys: {opened.pcontext.error}"
    for e in episodes:
        eid = episode_id(e.task_id, e.agent, e.epoch)
        profile = e.task_id.split("/", 1)[0] if "/" in e.task_id else ""
        root = roots.get(profile) or roots.get("")
        opened.rows[eid] = EpisodeRow(eid, e, by_key.get((e.task_id, e.agent, e.epoch)), gold.get(e.task_id), root)
        if opened.pcontext is not None and e.task_id in opened.pcontext.cases:
            opened.rows[eid].case = opened.pcontext.cases[e.task_id]
    return opened


SESSION_CONTEXT = 3


def support_of(run: OpenRun, row: EpisodeRow) -> list[dict[str, Any]]:
    """A P-ContextBench episode's supporting messages and events, each with the messages around it in its
    session (``SESSION_CONTEXT`` before and after) and whether the agent cited it."""
    gold = run.pcontext
    if gold is None or row.case is None:
        return []
    from hippocamp.perceive.applog import persona_dirs, read_persona

    persona = gold.persona(row.episode.task_id)
    if persona not in run.personas:
        run.personas[persona] = None
        for d in persona_dirs(Path(gold.source)):
            logs = read_persona(d)
            run.personas[logs.id] = logs
    logs = run.personas[persona]
    cited = {str(x) for x in row.episode.answer.files} | {e.file_path for e in row.episode.answer.evidence}
    out = []
    for mid in gold.gold_ids(row.episode.task_id):
        shown = gold.evidence.get(persona, {}).get(mid, {"id": mid, "speaker": "", "time": "", "text": ""})
        context: list[dict[str, Any]] = []
        if logs is not None:
            index = next((i for i, m in enumerate(logs.messages) if str(m.get("id")) == mid), None)
            if index is not None:
                session = logs.messages[index].get("session_id")
                same = [m for m in logs.messages if m.get("session_id") == session]
                at = next(i for i, m in enumerate(same) if str(m.get("id")) == mid)
                context = [{"id": str(m.get("id")), "speaker": str(m.get("sender") or ""),
                            "time": str(m.get("timestamp") or ""), "text": str(m.get("text") or ""),
                            "target": str(m.get("id")) == mid}
                           for m in same[max(0, at - SESSION_CONTEXT) : at + SESSION_CONTEXT + 1]]  # fmt: skip
        out.append({**shown, "cited": mid in cited, "context": context})
    return out
