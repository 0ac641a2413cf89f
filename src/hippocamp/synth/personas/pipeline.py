"""The P-ContextBench construction pipeline: seeds -> persona (interview, facts, audit) -> circle ->
app logs -> cases + verification, one directory per persona, plus ``summary.json`` for the set. Each
stage's template and model halves live in their own module; this one runs them in order and writes
what they make.

Resumable: a stage whose artifacts exist and validate is skipped; once a stage runs, every later
stage of that persona runs again. Artifacts are written whole (`artifacts.write`), and the clusters of
stage 4 are appended one fsynced line each (`hippocamp.durable`), so a killed run continues where it
stopped, cluster by cluster. With a model, personas and clusters are generated concurrently; a model
that fails at a stage is replaced by the template half for that stage and the fallback is recorded in
``verification.json`` (`model.StageLedger`, which also gives up a stage whose first answers in a run
were all unusable).

With a model, filler and decoys are written in batches (kept in ``model_filler.jsonl``, one fsynced
line per batch, so they resume too), placed first, and topped up by the templates to the requested
ratio and share; T1-T5 cases come from the model too, and template cases top up every type the
model's accepted cases leave short. The ``provenance`` entry of ``verification.json`` says what the
model wrote and what the templates did.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hippocamp.durable import DurableLog, read_lines
from hippocamp.schema.pcontext import (
    CalendarEvent,
    Case,
    Circle,
    Cluster,
    Fact,
    FactsFile,
    Fragment,
    Message,
    Persona,
    Seed,
    SetSummary,
    VerificationReport,
    VerifierAttempt,
)
from hippocamp.synth.personas.artifacts import dump, jsonl, load, load_jsonl, write
from hippocamp.synth.personas.cases import CaseContext, model_cases, model_recall_cases, template_cases, top_up
from hippocamp.synth.personas.circle import check_circle, model_circle, template_circle
from hippocamp.synth.personas.config import PipelineError, SetConfig
from hippocamp.synth.personas.facts import (
    apply_changes,
    audit_and_repair,
    ensure_changeable,
    model_audit,
    model_changes,
    model_facts,
)
from hippocamp.synth.personas.filler import (
    ITEMS_PER_BATCH,
    WrittenBatch,
    WrittenSession,
    batch_plan,
    model_decoys,
    model_filler,
    place,
    third_people,
)
from hippocamp.synth.personas.fragments import (
    LogContext,
    lexical_verify,
    make_clusters,
    model_fragments,
    model_verify,
    template_fragments,
)
from hippocamp.synth.personas.interview import model_interview, restate, template_interview
from hippocamp.synth.personas.logs import assemble, render_ics
from hippocamp.synth.personas.model import Capped, StageLedger
from hippocamp.synth.personas.recover import (
    LogIndex,
    checked,
    fact_ranks,
    feedback,
    log_items,
    recoverability_check,
    redraft,
    support_of,
    verdict,
)
from hippocamp.synth.personas.seeds import SeedError, parse_filter, read_seed_file, sample_seeds
from hippocamp.synth.personas.summary import provenance, summarize
from hippocamp.synth.personas.verify import verify_persona
from hippocamp.synth.world import rng_for

__all__ = ["MAX_ATTEMPTS", "PipelineError", "SetConfig", "run_set"]

#: a cluster's fragments are written and verified at most this many times
MAX_ATTEMPTS = 3


@dataclass
class _Run:
    cfg: SetConfig
    model: Any = None
    verifier: Any = None
    progress: Callable[[str], None] | None = None
    ledger: StageLedger = field(default_factory=StageLedger)

    @property
    def generator(self) -> str:
        return "template" if self.model is None else f"model:{self.model.id}"


async def _stage_persona(run: _Run, seed: Seed, d: Path) -> tuple[Persona, list[Fact]]:
    cfg = run.cfg
    rng = rng_for(cfg.seed, seed.id, "facts")
    generator = "template"
    facts: list[Fact] | None = None
    turns = None
    audit_report = None
    if run.model is not None:
        model = run.model
        turns, _ = await run.ledger.ask(seed.id, "interview", "persona: interview", model_interview(model, seed))
        distilled = None
        if turns is not None:
            drafting = model_facts(model, seed, turns, cfg.facts - cfg.changes)
            distilled, _ = await run.ledger.ask(seed.id, "facts", "persona: facts", drafting)
        if distilled is not None:
            drafted, successors = distilled
            audited, _ = await run.ledger.ask(seed.id, "audit", "persona: audit", model_audit(model, seed, drafted))
            facts, audit_report = audited or audit_and_repair(seed, drafted, rng)  # the rules alone
            facts = model_changes(facts, successors, seed.id, cfg.start, cfg.days, rng, cfg.changes)
            generator = run.generator
    if facts is None or turns is None or audit_report is None:
        # the interview first: each question answered, the facts distilled from the answers
        turns, facts = template_interview(seed, rng, cfg.facts - cfg.changes)
        facts, audit_report = audit_and_repair(seed, facts, rng)
        facts = ensure_changeable(seed, facts, rng, cfg.changes)
        facts = apply_changes(facts, seed.id, cfg.start, cfg.days, rng, cfg.changes, seed)
        turns, facts = restate(turns, facts, seed, rng)  # the answers follow the audit and the changes
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
    write(d / "persona.json", dump(persona))
    write(d / "facts.json", dump(FactsFile(persona_id=seed.id, facts=facts, generator=generator)))
    return persona, facts


async def _stage_circle(run: _Run, persona: Persona, facts: list[Fact], d: Path) -> Circle:
    rng = rng_for(run.cfg.seed, persona.id, "circle")
    circle = None
    if run.model is not None:
        model = run.model
        circle, _ = await run.ledger.ask(
            persona.id, "circle", "circle", model_circle(model, persona, facts, run.cfg.contacts)
        )
    if circle is None:
        circle = template_circle(persona.seed, facts, run.cfg.contacts, rng)
    circle = check_circle(circle, persona.seed, facts)
    write(d / "circle.json", dump(circle))
    return circle


async def _one_cluster(
    run: _Run,
    ctx: LogContext,
    cid: str,
    theme: str,
    fact_ids: list[str],
    first: int = 1,
    feedback: list[str] | None = None,
    draft: Callable[[int], list[Fragment]] | None = None,
) -> Cluster:
    """Write and verify (lexically, and by the model verifier when there is one) a cluster's fragments
    from attempt ``first`` on, until an attempt passes or `MAX_ATTEMPTS` were made. The cluster holds
    this call's attempts only; the retrieval check comes after assembly (`_stage_logs`). ``feedback``
    tells a model what went wrong before; ``draft`` writes the templates' fragments of an attempt
    (default `template_fragments`)."""
    facts = [ctx.by_id[f] for f in fact_ids]
    attempts: list[VerifierAttempt] = []
    fragments: list[Fragment] = []
    feedback = list(feedback or [])
    for attempt in range(first, MAX_ATTEMPTS + 1):
        frags = None
        if run.model is not None:
            frags, _ = await run.ledger.ask(
                ctx.persona.id,
                "fragments",
                f"fragments {cid} attempt {attempt}",
                model_fragments(run.model, ctx, cid, fact_ids, attempt, feedback),
            )
        if frags is None:
            frags = draft(attempt) if draft is not None else template_fragments(ctx, cid, fact_ids, attempt)
        fragments = frags
        result = lexical_verify(frags, facts, ctx.facts, attempt)
        if run.verifier is not None:
            judged, why = await run.ledger.ask(
                ctx.persona.id,
                "verifier",
                "model verifier",
                model_verify(run.verifier, frags, facts, attempt),
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


def _first_attempt(cluster: Cluster) -> int:
    """The attempt a line of ``clusters.jsonl`` starts at (its key, with the cluster id)."""
    return cluster.attempts[0].attempt if cluster.attempts else 1


def _awaits_check(cluster: Cluster) -> bool:
    """Written and verified, not yet searched for (`recover`)."""
    return cluster.outcome == "verified" and bool(cluster.attempts) and not checked(cluster.attempts[-1])


def _to_rewrite(cluster: Cluster) -> bool:
    """Missed by the search at an attempt that is not the last allowed: written again."""
    last = cluster.attempts[-1] if cluster.attempts else None
    return cluster.outcome == "failed" and last is not None and checked(last) and last.attempt < MAX_ATTEMPTS


def _settled(cluster: Cluster) -> bool:
    """Nothing left to do: passed the retrieval check, or failed at the last attempt allowed."""
    return not _awaits_check(cluster) and not _to_rewrite(cluster)


async def _stage_logs(
    run: _Run, ctx: LogContext, d: Path, fresh: bool
) -> tuple[list[Cluster], list[Message], list[CalendarEvent]]:
    """Stage 4: clusters written and verified, the logs assembled, each cluster's facts searched for
    in them (`recover`), and the clusters the search missed written again, in rounds, until every
    cluster passed or failed its `MAX_ATTEMPTS`-th attempt; then the final logs.

    **Attempts.** One budget of `MAX_ATTEMPTS` per cluster covers both verifiers: attempt n is one
    writing of the fragments, verified lexically (and by the model verifier) at once and, once the
    logs are assembled, by retrieval; a writing that fails either is written again as attempt n + 1.
    Each attempt is one `VerifierAttempt` in the cluster's ``attempts`` (the retrieval verdict folded
    in: verifier ``lexical+retrieval@k``, with the facts' ranks), so the attempt counts are the times
    the fragments were written. A cluster that fails its last attempt is ``failed``: its fragments are
    left out of the logs and of the cases (rejected).

    **Rounds.** Round 1 writes every cluster's first attempt; each round then assembles the logs from
    the clusters not rejected, searches for the facts of the clusters not yet searched for, and writes
    again those missed (the templates: `recover.redraft`, the wording the search finds best; a model:
    told which questions missed). A verdict is final when made: a later round's rewrites and filler
    move other items, which the ``recoverability`` check of ``verification.json`` measures on the
    final logs. At most `MAX_ATTEMPTS` rounds.

    **Resume.** Every writing is appended to ``clusters.jsonl`` (one fsynced line, keyed by cluster and
    first attempt) before anything depends on it; the searches are not written (they take
    milliseconds): a resumed run replays the rounds from the written lines, so it makes the same
    verdicts and the same files. At the end the file is replaced (atomically) by the final clusters,
    one line each in plan order, each with its whole history.
    """
    path = d / "clusters.jsonl"
    if fresh and path.exists():
        path.unlink()
    plan = make_clusters(ctx)
    wanted = {p[0]: p[2] for p in plan}
    done = read_lines(path, Cluster.model_validate, key=lambda c: (c.id, _first_attempt(c)), what="a cluster")
    lines = {(c.id, _first_attempt(c)): c for c in done.items}
    if any(c.id not in wanted or c.fact_ids != wanted[c.id] for c in done.items):
        lines = {}
        done.damaged_tail = True
        done.items.clear()
    state: dict[str, Cluster] = {}
    written_fresh = [fresh]

    async def logs(clusters: list[Cluster]) -> tuple[list[Message], list[CalendarEvent]]:
        decoys: list[WrittenSession | CalendarEvent] = []
        filler: list[WrittenSession | CalendarEvent] = []
        if run.model is not None:
            for batch in await _stage_written(run, ctx, clusters, d, written_fresh[0]):
                (decoys if batch.kind == "decoy" else filler).extend(place(ctx, batch))
            written_fresh[0] = False
        return assemble(ctx, clusters, decoys, filler)

    if all((cid, 1) in lines and _settled(lines[(cid, 1)]) for cid in wanted):
        state = {cid: lines[(cid, 1)] for cid in wanted}  # the final clusters of a finished stage
    else:
        # a final line (searched already) holds only its last writing: replayed, the rounds write it again
        kept = {key: c for key, c in lines.items() if not any(checked(a) for a in c.attempts)}
        if len(kept) != len(lines):  # the file is rewritten without them
            lines, done.damaged_tail = kept, True
            done.items[:] = list(kept.values())
        log = DurableLog(path, redact=False)  # generated text, kept exactly (resumes byte-identical)
        log.open(keep=[(c.model_dump_json() + "\n").encode() for c in done.items], rewrite=done.damaged_tail)
        try:
            await _rounds(run, ctx, plan, lines, state, log, logs)
        finally:
            log.close()
        clusters = [state[p[0]] for p in plan]
        write(path, jsonl(clusters))  # the final clusters replace the writings (atomically)
    clusters = [state[p[0]] for p in plan]
    messages, events = await logs(clusters)
    write(d / "messenger.jsonl", jsonl(messages))
    write(d / "calendar.jsonl", jsonl(events))
    write(d / "calendar.ics", render_ics(events, ctx.persona.id, f"{ctx.persona.seed.name} calendar"))
    return clusters, messages, events


async def _rounds(
    run: _Run,
    ctx: LogContext,
    plan: list[tuple[str, str, list[str]]],
    lines: dict[tuple[str, int], Cluster],
    state: dict[str, Cluster],
    log: DurableLog,
    logs: Callable[[list[Cluster]], Awaitable[tuple[list[Message], list[CalendarEvent]]]],
) -> None:
    """The rounds of `_stage_logs`: fills ``state`` (cluster id -> the cluster with its whole history),
    taking each writing from ``lines`` when an earlier run made it, else writing it and appending it."""
    sem = asyncio.Semaphore(run.cfg.concurrency if run.model is not None else 1)
    theme = {p[0]: p[1] for p in plan}

    async def write_one(cid: str, fact_ids: list[str], first: int, notes: list[str], draft: Any) -> None:
        made = lines.get((cid, first))
        if made is None:
            async with sem:
                made = await _one_cluster(run, ctx, cid, theme[cid], fact_ids, first, notes, draft)
            log.append((made.model_dump_json() + "\n").encode())
        before = state[cid].attempts if cid in state else []
        state[cid] = made.model_copy(update={"attempts": [*before, *made.attempts]})

    await asyncio.gather(*(write_one(cid, ids, 1, [], None) for cid, _, ids in plan))
    for _ in range(MAX_ATTEMPTS):
        waiting = [p[0] for p in plan if _awaits_check(state[p[0]])]
        if not waiting:
            break
        messages, events = await logs([state[p[0]] for p in plan])
        index = LogIndex(log_items(messages, events))
        present = {i.fragment_id for i in index.items.values() if i.fragment_id}
        try:
            for cid in waiting:
                cluster = state[cid]
                facts = [ctx.by_id[f] for f in cluster.fact_ids]
                support = {k: v & present for k, v in support_of(cluster.fragments).items()}
                judged = verdict(
                    cluster.attempts[-1],
                    fact_ranks(index, ctx.persona, facts, support),
                    k=run.cfg.recovery_k,
                    enforce=run.cfg.recovery == "enforce",
                )
                state[cid] = cluster.model_copy(
                    update={
                        "attempts": [*cluster.attempts[:-1], judged],
                        "outcome": "verified" if judged.passed else "failed",
                    }
                )
            again = [p for p in plan if _to_rewrite(state[p[0]])]
            jobs = []
            for cid, _, ids in again:
                cluster = state[cid]
                notes = feedback(cluster.attempts[-1], [ctx.by_id[f] for f in ids], ctx.persona, k=run.cfg.recovery_k)

                def draft(attempt: int, cluster: Cluster = cluster, index: LogIndex = index) -> list[Fragment]:
                    return redraft(index, ctx, cluster, attempt, k=run.cfg.recovery_k)

                jobs.append(write_one(cid, ids, cluster.attempts[-1].attempt + 1, notes, draft))
            await asyncio.gather(*jobs)
        finally:
            index.close()


async def _stage_written(
    run: _Run, ctx: LogContext, clusters: list[Cluster], d: Path, fresh: bool
) -> list[WrittenBatch]:
    """The model's filler and decoy batches, resumed from ``model_filler.jsonl`` (batches the model
    failed are asked again on the next run; the templates stand in for them in this one)."""
    path = d / "model_filler.jsonl"
    if fresh and path.exists():
        path.unlink()
    plan = batch_plan(ctx, clusters)
    done = read_lines(path, WrittenBatch.model_validate, key=lambda b: b.id, what="a batch of filler")
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
                    call = model_decoys(model, ctx, bid, index, ITEMS_PER_BATCH, people)
                else:
                    call = model_filler(model, ctx, bid, index, ITEMS_PER_BATCH)
                stage = "decoys" if kind == "decoy" else "filler"
                batch, _ = await run.ledger.ask(pid, stage, f"{stage} {bid}", call)
            if batch is not None:
                log.append((batch.model_dump_json() + "\n").encode())
                have[bid] = batch

        await asyncio.gather(*(one(*p) for p in plan if p[0] not in have))
    finally:
        log.close()
    return [have[p[0]] for p in plan if p[0] in have]


async def _stage_cases(
    run: _Run, ctx: LogContext, clusters: list[Cluster], messages: list[Message], events: list[CalendarEvent], d: Path
) -> VerificationReport:
    present = {i.fragment_id for i in [*messages, *events] if i.fragment_id}
    cctx = CaseContext(ctx.persona, ctx.facts, clusters, present)
    rng = rng_for(run.cfg.seed, ctx.persona.id, "cases")
    cases = template_cases(cctx, rng)
    dropped: list[str] = []
    if run.model is not None:
        model, pid = run.model, ctx.persona.id
        recall_rng = rng_for(run.cfg.seed, pid, "cases", "model")
        recall, _ = await run.ledger.ask(
            pid, "cases_recall", "cases: T1-T3", model_recall_cases(model, cctx, recall_rng)
        )
        inferred, _ = await run.ledger.ask(pid, "cases", "cases: T4-T5", model_cases(model, cctx))
        written = [*(recall[0] if recall else []), *(inferred or [])]
        dropped = recall[1] if recall else []
        items: list[Message | CalendarEvent] = [*messages, *events]
        cases = top_up(written, cases, ctx.facts, clusters, items, ctx.persona.seed.name)
    accepted, report = verify_persona(
        ctx.persona, ctx.facts, ctx.circle, clusters, messages, events, cases, run.cfg.filler_ratio, run.cfg.decoy_share
    )
    old = load(d / "verification.json", VerificationReport)
    notes = run.ledger.fallbacks.get(ctx.persona.id, [])
    calls = run.ledger.calls.get(ctx.persona.id, Counter())
    record = provenance(run.generator, calls, ctx, clusters, messages, events, accepted, dropped, d)
    recovery, ranks = recoverability_check(ctx.persona, ctx.facts, clusters, messages, events, k=run.cfg.recovery_k)
    report = report.model_copy(
        update={
            "passed": report.passed and recovery.passed,
            "checks": [*report.checks, recovery, record],
            "recovery_ranks": ranks,
            "rejected_cases": [*report.rejected_cases, *dropped],
            "fallbacks": [*(old.fallbacks if old else []), *notes],
        }
    )
    write(d / "cases.jsonl", jsonl(accepted))
    write(d / "verification.json", dump(report))
    return report


async def _persona(run: _Run, seed: Seed) -> None:
    d = run.cfg.out / seed.id
    d.mkdir(parents=True, exist_ok=True)
    persona = load(d / "persona.json", Persona)
    facts_file = load(d / "facts.json", FactsFile)
    fresh = persona is None or facts_file is None or persona.seed != seed
    if fresh:
        for name in ("verification.json",):
            (d / name).unlink(missing_ok=True)
        persona, facts = await _stage_persona(run, seed, d)
    else:
        assert facts_file is not None
        facts = facts_file.facts
    assert persona is not None
    circle = None if fresh else load(d / "circle.json", Circle)
    if circle is None:
        fresh = True
        circle = await _stage_circle(run, persona, facts, d)
    ctx = LogContext(run.cfg.seed, persona, facts, circle, run.cfg.filler_ratio, run.cfg.decoy_share)
    messages = None if fresh else load_jsonl(d / "messenger.jsonl", Message)
    events = None if fresh else load_jsonl(d / "calendar.jsonl", CalendarEvent)
    clusters = None if fresh else load_jsonl(d / "clusters.jsonl", Cluster)
    plan_ids = [p[0] for p in make_clusters(ctx)]
    if (
        messages is None
        or events is None
        or clusters is None
        or not (d / "calendar.ics").is_file()
        or [c.id for c in clusters] != plan_ids
        or not all(_settled(c) for c in clusters)  # written before the retrieval check, or cut short
    ):
        clusters, messages, events = await _stage_logs(run, ctx, d, fresh)
        fresh = True
    if (
        fresh
        or load_jsonl(d / "cases.jsonl", Case) is None
        or load(d / "verification.json", VerificationReport) is None
    ):
        await _stage_cases(run, ctx, clusters, messages, events, d)
    if run.progress:
        run.progress(seed.id)


def _seeds(cfg: SetConfig) -> list[Seed]:
    path = cfg.out / "seeds.jsonl"
    existing = load_jsonl(path, Seed) if path.is_file() else None
    if existing is not None and len(existing) == cfg.n:
        return existing
    flt = parse_filter(cfg.filter)
    if cfg.seeds_file is not None:
        seeds = read_seed_file(cfg.seeds_file, cfg.n, cfg.seed, flt)
        if not seeds:
            raise SeedError(f"{cfg.seeds_file}: no row matches the filter {cfg.filter!r}")
    else:
        seeds = sample_seeds(cfg.n, cfg.seed, flt)
    write(path, jsonl(seeds))
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
    write(path, json.dumps(want, indent=2, sort_keys=True) + "\n")


async def _run_all(run: _Run, seeds: list[Seed]) -> None:
    sem = asyncio.Semaphore(run.cfg.concurrency if run.model is not None else 1)

    async def one(seed: Seed) -> None:
        async with sem:
            await _persona(run, seed)

    await asyncio.gather(*(one(s) for s in seeds))


@dataclass
class _PersonaJob:
    """One persona generated on a cluster's worker: in a folder of its own under the worker's temp
    folder, seeded with what the driver already has of it (so a stopped persona resumes there), by
    the same code as here; returns every file of the persona's folder, which the driver writes."""

    cfg: SetConfig
    model: Any = None
    verifier: Any = None

    async def __call__(self, item: tuple[Seed, dict[str, bytes]]) -> dict[str, bytes]:
        import shutil
        import tempfile

        seed, have = item
        base = Path(tempfile.mkdtemp(prefix="hippocamp-persona-"))
        try:
            d = base / seed.id
            d.mkdir()
            for name, data in have.items():
                (d / name).write_bytes(data)
            run = _Run(replace(self.cfg, out=base), model=self.model, verifier=self.verifier,
                       ledger=StageLedger(self.cfg.give_up))  # fmt: skip
            await _persona(run, seed)
            return _persona_files(d)
        finally:
            shutil.rmtree(base, ignore_errors=True)


