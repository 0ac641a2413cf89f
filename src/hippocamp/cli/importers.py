"""``hippocamp import``: turn downloaded benchmark data into profiles and suites."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from hippocamp.cli._common import console, fail, writable_dir_option


class ImporterGroup(click.Group):
    """``hippocamp import NAME``: every registered importer (kind ``importer``). The built-ins have their
    own commands below; a plug-in importer gets one made from its signature (`generic_command`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from hippocamp import registry

        return sorted({*super().list_commands(ctx), *registry.names("importer")})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is not None:
            return command
        from hippocamp import registry

        try:
            return generic_command(name, registry.get("importer", name))
        except registry.UnknownPluginError:
            return None


def generic_command(name: str, importer: Any) -> click.Command:
    """A command for an importer ``importer(source, out, **options)``: SOURCE, ``--out`` and one option per
    keyword parameter with a default (a bool default makes a flag); prints what it returns, through its
    ``summary_lines()`` when it has one."""
    import inspect

    params: list[click.Parameter] = [
        click.Argument(["source"], type=click.Path(exists=True, path_type=Path)),
        click.Option(
            ["--out"],
            required=True,
            type=click.Path(file_okay=False, path_type=Path),
            callback=writable_dir_option,
            help="Where to write.",
        ),
    ]
    for i, p in enumerate(inspect.signature(importer).parameters.values()):
        if i < 2 or p.default is inspect.Parameter.empty or p.kind is p.VAR_KEYWORD:
            continue
        flag = "--" + p.name.replace("_", "-")
        if isinstance(p.default, bool):
            params.append(click.Option([flag, p.name], is_flag=True, default=p.default))
        else:
            kind = type(p.default) if p.default is not None else str
            params.append(click.Option([flag, p.name], type=kind, default=p.default, show_default=True))

    def run(source: Path, out: Path, **options: Any) -> None:
        from hippocamp.importers._common import ImporterError

        try:
            result = importer(source, out, **options)
        except (ImporterError, OSError, ValueError) as exc:
            fail(str(exc))
        lines = result.summary_lines() if hasattr(result, "summary_lines") else [f"imported into {out}"]
        for line in lines:
            click.echo(line)

    about = (inspect.getdoc(importer) or f"The {name} importer.").splitlines()[0]
    return click.Command(name, params=params, callback=run, help=about)


@click.group("import", cls=ImporterGroup)
def import_group() -> None:
    """Turn downloaded benchmark data (a HippoCamp release, FinanceBench, LoCoMo, or a plug-in's) into
    hippocamp suites and profiles."""


@import_group.command("hippocamp")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              callback=writable_dir_option,
              help="The suite folder to write (suite.json, validation reports, stores).")  # fmt: skip
