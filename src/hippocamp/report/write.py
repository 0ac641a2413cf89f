"""Write a report of scored runs: ``report.md`` with its figures in ``figures/``, and ``report.html``.
Both texts are redacted (`hippocamp.redact.redact_text`) as they are written: whatever a run holds,
no secret reaches a report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hippocamp.redact import redact_text
from hippocamp.report.build import build_report
from hippocamp.report.html import render_html
from hippocamp.report.markdown import render_markdown

__all__ = ["write_report"]


def write_report(
    run_dirs: Sequence[str | Path],
    out: str | Path,
    *,
    judge_mode: str | None = None,
    judge: str | None = None,
    title: str = "hippocamp report",
) -> dict[str, Path]:
    """Build the report of ``run_dirs`` into ``out`` (created); returns the paths by kind: ``md``,
    ``html`` and ``figure:NAME`` for each PNG. Raises `ReportError` for a run that cannot be reported."""
    report = build_report(run_dirs, judge_mode=judge_mode, judge=judge, title=title)
    out = Path(out)
    figures = out / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for name, png in report.figures.items():
        path = figures / f"{name}.png"
        path.write_bytes(png)
        paths[f"figure:{name}"] = path
    paths["md"] = out / "report.md"
    paths["md"].write_text(redact_text(render_markdown(report, "figures")), encoding="utf-8")
    paths["html"] = out / "report.html"
    paths["html"].write_text(redact_text(render_html(report)), encoding="utf-8")
    return paths
