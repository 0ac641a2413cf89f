"""``hippocamp stats``: counts, complexity distributions and difficulty of HippoCamp questions."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hippocamp.cli._common import console, fail, writable_dir_option
from hippocamp.dataset.profile import Profile, ProfileError, load_profile
from hippocamp.dataset.stats import AXES, BENCHMARK, Axis, DatasetStats, compute_stats, merged_bins
from hippocamp.schema.io import RecordsFileError

__all__ = ["stats"]

#: how many problems to show per input whose records could not all be read
_SHOWN_PROBLEMS = 3


@click.command("stats")
@click.argument("records", nargs=-1, type=click.Path(path_type=Path))
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder of the profile's files (with exactly one input).")  # fmt: skip
@click.option(
    "--variant",
    type=click.Choice(["Fullset", "Subset"]),
    default="Fullset",
    show_default=True,
    help="Which variant of a release profile folder to read.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    callback=writable_dir_option,
    help="Write stats.json, questions.jsonl and the figures (PNG) here.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON instead of tables.")
@click.option("--example", is_flag=True, help="Add the bundled example profile to the inputs.")
def stats(
    records: tuple[Path, ...],
    root: Path | None,
    variant: str,
    out_dir: Path | None,
    as_json: bool,
    example: bool,
) -> None:
    """Counts, distributions and difficulty of the questions in RECORDS.

    RECORDS are records files or profile folders (a release's <Name>/ or <Name>/Fullset). The
    difficulty score is fitted over all the questions given, then each question is scored.
    """
    inputs = list(records)
    if example:
        from hippocamp.examples import example_profile

        inputs.append(example_profile())
    if not inputs:
        raise click.UsageError("give records files or profile folders, or --example")
    if root is not None and len(inputs) != 1:
        raise click.UsageError(f"--root applies to exactly one input, got {len(inputs)}")
    try:
        profiles = [load_profile(path, root=root, variant=variant) for path in inputs]
    except (ProfileError, RecordsFileError) as exc:
        fail(str(exc))
    for profile in profiles:
        _report_problems(profile)
    try:
        result = compute_stats([(p.name, p.records, p.times_of) for p in profiles])
    except ValueError as exc:
        fail(f"{', '.join(map(str, inputs))}: {exc}")
    if as_json:
        click.echo(result.model_dump_json(indent=2, exclude={"rows"}))
    else:
        _print_tables(console(), result)
    if out_dir is not None:
        written = _write(result, out_dir)
        click.echo("wrote:\n" + "\n".join(f"  {path}" for path in written), err=as_json)


def _report_problems(profile: Profile) -> None:
    """Say, on stderr, how many records of a profile could not be read, with the first problems."""
    if not profile.problems:
        return
    source = profile.records_file
    skipped = source.total - len(source.records) if source else 0
    shown = profile.problems[:_SHOWN_PROBLEMS]
    click.echo(
        f"warning: {profile.name}: {skipped} record(s) could not be read and were skipped; "
        f"{len(profile.problems)} problem(s), the first {len(shown)}:",
        err=True,
    )
    for problem in shown:
        click.echo(f"  {problem}", err=True)


def _write(result: DatasetStats, out_dir: Path) -> list[Path]:
    """Write ``stats.json`` (without rows), ``questions.jsonl`` (one row per question) and the figures."""
    from hippocamp.report import plot_stats

    out_dir.mkdir(parents=True, exist_ok=True)
    summary, questions = out_dir / "stats.json", out_dir / "questions.jsonl"
    summary.write_text(result.model_dump_json(indent=2, exclude={"rows"}) + "\n", encoding="utf-8")
    questions.write_text("".join(row.model_dump_json() + "\n" for row in result.rows), encoding="utf-8")
    return [summary, questions, *plot_stats(result, out_dir)]


def _print_tables(console: Console, result: DatasetStats) -> None:
    profiles = len(result.profiles)
    console.print(f"[bold]{result.questions}[/bold] questions in [bold]{profiles}[/bold] profile(s)")
    for title, counts in (
        ("task family", result.by_task),
        ("profile", result.by_profile),
        ("modality", result.by_modality),
        ("file type", result.by_file_type),
    ):
        console.print(_count_table(title, counts, result.questions))
    for axis in AXES:
        console.print(_axis_table(result, axis))
    console.print(_difficulty_table(result))


def _count_table(title: str, counts: dict[str, int], total: int) -> Table:
    """Questions per value, with their share of all questions (a question may count under several)."""
    table = Table(title=f"Questions by {title}", title_justify="left")
    table.add_column(title.capitalize())
    table.add_column("Questions", justify="right")
    table.add_column("Share", justify="right")
    for name, count in counts.items():
        table.add_row(escape(name), str(count), f"{100 * count / total:.1f}%")
    return table


def _groups(result: DatasetStats) -> list[str]:
    return [*result.profiles, BENCHMARK]


def _axis_table(result: DatasetStats, axis: Axis) -> Table:
    """One row per profile and the benchmark: questions per value, the long tail merged as in the figures."""
    table = Table(title=f"{axis.title}: {axis.label.lower()} (value:questions)", title_justify="left")
    table.add_column("Profile")
    table.add_column("Questions", justify="right")
    table.add_column("Distribution")
    for name in _groups(result):
        group = result.groups[name]
        bins = merged_bins(getattr(group, axis.key), axis.tail_quantile)
        table.add_row(escape(name), str(group.questions), "  ".join(f"{label}:{n}" for label, n in bins))
    return table


def _difficulty_table(result: DatasetStats) -> Table:
    """Mean, median and share of hard questions per profile and overall, with the mean per task family."""
    tasks = list(result.by_task)
    table = Table(title="Difficulty (0-100)", title_justify="left")
    by_task_headers = [f"Mean {t.replace('_', ' ')}" for t in tasks]
    for header in ("Profile", "Questions", "Mean", "Median", ">=70", *by_task_headers):
        table.add_column(escape(header), justify="left" if header == "Profile" else "right")
    for name in _groups(result):
        summary = result.groups[name].difficulty
        cells = [
            _number(summary.mean),
            _number(summary.median),
            "-" if summary.hard_share is None else f"{100 * summary.hard_share:.1f}%",
        ]
        by_task = [_number(summary.mean_by_task.get(t)) for t in tasks]
        table.add_row(escape(name), str(result.groups[name].questions), *cells, *by_task)
    return table


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"
