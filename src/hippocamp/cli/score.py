"""``hippocamp score`` (a run's answers and evidence, resumable) and ``hippocamp judge calibrate``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import click

from hippocamp.cli._common import (
    console,
    executor_options,
    fail,
    model_option,
    models_option,
    new_file_option,
    open_executor_or_fail,
    unknown_name,
)

#: the choices of --convention and --judge-template, written out so that the command's help needs no
#: scoring import (a test checks them against `hippocamp.scoring.release.CONVENTIONS` and `judge.TEMPLATES`)
CONVENTIONS = ("hippocamp", "release", "release-run-evaluation")
TEMPLATES = ("hippocamp", "release-simple", "release-detailed")


def judge_mode_option(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """A registered judge (kind ``judge``: robust, simple, detailed, facts, and plug-ins)."""
    import hippocamp.scoring.pcontext.judge  # noqa: F401  (registers the Pass-2 judge)
    from hippocamp.scoring.judge import judge_names

    known = judge_names()
    if value not in known:
        raise click.BadParameter(unknown_name("judge", value, known))
    return value


def make_judge(judge: str | None, mode: str, panel: str | None, template: str = "hippocamp",
               script: str = "evaluate.py") -> Any:  # fmt: skip
    """A judge (or a `Panel`) from the command line; a judge that needs no model gets none.
    ``template`` and ``script``: the release's judge template to ask with (see `hippocamp.scoring.judge.Judge`)."""
    from hippocamp import registry
    from hippocamp.models import ModelError, get_model
    from hippocamp.scoring.judge import Panel
    from hippocamp.scoring.judge import make_judge as registered

    if not getattr(registry.get("judge", mode), "needs_model", True):
        if template != "hippocamp":
            raise click.BadParameter(f"the {mode} judge asks no model; a judge template does not apply",
                                     param_hint="--judge-template")  # fmt: skip
        return registered(mode)
    try:
        if panel:
            specs = [spec.strip() for spec in panel.split(",") if spec.strip()]
            return Panel([registered(mode, get_model(spec), template, script) for spec in specs])
        if not judge:
            from hippocamp.cli.run import _default_model

            judge = _default_model()
        return registered(mode, get_model(judge), template, script)
    except (ModelError, ValueError) as exc:  # a model that cannot be opened here (no key, not installed)
        fail(f"judge: {exc}", code=1)


def _benchmark(run_dir: Path) -> Any:
    """The benchmark of a run directory; a directory that is not a run, or whose manifest cannot be
    read, exits 2 naming the file."""
    from hippocamp.runs.rundir import RunDir, RunDirError

    try:
        return RunDir.open(run_dir).benchmark
    except RunDirError as exc:
        fail(str(exc))


@click.command("score")
@click.argument("run_dir", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--judge", default=None, callback=model_option, help="Judge model (default: the embedded local model).")
@click.option("--judge-mode", "mode", default="robust", show_default=True, callback=judge_mode_option,
              help="A registered judge: robust, simple, detailed, facts, or a plug-in's.")  # fmt: skip
@click.option("--panel", default=None, callback=models_option,
              help="Several judge models, comma-separated: majority vote.")  # fmt: skip
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(min=1))
@click.option("--slack", default=2.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds of slack for time-range units.")  # fmt: skip
@click.option("--convention", default="hippocamp", show_default=True,
              type=click.Choice(CONVENTIONS),
              help="hippocamp: cited files, normalised paths, failed judgments unscored; release: the release's "
                   "evaluate.py exactly (its file list per agent family, paths as written, failures count as no); "
                   "release-run-evaluation: its run_evaluation.py.")  # fmt: skip
@click.option("--judge-template", "template", default="hippocamp", show_default=True,
              type=click.Choice(TEMPLATES),
              help="Ask the judge model with the release's template (verbatim; the robust judge keeps its "
                   "deterministic layer around it).")  # fmt: skip
@click.option("--hippocamp-io", "io_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Score a HippoCamp release file instead of a run directory: evaluate.py input rows, "
                   "run_query.py summaries or evaluator outputs.")  # fmt: skip
@click.option("--no-judge", is_flag=True,
              help="With --hippocamp-io: no judge model (the release's 'not configured': every answer 'no' under "
                   "the release's conventions, unscored under ours); file and answer metrics only.")  # fmt: skip
@click.option("--semantic", is_flag=True,
              help="With --hippocamp-io: also the answer's embedding similarity to the ground truth (embedded "
                   "MiniLM).")  # fmt: skip
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, callback=new_file_option,
              help="With --hippocamp-io: where to write the per-query results (aggregate beside it).")  # fmt: skip
