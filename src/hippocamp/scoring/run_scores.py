"""Score a run directory: ``scores.jsonl`` beside ``episodes.jsonl``, resumable, never mutating either.

For every episode: the judge's verdict on the answer against the gold answer, file precision/recall/F1
of the cited files against the gold ``file_path`` (both conventions), and atomic-unit precision/recall
of the cited evidence against the gold evidence. A line is keyed by (task, agent, epoch, judge, mode):
re-scoring skips what is scored (a judgment that came back ``unscored`` is tried again), and a kill
loses at most the line being written. ``scores.summary.json`` holds the aggregates (`stats.aggregate`
plus confidence intervals, pass^k over epochs, unscored counts). A damaged line of ``episodes.jsonl``
or ``scores.jsonl`` (not the last) is reported with its line number and skipped; the rest is scored.
Judge ids are redacted (a key in a judge's model URL never reaches a file).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from hippocamp.dataset.profile import load_profile
from hippocamp.durable import DurableLog, read_lines
from hippocamp.redact import redact, redact_text
from hippocamp.schema.record import HippoCampRecord
from hippocamp.scoring.evidence import au_scores, file_scores
from hippocamp.scoring.judge import Judge, Judgment, Panel
from hippocamp.scoring.stats import ScoredItem, aggregate, bootstrap_ci, outcomes_by_question, pass_hat_k

__all__ = ["SCORES", "SUMMARY", "ScoreLine", "load_scores", "read_run_manifest", "score_run", "write_summary"]

SCORES = "scores.jsonl"
SUMMARY = "scores.summary.json"


class ScoreLine(BaseModel):
    task_id: str
    agent: str
    epoch: int
    judge: str
    mode: str
    correct: bool | None
    score: int | None
    status: str
    error: str | None = None
    rationale: str = ""
    decided_by: str = ""
    facts: dict[str, Any] | None = None
    files: dict[str, dict[str, Any]]
    au: dict[str, Any]
    seconds: float
    tokens: int
    cost: float | None
    stop: str

    @property
    def key(self) -> tuple[str, str, int, str, str]:
        return (self.task_id, self.agent, self.epoch, self.judge, self.mode)

    def line(self) -> bytes:
        return (json.dumps(self.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def load_scores(run_dir: Path) -> list[ScoreLine]:
    return read_lines(run_dir / SCORES, ScoreLine.model_validate, lambda s: s.key, "a score line").items


def read_run_manifest(run_dir: Path, required: bool = True) -> dict[str, Any]:
    """A run directory's ``manifest.json`` (``{}`` when absent and not ``required``); a manifest that
    cannot be read raises ValueError naming the file, line and column."""
    from hippocamp.schema.io import read_json

    path = Path(run_dir) / "manifest.json"
    if not path.exists():
        if not Path(run_dir).is_dir():
            raise FileNotFoundError(f"{run_dir}: no such run directory")
        if required:
            raise FileNotFoundError(f"{run_dir}: no manifest.json; is this a run directory?")
        return {}
    manifest = read_json(path, "run manifest")
    if not isinstance(manifest, dict):
        raise ValueError(f"{path}: not a run manifest (a JSON object), found {type(manifest).__name__}")
    suite = manifest.get("suite", {})
    if not isinstance(suite, dict):
        raise ValueError(f"{path}: field 'suite': expected an object, found {type(suite).__name__}")
    return manifest


def write_summary(path: Path, summary: dict[str, Any]) -> None:
    """Write ``scores.summary.json`` with every string redacted."""
    data = redact(json.loads(json.dumps(summary, default=str)), by_key=False)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _gold(run_dir: Path) -> tuple[dict[str, HippoCampRecord], dict[str, Any]]:
    from hippocamp.dataset.profile import ProfileError
    from hippocamp.schema.io import RecordsFileError

    manifest = read_run_manifest(run_dir)
    manifest_path = run_dir / "manifest.json"
    suite = manifest.get("suite", {})
    records = suite.get("records")
    if not records or not isinstance(records, str):
        raise ValueError(f"{manifest_path}: field suite.records is missing; cannot find the gold records")
    root = suite.get("root")
    try:
        profile = load_profile(records, root=root if isinstance(root, str) else None)
    except (ProfileError, RecordsFileError) as exc:
        raise ValueError(f"{manifest_path}: field suite.records: the gold records cannot be read: {exc}") from None
    return {r.key: r for r in profile.records}, manifest


@dataclass
class ScoreReport:
    scored: int
    skipped: int
    unscored: int
    missing_gold: list[str]
    summary: dict[str, Any]


def _line(episode: Any, gold: HippoCampRecord, judgment: Judgment, mode: str, slack: float, iou: float) -> ScoreLine:
    answer = episode.answer
    files = {c: file_scores(answer.files, gold.file_path, convention=c).as_dict() for c in ("hippocamp", "set")}
    au = au_scores(answer.evidence, gold.evidence, slack=slack, iou=iou).as_dict()
    facts = None
    if judgment.facts is not None:
        f = judgment.facts
        facts = {"matched": f.matched, "missing": f.missing, "contradicted": f.contradicted, "hedged": f.hedged,
                 "polarity": f.polarity}  # fmt: skip
    usage = answer.usage
    return ScoreLine(
        task_id=episode.task_id,
        agent=episode.agent,
        epoch=episode.epoch,
        judge=judgment.judge or "",
        mode=mode,
        correct=judgment.correct,
        score=judgment.score,
        status=judgment.status,
        error=judgment.error,
        rationale=judgment.rationale,
        decided_by=judgment.decided_by,
        facts=facts,
        files=files,
        au=au,
        seconds=episode.wall_s,
        tokens=usage.input_tokens + usage.output_tokens,
        cost=usage.cost_usd,
        stop=answer.stop,
    )


async def score_run(
    run_dir: str | Path,
    judge: Judge | Panel,
    *,
    concurrency: int = 4,
    slack: float = 2.0,
    iou: float = 0.5,
    progress: Callable[[int, int], None] | None = None,
    retrieval_k: int = 10,
    retrieval_mode: str = "hybrid",
) -> ScoreReport:
    """Score every episode of ``run_dir`` not yet scored by this judge and mode; write the summary.
    A ``pcontext:`` run is graded by the P-ContextBench rubrics (`scoring.pcontext`), the judge's model (if
    any) deciding paraphrased key items, plus the store's evidence recall@``retrieval_k``."""
    from hippocamp.runs.episodes import read_episodes

    run_dir = Path(run_dir)
    manifest = read_run_manifest(run_dir, required=False)
    if manifest.get("suite", {}).get("kind") == "pcontext":  # P-ContextBench personas: the rubrics
        from hippocamp.scoring.pcontext import score_pcontext_run

        return await score_pcontext_run(run_dir, manifest, progress, judge, retrieval_k, retrieval_mode, concurrency)
    gold, _ = _gold(run_dir)
    episodes = read_episodes(run_dir / "episodes.jsonl").episodes
    judges = judge.judges if isinstance(judge, Panel) else [judge]
    judge_id = redact_text(",".join(j.id for j in judges))  # as written: keys compare equal on a re-run
    mode = judges[0].mode
    found = read_lines(run_dir / SCORES, ScoreLine.model_validate, lambda s: s.key, "a score line")
    done = {s.key: s for s in found.items if s.status == "ok"}
    keep = [s for s in found.items if s.key in done]
    todo = [e for e in episodes if (e.task_id, e.agent, e.epoch, judge_id, mode) not in done and e.task_id in gold]
    missing_gold = sorted({e.task_id for e in episodes if e.task_id not in gold})
    log = DurableLog(run_dir / SCORES)
    rewrite = found.damaged_tail or len(keep) != len(found.items)
    log.open([*found.kept_bad_lines(), *(s.line() for s in keep)], rewrite=rewrite)
    sem, lock = asyncio.Semaphore(concurrency), asyncio.Lock()
    finished = 0

    async def one(episode: Any) -> None:
        nonlocal finished
        record = gold[episode.task_id]
        async with sem:
            if isinstance(judge, Panel):
                judgment, _ = await judge.judge(record.question, record.answer, episode.answer.text)
            else:
                judgment = await judge.judge(record.question, record.answer, episode.answer.text)
        judgment.judge = judge_id
        judgment.error = redact_text(judgment.error) if judgment.error else judgment.error
        line = _line(episode, record, judgment, mode, slack, iou)
        async with lock:
            await asyncio.to_thread(log.append, line.line())
            finished += 1
            if progress:
                progress(finished, len(todo))

    try:
        await asyncio.gather(*(one(e) for e in todo))
    finally:
        log.close()
    lines = [s for s in load_scores(run_dir) if s.judge == judge_id and s.mode == mode]
    summary = summarize_scores(lines, gold)
    write_summary(run_dir / SUMMARY, summary)
    return ScoreReport(
        scored=len(todo), skipped=len(done), unscored=sum(s.correct is None for s in lines), missing_gold=missing_gold,
        summary=summary,
    )  # fmt: skip


