"""The P-ContextBench construction pipeline: seeds -> persona (interview, facts, audit) -> circle ->
app logs -> cases + verification, one directory per persona, plus ``summary.json`` for the set.

Resumable: a stage whose artifacts exist and validate is skipped; once a stage runs, every later
stage of that persona runs again. Artifacts are written whole (temporary file, then rename), and the
clusters of stage 4 are appended one fsynced line each (`hippocamp.durable`), so a killed run
continues where it stopped, cluster by cluster. With a model, personas and clusters are generated
concurrently; a model that fails at a stage is replaced by the template engine for that stage and
the fallback is recorded in ``verification.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from collections.abc import Callable
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
from hippocamp.pcontext.logs import LogContext, assemble, lexical_verify, make_clusters, render_ics, template_fragments
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

__all__ = ["MAX_ATTEMPTS", "PipelineError", "SetConfig", "run_set", "summarize", "verify_persona"]

MAX_ATTEMPTS = 3
M = TypeVar("M", bound=BaseModel)


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

    def check(self) -> None:
        if self.n < 1:
            raise PipelineError(f"--n must be at least 1, got {self.n}")
        if self.days < 14:
            raise PipelineError(f"--days must be at least 14, got {self.days}")
        if self.filler_ratio < 0:
            raise PipelineError(f"--filler-ratio must be >= 0, got {self.filler_ratio}")
        if not 0 <= self.decoy_share <= 1:
            raise PipelineError(f"--decoys must be between 0 and 1, got {self.decoy_share}")
        if self.contacts < 1:
            raise PipelineError(f"--contacts must be at least 1, got {self.contacts}")
        if self.facts < self.changes + 2:
            raise PipelineError(f"--facts must be at least {self.changes + 2} (changes + 2), got {self.facts}")

    def as_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("out")
        d.pop("concurrency")
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

    @property
    def generator(self) -> str:
        return "template" if self.model is None else f"model:{self.model.id}"

    def note(self, pid: str, stage: str, exc: BaseException) -> None:
        msg = f"{stage}: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        self.fallbacks.setdefault(pid, []).append(msg)


async def _stage_persona(run: _Run, seed: Seed, d: Path) -> tuple[Persona, list[Fact]]:
    cfg = run.cfg
    rng = rng_for(cfg.seed, seed.id, "facts")
    generator = "template"
    facts: list[Fact] | None = None
    turns = None
    audit_report = None
    if run.model is not None:
        from hippocamp.pcontext import modelgen

        try:
            turns = await modelgen.interview(run.model, seed)
            facts, successors = await modelgen.distill(run.model, seed, turns)
            facts, audit_report = await modelgen.audit(run.model, seed, facts)
            facts = modelgen.changes(facts, successors, seed.id, cfg.start, cfg.days, rng, cfg.changes)
            generator = run.generator
        except Exception as exc:  # an outage or an unusable answer: the template engine stands in
            run.note(seed.id, "persona", exc)
            facts = None
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

        try:
            circle = await modelgen.circle(run.model, persona, facts, run.cfg.contacts)
        except Exception as exc:
            run.note(persona.id, "circle", exc)
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

            try:
                frags = await modelgen.fragments(run.model, ctx, cid, fact_ids, attempt, feedback)
            except Exception as exc:
                run.note(ctx.persona.id, f"fragments {cid} attempt {attempt}", exc)
        if frags is None:
            frags = template_fragments(ctx, cid, fact_ids, attempt)
        fragments = frags
        result = lexical_verify(frags, facts, ctx.facts, attempt)
        if run.verifier is not None:
            from hippocamp.pcontext import modelgen

            try:
                judged = await modelgen.verify_cluster(run.verifier, frags, facts, attempt)
                result = VerifierAttempt(
                    attempt=attempt,
                    recovered={k: min(v, judged.recovered.get(k, 0.0)) for k, v in result.recovered.items()},
                    leaks=result.leaks + judged.leaks,
                    passed=result.passed and judged.passed,
                    verifier=f"lexical+{judged.verifier}",
                )
            except Exception as exc:  # the model verifier is down: the lexical verdict stands, recorded
                result = result.model_copy(update={"error": f"model verifier: {exc}"[:300]})
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
    log = DurableLog(path)
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
    messages, events = assemble(ctx, clusters)
    _write(d / "messenger.jsonl", _jsonl(messages))
    _write(d / "calendar.jsonl", _jsonl(events))
    _write(d / "calendar.ics", render_ics(events, ctx.persona.id, f"{ctx.persona.seed.name} calendar"))
    return clusters, messages, events


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
    if run.model is not None:
        from hippocamp.pcontext import modelgen

        try:
            extra = await modelgen.cases(run.model, cctx)
            cases = [c for c in cases if c.type not in ("T4", "T5")] + extra
        except Exception as exc:
            run.note(ctx.persona.id, "cases", exc)
    accepted, report = verify_persona(
        ctx.persona, ctx.facts, ctx.circle, clusters, messages, events, cases, run.cfg.filler_ratio, run.cfg.decoy_share
    )
    old = _load(d / "verification.json", VerificationReport)
    notes = run.fallbacks.get(ctx.persona.id, [])
    report = report.model_copy(update={"fallbacks": [*(old.fallbacks if old else []), *notes]})
    _write(d / "cases.jsonl", _jsonl(accepted))
    _write(d / "verification.json", _dump(report))
    return report


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


def run_set(
    cfg: SetConfig, model: Any = None, verifier: Any = None, progress: Callable[[str], None] | None = None
) -> SetSummary:
    """Generate (or finish) the set in ``cfg.out``; ``model``/``verifier`` are `hippocamp.models.Model`s
    (None: the template engine, and the lexical verifier only)."""
    cfg.check()
    cfg.out.mkdir(parents=True, exist_ok=True)
    _check_config(cfg)
    seeds = _seeds(cfg)
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
