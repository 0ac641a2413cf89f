"""Generate a synthetic profile: world → stories → filler → calendar → (enrich) → render → records.

``generate(out, persona=..., seed=..., scale=...)`` writes the HippoCamp release layout into ``out``:
``<Name>/`` (the file tree), ``<Name>.json`` (the gold records, release spelling),
``<Name>_files.xlsx`` (per-file times and places) and ``<Name>.synth`` (JSON: how it was made, and
per question the story kind and the facts readable at the cited locators). Same arguments, same
bytes: every file, the records and the metadata workbook.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hippocamp.paths import process_context
from hippocamp.schema.filetypes import extension, modality_of
from hippocamp.synth.filler import add_filler
from hippocamp.synth.plan import Artifact, Ask, Plan
from hippocamp.synth.render import Placements
from hippocamp.synth.render.text import CalEvent
from hippocamp.synth.stories import SCALES, Context, all_stories, calendar_path
from hippocamp.synth.world import build_world

__all__ = ["RENDERERS", "SynthError", "SynthResult", "generate", "make_plan"]

SYNTH_VERSION = "1"

#: renderer name -> (module, function); each is called as fn(absolute_path, **spec) -> Placements
RENDERERS: dict[str, tuple[str, str]] = {
    "pdf": ("hippocamp.synth.render.docs", "render_pdf"),
    "docx": ("hippocamp.synth.render.docs", "render_docx"),
    "xlsx": ("hippocamp.synth.render.docs", "render_xlsx"),
    "pptx": ("hippocamp.synth.render.docs", "render_pptx"),
    "image": ("hippocamp.synth.render.media", "render_image"),
    "speech": ("hippocamp.synth.render.media", "render_speech"),
    "video": ("hippocamp.synth.render.media", "render_video"),
    "text": ("hippocamp.synth.render.text", "render_text"),
    "eml": ("hippocamp.synth.render.text", "render_eml"),
    "ics": ("hippocamp.synth.render.text", "render_ics"),
    "json": ("hippocamp.synth.render.text", "render_json"),
    "csv": ("hippocamp.synth.render.text", "render_csv"),
    "copy": ("hippocamp.synth.build", "render_copy"),
}


class SynthError(Exception):
    """A profile could not be generated (names the file and the step)."""


@dataclass
class SynthResult:
    out: Path
    name: str
    files: int
    questions: int
    seconds: float
    by_modality: dict[str, int] = field(default_factory=dict)
    extensions: list[str] = field(default_factory=list)


def render_copy(path: Path, *, source: str, root: str) -> Placements:
    """A byte-identical copy of an already rendered file (a near-duplicate download)."""
    shutil.copyfile(Path(root) / source, path)
    return {}


def _calendar(ctx: Context) -> None:
    """The shared calendar: the stories' events plus weekly work or study blocks and family dates."""
    w, rng = ctx.world, ctx.rng("calendar")
    events = list(ctx.events)
    first_monday = w.start + timedelta(days=(0 - w.start.weekday()) % 7)
    t = w.at(first_monday, 9, 30)
    events.append(
        CalEvent(
            "standup@synth",
            f"Weekly planning ({w.org})",
            t,
            t + timedelta(minutes=45),
            w.places["work"].name,
            rrule=f"FREQ=WEEKLY;BYDAY=MO;UNTIL={w.end:%Y%m%d}T235959",
        )
    )
    sibling, parent = w.person("sibling"), w.person("parent")
    sunday = w.start + timedelta(days=(6 - w.start.weekday()) % 7)
    call = w.at(sunday, 18)
    events.append(
        CalEvent(
            "family-call@synth",
            f"Call with {parent.first}",
            call,
            call + timedelta(minutes=30),
            rrule=f"FREQ=WEEKLY;BYDAY=SU;INTERVAL=2;UNTIL={w.end:%Y%m%d}T235959",
        )
    )
    bday = w.at(w.start + timedelta(days=rng.randint(10, (w.end - w.start).days - 5)), 19)
    events.append(
        CalEvent(
            "sibling-bday@synth",
            f"{sibling.first}'s birthday dinner",
            bday,
            bday + timedelta(hours=3),
            w.places["restaurant"].name,
        )
    )
    events.sort(key=lambda e: (e.start, e.uid))
    stamp = w.at(w.start, 8)
    ctx.add(
        calendar_path(w), "ics", stamp, w.at(w.end, 20), events=events, name=f"{w.owner.first} personal", stamp=stamp
    )


