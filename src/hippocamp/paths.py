"""Where hippocamp keeps things on the user's machine (XDG conventions, overridable)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir", "config_dir", "models_dir", "process_context"]


def cache_dir() -> Path:
    """``$HIPPOCAMP_CACHE_DIR``, else ``$XDG_CACHE_HOME/hippocamp``, else ``~/.cache/hippocamp``."""
    explicit = os.environ.get("HIPPOCAMP_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hippocamp"


def models_dir() -> Path:
    """Where assembled local model files live: ``$HIPPOCAMP_MODELS_DIR`` or ``<cache>/models``."""
    explicit = os.environ.get("HIPPOCAMP_MODELS_DIR")
    return Path(explicit) if explicit else cache_dir() / "models"


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/hippocamp`` or ``~/.config/hippocamp`` (price table, settings)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "hippocamp"


def process_context() -> object:
    """The multiprocessing context for hippocamp's worker pools: ``forkserver`` where it exists.
    Forking a process that already runs threads (llama.cpp's worker, search threads, a test runner)
    copies locks other threads hold, and the children can hang forever; a fork server is a clean,
    single-threaded parent that starts cheaply."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if "forkserver" not in methods:
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    # the server imports the readers and the libraries they open files with once, so a reader worker
    # starts warm in milliseconds, not in half a second (takes effect when the server starts: the
    # first pool of the process; a module that is not installed is skipped)
    from hippocamp.registry import BUILTINS

    libraries = ["pypdfium2", "charset_normalizer", "icalendar", "recurring_ical_events", "docx", "openpyxl",
                 "pptx", "PIL.Image"]  # fmt: skip
    ctx.set_forkserver_preload(["hippocamp.perceive.wall", *BUILTINS["reader"], *libraries])
    return ctx
