"""The ``hippocamp`` command. Subcommands are imported only when run, so start-up stays fast.

Every command runs with its output redacted (`hippocamp.redact`: stdout, stderr, warnings logged on
the ``hippocamp`` logger, error messages), and an unexpected exception becomes one redacted line
``error: hippocamp CMD failed: ...`` with exit code 1 (``HIPPOCAMP_DEBUG=1`` prints the traceback,
redacted too). Bad input is refused by the options' types and callbacks with exit code 2.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from hippocamp import __version__

__all__ = ["main"]

#: command name -> (module, attribute, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "validate": ("hippocamp.cli.validate", "validate", "Check HippoCamp records against their profile's files."),
    "stats": ("hippocamp.cli.stats", "stats", "Counts, distributions and difficulty of a set of records."),
    "example": ("hippocamp.cli.example", "example", "Where the bundled example profile is, or a copy of it."),
    "models": ("hippocamp.cli.models", "models", "List, install, check and chat with models."),
    "agents": ("hippocamp.cli.agents", "agents", "List the agents a run can use (hippocamp's and the release's)."),
    "index": ("hippocamp.cli.store", "index", "Index a profile's files into its store (incremental)."),
    "search": ("hippocamp.cli.store", "search", "Search a profile's store; ranked segments with locators."),
    "export-gold": ("hippocamp.cli.store", "export_gold_cmd", "Write indexed segments as HippoCamp_Gold JSON."),
    "doctor": ("hippocamp.cli.store", "doctor", "Which optional parts (OCR, speech, models) are installed."),
    "cache": ("hippocamp.cli.models", "cache", "The model request cache: stats and clear."),
    "synth": ("hippocamp.cli.synth", "synth", "Generate synthetic profiles with exact gold trajectories."),
    "score": ("hippocamp.cli.score", "score", "Judge a run's answers and score its evidence (resumable)."),
    "report": ("hippocamp.cli.report", "report", "Markdown and HTML report of scored runs, compared pairwise."),
    "bench": (
        "hippocamp.cli.bench",
        "bench_group",
        "Measure parts of hippocamp on a suite (retrieval recall, latency).",
    ),
    "export-release": (
        "hippocamp.cli.score",
        "export_release",
        "Write a run as the HippoCamp release's evaluator rows.",
    ),
    "judge": ("hippocamp.cli.score", "judge_group", "Calibrate a judge against human labels and perturbations."),
    "quickstart": ("hippocamp.cli.quickstart", "quickstart", "Synthetic profile, two agents, scores, report."),
    "import": ("hippocamp.cli.importers", "import_group", "Import a HippoCamp release or FinanceBench."),
    "run": ("hippocamp.cli.run", "run_cmd", "Run an agent over a suite's tasks into a resumable run directory."),
    "build": (
        "hippocamp.cli.build",
        "build_group",
        "Build a benchmark profile from real files (anonymized, reviewed).",
    ),
    "studio": ("hippocamp.cli.studio", "studio", "Look at runs with their evidence in a local web app."),
    "ask": ("hippocamp.cli.run", "ask", "Ask one question about a profile's files; the answer with its sources."),
}


class _RedactingStream:
    """A text stream whose every string is redacted before it is written (stdout, stderr)."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, s: Any) -> Any:
        from hippocamp.redact import redact_text

        return self._stream.write(redact_text(s) if isinstance(s, str) else s)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _EchoHandler(logging.Handler):
    """Warnings of the ``hippocamp`` logger as ``warning: ...`` lines on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            click.echo(f"{record.levelname.lower()}: {self.format(record)}", err=True)
        except Exception:  # a log line must never end a command
            self.handleError(record)


@contextmanager
def _redacted_process(argv: list[str]) -> Iterator[None]:
    """For one command: secrets given on the command line remembered, output streams redacted, and
    the ``hippocamp`` logger's warnings printed (redacted) on stderr."""
    from hippocamp.redact import RedactingFilter, redact_text, remember

    for arg in argv:
        found: list[str] = []
        redact_text(arg, found)
        remember(*found)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _RedactingStream(sys.stdout), _RedactingStream(sys.stderr)  # type: ignore[assignment]
    logger = logging.getLogger("hippocamp")
    handler = _EchoHandler(logging.WARNING)
    handler.addFilter(RedactingFilter())
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
        sys.stdout, sys.stderr = saved


def _command_name(group: click.Group, ctx: click.Context) -> str:
    """``hippocamp NAME`` (``hippocamp GROUP NAME`` for a group's command) of the command being run."""
    words = [w for w in [*getattr(ctx, "_protected_args", []), *ctx.args] if not w.startswith("-")][:2]
    if not words:
        return "hippocamp"
    parts = ["hippocamp", words[0]]
    if len(words) > 1 and words[0] in COMMANDS:
        try:
            command = group.get_command(ctx, words[0])
        except Exception:
            command = None
        if isinstance(command, click.Group):
            parts.append(words[1])
    return " ".join(parts)


def _crash(name: str, exc: BaseException) -> None:
    """One redacted line naming what failed; the traceback (redacted) with HIPPOCAMP_DEBUG=1; exit 1."""
    from hippocamp.redact import redact_text

    if os.environ.get("HIPPOCAMP_DEBUG", "").strip() not in ("", "0"):
        import traceback

        click.echo(redact_text("".join(traceback.format_exception(exc))).rstrip("\n"), err=True)
        hint = ""
    else:
        hint = " (set HIPPOCAMP_DEBUG=1 to see the traceback)"
    message = " ".join(str(exc).split())[:1000] or "(no message)"
    click.echo(redact_text(f"error: {name} failed: {type(exc).__name__}: {message}{hint}"), err=True)
    sys.exit(1)


class LazyGroup(click.Group):
    def main(self, *args: Any, **kwargs: Any) -> Any:
        argv = kwargs.get("args") if "args" in kwargs else (args[0] if args else None)
        with _redacted_process([str(a) for a in (sys.argv[1:] if argv is None else argv)]):
            return super().main(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        name = _command_name(self, ctx)
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            from hippocamp.redact import redact_text

            exc.message = redact_text(exc.message)
            raise
        except (click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:  # a traceback is never the answer to a user's input
            _crash(name, exc)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *COMMANDS])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in COMMANDS:
            module, attr, _ = COMMANDS[name]
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: Any) -> None:
        rows = [(name, COMMANDS[name][2]) for name in sorted(COMMANDS)]
        rows += [(n, c.get_short_help_str()) for n, c in sorted(self.commands.items())]
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hippocamp")
def main() -> None:
    """hippocamp: personal-context agents, built, run and scored.

    Build personal-computer environments, run agents in them, and score both their answers and the
    evidence they cite (HippoCamp, P-ContextBench).
    """
