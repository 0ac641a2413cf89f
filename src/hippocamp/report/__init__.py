"""Reports of hippocamp's results: figures of dataset statistics (`plot_stats`), and the Markdown and
HTML report of scored runs (`write_report`, imported on first use so the figures stay light)."""

from typing import Any

from hippocamp.report.plots import plot_stats

__all__ = ["plot_stats", "write_report"]


def __getattr__(name: str) -> Any:
    if name == "write_report":
        from hippocamp.report.write import write_report

        return write_report
    raise AttributeError(f"module 'hippocamp.report' has no attribute {name!r}")
