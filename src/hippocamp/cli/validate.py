"""``hippocamp validate``: check records against their profile; exit 0 (clean), 1 (errors), 2 (unreadable)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from hippocamp.cli._common import console, did_you_mean, fail, resolve_input


@click.command("validate")
@click.argument("records", required=False, type=click.Path(path_type=Path))
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder holding the profile's files.")  # fmt: skip
@click.option("--variant", default="Fullset", show_default=True, type=click.Choice(["Fullset", "Subset"]),
              help="Release variant: Fullset or Subset.")  # fmt: skip
@click.option("--rule", "rules", multiple=True, help="Run only these rules (repeatable).")
@click.option("--skip", "skips", multiple=True, help="Skip these rules (repeatable).")
@click.option(
    "--time-slack",
    type=click.FloatRange(min=0),
    default=0.5,
    show_default=True,
    help="Seconds a time range may run past the end of its media.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--show-info", is_flag=True, help="Also list informational findings.")
@click.option("--example", is_flag=True, help="Validate the bundled example profile.")
@click.option("--list-rules", is_flag=True, help="List the rules and exit.")
def validate(
    records: Path | None,
    root: Path | None,
    variant: str,
    rules: tuple[str, ...],
    skips: tuple[str, ...],
    time_slack: float,
    as_json: bool,
    show_info: bool,
    example: bool,
    list_rules: bool,
) -> None:
    """Check HippoCamp RECORDS (a records JSON file or a profile folder) against the profile's files.

    Runs HippoCamp's four validation rules (evidence references, file paths, locator ranges
    measured on the real files, answer support), the label and groundedness rules, and support-set
    bookkeeping. Every problem names the file, the record, the field and what was expected.
    Exit code: 0 no errors, 1 errors found, 2 the input could not be read.
    """
    from hippocamp import registry
    from hippocamp.validate import ValidateOptions, rule_names, validate_profile

    if list_rules:
        for name, check in registry.items("rule"):
            doc = (check.__doc__ or "").strip().splitlines()
            click.echo(f"{name:16s} {doc[0] if doc else ''}")
        return
    known = rule_names()
    unknown = [r for r in (*rules, *skips) if r not in known]
    if unknown:
        hints = "".join(did_you_mean(r, known) for r in unknown)
        fail(f"unknown rule(s): {', '.join(unknown)}{hints}; known: {', '.join(known)}")
    profile = resolve_input(records, root, variant, example)
    selected = [r for r in (rules or known) if r not in skips]
    try:
        report = validate_profile(profile, ValidateOptions(time_slack=time_slack), rules=selected)
    except ValueError as exc:
        fail(str(exc))
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        _print_report(report, show_info)
    sys.exit(1 if report.errors else 0)


def _print_report(report, show_info: bool) -> None:  # type: ignore[no-untyped-def]
    from rich.table import Table

    out = console()
    shown = [p for p in report.problems if show_info or p.severity != "info"]
    if shown:
        table = Table(title=f"Problems in {report.records_file}", show_lines=False, expand=True)
        table.add_column("severity", no_wrap=True)
        table.add_column("rule", no_wrap=True)
        table.add_column("record", no_wrap=True)
        table.add_column("field", overflow="fold")
        table.add_column("problem", overflow="fold", ratio=3)
        style = {"error": "bold red", "warning": "yellow", "info": "dim"}
        for p in shown:
            record = (
                p.record_id if p.record_id is not None else ("" if p.record_index is None else f"#{p.record_index}")
            )
            detail = p.message
            if p.expected is not None:
                detail += f"\n  expected: {p.expected}"
            if p.found is not None:
                detail += f"\n  found: {p.found}"
            table.add_row(f"[{style[p.severity]}]{p.severity}[/]", p.rule, record, p.field, detail)
        out.print(table)
    counts = report.counts()
    verdict = "[bold red]FAILED[/]" if report.errors else "[bold green]OK[/]"
    out.print(
        f"{verdict} {report.records_read}/{report.records} records read from {report.records_file}"
        + (f" (files under {report.root})" if report.root else "")
        + f": {counts['error']} errors, {counts['warning']} warnings, {counts['info']} notes"
        + ("" if show_info or not counts["info"] else " (--show-info lists notes)")
    )
