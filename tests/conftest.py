"""Shared fixtures: a tiny real profile (3-page PDF, short WAV, workbook, notes) built in tmp_path, generated
profiles, and a real llama.cpp server (SmolLM2) on 127.0.0.1."""

from __future__ import annotations

import copy
import json
import math
import os
import socket
import struct
import subprocess
import sys
import time
import urllib.request
import wave
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _isolate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the developer's home, cache or plotting config."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))


def make_pdf(path: Path, pages: list[str], labels: list[tuple[int, int, str, int]] | None = None) -> Path:
    """A real PDF with one line of text per page; ``labels``: (first, last, style, start) page-label ranges."""
    import io

    from pypdf import PdfReader, PdfWriter
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=(595, 842), invariant=1)
    for text in pages:
        c.drawString(72, 770, text)
        c.showPage()
    c.save()
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(buf.getvalue())))
    for first, last, style, start in labels or []:
        writer.set_page_label(first, last, style, start=start)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        writer.write(fh)
    return path


# -- optional parts -----------------------------------------------------------------------------------
def require(reason: str | None) -> None:
    """Skip with ``reason`` when something a test needs is missing (None: nothing is); with
    HIPPOCAMP_REQUIRE_MODELS=1 (``make test``, CI), where every extra is installed, fail instead."""
    if reason is None:
        return
    if os.environ.get("HIPPOCAMP_REQUIRE_MODELS") == "1":
        pytest.fail(f"required here (HIPPOCAMP_REQUIRE_MODELS=1): {reason}")
    pytest.skip(reason)


def require_programs(*names: str) -> None:
    """Skip (or fail, see `require`) unless these programs are on the PATH."""
    import shutil

    missing = [n for n in names if shutil.which(n) is None]
    require(f"needs the program(s) {', '.join(missing)}" if missing else None)


def require_asr(model: str = "tiny.en") -> None:
    """Skip (or fail) unless speech recognition can run: faster-whisper and the Whisper model (the asr extra)."""
    from hippocamp.perceive.asr import asr_missing

    require(asr_missing(model))


def require_ocr() -> None:
    """Skip (or fail) unless OCR can run: the tesseract program with its language data."""
    from hippocamp.perceive.ocr import ocr_missing

    require(ocr_missing())


def make_wav(path: Path, seconds: float, rate: int = 8000) -> Path:
    """A real mono 16-bit WAV: a 440 Hz tone of the given length."""
    path.parent.mkdir(parents=True, exist_ok=True)
    frames = int(seconds * rate)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(
            b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / rate))) for i in range(frames))
        )
    return path


def cap(reasoning: list[str], perception: list[str] | None = None) -> str:
    return json.dumps(
        {
            "search": ["semantic"],
            "evidence_perception": perception or ["document_understanding"],
            "reasoning": reasoning,
        }
    )


