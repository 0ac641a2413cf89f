"""What the benchmark scripts share: timing by medians, and the LoCoMo dev slice as a suite."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["LOCOMO", "locomo_suite", "median_seconds", "timed"]

#: the LoCoMo dev slice beside the project (../shared/data), when present
LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev" / "locomo-dev.json"


def locomo_suite(out: Path) -> Any:
    """The LoCoMo dev slice as a ``pcontext:`` suite: imported into ``out/personas`` (once), indexed into
    ``out/store.sqlite``; None (and a line saying so) when the slice is not here."""
    if not LOCOMO.is_file():
        print(f"skipped: {LOCOMO} is not here")
        return None
    from hippocamp.importers.locomo import import_locomo
    from hippocamp.runs import SuiteOptions, load_suite

    personas = out / "personas"
    if not personas.is_dir():
        import_locomo(LOCOMO, personas)
    return load_suite(f"pcontext:{personas}", SuiteOptions(store=out / "store.sqlite"))


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn`` takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    """The median of ``repeat`` timed calls."""
    return statistics.median(timed(fn) for _ in range(repeat))
