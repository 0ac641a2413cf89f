"""Problems found in a dataset, and the validation report that carries them (a file format)."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["VALIDATION_REPORT_VERSION", "Problem", "Severity", "ValidationReport", "short_repr"]

Severity = Literal["error", "warning", "info"]
VALIDATION_REPORT_VERSION = "1"


def short_repr(value: Any, limit: int = 80) -> str | None:
    """A value as short text for a problem's ``found`` (JSON for structures, cut with an ellipsis)."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Problem(BaseModel):
    """One finding. Names the file, the record and the field, and says what was expected."""

    model_config = ConfigDict(frozen=True)

    severity: Severity
    rule: str
    message: str
    file: str = ""
    record_id: str | None = None
    record_index: int | None = None
    field: str = ""
    expected: str | None = None
    found: str | None = None

    def where(self) -> str:
        parts = [self.file] if self.file else []
        if self.record_id is not None:
            parts.append(f"record {self.record_id}")
        elif self.record_index is not None:
            parts.append(f"record #{self.record_index}")
        if self.field:
            parts.append(self.field)
        return ", ".join(parts)

    def __str__(self) -> str:
        text = f"{self.severity}: {self.where()}: {self.message}"
        if self.expected is not None:
            text += f" (expected {self.expected}"
            text += f", found {self.found})" if self.found is not None else ")"
        return text


class ValidationReport(BaseModel):
    """What `hippocamp validate` found: written with ``--json``."""

    version: str = VALIDATION_REPORT_VERSION
    records_file: str
    root: str | None = None
    records: int = 0
    records_read: int = 0
    rules: list[str] = Field(default_factory=list)
    problems: list[Problem] = Field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def counts(self) -> dict[str, int]:
        out = {"error": 0, "warning": 0, "info": 0}
        for p in self.problems:
            out[p.severity] += 1
        return out
