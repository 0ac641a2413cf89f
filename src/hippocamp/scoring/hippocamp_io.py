"""The HippoCamp release's files, in and out: its evaluators' inputs and outputs, scored under a convention.

**In** (`read_release`): a JSON array, an object wrapping one (``results`` or ``data``), one object,
or JSON Lines, of any of the release's row shapes:

* ``evaluate.py`` input rows: ``query_id, question (or query), answer, ground_truth,
  ground_file_list, agent_file_list, time_ms``;
* ``run_query.py`` summaries (the input of ``run_evaluation.py``): ``query_id, query, answer,
  ground_truth, file_list, retrieved_file_list, execution_time_ms`` (and whatever else it keeps);
* ``run_evaluation.py`` or ``evaluate.py`` outputs (rows with a ``judge`` block and ``file_list_metrics``):
  read for what they carry (question, answer, ground truth, the release's verdict and metrics).

Rows are kept as written, so a release convention sees exactly what the release's script would. A
row that the release's scripts would crash on, or that hippocamp's convention cannot score (not an
object; an answer that is not text; a file list that is a number; a nested list as a path), is an
error naming the file, the row and the field; the other rows are scored.

**Scored** (`score_release`, written by `write_release`) under a convention
(`hippocamp.scoring.release`): ``hippocamp`` writes our per-query lines (JSON Lines) and aggregate;
``release`` writes ``evaluate.py``'s per-query results (a JSON array) and aggregate;
``release-run-evaluation`` writes ``run_evaluation.py``'s structured results and summary. Every
aggregate also carries a ``hippocamp`` block (accuracy with failed judgments left out, and with them
counted as "no"; the answer metrics), so the two policies sit side by side.

**Out** (`release_rows`): a run directory's episodes as ``evaluate.py`` input rows or ``run_query.py``
summaries, with the cited, touched, retrieved or paper-defined file list as the agent's list; read
back, they give the same question, answer, ground truth, files and time (`common_view`).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from hippocamp.redact import redact, redact_text
from hippocamp.schema.io import JsonInputError, RecordsFileError, check_json, json_objects, loads_json
from hippocamp.scoring.evidence import file_scores
from hippocamp.scoring.judge import Judgment
from hippocamp.scoring.release import (
    CONVENTIONS,
    evaluate_aggregate,
    evaluate_files,
    evaluate_judge_status,
    execution_time,
    run_evaluation_aggregate_files,
    run_evaluation_file_metrics,
    time_ms,
)

__all__ = [
    "SHAPES",
    "ReleaseFile",
    "common_view",
    "read_release",
    "release_rows",
    "score_release",
    "write_release",
]

#: the row shapes the release writes
SHAPES = ("evaluate", "run_query", "results")
_TEXT_FIELDS = ("question", "query", "answer", "ground_truth")
_LIST_FIELDS = ("ground_file_list", "agent_file_list", "file_list", "retrieved_file_list")
#: what hippocamp's convention needs of every row
HIPPOCAMP_FIELDS = ("answer", "ground_truth")


@dataclass
class ReleaseFile:
    """A release file's rows as written (``rows``, each with where it was: ``row N`` or ``line N``),
    its shape, and the rows that could not be used (``errors``: file, row and field named)."""

    path: Path
    shape: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    where: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _shape(rows: Sequence[Mapping[str, Any]]) -> str:
    keys = {k for r in rows for k in r}
    if keys & {"ground_file_list", "agent_file_list"} or ("question" in keys and "query" not in keys):
        return "evaluate"
    if keys & {"judge", "simple_metrics", "file_list_metrics"} and not keys & {"file_list", "retrieved_file_list"}:
        return "results"
    return "run_query"


def _row_problem(row: Mapping[str, Any]) -> str | None:
    """Why a row cannot be scored under any convention (a field the release's scripts would crash on)."""
    for name in _TEXT_FIELDS:
        value = row.get(name)
        if value is not None and not isinstance(value, str):
            return f"field {name}: expected text or null, found {type(value).__name__}"
    for name in _LIST_FIELDS:
        value = row.get(name)
        if value is None or isinstance(value, str):
            continue
        if not isinstance(value, list):
            return f"field {name}: expected a list of paths, found {type(value).__name__}"
        for i, entry in enumerate(value):
            if isinstance(entry, list | dict):
                return f"field {name}[{i}]: expected a path, found a {type(entry).__name__}"
    return None


def read_release(path: str | Path, require: tuple[str, ...] = ()) -> ReleaseFile:
    """Read a release file (see the module doc). A file that is not JSON, or not rows, raises
    ValueError naming it; a bad row, or one without a field of ``require`` (hippocamp's convention
    needs ``answer`` and ``ground_truth``; the release's scripts take rows without them), is recorded
    in ``errors`` and left out."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror or exc}") from None
    check_json(text, path)  # deep nesting or a huge number: refused with the line, for both layouts
    numbered: list[tuple[str, Any]]
    try:
        data = loads_json(text, path)
        if isinstance(data, dict) and isinstance(data.get("results", data.get("data")), list):
            data = data.get("results", data.get("data"))
        rows = data if isinstance(data, list) else [data]
        numbered = [(f"row {i}", row) for i, row in enumerate(rows, start=1)]
    except JsonInputError as whole:
        try:
            numbered = [(f"line {n}", row) for n, row in json_objects(path, text)]
        except RecordsFileError as exc:
            raise ValueError(str(exc if text.lstrip().startswith("{") else whole)) from None
    out = ReleaseFile(path, "evaluate")
    for where, row in numbered:
        if not isinstance(row, dict):
            out.errors.append(f"{path}: {where}: expected a JSON object, found {type(row).__name__}")
            continue
        problem = _row_problem(row)
        missing = [f for f in require if f not in row]
        if missing and not problem:
            problem = f"field(s) {', '.join(missing)} missing"
        if problem:
            out.errors.append(f"{path}: {where} (query_id {row.get('query_id')!r}): {problem}; not scored")
            continue
        out.rows.append(row)
        out.where.append(where)
    out.shape = _shape(out.rows)
    return out


# -- the common view ---------------------------------------------------------------------------------
def common_view(row: Mapping[str, Any], index: int = 1) -> dict[str, Any]:
    """What every shape carries, in hippocamp's words: ``query_id`` (``query_id``, else ``id``, else
    the row number, as ``evaluate.py`` names it), ``question``, ``answer``, ``ground_truth``,
    ``gold_files``, ``agent_files`` (lists, ``None`` entries dropped) and ``time_ms``."""
    gold, pred = row.get("ground_file_list"), row.get("agent_file_list")
    gold = row.get("file_list") if gold is None else gold
    pred = row.get("retrieved_file_list") if pred is None else pred
    when = row.get("time_ms", row.get("execution_time_ms"))
    return {
        "query_id": str(row.get("query_id") or row.get("id") or index),
        "question": row.get("query") or row.get("question") or "",
        "answer": row.get("answer") or "",
        "ground_truth": row.get("ground_truth") or "",
        "gold_files": _paths(gold),
        "agent_files": _paths(pred),
        "time_ms": time_ms(when),
    }


def _paths(value: Any) -> list[str]:
    """A file list as hippocamp reads it: a list's entries (``None`` dropped); a string holding a JSON
    list, or paths separated by commas."""
    if value is None:
        return []
    if isinstance(value, str):
        try:
            parsed = loads_json(value, "file list")
            return [str(p) for p in parsed if p is not None] if isinstance(parsed, list) else [value]
        except ValueError:
            return [p.strip() for p in value.split(",") if p.strip()]
    if isinstance(value, list | tuple):
        return [str(p) for p in value if p is not None]
    return [str(value)]


# -- scoring -----------------------------------------------------------------------------------------
def _timestamp() -> str:
    return datetime.now().strftime("%Y%m%d_%H%M%S")


def _pred(j: Judgment | None) -> str:
    return "yes" if j is not None and j.correct is True else "no"


async def _judge_all(views: list[dict[str, Any]], judge: Any, concurrency: int, skip: list[str | None]) -> list[Any]:
    sem = asyncio.Semaphore(concurrency)

    async def one(view: dict[str, Any], why: str | None) -> Judgment | None:
        if why is not None or judge is None:
            return None
        async with sem:
            got = await judge.judge(view["question"], view["ground_truth"], view["answer"])
        return got[0] if isinstance(got, tuple) else got  # a Panel returns (verdict, each judge's)

    return list(await asyncio.gather(*(one(v, w) for v, w in zip(views, skip, strict=True))))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _policies(judgments: list[Judgment | None], n: int) -> dict[str, Any]:
    """Accuracy both ways: ours (a failed judgment left out) and the release's (counted as "no")."""
    judged = [j for j in judgments if j is not None and j.correct is not None]
    yes = sum(1 for j in judged if j.correct)
    return {
        "n": n,
        "judged": len(judged),
        "unscored": n - len(judged),
        "accuracy": yes / len(judged) if judged else None,
        "accuracy_failures_as_no": yes / n if n else None,
    }


