"""Optional variety from a language model: rewrite the unkeyed lines of filler notes.

Only lines no question cites (``Line.key is None``) of artifacts marked ``enrich`` are ever
rewritten, so no answer or locator can change. A model that fails, or answers with the wrong number
of lines, leaves that file as the templates wrote it; generation never stops for it. With a
temperature of 0 and the request cache, the same model gives the same files.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any

from hippocamp.synth.plan import Plan
from hippocamp.synth.render import Line

__all__ = ["EnrichReport", "enrich_plan"]

log = logging.getLogger(__name__)

SYSTEM = (
    "You rewrite short personal notes so they read like a real person wrote them. Keep the meaning of "
    "every line, keep list markers such as '- ', keep exactly the same number of lines, one per line, "
    "and answer with the lines only."
)


class EnrichReport(dict[str, int]):
    """Counts: ``rewritten`` files, ``kept`` (model answer unusable), ``failed`` (model error)."""


def _editable(lines: list[Line]) -> list[int]:
    return [
        i for i, line in enumerate(lines) if line.key is None and line.text.strip() and not line.text.startswith("#")
    ]


async def _one(model: Any, lines: list[Line], idx: list[int]) -> list[str] | None:
    prompt = "\n".join(lines[i].text for i in idx)
    gen = await model.generate(
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}], temperature=0.0, max_tokens=400
    )
    new = [x.strip() for x in gen.text.strip().splitlines() if x.strip()]
    if len(new) != len(idx) or any(len(x) > 200 or "\t" in x for x in new):
        return None
    out = []
    for i, text in zip(idx, new, strict=True):
        bullet = lines[i].text.startswith("- ")
        text = text.lstrip("-*• ").strip()
        out.append(f"- {text}" if bullet else text)
    return out


def enrich_plan(plan: Plan, model: Any, concurrency: int = 4) -> EnrichReport:
    """Rewrite the filler notes of ``plan`` in place with ``model`` (a `hippocamp.models.Model`)."""
    report = EnrichReport(rewritten=0, kept=0, failed=0)
    targets = [a for a in plan.artifacts.values() if a.spec.get("enrich") and a.renderer == "text"]

    async def run() -> None:
        sem = asyncio.Semaphore(concurrency)

        async def one(artifact: Any) -> None:
            lines: list[Line] = artifact.spec["lines"]
            idx = _editable(lines)
            if not idx:
                return
            async with sem:
                try:
                    new = await _one(model, lines, idx)
                except Exception as exc:  # an outage leaves the template text; generation goes on
                    log.warning("enrich %s: %s", artifact.path, exc)
                    report["failed"] += 1
                    return
            if new is None:
                report["kept"] += 1
                return
            edited = list(lines)
            for i, text in zip(idx, new, strict=True):
                edited[i] = replace(lines[i], text=text)
            artifact.spec["lines"] = edited
            report["rewritten"] += 1

        await asyncio.gather(*(one(a) for a in targets))

    asyncio.run(run())
    return report