@click.option("--variant", type=click.Choice(["Fullset", "Subset"]), default="Fullset", show_default=True)
@click.option("--no-index", is_flag=True, help="Validate only; do not index the files.")
@click.option("--no-embed", is_flag=True, help="Index without embeddings (BM25 search only).")
@click.option("--gold", "gold", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The HippoCamp_Gold folder (default: beside the profiles).")  # fmt: skip
@click.option("--workers", type=click.IntRange(min=1),
              help="Reader processes for indexing (default: up to 4, by cores).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print suite.json instead of a summary.")
def import_hippocamp_cmd(
    path: Path,
    out: Path,
    variant: str,
    no_index: bool,
    no_embed: bool,
    gold: Path | None,
    workers: int | None,
    as_json: bool,
) -> None:
    """Import the HippoCamp release at PATH (the folder holding Adam/, Bei/, Victoria/ and optionally
    HippoCamp_Gold/, or one profile folder) as a suite under --out, referencing the release in place.

    Per profile: the records are validated (report beside suite.json), the files indexed into
    stores/<Name>.sqlite with HippoCamp_Gold text where it exists, and the _files.xlsx times applied to
    the store. Problems in the release are counted and reported, never fatal.
    """
    from hippocamp.importers import ImporterError, import_hippocamp
    from hippocamp.store import IndexOptions

    options = IndexOptions(embed=not no_embed, **({"workers": workers} if workers else {}))
    try:
        manifest = import_hippocamp(path, out, variant=variant, index=not no_index, gold=gold, index_options=options)
    except ImporterError as exc:
        fail(str(exc))
    if as_json:
        click.echo(json.dumps(manifest.to_json(), indent=2, ensure_ascii=False))
        return
    con = console()
    for entry in manifest.profiles:
        if entry.error and entry.validation is None:
            con.print(f"[bold red]{entry.name}[/]: {entry.error}", highlight=False)
            continue
        line = f"[bold]{entry.name}[/] ({entry.variant or 'flat'})"
        if entry.validation:
            v = entry.validation
            line += f": {v['records_read']}/{v['records']} records, {v['errors']} errors, {v['warnings']} warnings"
            problems = _top_rules(v)
            if problems:
                line += f" ({problems})"
        if entry.index:
            ix = entry.index
            line += (
                f"; {ix['files']} files indexed, {ix['from_gold']} from Gold, {ix['segments']} segments, "
                f"{ix['failed']} unreadable; times from _files.xlsx for {ix['times_from_xlsx']}"
            )
        con.print(line, highlight=False)
        if entry.validation_report:
            con.print(f"  report: {entry.validation_report}", markup=False, highlight=False)
    con.print(f"suite: {manifest.path} ({manifest.seconds:.1f} s)", markup=False, highlight=False)
    con.print(f"run: hippocamp run --suite {manifest.path} --agent rag --model MODEL --out runs/NAME",
              markup=False, highlight=False)  # fmt: skip


def _top_rules(summary: dict[str, Any]) -> str:
    parts = []
    for rule, counts in sorted(summary.get("by_rule", {}).items()):
        if counts.get("error"):
            parts.append(f"{rule}: {counts['error']}")
    return ", ".join(parts)


@import_group.command("financebench")
@click.argument("source", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              callback=writable_dir_option,
              help="Where to write the profile (<Name>/, <Name>.json, <Name>_files.xlsx).")  # fmt: skip
@click.option("--name", default="Finance", show_default=True, help="The profile's name.")
@click.option("--json", "as_json", is_flag=True, help="Print the import report as JSON.")
def import_financebench_cmd(source: Path, out: Path, name: str, as_json: bool) -> None:
    """Import FinanceBench from SOURCE (questions.jsonl or financebench_open_source.jsonl, pdfs/, optional
    documents.jsonl) as a profile in the release layout under --out: the filings filed by company and
    year under Work/Filings/, one record per question. Questions whose filing is missing are reported
    and skipped. The records are validated at the end; exit 1 if any error was found.
    """
    from hippocamp.importers import ImporterError, import_financebench

    try:
        result = import_financebench(source, out, name=name)
    except ImporterError as exc:
        fail(str(exc))
    if as_json:
        click.echo(result.report_path.read_text(encoding="utf-8"), nl=False)
    else:
        con = console()
        con.print(
            f"[bold]{result.name}[/]: {result.imported}/{result.questions} questions imported, "
            f"{len(result.skipped)} skipped; {result.files} filings ({result.linked} linked, {result.copied} copied), "
            f"{result.pages} cited pages; {result.seconds:.1f} s",
            highlight=False,
        )
        for s in result.skipped:
            con.print(f"  skipped line {s.line} ({s.id or 'no id'}): {s.reason}", markup=False, highlight=False)
        if result.unknown_reasoning:
            con.print(f"  unknown question_reasoning (labelled basic): {', '.join(result.unknown_reasoning)}")
        v = result.validation
        verdict = "[bold red]FAILED[/]" if v["errors"] else "[bold green]OK[/]"
        con.print(
            f"validate: {verdict} {v['records_read']}/{v['records']} records, {v['errors']} errors, "
            f"{v['warnings']} warnings, {v['info']} notes ({result.validation_path})",
            highlight=False,
        )
        con.print(f"profile: {result.records_path}", markup=False, highlight=False)
        con.print(f"run: hippocamp run --suite {out} --agent rag --model MODEL --out runs/NAME",
                  markup=False, highlight=False)  # fmt: skip
    sys.exit(1 if result.validation["errors"] else 0)


@import_group.command("locomo")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              callback=writable_dir_option,
              help="Where to write the persona folders (<out>/<sample_id>/).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the import report as JSON.")
def import_locomo_cmd(path: Path, out: Path, as_json: bool) -> None:
    """Convert LoCoMo conversations (PATH: locomo10.json or a slice) into app-log personas: sessions become
    messenger messages with their real dates, dia_ids the message ids, questions cases (4 → T1, 1 → T2,
    2 → T3, 3 → T4, 5 adversarial → an abstention case), evidence dia_ids the supporting fragments."""
    from hippocamp.importers._common import ImporterError
    from hippocamp.importers.locomo import import_locomo

    try:
        result = import_locomo(path, out)
    except ImporterError as exc:
        fail(str(exc))
    report = {"out": str(result.out), "personas": result.personas, "messages": result.messages,
              "cases_by_type": result.cases_by_type, "skipped": result.skipped}  # fmt: skip
    if as_json:
        click.echo(json.dumps(report, indent=1))
        return
    cases = ", ".join(f"{k} {v}" for k, v in sorted(result.cases_by_type.items()))
    click.echo(f"{len(result.personas)} conversations, {result.messages} messages; cases: {cases}")
    for s in result.skipped:
        click.echo(f"  note: {s}")
    click.echo(f"run: hippocamp run --suite {out} --agent rag --model MODEL --out runs/NAME")
