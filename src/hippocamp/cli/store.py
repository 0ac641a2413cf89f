"""``hippocamp index``, ``search``, ``export-gold`` and ``doctor``: the profile store from the command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from hippocamp.cli._common import (
    console,
    date_option,
    embedder_option,
    executor_options,
    fail,
    new_file_option,
    open_executor_or_fail,
    writable_dir_option,
)

PROFILE = click.argument("profile", type=click.Path(exists=True, file_okay=False, path_type=Path))
STORE = click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path),
                     callback=new_file_option,
                     help="The store file (default: one per profile in the cache; its folder must exist).")  # fmt: skip


def _root(profile: Path) -> Path:
    """The file tree of a profile folder (release layout ``<Name>/Fullset/<Name>/`` or a plain tree)."""
    from hippocamp.dataset.profile import ProfileError, load_profile
    from hippocamp.schema.io import RecordsFileError

    try:
        loaded = load_profile(profile)
    except (ProfileError, RecordsFileError):
        return profile
    return loaded.root or profile


def _open_store(profile: Path, store_path: Path | None, create: bool):  # type: ignore[no-untyped-def]
    from hippocamp.store import Store, StoreError, default_store_path

    root = _root(profile)
    try:
        return root, Store(store_path or default_store_path(root), root=root, create=create)
    except StoreError as exc:
        fail(str(exc))


def _chunker_option(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """A chunker spec, checked and written canonically (``recursive`` -> ``recursive:512:0``)."""
    from hippocamp.store.chunking import ChunkerError, parse_chunker

    try:
        return parse_chunker(value).spec
    except ChunkerError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command("index")
@PROFILE
@STORE
@click.option("--workers", type=click.IntRange(min=1), help="Reader processes (default: up to 4, by cores).")
@click.option("--no-embed", is_flag=True, help="Skip embeddings (BM25 search only).")
@click.option("--embedder", callback=embedder_option, help="Registered embedder name (default: the bundled one).")
@click.option("--gold", "gold_dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A HippoCamp_Gold folder: use its parsed text for the files it covers.")  # fmt: skip
@click.option("--max-mb", type=click.FloatRange(min=0, min_open=True), default=200, show_default=True,
              help="Files above this get metadata only.")  # fmt: skip
@click.option("--no-ocr", is_flag=True, help="Do not OCR images and video frames.")
@click.option("--no-asr", is_flag=True, help="Do not transcribe audio and video.")
@click.option("--retry-failed", is_flag=True, help="Read again files that failed last time.")
@click.option("--time-limit", type=click.FloatRange(min=1), default=45, show_default=True,
              help="Seconds a reader gets per file, plus --time-per-mb per MB; then it is stopped and the "
              "file recorded as failed.")  # fmt: skip
@click.option("--time-per-mb", type=click.FloatRange(min=0), default=10, show_default=True,
              help="Extra seconds per MB of the file (transcribing an hour of speech takes minutes).")  # fmt: skip
@click.option("--memory-limit", type=click.IntRange(min=64), default=1536, show_default=True,
              help="MB a reader process may use; a file that needs more is recorded as failed.")  # fmt: skip
@click.option("--in-process", is_flag=True,
              help="Read in this process, without the workers' time and memory limits (trusted files).")  # fmt: skip
@click.option("--rebuild", is_flag=True, help="Delete the store first and index everything anew.")
@click.option("--chunker", default="native", show_default=True, callback=_chunker_option,
              help="How segments are cut before they are stored: native (as the readers made them), "
              "release[:MAX:MIN] (the HippoCamp release's shipped default, its structural chunker; 1000:200), "
              "recursive[:SIZE:OVERLAP] (the release's recursive chunker; default 512:0), "
              "semantic[:THRESHOLD] (hippocamp's: sentences grouped while the embedder finds them similar; "
              "default 0.2; needs embeddings). "
              "Indexing with another chunker reads and chunks every file again.")  # fmt: skip
@executor_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def index(
    profile: Path,
    store_path: Path | None,
    workers: int | None,
    no_embed: bool,
    embedder: str | None,
    gold_dir: Path | None,
    max_mb: float,
    no_ocr: bool,
    no_asr: bool,
    retry_failed: bool,
    time_limit: float,
    time_per_mb: float,
    memory_limit: int,
    in_process: bool,
    rebuild: bool,
    chunker: str,
    executor_spec: str,
    ship: str,
    as_json: bool,
) -> None:
    """Index PROFILE: read new and changed files into its store, drop vanished ones, embed segments.

    Safe to interrupt: the next run continues. Files are read in worker processes, each file under a
    time and memory limit; a file that cannot be read (or hits a limit) is recorded with its reason,
    listed at the end, and not read again until it changes or --retry-failed; the run goes on. With
    --executor ray... files are read and embedded on the cluster's workers; this process writes the store.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from hippocamp.executors import ExecutorError
    from hippocamp.perceive.base import PerceiveOptions
    from hippocamp.perceive.wall import ReadLimits
    from hippocamp.store import IndexOptions, index_profile
    from hippocamp.store.chunking import ChunkerError, parse_chunker

    if no_embed and parse_chunker(chunker).needs_embedder:
        raise click.BadParameter(f"{chunker} needs the embedder; drop --no-embed or choose recursive or native",
                                 param_hint="'--chunker'")  # fmt: skip
    if rebuild:
        from hippocamp.store import default_store_path

        target = store_path or default_store_path(_root(profile))
        for leftover in target.parent.glob(target.name + "*"):
            leftover.unlink()
    root, store = _open_store(profile, store_path, create=True)
    perceive = PerceiveOptions(max_bytes=int(max_mb * 1024 * 1024), ocr=not no_ocr, asr=not no_asr)
    kwargs = {"workers": workers} if workers else {}
    limits = ReadLimits(seconds=time_limit, seconds_per_mb=time_per_mb, memory_mb=memory_limit)
    options = IndexOptions(
        perceive=perceive, embed=not no_embed, embedder=embedder, gold_dir=gold_dir, retry_failed=retry_failed,
        isolate=not in_process, limits=limits, chunker=chunker, **kwargs,
    )  # fmt: skip
    out = console(stderr=as_json)
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        TextColumn("[dim]{task.fields[path]}"), console=out, transient=True,
    ) as bar:  # fmt: skip
        tasks: dict[str, int] = {}

        def progress(stage: str, done: int, total: int, path: str | None) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total, path="")
            bar.update(tasks[stage], completed=done, total=total, path=(path or "")[-60:])

        executor = open_executor_or_fail(executor_spec, ship)
        try:
            report = index_profile(root, store, options, progress, executor=executor)
        except ChunkerError as exc:
            fail(f"--chunker: {exc}")
        except ExecutorError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            out.print("[yellow]interrupted: what was read is saved; run again to continue[/]")
            sys.exit(130)
    counts = store.counts()
    if as_json:
        payload = report.__dict__ | {"store": str(store.path), "root": str(root), "counts": counts}
        click.echo(json.dumps(payload, default=str, indent=2))
        return
    out.print(
        f"[bold]{root}[/] -> {store.path}\n"
        f"{report.scanned} files: {report.added} added, {report.updated} updated, {report.unchanged} unchanged, "
        f"{report.removed} removed" + (f", {report.from_gold} from Gold" if report.from_gold else "") + "\n"
        f"{counts['segments']} segments, {counts['vectors']} vectors"
        + (f" ({report.embedder})" if report.embedder else "")
        + f"; {report.seconds:.1f} s"
    )
    if report.failed:
        out.print(f"[yellow]{len(report.failed)} file(s) not read:[/]")
        for path, reason in report.failed[:50]:
            out.print(f"  {path}: {reason}", markup=False, highlight=False)
        if len(report.failed) > 50:
            out.print(f"  ... and {len(report.failed) - 50} more (--json lists all)")
    if report.notes:
        out.print(f"[dim]{len(report.notes)} note(s), e.g. {report.notes[0][0]}: {report.notes[0][1]}[/]")


