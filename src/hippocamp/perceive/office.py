"""Placeholder until the office readers land (being written now)."""