def make_plan(seed: int, persona: str, scale: str) -> tuple[Context, Plan]:
    """Everything to render and ask, without rendering anything."""
    if scale not in SCALES:
        raise SynthError(f"unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
    sc = SCALES[scale]
    world = build_world(seed, persona, sc.months)
    ctx = Context(world, Plan(), sc)
    for story in all_stories():
        for instance in range(min(story.repeats, sc.repeat)):
            ctx.instance = instance
            story.tell(ctx)
    ctx.instance = 0
    add_filler(ctx)
    _calendar(ctx)
    for ask in ctx.plan.asks:
        for cite in ask.evidence:
            if cite.path not in ctx.plan.artifacts:
                raise SynthError(f"question {ask.question!r} cites {cite.path!r}, which nothing renders")
    return ctx, ctx.plan


def _render_one(root: str, artifact: Artifact) -> tuple[str, Placements]:
    module, name = RENDERERS[artifact.renderer]
    fn: Callable[..., Placements] = getattr(importlib.import_module(module), name)
    target = Path(root) / artifact.path
    target.parent.mkdir(parents=True, exist_ok=True)
    spec = {k: v for k, v in artifact.spec.items() if k != "enrich"}
    if artifact.renderer == "copy":
        spec["root"] = root
    if spec.get("attachments"):  # attachments name files of the profile, rendered before the message
        spec["attachments"] = [(name, str(Path(root) / rel)) for name, rel in spec["attachments"]]
    try:
        placed = fn(target, **spec)
    except Exception as exc:  # a generator bug: name the file and the renderer
        raise SynthError(f"{artifact.path}: the {artifact.renderer} renderer failed: {exc}") from exc
    stamp = artifact.modified.replace(tzinfo=UTC).timestamp()
    os.utime(target, (stamp, stamp))
    return artifact.path, placed


def _render_all(
    root: Path, plan: Plan, jobs: int, progress: Callable[[int, int], None] | None
) -> dict[str, Placements]:
    placements: dict[str, Placements] = {}
    pending = dict(plan.artifacts)
    total, done = len(pending), 0
    while pending:
        ready = [a for a in pending.values() if all(n in placements for n in a.needs)]
        if not ready:
            raise SynthError(f"artifacts wait on each other: {sorted(pending)[:5]}")
        if jobs > 1 and len(ready) > 4:
            with ProcessPoolExecutor(max_workers=jobs, mp_context=process_context()) as pool:  # type: ignore[arg-type]
                futures = [pool.submit(_render_one, str(root), a) for a in ready]
                for fut in futures:
                    path, placed = fut.result()
                    placements[path] = placed
                    done += 1
                    if progress:
                        progress(done, total)
        else:
            for a in ready:
                path, placed = _render_one(str(root), a)
                placements[path] = placed
                done += 1
                if progress:
                    progress(done, total)
        for a in ready:
            del pending[a.path]
    return placements


def _record(name: str, index: int, ask: Ask, placements: dict[str, Placements]) -> dict[str, Any]:
    evidence = []
    for i, cite in enumerate(ask.evidence):
        placed = placements.get(cite.path, {})
        missing = [k for k in cite.keys if k not in placed]
        if missing:
            raise SynthError(f"{cite.path}: keys {missing} were not rendered (question {ask.question!r})")
        locators, texts = [], []
        for key in cite.keys:
            loc = placed[key].locator
            if loc not in locators:
                locators.append(loc)
            texts.append(placed[key].text)
        evidence.append(
            {
                "evidence_id": i + 1,
                "file_path": cite.path,
                "modality_type": modality_of(cite.path) or "text",
                "evidence_text": cite.note or " | ".join(texts),
                "evidence_locator": locators,
            }
        )
    paths = list(dict.fromkeys(c.path for c in ask.evidence))
    cap = {"search": ask.search, "evidence_perception": ask.perception, "reasoning": ask.reasoning}
    return {
        "id": f"{name.lower()}_{index:03d}",
        "question": ask.question,
        "answer": ask.answer,
        "QA_type": ask.qa_type,
        "profiling_type": ask.profiling_type,
        "data_source": name,
        "file_path": paths,
        "file_number": len(paths),
        "file_modality": sorted({modality_of(p) or "text" for p in paths}),
        "file_type": list(dict.fromkeys(extension(p) for p in paths)),
        "agent_cap": json.dumps(cap),
        "evidence": evidence,
        "rationale": [{"rationale_text": text, "evidence_id": ids} for text, ids in ask.steps],
    }


def _files_xlsx(path: Path, plan: Plan) -> None:
    import xlsxwriter

    from hippocamp.synth.render.docs import normalize_zip

    wb = xlsxwriter.Workbook(str(path), {"default_date_format": "yyyy-mm-dd hh:mm:ss"})
    wb.set_properties({"created": datetime(2000, 1, 1, tzinfo=UTC)})
    ws = wb.add_worksheet("files")
    ws.write_row(0, 0, ["FilePath", "FileType", "creation_date", "modification_date", "location"])
    folders = sorted({str(Path(p).parent) for p in plan.artifacts} - {"."})
    row = 1
    for folder in folders:
        ws.write_row(row, 0, [folder, "folder"])
        row += 1
    for rel in sorted(plan.artifacts):
        a = plan.artifacts[rel]
        ws.write_string(row, 0, rel)
        ws.write_string(row, 1, extension(rel))
        ws.write_datetime(row, 2, a.created)
        ws.write_datetime(row, 3, a.modified)
        if a.location:
            ws.write_string(row, 4, a.location)
        row += 1
    ws.set_column(0, 0, 60)
    ws.set_column(2, 3, 20)
    wb.close()
    normalize_zip(path)


def generate(
    out: str | Path,
    *,
    persona: str = "professional",
    seed: int = 0,
    scale: str = "small",
    model: Any = None,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SynthResult:
    """Write a synthetic profile into ``out`` (created; refused when it holds other files)."""
    began = time.perf_counter()
    ctx, plan = make_plan(seed, persona, scale)
    name = ctx.world.owner.first
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        if not any(p.suffix == ".synth" for p in out.iterdir()):
            raise SynthError(f"{out}: the folder is not empty and holds no generated profile; refusing to overwrite")
        shutil.rmtree(out)
    root = out / name
    root.mkdir(parents=True)
    if model is not None:
        from hippocamp.synth.enrich import enrich_plan

        enrich_plan(plan, model)
    placements = _render_all(root, plan, jobs or min(2, os.cpu_count() or 1), progress)
    records = [_record(name, i + 1, ask, placements) for i, ask in enumerate(plan.asks)]
    (out / f"{name}.json").write_text(json.dumps(records, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    _files_xlsx(out / f"{name}_files.xlsx", plan)
    by_modality: dict[str, int] = {}
    for rel in plan.artifacts:
        m = modality_of(rel) or "other"
        by_modality[m] = by_modality.get(m, 0) + 1
    exts = sorted({extension(p) for p in plan.artifacts})
    manifest = {
        "format": f"hippocamp-synth/{SYNTH_VERSION}",
        "seed": seed,
        "persona": persona,
        "scale": scale,
        "model": getattr(model, "id", None) if model is not None else None,
        "owner": ctx.world.owner.name,
        "period": [ctx.world.start.isoformat(), ctx.world.end.isoformat()],
        "files": len(plan.artifacts),
        "by_modality": dict(sorted(by_modality.items())),
        "extensions": exts,
        "questions": [
            {"id": r["id"], "kind": ask.kind, "facts": ask.facts} for r, ask in zip(records, plan.asks, strict=True)
        ],
    }
    (out / f"{name}.synth").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return SynthResult(out, name, len(plan.artifacts), len(records), time.perf_counter() - began, by_modality, exts)
