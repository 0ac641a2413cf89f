"""HippoCamp's scores of a run: the judge's verdict, file P/R/F1 and atomic units per episode, and the aggregates.

`gold_records(run)` reads the gold records the manifest names; `score_line(...)` makes the score line of
one episode (`hippocamp.schema.run.HippoCampScoreLine`): the judge's verdict on the answer against the
gold answer, file precision/recall/F1 of the cited files against the gold ``file_path`` (both
conventions), and atomic-unit precision/recall of the cited evidence against the gold evidence.
`summarize_scores` gives ``scores.summary.json``: `stats.aggregate` plus confidence intervals, pass^k
over epochs, unscored counts, mean file F1 and atomic units.
"""

from __future__ import annotations

from typing import Any

from hippocamp.dataset.profile import ProfileError, load_profile
from hippocamp.runs.rundir import MANIFEST, RunDir
from hippocamp.schema.io import RecordsFileError
from hippocamp.schema.record import HippoCampRecord
from hippocamp.schema.run import Episode, HippoCampScoreLine
from hippocamp.scoring.evidence import au_scores, file_scores
from hippocamp.scoring.judge import Judgment
from hippocamp.scoring.stats import ScoredItem, aggregate, bootstrap_ci, outcomes_by_question, pass_hat_k

__all__ = ["gold_records", "score_line", "scored_items", "summarize_scores"]


def gold_records(run: RunDir) -> dict[str, HippoCampRecord]:
    """The gold records of a HippoCamp run, by task id (the records file its manifest names)."""
    manifest_path = run.path / MANIFEST
    suite = run.manifest.suite
    profiles = suite.get("profiles")
    if isinstance(profiles, list) and profiles:  # an imported release: task ids are <profile>/<record id>
        gold: dict[str, HippoCampRecord] = {}
        for n, entry in enumerate(profiles):
            where = f"suite.profiles[{n}]"
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise ValueError(f"{manifest_path}: field {where}: a profile needs a name")
            records = _records(manifest_path, where, entry.get("records"), entry.get("root"))
            gold.update({f"{entry['name']}/{key}": record for key, record in records.items()})
        return gold
    return _records(manifest_path, "suite", suite.get("records"), suite.get("root"))


def _records(manifest_path: Any, where: str, records: Any, root: Any) -> dict[str, HippoCampRecord]:
    if not records or not isinstance(records, str):
        raise ValueError(f"{manifest_path}: field {where}.records is missing; cannot find the gold records")
    try:
        profile = load_profile(records, root=root if isinstance(root, str) else None)
    except (ProfileError, RecordsFileError) as exc:
        raise ValueError(f"{manifest_path}: field {where}.records: the gold records cannot be read: {exc}") from None
    return {r.key: r for r in profile.records}


def score_line(
    episode: Episode, gold: HippoCampRecord, judgment: Judgment, mode: str, slack: float, iou: float
) -> HippoCampScoreLine:
    """The score line of one episode."""
    answer = episode.answer
    files = {c: file_scores(answer.files, gold.file_path, convention=c).as_dict() for c in ("hippocamp", "set")}
    au = au_scores(answer.evidence, gold.evidence, slack=slack, iou=iou).as_dict()
    facts = None
    if judgment.facts is not None:
        f = judgment.facts
        facts = {"matched": f.matched, "missing": f.missing, "contradicted": f.contradicted, "hedged": f.hedged,
                 "polarity": f.polarity}  # fmt: skip
    usage = answer.usage
    return HippoCampScoreLine(
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


def scored_items(lines: list[HippoCampScoreLine], gold: dict[str, HippoCampRecord]) -> list[ScoredItem]:
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


def summarize_scores(lines: list[HippoCampScoreLine], gold: dict[str, HippoCampRecord]) -> dict[str, Any]:
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
