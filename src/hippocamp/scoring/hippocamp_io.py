"""HippoCamp's released evaluator, input and output shapes, so results compare with published numbers.

Input rows (a JSON array or JSON Lines): ``query_id, question, answer, ground_truth,
ground_file_list, agent_file_list, time_ms``. Per-query output: the row's id with
``judge{pred, score_0_5, score_normalized, api_status, raw_response}`` and
``file_list_metrics{precision, recall, f1_score}`` (the release's convention: an empty list on either
side scores 0). ``api_status`` is ``"success"`` or ``"error"``; an errored judgment has ``pred``
None and is left out of the accuracy, never counted as wrong.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from hippocamp.schema.io import RecordsFileError, json_objects
from hippocamp.scoring.evidence import file_scores
from hippocamp.scoring.judge import Judge

__all__ = ["read_rows", "score_rows"]

FIELDS = ("query_id", "question", "answer", "ground_truth", "ground_file_list", "agent_file_list")


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of the release evaluator's input; a row missing a field is an error naming it."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
        rows = data if isinstance(data, list) else [data]
    except ValueError:
        try:
            rows = [row for _, row in json_objects(path, text)]
        except RecordsFileError as exc:
            raise ValueError(str(exc)) from None
    for i, row in enumerate(rows):
        missing = [f for f in FIELDS if f not in row]
        if missing:
            raise ValueError(f"{path}: row {i + 1} (query_id {row.get('query_id')!r}) lacks {', '.join(missing)}")
    return rows


def _paths(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
            return [str(p) for p in parsed] if isinstance(parsed, list) else [value]
        except ValueError:
            return [p.strip() for p in value.split(",") if p.strip()]
    return [str(p) for p in value]


async def score_rows(rows: list[dict[str, Any]], judge: Judge, concurrency: int = 4) -> tuple[list[dict], dict]:
    """Per-query results and the aggregate (accuracy over judged rows, mean file metrics)."""
    sem = asyncio.Semaphore(concurrency)

    async def one(row: dict[str, Any]) -> dict[str, Any]:
        async with sem:
            j = await judge.judge(str(row["question"]), str(row["ground_truth"]), str(row["answer"] or ""))
        files = file_scores(_paths(row["agent_file_list"]), _paths(row["ground_file_list"]), convention="hippocamp")
        return {
            "query_id": row["query_id"],
            "judge": {
                "pred": None if j.correct is None else ("yes" if j.correct else "no"),
                "score_0_5": j.score,
                "score_normalized": j.normalized,
                "api_status": "success" if j.status == "ok" else "error",
                "raw_response": j.rationale if j.status == "ok" else (j.error or ""),
            },
            "file_list_metrics": {"precision": files.precision, "recall": files.recall, "f1_score": files.f1},
            "time_ms": row.get("time_ms"),
        }

    results = list(await asyncio.gather(*(one(r) for r in rows)))
    judged = [r for r in results if r["judge"]["pred"] is not None]
    n = len(results)

    def mean(values: list[float]) -> float | None:
        return sum(values) / len(values) if values else None

    times = [float(r["time_ms"]) for r in results if isinstance(r.get("time_ms"), int | float)]
    aggregate = {
        "n": n,
        "judged": len(judged),
        "unscored": n - len(judged),
        "accuracy": mean([1.0 if r["judge"]["pred"] == "yes" else 0.0 for r in judged]),
        "avg_score_0_5": mean([r["judge"]["score_0_5"] for r in judged if r["judge"]["score_0_5"] is not None]),
        "precision": mean([r["file_list_metrics"]["precision"] for r in results]),
        "recall": mean([r["file_list_metrics"]["recall"] for r in results]),
        "f1_score": mean([r["file_list_metrics"]["f1_score"] for r in results]),
        "avg_time_ms": mean(times),
        "judge": judge.id,
        "mode": judge.mode,
    }
    return results, aggregate
