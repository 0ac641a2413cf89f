"""P-ContextBench as a benchmark plug-in: personas' app logs, the Pass-2 judge, the paper's tables.

Suites: `suite.load_pcontext_suite` (``pcontext:DIR``, or a persona folder). Scoring of record: the guard
layer alone (`hippocamp.scoring.pcontext.guard`, judge id ``pcontext-guard``) when no judge model is
given, the guard plus the judge models when one is (`hippocamp.scoring.pcontext.judge.Pass2Judge`,
``pcontext-guard+<models>``: the models decide only what the guard cannot, and an outage leaves the
episode unscored). Lines are `PContextScoreLine`, keyed like every benchmark's by (task, agent, epoch,
judge, mode), so scoring again with another judge adds lines. The summary adds the store's evidence
recall@k. Reports: Table 2 and Table 3 layouts, partial credit, failure categories, T5 sub-scores,
paired ablations (`hippocamp.report.pcontext`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from hippocamp.benchmarks.base import percent
from hippocamp.benchmarks.pcontext.suite import PContextSuite, claims, load_pcontext_suite
from hippocamp.perceive.applog import read_gold
from hippocamp.redact import redact_text
from hippocamp.registry import register
from hippocamp.report.pcontext import pcontext_run_data
from hippocamp.report.pcontext_section import build_section
from hippocamp.runs.rundir import SUMMARY, RunDir
from hippocamp.runs.suite import SuiteOptions
from hippocamp.schema.run import Episode, PContextScoreLine, ScoreLine
from hippocamp.scoring.pcontext import (
    Cited,
    Grade,
    cited_ids,
    fragment_recall,
    grade,
    retrieval_recall,
    seen_ids,
    summarize,
)
from hippocamp.scoring.pcontext.judge import GUARD_ID, MODE, Pass2Judge
from hippocamp.scoring.run_scores import ScoreOptions, ScoreProgress, ScoreReport, score_episodes, write_summary
from hippocamp.store.indexer import Progress

__all__ = ["GUARD_ID", "PContextBenchmark", "PContextSuite", "grades_of", "pass2_judge"]


def pass2_judge(judge: Any) -> Pass2Judge | None:
    """The Pass-2 judge for a ``judge`` from the command line: None (the guard alone) for no judge or
    one without a model; a `Pass2Judge` as given; else one over the models of a `Judge`, or of every
    judge of a `Panel`."""
    if judge is None or isinstance(judge, Pass2Judge):
        return judge
    judges = getattr(judge, "judges", None) or [judge]
    # a Judge holds one model, a Pass2Judge (in a panel of them) its models
    models = [m for j in judges for m in (getattr(j, "models", None) or [getattr(j, "model", None)]) if m is not None]
    return Pass2Judge(models) if models else None


def grades_of(lines: list[PContextScoreLine]) -> dict[tuple[str, int], Grade]:
    """The rubric grades of scored lines (unscored ones left out), keyed by (task, epoch)."""
    return {(s.task_id, s.epoch): Grade(**s.grade) for s in lines if s.status == "ok" and s.grade}


@register("benchmark", "pcontext")
class PContextBenchmark:
    name: ClassVar[str] = "pcontext"
    score_line: ClassVar[type[ScoreLine]] = PContextScoreLine
    judge_model_needed: ClassVar[bool] = False

    def claims(self, spec: str) -> bool:
        return claims(spec)

    def load(self, spec: str, options: SuiteOptions, progress: Progress | None) -> PContextSuite:
        return load_pcontext_suite(spec, options, progress)

    async def score(
        self, run: RunDir, judge: Any, options: ScoreOptions, progress: ScoreProgress | None
    ) -> ScoreReport:
        """Grade every episode with the guard layer; with a ``judge`` that has a model (a `Judge`,
        `Panel` or `Pass2Judge`), the guard plus the Pass-2 judge model. ``retrieval_k`` > 0 also
        measures the store's own evidence recall@k (`retrieval_recall`)."""
        gold = read_gold(str(run.manifest.suite.get("pcontext_dir") or ""))
        if gold.error:
            raise ValueError(f"{run.path}: the answer keys cannot be read: {gold.error}")
        episodes = run.episodes().episodes
        pass2 = pass2_judge(judge)
        judge_id = redact_text(pass2.id if pass2 else GUARD_ID)

        async def one(ep: Episode) -> ScoreLine:
            case, text = gold.cases[ep.task_id], ep.answer.text or ""
            persona = gold.persona(ep.task_id)
            fragment_of = gold.fragment_of.get(persona, {})
            ids = cited_ids(ep.answer, gold.known.get(persona, set()))
            gold_ids = gold.gold_ids(ep.task_id)
            cited = Cited.of(ids, fragment_of, len(gold_ids))
            status, error = "ok", None
            g: Grade | None
            shown = gold.evidence.get(persona, {})
            evidence = [shown[i] for i in gold_ids if i in shown]
            if pass2 is None:
                g = grade(case, text, cited, evidence=tuple(e["text"] for e in evidence))
                g.decided_by = "guard"
            else:
                g = await pass2.grade(case, text, cited, evidence)
            if g is None:
                status, error = "unscored", "no judge model answered"
                g = grade(case, text, cited)  # kept for the record; the line is not scored
            g.seen_recall = fragment_recall(case, seen_ids(ep.answer), fragment_of)
            usage = ep.answer.usage
            return PContextScoreLine(
                task_id=ep.task_id, agent=ep.agent, epoch=ep.epoch, judge=judge_id, mode=MODE,
                correct=g.correct if status == "ok" else None, score=int(g.correct) if status == "ok" else None,
                status=status, error=error, rationale=g.verdict, decided_by=g.decided_by or "guard",
                grade=g.as_dict(), seconds=ep.wall_s, tokens=usage.input_tokens + usage.output_tokens,
                cost=usage.cost_usd, stop=ep.answer.stop,
            )  # fmt: skip

        mine = [ep for ep in episodes if ep.task_id in gold.cases]
        scored, skipped = await score_episodes(
            run,
            mine,
            judge_id,
            MODE,
            one,
            concurrency=options.concurrency,
            progress=progress,
            executor=options.executor,
            cpus=options.cpus,
        )
        lines = [s for s in run.score_lines(judge_id, MODE) if isinstance(s, PContextScoreLine)]
        summary = summarize(grades_of(lines), gold.persona_of)
        summary["judge"] = judge_id
        summary["graded_by"] = "guard + judge model" if pass2 else "guard alone"
        summary["unscored"] = sum(s.status != "ok" for s in lines)
        store = run.manifest.suite.get("store")
        if options.retrieval_k > 0 and isinstance(store, str) and Path(store).is_file():
            fragments = {tid: gold.fragment_of.get(gold.persona(tid), {}) for tid in gold.cases}
            summary["retrieval"] = retrieval_recall(
                Path(store), gold.cases, gold.persona_of, fragments, options.retrieval_k, options.retrieval_mode
            )
        write_summary(run.path / SUMMARY, summary)
        return ScoreReport(
            scored=scored, skipped=skipped, unscored=summary["unscored"],
            missing_gold=sorted({e.task_id for e in episodes if e.task_id not in gold.cases}), summary=summary,
            judge=judge_id, mode=MODE,
        )  # fmt: skip

    def summary_lines(self, report: ScoreReport) -> list[str]:
        s = report.summary
        lines = [
            f"graded {report.scored} new, {report.skipped} already graded ({s['runs']} runs), {s['unscored']} "
            f"unscored; judge {s['judge']}",
            f"accuracy: {percent(s['accuracy'])} (answer alone, citations aside: "
            f"{percent(s.get('answer_accuracy'))}); cited evidence recall {percent(s['evidence_recall'])}; "
            f"agent's retrieval reached {percent(s.get('seen_recall'))} of the supporting fragments",
        ]
        for ctype, t in s["by_type"].items():
            k = next((key for key in t if key.startswith("pass^")), "pass^1")
            lines.append(f"  {ctype}: {percent(t['accuracy'])} of {t['n']} · worst run {percent(t['worst_run'])} · "
                         f"{k} {percent(t[k])} · answer alone {percent(t.get('answer_accuracy'))}")  # fmt: skip
        lines.insert(
            1,
            f"graded by the {s.get('graded_by', 'guard alone')}"
            + (f" (the model decided {s['decided_by_judge']} episodes)" if s.get("decided_by_judge") else ""),
        )
        t5 = s.get("t5")
        if t5:
            parts = t5["parts"]
            pen = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(t5["penalties"].items())) or "none"
            lines.append(f"  T5 sub-scores (mean of {t5['n']}): constraint recognition {parts['constraint']:.2f}/5, "
                         f"action boundary {parts['boundary']:.2f}/6, evidence grounding {parts['evidence']:.2f}/4; "
                         f"penalties: {pen}")  # fmt: skip
        if s.get("citations"):
            lines.append("citations: " + ", ".join(f"{k} {v}" for k, v in sorted(s["citations"].items())))
        r = s.get("retrieval")
        if r:
            by = ", ".join(f"{t} {percent(v)}" for t, v in r["by_type"].items())
            lines.append(f"store retrieval ({r['mode']}) evidence recall@{r['k']} over the suite's {r['cases']} "
                         f"cases with evidence: {percent(r['recall'])} ({by})")  # fmt: skip
        if s["failures"]:
            lines.append("failures: " + ", ".join(f"{k} {v}" for k, v in sorted(s["failures"].items())))
        return lines

    def headline(self, run: RunDir, report: ScoreReport) -> dict[str, Any]:
        """Accuracy over the cases (the rubrics: no file F1)."""
        s = report.summary
        seconds = sorted(line.seconds for line in run.score_lines(report.judge, report.mode))
        return {"questions": s["episodes"], "accuracy": s["accuracy"], "unscored": s["unscored"], "file_f1": None,
                "median_s": seconds[len(seconds) // 2] if seconds else None}  # fmt: skip

    def report_run(self, run: RunDir, judge_mode: str | None, judge: str | None) -> Any:
        return pcontext_run_data(run, judge_mode, judge)

    def report_section(self, runs: list[Any], figures: bool = True) -> Any:
        return build_section(runs, figures)