@click.command("search")
@PROFILE
@click.argument("query")
@STORE
@click.option("-k", "k", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--modality", multiple=True,
              type=click.Choice(["text", "document", "image", "audio", "video"], case_sensitive=False),
              help="text, document, image, audio, video (repeatable).")  # fmt: skip
@click.option("--type", "types", multiple=True, help="File extension, e.g. pdf (repeatable).")
@click.option("--glob", help="Path pattern, e.g. 'Documents/*.pdf'.")
@click.option("--after", callback=date_option, help="Only segments at or after this date (YYYY-MM-DD).")
@click.option("--before", callback=date_option, help="Only segments before this date.")
@click.option("--mode", type=click.Choice(["hybrid", "fts", "vector"]), default="hybrid", show_default=True)
@click.option("--literal", is_flag=True,
              help="Do not turn the dates and kinds of file the query names into filters.")  # fmt: skip
@click.option(
    "--now",
    callback=date_option,
    help="Read relative dates ('last March') against this date (default: the store's latest item).",
)
@click.option("--json", "as_json", is_flag=True)
def search(
    profile: Path,
    query: str,
    store_path: Path | None,
    k: int,
    modality: tuple[str, ...],
    types: tuple[str, ...],
    glob: str | None,
    after: str | None,
    before: str | None,
    mode: str,
    literal: bool,
    now: str | None,
    as_json: bool,
) -> None:
    """Search PROFILE's store for QUERY; prints ranked segments with their locators.

    Dates and kinds of file in QUERY ("receipts from March 2024", "photos from last March", "the Q2
    pdf") become filters, dropped again with a note when nothing matches them (--literal: never)."""
    from hippocamp.store import Searcher, SearchFilters

    _, store = _open_store(profile, store_path, create=False)
    filters = SearchFilters(glob=glob, modality=modality, types=types, after=after, before=before)
    searcher = Searcher(store)
    read_as, notes = "", []
    try:
        if literal:
            hits = searcher.search(query, k=k, filters=filters, mode=mode)  # type: ignore[arg-type]
        else:
            found = searcher.search_read(query, k=k, filters=filters, mode=mode, now=now)  # type: ignore[arg-type]
            hits, read_as, notes = found.hits, found.parts.describe(), found.notes
    except ValueError as exc:
        fail(str(exc), code=1)
    if as_json:
        for note in notes:  # stdout stays the list of hits
            click.echo(note, err=True)
        click.echo(json.dumps([h.as_json() for h in hits], ensure_ascii=False, indent=2))
        return
    out = console()
    if read_as:
        out.print(f"[dim]read as: {read_as}[/]", highlight=False)
    for note in notes:
        out.print(f"[yellow]{note}[/]", highlight=False)
    if not hits:
        out.print("no results")
    for i, h in enumerate(hits, start=1):
        where = h.segment().where()
        text = " ".join(h.text.split())
        out.print(f"[bold]{i:2d}.[/] [cyan]{where}[/] [dim]({h.score:.3f})[/]", highlight=False)
        out.print(f"    {text[:300]}{'…' if len(text) > 300 else ''}", markup=False, highlight=False)


