"""``hippocamp report``: the Markdown and HTML report of one or more scored runs."""

from __future__ import annotations

from pathlib import Path

import click

from hippocamp.cli._common import fail, writable_dir_option

__all__ = ["report"]


@click.command("report")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    callback=writable_dir_option,
    default=None,
    help="Where report.md, report.html and figures/ go (default: RUN_DIR/report, or ./report for several).",
)
@click.option(
    "--judge-mode",
    "mode",
    default=None,
    help="Which mode's scores to report, as scores.jsonl names it (robust, facts, rubric, ...; default: the one "
    "with most score lines).",
)
@click.option("--judge", default=None, help="Which judge's scores to report, by its id in scores.jsonl.")
@click.option("--title", default="hippocamp report", show_default=True)
def report(run_dirs: tuple[Path, ...], out: Path | None, mode: str | None, judge: str | None, title: str) -> None:
    """Write a report of RUN_DIRS (scored with 'hippocamp score'): the paper's Table 2 layout with
    bootstrap intervals, capability, difficulty, breadth and depth, cost and latency, paired comparisons
    against the first run, and every question's answers."""
    from hippocamp.cli._common import writable_dir_problem
    from hippocamp.durable import JsonlError
    from hippocamp.report.build import ReportError
    from hippocamp.report.write import write_report

    target = out or (run_dirs[0] / "report" if len(run_dirs) == 1 else Path("report"))
    if out is None and (reason := writable_dir_problem(target)):
        fail(f"{target}: {reason}; give --out")
    try:
        paths = write_report(list(run_dirs), target, judge_mode=mode, judge=judge, title=title)
    except (ReportError, JsonlError, ValueError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{target}: cannot write the report: {exc.strerror or exc}", code=1)
    click.echo(f"markdown: {paths['md']}")
    click.echo(f"html: {paths['html']}")
