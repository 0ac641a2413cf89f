"""The HippoCamp release's evaluation conventions, computed exactly as its two scripts compute them.

The public release (``Savannah-yz/HippoCamp``, commit e7eda45) scores file lists and judge verdicts in
two scripts that disagree on edge cases. hippocamp offers both, beside its own convention:

``release`` (the top-level ``evaluate.py``)
    Rows: ``query`` or ``question``; ``ground_file_list`` (else ``file_list``) and ``agent_file_list``
    (else ``retrieved_file_list``). A *list* is cleaned: ``None`` entries dropped, each entry made a
    string and stripped, blanks and repeats dropped (first kept). Anything else is used as it is, so a
    string is a set of characters. Paths are never normalised (``./x``, ``/x``, ``x\\y``, ``x//y`` and
    case all miss). A row whose gold list is ``null`` (or absent) has no file metrics and is left out
    of the file averages; an empty gold list or an empty prediction scores 0 and is counted. The judge:
    no ground truth → ``no`` (``error_no_ground_truth``); an empty answer → ``no``
    (``error_no_answer``); no judge → ``no`` (``error_not_configured``); a failed judgment → ``no``.
    Its accuracy (``pass_rate``) is yes over all rows; ``mean`` averages the 0–5 scores of all rows.

``release-run-evaluation`` (``benchmark/scripts/run_evaluation.py`` on ``run_query.py`` summaries)
    Rows: ``query`` only (no ``question`` alias); ``file_list`` and ``retrieved_file_list`` used as
    written: no stripping, no removal of blanks, ``null`` entries or repeats (a set still counts a
    repeat once, but ``""`` and ``None`` count as predicted files). A row whose gold list is empty or
    missing has no file metrics and is left out. Per-row metrics are looked up by ``query_id`` (the
    last row of an id wins), the averages go over the rows themselves. Judge accuracy is yes over the
    rows with a yes/no prediction (every row has one: failures are ``no``).

``hippocamp`` (ours, `hippocamp.scoring.evidence`)
    Paths normalised (separators, ``./``, leading ``/``, doubled ``/``), a ``null`` entry is no path,
    rows without gold counted with P = R = F1 = 0, and a failed judgment *unscored*, never wrong.

Every function here is pure; `hippocamp.scoring.hippocamp_io` reads and writes the release's files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "CONVENTIONS",
    "Convention",
    "FileMetrics",
    "clean_list",
    "evaluate_aggregate",
    "evaluate_files",
    "evaluate_judge_status",
    "file_list_metrics",
    "parse_pred_score",
    "run_evaluation_aggregate_files",
    "run_evaluation_file_metrics",
]

Convention = Literal["hippocamp", "release", "release-run-evaluation"]
CONVENTIONS: tuple[Convention, ...] = ("hippocamp", "release", "release-run-evaluation")
#: which release script a convention reproduces
SCRIPT = {"release": "evaluate.py", "release-run-evaluation": "run_evaluation.py"}

FileMetrics = dict[str, float]
_ZERO: FileMetrics = {"f1_score": 0.0, "recall": 0.0, "precision": 0.0}


class ReleaseRowError(ValueError):
    """A row the release's own script would crash on (an unhashable entry, a number for a list)."""


def clean_list(values: Any) -> list[str] | None:
    """``evaluate.py``'s cleaning of a file list: None for anything but a list; else its entries as
    stripped strings, without ``None``, blanks or repeats (the first occurrence kept)."""
    if not isinstance(values, list):
        return None
    seen: dict[str, None] = {}
    for value in values:
        if value is None:
            continue
        text = str(value).strip()
        if text:
            seen.setdefault(text, None)
    return list(seen)


def _as_set(values: Any, field: str) -> set[Any]:
    """The set the release builds from a file list: a string's characters, a list's entries."""
    if isinstance(values, str | list | tuple | dict | set | frozenset):
        items = list(values)
        bad = next((v for v in items if not isinstance(v, Hashable)), None)
        if bad is not None:
            raise ReleaseRowError(f"field {field}: an entry is a {type(bad).__name__}, not a path")
        return set(items)
    raise ReleaseRowError(f"field {field}: expected a list of paths, found {type(values).__name__}")


