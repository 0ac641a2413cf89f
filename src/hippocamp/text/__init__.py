"""Text utilities with no dependencies: checkable facts (numbers, dates, times, names)."""

from hippocamp.text.facts import Facts, extract_facts, unsupported_facts

__all__ = ["Facts", "extract_facts", "unsupported_facts"]
