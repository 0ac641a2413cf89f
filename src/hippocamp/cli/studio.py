"""``hippocamp studio``: a local web app to look at runs with their evidence."""

from __future__ import annotations

import ipaddress
import secrets
import socket
from pathlib import Path

import click

from hippocamp.cli._common import console, fail


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


@click.command("studio")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True, help="Port (0: a free one).")
@click.option("--no-browser", is_flag=True, help="Do not open a browser.")
@click.option("--workspace", type=click.Path(dir_okay=False, path_type=Path),
              help="Author questions over the first PATH (a profile): the annotation database (SQLite).")  # fmt: skip
@click.option("--model", "model", default=None, help="A model that proposes questions from paths and dates only.")
@click.option("--build-work", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The `hippocamp build` work folder of the profile: release QC checks its originals.")  # fmt: skip
@click.option("--targets", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help='Coverage targets as JSON: {"family": {"profiling": 0.2, ...}, "modality": {...}}.')  # fmt: skip
@click.option("--export-to", type=click.Path(file_okay=False, path_type=Path),
              help="Where the export writes the records (default: beside the workspace).")  # fmt: skip
def studio(paths: tuple[Path, ...], host: str, port: int, no_browser: bool, workspace: Path | None,
           model: str | None, build_work: Path | None, targets: Path | None,
           export_to: Path | None) -> None:  # fmt: skip
    """Open run directories and profiles in a local web app (runs, episodes, evidence at its locator)."""
    import uvicorn

    from hippocamp.studio.app import Studio, create_app
    from hippocamp.studio.workspace import WorkspaceError

    token = None if _loopback(host) else secrets.token_urlsafe(24)
    try:
        state = Studio.open(list(paths), token=token, workspace=workspace, export_dir=export_to)
        state.model = model
        state.build_work = build_work
        if targets is not None:
            import json

            try:
                state.targets = json.loads(targets.read_text(encoding="utf-8"))
            except ValueError as exc:
                fail(f"{targets}: the coverage targets are not JSON: {exc}", 1)
            if not isinstance(state.targets, dict) or not all(isinstance(v, dict) for v in state.targets.values()):
                fail(f'{targets}: expected {{"axis": {{"value": share, ...}}, ...}}', 1)
    except (FileNotFoundError, OSError, ValueError, WorkspaceError) as exc:
        fail(str(exc), 1)
    if port == 0:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    out = console(stderr=True)
    out.print(f"hippocamp studio: {len(state.runs)} run(s), {len(state.roots.all('profile'))} profile(s) at {url}",
              highlight=False)  # fmt: skip
    if token:
        out.print("listening beyond this computer: every request needs the token in the address above")
    if not no_browser:
        import webbrowser

        webbrowser.open(url)
    uvicorn.run(create_app(state), host=host, port=port, log_level="warning")