def file_list_metrics(gold: Any, pred: Any, *, gold_field: str = "gold", pred_field: str = "pred") -> FileMetrics:
    """The release's ``calculate_file_list_metrics``: 0 when either side is empty (falsy); else
    precision, recall and F1 of the two sets, compared as written."""
    if not gold or not pred:
        return dict(_ZERO)
    g, p = _as_set(gold, gold_field), _as_set(pred, pred_field)
    tp = len(g & p)
    precision = tp / len(p) if p else 0.0
    recall = tp / len(g) if g else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return {"f1_score": f1, "recall": recall, "precision": precision}


# -- evaluate.py ----------------------------------------------------------------------------------------
def evaluate_files(row: Mapping[str, Any]) -> tuple[Any, Any, FileMetrics | None]:
    """(gold, prediction, file metrics) as ``evaluate.py`` reads and scores a row: the aliases, then
    `clean_list` on lists; metrics None (left out) when the row has no gold list."""
    gold_field = "ground_file_list" if row.get("ground_file_list") is not None else "file_list"
    pred_field = "agent_file_list" if row.get("agent_file_list") is not None else "retrieved_file_list"
    gold, pred = row.get(gold_field), row.get(pred_field)
    gold = clean_list(gold) if isinstance(gold, list) else gold
    pred = clean_list(pred) if isinstance(pred, list) else pred
    if gold is None:
        return gold, pred, None
    return gold, pred, file_list_metrics(gold, pred, gold_field=gold_field, pred_field=pred_field)


def evaluate_judge_status(ground_truth: Any, answer: Any, configured: bool) -> str | None:
    """Why ``evaluate.py`` does not ask its judge about a row (its ``api_status``), or None when it asks."""
    if not ground_truth:
        return "error_no_ground_truth"
    if not answer or not str(answer).strip():
        return "error_no_answer"
    if not configured:
        return "error_not_configured"
    return None


def evaluate_aggregate(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``evaluate.py``'s aggregate of its per-query results (each with ``judge{pred, score_0_5}``,
    ``time_ms`` and ``file_list_metrics``)."""
    scores = [r["judge"]["score_0_5"] for r in rows]
    n = len(scores)
    yes = sum(1 for r in rows if r["judge"]["pred"] == "yes")
    latencies = [t for t in (_float_or_zero(r.get("time_ms")) for r in rows) if t > 0]
    files = [r["file_list_metrics"] for r in rows if r.get("file_list_metrics") is not None]

    def mean(key: str) -> float:
        return sum(m.get(key, 0.0) for m in files) / len(files) if files else 0.0

    return {
        "total_queries": n,
        "metrics": {
            "llm_judge": {
                "mean": sum(scores) / n if n else 0.0,
                "min": min(scores) if scores else 0.0,
                "max": max(scores) if scores else 0.0,
                "count": n,
                "yes_count": yes,
                "no_count": sum(1 for r in rows if r["judge"]["pred"] == "no"),
                "pass_rate": yes / n if n else 0.0,
                "avg_latency_ms": sum(latencies) / len(latencies) if latencies else 0.0,
            }
        },
        "file_list_metrics": {
            "total_evaluated": len(files),
            "average_f1_score": mean("f1_score"),
            "average_recall": mean("recall"),
            "average_precision": mean("precision"),
            "file_hit_rate": mean("recall"),
        },
    }


def _float_or_zero(value: Any) -> float:
    try:
        return float(value) if value is not None else 0.0
    except (TypeError, ValueError):
        return 0.0


def time_ms(value: Any) -> float | None:
    """``evaluate.py``'s reading of ``time_ms``: a float, or None when it is missing or not a number."""
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


