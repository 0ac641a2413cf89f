"""Placeholder until the text readers land (being written now)."""