def _persona_files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()} if d.is_dir() else {}


def _put_persona(d: Path, files: dict[str, bytes]) -> None:
    """The persona's folder made to hold exactly ``files`` (each written whole, then renamed)."""
    d.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        tmp = d / (name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, d / name)
    for stale in d.iterdir():
        if stale.is_file() and stale.name not in files:
            stale.unlink()


async def _run_on(executor: Any, run: _Run, seeds: list[Seed]) -> None:
    """The set's personas as items of ``executor`` (a cluster); this process writes every file."""
    from hippocamp.executors import Job

    job = Job("persona", _PersonaJob(run.cfg, run.model, run.verifier))
    items = [(seed, _persona_files(run.cfg.out / seed.id)) for seed in seeds]
    lost = []
    async with contextlib.aclosing(executor.map(job, items, run.cfg.concurrency)) as outcomes:
        async for outcome in outcomes:
            seed = outcome.item[0]
            if outcome.lost is not None or outcome.result is None:
                lost.append(f"{seed.id}: {outcome.lost}")
                continue
            _put_persona(run.cfg.out / seed.id, outcome.result)
            if run.progress:
                run.progress(seed.id)
    if lost:
        raise PipelineError(f"the cluster gave up on {len(lost)} persona(s); run again to finish them: {lost[0]}")


