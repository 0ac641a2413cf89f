"""Release-time quality control of the authored questions (HippoCamp appendix B.18.4): every record that
would be exported validates against the profile, and none reintroduces an identifier.

Two scans of each record's question, answer, evidence texts and rationale: hippocamp build's detector for
identifiers with a shape (e-mail addresses, phone numbers, IBANs, card numbers, ID numbers, handles), and,
when the profile was built with ``hippocamp build`` and its work folder is given, every original
identifier the anonymizer replaced (its private state), which must not come back through a question.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["QcRow", "release_qc"]

SHAPED = {"EMAIL", "PHONE", "IBAN", "CARD", "SSN", "ID", "HANDLE"}


@dataclass
class QcRow:
    id: str
    errors: list[str] = field(default_factory=list)
    identifiers: list[tuple[str, str]] = field(default_factory=list)
    originals: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.errors or self.identifiers or self.originals)


def _texts(record: Mapping[str, Any]) -> Iterable[str]:
    yield str(record.get("question") or "")
    yield str(record.get("answer") or "")
    for ev in record.get("evidence") or []:
        if isinstance(ev, dict):
            yield str(ev.get("evidence_text") or "")
    for step in record.get("rationale") or []:
        if isinstance(step, dict):
            yield str(step.get("rationale_text") or "")


def release_qc(ws: Any, build_work: Path | None = None) -> tuple[list[QcRow], dict[str, str]]:
    """One row per record an export would write, and the items it would leave out."""
    from hippocamp.build.pii import Detector

    originals: list[str] = []
    if build_work is not None:
        from hippocamp.build.anonymize import Anonymizer

        originals = Anonymizer.load(Path(build_work) / "private" / "anonymizer.json").originals()
    detector = Detector()
    records, skipped = ws.finished()
    rows = []
    for record in records:
        row = QcRow(str(record.get("id")))
        row.errors = [f"{p.rule}: {p.message}" for p in ws.check(record) if p.severity == "error"]
        for text in _texts(record):
            row.identifiers += [(f.kind, f.text) for f in detector.find(text) if f.kind in SHAPED]
            low = text.lower()
            row.originals += [o for o in originals if o in low]
        rows.append(row)
    return rows, skipped
