"""Score a run directory: ``scores.jsonl`` beside ``episodes.jsonl``, resumable, never mutating either.

For every episode: the judge's verdict on the answer against the gold answer, file precision/recall/F1
of the cited files against the gold ``file_path`` (both conventions), and atomic-unit precision/recall
of the cited evidence against the gold evidence. A line is keyed by (task, agent, epoch, judge, mode):
re-scoring skips what is scored (a judgment that came back ``unscored`` is tried again), and a kill
loses at most the line being written. ``scores.summary.json`` holds the aggregates (`stats.aggregate`
plus confidence intervals, pass^k over epochs, unscored counts).
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
from hippocamp.schema.record import HippoCampRecord
from hippocamp.scoring.evidence import au_scores, file_scores
from hippocamp.scoring.judge import Judge, Judgment, Panel
from hippocamp.scoring.stats import ScoredItem, aggregate, bootstrap_ci, outcomes_by_question, pass_hat_k

__all__ = ["SCORES", "SUMMARY", "ScoreLine", "load_scores", "score_run"]

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


def _gold(run_dir: Path) -> tuple[dict[str, HippoCampRecord], dict[str, Any]]:
    manifest_path = run_dir / "manifest.json"
    if not manifest_path.is_file():
        raise FileNotFoundError(f"{run_dir}: no manifest.json; is this a run directory?")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    suite = manifest.get("suite", {})
    records = suite.get("records")
    if not records:
        raise ValueError(f"{manifest_path}: field suite.records is missing; cannot find the gold records")
    profile = load_profile(records, root=suite.get("root"))
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
    mpath = run_dir / "manifest.json"
    manifest = json.loads(mpath.read_text(encoding="utf-8")) if mpath.is_file() else {}
    if manifest.get("suite", {}).get("kind") == "pcontext":  # P-ContextBench personas: the rubrics
        from hippocamp.scoring.pcontext import score_pcontext_run

        return await score_pcontext_run(run_dir, manifest, progress, judge, retrieval_k, retrieval_mode, concurrency)
    gold, _ = _gold(run_dir)
    episodes = read_episodes(run_dir / "episodes.jsonl").episodes
    judges = judge.judges if isinstance(judge, Panel) else [judge]
    judge_id = ",".join(j.id for j in judges)
    mode = judges[0].mode
    found = read_lines(run_dir / SCORES, ScoreLine.model_validate, lambda s: s.key, "a score line")
    done = {s.key: s for s in found.items if s.status == "ok"}
    keep = [s for s in found.items if s.key in done]
    todo = [e for e in episodes if (e.task_id, e.agent, e.epoch, judge_id, mode) not in done and e.task_id in gold]
    missing_gold = sorted({e.task_id for e in episodes if e.task_id not in gold})
    log = DurableLog(run_dir / SCORES)
    log.open([s.line() for s in keep], rewrite=found.damaged_tail or len(keep) != len(found.items))
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
    (run_dir / SUMMARY).write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
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