@click.option("--retrieval-k", default=10, show_default=True, type=click.IntRange(min=0),
              help="P-ContextBench runs: also measure the store's evidence recall@k (0: skip).")  # fmt: skip
@click.option("--retrieval-mode", default="hybrid", show_default=True, type=click.Choice(["fts", "vector", "hybrid"]))
@executor_options
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def score(run_dir: Path | None, judge: str | None, mode: str, panel: str | None, concurrency: int, slack: float,
          convention: str, template: str, io_file: Path | None, no_judge: bool, semantic: bool, out: Path | None,
          retrieval_k: int, retrieval_mode: str, executor_spec: str, ship: str,
          as_json: bool) -> None:  # fmt: skip
    """Judge every answer of RUN_DIR and score its evidence; writes scores.jsonl (resumable) and
    scores.summary.json. With --hippocamp-io FILE, scores a HippoCamp release file instead.

    Every score keeps both judge-failure policies and the cited, touched and retrieved file lists under
    hippocamp's and the release's path rules; --convention picks the headline. With --executor ray...
    judgments run on a cluster's workers (the judge's models open there from their model strings)."""
    if (run_dir is None) == (io_file is None):
        fail("give a RUN_DIR or --hippocamp-io FILE")
    if executor_spec != "local" and io_file is not None:
        raise click.BadParameter("applies to a RUN_DIR only", param_hint="--executor")
    for flag, value in (("--out", out), ("--no-judge", no_judge), ("--semantic", semantic)):
        if value and io_file is None:
            raise click.BadParameter(f"{flag} applies to --hippocamp-io only", param_hint=flag)
    from hippocamp.scoring.release import SCRIPT

    script = SCRIPT.get(convention, "evaluate.py")
    if io_file is not None:
        found = _read_io(io_file, convention)  # bad files are refused before any judge is opened
        chosen_judge = None if no_judge else make_judge(judge, mode, panel, template, script)
        _score_io(io_file, found, out, chosen_judge, convention, concurrency, semantic, as_json)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from hippocamp.durable import JsonlError
    from hippocamp.executors import ExecutorError
    from hippocamp.scoring.run_scores import score_run

    assert run_dir is not None
    bench = _benchmark(run_dir)
    if not (judge or panel) and not bench.judge_model_needed:
        mode = "facts"  # deterministic scoring (P-ContextBench's rubrics): a model judges only when asked
    chosen = make_judge(judge, mode, panel, template, script)
    executor = open_executor_or_fail(executor_spec, ship)
    err = console(stderr=True)
    with Progress(TextColumn("judging"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err,
                  transient=True, disable=not err.is_terminal) as bar:  # fmt: skip
        task = bar.add_task("judge", total=None)
        try:
            report = asyncio.run(
                score_run(
                    run_dir,
                    chosen,
                    concurrency=concurrency,
                    slack=slack,
                    progress=lambda d, t: bar.update(task, completed=d, total=t),
                    retrieval_k=retrieval_k,
                    retrieval_mode=retrieval_mode,
                    convention=convention,
                    executor=executor,
                )
            )
        except (FileNotFoundError, ValueError, JsonlError, ExecutorError, TypeError) as exc:
            fail(str(exc))
    s = report.summary
    if as_json:
        click.echo(json.dumps(s, indent=2, ensure_ascii=False))
        return
    if report.missing_gold:
        click.echo(f"warning: {len(report.missing_gold)} episodes have no gold record (not scored)", err=True)
    for line in bench.summary_lines(report):
        click.echo(line)
    click.echo(f"wrote {run_dir / 'scores.jsonl'} and {run_dir / 'scores.summary.json'}")


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _read_io(io_file: Path, convention: str) -> Any:
    """The release file's rows; its bad rows are reported (file, row, field) and left out; a file with
    no usable row exits 2."""
    from hippocamp.scoring.hippocamp_io import HIPPOCAMP_FIELDS, read_release

    try:
        found = read_release(io_file, HIPPOCAMP_FIELDS if convention == "hippocamp" else ())
    except (OSError, ValueError) as exc:
        fail(str(exc))
    for error in found.errors:
        click.echo(f"warning: {error}", err=True)
    if not found.rows:
        fail(f"{io_file}: no row can be scored" + (f" ({len(found.errors)} invalid)" if found.errors else ""))
    return found


def _score_io(io_file: Path, found: Any, out: Path | None, judge: Any, convention: str, concurrency: int,
              semantic: bool, as_json: bool) -> None:  # fmt: skip
    from hippocamp.scoring.hippocamp_io import score_release, write_release

    results, aggregate = asyncio.run(score_release(found, judge, convention, concurrency, semantic))
    suffix = ".scored.jsonl" if convention == "hippocamp" else f".{convention}.json"
    out = out or io_file.with_name(io_file.stem + suffix)
    try:
        agg_path = write_release(out, results, aggregate, convention)
    except OSError as exc:
        fail(f"{out}: cannot write: {exc.strerror or exc}", code=1)
    if as_json:
        click.echo(json.dumps(aggregate, indent=2, default=str))
        return
    ours = aggregate["hippocamp"]
    if convention == "hippocamp":
        files = aggregate
        f1, n_files = files["f1_score"], ours["n"]
    else:
        files = aggregate["file_list_metrics"]
        f1, n_files = files["average_f1_score"], files["total_evaluated"]
    click.echo(f"{found.shape} rows, {convention} convention: {ours['judged']}/{ours['n']} judged; accuracy "
               f"{_pct(ours['accuracy'])} (failed judgments left out), {_pct(ours['accuracy_failures_as_no'])} "
               f"(counted as no); file F1 {_pct(f1)} over {n_files} rows")  # fmt: skip
    lexical = ours.get("answer_metrics") or {}
    if lexical:
        click.echo("answer metrics: " + ", ".join(f"{k} {v['mean']:.3f}" for k, v in lexical.items()
                                                   if isinstance(v, dict) and v.get("mean") is not None))  # fmt: skip
    if found.errors:
        click.echo(f"{len(found.errors)} invalid row(s) not scored (listed above)")
    click.echo(f"wrote {out} and {agg_path}")


@click.command("export-release")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), callback=new_file_option,
              help="The file to write (a JSON array).")  # fmt: skip
