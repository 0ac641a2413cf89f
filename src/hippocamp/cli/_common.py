"""Helpers shared by the CLI commands: console, clear failures, finding the input profile, and the
option checks every command runs before doing any work (exit code 2 with a message naming the option,
the value and, for registry names, the closest known names)."""

from __future__ import annotations

import difflib
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from rich.console import Console

    from hippocamp.dataset.profile import Profile

#: exit code for input that could not be read at all
EXIT_UNREADABLE = 2


def console(stderr: bool = False) -> Console:
    """A rich console whose printed strings are redacted before rich wraps them (a wrapped secret
    would escape the output streams' redaction), with ``[redacted]`` kept visible under markup."""
    return _console_class()(stderr=stderr, highlight=False, soft_wrap=False)


_CONSOLE: Any = None


def _console_class() -> Any:
    global _CONSOLE
    if _CONSOLE is None:
        import re

        from rich.console import Console

        from hippocamp.redact import REDACTED, redact_text

        unescaped = re.compile(r"(?<!\\)" + re.escape(REDACTED))

        class RedactingConsole(Console):
            def print(self, *objects: Any, **kwargs: Any) -> None:
                markup = kwargs.get("markup")
                markup = self._markup if markup is None else markup

                def clean(o: Any) -> Any:
                    if not isinstance(o, str):
                        return o
                    text = redact_text(o)
                    return unescaped.sub(lambda _: "\\" + REDACTED, text) if markup else text

                super().print(*(clean(o) for o in objects), **kwargs)

        _CONSOLE = RedactingConsole
    return _CONSOLE


def fail(message: str, code: int = EXIT_UNREADABLE) -> NoReturn:
    """Print ``error: message`` (redacted) on stderr and exit with ``code`` (2: bad or unreadable input,
    1: a failure at run time)."""
    from hippocamp.redact import redact_text

    click.echo(redact_text(f"error: {message}"), err=True)
    sys.exit(code)


