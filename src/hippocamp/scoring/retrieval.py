"""Retrieval alone, measured: does the store's search find a question's evidence, and how fast?

For every task of a suite with gold evidence, the question is the query (searched within its profile
or persona) and the top hits are compared with the gold:

* **HippoCamp suites** (profiles, imports such as FinanceBench, ``synth:``): file recall@k (the share of
  the gold files that some top-k hit comes from) and unit recall@k (the share of the gold evidence's
  atomic units, `hippocamp.scoring.evidence.atomic_units`, that some top-k hit's unit matches: a page
  hit matches a page, a time span an overlapping span; evidence without a locator is a whole-file
  unit, so a hit anywhere in that file matches it);
* with ``rank_files`` (HippoCamp suites), **ranked-file recall@k**: the share of the gold files among
  the top k of the file ranking (`hippocamp.store.search.Searcher.search_files`), which answers "which
  file" where the segment ranking answers "which page";
* **P-ContextBench suites** (personas, LoCoMo imports): unit recall@k is the share of the case's
  supporting messages and events reached (`hippocamp.scoring.pcontext.fragment_recall`); there are no
  files to recall.

Per search mode (``fts``, ``vector``, ``hybrid``): the means over tasks at each k, by task category
(QA type or case type), and the latency p50/p95 of one search. `evaluate` returns it all;
`format_table` prints it as Markdown.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hippocamp.scoring.evidence import AtomicUnit, atomic_units, units_match

__all__ = ["ModeResult", "RetrievalCase", "cases_of", "evaluate", "format_table"]


@dataclass
class RetrievalCase:
    """One query and its gold: files and units (HippoCamp), or fragments (P-ContextBench)."""

    id: str
    query: str
    category: str
    #: the search is confined to these files (a persona's logs); None: the whole store
    glob: str | None = None
    gold_files: list[str] = field(default_factory=list)
    gold_units: list[AtomicUnit] = field(default_factory=list)
    #: P-ContextBench: the case (with ``supporting_fragments``) and its persona's message -> fragment map
    case: dict[str, Any] | None = None
    fragment_of: dict[str, str] = field(default_factory=dict)
    #: which of the suite's stores to search (a release import has one per profile)
    part: str = ""


@dataclass
class ModeResult:
    """One search mode over all cases: mean recall at each k, overall and by category, and latency."""

    mode: str
    n: int
    file_recall: dict[int, float | None]
    unit_recall: dict[int, float | None]
    by_category: dict[str, dict[int, float | None]]
    p50_ms: float
    p95_ms: float
    #: recall@k of the gold files among the top k of the file ranking (None: not measured)
    ranked_file_recall: dict[int, float | None] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "n": self.n, "file_recall": self.file_recall, "unit_recall": self.unit_recall,
                "ranked_file_recall": self.ranked_file_recall, "by_category": self.by_category,
                "p50_ms": self.p50_ms, "p95_ms": self.p95_ms}  # fmt: skip


def cases_of(suite: Any) -> list[RetrievalCase]:
    """The retrieval cases of a loaded suite (`hippocamp.runs.load_suite`): one per task with gold
    evidence."""
    out: list[RetrievalCase] = []
    personas = getattr(suite, "personas", None)
    for task in suite.tasks:
        gold = suite.gold.get(task.id)
        if gold is None:
            continue
        if personas is not None and isinstance(gold, dict):
            if not gold.get("supporting_fragments"):
                continue
            persona = personas.get(task.profile)
            out.append(RetrievalCase(task.id, str(gold.get("question") or task.question), str(gold.get("type") or "?"),
                                     glob=f"{task.profile}/*", case=gold,
                                     fragment_of=getattr(persona, "fragment_of", {}) or {}))  # fmt: skip
            continue
        files = list(dict.fromkeys(getattr(gold, "file_path", []) or []))
        if not files:
            continue
        units = atomic_units(getattr(gold, "evidence", []) or []) or atomic_units(files)
        category = str(getattr(gold, "qa_type", None) or task.meta.get("qa_type") or "?")
        out.append(RetrievalCase(task.id, task.question, category, gold_files=files, gold_units=units,
                                 part=task.profile))  # fmt: skip
    return out


def _hit_id(hit: Any) -> str:
    meta = hit.meta or {}
    return str(meta.get("message_id") or meta.get("event_id") or "")


def _hit_units(hits: Sequence[Any]) -> list[AtomicUnit]:
    items = []
    for h in hits:
        locator = h.locator.dump() if hasattr(h.locator, "dump") else h.locator
        items.append({"file_path": h.path, "locator": locator})
    return atomic_units(items)


def _recalls(case: RetrievalCase, hits: Sequence[Any], ks: Sequence[int]) -> tuple[dict[int, float | None], dict]:
    from hippocamp.scoring.evidence import normalize_path
    from hippocamp.scoring.pcontext import fragment_recall

    files: dict[int, float | None] = {}
    units: dict[int, float | None] = {}
    for k in ks:
        top = hits[:k]
        if case.case is not None:
            files[k] = None
            units[k] = fragment_recall(case.case, [_hit_id(h) for h in top], case.fragment_of)
            continue
        found = {normalize_path(h.path) for h in top}
        gold = {normalize_path(f) for f in case.gold_files}
        files[k] = len(gold & found) / len(gold) if gold else None
        predicted = _hit_units(top)
        matched = sum(1 for g in case.gold_units if any(units_match(p, g) for p in predicted))
        units[k] = matched / len(case.gold_units) if case.gold_units else None
    return files, units


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def evaluate(
    search: Callable[[RetrievalCase, str, int], list[Any]],
    cases: Sequence[RetrievalCase],
    modes: Sequence[str] = ("fts", "vector", "hybrid"),
    ks: Sequence[int] = (1, 5, 10),
    rank_files: Callable[[RetrievalCase, str, int], list[str]] | None = None,
) -> list[ModeResult]:
    """Recall@k and latency of ``search(case, mode, k)`` (hits in rank order) over ``cases``, per mode;
    with ``rank_files(case, mode, k)`` (paths in rank order) also the ranked-file recall@k."""
    from hippocamp.scoring.evidence import normalize_path

    top = max(ks)
    results = []
    for mode in modes:
        per_file: list[dict[int, float | None]] = []
        per_unit: list[dict[int, float | None]] = []
        categories: dict[str, list[dict[int, float | None]]] = {}
        seconds: list[float] = []
        ranked: list[dict[int, float | None]] = []
        for case in cases:
            began = time.perf_counter()
            hits = search(case, mode, top)
            seconds.append(time.perf_counter() - began)
            files, units = _recalls(case, hits, ks)
            if rank_files is not None and case.gold_files:
                order = [normalize_path(p) for p in rank_files(case, mode, top)]
                gold = {normalize_path(f) for f in case.gold_files}
                ranked.append({k: len(gold & set(order[:k])) / len(gold) for k in ks})
            per_file.append(files)
            per_unit.append(units)
            categories.setdefault(case.category, []).append(units)
        ms = sorted(1000 * s for s in seconds) or [0.0]
        results.append(
            ModeResult(
                mode=mode,
                n=len(cases),
                file_recall={k: _mean(r[k] for r in per_file) for k in ks},
                unit_recall={k: _mean(r[k] for r in per_unit) for k in ks},
                by_category={c: {k: _mean(r[k] for r in rows) for k in ks} for c, rows in sorted(categories.items())},
                p50_ms=statistics.median(ms),
                p95_ms=ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))],
                ranked_file_recall={k: _mean(r[k] for r in ranked) for k in ks} if ranked else {},
            )
        )
    return results


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def format_table(results: Sequence[ModeResult], ks: Sequence[int]) -> list[str]:
    """The results as Markdown: one row per mode, file and unit recall at each k, latency."""
    has_files = any(v is not None for r in results for v in r.file_recall.values())
    has_ranked = any(r.ranked_file_recall for r in results)
    header = ["mode"]
    if has_files:
        header += [f"file R@{k}" for k in ks]
    if has_ranked:
        header += [f"ranked file R@{k}" for k in ks]
    header += [f"unit R@{k}" for k in ks] + ["p50 ms", "p95 ms"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in results:
        cells = [r.mode]
        if has_files:
            cells += [_cell(r.file_recall[k]) for k in ks]
        if has_ranked:
            cells += [_cell(r.ranked_file_recall.get(k)) for k in ks]
        cells += [_cell(r.unit_recall[k]) for k in ks] + [f"{r.p50_ms:.1f}", f"{r.p95_ms:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    categories = sorted({c for r in results for c in r.by_category})
    if len(categories) > 1:
        k = max(ks)
        lines += ["", f"unit recall@{k} by category", "", "| mode | " + " | ".join(categories) + " |",
                  "|" + "---|" * (len(categories) + 1)]  # fmt: skip
        for r in results:
            lines.append(
                f"| {r.mode} | " + " | ".join(_cell(r.by_category.get(c, {}).get(k)) for c in categories) + " |"
            )
    return lines