def _answer_metrics(views: list[dict[str, Any]], semantic: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The release's answer metrics per row (``{name: {score, details}}``, unscored ones left out) and
    their means (`hippocamp.scoring.lexical`)."""
    from dataclasses import asdict

    from hippocamp.scoring.lexical import score_answers, summarize

    found = score_answers([(v["answer"], v["ground_truth"]) for v in views], semantic=semantic)
    rows = [{k: v for k, v in m.to_dict().items() if v["score"] is not None} for m in found]
    summary = {name: asdict(m) for name, m in summarize(found).metrics.items() if m.count}
    return rows, summary


async def score_release(
    found: ReleaseFile,
    judge: Any,
    convention: str = "hippocamp",
    concurrency: int = 4,
    semantic: bool = False,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per-query results and the aggregate of a release file's rows under ``convention`` (see the
    module doc). ``judge`` None is the release's "not configured": every row "no" under the release's
    conventions, unscored under ours."""
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r}; choose one of {', '.join(CONVENTIONS)}")
    rows = found.rows
    views = [common_view(r, i) for i, r in enumerate(rows, start=1)]
    if convention == "release":
        skip = [evaluate_judge_status(r.get("ground_truth", ""), r.get("answer", ""), judge is not None) for r in rows]
    elif convention == "release-run-evaluation":
        skip = [None if judge is not None and r.get("ground_truth") and (r.get("answer") or "").strip() else "no"
                for r in rows]  # fmt: skip
    else:
        skip = [None] * len(rows)  # our judges say "no answer" themselves
    judgments = await _judge_all(views, judge, concurrency, skip)
    per_row_metrics, metrics = _answer_metrics(views, semantic)
    both = _policies(judgments, len(rows))
    if convention == "release":
        results = [_evaluate_result(r, v, j, why) for r, v, j, why in zip(rows, views, judgments, skip, strict=True)]
        aggregate = evaluate_aggregate(results)
    elif convention == "release-run-evaluation":
        results, aggregate = _run_evaluation(rows, judgments, per_row_metrics)
    else:
        results = [_hippocamp_result(v, j, m) for v, j, m in zip(views, judgments, per_row_metrics, strict=True)]
        aggregate = _hippocamp_aggregate(results, both)
    aggregate["hippocamp"] = {
        **both,
        "convention": convention,
        "judge": None if judge is None else getattr(judge, "id", str(judge)),
        "mode": None if judge is None else getattr(judge, "mode", None),
        "answer_metrics": metrics,
        "invalid_rows": found.errors,
    }
    return results, aggregate


