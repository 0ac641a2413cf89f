"""The P-ContextBench construction pipeline: seeds -> persona (interview, facts, audit) -> circle ->
app logs -> cases + verification, one directory per persona, plus ``summary.json`` for the set.

Resumable: a stage whose artifacts exist and validate is skipped; once a stage runs, every later
stage of that persona runs again. Artifacts are written whole (temporary file, then rename), and the
clusters of stage 4 are appended one fsynced line each (`hippocamp.durable`), so a killed run
continues where it stopped, cluster by cluster. With a model, personas and clusters are generated
concurrently; a model that fails at a stage is replaced by the template engine for that stage and
the fallback is recorded in ``verification.json``. A stage whose first `GIVE_UP` answers in a run
were all unusable is not asked again in that run (a model too small for it costs minutes, not hours).

With a model, filler and decoys are written in batches (kept in ``model_filler.jsonl``, one fsynced
line per batch, so they resume too), placed first, and topped up by the templates to the requested
ratio and share; T1-T3 cases come from the model too, and template cases top up every type the
model's accepted cases leave short. The ``provenance`` entry of ``verification.json`` says what the
model wrote and what the templates did.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from hippocamp.durable import DurableLog, read_lines
from hippocamp.pcontext import audit as audit_mod
from hippocamp.pcontext import verify as V
from hippocamp.pcontext.cases import CaseContext, template_cases
from hippocamp.pcontext.circle import check_circle, template_circle
from hippocamp.pcontext.facts import apply_changes, sample_facts
from hippocamp.pcontext.interview import template_interview
from hippocamp.pcontext.logs import (
    LogContext,
    WrittenSession,
    assemble,
    lexical_verify,
    make_clusters,
    render_ics,
    template_fragments,
    third_people,
)
from hippocamp.pcontext.seeds import SeedError, parse_filter, read_seed_file, sample_seeds
from hippocamp.schema.pcontext import (
    CATEGORIES,
    CalendarEvent,
    Case,
    CheckResult,
    Circle,
    Cluster,
    Fact,
    FactsFile,
    Message,
    Persona,
    Seed,
    SetSummary,
    VerificationReport,
    VerifierAttempt,
)
from hippocamp.synth.world import rng_for

__all__ = ["GIVE_UP", "MAX_ATTEMPTS", "PipelineError", "SetConfig", "run_set", "summarize", "verify_persona"]

MAX_ATTEMPTS = 3
#: a stage whose first GIVE_UP answers in a run were all unusable is not asked again in that run
GIVE_UP = 3
#: model-written filler and decoys: items asked per batch, a rough size of one item in tokens (to plan
#: how many batches reach the target), and at most this many batches of each kind per persona
ITEMS_PER_BATCH = 8
TOKENS_PER_ITEM = 20
MAX_BATCHES = 16
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


class PipelineError(Exception):
    """A set that cannot be generated as asked (bad config, another set in the folder)."""


@dataclass(frozen=True)
class SetConfig:
    out: Path
    n: int
    seed: int = 0
    days: int = 90
    filler_ratio: float = 2.5
    decoy_share: float = 0.3
    filter: str | None = None
    seeds_file: Path | None = None
    model: str = "template"
    verifier: str | None = None
    contacts: int = 5
    #: hidden facts per persona, changed states included (the paper: 10,088 over 100 personas)
    facts: int = 100
    #: facts that change during the window (each adds a current state and a T3 case)
    changes: int = 7
    start: date = date(2025, 3, 3)
    concurrency: int = 4
    #: how hard a model is tried (not part of the set's settings: a run may resume with others):
    #: a cap on every answer's tokens (None: the per-stage caps of `modelgen.MAX_TOKENS`), and the
    #: unusable answers after which a stage that never got a usable one is given up for the run
    max_tokens: int | None = None
    give_up: int = GIVE_UP

    def check(self) -> None:
        if self.n < 1:
            raise PipelineError(f"--n must be at least 1, got {self.n}")
        if self.days < 14:
            raise PipelineError(f"--days must be at least 14, got {self.days}")
        if self.filler_ratio < 0:
            raise PipelineError(f"--filler-ratio must be >= 0, got {self.filler_ratio}")
        if not 0 <= self.decoy_share <= 1:
            raise PipelineError(f"--decoys must be between 0 and 1, got {self.decoy_share}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise PipelineError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if self.give_up < 1:
            raise PipelineError(f"give_up must be at least 1, got {self.give_up}")
        if self.contacts < 1:
            raise PipelineError(f"--contacts must be at least 1, got {self.contacts}")
        least = max(len(CATEGORIES), self.changes + 2)  # one per category, so every case type can be made
        if self.facts < least:
            raise PipelineError(f"--facts must be at least {least} (one per category; changes + 2), got {self.facts}")

    def as_json(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("out", "concurrency", "max_tokens", "give_up"):
            d.pop(key)
        return {k: str(v) if isinstance(v, Path | date) else v for k, v in d.items()}


# ------------------------------------------------------------------------------------------------ I/O


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8", newline="")
    os.replace(tmp, path)


def _dump(model: BaseModel) -> str:
    return model.model_dump_json(indent=2) + "\n"


def _jsonl(models: list[Any]) -> str:
    return "".join(m.model_dump_json() + "\n" for m in models)


def _load(path: Path, cls: type[M]) -> M | None:
    try:
        return cls.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def _load_jsonl(path: Path, cls: type[M]) -> list[M] | None:
    try:
        lines = path.read_bytes().splitlines()
        return [cls.model_validate_json(x) for x in lines if x.strip()]
    except (OSError, ValidationError, ValueError):
        return None


# ------------------------------------------------------------------------------------------- the stages


@dataclass
class _Run:
    cfg: SetConfig
    model: Any = None
    verifier: Any = None
    progress: Callable[[str], None] | None = None
    fallbacks: dict[str, list[str]] = field(default_factory=dict)
    #: per persona: "<stage>_model" / "_fallback" / "_skipped" answers in this run
    calls: dict[str, Counter[str]] = field(default_factory=dict)
    #: per stage, over the run: usable answers, unusable ones, and why the stage was given up
    usable: Counter[str] = field(default_factory=Counter)
    unusable: Counter[str] = field(default_factory=Counter)
    given_up: dict[str, str] = field(default_factory=dict)

    @property
    def generator(self) -> str:
        return "template" if self.model is None else f"model:{self.model.id}"

    async def ask(
        self, pid: str, stage: str, label: str, call: Coroutine[Any, Any, T], record: bool = True
    ) -> tuple[T | None, str]:
        """(the model's answer ``call`` at ``stage``, "") or (None, why): an outage, an unusable answer, or
        a stage given up in this run (``call`` is then not run). With ``record`` the reason joins the
        persona's fallbacks under ``label``."""
        tally = self.calls.setdefault(pid, Counter())
        if stage in self.given_up:
            call.close()
            tally[f"{stage}_skipped"] += 1
            why = f"{label}: not asked: {self.given_up[stage]}"
            if record and tally[f"{stage}_skipped"] == 1:
                self.fallbacks.setdefault(pid, []).append(why)
            return None, why
        try:
            value = await call
        except Exception as exc:  # an outage or an unusable answer: the caller's fallback stands in
            tally[f"{stage}_fallback"] += 1
            self.unusable[stage] += 1
            first = str(exc).splitlines()[0][:200] if str(exc) else ""
            why = f"{label}: {type(exc).__name__}: {first}"
            if record:
                self.fallbacks.setdefault(pid, []).append(why)
            limit = self.cfg.give_up
            if not self.usable[stage] and self.unusable[stage] >= limit and stage not in self.given_up:
                self.given_up[stage] = f"the model's first {limit} answers at this stage were unusable (last: {why})"
            return None, why
        tally[f"{stage}_model"] += 1
        self.usable[stage] += 1
        return value, ""


async def _stage_persona(run: _Run, seed: Seed, d: Path) -> tuple[Persona, list[Fact]]:
    cfg = run.cfg
    rng = rng_for(cfg.seed, seed.id, "facts")
    generator = "template"
    facts: list[Fact] | None = None
    turns = None
    audit_report = None
    if run.model is not None:
        from hippocamp.pcontext import modelgen

        model = run.model
        turns, _ = await run.ask(seed.id, "interview", "persona: interview", modelgen.interview(model, seed))
        distilled = None
        if turns is not None:
            drafting = modelgen.distill(model, seed, turns, cfg.facts - cfg.changes)
            distilled, _ = await run.ask(seed.id, "facts", "persona: facts", drafting)
        if distilled is not None:
            drafted, successors = distilled
            audited, _ = await run.ask(seed.id, "audit", "persona: audit", modelgen.audit(model, seed, drafted))
            facts, audit_report = audited or audit_mod.audit_and_repair(seed, drafted, rng)  # the rules alone
            facts = modelgen.changes(facts, successors, seed.id, cfg.start, cfg.days, rng, cfg.changes)
            generator = run.generator
    if facts is None or turns is None or audit_report is None:
        facts = sample_facts(seed.id, rng, cfg.facts - cfg.changes)
        facts, audit_report = audit_mod.audit_and_repair(seed, facts, rng)
        facts = audit_mod.ensure_changeable(seed, facts, rng, cfg.changes)
        facts = apply_changes(facts, seed.id, cfg.start, cfg.days, rng, cfg.changes)
        turns, facts = template_interview(seed, facts, rng)
    summary = (
        f"{seed.name}, {seed.age}, {seed.occupation} ({seed.occupation_group}) in "
        f"{seed.city + ', ' if seed.city else ''}{seed.state}; {seed.household}; {seed.education}; {seed.income_band}."
    )
    persona = Persona(
        id=seed.id,
        seed=seed,
        summary=summary,
        window_start=cfg.start,
        window_days=cfg.days,
        interview=turns,
        audit=audit_report,
        generator=generator,
    )
    _write(d / "persona.json", _dump(persona))
    _write(d / "facts.json", _dump(FactsFile(persona_id=seed.id, facts=facts, generator=generator)))
    return persona, facts


async def _stage_circle(run: _Run, persona: Persona, facts: list[Fact], d: Path) -> Circle:
    rng = rng_for(run.cfg.seed, persona.id, "circle")
    circle = None
    if run.model is not None:
        from hippocamp.pcontext import modelgen

        model = run.model
        circle, _ = await run.ask(
            persona.id, "circle", "circle", modelgen.circle(model, persona, facts, run.cfg.contacts)
        )
    if circle is None:
        circle = template_circle(persona.seed, facts, run.cfg.contacts, rng)
    circle = check_circle(circle, persona.seed, facts)
    _write(d / "circle.json", _dump(circle))
    return circle


async def _one_cluster(run: _Run, ctx: LogContext, cid: str, theme: str, fact_ids: list[str]) -> Cluster:
    facts = [ctx.by_id[f] for f in fact_ids]
    attempts: list[VerifierAttempt] = []
    fragments: list = []
    feedback: list[str] = []
    for attempt in range(1, MAX_ATTEMPTS + 1):
        frags = None
        if run.model is not None:
            from hippocamp.pcontext import modelgen

            frags, _ = await run.ask(
                ctx.persona.id,
                "fragments",
                f"fragments {cid} attempt {attempt}",
                modelgen.fragments(run.model, ctx, cid, fact_ids, attempt, feedback),
            )
        if frags is None:
            frags = template_fragments(ctx, cid, fact_ids, attempt)
        fragments = frags
        result = lexical_verify(frags, facts, ctx.facts, attempt)
        if run.verifier is not None:
            from hippocamp.pcontext import modelgen

            judged, why = await run.ask(
                ctx.persona.id,
                "verifier",
                "model verifier",
                modelgen.verify_cluster(run.verifier, frags, facts, attempt),
                record=False,
            )
            if judged is not None:
                result = VerifierAttempt(
                    attempt=attempt,
                    recovered={k: min(v, judged.recovered.get(k, 0.0)) for k, v in result.recovered.items()},
                    leaks=result.leaks + judged.leaks,
                    passed=result.passed and judged.passed,
                    verifier=f"lexical+{judged.verifier}",
                )
            else:  # the model verifier is down or unusable: the lexical verdict stands, recorded
                result = result.model_copy(update={"error": why[:300]})
        attempts.append(result)
        if result.passed:
            break
        feedback = result.leaks + [f"fact {k} not recoverable" for k, v in result.recovered.items() if v < 1.0]
    outcome = "verified" if attempts[-1].passed else "failed"
    return Cluster(
        id=cid,
        persona_id=ctx.persona.id,
        theme=theme,
        fact_ids=fact_ids,
        fragments=fragments,
        attempts=attempts,
        outcome=outcome,  # type: ignore[arg-type]
    )


async def _stage_logs(
    run: _Run, ctx: LogContext, d: Path, fresh: bool
) -> tuple[list[Cluster], list[Message], list[CalendarEvent]]:
    path = d / "clusters.jsonl"
    if fresh and path.exists():
        path.unlink()
    plan = make_clusters(ctx)
    done = read_lines(path, Cluster.model_validate, key=lambda c: c.id, what="a cluster")
    have = {c.id: c for c in done.items}
    if any(c.id not in {p[0] for p in plan} or c.fact_ids != p[2] for c in done.items for p in plan if p[0] == c.id):
        have = {}
        done.damaged_tail = True
        done.items.clear()
    log = DurableLog(path, redact=False)  # generated text, kept exactly (resumes byte-identical)
    log.open(keep=[(c.model_dump_json() + "\n").encode() for c in done.items], rewrite=done.damaged_tail)
    try:
        sem = asyncio.Semaphore(run.cfg.concurrency if run.model is not None else 1)

        async def one(cid: str, theme: str, fact_ids: list[str]) -> None:
            async with sem:
                cluster = await _one_cluster(run, ctx, cid, theme, fact_ids)
            log.append((cluster.model_dump_json() + "\n").encode())
            have[cid] = cluster

        await asyncio.gather(*(one(*p) for p in plan if p[0] not in have))
    finally:
        log.close()
    clusters = [have[p[0]] for p in plan]
    decoys: list[WrittenSession | CalendarEvent] = []
    filler: list[WrittenSession | CalendarEvent] = []
    if run.model is not None:
        from hippocamp.pcontext import modelgen

        for batch in await _stage_written(run, ctx, clusters, d, fresh):
            (decoys if batch.kind == "decoy" else filler).extend(modelgen.place(ctx, batch))
    messages, events = assemble(ctx, clusters, decoys, filler)
    _write(d / "messenger.jsonl", _jsonl(messages))
    _write(d / "calendar.jsonl", _jsonl(events))
    _write(d / "calendar.ics", render_ics(events, ctx.persona.id, f"{ctx.persona.seed.name} calendar"))
    return clusters, messages, events


def _evidence_tokens(clusters: list[Cluster]) -> int:
    return sum(
        sum(V.tokens(line.text) for line in f.lines) + V.tokens(f.title) + V.tokens(f.notes) + V.tokens(f.location)
        for c in clusters
        if c.outcome == "verified"
        for f in c.fragments
    )


def _written_plan(ctx: LogContext, clusters: list[Cluster]) -> list[tuple[str, str, int]]:
    """(batch id, kind, index) of the model-written batches that would about reach the targets."""
    target = ctx.filler_ratio * _evidence_tokens(clusters)
    decoy = ctx.decoy_share * target
    per = ITEMS_PER_BATCH * TOKENS_PER_ITEM
    n_decoy = min(MAX_BATCHES, math.ceil(decoy / per))
    n_plain = min(MAX_BATCHES, math.ceil((target - decoy) / per))
    return [(f"decoy-{i:02d}", "decoy", i) for i in range(1, n_decoy + 1)] + [
        (f"filler-{i:02d}", "filler", i) for i in range(1, n_plain + 1)
    ]


async def _stage_written(run: _Run, ctx: LogContext, clusters: list[Cluster], d: Path, fresh: bool) -> list[Any]:
    """The model's filler and decoy batches, resumed from ``model_filler.jsonl`` (batches the model
    failed are asked again on the next run; the templates stand in for them in this one)."""
    from hippocamp.pcontext import modelgen

    path = d / "model_filler.jsonl"
    if fresh and path.exists():
        path.unlink()
    plan = _written_plan(ctx, clusters)
    done = read_lines(path, modelgen.WrittenBatch.model_validate, key=lambda b: b.id, what="a batch of filler")
    have = {b.id: b for b in done.items}
    people = [name for name, _ in third_people(ctx, ctx.rng("written", "people"))]
    log = DurableLog(path, redact=False)  # generated text, kept exactly (resumes byte-identical)
    log.open(keep=[(b.model_dump_json() + "\n").encode() for b in done.items], rewrite=done.damaged_tail)
    model, pid = run.model, ctx.persona.id
    try:
        sem = asyncio.Semaphore(run.cfg.concurrency)

        async def one(bid: str, kind: str, index: int) -> None:
            async with sem:
                if kind == "decoy":
                    call = modelgen.decoys(model, ctx, bid, index, ITEMS_PER_BATCH, people)
                else:
                    call = modelgen.filler(model, ctx, bid, index, ITEMS_PER_BATCH)
                stage = "decoys" if kind == "decoy" else "filler"
                batch, _ = await run.ask(pid, stage, f"{stage} {bid}", call)
            if batch is not None:
                log.append((batch.model_dump_json() + "\n").encode())
                have[bid] = batch

        await asyncio.gather(*(one(*p) for p in plan if p[0] not in have))
    finally:
        log.close()
    return [have[p[0]] for p in plan if p[0] in have]


def verify_persona(
    persona: Persona,
    facts: list[Fact],
    circle: Circle,
    clusters: list[Cluster],
    messages: list[Message],
    events: list[CalendarEvent],
    cases: list[Case],
    filler_ratio: float,
    decoy_share: float,
) -> tuple[list[Case], VerificationReport]:
    """Every check of one persona; the accepted cases and the report."""
    items: list[Message | CalendarEvent] = [*messages, *events]
    end = persona.window_start + timedelta(days=persona.window_days)
    verified = [c for c in clusters if c.outcome == "verified"]
    fragments = [f for c in verified for f in c.fragments]
    accepted, rejected, case_check = V.check_cases(cases, facts, clusters, items, persona.seed.name)
    first_try = sum(1 for c in verified if len(c.attempts) == 1)
    checks = [
        CheckResult(
            name="audit",
            passed=persona.audit.remaining == 0,
            measured={
                "findings": len(persona.audit.findings),
                "repaired": persona.audit.repaired,
                "remaining": persona.audit.remaining,
                "auditor": persona.audit.auditor,
            },
            problems=[f"{f.perspective}: {f.issue}" for f in persona.audit.findings] if persona.audit.remaining else [],
        ),
        V.check_inventory(facts, {t.id for t in persona.interview}),
        CheckResult(
            name="circle",
            passed=len(circle.contacts) > 0,
            measured={"contacts": len(circle.contacts), "removed_details": len(circle.removed)},
            problems=[] if circle.contacts else ["no contacts"],
        ),
        CheckResult(
            name="cluster_verification",
            passed=len(verified) == len(clusters),
            measured={
                "clusters": len(clusters),
                "verified": len(verified),
                "first_attempt": first_try,
                "failed": len(clusters) - len(verified),
            },
            problems=[
                f"cluster {c.id} failed after {len(c.attempts)} attempts: {'; '.join(c.attempts[-1].leaks)[:300]}"
                for c in clusters
                if c.outcome != "verified"
            ],
        ),
        V.check_leakage(fragments, items, facts),
        V.check_support(facts, clusters, items),
        V.check_filler_ratio(items, filler_ratio),
        V.check_decoy_share(items, decoy_share),
        V.check_survival(clusters, messages, events),
        V.check_decoys(items, facts, persona.seed.name),
        V.check_temporal(facts, clusters, persona.window_start, end),
        case_check,
    ]
    report = VerificationReport(
        persona_id=persona.id, passed=all(c.passed for c in checks), checks=checks, rejected_cases=rejected
    )
    return accepted, report


async def _stage_cases(
    run: _Run, ctx: LogContext, clusters: list[Cluster], messages: list[Message], events: list[CalendarEvent], d: Path
) -> VerificationReport:
    present = {i.fragment_id for i in [*messages, *events] if i.fragment_id}
    cctx = CaseContext(ctx.persona, ctx.facts, clusters, present)
    rng = rng_for(run.cfg.seed, ctx.persona.id, "cases")
    cases = template_cases(cctx, rng)
    dropped: list[str] = []
    if run.model is not None:
        from hippocamp.pcontext import modelgen

        model, pid = run.model, ctx.persona.id
        recall_rng = rng_for(run.cfg.seed, pid, "cases", "model")
        recall, _ = await run.ask(pid, "cases_recall", "cases: T1-T3", modelgen.recall_cases(model, cctx, recall_rng))
        inferred, _ = await run.ask(pid, "cases", "cases: T4-T5", modelgen.cases(model, cctx))
        written = [*(recall[0] if recall else []), *(inferred or [])]
        dropped = recall[1] if recall else []
        items: list[Message | CalendarEvent] = [*messages, *events]
        cases = _top_up(written, cases, ctx.facts, clusters, items, ctx.persona.seed.name)
    accepted, report = verify_persona(
        ctx.persona, ctx.facts, ctx.circle, clusters, messages, events, cases, run.cfg.filler_ratio, run.cfg.decoy_share
    )
    old = _load(d / "verification.json", VerificationReport)
    notes = run.fallbacks.get(ctx.persona.id, [])
    report = report.model_copy(
        update={
            "checks": [*report.checks, _provenance(run, ctx, clusters, messages, events, accepted, dropped, d)],
            "rejected_cases": [*report.rejected_cases, *dropped],
            "fallbacks": [*(old.fallbacks if old else []), *notes],
        }
    )
    _write(d / "cases.jsonl", _jsonl(accepted))
    _write(d / "verification.json", _dump(report))
    return report


def _top_up(
    written: list[Case],
    template: list[Case],
    facts: list[Fact],
    clusters: list[Cluster],
    items: list[Message | CalendarEvent],
    name: str,
) -> list[Case]:
    """The model's cases, then template cases of each type up to the templates' count of that type
    less the model's accepted ones (none on the same facts)."""
    good, _, _ = V.check_cases(written, facts, clusters, items, name)
    have = Counter(c.type for c in good)
    taken = {(c.type, tuple(sorted(c.fact_ids))) for c in good}
    want = Counter(c.type for c in template)
    out = list(written)
    for case in template:
        if have[case.type] < want[case.type] and (case.type, tuple(sorted(case.fact_ids))) not in taken:
            out.append(case)
            have[case.type] += 1
    return out


_MODEL_CASE = re.compile(r"-T[1-5]-m\d+$")


def _provenance(
    run: _Run,
    ctx: LogContext,
    clusters: list[Cluster],
    messages: list[Message],
    events: list[CalendarEvent],
    cases: list[Case],
    dropped: list[str],
    d: Path,
) -> CheckResult:
    """What the model wrote and what the templates did, read from the artifacts (and this run's calls).
    A record, not a test: it always passes."""
    measured: dict[str, float | int | str | None] = {
        "generator": run.generator,
        "persona": "model" if ctx.persona.generator.startswith("model:") else "template",
        "circle": "model" if ctx.circle.generator.startswith("model:") else "template",
    }
    by_model = sum(
        1
        for c in clusters
        if [f.model_dump() for f in c.fragments]
        != [f.model_dump() for f in template_fragments(ctx, c.id, c.fact_ids, len(c.attempts))]
    )
    measured |= {"clusters_model": by_model, "clusters_template": len(clusters) - by_model}
    batches = []
    if (d / "model_filler.jsonl").is_file():
        from hippocamp.pcontext import modelgen

        batches = read_lines(d / "model_filler.jsonl", modelgen.WrittenBatch.model_validate, key=lambda b: b.id).items
    for kind in ("filler", "decoy"):
        mine = [b for b in batches if b.kind == kind]
        texts = {t for b in mine for item in b.items for t in item.texts()}
        titles = {item.title for b in mine for item in b.items if item.app == "calendar"}
        model_tokens = template_tokens = 0
        for item in [*messages, *events]:
            if item.kind != kind:
                continue
            written = item.text in texts if isinstance(item, Message) else item.title in titles
            if written:
                model_tokens += V.item_tokens(item)
            else:
                template_tokens += V.item_tokens(item)
        measured |= {
            f"{kind}_batches_model": len(mine),
            f"{kind}_items_model": sum(len(b.items) for b in mine),
            f"{kind}_items_refused": sum(len(b.rejected) for b in mine),
            f"{kind}_tokens_model": model_tokens,
            f"{kind}_tokens_template": template_tokens,
        }
    from_model = sum(1 for c in cases if _MODEL_CASE.search(c.id))
    measured |= {"cases_model": from_model, "cases_template": len(cases) - from_model, "cases_dropped": len(dropped)}
    for key, n in sorted(run.calls.get(ctx.persona.id, Counter()).items()):
        measured[f"calls_{key}"] = n
    return CheckResult(name="provenance", passed=True, measured=measured)


async def _persona(run: _Run, seed: Seed) -> None:
    d = run.cfg.out / seed.id
    d.mkdir(parents=True, exist_ok=True)
    persona = _load(d / "persona.json", Persona)
    facts_file = _load(d / "facts.json", FactsFile)
    fresh = persona is None or facts_file is None or persona.seed != seed
    if fresh:
        for name in ("verification.json",):
            (d / name).unlink(missing_ok=True)
        persona, facts = await _stage_persona(run, seed, d)
    else:
        assert facts_file is not None
        facts = facts_file.facts
    assert persona is not None
    circle = None if fresh else _load(d / "circle.json", Circle)
    if circle is None:
        fresh = True
        circle = await _stage_circle(run, persona, facts, d)
    ctx = LogContext(run.cfg.seed, persona, facts, circle, run.cfg.filler_ratio, run.cfg.decoy_share)
    messages = None if fresh else _load_jsonl(d / "messenger.jsonl", Message)
    events = None if fresh else _load_jsonl(d / "calendar.jsonl", CalendarEvent)
    clusters = None if fresh else _load_jsonl(d / "clusters.jsonl", Cluster)
    plan_ids = [p[0] for p in make_clusters(ctx)]
    if (
        messages is None
        or events is None
        or clusters is None
        or not (d / "calendar.ics").is_file()
        or [c.id for c in clusters] != plan_ids
    ):
        clusters, messages, events = await _stage_logs(run, ctx, d, fresh)
        fresh = True
    if (
        fresh
        or _load_jsonl(d / "cases.jsonl", Case) is None
        or _load(d / "verification.json", VerificationReport) is None
    ):
        await _stage_cases(run, ctx, clusters, messages, events, d)
    if run.progress:
        run.progress(seed.id)


def _seeds(cfg: SetConfig) -> list[Seed]:
    path = cfg.out / "seeds.jsonl"
    existing = _load_jsonl(path, Seed) if path.is_file() else None
    if existing is not None and len(existing) == cfg.n:
        return existing
    flt = parse_filter(cfg.filter)
    if cfg.seeds_file is not None:
        seeds = read_seed_file(cfg.seeds_file, cfg.n, cfg.seed, flt)
        if not seeds:
            raise SeedError(f"{cfg.seeds_file}: no row matches the filter {cfg.filter!r}")
    else:
        seeds = sample_seeds(cfg.n, cfg.seed, flt)
    _write(path, _jsonl(seeds))
    return seeds


def _check_config(cfg: SetConfig) -> None:
    path = cfg.out / "config.json"
    want = cfg.as_json()
    if path.is_file():
        try:
            have = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            have = None
        if isinstance(have, dict) and have != want:
            diff = sorted(k for k in set(have) | set(want) if have.get(k) != want.get(k))
            raise PipelineError(
                f"{cfg.out} holds a set made with other settings ({', '.join(diff)}); use another --out or remove it"
            )
    _write(path, json.dumps(want, indent=2, sort_keys=True) + "\n")


async def _run_all(run: _Run, seeds: list[Seed]) -> None:
    sem = asyncio.Semaphore(run.cfg.concurrency if run.model is not None else 1)

    async def one(seed: Seed) -> None:
        async with sem:
            await _persona(run, seed)

    await asyncio.gather(*(one(s) for s in seeds))


class _Capped:
    """A model whose every answer is cut at ``cap`` tokens (an answer cut short is then refused)."""

    def __init__(self, model: Any, cap: int):
        self.model, self.cap, self.id = model, cap, model.id

    async def generate(self, messages: Any, max_tokens: int | None = None, **options: Any) -> Any:
        cap = self.cap if max_tokens is None else min(max_tokens, self.cap)
        return await self.model.generate(messages, max_tokens=cap, **options)


def run_set(
    cfg: SetConfig, model: Any = None, verifier: Any = None, progress: Callable[[str], None] | None = None
) -> SetSummary:
    """Generate (or finish) the set in ``cfg.out``; ``model``/``verifier`` are `hippocamp.models.Model`s
    (None: the template engine, and the lexical verifier only)."""
    cfg.check()
    cfg.out.mkdir(parents=True, exist_ok=True)
    _check_config(cfg)
    seeds = _seeds(cfg)
    if cfg.max_tokens is not None:
        model = None if model is None else _Capped(model, cfg.max_tokens)
        verifier = None if verifier is None else _Capped(verifier, cfg.max_tokens)
    run = _Run(cfg, model=model, verifier=verifier, progress=progress)
    asyncio.run(_run_all(run, seeds))
    summary = summarize(cfg, seeds)
    _write(cfg.out / "summary.json", _dump(summary))
    return summary


def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "min": 0.0, "max": 0.0}
    return {"mean": round(sum(values) / len(values), 4), "min": round(min(values), 4), "max": round(max(values), 4)}


