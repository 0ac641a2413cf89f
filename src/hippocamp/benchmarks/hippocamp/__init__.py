"""HippoCamp as a benchmark plug-in: profile suites, judged answers with evidence scores, the paper's tables.

Suites: `suite.load_profile_suite` (a profile, ``synth:``, an imported ``suite.json``). Scoring: a judge
(`hippocamp.scoring.judge`) decides each answer against the gold answer; file P/R/F1 and atomic units
score the cited evidence (`hippocamp.scoring.hippocamp`); lines are `HippoCampScoreLine`. Reports: the
paper's Table 2 layout and the capability, difficulty and breadth tables (`hippocamp.report.build`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from hippocamp.benchmarks.base import percent
from hippocamp.benchmarks.hippocamp.suite import ProfileSuite, claims, load_profile_suite
from hippocamp.redact import redact_text
from hippocamp.registry import register
from hippocamp.report.hippocamp import build_section, profile_run_data
from hippocamp.runs.rundir import SUMMARY, RunDir
from hippocamp.runs.suite import SuiteOptions
from hippocamp.schema.run import Episode, HippoCampScoreLine, ScoreLine
from hippocamp.scoring.hippocamp import answer_metric_means, gold_records, score_line, summarize_scores
from hippocamp.scoring.judge import Panel
from hippocamp.scoring.run_scores import ScoreOptions, ScoreProgress, ScoreReport, score_episodes, write_summary
from hippocamp.store.indexer import Progress

__all__ = ["HippoCampBenchmark", "ProfileSuite"]


@register("benchmark", "hippocamp")
class HippoCampBenchmark:
    name: ClassVar[str] = "hippocamp"
    score_line: ClassVar[type[ScoreLine]] = HippoCampScoreLine
    judge_model_needed: ClassVar[bool] = True

    def claims(self, spec: str) -> bool:
        return claims(spec)

    def load(self, spec: str, options: SuiteOptions, progress: Progress | None) -> ProfileSuite:
        return load_profile_suite(spec, options, progress)

    async def score(
        self, run: RunDir, judge: Any, options: ScoreOptions, progress: ScoreProgress | None
    ) -> ScoreReport:
        if not hasattr(judge, "judge"):
            raise ValueError(f"the {getattr(judge, 'id', judge)} judge grades P-ContextBench runs only; for a "
                             "HippoCamp run choose robust, simple, detailed or facts")  # fmt: skip
        gold = gold_records(run)
        episodes = run.episodes().episodes
        judges = judge.judges if isinstance(judge, Panel) else [judge]
        judge_id = redact_text(",".join(j.id for j in judges))  # as written: keys compare equal on a re-run
        mode = judges[0].mode

        async def grade(episode: Episode) -> ScoreLine:
            record = gold[episode.task_id]
            if isinstance(judge, Panel):
                judgment, _ = await judge.judge(record.question, record.answer, episode.answer.text)
            else:
                judgment = await judge.judge(record.question, record.answer, episode.answer.text)
            judgment.judge = judge_id
            judgment.error = redact_text(judgment.error) if judgment.error else judgment.error
            return score_line(episode, record, judgment, mode, options.slack, options.iou)

        mine = [e for e in episodes if e.task_id in gold]
        scored, skipped = await score_episodes(
            run,
            mine,
            judge_id,
            mode,
            grade,
            concurrency=options.concurrency,
            progress=progress,
            executor=options.executor,
            cpus=options.cpus,
        )
        lines = [s for s in run.score_lines(judge_id, mode) if isinstance(s, HippoCampScoreLine)]
        summary = summarize_scores(lines, gold, options.convention)
        summary["answer_metrics"] = answer_metric_means(mine, gold)
        write_summary(run.path / SUMMARY, summary)
        return ScoreReport(
            scored=scored, skipped=skipped, unscored=sum(s.correct is None for s in lines),
            missing_gold=sorted({e.task_id for e in episodes if e.task_id not in gold}), summary=summary,
            judge=judge_id, mode=mode,
        )  # fmt: skip

    def summary_lines(self, report: ScoreReport) -> list[str]:
        s = report.summary
        lines = [
            f"scored {report.scored} new, {report.skipped} already scored, {s['unscored']} unscored",
            f"accuracy: {percent(s['overall']['mean'])} (profile-balanced), "
            f"{percent(s['question_weighted']['mean'])} (question-weighted)",
            f"file F1: {percent(s['file_f1_hippocamp'])} (HippoCamp convention), {percent(s['file_f1_set'])} (set)",
            f"atomic units: precision {percent(s['au_precision'])}, recall {percent(s['au_recall'])}",
        ]
        if s.get("file_lists"):
            paper = s["paper_file_list"]
            for convention, label in (("hippocamp", "paths normalised"), ("release", "paths as written")):
                cells = ", ".join(f"{name} {percent(v['f1'])}" for name, v in s["file_lists"][convention].items())
                lines.append(f"file F1 by list ({label}): {cells}")
            lines.append(f"the paper's file list for this agent: {paper}")
        if s.get("accuracy_failures_as_no") is not None and s["unscored"]:
            lines.append(f"accuracy with failed judgments counted as no (the release's policy): "
                         f"{percent(s['accuracy_failures_as_no'])}")  # fmt: skip
        if s.get("answer_metrics"):
            lines.append("answer metrics (the release's): " + ", ".join(
                f"{name} {value:.3f}" for name, value in s["answer_metrics"].items() if value is not None))  # fmt: skip
        head = s.get("headline")
        if head and head["convention"] != "hippocamp":
            lines.append(f"{head['convention']} convention: accuracy {percent(head['accuracy'])}, file "
                         f"P/R/F1 of the {head['file_list']} files {percent(head['file_precision'])}/"
                         f"{percent(head['file_recall'])}/{percent(head['file_f1'])}")  # fmt: skip
        lines += [f"  {family}: {percent(g['mean'])} of {g['n']}" for family, g in s["by_qa_type"].items()]
        return lines

    def headline(self, run: RunDir, report: ScoreReport) -> dict[str, Any]:
        s = report.summary
        return {"questions": s["episodes"], "accuracy": s["question_weighted"]["mean"], "unscored": s["unscored"],
                "file_f1": s["file_f1_hippocamp"], "median_s": s["usage"]["seconds"]["median"]}  # fmt: skip

    def report_run(self, run: RunDir, judge_mode: str | None, judge: str | None) -> Any:
        return profile_run_data(run, judge_mode, judge)

    def report_section(self, runs: list[Any], figures: bool = True) -> Any:
        return build_section(runs, figures)
