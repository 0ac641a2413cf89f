"""``hippocamp run`` (a suite x an agent x epochs into a resumable run directory) and ``hippocamp ask``
(one question about a profile, answered with the files and places it comes from)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from hippocamp.cli._common import (
    agent_option,
    console,
    executor_options,
    fail,
    model_option,
    new_file_option,
    open_executor_or_fail,
    writable_dir_option,
)

SUITE_OPTIONS = [
    click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path), callback=new_file_option,
                 help="The store file (default: one per profile in the cache; its folder must exist)."),
    click.option("--no-ocr", is_flag=True, help="Index without OCR of images and video frames."),
    click.option("--no-asr", is_flag=True, help="Index without transcribing audio and video."),
    click.option("--no-embed", is_flag=True, help="Index without embeddings (BM25 search only)."),
    click.option("--terminal", "terminal", type=click.Choice(["auto", "jail", "emulated"]), default="auto",
                 show_default=True, help="The terminal agents get: a real bash in a bubblewrap jail, hippocamp's "
                 "emulated read-only terminal, or auto (the jail when this machine can make one)."),
]  # fmt: skip


def suite_options(fn: Any) -> Any:
    for option in reversed(SUITE_OPTIONS):
        fn = option(fn)
    return fn


def _load(spec: str, store_path: Path | None, no_ocr: bool, no_asr: bool, no_embed: bool, quiet: bool,
          terminal: str = "auto", executor: Any = None) -> Any:  # fmt: skip
    """The suite, indexed, with a transient progress bar on stderr."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from hippocamp.envs import terminal_backend
    from hippocamp.executors import ExecutorError
    from hippocamp.runs import SuiteError, SuiteOptions, load_suite
    from hippocamp.store import StoreError

    try:
        terminal_backend(terminal)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--terminal") from None
    options = SuiteOptions(ocr=not no_ocr, asr=not no_asr, embed=not no_embed, store=store_path, terminal=terminal,
                           executor=executor)  # fmt: skip
    err = console(stderr=True)
    with Progress(TextColumn("indexing {task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=err, transient=True, disable=quiet or not err.is_terminal) as bar:  # fmt: skip
        stages: dict[str, Any] = {}

        def progress(stage: str, done: int, total: int, _path: str | None) -> None:
            if stage not in stages:
                stages[stage] = bar.add_task(stage, total=total)
            bar.update(stages[stage], completed=done, total=total)

        try:
            return load_suite(spec, options, progress)
        except (SuiteError, StoreError, ValueError, ExecutorError) as exc:  # ValueError: a suite file's JSON
            fail(str(exc))


def _budget(max_steps: int, max_tokens: int, max_seconds: float) -> Any:
    from hippocamp.agents.base import Budget

    return Budget(
        max_steps=max_steps,
        max_tokens=max_tokens or None,
        max_seconds=max_seconds or None,
    )


BUDGET_OPTIONS = [
    click.option("--max-steps", type=click.IntRange(min=1), default=20, show_default=True, help="Steps per episode."),
    click.option("--max-tokens", type=click.IntRange(min=0), default=60_000, show_default=True,
                 help="Tokens per episode (0: no limit)."),
    click.option("--max-seconds", type=click.FloatRange(min=0), default=600.0, show_default=True,
                 help="Wall-clock seconds per episode (0: no limit)."),
]  # fmt: skip


def budget_options(fn: Any) -> Any:
    for option in reversed(BUDGET_OPTIONS):
        fn = option(fn)
    return fn


@click.command("run")
@click.option("--suite", "suite_spec", required=True,
              help="A HippoCamp-format profile folder or records file, or synth:SCALE:SEED[:PERSONA].")  # fmt: skip
@click.option("--agent", required=True, callback=agent_option, help="A registered agent name (NAME or NAME:ARG).")
@click.option("--model", "model_spec", required=True, callback=model_option,
              help="e.g. mock, local:smollm2, openai:gpt-4o-mini.")  # fmt: skip
@click.option("--epochs", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True, help="Episodes at once.")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first K tasks.")
@click.option("--per-type", type=click.IntRange(min=1),
              help="Only K tasks of each question type, spread over the suite (a stratified sample).")  # fmt: skip
@budget_options
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), callback=writable_dir_option,
              help="The run directory (created if needed).")  # fmt: skip
