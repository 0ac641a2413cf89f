"""The HTML report: one self-contained page (inline CSS, figures as base64 PNG, no scripts), rendered
from the package's jinja2 template with autoescaping, so answers and rationales are always escaped."""

from __future__ import annotations

import base64

from hippocamp.report import fmt
from hippocamp.report.build import OVERALL, Report, family_name
from hippocamp.report.pcontext import type_name, verdict_class

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
        family=family_name,
        type_name=type_name,
        verdict_class=verdict_class,
        b64=_b64,
    )
    return env.get_template(TEMPLATE).render(report=report, overall=OVERALL)