def _release_judge(j: Judgment | None, why: str | None) -> dict[str, Any]:
    score = j.score if j is not None and j.correct is not None and j.score is not None else 0
    pred = _pred(j)
    if why is not None:
        status = why
    elif j is None or j.status != "ok":
        status = "error"
    else:
        status = "success"
    return {
        "llm_as_a_judge_score": score,
        "pred": pred,
        "score_0_5": score,
        "score_normalized": score / 5.0,
        "rationale": (j.rationale if j is not None and j.rationale else f"Prediction: {pred}, Score: {score}/5"),
        "api_status": status,
        "eval_api_latency_seconds": 0.0,
        "raw_response": "" if j is None else (j.error or j.rationale or ""),
    }


def _evaluate_result(row: Mapping[str, Any], view: Mapping[str, Any], j: Judgment | None, why: str | None) -> dict:
    gold, pred, files = evaluate_files(row)
    return {
        "query_id": view["query_id"],
        "query": row.get("query") or row.get("question", ""),
        "answer": row.get("answer", ""),
        "ground_truth": row.get("ground_truth", ""),
        "time_ms": time_ms(row.get("time_ms")),
        "judge": _release_judge(j, why),
        "timestamp": _timestamp(),
        "ground_file_list": gold,
        "agent_file_list": pred,
        "file_list_metrics": files,
    }


