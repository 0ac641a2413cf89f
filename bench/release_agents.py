"""The release's baselines beside ours on FinanceBench (../shared/data/financebench-dev, when present):
accuracy, File F1 under the cited, touched and retrieved lists, and seconds per question.

    .venv/bin/python bench/release_agents.py [--limit 10]
        [--agents rag,rag-standard,rag-hyde,rag-corrective,terminal@emulated,terminal@jail]
        [--model local:qwen2.5-coder-1.5b] [--out /tmp/hc-bench-release]

``AGENT@BACKEND`` runs an agent with that terminal (``emulated`` or ``jail``). Imports the dev slice into
--out (hard links), indexes it once (BM25 + the default embedder), runs each agent into its own
resumable run directory, scores it with the robust judge (the same model) and prints one table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "financebench-dev"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--agents", default="rag,rag-standard,rag-hyde,rag-corrective,terminal@emulated,terminal@jail")
    parser.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    parser.add_argument("--out", type=Path, default=Path("/tmp/hc-bench-release"))
    parser.add_argument("--max-steps", type=int, default=10)
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
    budget = Budget(max_steps=args.max_steps, max_tokens=40_000, max_seconds=900)
    model = get_model(args.model)
    rows = []
    for spec in [a.strip() for a in args.agents.split(",") if a.strip()]:
        agent, _, backend = spec.partition("@")
        options = SuiteOptions(ocr=False, asr=False, store=args.out / "store.sqlite", terminal=backend or "auto")
        suite = load_suite(str(profile), options)
        out = args.out / "runs" / spec.replace("@", "-")
        began = time.perf_counter()
        summary = asyncio.run(run(suite, agent, model, out=out, limit=args.limit, concurrency=1, budget=budget))
        suite.close()
        report = asyncio.run(score_run(out, Judge(model, mode="robust"), concurrency=1))
        s = report.summary
        lists = (s.get("file_lists") or {}).get("hippocamp") or {}
        rows.append(
            {
                "agent": spec,
                "questions": s["episodes"],
                "accuracy": s["question_weighted"]["mean"],
                "unscored": s["unscored"],
                "f1_cited": (lists.get("cited") or {}).get("f1"),
                "f1_touched": (lists.get("touched") or {}).get("f1"),
                "f1_retrieved": (lists.get("retrieved") or {}).get("f1"),
                "median_s": s["usage"]["seconds"]["median"],
                "stops": summary.by_stop,
                "wall_s": round(time.perf_counter() - began, 1),
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr)
    print(f"\nFinanceBench dev, first {args.limit} questions, model {args.model}, judge robust (same model)\n")
    print("| agent | questions | accuracy | unscored | F1 cited | F1 touched | F1 retrieved | median s/question |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['agent']} | {r['questions']} | {_pct(r['accuracy'])} | {r['unscored']} | {_pct(r['f1_cited'])} | "
              f"{_pct(r['f1_touched'])} | {_pct(r['f1_retrieved'])} | {r['median_s']:.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
