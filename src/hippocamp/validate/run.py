"""Run the registered rules over every record of a profile and collect a `ValidationReport`."""

from __future__ import annotations

from collections.abc import Sequence

from hippocamp import registry
from hippocamp.dataset.profile import Profile
from hippocamp.schema.problems import Problem, ValidationReport
from hippocamp.validate.context import CheckContext, ValidateOptions

__all__ = ["rule_names", "validate_profile"]


def rule_names() -> list[str]:
    """Every registered rule, built-in and plug-in, in the order they run."""
    return registry.names("rule")


def validate_profile(
    profile: Profile,
    options: ValidateOptions | None = None,
    rules: Sequence[str] | None = None,
) -> ValidationReport:
    """Check every readable record of ``profile``. Records that could not be read are reported by
    the loader (``profile.problems``) and included; a rule that crashes on a record is reported as
    an error of that rule and the other rules and records still run."""
    if profile.records_file is None:
        raise ValueError(f"profile {profile.name!r} has no records file to validate")
    options = options or ValidateOptions()
    selected = list(rules) if rules is not None else rule_names()
    checks = [(name, registry.get("rule", name)) for name in selected]
    records_file = profile.records_file
    ctx = CheckContext(records_file=str(records_file.path), profile=profile, options=options)
    problems: list[Problem] = list(profile.problems)
    if profile.root is None:
        problems.append(
            Problem(
                severity="warning",
                rule="file-paths",
                file=str(records_file.path),
                message="no profile root: file paths and locators were not checked against files (give --root)",
            )
        )
    for index, record in zip(records_file.indices, records_file.records, strict=True):
        for name, check in checks:
            try:
                problems.extend(check(ctx, record, index))
            except Exception as exc:  # a rule's bug must not hide the other findings
                problems.append(
                    ctx.problem("error", name, record, index, "", f"rule crashed: {type(exc).__name__}: {exc}")
                )
    return ValidationReport(
        records_file=str(records_file.path),
        root=None if profile.root is None else str(profile.root),
        records=records_file.total,
        records_read=len(records_file.records),
        rules=selected,
        problems=problems,
    )
