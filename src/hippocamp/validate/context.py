"""What a validation rule sees: the records file, the profile's files, measured media, options."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from hippocamp.dataset.profile import Profile, normalize_path
from hippocamp.schema.problems import Problem, Severity
from hippocamp.schema.record import HippoCampRecord
from hippocamp.validate.media import MediaInfo, probe

__all__ = ["CheckContext", "Rule", "ValidateOptions"]


@dataclass(frozen=True)
class ValidateOptions:
    """Tolerances of the checks."""

    #: seconds a time range may run past the end of its media (rounding in annotations)
    time_slack: float = 0.5
    #: check that numbers, dates and names of each answer appear in its evidence text (rule 4)
    answer_support: bool = True


class Rule(Protocol):
    """A check of one record; its docstring's first line describes it in reports."""

    __name__: str

    def __call__(self, ctx: CheckContext, record: HippoCampRecord, index: int) -> Iterator[Problem]: ...


@dataclass
class CheckContext:
    records_file: str
    profile: Profile | None
    options: ValidateOptions = field(default_factory=ValidateOptions)
    _media: dict[str, MediaInfo] = field(default_factory=dict)
    _index: dict[str, list[str]] | None = None

    @property
    def root(self) -> Path | None:
        return self.profile.root if self.profile else None

    def problem(
        self,
        severity: Severity,
        rule: str,
        record: HippoCampRecord,
        index: int,
        field: str,
        message: str,
        expected: str | None = None,
        found: str | None = None,
    ) -> Problem:
        return Problem(
            severity=severity,
            rule=rule,
            file=self.records_file,
            record_id=record.key,
            record_index=index,
            field=field,
            message=message,
            expected=expected,
            found=found,
        )

    def resolve(self, path: str) -> Path | None:
        return self.profile.resolve(path) if self.profile else None

    def media(self, path: str) -> MediaInfo | None:
        """Measured facts of a profile file (cached), or None when the file is not there."""
        rel = normalize_path(path)
        if rel not in self._media:
            found = self.resolve(rel)
            if found is None:
                return None
            self._media[rel] = probe(found)
        return self._media[rel]

    def _files(self) -> dict[str, list[str]]:
        if self._index is None:
            self._index = {}
            root = self.root
            if root is not None:
                for dirpath, _dirs, files in os.walk(root):
                    for name in files:
                        rel = Path(dirpath, name).relative_to(root).as_posix()
                        self._index.setdefault(rel.lower(), []).append(rel)
                        self._index.setdefault("/" + name.lower(), []).append(rel)
        return self._index

    def suggest(self, path: str) -> str | None:
        """A file the author may have meant: same path in other case, or the same file name elsewhere."""
        rel = normalize_path(path)
        files = self._files()
        same_case = files.get(rel.lower())
        if same_case:
            return same_case[0]
        by_name = files.get("/" + Path(rel).name.lower())
        if by_name and len(by_name) <= 3:
            return " or ".join(by_name)
        return None