GOOD_RECORDS: list[dict[str, Any]] = [
    {
        "id": "q1",
        "question": "What is the deposit in the contract?",
        "answer": "EUR 2,900, paid to Oskar Lindqvist.",
        "QA_type": "factual_retention",
        "profiling_type": "",
        "file_path": ["Docs/contract.pdf"],
        "file_number": 1,
        "file_modality": ["document"],
        "file_type": ["pdf"],
        "agent_cap": cap(["basic"]),
        "evidence": [
            {
                "evidence_id": 1,
                "file_path": "Docs/contract.pdf",
                "modality_type": "document",
                "evidence_text": "Deposit: EUR 2,900 to the landlord Oskar Lindqvist",
                "evidence_locator": [{"unit": "page", "position": {"system_page": 3, "printed_page": "2"}}],
            }
        ],
        "rationale": [
            {"rationale_text": "Find the contract.", "evidence_id": []},
            {"rationale_text": "Read the deposit.", "evidence_id": [1]},
        ],
    },
    {
        "id": "q2",
        "question": "When is the dentist appointment mentioned in my memo?",
        "answer": "On 15 October 2024 at 9:00.",
        "QA_type": "factual_retention",
        "profiling_type": "",
        "file_path": ["Audio/memo.wav", "Notes/todo.md"],
        "file_number": 2,
        "file_modality": ["audio", "text"],
        "file_type": ["wav", "md"],
        "agent_cap": cap(["verification"], ["audio_understanding"]),
        "evidence": [
            {
                "evidence_id": 1,
                "file_path": "Audio/memo.wav",
                "modality_type": "audio",
                "evidence_text": "dentist on 15 October 2024 at 9:00",
                "evidence_locator": [{"unit": "timestamp", "position": {"start": "00:00:00.5", "end": "00:01.5"}}],
            },
            {
                "evidence_id": 2,
                "file_path": "Notes/todo.md",
                "modality_type": "text",
                "evidence_text": "- dentist 15 October 2024, 9:00",
                "evidence_locator": [{"unit": "line", "position": 2}],
            },
        ],
        "rationale": [
            {"rationale_text": "Check memos and notes.", "evidence_id": []},
            {"rationale_text": "The memo names the date.", "evidence_id": [1]},
            {"rationale_text": "The note confirms it.", "evidence_id": [2]},
        ],
    },
    {
        "id": "q3",
        "question": "What did groceries cost in October?",
        "answer": "310.25",
        "QA_type": "profiling",
        "profiling_type": "spending",
        "file_path": ["Finance/budget.xlsx"],
        "file_number": 1,
        "file_modality": ["document"],
        "file_type": ["xlsx"],
        "agent_cap": cap(["summarization"]),
        "evidence": [
            {
                "evidence_id": "e1",
                "file_path": "Finance/budget.xlsx",
                "modality_type": "document",
                "evidence_text": "Groceries 310.25",
                "evidence_locator": [{"unit": "cells", "position": "October!A2:B2"}],
            }
        ],
        "rationale": [
            {"rationale_text": "Open the budget.", "evidence_id": []},
            {"rationale_text": "Read the groceries row.", "evidence_id": ["e1"]},
        ],
    },
]


@pytest.fixture
def good_records() -> list[dict[str, Any]]:
    return copy.deepcopy(GOOD_RECORDS)


@pytest.fixture
def profile_dir(tmp_path: Path) -> Path:
    """A release-layout profile ``Tiny/Fullset/{Tiny/, Tiny.json, Tiny_files.xlsx}`` with real files."""
    from datetime import datetime

    from openpyxl import Workbook

    full = tmp_path / "Tiny" / "Fullset"
    root = full / "Tiny"
    make_pdf(
        root / "Docs/contract.pdf",
        ["Cover", "Rent: EUR 1,450", "Deposit: EUR 2,900  Landlord: Oskar Lindqvist"],
        labels=[(0, 0, "/r", 1), (1, 2, "/D", 1)],
    )
    make_wav(root / "Audio/memo.wav", 2.0)
    (root / "Notes").mkdir(parents=True)
    (root / "Notes/todo.md").write_text("# To do\n- dentist 15 October 2024, 9:00\n- call Amara\n", encoding="utf-8")
    wb = Workbook()
    ws = wb.active
    ws.title = "October"
    for row in [("Category", "Amount"), ("Groceries", 310.25), ("Rent", 1450)]:
        ws.append(row)
    (root / "Finance").mkdir(parents=True)
    wb.save(root / "Finance/budget.xlsx")
    (full / "Tiny.json").write_text(json.dumps(GOOD_RECORDS, indent=2), encoding="utf-8")
    meta = Workbook()
    ms = meta.active
    ms.append(["FilePath", "FileType", "creation_date", "modification_date", "location"])
    ms.append(["Docs", "folder", None, None, None])
    ms.append(["Docs/contract.pdf", "pdf", datetime(2024, 8, 1, 9, 0), datetime(2024, 8, 2, 9, 0), None])
    ms.append(["Audio/memo.wav", "wav", datetime(2024, 10, 1, 12, 0), datetime(2024, 10, 1, 12, 0), "Rotterdam"])
    ms.append(["Notes/todo.md", "md", "2024-10-03 08:00:00", "not a date", None])
    meta.save(full / "Tiny_files.xlsx")
    return tmp_path / "Tiny"


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def synth_small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small generated profile (release layout, 60 files, 21 questions), made once per session."""
    from hippocamp.synth.build import generate

    out = tmp_path_factory.mktemp("synth-session") / "small"
    generate(out, persona="professional", seed=7, scale="small", jobs=2)
    return out


@pytest.fixture(scope="session")
def synth_indexed(synth_small: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(file root, store path) of ``synth_small`` indexed quickly: no OCR, no speech, BM25 only.
    Open the store with ``Store(path)`` in each test (stores are cheap to open)."""
    from hippocamp.perceive.base import PerceiveOptions
    from hippocamp.store.db import Store
    from hippocamp.store.indexer import IndexOptions, index_profile

    root = next(p for p in synth_small.iterdir() if p.is_dir())
    path = tmp_path_factory.mktemp("synth-store") / "store.sqlite"
    store = Store(path, root=root)
    index_profile(root, store, IndexOptions(perceive=PerceiveOptions(ocr=False, asr=False), workers=1, embed=False))
    store.close()
    return root, path


