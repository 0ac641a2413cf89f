"""The HippoCamp release's answer metrics (`hippocamp.scoring.lexical`): exact and covered match on the
release's conformance rows, ROUGE and BLEU against figures worked out by hand, BLEU's tokens equal to
``nltk.word_tokenize`` given the same Punkt model, nothing of NLTK's data or the network touched,
and (marked slow) semantic similarity with the real all-MiniLM-L6-v2 embedder."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from conftest import require
from hippocamp.models.errors import ModelNotAvailableError
from hippocamp.models.weights import Member
from hippocamp.scoring import lexical
from hippocamp.scoring.lexical import (
    METRIC_NAMES,
    NO_GROUND_TRUTH,
    AnswerMetrics,
    MetricResult,
    MetricSummary,
    answer_metrics,
    bleu,
    covered_exact_match,
    exact_match,
    normalize_answer,
    punkt_english_parameters,
    rouge,
    score_answers,
    semantic_similarity,
    summarize,
    word_tokenize,
)

#: the release's 17 conformance rows (answer, ground truth), restated: c01..c05, then twelve "x" vs "y"
CONFORMANCE_ROWS = [
    ("Dress neatly.", "Dress neatly and appropriately for court."),
    ("EUR 1,450", "EUR 1,450"),
    ("EUR 1,400", "EUR 1,450"),
    ("12 March 2024", "2024-03-12"),
    ("", "Dress neatly."),
] + [("x", "y")] * 12


# -- exact and covered match -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("EUR 1,450", "eur 1450"),
        ("The Cat, a dog!", "cat dog"),
        ("An apple   and\tthe  pear.", "apple and pear"),
        ("the-end", "theend"),  # punctuation goes first, so "the" is no longer a word of its own
        ("Theatre anthem", "theatre anthem"),  # articles only as whole words
        ("“Quoted” café", "“quoted” café"),  # only ASCII punctuation is removed
        ("A.", ""),
    ],
)
def test_normalize_answer(text: str, normalized: str) -> None:
    assert normalize_answer(text) == normalized


@pytest.mark.parametrize(
    ("answer", "truth", "em", "covered"),
    [
        ("EUR 1,450", "EUR 1,450", 1.0, 1.0),
        ("Dress neatly.", "Dress neatly and appropriately for court.", 0.0, 0.0),  # truth not inside the answer
        ("Dress neatly and appropriately for court, always.", "Dress neatly and appropriately for court.", 0.0, 1.0),
        ("", "Dress neatly.", 0.0, 0.0),
        (None, "Dress neatly.", 0.0, 0.0),  # a missing answer is read as ""
        ("EUR 1,400", "EUR 1,450", 0.0, 0.0),
        ("12 March 2024", "2024-03-12", 0.0, 0.0),
        ("the eur 1450!", "EUR 1,450", 1.0, 1.0),
        ("anything at all", "The.", 0.0, 1.0),  # a truth normalising to "" is inside every answer
        ("!", "The.", 1.0, 1.0),
    ],
)
def test_exact_and_covered_match(answer: str | None, truth: str, em: float, covered: float) -> None:
    e, c = exact_match(answer, truth), covered_exact_match(answer, truth)
    assert (e.score, c.score) == (em, covered)
    assert e.error is None and c.error is None
    assert e.details["is_exact_match"] is (em == 1.0)
    assert c.details["is_covered"] is (covered == 1.0)
    assert e.details["normalized_ground_truth"] == normalize_answer(truth)


@pytest.mark.parametrize("truth", [None, ""])
def test_no_ground_truth_is_zero_with_the_error_in_every_metric(truth: str | None) -> None:
    row = answer_metrics("EUR 1,450", truth, embedder=BagOfLetters())
    for result in row.results():
        assert (result.score, result.error) == (0.0, NO_GROUND_TRUTH), result.name
    assert row.to_dict()["bleu"] == {"score": 0.0, "details": {"error": NO_GROUND_TRUTH}}


def test_release_aggregate_over_its_conformance_rows() -> None:
    """The release's run_evaluation.py gives exact_match and covered_exact_match means of 1/17 here."""
    rows = score_answers(CONFORMANCE_ROWS, semantic=False)
    summary = summarize(rows)
    assert summary.total == 17
    for name in ("exact_match", "covered_exact_match"):
        m = summary.metrics[name]
        assert m.mean == pytest.approx(1 / 17) and m.mean == 0.058823529411764705
        assert (m.count, m.errors, m.unscored) == (17, 0, 0)
    # ROUGE: c01 4/9, c02 1, c03 [eur, 1, 400] vs [eur, 1, 450] (2/3 + 1/2 + 2/3) / 3, c04 1/3, the rest 0
    assert summary.metrics["rouge"].mean == pytest.approx((4 / 9 + 1 + 11 / 18 + 1 / 3) / 17)
    sim = summary.metrics["semantic_similarity"]
    assert (sim.mean, sim.count, sim.unscored) == (None, 0, 17)
    assert sim.reasons == ("semantic similarity not computed (turned off)",)


