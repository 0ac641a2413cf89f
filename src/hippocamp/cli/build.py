"""``hippocamp build``: a benchmark profile from a person's files (screen, filter, dedup, anonymize,
cohere, review), then ``approve`` and ``release``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from hippocamp.cli._common import console, fail


@click.group("build", invoke_without_command=False)
def build_group() -> None:
    """Build a benchmark profile from real files; the source folder is never modified."""


@build_group.command("run")
@click.argument("source", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--work", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Work folder (private: the mapping, the extraction cache and the review live here).")  # fmt: skip
@click.option("--name", default="Profile", show_default=True, help="The released profile's name.")
@click.option("--questions", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="HippoCamp records about the source's files, rewritten with the same mapping.")  # fmt: skip
@click.option("--keep", "keep_policy", default="latest", show_default=True,
              type=click.Choice(["latest", "largest", "shortest-path"]), help="Which duplicate to keep.")  # fmt: skip
@click.option("--force", is_flag=True, help="Go on when the source fails screening (recorded).")
@click.option("--min-files", type=int, default=500, show_default=True, help="C1: user files at least.")
@click.option("--min-days", type=float, default=90.0, show_default=True, help="C2: days of activity at least.")
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True, help="Worker processes.")
@click.option("--no-media", is_flag=True, help="Do not OCR images and transcribe recordings to find identifiers.")
def run(source: Path, work: Path, name: str, questions: Path | None, keep_policy: str, force: bool,
        min_files: int, min_days: float, workers: int, no_media: bool) -> None:  # fmt: skip
    """Run the stages up to the review; re-running resumes."""
    from hippocamp.build.pipeline import BuildConfig, BuildError, run_build
    from hippocamp.build.screen import ScreenConfig

    config = BuildConfig(name=name, questions=questions, keep_policy=keep_policy, force=force, workers=workers,
                         screen=ScreenConfig(min_files=min_files, min_days=min_days),
                         perceive_media=not no_media)  # fmt: skip
    out = console(stderr=True)

    def progress(stage: str, done: int, total: int) -> None:
        if done == total or done % 50 == 0:
            out.print(f"{stage}: {done}/{total} files", highlight=False)

    try:
        state = run_build(source, work, config, progress=progress)
    except BuildError as exc:
        fail(str(exc), 1)
    a = state.stages["anonymize"]
    out.print(f"{a['files']} files ready, {len(state.failures)} left out with a reason, "
              f"{len(a['residual'])} residual identifiers, {len(state.stages['cohere']['violations'])} "
              "coherence violations")  # fmt: skip
    out.print(f"review: {state.stages['review']['page']}")
    out.print(f"then: hippocamp build approve {work} --by NAME; hippocamp build release {work} OUT")


@build_group.command("approve")
@click.argument("work", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--by", required=True, help="Who reviewed and approves the profile.")
@click.option("--note", default="", help="A note kept with the approval.")
def approve_cmd(work: Path, by: str, note: str) -> None:
    """Record approval of the current review (bound to its hash)."""
    from hippocamp.build.pipeline import BuildError, approve

    try:
        data = approve(work, by, note)
    except BuildError as exc:
        fail(str(exc), 1)
    click.echo(json.dumps(data))


@build_group.command("release")
@click.argument("work", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
def release_cmd(work: Path, out: Path) -> None:
    """Write the approved profile in the HippoCamp layout (files, records, metadata sheet)."""
    from hippocamp.build.pipeline import BuildError, release

    try:
        path = release(work, out)
    except BuildError as exc:
        fail(str(exc), 1)
    click.echo(str(path))
