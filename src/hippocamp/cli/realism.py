"""``hippocamp synth realism``: an independent realism audit of a generated persona set (issue #20)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from hippocamp.cli._common import fail


@click.command("realism")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (figures, targets, every finding).")
@click.option("--examples", default=5, show_default=True, type=click.IntRange(min=0),
              help="Findings shown per check in the Markdown report.")  # fmt: skip
def realism(folder: Path, as_json: bool, examples: int) -> None:
    """Audit the persona set in FOLDER from its files alone: shared facts, constraint violations,
    filler variety, calendar notes and message dates that contradict their times, the messenger/calendar
    split, case statistics and replies that contradict the message they answer. Findings do not change
    the exit code (0); a folder that holds no persona set exits with 2."""
    from hippocamp.synth.realism import RealismInputError, audit_set

    try:
        report = audit_set(folder)
    except RealismInputError as exc:
        fail(str(exc))
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(report.markdown(examples=examples), nl=False)
