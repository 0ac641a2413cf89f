"""``hippocamp synth``: generate synthetic personal computers with exact gold trajectories."""

from __future__ import annotations

from pathlib import Path

import click

from hippocamp.cli._common import console, fail, model_option, writable_dir_option


@click.group("synth")
def synth() -> None:
    """Generate synthetic profiles (offline, deterministic)."""


@synth.command("files")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), callback=writable_dir_option,
              help="Folder to write into.")  # fmt: skip
@click.option("--persona", default="professional", show_default=True, help="student, professional or freelancer.")
@click.option("--seed", default=0, show_default=True, type=int, help="Same seed, same bytes.")
@click.option(
    "--scale",
    default="small",
    show_default=True,
    type=click.Choice(["small", "medium", "large"]),
    help="small ~60 files (tests), medium 500+ over 4 months, large thousands over a year.",
)
@click.option("--model", default=None, callback=model_option,
              help="Rewrite filler notes with this model for variety (facts never change).")  # fmt: skip
@click.option("--jobs", default=None, type=click.IntRange(min=1), help="Render processes (default: up to 2).")
@click.option("--validate/--no-validate", default=True, show_default=True, help="Validate the records afterwards.")
def files(out: Path, persona: str, seed: int, scale: str, model: str | None, jobs: int | None, validate: bool) -> None:
    """Write a profile in the HippoCamp release layout: OUT/<Name>/, <Name>.json, <Name>_files.xlsx."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from hippocamp.synth.build import SynthError, generate
    from hippocamp.synth.world import PERSONAS

    if persona not in PERSONAS:
        from hippocamp.cli._common import did_you_mean

        fail(f"unknown persona {persona!r}{did_you_mean(persona, list(PERSONAS))}; choose one of {', '.join(PERSONAS)}")
    chat = None
    if model:
        from hippocamp.models import get_model

        try:
            chat = get_model(model)
        except Exception as exc:
            fail(f"model {model!r}: {exc}")
    con = console(stderr=True)
    with Progress(
        TextColumn("rendering"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=con, transient=True
    ) as bar:
        task = bar.add_task("render", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        try:
            result = generate(out, persona=persona, seed=seed, scale=scale, model=chat, jobs=jobs, progress=progress)
        except SynthError as exc:
            fail(str(exc))
    mods = ", ".join(f"{m} {n}" for m, n in sorted(result.by_modality.items()))
    click.echo(
        f"wrote {result.out / result.name}: {result.files} files ({mods}; {len(result.extensions)} extensions), "
        f"{result.questions} questions in {result.seconds:.1f} s"
    )
    if validate:
        from hippocamp.dataset.profile import load_profile
        from hippocamp.validate.run import validate_profile

        report = validate_profile(load_profile(result.out))
        errors = [p for p in report.problems if p.severity == "error"]
        warnings = [p for p in report.problems if p.severity == "warning"]
        click.echo(f"validate: {len(errors)} errors, {len(warnings)} warnings")
        for p in errors[:20]:
            click.echo(f"  {p.record_id} {p.field}: {p.message}", err=True)
        if errors:
            raise SystemExit(1)


from hippocamp.cli.personas import personas  # noqa: E402

synth.add_command(personas)
from hippocamp.cli.realism import realism  # noqa: E402

synth.add_command(realism)
