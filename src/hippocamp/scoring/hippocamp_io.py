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

from hippocamp.redact import redact, redact_text
from hippocamp.schema.io import JsonInputError, RecordsFileError, check_json, json_objects, loads_json
from hippocamp.scoring.evidence import file_scores
from hippocamp.scoring.judge import Judge

__all__ = ["read_rows", "score_rows", "write_results"]

FIELDS = ("query_id", "question", "answer", "ground_truth", "ground_file_list", "agent_file_list")


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of the release evaluator's input (a JSON array, one object, or JSON Lines); a row that is
    not an object or misses a field is an error naming the file, the row (or line) and the field. The
    JSON is read safely (`hippocamp.schema.io.loads_json`: nesting and number limits)."""
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
        rows = data if isinstance(data, list) else [data]
        numbered = [(f"row {i}", row) for i, row in enumerate(rows, start=1)]
    except JsonInputError as whole:
        try:
            numbered = [(f"line {n}", row) for n, row in json_objects(path, text)]
        except RecordsFileError as exc:
            raise ValueError(str(exc if text.lstrip().startswith("{") else whole)) from None
    for where, row in numbered:
        if not isinstance(row, dict):
            raise ValueError(f"{path}: {where}: expected a JSON object with {', '.join(FIELDS)}, "
                             f"found {type(row).__name__}")  # fmt: skip
        missing = [f for f in FIELDS if f not in row]
        if missing:
            qid = row.get("query_id")
            raise ValueError(f"{path}: {where} (query_id {qid!r}): field(s) {', '.join(missing)} missing")
    return [row for _, row in numbered]


def write_results(out: Path, results: list[dict[str, Any]], aggregate: dict[str, Any]) -> Path:
    """Write the per-query JSON Lines to ``out`` and the aggregate beside it, every string redacted;
    returns the aggregate's path."""
    out.write_text("".join(redact_text(json.dumps(r, ensure_ascii=False)) + "\n" for r in results), encoding="utf-8")
    agg_path = out.with_name(out.stem + ".aggregate.json")
    agg_path.write_text(json.dumps(redact(aggregate, by_key=False), indent=2) + "\n", encoding="utf-8")
    return agg_path


def _paths(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        try:
            parsed = loads_json(value, "file list")
            return [str(p) for p in parsed] if isinstance(parsed, list) else [value]
        except ValueError:
            return [p.strip() for p in value.split(",") if p.strip()]
    if isinstance(value, list | tuple):
        return [str(p) for p in value]
    return [str(value)]


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