@click.option("--shape", default="evaluate", show_default=True, type=click.Choice(["evaluate", "run_query"]),
              help="evaluate: the release's evaluate.py input rows; run_query: run_query.py summaries (the input "
                   "of run_evaluation.py).")  # fmt: skip
@click.option("--files", "which", default="paper", show_default=True,
              type=click.Choice(["paper", "cited", "touched", "retrieved"]),
              help="The agent's file list: the one the paper used for its family, or one of the three.")  # fmt: skip
def export_release(run_dir: Path, out: Path, shape: str, which: str) -> None:
    """Write RUN_DIR's answers as rows the HippoCamp release's evaluators read, to score them with the
    release's own scripts (or with hippocamp score --hippocamp-io OUT)."""
    from hippocamp.runs.rundir import RunDir, RunDirError
    from hippocamp.scoring.hippocamp import gold_records
    from hippocamp.scoring.hippocamp_io import release_rows

    try:
        run = RunDir.open(run_dir)
        if run.benchmark_name != "hippocamp":
            fail(f"{run_dir}: a {run.benchmark_name} run; the release's evaluators read HippoCamp runs only")
        rows = release_rows(run.episodes().episodes, gold_records(run), shape, which)
    except (RunDirError, ValueError) as exc:
        fail(str(exc))
    try:
        out.write_text(json.dumps(rows, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        fail(f"{out}: cannot write: {exc.strerror or exc}", code=1)
    click.echo(f"wrote {len(rows)} {shape} row(s) with the {which} file lists to {out}")


@click.group("judge")
def judge_group() -> None:
    """How far to trust a judge."""


@judge_group.command("calibrate")
@click.option("--labeled", type=click.Path(exists=True, dir_okay=False, path_type=Path), multiple=True,
              help="Labeled answers (FinanceBench format); repeat for several files.")  # fmt: skip
@click.option("--pcontext", "pcontext", type=click.Path(exists=True, dir_okay=False, path_type=Path), multiple=True,
              help="P-ContextBench labels (rows of case, candidate answer with citations, human label); repeat "
                   "for several files. Reports the guard alone, and with --judge/--panel each model alone and "
                   "guard + models.")  # fmt: skip
@click.option("--judge", default=None, callback=model_option, help="Judge model (default: the embedded local model).")
@click.option("--panel", default=None, callback=models_option,
              help="With --pcontext: several judge models, comma-separated (majority vote).")  # fmt: skip
@click.option("--judge-mode", "mode", default="robust", show_default=True, callback=judge_mode_option,
              help="A registered judge: robust, simple, detailed, facts, or a plug-in's.")  # fmt: skip
@click.option("--self-test/--no-self-test", default=True, show_default=True,
              help="Also perturb the gold answers and count false accepts.")  # fmt: skip
@click.option("--model-alone/--no-model-alone", default=True, show_default=True,
              help="With --pcontext and a judge: also grade every row by each model alone (a call per row; the "
                   "combination asks only where the guard is not sure).")  # fmt: skip
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True)
def calibrate(labeled: tuple[Path, ...], pcontext: tuple[Path, ...], judge: str | None, panel: str | None, mode: str,
              self_test: bool, model_alone: bool, concurrency: int, as_json: bool) -> None:  # fmt: skip
    """Agreement with human labels (accuracy, Cohen's kappa, false accepts and rejects) and the
    false-accept rate on perturbed gold answers; with --pcontext, P-ContextBench's grader (the guard
    layer, judge models, and their combination) by type and by trap."""
    if not labeled and not pcontext:
        fail("give --labeled FILE (FinanceBench-style labels) or --pcontext FILE (P-ContextBench labels)")
    if pcontext:
        _calibrate_pcontext(pcontext, judge, panel, concurrency, as_json, model_alone)
        if not labeled:
            return
    from hippocamp.scoring.calibrate import agreement, load_labeled
    from hippocamp.scoring.calibrate import self_test as run_self_test

    try:
        rows = [r for path in labeled for r in load_labeled(path)]
    except (OSError, ValueError) as exc:
        fail(str(exc))
    chosen = make_judge(judge, mode, None)
    result: dict[str, Any] = {"judge": chosen.id, "mode": mode, "rows": len(rows)}
    result["agreement"] = asyncio.run(agreement(chosen, rows, concurrency)).as_dict()
    if self_test:
        golds = list({(r.question, r.reference): None for r in rows})
        test = asyncio.run(run_self_test(chosen, golds, concurrency=concurrency))
        result["self_test"] = test.__dict__
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    a = result["agreement"]
    click.echo(f"judge {chosen.id} ({mode}) on {a['n']} labeled answers ({a['unscored']} unscored):")
    click.echo(f"  accuracy {_pct(a['accuracy'])}, kappa {a['kappa']:.3f}" if a["kappa"] is not None else
               f"  accuracy {_pct(a['accuracy'])}")  # fmt: skip
    click.echo(f"  false accepts {_pct(a['false_accept'])}, false rejects {_pct(a['false_reject'])}")
    if self_test:
        t = result["self_test"]
        click.echo(f"  self-test: accepts gold {_pct(t['accepts_gold'])}; false accepts by perturbation: "
                   + ", ".join(f"{k} {_pct(v)}" for k, v in t["false_accept"].items()))  # fmt: skip


def _calibrate_pcontext(paths: tuple[Path, ...], judge: str | None, panel: str | None, concurrency: int,
                        as_json: bool, model_alone: bool = True) -> None:  # fmt: skip
    """The P-ContextBench agreement table: the guard alone, each judge model alone, guard + models."""
    from hippocamp.models import ModelError, get_model
    from hippocamp.scoring.pcontext.calibrate import agreement, grade_rows, load_labels, model_rows
    from hippocamp.scoring.pcontext.judge import Pass2Judge

    try:
        rows = [r for path in paths for r in load_labels(path)]
    except (OSError, ValueError) as exc:
        fail(str(exc))
    graders: dict[str, Any] = {"guard": asyncio.run(grade_rows(rows))}
    specs = [x.strip() for x in panel.split(",") if x.strip()] if panel else [judge] if judge else []
    if specs:
        try:
            models = [get_model(spec) for spec in specs]
        except (ModelError, ValueError) as exc:
            fail(f"judge: {exc}", code=1)
        each = [Pass2Judge([m]) for m in models]
        for spec, single in zip(specs, each, strict=True):
            if model_alone:
                graders[f"{spec} alone"] = asyncio.run(model_rows(rows, single, concurrency))
        combined = each[0] if len(each) == 1 else Pass2Judge(models)
        graders["guard + " + ",".join(specs)] = asyncio.run(grade_rows(rows, combined, concurrency))
    table = {name: agreement(rows, grades).as_dict() for name, grades in graders.items()}
    if as_json:
        click.echo(json.dumps({"rows": len(rows), "graders": table}, indent=2, ensure_ascii=False))
        return
    click.echo(f"P-ContextBench labels: {len(rows)} rows from {', '.join(str(p) for p in paths)}")
    for name, a in table.items():
        kappa = "n/a" if a["kappa"] is None else f"{a['kappa']:.3f}"
        click.echo(f"{name}: accuracy {_pct(a['accuracy'])} over {a['scored']} scored ({a['n'] - a['scored']} "
                   f"unscored), kappa {kappa}, false accepts {a['false_accepts']} of {a['wrong_rows']} rows "
                   f"labelled incorrect/FAILED")  # fmt: skip
        for group in ("by_type", "by_trap"):
            cells = ", ".join(f"{k} {v['agree']}/{v['n']}" + (f" (FA {v['false_accepts']})" if v["false_accepts"]
                              else "") for k, v in a[group].items())  # fmt: skip
            click.echo(f"  {group.replace('_', ' ')}: {cells}")