def test_summary_counts_errored_rows_as_zero_and_leaves_unscored_rows_out() -> None:
    rows = score_answers([("EUR 1,450", "EUR 1,450"), ("EUR 1,450", None), ("x", "x")], semantic=False)
    summary = summarize(rows)
    em = summary.metrics["exact_match"]
    assert (em.mean, em.count, em.errors) == (pytest.approx(2 / 3), 3, 1)
    assert summary.means()["covered_exact_match"] == pytest.approx(2 / 3)
    # a metric that is not run is unscored on every row, the one without a ground truth too
    sim = summary.metrics["semantic_similarity"]
    assert (sim.mean, sim.count, sim.errors, sim.unscored) == (None, 0, 0, 3)
    with_sim = summarize(score_answers([("abc", "cab"), ("abc", None)], embedder=BagOfLetters()))
    assert with_sim.metrics["semantic_similarity"] == MetricSummary(mean=pytest.approx(0.5), count=2, errors=1)
    assert set(summary.metrics) == set(METRIC_NAMES)
    empty = summarize([])
    assert empty.total == 0 and all(m.mean is None and m.count == 0 for m in empty.metrics.values())


# -- ROUGE -----------------------------------------------------------------------------------------------
def test_rouge_by_hand() -> None:
    # stemmed tokens: answer [dress, neatli], truth [dress, neatli, and, appropri, for, court]
    r = rouge("Dress neatly.", "Dress neatly and appropriately for court.")
    d = r.details
    assert (d["rouge1_precision"], d["rouge1_recall"], d["rouge1_f1"]) == pytest.approx((1.0, 1 / 3, 0.5))
    assert (d["rouge2_precision"], d["rouge2_recall"], d["rouge2_f1"]) == pytest.approx((1.0, 1 / 5, 1 / 3))
    assert (d["rougeL_precision"], d["rougeL_recall"], d["rougeL_f1"]) == pytest.approx((1.0, 1 / 3, 0.5))
    assert r.score == pytest.approx((0.5 + 1 / 3 + 0.5) / 3)
    assert d["rouge_types"] == ["rouge1", "rouge2", "rougeL"]
    # answer [12, march, 2024], truth [2024, 03, 12]: 2 unigrams shared, no bigram, LCS 1
    assert rouge("12 March 2024", "2024-03-12").score == pytest.approx((2 / 3 + 0 + 1 / 3) / 3)


def test_rouge_identical_stemmed_and_empty() -> None:
    assert rouge("Dress neatly and appropriately.", "Dress neatly and appropriately.").score == 1.0
    assert rouge("running dogs", "run dog").score == 1.0  # the Porter stemmer is on
    assert rouge("", "Dress neatly.").score == 0.0
    assert rouge("x", "y").score == 0.0
    assert rouge("東京", "東京").score == 0.0  # rouge-score keeps [a-z0-9] only, as in the release
    # answer and truth are not symmetric: precision is over the answer
    d = rouge("Dress neatly and appropriately for court.", "Dress neatly.").details
    assert (d["rouge1_precision"], d["rouge1_recall"]) == pytest.approx((1 / 3, 1.0))


# -- BLEU ------------------------------------------------------------------------------------------------
def test_bleu_by_hand() -> None:
    # answer [dress, neatly, .], truth [dress, neatly, and, appropriately, for, court, .]:
    # p1 = 3/3, p2 = 1/2, p3 = 0/1 and p4 = 0/1 smoothed to 0.1; brevity penalty exp(1 - 7/3)
    b = bleu("Dress neatly.", "Dress neatly and appropriately for court.")
    bp = math.exp(1 - 7 / 3)
    assert b.score == pytest.approx(bp * (1 * 0.5 * 0.1 * 0.1) ** 0.25)
    d = b.details
    assert (d["max_n"], d["reference_length"], d["candidate_length"]) == (4, 7, 3)
    assert (d["bleu_1"], d["bleu_2"], d["bleu_3"], d["bleu_4"]) == pytest.approx((bp, bp * 0.5, bp * 0.1, bp * 0.1))