# -- option checks (click callbacks: a bad value is a BadParameter, exit code 2) ----------------------
def did_you_mean(name: str, known: list[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest known names, or nothing."""
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if not close and name:
        close = [k for k in known if k.startswith(name[:3].lower())][:3]
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def unknown_name(kind: str, name: str, known: list[str]) -> str:
    listed = ", ".join(sorted(known)) or "(none installed)"
    return f"no {kind} named {name!r}{did_you_mean(name, known)}; known: {listed}"


def check_agent_spec(spec: str) -> str:
    """``spec`` (NAME or NAME:ARG) if it names a registered agent whose argument fits, else BadParameter."""
    from hippocamp.registry import UnknownPluginError
    from hippocamp.runs import agent_factory

    try:
        agent_factory(spec)
    except UnknownPluginError as exc:
        raise click.BadParameter(unknown_name("agent", exc.name, list(exc.known))) from None
    except (TypeError, ValueError) as exc:
        raise click.BadParameter(str(exc)) from None
    return spec


def agent_option(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    return None if value is None else check_agent_spec(value)


def check_model_spec(spec: str) -> str:
    """``spec`` if its provider is registered and its shape fits (``openai-compatible:NAME@URL``); the
    model itself is opened later (a missing local model or key is a run-time error, exit 1)."""
    from hippocamp import registry

    text = spec.strip()
    if not text:
        raise click.BadParameter("empty model string; e.g. mock, local:qwen2.5-coder-1.5b, openai:gpt-4o-mini")
    provider, _, rest = text.partition(":")
    known = registry.names("provider")
    if provider not in known:
        raise click.BadParameter(
            unknown_name("model provider", provider, known)
            + " (a model is PROVIDER:NAME, e.g. local:smollm2, openai:gpt-4o-mini, openai-compatible:NAME@URL)"
        )
    if provider == "openai-compatible":
        name, sep, url = rest.partition("@")
        if not sep or not name or not url.startswith(("http://", "https://")):
            raise click.BadParameter(f"expected openai-compatible:NAME@http(s)://HOST:PORT/v1, got {text!r}")
    if provider in ("openai", "local") and not rest:
        raise click.BadParameter(f"{provider} needs a model name: {provider}:NAME")
    return spec


def model_option(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    return None if value is None else check_model_spec(value)


def models_option(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A comma-separated list of model strings (``--panel``)."""
    if value is None:
        return None
    specs = [v.strip() for v in value.split(",") if v.strip()]
    if not specs:
        raise click.BadParameter("no model given; e.g. --panel openai:gpt-4o-mini,local:smollm2")
    for spec in specs:
        check_model_spec(spec)
    return value


def embedder_option(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from hippocamp import registry

    known = registry.names("embedder")
    if value not in known:
        raise click.BadParameter(unknown_name("embedder", value, known))
    return value


def date_option(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """An ISO date or date-time (YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS])."""
    if value is None:
        return None
    from datetime import date, datetime

    text = value.strip()
    for parse in (date.fromisoformat, datetime.fromisoformat):
        try:
            parse(text)
            return text
        except ValueError:
            continue
    raise click.BadParameter(f"expected a date YYYY-MM-DD (or YYYY-MM-DDTHH:MM), got {value!r}")


def new_file_option(_ctx: click.Context, _param: click.Parameter, value: Path | None) -> Path | None:
    """A file that may not exist yet, in a folder that does (it is never created for it)."""
    if value is None:
        return None
    parent = value.expanduser().absolute().parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "does not exist"
        raise click.BadParameter(f"{value}: its folder {parent} {what}")
    return value


def writable_dir_option(_ctx: click.Context, _param: click.Parameter, value: Path | None) -> Path | None:
    """A folder that exists and can be written, or can be created (checked without creating it)."""
    if value is None:
        return None
    reason = writable_dir_problem(value)
    if reason:
        raise click.BadParameter(f"{value}: {reason}")
    return value


def writable_dir_problem(path: Path) -> str | None:
    """Why ``path`` cannot be used as an output folder, or None. Probes by making (and removing) a
    temporary entry in it or in its nearest existing ancestor; nothing is left behind."""
    target = path.expanduser().absolute()
    probe = target
    while not probe.exists():
        if probe.parent == probe:
            return "no existing folder above it"
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is a file, not a folder" if probe != target else "is a file, not a folder"
    try:
        made = tempfile.mkdtemp(prefix=".hippocamp-probe-", dir=probe)
        os.rmdir(made)
    except OSError as exc:
        where = "" if probe == target else f" (in {probe})"
        return f"cannot be written{where}: {exc.strerror or exc}"
    return None


def existing_path(**kwargs: Any) -> click.Path:
    """``click.Path`` of an existing path (``exists=True``), as a ``Path``."""
    return click.Path(exists=True, path_type=Path, **kwargs)


def resolve_input(records: Path | None, root: Path | None, variant: str, example: bool) -> Profile:
    """Load the profile named on the command line (or the bundled example); exit 2 when unreadable."""
    from hippocamp.dataset.profile import ProfileError, load_profile
    from hippocamp.schema.io import RecordsFileError

    if example:
        if records is not None:
            fail("give either RECORDS or --example, not both")
        from hippocamp.examples import example_profile

        records = example_profile()
    if records is None:
        fail("give a records file or profile folder (or --example for the bundled example)")
    try:
        return load_profile(records, root=root, variant=variant)
    except (ProfileError, RecordsFileError) as exc:
        fail(str(exc))


def _executor_spec(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    from hippocamp.executors import ExecutorError, parse_executor

    try:
        parse_executor(value)
    except ExecutorError as exc:
        raise click.BadParameter(str(exc)) from None
    return value


EXECUTOR_OPTIONS = [
    click.option("--executor", "executor_spec", default="local", show_default=True, callback=_executor_spec,
                 help="Where the work runs: local (this machine), ray (a Ray started for this command), "
                      "ray:auto (the cluster this machine belongs to), ray:HOST:PORT (a head's address) or "
                      "ray://HOST:PORT (Ray Client). Needs the 'ray' extra."),
    click.option("--ship", type=click.Choice(["auto", "path", "objects"]), default="auto", show_default=True,
                 help="How a cluster's workers reach the profile and store: by the same path on shared storage, "
                      "through Ray's object store (small profiles), or auto (the path when every node sees it)."),
]  # fmt: skip


def executor_options(fn: Any) -> Any:
    for option in reversed(EXECUTOR_OPTIONS):
        fn = option(fn)
    return fn


def open_executor_or_fail(spec: str, ship: str) -> Any:
    """The executor of ``--executor``/``--ship`` (connected), or exit 2 with why; it is closed when the
    command ends, however it ends (a Ray started for the command stops with it)."""
    from hippocamp.executors import ExecutorError, open_executor

    try:
        executor = open_executor(spec, ship=ship)
    except ExecutorError as exc:
        fail(str(exc))
    click.get_current_context().call_on_close(executor.close)
    return executor
