"""P-ContextBench filler and decoy ablations, retrieval side: persona sets generated with one seed hold the
same cases; only the filler ratio or the decoy share differs. How much does the store's evidence
recall@k drop as filler and decoys are added? (The paper's ablations measure answer accuracy: 1:1 vs 2.5:1
filler 51.17% vs 50.49%, 30% decoys 50.0% vs 49.7%, both n.s.) Paired by case: mean difference and the
Wilcoxon signed-rank test.

    .venv/bin/python bench/pcontext_ablation.py [--n 5] [--k 10] [--modes fts,hybrid] [--out /tmp/hc-bench-ablation]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

SETTINGS = {"filler 1:1, no decoys": (1.0, 0.0), "filler 2.5:1, no decoys": (2.5, 0.0),
            "filler 2.5:1, 30% decoys": (2.5, 0.3)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5, help="personas per set")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--modes", default="fts,hybrid")
    parser.add_argument("--out", type=Path, default=Path("/tmp/hc-bench-ablation"))
    args = parser.parse_args()
    from hippocamp.benchmarks.pcontext.suite import load_pcontext_suite
    from hippocamp.runs import SuiteOptions
    from hippocamp.scoring.pcontext import retrieval_recall
    from hippocamp.scoring.stats import wilcoxon
    from hippocamp.synth.personas import SetConfig, run_set

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    per: dict[tuple[str, str], dict[str, float]] = {}
    for name, (ratio, decoys) in SETTINGS.items():
        d = args.out / f"f{ratio}-d{decoys}"
        began = time.perf_counter()
        summary = run_set(SetConfig(out=d / "set", n=args.n, seed=args.seed, filler_ratio=ratio, decoy_share=decoys))
        suite = load_pcontext_suite(
            f"pcontext:{d / 'set'}", SuiteOptions(store=d / "store.sqlite", embed="hybrid" in modes)
        )
        cases = dict(suite.gold)
        persona_of = {t.id: t.profile for t in suite.tasks}
        fragments = {t.id: suite.personas[t.profile].fragment_of for t in suite.tasks}
        suite.close()
        print(f"{name}: {summary.messages} messages, {summary.events} events, built and indexed in "
              f"{time.perf_counter() - began:.1f} s")  # fmt: skip
        for mode in modes:
            r = retrieval_recall(d / "store.sqlite", cases, persona_of, fragments, args.k, mode)
            per[(name, mode)] = r["per_case"]
    names = list(SETTINGS)
    base = names[0]
    print(f"\nP-ContextBench ablation, store evidence recall@{args.k} over the same cases ({args.n} personas, seed "
          f"{args.seed}); Δ and Wilcoxon against '{base}'\n")  # fmt: skip
    print("| retrieval | setting | cases | recall@k | Δ | Wilcoxon p |")
    print("|---|---|---|---|---|---|")
    for mode in modes:
        ref = per[(base, mode)]
        for name in names:
            mine = per[(name, mode)]
            common = sorted(set(ref) & set(mine))
            mean = statistics.mean(mine[c] for c in common)
            if name == base:
                print(f"| {mode} | {name} | {len(common)} | {mean:.3f} | | |")
                continue
            diff = statistics.mean(mine[c] - ref[c] for c in common)
            try:
                p = f"{wilcoxon([mine[c] for c in common], [ref[c] for c in common]).pvalue:.3g}"
            except ValueError:
                p = "n/a"
            print(f"| {mode} | {name} | {len(common)} | {mean:.3f} | {diff:+.3f} | {p} |")


if __name__ == "__main__":
    main()
