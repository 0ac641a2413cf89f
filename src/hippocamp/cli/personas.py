"""``hippocamp synth personas``: build a P-ContextBench persona set (template engine or a model)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from hippocamp.cli._common import (
    executor_options,
    fail,
    model_option,
    open_executor_or_fail,
    writable_dir_option,
)


def _template_or_model(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    return value if value in (None, "template") else model_option(ctx, param, value)


#: the paper's main instance (P-ContextBench: 100 personas, 500 contacts, about 100 hidden facts each with
#: about 7 that change, 2.5:1 filler, no decoys); a preset fills the options not given on the command line
PRESETS: dict[str, dict[str, object]] = {
    "paper": {"n": 100, "filler_ratio": 2.5, "decoys": 0.0, "facts": 100, "contacts": 5},
}


@click.command("personas")
@click.option("--preset", type=click.Choice(sorted(PRESETS)), default=None,
              help="Settings of a published set: 'paper' = 100 personas, 5 contacts, 100 facts, 2.5:1 filler, "
                   "no decoys (options given explicitly win).")  # fmt: skip
@click.option(
    "--n", "n", default=None, type=click.IntRange(min=1), help="Number of personas (required without --preset)."
)
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), callback=writable_dir_option,
              help="Folder to write into.")  # fmt: skip
@click.option("--filter", "filter_", default=None, help="Seed filter, e.g. age=30-45,occupation=nurse.")
@click.option("--seed", default=0, show_default=True, type=int, help="Same seed, same files.")
@click.option("--days", default=90, show_default=True, type=click.IntRange(min=1), help="App-log window in days.")
@click.option("--filler-ratio", default=2.5, show_default=True, type=click.FloatRange(min=0),
              help="Filler tokens per evidence token.")  # fmt: skip
@click.option("--decoys", default=0.0, show_default=True, type=click.FloatRange(min=0, max=1),
              help="Share of filler tokens that are decoys (paper's main set: none; its ablation: 0.3).")  # fmt: skip
@click.option("--facts", default=100, show_default=True, type=click.IntRange(min=1),
              help="Hidden facts per persona (changes included).")  # fmt: skip
@click.option("--contacts", default=5, show_default=True, type=click.IntRange(min=0),
              help="Frequent contacts per persona.")  # fmt: skip
@click.option("--model", default="template", show_default=True, callback=_template_or_model,
              help="'template' or a model string.")  # fmt: skip
@click.option("--verifier", default=None, callback=model_option, help="A model that also verifies clusters.")
@click.option("--seeds-file", default=None, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="CSV/JSONL seeds.")  # fmt: skip
@click.option("--recovery", default="enforce", show_default=True, type=click.Choice(["enforce", "measure"]),
              help="Retrieval check: write again (up to 3 attempts) the clusters a fact's own question does not find, "
                   "or only measure the ranks.")  # fmt: skip
@click.option("--recovery-k", default=10, show_default=True, type=click.IntRange(min=1),
              help="A fact is found when one of its fragments is among this many search results.")  # fmt: skip
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(min=1),
              help="Model calls in flight (with --executor ray: personas in flight).")  # fmt: skip
@executor_options
def personas(
    preset: str | None,
    n: int | None,
    out: Path,
    filter_: str | None,
    seed: int,
    days: int,
    filler_ratio: float,
    decoys: float,
    facts: int,
    contacts: int,
    model: str,
    verifier: str | None,
    seeds_file: Path | None,
    recovery: str,
    recovery_k: int,
    concurrency: int,
    executor_spec: str,
    ship: str,
) -> None:
    """Write OUT/<persona>/{persona,facts,circle}.json, messenger/calendar/cases .jsonl, calendar.ics,
    verification.json, and OUT/summary.json. Re-running the same command continues a stopped run."""
    from hippocamp.synth.personas import PipelineError, SeedError, SetConfig, run_set

    if preset is not None:
        ctx = click.get_current_context()
        given = {k for k in PRESETS[preset] if ctx.get_parameter_source(k) == click.core.ParameterSource.COMMANDLINE}
        chosen = {k: v for k, v in PRESETS[preset].items() if k not in given}
        n = int(chosen.get("n", n))  # type: ignore[call-overload]
        filler_ratio = float(chosen.get("filler_ratio", filler_ratio))  # type: ignore[arg-type]
        decoys = float(chosen.get("decoys", decoys))  # type: ignore[arg-type]
        facts = int(chosen.get("facts", facts))  # type: ignore[call-overload]
        contacts = int(chosen.get("contacts", contacts))  # type: ignore[call-overload]
        click.echo(f"preset {preset}: " + ", ".join(f"{k}={v}" for k, v in chosen.items()), err=True)
    if n is None:
        fail("--n is required (or give --preset)")

    chat = judge = None
    try:
        if model != "template":
            from hippocamp.models import get_model

            chat = get_model(model)
        if verifier:
            from hippocamp.models import get_model

            judge = get_model(verifier)
    except Exception as exc:
        fail(f"model: {exc}")
    cfg = SetConfig(
        out=out, n=n, seed=seed, days=days, filler_ratio=filler_ratio, decoy_share=decoys, filter=filter_,
        seeds_file=seeds_file, model=model, verifier=verifier, contacts=contacts, facts=facts,
        recovery=recovery, recovery_k=recovery_k, concurrency=concurrency,
    )  # fmt: skip
    started = time.perf_counter()
    executor = open_executor_or_fail(executor_spec, ship)
    try:
        s = run_set(cfg, model=chat, verifier=judge, progress=lambda pid: click.echo(f"  {pid} done", err=True),
                    executor=executor)  # fmt: skip
    except (PipelineError, SeedError) as exc:
        fail(str(exc))
    click.echo(
        f"wrote {s.personas} personas to {out} in {time.perf_counter() - started:.1f} s: {s.facts} facts, "
        f"{s.fragments} fragments ({s.fragments_by_app['messenger']} messenger, {s.fragments_by_app['calendar']} "
        f"calendar), cases {s.cases_by_type}, filler ratio {s.filler_ratio['mean']:.2f}, decoy share "
        f"{s.decoy_share['mean']:.2f}; {s.personas_passed}/{s.personas} passed every check"
    )
    if s.failed_personas:
        click.echo(f"check failures: {', '.join(s.failed_personas)} (see their verification.json)", err=True)
        raise SystemExit(1)
