"""``manifest.json``: what a run is (its config, compared on resume) and what ran it (versions, git
commit, sessions). Never an API key: options are redacted by key name and by value shape, any
redacted value is also blanked wherever else it appears in the manifest, and every string written
goes through `hippocamp.redact` (URL credentials, headers, key shapes, secret environment values).
`redact`, `scrub` and `REDACTED` live in `hippocamp.redact` and are re-exported here."""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from hippocamp import __version__
from hippocamp.redact import REDACTED, redact, scrub
from hippocamp.runs.rundir import RunDirError
from hippocamp.runs.rundir import read_manifest as parse_manifest
from hippocamp.schema.run import RUN_FORMAT

__all__ = [
    "MANIFEST_FORMAT",
    "REDACTED",
    "ManifestError",
    "config_differences",
    "environment",
    "git_commit",
    "read_manifest",
    "redact",
    "scrub",
    "utc_now",
    "write_manifest",
]

MANIFEST_FORMAT = RUN_FORMAT
#: dependencies recorded even when hippocamp's metadata cannot be read
KEY_DEPENDENCIES = ("pydantic", "numpy", "openai", "llama-cpp-python", "onnxruntime", "faster-whisper", "pypdf")


class ManifestError(Exception):
    """A run directory whose manifest cannot be read or belongs to another config."""


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _dependency_names() -> list[str]:
    try:
        required = metadata.requires("hippocamp") or []
    except metadata.PackageNotFoundError:
        required = []
    names = {re.split(r"[\s\[<>=!~;(]", r, maxsplit=1)[0].lower() for r in required}
    names.update(KEY_DEPENDENCIES)
    names.discard("")
    return sorted(names)


def dependency_versions() -> dict[str, str]:
    """Installed versions of hippocamp's declared dependencies (extras included; absent ones left out)."""
    out: dict[str, str] = {}
    for name in _dependency_names():
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def git_commit(start: Path | None = None) -> dict[str, Any] | None:
    """``{"commit", "dirty"}`` of the git checkout holding the hippocamp package, or None."""
    here = (start or Path(__file__)).resolve()
    top = next((p for p in [here, *here.parents] if (p / ".git").exists()), None)
    if top is None:
        return None
    try:
        head = subprocess.run(["git", "-C", str(top), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()  # fmt: skip
        status = subprocess.run(["git", "-C", str(top), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=20, check=True).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": head, "dirty": bool(status.strip())}


def environment() -> dict[str, Any]:
    """What runs this session: hippocamp, python, platform, dependency versions, git commit."""
    return {
        "hippocamp": __version__,
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "platform": platform.platform(),
        "dependencies": dependency_versions(),
        "git": git_commit(),
    }


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out if out or not prefix else {prefix: {}}
    return {prefix: value}


def config_differences(recorded: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """``field: recorded -> now`` for every config field that differs (dotted paths, sorted)."""
    old, new = _flatten(recorded), _flatten(current)
    diffs = []
    for name in sorted(set(old) | set(new)):
        if old.get(name, "<absent>") != new.get(name, "<absent>"):
            was, now = json.dumps(old.get(name, "<absent>")), json.dumps(new.get(name, "<absent>"))
            diffs.append(f"{name}: {was} (recorded) != {now} (now)")
    return diffs


def read_manifest(path: Path) -> dict[str, Any] | None:
    """The manifest at ``path`` as plain data in the current format, None when there is none;
    `ManifestError` (naming the file) when it cannot be read or is not a run manifest. Parsed by
    `hippocamp.runs.rundir.read_manifest`, the one reader of manifests."""
    if not path.exists():
        return None
    try:
        return parse_manifest(path).model_dump(mode="json")
    except RunDirError as exc:
        raise ManifestError(f"{exc}; move the run directory aside") from None


def write_manifest(path: Path, data: dict[str, Any]) -> None:
    """Write atomically (temporary file, fsync, rename): a kill leaves the old or the new manifest.
    Every string is redacted (`hippocamp.redact.redact`, by pattern; keys are kept)."""
    data = redact(json.loads(json.dumps(data, default=str)), by_key=False)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