def test_bleu_identical_short_and_disjoint() -> None:
    assert bleu("The cat sat on the mat.", "the cat sat on the mat.").score == pytest.approx(1.0)  # lowercased
    # two identical tokens: no 3- or 4-grams, each smoothed to 0.1, so sqrt(0.1)
    b = bleu("EUR 1,450", "EUR 1,450")
    assert b.score == pytest.approx(math.sqrt(0.1))
    assert [b.details[f"bleu_{n}"] for n in (1, 2, 3, 4)] == pytest.approx([1.0, 1.0, 0.1, 0.1])
    for answer in ("x", ""):
        none = bleu(answer, "y")
        assert none.score == 0.0 and none.error is None
        assert all(none.details[f"bleu_{n}"] == 0.0 for n in (1, 2, 3, 4))


# -- BLEU's tokens ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("dr. smith went home. he was tired.", ["dr.", "smith", "went", "home", ".", "he", "was", "tired", "."]),
        ("he left. she came.", ["he", "left", ".", "she", "came", "."]),
        (
            "see the u.s. report from jan. 5.",
            ["see", "the", "u.s.", "report", "from", "jan.", "5", "."],
        ),
        ("eur 1,450 (about $1,600)", ["eur", "1,450", "(", "about", "$", "1,600", ")"]),
        ("", []),
    ],
)
def test_word_tokenize_uses_the_english_model(text: str, tokens: list[str]) -> None:
    """Abbreviations the English model knows (dr., jan.) keep their period: an untrained splitter ends a
    sentence there and gives "dr", "." instead."""
    assert word_tokenize(text) == tokens


def _write_punkt_tab(root: Path) -> None:
    """The pinned model as NLTK's own ``punkt_tab/english`` files (NLTK's tab format)."""
    params = punkt_english_parameters()
    folder = root / "tokenizers" / "punkt_tab" / "english"
    folder.mkdir(parents=True)
    (folder / "abbrev_types.txt").write_text("\n".join(sorted(params.abbrev_types)), encoding="utf-8")
    (folder / "sent_starters.txt").write_text("\n".join(sorted(params.sent_starters)), encoding="utf-8")
    (folder / "collocations.tab").write_text(
        "\n".join("\t".join(pair) for pair in sorted(params.collocations)), encoding="utf-8"
    )
    (folder / "ortho_context.tab").write_text(
        "\n".join(f"{word}\t{flags}" for word, flags in sorted(params.ortho_context.items())), encoding="utf-8"
    )


def test_word_tokenize_equals_nltk_given_the_same_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nltk

    params = punkt_english_parameters()
    assert (len(params.abbrev_types), len(params.collocations), len(params.sent_starters)) == (156, 37, 39)
    # NLTK's tokenizer reads this defaultdict with [], adding zero entries as it goes: count the flagged ones
    assert sum(1 for flags in params.ortho_context.values() if flags) == 20366
    _write_punkt_tab(tmp_path)
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    texts = [
        "Dr. Smith went home. He was tired.",
        "The U.S. economy grew 3.5% in Q1, i.e. fast. Mr. Jones said so (see p. 4.) on Jan. 5.",
        "Dress neatly and appropriately for court.",
        'Washington D.C. is "the capital"; it isn\'t large... Is it? Yes!',
        "EUR 1,450 — paid on 12 March 2024.",
    ]
    for text in texts:
        for variant in (text, text.lower()):
            assert word_tokenize(variant) == nltk.word_tokenize(variant), variant