@pytest.fixture
def env(synth_indexed: tuple[Path, Path]) -> Any:
    """A `FilesEnv` over ``synth_indexed`` (the agents' and the environment's tests)."""
    from hippocamp.envs.files import FilesEnv
    from hippocamp.store.db import Store

    root, path = synth_indexed
    return FilesEnv(root, Store(path))


# -- a real OpenAI-compatible server ------------------------------------------------------------------
def smollm2_path() -> Path:
    """SmolLM2's GGUF; skips without the local extra, fails instead when HIPPOCAMP_REQUIRE_MODELS=1 (CI)."""
    try:
        import llama_cpp  # noqa: F401

        from hippocamp.models.local_models import find_model

        return find_model("smollm2")[0]
    except Exception as exc:  # ImportError, or the model not installed
        if os.environ.get("HIPPOCAMP_REQUIRE_MODELS") == "1":
            pytest.fail(f"the local extra is required here (HIPPOCAMP_REQUIRE_MODELS=1): {exc}")
        pytest.skip(f"needs the local extra (llama-cpp-python and SmolLM2): {exc}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, proc: subprocess.Popen[bytes] | None, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"llama.cpp server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"llama.cpp server at {url} not ready after {timeout} s")


@contextmanager
def llama_server(model: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    """llama.cpp's OpenAI-compatible server for ``model`` on 127.0.0.1:``port``, stopped on exit."""
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
           "--port", str(port), "--n_ctx", "2048", "--n_threads", "1"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(f"http://127.0.0.1:{port}/v1", proc)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    """The server .ci/run started (HIPPOCAMP_TEST_SERVER), else one started here for this module."""
    external = os.environ.get("HIPPOCAMP_TEST_SERVER")
    if external:
        wait_ready(external, None)
        yield external
        return
    port = free_port()
    with llama_server(smollm2_path(), port):
        yield f"http://127.0.0.1:{port}/v1"


# -- a Ray cluster ------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def ray_address() -> Iterator[str]:
    """A Ray cluster's address: the one `.ci/run` starts (``HIPPOCAMP_RAY_ADDRESS``: a head and a worker
    node on 127.0.0.1, by ``ray start``), else a head and a worker node started here by Ray's own
    `ray.cluster_utils.Cluster` and shut down at the end. Skips without the ray extra (fails instead
    when HIPPOCAMP_REQUIRE_MODELS=1, as in CI)."""
    try:
        import ray  # noqa: F401
    except ImportError as exc:
        require(f"needs the ray extra: {exc}")
    address = os.environ.get("HIPPOCAMP_RAY_ADDRESS")
    if address:
        yield address
        return
    from ray.cluster_utils import Cluster

    node = {"num_cpus": 1, "object_store_memory": 100 * 1024 * 1024}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    cluster.add_node(**node)
    cluster.wait_for_nodes()
    try:
        yield cluster.address
    finally:
        cluster.shutdown()
