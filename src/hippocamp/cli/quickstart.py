"""``hippocamp quickstart``: a synthetic profile and a persona's app logs, agents on the embedded model,
scores, a report."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from hippocamp.cli._common import check_agent_spec, console, fail, model_option, writable_dir_option


def _agents_option(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    names = [a.strip() for a in value.split(",") if a.strip()]
    if not names:
        raise click.BadParameter("no agent given; e.g. --agents evidence,rag")
    for name in names:
        check_agent_spec(name)
    return value


def _persona_agent_option(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    return value if value == "none" else check_agent_spec(value)


@click.command("quickstart")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("runs/quickstart"),
              show_default=True, callback=writable_dir_option,
              help="Where the runs, scores and report go (re-runs reuse them).")  # fmt: skip
@click.option("--model", default=None, callback=model_option,
              help="Any model string (default: the installed embedded model).")  # fmt: skip
@click.option("--judge", default=None, callback=model_option, help="Judge model (default: the same as --model).")
@click.option("--limit", default=3, show_default=True, type=click.IntRange(min=0), help="Questions per agent (0: all).")
@click.option("--agents", default="evidence,rag", show_default=True, callback=_agents_option,
              help="Agents to run, comma-separated.")  # fmt: skip
@click.option("--seed", default=7, show_default=True, type=int, help="Seed of the synthetic profile.")
@click.option("--persona-agent", default="rag", show_default=True, callback=_persona_agent_option,
              help="Agent for the P-ContextBench persona leg (one case per type T1–T5); 'none' skips it.")  # fmt: skip
@click.option("--profile", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Answer questions about your own files instead (no scores: there is no gold).")  # fmt: skip
@click.option("--questions", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="With --profile: a file of questions, one per line (default: asked interactively).")  # fmt: skip
def quickstart(out: Path, model: str | None, judge: str | None, limit: int, agents: str, seed: int,
               persona_agent: str, profile: Path | None, questions: Path | None) -> None:  # fmt: skip
    """Generate a small synthetic profile, index it, run the default agent and a baseline on its
    questions with the embedded model, score them with the robust judge; answer one case of each
    P-ContextBench type over a generated persona's messenger and calendar logs (rubric-scored); write
    one HTML report. Offline; no API key."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from hippocamp.cli.run import _default_model
    from hippocamp.quickstart import answer_questions
    from hippocamp.quickstart import quickstart as run_quickstart

    spec = model or _default_model()
    small = spec in ("local:smollm2",)
    names = tuple(a.strip() for a in agents.split(",") if a.strip())
    if profile is not None:
        asked = _questions(questions)
        path = answer_questions(profile, asked, out, agent=names[0], model=spec, small_model=small)
        click.echo(path.read_text(encoding="utf-8"))
        click.echo(f"wrote {path}")
        return
    err = console(stderr=True)
    with Progress(TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, disable=not err.is_terminal) as bar:  # fmt: skip
        tasks: dict[str, int] = {}

        def stage(name: str, done: int, total: int | None) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=total)
            bar.update(tasks[name], completed=done, total=total)

        try:
            result = run_quickstart(out, model=spec, judge=judge, agents=names, limit=limit or None, seed=seed,
                                    small_model=small, stage=stage,
                                    persona_agent=None if persona_agent == "none" else persona_agent)  # fmt: skip
        except Exception as exc:  # a clear line instead of a traceback; the re-run resumes
            fail(f"quickstart stopped: {type(exc).__name__}: {exc} (re-run to resume)", code=1)
    click.echo(f"\nmodel {result.model}, judge {result.judge} (robust; persona cases: the P-ContextBench rubrics)\n")
    click.echo(f"{'agent':<16} {'questions':>9} {'accuracy':>9} {'unscored':>9} {'file F1':>8} {'s/question':>11}")
    for r in result.rows:
        acc = "n/a" if r["accuracy"] is None else f"{100 * r['accuracy']:.0f}%"
        f1 = "n/a" if r["file_f1"] is None else f"{100 * r['file_f1']:.0f}%"
        med = "n/a" if r["median_s"] is None else f"{r['median_s']:.1f}"
        click.echo(f"{r['agent']:<16} {r['questions']:>9} {acc:>9} {r['unscored']:>9} {f1:>8} {med:>11}")
    if result.report_html:
        click.echo(f"\nreport: {result.report_html}")


def _questions(path: Path | None) -> list[str]:
    if path is not None:
        asked = [q.strip() for q in path.read_text(encoding="utf-8").splitlines() if q.strip()]
    elif sys.stdin.isatty():
        asked = []
        click.echo("Ask questions about your files; an empty line ends.")
        while q := click.prompt("question", default="", show_default=False).strip():
            asked.append(q)
    else:
        asked = [q.strip() for q in sys.stdin.read().splitlines() if q.strip()]
    if not asked:
        fail("no questions given")
    return asked
