"""The HTML report: one self-contained page (inline CSS, figures as base64 PNG, no scripts), rendered
from the package's jinja2 templates with autoescaping, so answers and rationales are always escaped.
``report.html.j2`` is the page (runs, notes, costs); each section brings its own templates and filters
(`hippocamp.report.common.Section`), rendered with ``section`` in their context."""

from __future__ import annotations

import base64

from hippocamp.report import fmt
from hippocamp.report.build import Report

__all__ = ["TEMPLATE", "render_html"]

TEMPLATE = "report.html.j2"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def render_html(report: Report) -> str:
    """The report as one HTML page."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("hippocamp.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pct=fmt.pct,
        ci=fmt.ci,
        num=fmt.num,
        delta=fmt.delta,
        delta_ci=fmt.delta_ci,
        pvalue=fmt.pvalue,
        seconds=fmt.seconds,
        count=fmt.count,
        cost=fmt.cost,
        b64=_b64,
    )
    for section in report.sections:
        env.filters.update(section.filters())
    return env.get_template(TEMPLATE).render(report=report)
