"""``manifest.json``: what a run is (its config, compared on resume) and what ran it (versions, git
commit, sessions). Never an API key: options are redacted by key name and by value shape, and any
redacted value is also blanked wherever else it appears in the manifest."""

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

MANIFEST_FORMAT = "hippocamp-run/1"
REDACTED = "[redacted]"
#: dependencies recorded even when hippocamp's metadata cannot be read
KEY_DEPENDENCIES = ("pydantic", "numpy", "openai", "llama-cpp-python", "onnxruntime", "faster-whisper", "pypdf")

_SECRET_KEY = re.compile(
    r"(^|[_\-.])(api[_\-]?key|apikey|key|secret|secrets|token|access[_\-]?token|password|passwd|pwd|"
    r"authorization|auth|credential|credentials|bearer|cookie|session)$",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(
    r"^(sk|pk|rk)-[A-Za-z0-9_\-]{8,}|^hf_[A-Za-z0-9]{16,}|^gh[pousr]_[A-Za-z0-9]{16,}|^glpat-|^xox[abprs]-|"
    r"^AKIA[0-9A-Z]{12,}|^AIza[0-9A-Za-z_\-]{20,}|^Bearer\s|^eyJ[A-Za-z0-9_\-]{10,}\.",
)
_URL_SECRET = re.compile(r"(://[^/\s:@]+:)[^@/\s]+(@)|([?&](?:api[_\-]?key|key|token|access_token|sig)=)[^&\s]+",
                         re.IGNORECASE)  # fmt: skip


class ManifestError(Exception):
    """A run directory whose manifest cannot be read or belongs to another config."""


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def redact(value: Any, found: list[str] | None = None, key: str = "") -> Any:
    """A copy of ``value`` with secrets replaced by ``[redacted]``: values under a key that names a
    secret (api_key, token, password, Authorization...), values shaped like keys (sk-..., hf_...,
    Bearer ...), and credentials inside URLs. Secrets found are appended to ``found``."""
    found = found if found is not None else []
    if isinstance(value, dict):
        return {k: redact(v, found, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, found, key) for v in value]
    if isinstance(value, str):
        if value and (_SECRET_KEY.search(key) or _SECRET_VALUE.search(value.strip())):
            found.append(value)
            return REDACTED

        def blank(m: re.Match[str]) -> str:
            head = m.group(1) or m.group(3)
            found.append(m.group(0)[len(head) : len(m.group(0)) - len(m.group(2) or "")])
            return head + REDACTED + (m.group(2) or "")

        return _URL_SECRET.sub(blank, value)
    if value is None or isinstance(value, bool | int | float):
        return value
    return redact(repr(value), found, key)


def scrub(value: Any, secrets: list[str]) -> Any:
    """``value`` with every occurrence of the given secrets (4 characters or more) blanked in strings."""
    secrets = [s for s in secrets if len(s) >= 4]
    if not secrets:
        return value
    if isinstance(value, dict):
        return {k: scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, secrets) for v in value]
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
    return value


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
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ManifestError(f"{path}: not readable JSON ({exc}); move the run directory aside") from None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT or "config" not in data:
        raise ManifestError(f"{path}: not a {MANIFEST_FORMAT} manifest (field 'format' or 'config')")
    return data


def write_manifest(path: Path, data: dict[str, Any]) -> None:
    """Write atomically (temporary file, fsync, rename): a kill leaves the old or the new manifest."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, ensure_ascii=False, default=str)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
