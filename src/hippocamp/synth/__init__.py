"""Synthetic personal computers: a seeded world rendered into files, with exact gold trajectories."""