def test_rouge_and_bleu_touch_neither_nltk_data_nor_the_network(tmp_path: Path) -> None:
    """In a fresh interpreter whose NLTK data path is empty and whose NLTK lookups, downloads and
    sockets all raise, ROUGE and BLEU still score."""
    empty = tmp_path / "nltk_data"
    empty.mkdir()
    script = textwrap.dedent(
        """
        import socket
        import nltk, nltk.data, nltk.downloader

        def refuse(*args, **kwargs):
            raise AssertionError("touched: " + repr(args)[:200])

        socket.socket.connect = refuse
        socket.create_connection = refuse
        nltk.data.find = refuse
        nltk.data.load = refuse
        nltk.download = refuse
        nltk.downloader.download = refuse
        nltk.data.path[:] = []
        from hippocamp.scoring.lexical import bleu, rouge, word_tokenize

        print(rouge("Dress neatly.", "Dress neatly and appropriately for court.").score)
        print(bleu("Dress neatly.", "Dress neatly and appropriately for court.").score)
        print(word_tokenize("dr. smith went home. he was tired."))
        """
    )
    env = {**os.environ, "NLTK_DATA": str(empty), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    rouge_line, bleu_line, tokens = done.stdout.strip().splitlines()
    assert float(rouge_line) == pytest.approx(4 / 9)
    assert float(bleu_line) == pytest.approx(math.exp(1 - 7 / 3) * 0.005**0.25)
    assert tokens.startswith("['dr.', 'smith'")
    assert list(empty.iterdir()) == []


@pytest.fixture
def fresh_punkt() -> Iterator[None]:
    """Forget the loaded model before and after a test that changes its pin."""
    lexical.punkt_english_parameters.cache_clear()
    lexical._punkt_english.cache_clear()
    yield
    lexical.punkt_english_parameters.cache_clear()
    lexical._punkt_english.cache_clear()


def test_a_model_file_off_its_pin_leaves_bleu_unscored(monkeypatch: pytest.MonkeyPatch, fresh_punkt: None) -> None:
    monkeypatch.setattr(lexical, "PUNKT_ENGLISH_SHA256", "0" * 64)
    with pytest.raises(ModelNotAvailableError, match=r"english\.py has size 300327 and sha256 [0-9a-f]{64}"):
        word_tokenize("x")
    b = bleu("Dress neatly.", "Dress neatly.")
    assert b.score is None and "refusing to use it" in (b.error or "")
    assert bleu("x", None).score is None  # unscored on a row without a ground truth too
    assert summarize([answer_metrics("a", "a", semantic=False)]).metrics["bleu"].unscored == 1


def test_a_missing_model_package_names_the_requirement(monkeypatch: pytest.MonkeyPatch, fresh_punkt: None) -> None:
    monkeypatch.setattr(lexical, "PUNKT_ENGLISH", Member("hippocamp-no-such-punkt", "9.9", "punkt/data/english.py"))
    b = bleu("x", "y")
    assert b.score is None
    assert "package hippocamp-no-such-punkt is not installed" in (b.error or "")
    assert "pip install 'hippocamp-no-such-punkt==9.9'" in (b.error or "")


def test_the_model_file_is_read_as_literals_only() -> None:
    good = "ABBREV_TYPES = frozenset(('dr',))\nCOLLOCATIONS = frozenset()\nSENT_STARTERS = frozenset(('he',))\n"
    tables = lexical._literal_tables(good + "ORTHO_CONTEXT = {'he': 32}\n")
    assert tables["ABBREV_TYPES"] == {"dr"} and tables["ORTHO_CONTEXT"] == {"he": 32}
    with pytest.raises(ValueError):
        lexical._literal_tables(good + "ORTHO_CONTEXT = __import__('os').environ\n")
    with pytest.raises(ValueError, match="no ORTHO_CONTEXT"):
        lexical._literal_tables(good)


# -- semantic similarity ---------------------------------------------------------------------------------
class BagOfLetters:
    """A tiny deterministic embedder: letter counts, L2-normalised."""

    id = "bag-of-letters"
    dim = 26

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str], side: str = "passage", batch_size: int = 64) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for ch in text.lower():
                if "a" <= ch <= "z":
                    out[i, ord(ch) - ord("a")] += 1
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1
        return out / norms


def test_semantic_similarity_is_the_cosine_of_the_embeddings() -> None:
    emb = BagOfLetters()
    same = semantic_similarity("abc", "cab", embedder=emb)
    assert same.score == pytest.approx(1.0)
    assert same.details == {"model_used": "bag-of-letters", "generated_length": 3, "ground_truth_length": 3}
    assert semantic_similarity("aab", "abb", embedder=emb).score == pytest.approx(4 / 5)  # (2,1)·(1,2) / 5
    assert semantic_similarity("aa", "bb", embedder=emb).score == 0.0
    assert semantic_similarity("", "bb", embedder=emb).score == 0.0  # a zero vector, as scikit-learn's cosine


