"""Placeholder until the calendar readers land (being written now)."""
