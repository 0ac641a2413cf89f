"""The eleven retrieval pipelines of the HippoCamp release (``benchmark/src/providers/retrieval/`` at
commit e7eda45) as hippocamp agents over a profile's store, registered under kind ``agent``:
``rag-standard``, ``rag-vector``, ``rag-hybrid``, ``rag-hyde``, ``rag-parent-child`` (`single`),
``rag-self``, ``rag-graded``, ``rag-corrective`` (`graded`), ``rag-adaptive``, ``rag-ircot``,
``rag-decomposition`` (`multistep`). hippocamp's own ``rag``, ``self-rag``, ``react`` and ``search-r1``
are other agents and unchanged.

In the release a pipeline is a ``RetrievalProvider``: it returns chunks, and ``scripts/run_query.py``
hands the ones not graded irrelevant (``relevant_chunks``, l.297) to the Gemini generator, which formats
at most ten (``generator/gemini.py`` l.141/154); with no chunk left it answers a fixed "couldn't find"
sentence without calling the model (l.330-333). Here each pipeline is one agent doing both: every model
call goes through the episode's `Meter` (budget and trace), every search through the environment's
``search`` tool (its hit files are ``Answer.retrieved``, the list the paper scores retrieval baselines
by), and the answer cites the passages it rests on (``Answer.evidence``).

Parameters are the release's code defaults (each provider's ``params.get(name, default)``) unless a
config file it ships sets them; every one is a constructor argument, and the first, the search depth,
can be given as ``NAME:ARG`` (``rag-vector:30``: top_k; for rag-standard and rag-parent-child it is
rerank_top_k, for rag-ircot top_k_per_step, for rag-decomposition top_k_per_sub). ``Budget.k`` is not
used: these pipelines search with the release's depths.

What every pipeline does differently from the release, and why
---------------------------------------------------------------

- **Search.** The release embeds the question (Qwen3-Embedding-0.6B with an instruction prefix,
  ``providers/utils.py``) and queries Qdrant dense-only (``rag/vector_store/qdrant.py`` l.600-675: the
  providers never ask for its sparse leg); only hybrid_rag adds BM25 (SQLite FTS5). Ours ask the
  environment's search for mode ``vector`` (``fts`` for hybrid's BM25 leg) with hippocamp's embedder,
  when the environment's search takes a ``mode`` (its tool schema or its ``search`` signature says so).
  A store without vectors answers a vector search with an error: the pipeline searches ``fts`` instead
  for the rest of the episode and a note says so. An environment whose search has no modes (today's
  ``FilesEnv``: one ranking, hippocamp's hybrid, BM25 alone without vectors) ranks every search its own
  way; a note names the mode asked for. ``FilesEnv`` returns at most 30 passages per search, so the
  release's 100-deep lists (hybrid) are 30 deep here.
- **Reranker.** The release's code enables a reranker by default (``use_reranker`` True; the factory
  builds one only then, ``providers/factory.py`` l.338-446), served per ``services.yaml.example`` by
  Qwen3-Reranker-0.6B on llama.cpp (profiles local and deepinfra) or Cohere rerank-v3.5 (cloud): a
  model reordering the top_k candidates to ``rerank_top_k`` 5. We have none offline; the stand-in
  (`rerank`) is one call of the episode's model scoring every candidate's relevance 0-1
  (Qwen3-Reranker is itself a model judging each query-passage pair), keeping the best five.
  ``rerank=False`` runs each pipeline's own no-reranker branch instead, as the release does without a
  reranker. The exception is ``rag-standard``: the config the release ships for it
  (``configs/providers.yaml`` l.50-55: top_k 100, ``use_reranker: false``) turns the reranker off.
- **Ranking across searches.** Where the release merges several searches and sorts them by vector score
  before reranking (IRCoT, decomposition, adaptive C), ours keep the order of first retrieval: the
  environment's hits carry ranks, not scores.
- **The answer** is written by the episode's model (temperature 0, 512 tokens) from our prompt
  (``prompts/pipeline_answer.md``), citing passages as ``[n]``; the release's Gemini generator
  (temperature 0.7, 8,192 tokens) cites nothing. Both read at most ten passages; ours clip each to
  1,200 characters (the release's chunks are at most 1,000, ``configs/pipelines/indexing.yaml``).
- **Decisions the release parses from free text** (grades "Document i: score=x", routes "DIRECT",
  letters A/B/C, numbered sub-questions, JSON keywords) are structured output here (a pydantic model,
  validated, one repair retry by the client). A reply that still does not parse takes the release's
  fallback for that decision, noted in the trace; a model call that fails (server gone) ends the
  episode with ``stop="error"`` (the release's retrieval steps log it and go on with that fallback).
  An item a reply leaves out gets the release's score for a grade it cannot parse (0.5 in self_rag
  and graded_rag, 0.0 in CRAG; 0.0 for the reranker stand-in).
- **Temperatures.** Grading, routing, rewriting and reasoning run at temperature 0 (the release: 0.1 to
  0.3), so runs repeat and are cached; HyDE keeps 0.7, since its four passages must differ.
- **Retrieved files.** ``Answer.retrieved`` holds every hit of every search (hippocamp's rule); the
  release's ``retrieved_file_list`` (run_query.py l.498-551) holds the files of the chunks it generated
  from. Where the release keeps the first five of one search without reranking, ours ask for five, so
  the two lists agree; where it reranks or merges, ours also hold the candidates.

The pipelines
-------------

``rag-standard`` (standard_rag.py). Release: embed, dense top_k (code 20, l.95; providers.yaml 100),
rerank to ``rerank_top_k`` 5 (l.97) when a reranker is on (code default, l.96), else keep the first
five (l.320-322); providers.yaml turns it off. Ours: one search for the question, mode ``vector``, k 5
(the first five of any deeper list), one answer. ``rerank=True`` searches top_k 20 and reranks.

``rag-vector`` (vector_search.py). Release: the same steps as standard_rag (top_k 20, reranker on,
rerank_top_k 5, l.89-91), except that without a reranker it returns all top_k chunks (l.174-205).
Ours: one ``vector`` search, k 20, reranked to five by the stand-in; ``rerank=False`` answers from the
first ten of the twenty (the generator's limit).

``rag-hybrid`` (hybrid_rag.py). Release: a Gemini call extracts 3-8 keywords as a JSON array for BM25
(l.48-55, 190-243; without a Gemini key, or on a bad reply, the raw question), dense top_k_dense 100
and BM25 top_k_bm25 100 at once (l.86-87, 378-392), reciprocal-rank fusion with k 60 (l.88;
``rag/fusion.py``: score = sum of 1/(k + rank)) to top_k 20, rerank to 5, or the first 5 (l.468-497);
metadata file filters off by default (l.96). Ours: the episode's model gives the keywords (structured;
none or a bad reply: the question), a ``vector`` search for the question and an ``fts`` search for the
keywords (each 100 asked, 30 returned by ``FilesEnv``), the release's RRF (k 60, ties in order of first
appearance) to 20, the reranker stand-in to 5.

``rag-hyde`` (hyde_rag.py). Release: 4 hypothetical passages (l.85; the paper's 8), each one call at
temperature 0.7 and 512 tokens (l.88, 137); the embeddings of the question and of every passage are
averaged into one vector (l.158-211) and searched, top_k 20; rerank against the question to 5, or the
first 5 (l.348-367); no passage written: the question alone. Ours: the same four calls; the environment
cannot search with an averaged vector, so one ``vector`` search ranks the question together with the
passages (``also``: the store's other-queries ranking, each passage a query, their best share added to
the question's score at 0.3); this weights the question more than HyDE's mean, where it is one of five.
Reranked to five by the stand-in.

``rag-parent-child`` (parent_child.py, run_query.py l.336-352). Release: a post-processor after the
configured pipeline (providers.yaml: standard_rag, ``parent_child.enabled: false``, ``max_pages`` 10,
l.64-66): chunks grouped by (file, first page), pages ranked by their best chunk, the best 10 fetched
whole (every chunk of the page in order, joined by newlines); chunks on no page are dropped when any is
on a page, and when none is the chunks stand (l.185-187). Ours: rag-standard's five passages; for each
page (a PDF page, also inside a mail attachment) a ``read`` of that page (recorded as a tool step, its
file touched); the page's text replaces the passage. A hippocamp PDF segment is already one page, so
the expansion changes little here; passages of other units (lines, cells, slides, times) are left out
as the release leaves out chunks without a page.

``rag-self`` (self_rag.py). Release: top_k 20, ``relevance_threshold`` 0.5, ``max_iterations`` 2
(l.97-99); each round searches the current query, grades all chunks in one call (each clipped to 500
characters, l.155; scores 0-1, 0.5 when a grade does not parse, l.183; relevant at >= 0.5, sorted by
score), and when nothing was found or nothing is relevant rewrites the *original* question (l.413, 485)
and goes again; grading that fails counts every chunk relevant (l.222-235); after the last round only
relevant chunks reach the generator (run_query.py l.297). Ours: the same loop, grades as structured
scores, rewrite with our prompt (the reply's first line, a label taken off).

``rag-graded`` (graded_rag.py). Release: routing (l.127-184): a greeting word ("hello", "hi", "hey",
"greetings") in a question of at most 3 words, or "thank(s)" in one of at most 5, skips retrieval
without a model call (substring match: "Which bill?" holds "hi"), else the model answers DIRECT or
RETRIEVE (RETRIEVE when it fails); then up to 1 + ``max_rewrite_attempts`` 2 searches of top_k 20,
graded in one call (chunks clipped to 400 characters, l.214; 0.5 default; relevant at >= 0.5), the
original question rewritten when nothing was found or nothing is relevant. The code defaults grading
off (l.104); ``configs/retriever_server.yaml`` (l.25-35), the only config that sets it, turns routing
and grading on with threshold 0.5 and 2 rewrites: ours follow it (``enable_grading=False`` returns the
first search's passages). A DIRECT route reaches the runner with no chunk, so the release answers its
fixed sentence: so do we (``not_found``, no model call).

``rag-corrective`` (corrective_rag.py, CRAG). Release: top_k 20, reranked to ``rerank_top_k`` 5
(l.444-446; without a reranker all 20 go on); one call scores each document -1 to 1 (clipped to 500
characters, 0.0 when unparsed or on failure, l.172-215); verdict CORRECT if any score >= 0.5,
INCORRECT if all < -0.5, else AMBIGUOUS (l.82-83, 222-229); CORRECT refines the documents
(decompose-then-recompose: sentences of 5+ words, two per strip, one call per document scoring its
strips -1 to 1, strips at >= -0.5 kept, at most 5 joined, a document with none dropped, a failed call
keeps it whole; l.237-353); INCORRECT rewrites the question to at most five keywords (l.359-377) and
searches again (top_k 20, reranked to 5 against the rewrite); AMBIGUOUS does both, the new chunks after
the refined ones, each place once. Ours: the same, with the reranker stand-in.

``rag-adaptive`` (adaptive_rag.py). Release: one call classifies the question A, B or C (l.167-201; B
when no letter or on failure); A: the first ``rerank_top_k`` 5 of top_k 20, no reranking (l.208-229);
B: top_k 20 reranked to 5 (l.236-270; all 20 without a reranker); C: up to
``max_iterations_complex`` 3 rounds (l.83) of a search of min(6, top_k) (l.306), accumulating chunks
until ``max_paragraphs_complex`` 15 (l.84), and one reasoning sentence from the last six chunks (300
characters each, l.339-340) and the sentences so far; a sentence saying "the answer is" stops; one that
is not reasoning (not opening with thus, so, therefore, ..., no arithmetic) is the next query; then
rerank to 5, or the first 5 (l.395-401). The release never skips retrieval: its strategy A is the
minimal search, not the paper's no-retrieval answer (l.20, 204-206); ours do the same. An empty
sentence keeps the current query (the release would search the empty string).

``rag-ircot`` (ircot_rag.py). Release: ``top_k_per_step`` 6, ``max_sentences`` 10, ``max_paragraphs``
15, ``rerank_top_k`` 5, ``max_para_num_words`` 350, answer regex ``.*answer is:?\\s*(.*?)\\.``
(l.88-100): search the question, then loop: accumulate chunks (stop at 15), one call (100 tokens)
continues "Q: question / A: sentences so far" after every accumulated chunk (clipped to 350 words),
its first sentence is kept (stop when empty, l.393), the answer regex stops it (l.400), and the next
search is that sentence, or the question when it is a reasoning sentence (l.407-415); ten sentences
end the loop; the chunks reranked against the question to 5 (l.417-441). The CoT's answer is not the
final answer: the generator answers from the chunks. Ours: the same; our prompt asks for the "So the
answer is: ..." sentence the paper's demonstrations teach, since there are no demonstrations.

``rag-decomposition`` (decomposition_rag.py, Least-to-Most). Release: ``top_k_per_sub`` 10,
``max_sub_queries`` 4, ``rerank_top_k`` 5 (l.84-87); one call lists sub-questions simplest first (l.169-202;
the question itself when none parse or on failure); in order, each is searched (after the first, with
the previous answer's first 80 characters appended, l.314-319), and every sub-question but the last is
answered (150 tokens) from its own first 5 chunks (300 characters each) and the earlier answers
(l.209-249, 356-358); all chunks merged, reranked against the question to 5 (l.381-403). The
intermediate answers only steer retrieval. Ours: the same, the sub-questions as structured output.

Registering: `hippocamp.agents` imports this package, whose modules register their classes.
"""

