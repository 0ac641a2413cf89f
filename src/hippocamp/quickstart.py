"""The quickstart: from nothing to a scored report, offline, on the embedded model.

Stages: generate a small synthetic profile (``synth:small:SEED``, cached), index it, run the default
agent (``evidence``) and one baseline (``rag``) on its first questions with the local model, score
both with the robust judge; then a P-ContextBench leg: one template persona's messenger and calendar logs
(``synth personas``), one case of each type T1–T5 answered by ``persona_agent``, graded by the rubrics;
and write one report over all of it. Every stage reuses what exists: the cached profile,
the incremental store, resumable runs and scores, and the model request cache, so a second run only
redoes what changed. ``--profile DIR`` answers questions about the user's own files instead (no gold,
so no scores): the answers with their sources go to ``answers.md``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["QuickstartResult", "Stage", "answer_questions", "quickstart"]

#: (stage name, done, total): a progress callback per stage
Stage = Callable[[str, int, int | None], None]


@dataclass
class QuickstartResult:
    out: Path
    report_html: Path | None
    report_md: Path | None
    rows: list[dict[str, Any]] = field(default_factory=list)
    model: str = ""
    judge: str = ""


def _budget(small: bool) -> Any:
    from hippocamp.agents.base import Budget

    # a small model (SmolLM2, 2,048-token server contexts) reads less per step
    return Budget(max_steps=6, k=3 if small else 4, max_tokens=30_000, max_seconds=600, max_evidence_chars=20_000)


def quickstart(
    out: Path,
    *,
    model: str,
    judge: str | None = None,
    agents: tuple[str, ...] = ("evidence", "rag"),
    limit: int | None = 5,
    seed: int = 7,
    scale: str = "small",
    small_model: bool = False,
    stage: Stage | None = None,
    persona_agent: str | None = "rag",
) -> QuickstartResult:
    """Run the quickstart into ``out`` (see the module doc); ``judge`` defaults to ``model``."""
    from hippocamp.models import get_model
    from hippocamp.runs import SuiteOptions, load_suite, run
    from hippocamp.runs.rundir import RunDir
    from hippocamp.scoring.judge import make_judge
    from hippocamp.scoring.run_scores import score_run

    stage = stage or (lambda *_: None)
    out.mkdir(parents=True, exist_ok=True)
    stage("profile", 0, None)

    def indexing(name: str, done: int, total: int, _path: str | None) -> None:
        stage(f"index ({name})", done, total)

    suite = load_suite(f"synth:{scale}:{seed}", SuiteOptions(store=out / "store.sqlite"), progress=indexing)
    stage("profile", 1, 1)
    budget = _budget(small_model)
    run_dirs: list[Path] = []
    labels: dict[Path, str] = {}
    try:
        for agent in agents:
            run_dir = out / "runs" / agent

            def progress(_episode: Any, done: int, total: int, name: str = agent) -> None:
                stage(f"run {name}", done, total)

            asyncio.run(run(suite, agent, model, out=run_dir, limit=limit, concurrency=1, budget=budget,
                            progress=progress))  # fmt: skip
            run_dirs.append(run_dir)
            labels[run_dir] = run_dir.name
    finally:
        suite.close()
    if persona_agent:
        persona_run = _personas(out, persona_agent, model, seed, 1 if limit else None, budget, stage)
        run_dirs.append(persona_run)
        labels[persona_run] = f"{persona_agent} · persona"
    judge_spec = judge or model
    rows = []
    for run_dir in run_dirs:
        opened = RunDir.open(run_dir)
        bench = opened.benchmark
        needs_model = bench.judge_model_needed  # P-ContextBench's rubrics need none
        verdicts = make_judge("robust", get_model(judge_spec)) if needs_model else make_judge("facts")

        def scoring(done: int, total: int, name: str = run_dir.name) -> None:
            stage(f"score {name}", done, total)

        report = asyncio.run(score_run(run_dir, verdicts, concurrency=1, progress=scoring))
        rows.append({"agent": labels[run_dir], **bench.headline(opened, report)})
    stage("report", 0, 1)
    html, md = _write_report(run_dirs, out)
    stage("report", 1, 1)
    (out / "quickstart.json").write_text(json.dumps({"model": model, "judge": judge_spec, "rows": rows}, indent=2))
    return QuickstartResult(out, html, md, rows, model, judge_spec)


def _personas(out: Path, agent: str, model: str, seed: int, per_type: int | None, budget: Any, stage: Stage) -> Path:
    """The P-ContextBench leg: one template persona (cached), ``per_type`` cases of each type answered by
    ``agent`` over its app logs; returns the run directory."""
    from hippocamp.runs import SuiteOptions, load_suite, run
    from hippocamp.synth.personas import SetConfig, run_set

    stage("persona", 0, 1)
    run_set(SetConfig(out=out / "personas", n=1, seed=seed))
    stage("persona", 1, 1)
    suite = load_suite(f"pcontext:{out / 'personas'}", SuiteOptions(store=out / "personas.sqlite"))
    run_dir = out / "runs" / f"pcontext-{agent}"
    try:

        def progress(_episode: Any, done: int, total: int) -> None:
            stage(f"run {agent} (persona)", done, total)

        asyncio.run(run(suite, agent, model, out=run_dir, per_type=per_type, concurrency=1, budget=budget,
                        progress=progress))  # fmt: skip
    finally:
        suite.close()
    return run_dir


def _write_report(run_dirs: list[Path], out: Path) -> tuple[Path | None, Path | None]:
    from hippocamp.report import write_report

    paths = write_report(run_dirs, out / "report")
    return paths.get("html"), paths.get("md")


async def _answer_all(profile: Path, questions: list[str], agent: str, model: str, budget: Any,
                      store: Path | None) -> list[tuple[str, Any]]:  # fmt: skip
    from hippocamp.agents import Task, make_agent
    from hippocamp.models import get_model
    from hippocamp.runs import SuiteOptions, load_suite

    suite = load_suite(str(profile), SuiteOptions(store=store))
    chat = get_model(model)
    try:
        out = []
        for i, q in enumerate(questions, 1):
            answer = await make_agent(agent).solve(Task(f"q{i}", q, suite.name), suite.env(), chat, budget)
            out.append((q, answer))
        return out
    finally:
        await chat.aclose()
        suite.close()


def answer_questions(profile: Path, questions: list[str], out: Path, *, agent: str, model: str,
                     small_model: bool = False) -> Path:  # fmt: skip
    """Answer ``questions`` about the files of ``profile``; writes and returns ``out/answers.md``."""
    out.mkdir(parents=True, exist_ok=True)
    answers = asyncio.run(_answer_all(profile, questions, agent, model, _budget(small_model), out / "store.sqlite"))
    lines = [f"# Answers about {profile}", "", f"agent `{agent}`, model `{model}`", ""]
    for q, a in answers:
        lines += [f"## {q}", "", a.text or f"(no answer: {a.stop}{': ' + a.error if a.error else ''})", ""]
        for e in a.evidence or [{"file_path": f} for f in a.files]:
            path = e["file_path"] if isinstance(e, dict) else e.file_path
            where = "" if isinstance(e, dict) or not e.locator else f" ({json.dumps(e.locator)})"
            lines.append(f"- `{path}`{where}")
        lines.append("")
    path = out / "answers.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
