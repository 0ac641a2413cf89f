"""Placeholder until the media readers land (being written now)."""