# -- run_evaluation.py ----------------------------------------------------------------------------------
def run_evaluation_file_metrics(rows: Sequence[Mapping[str, Any]]) -> list[FileMetrics | None]:
    """``run_evaluation.py``'s per-row file metrics, in row order: each row's ``query_id`` looked up
    among the rows (the last of an id wins; a row without an id is looked up as ``"q<n>"``, which
    only a row whose id is that string matches); None when the found row's ``file_list`` is empty."""
    by_id: dict[Any, Mapping[str, Any]] = {}
    for row in rows:
        key = row.get("query_id", "")
        if isinstance(key, Hashable):
            by_id[key] = row
    out: list[FileMetrics | None] = []
    for n, row in enumerate(rows, start=1):
        key = row.get("query_id", f"q{n}")
        source = by_id.get(key) if isinstance(key, Hashable) else None
        if source is None or not source.get("file_list"):
            out.append(None)
            continue
        out.append(
            file_list_metrics(
                source.get("file_list"),
                source.get("retrieved_file_list"),
                gold_field="file_list",
                pred_field="retrieved_file_list",
            )
        )
    return out


def run_evaluation_aggregate_files(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``run_evaluation.py``'s file-list summary: the mean over rows with a non-empty ``file_list``."""
    found = [
        file_list_metrics(
            r.get("file_list"), r.get("retrieved_file_list"), gold_field="file_list", pred_field="retrieved_file_list"
        )
        for r in rows
        if r.get("file_list")
    ]
    n = len(found)
    return {
        "total_evaluated": n,
        "average_f1_score": sum(m["f1_score"] for m in found) / n if n else 0.0,
        "average_recall": sum(m["recall"] for m in found) / n if n else 0.0,
        "average_precision": sum(m["precision"] for m in found) / n if n else 0.0,
    }


def execution_time(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """``run_evaluation.py``'s ``execution_time`` block over the rows' ``execution_time_ms``."""
    times = [r["execution_time_ms"] for r in rows if r.get("execution_time_ms") is not None]
    times = [t for t in times if isinstance(t, int | float) and not isinstance(t, bool)]
    if not times:
        return None
    return {"count": len(times), "total_ms": sum(times), "mean_ms": sum(times) / len(times),
            "min_ms": min(times), "max_ms": max(times)}  # fmt: skip


# -- the release judge's reply -------------------------------------------------------------------------
_OBJECT = re.compile(r"\{.*\}", re.S)
_PRED = re.compile(r'"?pred"?\s*:\s*"?\b(yes|no)\b"?', re.I)
_SCORE = re.compile(r'"?score"?\s*:\s*(\d{1,20})', re.I)  # more digits clamp to 5 all the same


@dataclass(frozen=True)
class ReleaseVerdict:
    """What the release reads from a judge's reply. ``found`` is False when neither the JSON nor the
    fallback patterns held a ``pred`` (the release then says ``no``; hippocamp calls it unparsed)."""

    pred: Literal["yes", "no"]
    score: int
    found: bool
    rationale: str | None = None


def parse_pred_score(text: str) -> ReleaseVerdict:
    """The release's reading of a judge reply: the span from the first ``{`` to the last ``}`` as JSON
    (``pred`` lowercased, anything but yes/no is ``no``; ``score`` made an int and clamped to 0–5);
    when that fails, ``pred: yes|no`` and ``score: N`` patterns anywhere; ``no`` and 0 by default."""
    text = (text or "").strip()
    match = _OBJECT.search(text)
    if match:
        try:
            obj = json.loads(match.group(0))
            pred = str(obj.get("pred", "no")).lower()
            score = int(obj.get("score", 0))
        except (ValueError, TypeError, OverflowError, AttributeError, RecursionError):
            pass
        else:
            rationale = obj.get("rationale")
            return ReleaseVerdict(
                "yes" if pred == "yes" else "no",
                max(0, min(5, score)),
                found="pred" in obj,
                rationale=rationale.strip() if isinstance(rationale, str) and rationale.strip() else None,
            )
    pred_match, score_match = _PRED.search(text), _SCORE.search(text)
    score = max(0, min(5, int(score_match.group(1)))) if score_match else 0
    if pred_match is None:
        return ReleaseVerdict("no", score, found=False)
    return ReleaseVerdict("yes" if pred_match.group(1).lower() == "yes" else "no", score, found=True)