def _run_evaluation(
    rows: list[dict[str, Any]],
    judgments: list[Judgment | None],
    per_row_metrics: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    files = run_evaluation_file_metrics(rows)
    results = []
    for n, (row, j, m, f) in enumerate(zip(rows, judgments, per_row_metrics, files, strict=True), start=1):
        results.append({
            "query_id": row.get("query_id", f"q{n}"),
            "query": row.get("query", ""),
            "answer": row.get("answer"),
            "ground_truth": row.get("ground_truth"),
            "judge": _release_judge(j, None if j is not None else "unknown"),
            "simple_metrics": dict(m),
            "timestamp": _timestamp(),
            "file_list_metrics": f,
        })  # fmt: skip
    scores = [r["judge"]["score_0_5"] for r in results]
    yes = sum(1 for r in results if r["judge"]["pred"] == "yes")
    summary: dict[str, Any] = {"total_queries": len(results), "metrics": {}}
    if results:
        summary["metrics"]["llm_judge"] = {"mean": sum(scores) / len(scores), "yes_count": yes,
                                           "accuracy": yes / len(results)}  # fmt: skip
        for name in ("exact_match", "covered_exact_match", "rouge", "bleu", "semantic_similarity"):
            values = [r["simple_metrics"][name]["score"] for r in results if name in r["simple_metrics"]]
            if values:
                summary["metrics"][name] = {"mean": sum(values) / len(values)}
    summary["file_list_metrics"] = run_evaluation_aggregate_files(rows)
    timing = execution_time(rows)
    if timing:
        summary["execution_time"] = timing
    return results, summary


def _hippocamp_result(view: Mapping[str, Any], j: Judgment | None, metrics: dict[str, Any]) -> dict[str, Any]:
    files = file_scores(view["agent_files"], view["gold_files"], convention="hippocamp")
    judge: dict[str, Any]
    if j is None:
        judge = {"pred": None, "score_0_5": None, "score_normalized": None, "api_status": "error_not_configured",
                 "raw_response": ""}  # fmt: skip
    else:
        judge = {
            "pred": None if j.correct is None else ("yes" if j.correct else "no"),
            "score_0_5": j.score,
            "score_normalized": j.normalized,
            "api_status": "success" if j.status == "ok" else "error",
            "raw_response": j.rationale if j.status == "ok" else (j.error or ""),
        }
    return {
        "query_id": view["query_id"],
        "judge": judge,
        "file_list_metrics": {"precision": files.precision, "recall": files.recall, "f1_score": files.f1},
        "answer_metrics": {k: v["score"] for k, v in metrics.items()},
        "time_ms": view["time_ms"],
    }


def _hippocamp_aggregate(results: list[dict[str, Any]], both: dict[str, Any]) -> dict[str, Any]:
    """Ours: the two accuracy policies (`_policies`), the mean 0-5 score of the judged rows, mean file
    P/R/F1 over every row, the mean time."""
    judged = [r for r in results if r["judge"]["pred"] is not None]
    times = [r["time_ms"] for r in results if isinstance(r.get("time_ms"), float) and math.isfinite(r["time_ms"])]
    return {
        **both,
        "avg_score_0_5": _mean([r["judge"]["score_0_5"] for r in judged if r["judge"]["score_0_5"] is not None]),
        "precision": _mean([r["file_list_metrics"]["precision"] for r in results]),
        "recall": _mean([r["file_list_metrics"]["recall"] for r in results]),
        "f1_score": _mean([r["file_list_metrics"]["f1_score"] for r in results]),
        "avg_time_ms": _mean(times),
    }


# -- writing -----------------------------------------------------------------------------------------
def write_release(out: Path, results: list[dict[str, Any]], aggregate: dict[str, Any], convention: str) -> Path:
    """Write the per-query results to ``out`` and the aggregate beside it, every string redacted; returns
    the aggregate's path. Ours: JSON Lines and ``<out>.aggregate.json``; the release's conventions as the
    release writes them: one JSON array, and ``<out>.aggregate.json`` (``evaluate.py``) or
    ``<out>.summary.json`` (``run_evaluation.py``)."""
    if convention == "hippocamp":
        out.write_text("".join(redact_text(json.dumps(r, ensure_ascii=False)) + "\n" for r in results),
                       encoding="utf-8")  # fmt: skip
    else:
        out.write_text(json.dumps(redact(results, by_key=False), ensure_ascii=False, indent=2) + "\n",
                       encoding="utf-8")  # fmt: skip
    suffix = ".summary.json" if convention == "release-run-evaluation" else ".aggregate.json"
    agg_path = out.with_name(out.stem + suffix)
    agg_path.write_text(json.dumps(redact(aggregate, by_key=False), indent=2) + "\n", encoding="utf-8")
    return agg_path


def release_rows(episodes: list[Any], gold: Mapping[str, Any], shape: str = "evaluate",
                 files: str = "paper") -> list[dict[str, Any]]:  # fmt: skip
    """A run's episodes as rows the release's scripts read: ``evaluate`` (``evaluate.py`` input) or
    ``run_query`` (``run_query.py`` summaries, the input of ``run_evaluation.py``). ``files`` is the
    agent's list: ``cited``, ``touched``, ``retrieved``, or ``paper`` (the one the paper used for the
    agent's family). Episodes without a gold record are left out."""
    from hippocamp.scoring.hippocamp import episode_files

    if shape not in ("evaluate", "run_query"):
        raise ValueError(f"unknown release shape {shape!r}; choose evaluate or run_query")
    out = []
    for e in episodes:
        record = gold.get(e.task_id)
        if record is None:
            continue
        lists = episode_files(e)
        chosen = lists[lists["paper"]] if files == "paper" else lists[files]
        milliseconds = round(e.wall_s * 1000)
        if shape == "evaluate":
            out.append({"query_id": e.task_id, "question": record.question, "answer": e.answer.text,
                        "ground_truth": record.answer, "ground_file_list": list(record.file_path),
                        "agent_file_list": list(chosen), "time_ms": milliseconds})  # fmt: skip
        else:
            out.append({"query_id": e.task_id, "query": record.question, "answer": e.answer.text,
                        "ground_truth": record.answer, "file_list": list(record.file_path),
                        "retrieved_file_list": list(chosen), "execution_time_ms": milliseconds})  # fmt: skip
    return out
