"""``hippocamp example``: where the bundled example profile is, or a copy of it to edit."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from hippocamp.cli._common import fail


@click.command("example")
@click.option(
    "--copy",
    "copy_to",
    type=click.Path(file_okay=False, path_type=Path),
    help="Copy the example profile into this folder (as DIR/Mira) and print where.",
)
def example(copy_to: Path | None) -> None:
    """Print the folder of the bundled example profile (Mira: six questions over nine real files)."""
    from hippocamp.examples import example_profile

    source = example_profile()
    if copy_to is None:
        click.echo(str(source))
        return
    target = copy_to / source.name
    if target.exists():
        fail(f"{target} already exists; choose another folder")
    shutil.copytree(source, target)
    click.echo(str(target))