@suite_options
@executor_options
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def run_cmd(
    suite_spec: str,
    agent: str,
    model_spec: str,
    epochs: int,
    concurrency: int,
    limit: int | None,
    per_type: int | None,
    max_steps: int,
    max_tokens: int,
    max_seconds: float,
    out: Path,
    store_path: Path | None,
    no_ocr: bool,
    no_asr: bool,
    no_embed: bool,
    terminal: str,
    executor_spec: str,
    ship: str,
    as_json: bool,
) -> None:
    """Run AGENT with MODEL over every task of SUITE, EPOCHS times, into OUT.

    OUT holds manifest.json and episodes.jsonl (one line per finished episode). Running the same
    command again resumes: finished episodes are skipped, none is run twice. Safe to interrupt. With
    --executor ray... episodes run on a cluster's workers (a worker lost mid-episode runs it again
    elsewhere); this process writes episodes.jsonl.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from hippocamp.executors import ExecutorError
    from hippocamp.models import ModelError, ModelNotAvailableError
    from hippocamp.runs import EpisodeLogError, ManifestError, run

    executor = open_executor_or_fail(executor_spec, ship)
    suite = _load(suite_spec, store_path, no_ocr, no_asr, no_embed, quiet=as_json, terminal=terminal,
                  executor=executor)  # fmt: skip
    out_console = console(stderr=as_json)
    shell = suite.describe().get("terminal")
    if shell and "terminal" in agent:  # say at start which terminal the agent gets, and why
        why = f" ({shell['why']})" if shell.get("why") else ""
        console(stderr=True).print(f"terminal: {shell['backend']} ({shell['engine']}){why}")
    stops: dict[str, int] = {}
    try:
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("[dim]{task.fields[stops]}"), console=out_console, transient=True,
                      disable=not out_console.is_terminal) as bar:  # fmt: skip
            bar_id = bar.add_task(f"{suite.name} · {agent}", total=None, stops="")

            def progress(episode: Any, done: int, total: int) -> None:
                if episode is not None:
                    stops[episode.answer.stop] = stops.get(episode.answer.stop, 0) + 1
                text = " ".join(f"{k} {v}" for k, v in sorted(stops.items()))
                bar.update(bar_id, completed=done, total=total, stops=text)

            summary = asyncio.run(run(suite, agent, model_spec, out=out, epochs=epochs, concurrency=concurrency,
                                      limit=limit, per_type=per_type,
                                      budget=_budget(max_steps, max_tokens, max_seconds),
                                      progress=progress, executor=executor))  # fmt: skip
    except KeyboardInterrupt:
        out_console.print("[yellow]interrupted: finished episodes are saved; run the same command to continue[/]")
        sys.exit(130)
    except (ManifestError, EpisodeLogError, ModelNotAvailableError, ExecutorError, ValueError) as exc:
        fail(str(exc))
    except ModelError as exc:  # the model failed at run time: not the input's fault
        fail(str(exc), code=1)
    finally:
        suite.close()
    if as_json:
        click.echo(json.dumps(summary.as_dict(), indent=2))
        return
    cost = "unknown" if summary.cost_usd is None else f"${summary.cost_usd:.4f}"
    by_stop = ", ".join(f"{k} {v}" for k, v in summary.by_stop.items())
    out_console.print(
        f"[bold]{out}[/]: {summary.planned} episodes: {summary.done} done, {summary.skipped} skipped\n"
        f"by stop: {by_stop}" + (f" ([yellow]{summary.failed} not answered[/])" if summary.failed else "") + "\n"
        f"tokens: {summary.input_tokens} in, {summary.output_tokens} out, {summary.calls} calls; cost {cost}\n"
        f"episodes {summary.episodes_s:.1f} s, of which model {summary.model_s:.1f} s; "
        f"this session {summary.wall_s:.1f} s wall"
    )
    if summary.lost:
        out_console.print(f"[yellow]{len(summary.lost)} episode(s) lost on the cluster (not written; run the same "
                          f"command again to run them): {summary.lost[0]}[/]")  # fmt: skip


def _where(locator: Any) -> str:
    if not locator:
        return ""
    if isinstance(locator, dict) and "unit" in locator:
        pos = locator.get("position")
        text = ", ".join(f"{k}={v}" for k, v in pos.items()) if isinstance(pos, dict) else str(pos)
        return f"{locator['unit']} {text}"
    return json.dumps(locator, ensure_ascii=False)


def _default_model() -> str:
    from hippocamp.models.local_models import default_chat_model, is_installed

    spec, smoke_only = default_chat_model()
    if not is_installed(spec.partition(":")[2]):
        fail(
            "no local model is installed and no --model given: install one with "
            "`hippocamp models install qwen2.5-coder-1.5b` (or `smollm2`, smoke-level only), "
            "or pass --model openai:gpt-4o-mini / --model openai-compatible:NAME@http://HOST:PORT/v1"
        )
    if smoke_only:
        click.echo(f"note: {spec} is a smoke-level model; answers will be weak (install qwen2.5-coder-1.5b)", err=True)
    return spec


async def _solve(agent: str, question: str, suite: Any, model_spec: str, budget: Any) -> tuple[str, Any]:
    from hippocamp.agents.base import Task
    from hippocamp.models import get_model
    from hippocamp.runs import agent_factory

    model = get_model(model_spec)
    try:
        task = Task(id="ask", question=question, profile=suite.name)
        timeout = None if budget.max_seconds is None else budget.max_seconds + 5.0
        solver = agent_factory(agent)().solve(task, suite.env(task), model, budget)
        return model.id, await asyncio.wait_for(solver, timeout)
    finally:
        await model.aclose()


@click.command("ask")
@click.argument("profile", type=click.Path(exists=True, path_type=Path))
@click.argument("question")
@click.option("--agent", default="evidence", show_default=True, callback=agent_option, help="A registered agent name.")
@click.option("--model", "model_spec", callback=model_option, help="Default: the installed local model.")
@budget_options
@suite_options
@click.option("--json", "as_json", is_flag=True, help="Print the answer, files and evidence as JSON.")
def ask(
    profile: Path,
    question: str,
    agent: str,
    model_spec: str | None,
    max_steps: int,
    max_tokens: int,
    max_seconds: float,
    store_path: Path | None,
    no_ocr: bool,
    no_asr: bool,
    no_embed: bool,
    terminal: str,
    as_json: bool,
) -> None:
    """Ask one QUESTION about the files of PROFILE (a folder; indexed first if needed).

    Prints the answer, then the files it cites and where in them.
    """
    from hippocamp.models import ModelError

    if not question.strip():
        raise click.BadParameter("the question is empty", param_hint="QUESTION")
    spec = model_spec or _default_model()
    suite = _load(str(profile), store_path, no_ocr, no_asr, no_embed, quiet=as_json, terminal=terminal)
    budget = _budget(max_steps, max_tokens, max_seconds)
    began = time.perf_counter()
    try:
        model_id, answer = asyncio.run(_solve(agent, question, suite, spec, budget))
    except TimeoutError as exc:
        spent = time.perf_counter() - began
        limit = f" (--max-seconds {budget.max_seconds:g})" if budget.max_seconds else ""
        fail(f"no answer: timed out after {spent:.0f} s{limit}" + (f": {exc}" if str(exc) else ""), code=1)
    except (ModelError, ValueError) as exc:
        fail(str(exc), code=1)
    finally:
        suite.close()
    if as_json:
        payload = {"question": question, "agent": agent, "model": model_id, "answer": answer.text,
                   "stop": answer.stop, "error": answer.error, "files": answer.files,
                   "evidence": [e.model_dump(mode="json") for e in answer.evidence],
                   "usage": answer.usage.model_dump(mode="json")}  # fmt: skip
        click.echo(json.dumps(payload, ensure_ascii=False, indent=2))
        return
    out = console()
    out.print(answer.text or "[dim](no answer)[/]", markup=not answer.text, highlight=False)
    if answer.stop != "answered":
        out.print(f"[yellow]stopped: {answer.stop}[/]" + (f" ({answer.error})" if answer.error else ""))
    cited = {e.file_path for e in answer.evidence}
    if answer.evidence or answer.files:
        out.print("\n[bold]Sources[/]")
    for i, item in enumerate(answer.evidence, start=1):
        where = _where(item.locator)
        out.print(f"{i:2d}. [cyan]{item.file_path}[/]" + (f"  {where}" if where else ""), highlight=False,
                  soft_wrap=True)  # fmt: skip
        if item.text:
            text = " ".join(item.text.split())
            out.print(f"    {text[:200]}{'…' if len(text) > 200 else ''}", markup=False, highlight=False)
    for path in (p for p in answer.files if p not in cited):
        out.print(f" - [cyan]{path}[/]", highlight=False, soft_wrap=True)
