"""Helpers shared by the CLI commands: console, clear failures, finding the input profile."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from rich.console import Console

    from hippocamp.dataset.profile import Profile

#: exit code for input that could not be read at all
EXIT_UNREADABLE = 2


def console(stderr: bool = False) -> Console:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def fail(message: str, code: int = EXIT_UNREADABLE) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code`` (2: input unreadable)."""
    import click

    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def resolve_input(records: Path | None, root: Path | None, variant: str, example: bool) -> Profile:
    """Load the profile named on the command line (or the bundled example); exit 2 when unreadable."""
    from hippocamp.dataset.profile import ProfileError, load_profile
    from hippocamp.schema.io import RecordsFileError

    if example:
        if records is not None:
            fail("give either RECORDS or --example, not both")
        from hippocamp.examples import example_profile

        records = example_profile()
    if records is None:
        fail("give a records file or profile folder (or --example for the bundled example)")
    try:
        return load_profile(records, root=root, variant=variant)
    except (ProfileError, RecordsFileError) as exc:
        fail(str(exc))