@click.command("export-gold")
@PROFILE
@STORE
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              callback=writable_dir_option)  # fmt: skip
def export_gold_cmd(profile: Path, store_path: Path | None, out_dir: Path) -> None:
    """Write PROFILE's indexed segments as HippoCamp_Gold JSON files (one per source file)."""
    from hippocamp.store.gold import export_gold

    _, store = _open_store(profile, store_path, create=False)
    written = export_gold(store, out_dir)
    click.echo(f"wrote {written} file(s) under {out_dir}")


@click.command("doctor")
def doctor() -> None:
    """Which optional parts are installed: readers' parts, programs, models."""
    from rich.markup import escape
    from rich.table import Table

    from hippocamp.models.local_models import installed_files
    from hippocamp.perceive import readers

    out = console()
    table = Table(title="Readers and their optional parts", title_justify="left")
    for col in ("reader", "extensions", "part", "installed", "enables", "install with"):
        table.add_column(col)
    missing = 0
    for name, reader in sorted(readers().items()):
        exts = " ".join(reader.extensions[:8]) + (" …" if len(reader.extensions) > 8 else "")
        if not reader.parts:
            table.add_row(name, exts, "-", "[green]yes[/]", "", "")
        for part in reader.parts:
            ok = part.available()
            missing += not ok
            table.add_row(
                name,
                exts,
                part.name,
                "[green]yes[/]" if ok else "[red]no[/]",
                escape(part.purpose),
                escape(part.install),
            )
            name, exts = "", ""
    out.print(table)
    for spec, path in installed_files():
        out.print(f"model {spec.name}: " + (f"[green]{path}[/]" if path else f"[dim]not installed[/] ({spec.quality})"))
    out.print(
        "[green]all optional parts installed[/]" if not missing else f"[yellow]{missing} optional part(s) missing[/]"
    )
