"""The ``hippocamp`` command. Subcommands are imported only when run, so start-up stays fast."""

from __future__ import annotations

import importlib
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
    "index": ("hippocamp.cli.store", "index", "Index a profile's files into its store (incremental)."),
    "search": ("hippocamp.cli.store", "search", "Search a profile's store; ranked segments with locators."),
    "export-gold": ("hippocamp.cli.store", "export_gold_cmd", "Write indexed segments as HippoCamp_Gold JSON."),
    "doctor": ("hippocamp.cli.store", "doctor", "Which optional parts (OCR, speech, models) are installed."),
    "cache": ("hippocamp.cli.models", "cache", "The model request cache: stats and clear."),
    "synth": ("hippocamp.cli.synth", "synth", "Generate synthetic profiles with exact gold trajectories."),
    "score": ("hippocamp.cli.score", "score", "Judge a run's answers and score its evidence (resumable)."),
    "report": ("hippocamp.cli.report", "report", "Markdown and HTML report of scored runs, compared pairwise."),
    "judge": ("hippocamp.cli.score", "judge_group", "Calibrate a judge against human labels and perturbations."),
    "quickstart": ("hippocamp.cli.quickstart", "quickstart", "Synthetic profile, two agents, scores, report."),
    "import": ("hippocamp.cli.importers", "import_group", "Import a HippoCamp release or FinanceBench."),
    "run": ("hippocamp.cli.run", "run_cmd", "Run an agent over a suite's tasks into a resumable run directory."),
    "ask": ("hippocamp.cli.run", "ask", "Ask one question about a profile's files; the answer with its sources."),
}


class LazyGroup(click.Group):
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
