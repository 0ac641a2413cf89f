"""Placeholder until the mail readers land (being written now)."""
