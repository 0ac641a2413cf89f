"""``hippocamp agents``: the agents a run can use."""

from __future__ import annotations

import json

import click

from hippocamp.cli._common import console


@click.group("agents")
def agents() -> None:
    """Agents: hippocamp's own and the HippoCamp release's baselines."""


@agents.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def list_agents(as_json: bool) -> None:
    """Every registered agent (``--agent NAME``): where it comes from, the file list the paper scores it
    by (retrieved, touched or cited) and what it does."""
    from rich.table import Table

    from hippocamp.agents.factory import describe_agents

    rows = describe_agents()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table(title=f"{len(rows)} agents (hippocamp run --agent NAME[:ARG])", title_justify="left")
    for col in ("name", "from", "scored by", "what it does"):
        table.add_column(col)
    for row in rows:
        table.add_row(row["name"], row["origin"], row["file_list"], row["description"])
    console().print(table)
