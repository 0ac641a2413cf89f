"""Runner overhead: how much of an episode's wall time is not the model.

    .venv/bin/python bench/harness.py [--latency 0.2,0.05] [--epochs 3] [--concurrency 4] [--agent NAME]

A small synthetic profile (``synth:small:7``, indexed without OCR, speech or embeddings) is run with
a mock model that answers after an async sleep of ``latency`` seconds per call (a realistic remote or
local model), through the real runner: episodes.jsonl with fsync per line, the manifest, the
concurrency limit. The default agent is a three-turn tool user defined here (model -> search ->
model -> read -> model -> answer, every call through `Meter`), so tool time counts as harness time.
Per episode: overhead = (wall - model) / wall; reported as median and p95 (goal: < 5 %).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hippocamp import registry
from hippocamp.agents.base import Answer, Budget, BudgetExceeded, EvidenceItem, Meter, Task
from hippocamp.models import Model
from hippocamp.models.providers.mock import MockBackend
from hippocamp.models.types import ChatRequest, Generation
from hippocamp.runs import SuiteOptions, load_suite, run

GOAL = 0.05


class SlowMock(MockBackend):
    """The mock provider, answering after ``latency`` seconds (an async sleep: no CPU)."""

    def __init__(self, latency: float):
        super().__init__(name="slow", max_concurrency=64)
        self.latency = latency

    async def complete(self, request: ChatRequest) -> Generation:
        await asyncio.sleep(self.latency)
        return await super().complete(request)


@registry.register("agent", "bench-tools")
class ToolAgent:
    """Three model turns with a search and a read between them; cites what it read."""

    name = "bench-tools"

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        meter = Meter(budget)
        messages: list[dict[str, Any]] = [{"role": "user", "content": task.question}]
        try:
            await meter.generate(model, messages)
            found = env.search(task.question, k=5)
            meter.observe("search", {"query": task.question}, found.text)
            messages.append({"role": "user", "content": found.text[:2000]})
            await meter.generate(model, messages)
            if not found.data:
                return meter.answer("", stop="no_answer")
            top = found.data[0]
            page = env.read(top["path"])
            meter.observe("read", {"path": top["path"]}, page.text)
            messages.append({"role": "user", "content": page.text[:2000]})
            final = await meter.generate(model, messages)
        except BudgetExceeded as exc:
            return meter.answer("", stop=exc.reason, error=str(exc))
        evidence = [EvidenceItem(file_path=top["path"], locator=top["locator"], text=top["text"][:200])]
        return meter.answer(final.text[:200], evidence=evidence)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def bench(suite: Any, agent: str, latency: float, epochs: int, concurrency: int, out: Path) -> dict[str, Any]:
    model = Model(SlowMock(latency), provider="mock", name="slow")
    began = time.perf_counter()
    summary = asyncio.run(run(suite, agent, model, out=out, epochs=epochs, concurrency=concurrency))
    wall = time.perf_counter() - began
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    ratios = [e["harness_s"] / e["wall_s"] for e in episodes if e["wall_s"] > 0]
    harness_ms = [e["harness_s"] * 1000 for e in episodes]
    calls = summary.calls
    return {
        "latency_ms": latency * 1000,
        "episodes": len(episodes),
        "calls_per_episode": calls / max(1, len(episodes)),
        "stops": summary.by_stop,
        "wall_median_ms": statistics.median(e["wall_s"] for e in episodes) * 1000,
        "harness_median_ms": statistics.median(harness_ms),
        "harness_p95_ms": percentile(harness_ms, 0.95),
        "overhead_median": statistics.median(ratios),
        "overhead_p95": percentile(ratios, 0.95),
        # the whole run against the time the model alone would take at this concurrency
        "run_wall_s": wall,
        "run_ideal_s": summary.model_s / concurrency,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", default="0.2,0.05", help="seconds per model call, comma-separated")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--agent", default="bench-tools")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="hippocamp-bench-harness-") as tmp:
        options = SuiteOptions(ocr=False, asr=False, embed=False, workers=2, synth_dir=Path(tmp) / "suites",
                               store=Path(tmp) / "store.sqlite")  # fmt: skip
        suite = load_suite("synth:small:7", options)
        try:
            for i, latency in enumerate(float(x) for x in args.latency.split(",")):
                out = Path(tmp) / f"run-{i}"
                rows.append(bench(suite, args.agent, latency, args.epochs, args.concurrency, out))
        finally:
            suite.close()
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"agent {args.agent}, concurrency {args.concurrency}, synth:small:7 x {args.epochs} epochs")
        print("| model latency | episodes | calls/ep | wall p50 | harness p50 | harness p95 | overhead p50 | "
              "overhead p95 | run wall / ideal |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['latency_ms']:.0f} ms | {r['episodes']} | {r['calls_per_episode']:.1f} | "
                f"{r['wall_median_ms']:.0f} ms | {r['harness_median_ms']:.1f} ms | {r['harness_p95_ms']:.1f} ms | "
                f"{r['overhead_median']:.2%} | {r['overhead_p95']:.2%} | "
                f"{r['run_wall_s']:.2f} s / {r['run_ideal_s']:.2f} s |"
            )
    worst = max(r["overhead_median"] for r in rows if r["latency_ms"] >= 200) if rows else 0.0
    print(f"goal: median overhead < {GOAL:.0%} at >= 200 ms per call: {'met' if worst < GOAL else 'MISSED'}",
          file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
