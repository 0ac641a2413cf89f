"""The one reader of run directories: manifest, episodes and score lines (`hippocamp.schema.run`).

``RunDir.open(path)`` reads ``manifest.json`` (any format: version 1 is upgraded, see
`hippocamp.schema.run.upgrade_manifest`) and finds the benchmark it names in the registry, whose
``score_line`` model reads ``scores.jsonl``. Scoring, reports, the CLI and the quickstart read runs
through it. A manifest that cannot be read is a `RunDirError` naming the file, line and field; a
damaged line of ``episodes.jsonl`` or ``scores.jsonl`` (not the last) is reported and skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hippocamp import registry
from hippocamp.durable import ReadResult, read_lines
from hippocamp.runs.episodes import ReadResult as EpisodesRead
from hippocamp.runs.episodes import read_episodes
from hippocamp.schema.run import RUN_FORMAT, RUN_FORMATS_READ, RunManifest, ScoreLine, upgrade_manifest

__all__ = ["EPISODES", "MANIFEST", "SCORES", "SUMMARY", "RunDir", "RunDirError", "read_manifest"]

MANIFEST = "manifest.json"
EPISODES = "episodes.jsonl"
SCORES = "scores.jsonl"
SUMMARY = "scores.summary.json"


class RunDirError(ValueError):
    """A run directory that cannot be read: names the folder or file and why."""


@dataclass
class RunDir:
    """A run directory: where it is, its manifest and the benchmark whose suite it ran."""

    path: Path
    manifest: RunManifest

    @classmethod
    def open(cls, path: str | Path) -> RunDir:
        path = Path(path)
        if not path.is_dir():
            raise RunDirError(f"{path}: no such run directory")
        file = path / MANIFEST
        if not file.exists():
            raise RunDirError(f"{path}: no {MANIFEST}; is this a run directory?")
        return cls(path, read_manifest(file))

    @property
    def benchmark_name(self) -> str:
        return self.manifest.benchmark

    @property
    def benchmark(self) -> Any:
        """The benchmark plug-in (an instance of the registered class)."""
        try:
            return registry.instance("benchmark", self.manifest.benchmark)
        except registry.UnknownPluginError as exc:
            raise RunDirError(f"{self.path / MANIFEST}: field 'benchmark': {exc}") from None

    @property
    def score_line(self) -> type[ScoreLine]:
        model: type[ScoreLine] = self.benchmark.score_line
        return model

    def episodes(self) -> EpisodesRead:
        return read_episodes(self.path / EPISODES)

    def scores(self) -> ReadResult[ScoreLine]:
        """Every score line of the run (any judge and mode), first occurrence of each key."""
        model = self.score_line
        return read_lines(self.path / SCORES, model.parse, lambda s: s.key, "a score line")

    def score_lines(self, judge: str | None = None, mode: str | None = None) -> list[ScoreLine]:
        """The lines of a judge and mode in key order (not the order they were written, which depends on
        when each judgment finished): summaries over them come out the same to the last bit."""
        lines = [
            s for s in self.scores().items if (judge is None or s.judge == judge) and (mode is None or s.mode == mode)
        ]
        return sorted(lines, key=lambda s: s.key)

    def described(self) -> dict[str, Any]:
        """What the manifest says of the run: agent, model, suite, dataset hash, epochs, creation time."""
        config, suite = self.manifest.config, self.manifest.suite
        model = config.get("model", {})
        config_suite = config.get("suite", {}) if isinstance(config.get("suite"), dict) else {}
        return {
            "agent": str(config.get("agent", "?")),
            "model": str(model.get("id", "?") if isinstance(model, dict) else model),
            "suite": str(suite.get("name") or config_suite.get("name", "?")),
            "suite_spec": str(suite.get("spec", "")),
            "dataset_sha256": str(config_suite.get("dataset_sha256", "")),
            "epochs": int(config.get("epochs", 1) or 1),
            "created": self.manifest.created,
        }


def read_manifest(file: Path) -> RunManifest:
    """``manifest.json`` of any format read (`RUN_FORMATS_READ`), as the current `RunManifest`; the one
    parser of manifests (the runner's resume reads through it too). Errors name the file and field."""
    from hippocamp.schema.io import read_json

    try:
        raw = read_json(file, "run manifest")
    except ValueError as exc:
        raise RunDirError(str(exc)) from None
    if not isinstance(raw, dict):
        raise RunDirError(f"{file}: not a run manifest (a JSON object), found {type(raw).__name__}")
    for key in ("suite", "config", "model"):
        if key in raw and not isinstance(raw[key], dict):
            raise RunDirError(f"{file}: field '{key}': expected an object, found {type(raw[key]).__name__}")
    if raw.get("format") not in RUN_FORMATS_READ or "config" not in raw:
        raise RunDirError(f"{file}: not a {RUN_FORMAT} manifest (field 'format' or 'config')")
    try:
        return RunManifest.model_validate(upgrade_manifest(raw))
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ()))
        raise RunDirError(f"{file}: field '{where}': {err.get('msg')}") from None