def summarize(cfg: SetConfig, seeds: list[Seed]) -> SetSummary:
    """The set's counts from the artifacts on disk."""
    counts: Counter[str] = Counter()
    by_cat: Counter[str] = Counter()
    by_app: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    tok: Counter[str] = Counter()
    by_type: Counter[str] = Counter()
    attempts: Counter[str] = Counter()
    ratios, shares, failed = [], [], []
    generators = set()
    for seed in seeds:
        d = cfg.out / seed.id
        persona = _load(d / "persona.json", Persona)
        facts = _load(d / "facts.json", FactsFile)
        circle = _load(d / "circle.json", Circle)
        clusters = _load_jsonl(d / "clusters.jsonl", Cluster) or []
        messages = _load_jsonl(d / "messenger.jsonl", Message) or []
        events = _load_jsonl(d / "calendar.jsonl", CalendarEvent) or []
        cases = _load_jsonl(d / "cases.jsonl", Case) or []
        report = _load(d / "verification.json", VerificationReport)
        if persona is None or facts is None or circle is None or report is None:
            failed.append(seed.id)
            continue
        generators.add(persona.generator)
        counts["contacts"] += len(circle.contacts)
        counts["facts"] += len(facts.facts)
        counts["changing"] += sum(1 for f in facts.facts if f.prior_of)
        by_cat.update(f.category for f in facts.facts)
        counts["clusters"] += len(clusters)
        counts["clusters_failed"] += sum(1 for c in clusters if c.outcome != "verified")
        for c in clusters:
            key = f"passed_attempt_{len(c.attempts)}" if c.outcome == "verified" else "failed"
            attempts[key] += 1
            counts["fragments_rejected"] += sum(len(c.fragments) for _ in c.attempts[:-1]) + (
                len(c.fragments) if c.outcome != "verified" else 0
            )
            if c.outcome == "verified":
                by_app.update(f.app for f in c.fragments)
        counts["messages"] += len(messages)
        counts["events"] += len(events)
        by_kind.update(i.kind for i in [*messages, *events])
        t = V.kind_tokens([*messages, *events])
        tok.update(t)
        if t["evidence"]:
            ratios.append((t["filler"] + t["decoy"]) / t["evidence"])
        if t["filler"] + t["decoy"]:
            shares.append(t["decoy"] / (t["filler"] + t["decoy"]))
        by_type.update(c.type for c in cases)
        counts["rejected"] += len(report.rejected_cases)
        counts["passed"] += int(report.passed)
        if not report.passed:
            failed.append(seed.id)
    fragments = sum(by_app.values())
    generated = sum(by_type.values()) + counts["rejected"]
    return SetSummary(
        personas=len(seeds),
        generator=", ".join(sorted(generators)) or cfg.model,
        verifier="lexical" + (f"+model:{cfg.verifier}" if cfg.verifier else ""),
        seed=cfg.seed,
        days=cfg.days,
        requested_filler_ratio=cfg.filler_ratio,
        requested_decoy_share=cfg.decoy_share,
        contacts=counts["contacts"],
        facts=counts["facts"],
        changing_facts=counts["changing"],
        facts_by_category={c: by_cat.get(c, 0) for c in CATEGORIES},
        clusters=counts["clusters"],
        clusters_failed=counts["clusters_failed"],
        cluster_attempts=dict(sorted(attempts.items())),
        fragments=fragments,
        fragments_by_app={"messenger": by_app.get("messenger", 0), "calendar": by_app.get("calendar", 0)},
        messages=counts["messages"],
        events=counts["events"],
        items_by_kind={k: by_kind.get(k, 0) for k in ("evidence", "filler", "decoy")},
        tokens_by_kind={k: tok.get(k, 0) for k in ("evidence", "filler", "decoy")},
        filler_ratio=_stats(ratios),
        decoy_share=_stats(shares),
        cases_by_type={t: by_type.get(t, 0) for t in ("T1", "T2", "T3", "T4", "T5")},
        cases_generated=generated,
        cases_rejected=counts["rejected"],
        case_rejection_rate=round(counts["rejected"] / generated, 4) if generated else 0.0,
        fragment_rejection_rate=round(counts["fragments_rejected"] / (fragments + counts["fragments_rejected"]), 4)
        if fragments + counts["fragments_rejected"]
        else 0.0,
        personas_passed=counts["passed"],
        failed_personas=sorted(set(failed)),
    )
