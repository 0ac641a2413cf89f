"""Reports of hippocamp's results: figures of dataset statistics."""

from hippocamp.report.plots import plot_stats

__all__ = ["plot_stats"]