def run_set(
    cfg: SetConfig,
    model: Any = None,
    verifier: Any = None,
    progress: Callable[[str], None] | None = None,
    executor: Any = None,
) -> SetSummary:
    """Generate (or finish) the set in ``cfg.out``; ``model``/``verifier`` are `hippocamp.models.Model`s
    (None: the template engine, and the lexical verifier only). ``executor``: a cluster's executor
    (`hippocamp.executors`) generates the personas on its workers, ``cfg.concurrency`` at a time, with
    the same files as here for the same seed; None (or the local one) generates them in this process."""
    cfg.check()
    cfg.out.mkdir(parents=True, exist_ok=True)
    _check_config(cfg)
    seeds = _seeds(cfg)
    if cfg.max_tokens is not None:
        model = None if model is None else Capped(model, cfg.max_tokens)
        verifier = None if verifier is None else Capped(verifier, cfg.max_tokens)
    run = _Run(cfg, model=model, verifier=verifier, progress=progress, ledger=StageLedger(cfg.give_up))
    if executor is not None and executor.remote:
        from hippocamp.executors import run_coroutine

        run_coroutine(_run_on(executor, run, seeds))
    else:
        asyncio.run(_run_all(run, seeds))
    summary = summarize(cfg, seeds)
    write(cfg.out / "summary.json", dump(summary))
    return summary