from __future__ import annotations

from hippocamp.agents.pipelines._base import Episode, Pipeline
from hippocamp.agents.pipelines.graded import CorrectivePipeline, GradedPipeline, SelfRAGPipeline
from hippocamp.agents.pipelines.multistep import AdaptivePipeline, DecompositionPipeline, IRCoTPipeline
from hippocamp.agents.pipelines.single import (
    HybridPipeline,
    HyDEPipeline,
    ParentChildPipeline,
    StandardPipeline,
    VectorPipeline,
)

__all__ = [
    "PIPELINES",
    "AdaptivePipeline",
    "CorrectivePipeline",
    "DecompositionPipeline",
    "Episode",
    "GradedPipeline",
    "HyDEPipeline",
    "HybridPipeline",
    "IRCoTPipeline",
    "ParentChildPipeline",
    "Pipeline",
    "SelfRAGPipeline",
    "StandardPipeline",
    "VectorPipeline",
]

#: the registered names, in the release's order of ``RetrievalProviderType`` (providers/base.py) and
#: parent-child last
PIPELINES: tuple[str, ...] = (
    "rag-vector",
    "rag-standard",
    "rag-self",
    "rag-graded",
    "rag-hybrid",
    "rag-corrective",
    "rag-adaptive",
    "rag-hyde",
    "rag-ircot",
    "rag-decomposition",
    "rag-parent-child",
)
