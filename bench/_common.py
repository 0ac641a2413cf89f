"""What the benchmark scripts share: timing by medians."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

__all__ = ["median_seconds", "timed"]


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn`` takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    """The median of ``repeat`` timed calls."""
    return statistics.median(timed(fn) for _ in range(repeat))
