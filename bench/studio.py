"""hippocamp studio: time to the first render of an episode page and of a PDF page (p50 over 50 requests)
on the medium synthetic profile, and the server's memory after opening 1,000 episodes.

    .venv/bin/python bench/studio.py

Generates the medium synthetic profile (seed 11), runs a scripted agent (answers with the gold answer and
cites the gold files; no model) over its questions for enough epochs to reach 1,000 episodes, then, in
process, opens the studio on the run and requests every episode page once (each a first render: its
evidence is rasterised then) and 50 distinct PDF pages through the file view. Prints medians and the
resident memory before and after opening the run (from /proc/self/status).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return float(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    from starlette.testclient import TestClient

    from hippocamp.agents.base import Answer, Budget, EvidenceItem, Meter, Task
    from hippocamp.registry import register
    from hippocamp.runs import SuiteOptions, load_suite, run
    from hippocamp.studio.app import Studio, create_app
    from hippocamp.synth.build import generate

    @register("agent", "bench-studio")
    class Scripted:
        """The gold answer and files, one tool step."""

        name: ClassVar[str] = "bench-studio"
        gold: ClassVar[dict[str, Any]] = {}

        async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
            meter = Meter(budget)
            record = self.gold[task.id]
            meter.observe("search", {"query": task.question}, "hits: " + ", ".join(record.file_path))
            return meter.answer(record.answer, evidence=[EvidenceItem(file_path=e.file_path) for e in record.evidence])

    with tempfile.TemporaryDirectory(prefix="hc-studio-bench-") as tmp_name:
        tmp = Path(tmp_name)
        made = generate(tmp / "synth", seed=11, scale="medium")
        suite = load_suite(str(tmp / "synth"), SuiteOptions(ocr=False, asr=False, embed=False, store=tmp / "s.sqlite"))
        Scripted.gold = suite.gold
        epochs = -(-1000 // len(suite.gold))
        out = tmp / "run"
        asyncio.run(run(suite, "bench-studio", "mock", out=out, epochs=epochs))
        suite.close()
        before = _rss_mb()
        began = time.perf_counter()
        studio = Studio.open([out])
        opened = time.perf_counter() - began
        client = TestClient(create_app(studio))
        rows = list(studio.runs["r0"].rows)
        after_open = _rss_mb()
        episode_times = []
        for eid in rows[:50]:
            studio.pictures.clear()  # a first render: nothing cached from an earlier page
            studio.rendered.clear()
            t0 = time.perf_counter()
            assert client.get(f"/runs/r0/episodes/{eid}").status_code == 200
            episode_times.append(time.perf_counter() - t0)
        pdfs = sorted(p.relative_to(tmp / "synth" / made.name).as_posix()
                      for p in (tmp / "synth" / made.name).rglob("*.pdf"))  # fmt: skip
        page_times = []
        for i in range(50):
            rel = pdfs[i % len(pdfs)]
            loc = json.dumps({"unit": "page", "position": {"system_page": 1 + (i // len(pdfs)) % 2}})
            studio.pictures.clear()
            t0 = time.perf_counter()
            assert client.get(f"/view/p0/{rel}", params={"loc": loc}).status_code == 200
            page_times.append(time.perf_counter() - t0)
        for eid in rows:
            client.get(f"/runs/r0/episodes/{eid}")
        after_all = _rss_mb()
        print(f"## studio: medium synthetic profile ({made.files} files), {len(rows)} episodes\n")
        print("| measure | value |")
        print("|---|---|")
        print(f"| open the run (read {len(rows)} episodes, scores, gold) | {opened:.2f} s |")
        print(f"| episode page, first render, p50 of 50 | {statistics.median(episode_times) * 1000:.0f} ms |")
        print(f"| episode page, first render, max of 50 | {max(episode_times) * 1000:.0f} ms |")
        print(f"| PDF page view, first render, p50 of 50 | {statistics.median(page_times) * 1000:.0f} ms |")
        print(f"| resident memory: before / run opened / all {len(rows)} episode pages served | "
              f"{before:.0f} / {after_open:.0f} / {after_all:.0f} MB |")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
