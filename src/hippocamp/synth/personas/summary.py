"""What a persona set holds: per persona, the provenance record of ``verification.json`` (what the model
wrote, what the templates did), and for the set, ``summary.json``'s counts, both read from the artifacts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from hippocamp.durable import read_lines
from hippocamp.schema.pcontext import (
    CATEGORIES,
    GENERATED_TYPES,
    CalendarEvent,
    Case,
    CheckResult,
    Circle,
    Cluster,
    FactsFile,
    Message,
    Persona,
    Seed,
    SetSummary,
    VerificationReport,
)
from hippocamp.synth.personas.artifacts import load, load_jsonl
from hippocamp.synth.personas.cases import MODEL_CASE
from hippocamp.synth.personas.config import SetConfig
from hippocamp.synth.personas.filler import WrittenBatch
from hippocamp.synth.personas.fragments import LogContext, template_fragments
from hippocamp.synth.personas.recover import draft_keys
from hippocamp.synth.personas.verify import item_tokens, kind_tokens

__all__ = ["provenance", "summarize"]


def provenance(
    generator: str,
    calls: Counter[str],
    ctx: LogContext,
    clusters: list[Cluster],
    messages: list[Message],
    events: list[CalendarEvent],
    cases: list[Case],
    dropped: list[str],
    d: Path,
) -> CheckResult:
    """What the model wrote and what the templates did, read from the artifacts (and ``calls``, the
    persona's answers in this run, by `model.StageLedger`). A record, not a test: it always passes."""
    measured: dict[str, float | int | str | None] = {
        "generator": generator,
        "persona": "model" if ctx.persona.generator.startswith("model:") else "template",
        "circle": "model" if ctx.circle.generator.startswith("model:") else "template",
    }
    by_model = sum(1 for c in clusters if not _from_templates(ctx, c))
    measured |= {"clusters_model": by_model, "clusters_template": len(clusters) - by_model}
    batches = []
    if (d / "model_filler.jsonl").is_file():
        batches = read_lines(d / "model_filler.jsonl", WrittenBatch.model_validate, key=lambda b: b.id).items
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
                model_tokens += item_tokens(item)
            else:
                template_tokens += item_tokens(item)
        measured |= {
            f"{kind}_batches_model": len(mine),
            f"{kind}_items_model": sum(len(b.items) for b in mine),
            f"{kind}_items_refused": sum(len(b.rejected) for b in mine),
            f"{kind}_tokens_model": model_tokens,
            f"{kind}_tokens_template": template_tokens,
        }
    from_model = sum(1 for c in cases if MODEL_CASE.search(c.id))
    measured |= {"cases_model": from_model, "cases_template": len(cases) - from_model, "cases_dropped": len(dropped)}
    for key, n in sorted(calls.items()):
        measured[f"calls_{key}"] = n
    return CheckResult(name="provenance", passed=True, measured=measured)


def _from_templates(ctx: LogContext, cluster: Cluster) -> bool:
    """Whether the templates wrote the cluster's fragments: they are one of the template wordings of its
    last attempt (`recover.draft_keys`: a rewrite after a failed search compares several)."""
    attempt = cluster.attempts[-1].attempt if cluster.attempts else 1
    mine = [f.model_dump() for f in cluster.fragments]
    keys = draft_keys(attempt) if attempt > 1 else [attempt]
    return any(
        mine == [f.model_dump() for f in template_fragments(ctx, cluster.id, cluster.fact_ids, key)] for key in keys
    )


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
    passed_at: Counter[str] = Counter()
    ratios, shares, failed = [], [], []
    generators = set()
    for seed in seeds:
        d = cfg.out / seed.id
        persona = load(d / "persona.json", Persona)
        facts = load(d / "facts.json", FactsFile)
        circle = load(d / "circle.json", Circle)
        clusters = load_jsonl(d / "clusters.jsonl", Cluster) or []
        messages = load_jsonl(d / "messenger.jsonl", Message) or []
        events = load_jsonl(d / "calendar.jsonl", CalendarEvent) or []
        cases = load_jsonl(d / "cases.jsonl", Case) or []
        report = load(d / "verification.json", VerificationReport)
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
                passed_at[str(c.attempts[-1].attempt if c.attempts else 1)] += len(c.fragments)
            else:
                counts["fragments_failed"] += len(c.fragments)
        counts["messages"] += len(messages)
        counts["events"] += len(events)
        by_kind.update(i.kind for i in [*messages, *events])
        t = kind_tokens([*messages, *events])
        tok.update(t)
        if t["evidence"]:
            ratios.append((t["filler"] + t["decoy"]) / t["evidence"])
        if t["filler"] + t["decoy"]:
            shares.append(t["decoy"] / (t["filler"] + t["decoy"]))
        by_type.update(c.type for c in cases)
        for check in report.checks:
            if check.name == "recoverability":
                counts["recovery_facts"] += int(check.measured.get("facts") or 0)
                counts["recovery_found"] += int(check.measured.get("recovered_at_k") or 0)
        counts["rejected"] += len(report.rejected_cases)
        counts["passed"] += int(report.passed)
        if not report.passed:
            failed.append(seed.id)
    fragments = sum(by_app.values())
    generated = sum(by_type.values()) + counts["rejected"]
    return SetSummary(
        personas=len(seeds),
        generator=", ".join(sorted(generators)) or cfg.model,
        verifier="lexical" + (f"+model:{cfg.verifier}" if cfg.verifier else "") + f"+retrieval@{cfg.recovery_k}",
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
        cases_by_type={t: by_type.get(t, 0) for t in GENERATED_TYPES},
        cases_generated=generated,
        cases_rejected=counts["rejected"],
        case_rejection_rate=round(counts["rejected"] / generated, 4) if generated else 0.0,
        fragment_rejection_rate=round(counts["fragments_rejected"] / (fragments + counts["fragments_rejected"]), 4)
        if fragments + counts["fragments_rejected"]
        else 0.0,
        personas_passed=counts["passed"],
        failed_personas=sorted(set(failed)),
        recovery_k=cfg.recovery_k,
        fragments_by_attempt={n: passed_at.get(n, 0) for n in ("1", "2", "3")},
        fragment_attempt_shares={
            n: round(passed_at.get(n, 0) / fragments, 4) if fragments else 0.0 for n in ("1", "2", "3")
        },
        fragments_rejected=counts["fragments_failed"],
        recovery_recall=round(counts["recovery_found"] / counts["recovery_facts"], 4)
        if counts["recovery_facts"]
        else 0.0,
    )
