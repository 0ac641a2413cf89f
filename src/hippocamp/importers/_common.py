"""What the importers share: their error, validation summaries, stable JSON writing."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from hippocamp.schema.problems import ValidationReport

__all__ = ["ImporterError", "validation_summary", "write_json"]


class ImporterError(Exception):
    """Input that cannot be imported at all (names the file or folder); problems with single
    records or files are reported, never raised."""


def validation_summary(report: ValidationReport) -> dict[str, Any]:
    """Counts of a validation report: records, problems by severity, and errors/warnings by rule."""
    by_rule: dict[str, dict[str, int]] = {}
    for (rule, severity), n in sorted(Counter((p.rule, p.severity) for p in report.problems).items()):
        if severity != "info":
            by_rule.setdefault(rule, {})[severity] = n
    counts = report.counts()
    return {
        "records": report.records,
        "records_read": report.records_read,
        "errors": counts["error"],
        "warnings": counts["warning"],
        "info": counts["info"],
        "by_rule": by_rule,
    }


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented UTF-8 JSON, atomically (a temporary file renamed into place)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
