"""Agents on FinanceBench (../shared/data/financebench-dev, when present): answer accuracy and file F1
of `rag`, `react` and `evidence` with the strongest local model, judged by the robust judge.

    .venv/bin/python bench/agents_financebench.py [--limit 10] [--agents rag,react,evidence]
        [--model local:qwen2.5-coder-1.5b] [--judge-model SAME] [--out /tmp/hc-bench-agents]

Imports the dev slice into --out (hard links), indexes it (BM25 + the default embedder), runs each
agent into its own resumable run directory and scores it; prints one table. Re-running resumes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "financebench-dev"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--agents", default="rag,react,evidence")
    parser.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    parser.add_argument("--judge-model", default=None)
    parser.add_argument("--out", type=Path, default=Path("/tmp/hc-bench-agents"))
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--max-steps", type=int, default=8)
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"skipped: {DATA} is not here")
        return
    from hippocamp.agents.base import Budget
    from hippocamp.importers.financebench import import_financebench
    from hippocamp.models import get_model
    from hippocamp.runs import SuiteOptions, load_suite, run
    from hippocamp.scoring.judge import Judge
    from hippocamp.scoring.run_scores import score_run

    profile = args.out / "profile"
    if not (profile / "Finance.json").is_file():
        import_financebench(DATA, profile)
    began = time.perf_counter()
    suite = load_suite(str(profile), SuiteOptions(ocr=False, asr=False, store=args.out / "store.sqlite"))
    print(f"suite: {len(suite.tasks)} questions, indexed in {time.perf_counter() - began:.1f} s", file=sys.stderr)
    budget = Budget(max_steps=args.max_steps, k=args.k, max_tokens=40_000, max_seconds=900)
    rows = []
    for agent in [a.strip() for a in args.agents.split(",") if a.strip()]:
        out = args.out / "runs" / agent
        t0 = time.perf_counter()
        summary = asyncio.run(run(suite, agent, args.model, out=out, limit=args.limit, concurrency=1, budget=budget))
        judge = Judge(get_model(args.judge_model or args.model), mode="robust")
        report = asyncio.run(score_run(out, judge, concurrency=1))
        s = report.summary
        rows.append(
            {
                "agent": agent,
                "questions": s["episodes"],
                "accuracy": s["question_weighted"]["mean"],
                "unscored": s["unscored"],
                "file_f1": s["file_f1_hippocamp"],
                "au_recall": s["au_recall"],
                "median_s": s["usage"]["seconds"]["median"],
                "stops": summary.by_stop,
                "wall_s": round(time.perf_counter() - t0, 1),
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr)
    suite.close()
    print(f"\nFinanceBench dev, first {args.limit} questions, model {args.model}, judge robust\n")
    print("| agent | questions | accuracy | unscored | file F1 | AU recall | median s/question |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        acc = "n/a" if r["accuracy"] is None else f"{100 * r['accuracy']:.0f}%"
        au = "n/a" if r["au_recall"] is None else f"{100 * r['au_recall']:.0f}%"
        print(f"| {r['agent']} | {r['questions']} | {acc} | {r['unscored']} | {100 * r['file_f1']:.0f}% | {au} | "
              f"{r['median_s']:.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
