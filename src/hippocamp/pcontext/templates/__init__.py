"""Phrase banks of the template engine: hidden facts with their behavioral signals, filler, interview."""
