"""Agents on LoCoMo (../shared/data/locomo-dev, when present): answer accuracy by question category of
`rag` and `evidence` with the strongest local model, scored by the P-ContextBench guard layer (with
--judge, guard + the Pass-2 judge model).

    .venv/bin/python bench/locomo_agents.py [--per-type 8] [--agents rag,evidence]
        [--model local:qwen2.5-coder-1.5b] [--judge MODEL] [--out /tmp/hc-bench-locomo]

Imports the dev slice into --out/personas (`hippocamp import locomo`), indexes it (BM25 + the default
embedder), runs each agent over a stratified sample of --per-type cases of each category into its own
resumable run directory (--out/AGENT, the same as `hippocamp run --suite pcontext:OUT/personas --agent
AGENT --per-type K --concurrency 1 --out OUT/AGENT --store OUT/store.sqlite`), scores it (the guard
layer; with --judge a model also decides what the guard cannot) and prints one table by category.

"answer" is the answer alone (LoCoMo's measure: the gold label is covered, citations aside);
"correct" is P-ContextBench's, which also needs a cited supporting message; "cited" the share of the
gold evidence messages the answer cites, "seen" the share its tools showed it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

from _common import locomo_suite

CATEGORY = {"T1": "single-hop (4)", "T2": "multi-hop (1)", "T3": "temporal (2)", "T4": "open-domain (3)",
            "abstain": "adversarial (5)"}  # fmt: skip


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-type", type=int, default=8)
    parser.add_argument("--agents", default="rag,evidence")
    parser.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    parser.add_argument("--judge", default=None, help="a model that also judges paraphrased key items")
    parser.add_argument("--out", type=Path, default=Path("/tmp/hc-bench-locomo"))
    args = parser.parse_args()
    suite = locomo_suite(args.out)
    if suite is None:
        return
    from hippocamp.models import get_model
    from hippocamp.runs import run
    from hippocamp.scoring.judge import Judge
    from hippocamp.scoring.run_scores import load_scores, score_run

    judge = Judge(get_model(args.judge), mode="robust") if args.judge else Judge(None, mode="facts")
    tables: dict[str, dict[str, dict[str, float | None]]] = {}
    for agent in [a.strip() for a in args.agents.split(",") if a.strip()]:
        out = args.out / agent
        t0 = time.perf_counter()
        summary = asyncio.run(run(suite, agent, args.model, out=out, per_type=args.per_type, concurrency=1))
        report = asyncio.run(score_run(out, judge, concurrency=1))
        seconds = sorted(s.seconds for s in load_scores(out) if s.seconds is not None)
        s = report.summary
        rows: dict[str, dict[str, float | None]] = {}
        for ctype, t in s["by_type"].items():
            rows[ctype] = {"n": t["n"], "answer": t["answer_accuracy"], "correct": t["accuracy"]}
        rows["all"] = {"n": s["episodes"], "answer": s["answer_accuracy"], "correct": s["accuracy"],
                       "cited": s["evidence_recall"], "seen": s["seen_recall"],
                       "median_s": seconds[len(seconds) // 2] if seconds else None}  # fmt: skip
        tables[agent] = rows
        print(json.dumps({"agent": agent, "stops": summary.by_stop, "unscored": s["unscored"],
                          "wall_s": round(time.perf_counter() - t0, 1), **rows["all"]}), file=sys.stderr)  # fmt: skip
    suite.close()
    types = [t for t in CATEGORY if any(t in rows for rows in tables.values())]
    scorer = f"guard + {args.judge}" if args.judge else "guard"
    print(f"\nLoCoMo dev, {args.per_type} cases per category, model {args.model}, {scorer}: answer accuracy "
          "(correct with a cited message)\n")  # fmt: skip
    print("| agent | " + " | ".join(CATEGORY[t] for t in types) + " | all | cited | seen | median s |")
    print("|---" * (len(types) + 5) + "|")
    for agent, rows in tables.items():
        cells = [f"{_pct(rows[t]['answer'])} ({_pct(rows[t]['correct'])})" if t in rows else "" for t in types]
        a = rows["all"]
        median = "n/a" if a["median_s"] is None else f"{a['median_s']:.0f}"
        print(f"| {agent} | " + " | ".join(cells) + f" | {_pct(a['answer'])} ({_pct(a['correct'])}) | "
              f"{_pct(a['cited'])} | {_pct(a['seen'])} | {median} |")  # fmt: skip


if __name__ == "__main__":
    main()
