"""Runs: suites of tasks, the resumable concurrent runner, run directories (manifest + episodes)."""

from hippocamp.runs.episodes import Episode, EpisodeLogError, read_episodes
from hippocamp.runs.manifest import ManifestError
from hippocamp.runs.runner import RunConfigError, RunSummary, agent_factory, run
from hippocamp.runs.suite import Suite, SuiteError, SuiteOptions, load_suite

__all__ = [
    "Episode",
    "EpisodeLogError",
    "ManifestError",
    "RunConfigError",
    "RunSummary",
    "Suite",
    "SuiteError",
    "SuiteOptions",
    "agent_factory",
    "load_suite",
    "read_episodes",
    "run",
]