def test_score_answers_embeds_once_and_keeps_order() -> None:
    emb = BagOfLetters()
    rows = score_answers([("abc", "cab"), ("aa", "bb"), ("x", None), (None, "ab")], embedder=emb)
    assert emb.calls == 1
    assert [r.semantic_similarity.score for r in rows] == pytest.approx([1.0, 0.0, 0.0, 0.0])
    assert rows[2].semantic_similarity.error == NO_GROUND_TRUTH
    assert all(isinstance(r, AnswerMetrics) for r in rows)
    assert list(rows[0].scores()) == list(METRIC_NAMES)


def test_without_the_embedder_semantic_similarity_is_unscored(monkeypatch: pytest.MonkeyPatch) -> None:
    from hippocamp.models import embedding

    def missing(name: str | None = None, **options: object) -> object:
        raise ModelNotAvailableError("onnxruntime is not installed: pip install 'hippocamp[embed]'", name)

    monkeypatch.setattr(embedding, "get_embedder", missing)
    result = semantic_similarity("EUR 1,450", "EUR 1,450")
    assert result.score is None and not result.scored
    assert "minilm-l6-int8" in (result.error or "") and "onnxruntime is not installed" in (result.error or "")
    summary = summarize(score_answers([("a", "a"), ("b", "c"), ("d", None)]))
    sim = summary.metrics["semantic_similarity"]
    assert (sim.mean, sim.count, sim.unscored, len(sim.reasons)) == (None, 0, 3, 1)
    assert summary.metrics["exact_match"].mean == pytest.approx(1 / 3)  # the other metrics are unaffected


def test_an_embedder_that_fails_leaves_the_metric_unscored() -> None:
    class Broken(BagOfLetters):
        def embed(self, texts: Sequence[str], side: str = "passage", batch_size: int = 64) -> np.ndarray:
            raise RuntimeError("session crashed")

    result = semantic_similarity("a", "b", embedder=Broken())
    assert result.score is None and "RuntimeError: session crashed" in (result.error or "")


def test_result_to_dict_has_the_release_shape() -> None:
    r = MetricResult("exact_match", 1.0, {"is_exact_match": True})
    assert r.to_dict() == {"score": 1.0, "details": {"is_exact_match": True}}
    assert MetricResult("bleu", None, {}, "why").to_dict() == {"score": None, "details": {"error": "why"}}


def _minilm() -> object:
    from hippocamp.models.embedding import get_embedder

    try:
        return get_embedder(lexical.SIMILARITY_EMBEDDER)
    except ModelNotAvailableError as exc:
        require(f"needs the embed extra (all-MiniLM-L6-v2 int8): {exc}")
        raise


@pytest.mark.slow
def test_semantic_similarity_with_all_minilm_l6_v2() -> None:
    emb = _minilm()
    same = semantic_similarity("Dress neatly and appropriately for court.", "Dress neatly and appropriately for court.")
    assert same.score == pytest.approx(1.0, abs=1e-5)
    assert same.details["model_used"] == getattr(emb, "id", None)
    anchor = "A man is playing a guitar on the stage."
    related = semantic_similarity("Someone is strumming a guitar in front of an audience.", anchor).score
    unrelated = semantic_similarity("The central bank raised interest rates by half a point.", anchor).score
    assert related is not None and unrelated is not None
    assert -1.0 <= unrelated < related <= 1.0
    rows = score_answers(CONFORMANCE_ROWS[:4])
    singles = [semantic_similarity(a, g).score for a, g in CONFORMANCE_ROWS[:4]]
    assert [r.semantic_similarity.score for r in rows] == pytest.approx(singles, abs=1e-6)
    assert rows[1].semantic_similarity.score == pytest.approx(1.0, abs=1e-5)


def test_without_rouge_score_rouge_is_unscored(monkeypatch: pytest.MonkeyPatch) -> None:
    lexical._rouge_scorer.cache_clear()
    monkeypatch.setitem(sys.modules, "rouge_score", None)  # import rouge_score now raises ImportError
    try:
        for truth in ("a", None):
            r = rouge("a", truth)
            assert r.score is None and "pip install 'rouge-score>=0.1.2'" in (r.error or "")
    finally:
        lexical._rouge_scorer.cache_clear()