def scored_items(lines: list[ScoreLine], gold: dict[str, HippoCampRecord]) -> list[ScoredItem]:
    items = []
    for s in lines:
        if s.task_id not in gold:
            continue
        items.append(
            ScoredItem.from_record(
                gold[s.task_id],
                None if s.correct is None else float(s.correct),
                f1=s.files["hippocamp"]["f1"],
                seconds=s.seconds,
                tokens=s.tokens,
                cost=s.cost,
                run=s.epoch,
            )
        )
    return items


def summarize_scores(lines: list[ScoreLine], gold: dict[str, HippoCampRecord]) -> dict[str, Any]:
    """The aggregates of one judge's scores of one run (see the module doc)."""
    from hippocamp.scoring.stats import with_difficulty

    items = scored_items(lines, gold)
    if items:
        items = with_difficulty(items, [gold[i.id] for i in items if i.id in gold])
    summary: dict[str, Any] = aggregate(items)
    values = [i.correct for i in items]
    summary["accuracy_ci"] = bootstrap_ci(values, resamples=2000).as_dict() if items else None
    summary["unscored"] = sum(v is None for v in values)
    summary["episodes"] = len(lines)
    epochs = sorted({s.epoch for s in lines})
    if len(epochs) > 1:
        outcomes = outcomes_by_question(items)
        summary["pass_hat_k"] = {k: pass_hat_k(outcomes, k).as_dict() for k in range(1, len(epochs) + 1)}
    for convention in ("hippocamp", "set"):
        f1s = [s.files[convention]["f1"] for s in lines]
        summary[f"file_f1_{convention}"] = sum(f1s) / len(f1s) if f1s else None
    aus = [s.au for s in lines]
    summary["au_precision"] = sum(a["precision"] for a in aus) / len(aus) if aus else None
    summary["au_recall"] = sum(a["recall"] for a in aus) / len(aus) if aus else None
    summary["decided_by"] = {k: sum(s.decided_by == k for s in lines) for k in sorted({s.decided_by for s in lines})}
    return summary
