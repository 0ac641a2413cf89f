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

from hippocamp.agents.filelists import paper_file_list, retrieved_files, touched_files
from hippocamp.dataset.profile import ProfileError, load_profile
from hippocamp.runs.rundir import MANIFEST, RunDir
from hippocamp.schema.io import RecordsFileError
from hippocamp.schema.record import HippoCampRecord
from hippocamp.schema.run import Episode, HippoCampScoreLine
from hippocamp.scoring.evidence import au_scores, file_scores
from hippocamp.scoring.judge import Judgment
from hippocamp.scoring.release import clean_list, file_list_metrics
from hippocamp.scoring.stats import ScoredItem, aggregate, bootstrap_ci, outcomes_by_question, pass_hat_k

__all__ = [
    "FILE_LISTS",
    "answer_metric_means",
    "episode_files",
    "file_list_scores",
    "gold_records",
    "score_line",
    "scored_items",
    "summarize_scores",
]

#: the three file lists of an episode (`hippocamp.schema.run.Answer`)
FILE_LISTS = ("cited", "touched", "retrieved")


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


def episode_files(episode: Episode) -> dict[str, Any]:
    """An episode's three file lists and the one the paper used for its agent's family (``paper``).
    Episodes recorded before ``touched`` existed get it from their trace by the same rule; ``retrieved``
    needs the search hits a trace keeps since then."""
    answer = episode.answer
    return {
        "cited": list(answer.files),
        "touched": list(answer.touched) or touched_files(answer.trace),
        "retrieved": list(answer.retrieved) or retrieved_files(answer.trace),
        "paper": paper_file_list(episode.agent),
    }


def file_list_scores(lists: dict[str, Any], gold: HippoCampRecord) -> dict[str, dict[str, dict[str, float]]]:
    """File P/R/F1 of each of an episode's lists (`episode_files`), under hippocamp's convention (paths
    normalised) and the release's (``evaluate.py``: entries stripped and deduplicated, paths compared
    as written)."""
    out: dict[str, dict[str, dict[str, float]]] = {"hippocamp": {}, "release": {}}
    release_gold = clean_list(list(gold.file_path))
    for name in FILE_LISTS:
        ours = file_scores(lists[name], gold.file_path, convention="hippocamp")
        out["hippocamp"][name] = {"precision": ours.precision, "recall": ours.recall, "f1": ours.f1}
        theirs = file_list_metrics(release_gold, clean_list(lists[name]))
        out["release"][name] = {"precision": theirs["precision"], "recall": theirs["recall"], "f1": theirs["f1_score"]}
    return out


def score_line(
    episode: Episode, gold: HippoCampRecord, judgment: Judgment, mode: str, slack: float, iou: float
) -> HippoCampScoreLine:
    """The score line of one episode."""
    answer = episode.answer
    lists = episode_files(episode)
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
        file_lists=file_list_scores(lists, gold),
        paper_list=lists["paper"],
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


def summarize_scores(
    lines: list[HippoCampScoreLine], gold: dict[str, HippoCampRecord], convention: str = "hippocamp"
) -> dict[str, Any]:
    """The aggregates of one judge's scores of one run (see the module doc), with the headline figures
    under ``convention``: ``hippocamp`` (accuracy over scored answers, F1 of the cited files, paths
    normalised) or ``release`` / ``release-run-evaluation`` (a failed judgment counts as "no"; F1 of
    the list the paper used for the agent's family, paths as written)."""
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
    for rule in ("hippocamp", "set"):
        f1s = [s.files[rule]["f1"] for s in lines]
        summary[f"file_f1_{rule}"] = sum(f1s) / len(f1s) if f1s else None
    aus = [s.au for s in lines]
    summary["au_precision"] = sum(a["precision"] for a in aus) / len(aus) if aus else None
    summary["au_recall"] = sum(a["recall"] for a in aus) / len(aus) if aus else None
    summary["decided_by"] = {k: sum(s.decided_by == k for s in lines) for k in sorted({s.decided_by for s in lines})}
    summary["accuracy_failures_as_no"] = sum(s.correct is True for s in lines) / len(lines) if lines else None
    summary["file_lists"] = _mean_lists(lines)
    papers = sorted({s.paper_list for s in lines})
    summary["paper_file_list"] = papers[0] if len(papers) == 1 else papers
    summary["convention"] = convention
    summary["headline"] = _headline(summary, convention)
    return summary


def answer_metric_means(episodes: list[Episode], gold: dict[str, HippoCampRecord]) -> dict[str, float | None]:
    """The release's answer metrics (`hippocamp.scoring.lexical`: exact match, covered exact match,
    ROUGE, BLEU; not the embedding similarity, which needs the embedder) averaged over the episodes
    that have a gold record, as the release's runner averages them."""
    from hippocamp.scoring.lexical import score_answers, summarize

    pairs = [(e.answer.text, gold[e.task_id].answer) for e in episodes if e.task_id in gold]
    if not pairs:
        return {}
    found = summarize(score_answers(pairs, semantic=False))
    return {name: m.mean for name, m in found.metrics.items() if m.count}


def _mean_lists(lines: list[HippoCampScoreLine]) -> dict[str, dict[str, dict[str, float | None]]]:
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for rule in ("hippocamp", "release"):
        out[rule] = {}
        for name in FILE_LISTS:
            found = [s.file_lists[rule][name] for s in lines if s.file_lists.get(rule, {}).get(name)]
            out[rule][name] = {
                key: (sum(f[key] for f in found) / len(found) if found else None)
                for key in ("precision", "recall", "f1")
            }
    return out


def _headline(summary: dict[str, Any], convention: str) -> dict[str, Any]:
    """Accuracy and file P/R/F1 as ``convention`` reports them (see `summarize_scores`)."""
    if convention == "hippocamp":
        files = summary["file_lists"]["hippocamp"]["cited"]
        return {"convention": convention, "accuracy": summary["question_weighted"]["mean"], "file_list": "cited",
                "failed_judgments": "left out", **{f"file_{k}": v for k, v in files.items()}}  # fmt: skip
    paper = summary["paper_file_list"]
    chosen = paper if isinstance(paper, str) else "cited"
    files = summary["file_lists"]["release"][chosen]
    return {"convention": convention, "accuracy": summary["accuracy_failures_as_no"], "file_list": chosen,
            "failed_judgments": "counted as no", **{f"file_{k}": v for k, v in files.items()}}  # fmt: skip
