"""Evidence recall@k on LoCoMo (../shared/data/locomo-dev, when present): does retrieval find the
messages a question cites? FTS (BM25), vectors and hybrid, by question category.

    .venv/bin/python bench/locomo_recall.py [--k 10] [--out /tmp/hc-bench-locomo]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from _common import locomo_suite

MODES = ("fts", "vector", "hybrid")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("/tmp/hc-bench-locomo"))
    args = parser.parse_args()
    began = time.perf_counter()
    suite = locomo_suite(args.out)
    if suite is None:
        return
    from hippocamp.store.search import Searcher, SearchFilters

    print(f"{len(suite.tasks)} cases, indexed and embedded in {time.perf_counter() - began:.1f} s")
    from hippocamp.scoring.pcontext import fragment_recall

    searcher = Searcher(suite.store)
    recall: dict[str, dict[str, list[float]]] = {m: {} for m in MODES}
    latency: dict[str, list[float]] = {m: [] for m in MODES}
    for task in suite.tasks:
        case = suite.gold[task.id]
        if not case.get("supporting_fragments"):
            continue
        fragment_of = suite.personas[task.profile].fragment_of
        category = str(case.get("type"))
        for mode in MODES:
            t0 = time.perf_counter()
            hits = searcher.search(case["question"], k=args.k, filters=SearchFilters(glob=f"{task.profile}/*"),
                                   mode=mode)  # fmt: skip
            latency[mode].append(time.perf_counter() - t0)
            found = [str(h.meta.get("message_id") or h.meta.get("event_id") or "") for h in hits]
            recall[mode].setdefault(category, []).append(fragment_recall(case, found, fragment_of) or 0.0)
    suite.close()
    categories = sorted(recall["fts"])
    print(f"\nLoCoMo dev, evidence recall@{args.k} (share of cited messages retrieved), by case type\n")
    print("| retrieval | " + " | ".join(f"{c} (n={len(recall['fts'][c])})" for c in categories) + " | all | p50 ms |")
    print("|---" * (len(categories) + 3) + "|")
    for mode in MODES:
        cells = [f"{statistics.mean(recall[mode][c]):.2f}" for c in categories]
        every = [v for c in categories for v in recall[mode][c]]
        print(f"| {mode} | " + " | ".join(cells) + f" | {statistics.mean(every):.2f} | "
              f"{1000 * statistics.median(latency[mode]):.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
