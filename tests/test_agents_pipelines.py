"""The release's eleven retrieval pipelines (`hippocamp.agents.pipelines`) over the indexed synthetic
profile: one whole trajectory per pipeline scripted through the mock model (searches with their query,
k and mode; the model calls; the answer, its evidence and retrieved files), one test per retry or
grading rule, the fallbacks (no vectors, no search modes, unreadable replies), and, against a real
OpenAI-compatible server (``-m slow``), one episode per pipeline."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hippocamp import registry
from hippocamp.agents import Answer, Budget, Task, make_agent
from hippocamp.agents.pipelines import PIPELINES
from hippocamp.agents.pipelines.graded import crag_verdict, knowledge_strips, routes_direct
from hippocamp.envs.files import FilesEnv
from hippocamp.models import embedding, get_model
from hippocamp.models.errors import ModelError
from hippocamp.store.db import Store
from hippocamp.store.search import Searcher

LEASE = "Documents/Housing/Lease Agreement 2024.pdf"
QUESTION = "How much is my monthly rent?"
NOT_FOUND = "No passage found in the person's files answers this question."


# -- environments ----------------------------------------------------------------------------------
class HashEmbedder:
    """Deterministic bag-of-words vectors: shared words make vectors close."""

    id = "test-hash@1"
    dim = 256

    def embed(self, texts: list[str], side: str = "passage", batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        return embedding.normalize_rows(out)


#: FilesEnv's search takes the ranking mode (``mode``), as the pipelines ask for it
ModalEnv = FilesEnv


@pytest.fixture(scope="module")
def vector_store(synth_indexed: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(root, store) of the synthetic profile with hash vectors for every segment."""
    root, path = synth_indexed
    copy_path = tmp_path_factory.mktemp("pipelines") / "vectors.sqlite"
    source, target = sqlite3.connect(path), sqlite3.connect(copy_path)
    source.backup(target)
    source.close()
    target.close()
    store = Store(copy_path)
    rows = store.segments_without_vectors(100_000)
    vectors = HashEmbedder().embed([text for _, text in rows])
    store.put_vectors((sid, vec.tobytes()) for (sid, _), vec in zip(rows, vectors, strict=True))
    store.close()
    return root, copy_path


@pytest.fixture
def modal(vector_store: tuple[Path, Path]) -> ModalEnv:
    root, path = vector_store
    store = Store(path)
    return ModalEnv(root, store, searcher=Searcher(store, embedder=HashEmbedder()))


# -- helpers ---------------------------------------------------------------------------------------
def solve(name: str, env: Any, outputs: Any = None, budget: Budget | None = None, question: str = QUESTION,
          **options: Any) -> tuple[Answer, Any]:  # fmt: skip
    model = get_model("mock", outputs=outputs)
    agent = registry.get("agent", name)(**options)
    answer = asyncio.run(agent.solve(Task(id="t1", question=question), env, model, budget or Budget()))
    Answer.model_validate_json(answer.model_dump_json())  # every episode is a valid record
    return answer, model


def hits(env: Any, **args: Any) -> list[dict[str, Any]]:
    obs = env.call("search", args)
    assert obs.ok, obs.text
    return obs.data


def tool_steps(answer: Answer) -> list[tuple[str | None, dict[str, Any] | None]]:
    return [(s.tool, s.arguments) for s in answer.trace if s.kind == "tool"]


def notes(answer: Answer) -> str:
    return "\n".join(s.thought or "" for s in answer.trace if s.kind == "note")


def calls(model: Any) -> list[str]:
    """Each model request as the schema it asked for ("Scores", "Route", ...) or "text"."""
    return [(r.json_schema or {}).get("title", "text") for r in model.backend.requests]


def prompt(model: Any, i: int) -> str:
    return model.backend.requests[i].messages[-1]["content"]


def header(d: dict[str, Any]) -> str:
    return d["where"] + (f" ({d['time']})" if d.get("time") else "")


def shown(text: str) -> list[str]:
    """The passages a prompt shows, as their header lines without the number, in order."""
    return re.findall(r"^\[\d+\] (.+)$", text, re.M)


def same(d: dict[str, Any], item: Any) -> bool:
    return (item.file_path, item.locator) == (d["path"], d["locator"])


def files(*lists: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(d["path"] for data in lists for d in data))


def scores(*pairs: tuple[int, float]) -> str:
    return json.dumps({"scores": [{"item": i, "score": s} for i, s in pairs]})


def position(data: list[dict[str, Any]], path: str = LEASE, page: int = 2) -> int:
    """1-based position of a page of a file among search hits."""
    for i, d in enumerate(data, 1):
        where = (d["locator"] or {}).get("position")
        if d["path"] == path and isinstance(where, dict) and where.get("system_page") == page:
            return i
    raise AssertionError(f"page {page} of {path} is not among the hits")


def ranked(count: int, given: list[tuple[int, float]], default: float) -> list[int]:
    """Positions 1..count by the scores given (the first for an item counts; the rest ``default``), best
    first, ties in search order: the order the pipelines keep."""
    got: dict[int, float] = {}
    for i, score in given:
        got.setdefault(i, score)
    return sorted(range(1, count + 1), key=lambda i: -got.get(i, default))


def test_all_eleven_are_registered_with_a_description() -> None:
    names = registry.names("agent")
    assert len(PIPELINES) == 11
    for name in PIPELINES:
        cls = registry.get("agent", name)
        assert name in names and cls.name == name and cls.file_list == "retrieved"
        assert (cls.__doc__ or "").strip().splitlines()[0].startswith("The release's")
    assert make_agent("rag-vector:30").top_k == 30 and make_agent("rag-ircot:4").top_k_per_step == 4
    for name in ("rag", "self-rag", "react", "search-r1"):  # hippocamp's own, untouched
        assert not registry.get("agent", name).__module__.startswith("hippocamp.agents.pipelines")


# -- rag-standard ----------------------------------------------------------------------------------
def test_standard_one_vector_search_of_five_then_one_answer(modal: ModalEnv) -> None:
    data = hits(modal, query=QUESTION, k=5, mode="vector")
    assert data != hits(modal, query=QUESTION, k=5, mode="fts")  # the mode is what ranks
    n = position(data)
    reply = f"The monthly rent is EUR 1,800.00 [{n}]."
    answer, model = solve("rag-standard", modal, [reply])
    assert tool_steps(answer) == [("search", {"query": QUESTION, "k": 5, "mode": "vector"})]
    assert calls(model) == ["text"] and model.backend.requests[0].messages[0]["role"] == "system"
    assert shown(prompt(model, 0)) == [header(d) for d in data] and QUESTION in prompt(model, 0)
    assert answer.stop == "answered" and answer.text == reply
    assert len(answer.evidence) == 1 and same(data[n - 1], answer.evidence[0]) and answer.files == [LEASE]
    assert answer.retrieved == files(data)


# -- rag-vector ------------------------------------------------------------------------------------
def test_vector_reranks_twenty_to_five(modal: ModalEnv) -> None:
    data = hits(modal, query=QUESTION, k=20, mode="vector")
    n = position(data)
    given = [(n, 0.95), (1, 0.4), (2, 0.3)]
    answer, model = solve("rag-vector", modal, [scores(*given), "EUR 1,800.00 a month [1]."])
    assert tool_steps(answer) == [("search", {"query": QUESTION, "k": 20, "mode": "vector"})]
    assert calls(model) == ["Scores", "text"]
    assert shown(prompt(model, 0)) == [header(d) for d in data] and QUESTION in prompt(model, 0)
    kept = [data[i - 1] for i in ranked(len(data), given, 0.0)[:5]]
    assert shown(prompt(model, 1)) == [header(d) for d in kept]  # best scores first, the rest in search order
    assert same(data[n - 1], answer.evidence[0]) and len(answer.evidence) == 1
    assert answer.retrieved == files(data)  # every candidate was retrieved


def test_vector_without_reranker_answers_from_the_first_ten(modal: ModalEnv) -> None:
    data = hits(modal, query=QUESTION, k=20, mode="vector")
    answer, model = solve("rag-vector", modal, ["EUR 1,800.00."], rerank=False)
    assert calls(model) == ["text"] and shown(prompt(model, 0)) == [header(d) for d in data[:10]]
    assert len(answer.evidence) == 10  # no citation: every passage shown


# -- rag-hybrid ------------------------------------------------------------------------------------
def test_hybrid_fuses_dense_and_keyword_bm25_by_reciprocal_rank(modal: ModalEnv) -> None:
    keywords = ["lease", "monthly rent", "EUR"]
    dense = hits(modal, query=QUESTION, k=100, mode="vector")
    lexical = hits(modal, query="lease monthly rent EUR", k=100, mode="fts")
    # the reference: 1 / (60 + rank) summed over both lists, ties in order of first appearance
    fused: dict[str, float] = {}
    first: dict[str, dict[str, Any]] = {}
    for ranked in (dense, lexical):
        for rank, d in enumerate(ranked, 1):
            key = json.dumps([d["path"], d["locator"], d["text"]])
            fused[key] = fused.get(key, 0.0) + 1 / (60 + rank)
            first.setdefault(key, d)
    expected = [first[k] for k in sorted(fused, key=lambda k: -fused[k])][:20]
    lease = next(i for i, d in enumerate(expected, 1) if d["path"] == LEASE and "Monthly rent" in d["text"])
    outputs = [json.dumps({"keywords": keywords}), scores((lease, 1.0)), "EUR 1,800.00 [1]"]
    answer, model = solve("rag-hybrid", modal, outputs)
    assert tool_steps(answer) == [("search", {"query": QUESTION, "k": 100, "mode": "vector"}),
                                  ("search", {"query": "lease monthly rent EUR", "k": 100, "mode": "fts"})]  # fmt: skip
    assert calls(model) == ["Keywords", "Scores", "text"]
    assert shown(prompt(model, 1)) == [header(d) for d in expected]  # the reranker sees the fused top 20
    assert len(shown(prompt(model, 2))) == 5 and shown(prompt(model, 2))[0] == header(expected[lease - 1])
    assert answer.files == [LEASE] and answer.retrieved == files(dense, lexical)


def test_hybrid_searches_the_question_when_the_keywords_are_unreadable(modal: ModalEnv) -> None:
    answer, _ = solve("rag-hybrid", modal, ["no json", "still none", scores(), "EUR 1,800.00"])
    assert [a["query"] for _, a in tool_steps(answer)] == [QUESTION, QUESTION]
    assert "keywords: the reply was not the JSON asked for" in notes(answer) and answer.stop == "answered"


# -- rag-hyde --------------------------------------------------------------------------------------
def test_hyde_writes_four_passages_and_searches_them_with_the_question(modal: ModalEnv) -> None:
    passages = [f"Lease note {i}: the monthly rent is EUR 1,800, paid on the first." for i in range(4)]
    data = hits(modal, query=QUESTION, k=20, mode="vector", also=passages)
    answer, model = solve("rag-hyde", modal, [*passages, scores((position(data), 0.9)), "EUR 1,800.00 [1]"])
    assert tool_steps(answer) == [("search", {"query": QUESTION, "k": 20, "mode": "vector", "also": passages})]
    assert calls(model) == ["text"] * 4 + ["Scores", "text"]
    assert [r.temperature for r in model.backend.requests] == [0.7] * 4 + [0.0, 0.0]
    assert [r.max_tokens for r in model.backend.requests[:4]] == [512] * 4
    assert answer.files == [LEASE] and answer.retrieved == files(data)


# -- rag-parent-child ------------------------------------------------------------------------------
def test_parent_child_reads_the_whole_page_of_each_page_passage(modal: ModalEnv) -> None:
    data = hits(modal, query=QUESTION, k=5, mode="vector")
    paged = [d for d in data if d["locator"] and d["locator"]["unit"] == "page"]
    assert paged and len(paged) < len(data)  # some passages are on no page
    answer, model = solve("rag-parent-child", modal, ["EUR 1,800.00 [1]"])
    reads = [("read", {"path": d["path"], "locator": f"page {d['locator']['position']['system_page']}"}) for d in paged]
    assert tool_steps(answer) == [("search", {"query": QUESTION, "k": 5, "mode": "vector"}), *reads]
    pages = [modal.call("read", args) for _, args in reads]
    assert shown(prompt(model, 0)) == [header(d) for d in paged]  # the passages on no page are left out
    assert "\n".join(x["text"] for x in pages[0].data) in prompt(model, 0)
    assert "left out" in notes(answer)
    assert answer.evidence[0].file_path == paged[0]["path"] and answer.retrieved == files(data)
    assert set(answer.touched) >= {d["path"] for d in paged}  # the pages read were touched


# -- rag-self --------------------------------------------------------------------------------------
def test_self_rag_rewrites_when_nothing_is_relevant_then_answers_from_the_relevant(modal: ModalEnv) -> None:
    first = hits(modal, query=QUESTION, k=20, mode="vector")
    second = hits(modal, query="lease monthly rent amount", k=20, mode="vector")
    n = position(second)
    given = [(n, 0.9), (len(second), 0.5), (len(second) - 1, 0.49)]
    outputs = [
        scores(*[(i, 0.1) for i in range(1, len(first) + 1)]),
        "Rewritten query: lease monthly rent amount",
        scores(*given),
        "EUR 1,800.00 [1]",
    ]
    answer, model = solve("rag-self", modal, outputs)
    assert tool_steps(answer) == [
        ("search", {"query": QUESTION, "k": 20, "mode": "vector"}),
        ("search", {"query": "lease monthly rent amount", "k": 20, "mode": "vector"}),
    ]
    assert calls(model) == ["Scores", "text", "Scores", "text"]
    assert QUESTION in prompt(model, 1)  # the original question is rewritten
    assert "lease monthly rent amount" in prompt(model, 2)  # grading against the rewritten query
    # relevant: score >= 0.5, best first; passages the reply leaves out get 0.5 and count too
    relevant = [second[i - 1] for i in ranked(len(second), given, 0.5) if i != len(second) - 1]
    assert len(relevant) == len(second) - 1 and relevant[0] == second[n - 1]
    assert shown(prompt(model, 3)) == [header(d) for d in relevant[:10]]
    assert same(second[n - 1], answer.evidence[0]) and answer.retrieved == files(first, second)


def test_self_rag_with_nothing_relevant_after_two_rounds_answers_without_the_model(modal: ModalEnv) -> None:
    answer, model = solve("rag-self", modal, [scores(*[(i, 0.0) for i in range(1, 21)]), "lease rent",
                                              scores(*[(i, 0.2) for i in range(1, 21)])])  # fmt: skip
    assert len(tool_steps(answer)) == 2 and calls(model) == ["Scores", "text", "Scores"]
    assert answer.text == NOT_FOUND and answer.evidence == [] and answer.stop == "answered"


def test_self_rag_unreadable_grades_count_every_passage_relevant(modal: ModalEnv) -> None:
    data = hits(modal, query=QUESTION, k=20, mode="vector")
    answer, model = solve("rag-self", modal, ["grades: all fine", "no idea", "EUR 1,800.00"])
    assert calls(model) == ["Scores", "Scores", "text"]  # the client's one repair retry, then the fallback
    assert shown(prompt(model, 2)) == [header(d) for d in data[:10]]
    assert "every passage counts as relevant" in notes(answer) and len(tool_steps(answer)) == 1


# -- rag-graded ------------------------------------------------------------------------------------
def test_graded_routes_retrieves_and_rewrites_twice_at_most(modal: ModalEnv) -> None:
    none = scores(*[(i, 0.1) for i in range(1, 21)])
    outputs = [json.dumps({"route": "retrieve"}), none, "rent lease", none, "rent amount EUR", none]
    answer, model = solve("rag-graded", modal, outputs)
    assert [a["query"] for _, a in tool_steps(answer)] == [QUESTION, "rent lease", "rent amount EUR"]
    assert all(a["k"] == 20 and a["mode"] == "vector" for _, a in tool_steps(answer))
    assert calls(model) == ["Route", "Scores", "text", "Scores", "text", "Scores"]  # no third rewrite, no answer call
    assert QUESTION in prompt(model, 4)  # every rewrite starts from the question
    assert answer.text == NOT_FOUND


def test_graded_threshold_keeps_scores_of_half_or_more(modal: ModalEnv) -> None:
    data = hits(modal, query=QUESTION, k=20, mode="vector")
    grades = scores(*[(i, {3: 0.5, 5: 0.7}.get(i, 0.49)) for i in range(1, len(data) + 1)])
    answer, model = solve("rag-graded", modal, [json.dumps({"route": "retrieve"}), grades, "EUR 1,800.00"])
    assert shown(prompt(model, 2)) == [header(data[4]), header(data[2])]
    assert "relevant (>= 0.5): [5, 3]" in notes(answer)
    assert answer.retrieved == files(data)


def test_graded_routing_rule_and_direct_route_skip_retrieval(modal: ModalEnv) -> None:
    assert routes_direct("hi there") and routes_direct("Thanks a lot for that!")
    assert routes_direct("Which bill?")  # the release matches "hi" inside "which"
    assert not routes_direct(QUESTION) and not routes_direct("hello, what is the rent I pay each month?")
    answer, model = solve("rag-graded", modal, [], question="Hello there!")
    assert tool_steps(answer) == [] and calls(model) == [] and answer.text == NOT_FOUND
    answer, model = solve("rag-graded", modal, [json.dumps({"route": "direct"})])
    assert tool_steps(answer) == [] and calls(model) == ["Route"] and "route: direct" in notes(answer)
    answer, model = solve("rag-graded", modal, ["??", "??", scores(), "EUR 1,800.00"])
    assert len(tool_steps(answer)) == 1 and "retrieving, as the release does" in notes(answer)


# -- rag-corrective --------------------------------------------------------------------------------
def test_crag_rules() -> None:
    assert crag_verdict([0.5, -1.0], 0.5, -0.5) == "correct"
    assert crag_verdict([-0.6, -0.9], 0.5, -0.5) == "incorrect" and crag_verdict([], 0.5, -0.5) == "incorrect"
    assert crag_verdict([-0.5, 0.49], 0.5, -0.5) == "ambiguous"
    text = "Short one. The monthly rent is EUR 1,800 in total. It is due on the first of each month. Pets allowed."
    assert knowledge_strips(text) == ["The monthly rent is EUR 1,800 in total. It is due on the first of each month."]
    assert knowledge_strips("Rent\t1800") == ["Rent\t1800"] and knowledge_strips("  ") == []


def test_crag_correct_keeps_the_relevant_strips(modal: ModalEnv) -> None:
    data = hits(modal, query=QUESTION, k=20, mode="vector")
    n = position(data)
    top = [data[n - 1], *[d for i, d in enumerate(data, 1) if i != n][:4]]
    strips = [knowledge_strips(d["text"]) for d in top]
    outputs = [scores((n, 1.0)), scores((1, 0.9), (2, -0.2))]
    outputs += [scores((1, 0.8), *[(j, -0.9) for j in range(2, len(strips[0]) + 1)])]  # the lease page: strip 1
    outputs += [scores(*[(j, -0.9) for j in range(1, len(s) + 1)]) for s in strips[1:]]  # the others: nothing
    outputs += ["EUR 1,800.00 [1]"]
    answer, model = solve("rag-corrective", modal, outputs)
    assert tool_steps(answer) == [("search", {"query": QUESTION, "k": 20, "mode": "vector"})]
    assert calls(model) == ["Scores"] * 7 + ["text"]
    assert "verdict: correct" in notes(answer)
    assert shown(prompt(model, 7)) == [header(top[0])]  # the other four lost every strip
    assert answer.evidence[0].text == strips[0][0] and same(top[0], answer.evidence[0])


def test_crag_incorrect_searches_a_keyword_rewrite(modal: ModalEnv) -> None:
    again = hits(modal, query="lease rent", k=20, mode="vector")
    outputs = [scores(), scores(*[(i, -0.9) for i in range(1, 6)]), "Keywords: lease rent", scores(), "EUR 1,800"]
    answer, model = solve("rag-corrective", modal, outputs)
    assert [a["query"] for _, a in tool_steps(answer)] == [QUESTION, "lease rent"]
    assert calls(model) == ["Scores", "Scores", "text", "Scores", "text"]
    assert "lease rent" in prompt(model, 3).splitlines()[0]  # reranked against the rewrite
    assert shown(prompt(model, 4)) == [header(d) for d in again[:5]] and "verdict: incorrect" in notes(answer)


# -- rag-adaptive ----------------------------------------------------------------------------------
def test_adaptive_routes_by_complexity(modal: ModalEnv) -> None:
    answer, model = solve("rag-adaptive", modal, [json.dumps({"complexity": "A"}), "EUR 1,800.00"])
    assert tool_steps(answer) == [("search", {"query": QUESTION, "k": 5, "mode": "vector"})]
    assert calls(model) == ["Complexity", "text"]  # simple: no reranking
    answer, model = solve("rag-adaptive", modal, [json.dumps({"complexity": "B"}), scores(), "EUR 1,800.00"])
    assert tool_steps(answer) == [("search", {"query": QUESTION, "k": 20, "mode": "vector"})]
    assert calls(model) == ["Complexity", "Scores", "text"]
    answer, model = solve("rag-adaptive", modal, ["A or B?", "hmm", scores(), "EUR 1,800.00"])
    assert calls(model) == ["Complexity", "Complexity", "Scores", "text"] and "complexity: B" in notes(answer)


def test_adaptive_complex_interleaves_searches_and_reasoning(modal: ModalEnv) -> None:
    outputs = [json.dumps({"complexity": "C"}), "The lease sets the monthly rent. More text.",
               "The answer is: EUR 1,800.00.", scores(), "EUR 1,800.00"]  # fmt: skip
    answer, model = solve("rag-adaptive", modal, outputs)
    assert tool_steps(answer) == [
        ("search", {"query": QUESTION, "k": 6, "mode": "vector"}),
        ("search", {"query": "The lease sets the monthly rent.", "k": 6, "mode": "vector"}),
    ]
    assert calls(model) == ["Complexity", "text", "text", "Scores", "text"]  # stopped at "the answer is"
    assert "The lease sets the monthly rent." in prompt(model, 2)


# -- rag-ircot -------------------------------------------------------------------------------------
def test_ircot_searches_each_sentence_and_stops_when_the_answer_is_said(modal: ModalEnv) -> None:
    outputs = ["The lease agreement states the monthly rent.", "So it is paid each month!",
               "So the answer is: EUR 1,800.00. Done.", scores(), "EUR 1,800.00 [1]"]  # fmt: skip
    answer, model = solve("rag-ircot", modal, outputs)
    assert tool_steps(answer) == [
        ("search", {"query": QUESTION, "k": 6, "mode": "vector"}),
        ("search", {"query": "The lease agreement states the monthly rent.", "k": 6, "mode": "vector"}),
        ("search", {"query": QUESTION, "k": 6, "mode": "vector"}),  # a reasoning sentence searches the question
    ]
    assert calls(model) == ["text", "text", "text", "Scores", "text"]
    reasoning = "A: The lease agreement states the monthly rent. So it is paid each month!"
    assert prompt(model, 2).rstrip().endswith(reasoning)
    assert "the answer is said ('EUR 1,800')" in notes(answer)


def test_ircot_stops_at_its_sentence_and_paragraph_limits(modal: ModalEnv) -> None:
    answer, model = solve("rag-ircot", modal, ["The rent is in the lease.", "The lease is a PDF.", scores(), "x"],
                          max_sentences=2)  # fmt: skip
    assert len(tool_steps(answer)) == 2 and calls(model) == ["text", "text", "Scores", "text"]
    assert "IRCoT stopped (sentence limit) after 2 sentences" in notes(answer)
    answer, model = solve("rag-ircot", modal, [scores(), "x"], max_paragraphs=6)
    assert len(tool_steps(answer)) == 1 and calls(model) == ["Scores", "text"]
    assert "IRCoT stopped (paragraph limit) after 0 sentences and 6 passages" in notes(answer)


# -- rag-decomposition -----------------------------------------------------------------------------
def test_decomposition_solves_sub_questions_in_order(modal: ModalEnv) -> None:
    subs = ["Which lease agreement do I have?", "What monthly rent does that lease set?"]
    first = hits(modal, query=subs[0], k=10, mode="vector")
    outputs = [json.dumps({"sub_questions": subs}), "The 2024 lease for Rue de la Republique 96, Lyon", scores(),
               "EUR 1,800.00"]  # fmt: skip
    answer, model = solve("rag-decomposition", modal, outputs)
    second_query = f"{subs[1]} {outputs[1][:80]}"
    assert tool_steps(answer) == [("search", {"query": subs[0], "k": 10, "mode": "vector"}),
                                  ("search", {"query": second_query, "k": 10, "mode": "vector"})]  # fmt: skip
    assert calls(model) == ["SubQuestions", "text", "Scores", "text"]  # the last sub-question is not answered alone
    assert shown(prompt(model, 1)) == [header(d) for d in first[:5]] and subs[0] in prompt(model, 1)
    second = hits(modal, query=second_query, k=10, mode="vector")
    assert answer.retrieved == files(first, second)


def test_decomposition_keeps_four_sub_questions_and_falls_back_to_the_question(modal: ModalEnv) -> None:
    subs = [f"sub-question {i} about the rent" for i in range(6)]
    answer, model = solve("rag-decomposition", modal, [json.dumps({"sub_questions": subs}), "a", "b", "c", scores(),
                                                       "EUR 1,800.00"])  # fmt: skip
    assert [a["query"] for _, a in tool_steps(answer)] == [subs[0], f"{subs[1]} a", f"{subs[2]} b", f"{subs[3]} c"]
    answer, model = solve("rag-decomposition", modal, ["1. rent?", "2. lease?", scores(), "EUR 1,800.00"])
    assert [a["query"] for _, a in tool_steps(answer)] == [QUESTION] and calls(model)[:2] == ["SubQuestions"] * 2


# -- fallbacks, budgets and failures ---------------------------------------------------------------
def test_without_vectors_a_vector_search_falls_back_to_bm25(synth_indexed: tuple[Path, Path]) -> None:
    root, path = synth_indexed
    plain = ModalEnv(root, Store(path))  # indexed with embed=False: no vectors
    outputs = [scores(*[(i, 0.0) for i in range(1, 21)]), "lease rent", scores(), "EUR 1,800.00"]
    answer, _ = solve("rag-self", plain, outputs)
    assert tool_steps(answer) == [("search", {"query": QUESTION, "k": 20, "mode": "vector"}),
                                  ("search", {"query": QUESTION, "k": 20, "mode": "fts"}),
                                  ("search", {"query": "lease rent", "k": 20, "mode": "fts"})]  # fmt: skip
    failed = next(s for s in answer.trace if s.kind == "tool")
    assert failed.observation.startswith("error:") and "no vectors" in failed.observation and failed.files == []
    assert "BM25 (mode 'fts') instead" in notes(answer) and answer.stop == "answered"
    assert answer.retrieved == files(hits(plain, query=QUESTION, k=20, mode="fts"),
                                     hits(plain, query="lease rent", k=20, mode="fts"))  # fmt: skip


@pytest.mark.parametrize("name", PIPELINES)
def test_every_pipeline_runs_on_the_files_environment(name: str, env: FilesEnv) -> None:
    answer, model = solve(name, env)  # an unscripted mock: echoes, and the smallest JSON that fits
    assert answer.stop == "answered" and answer.text and model.backend.requests
    assert answer.retrieved and all(e.file_path in answer.files for e in answer.evidence)


def _without_mode(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    tools = copy.deepcopy(tools)
    for tool in tools:
        tool["function"]["parameters"].get("properties", {}).pop("mode", None)
    return tools


class NoModeEnv(FilesEnv):
    """A `FilesEnv` whose search takes no ranking mode."""

    tools = _without_mode(FilesEnv.tools)

    def search(self, query: str, k: int = 8, also: list[str] | None = None) -> Any:  # type: ignore[override]
        return super().search(query, k, also=also)


def test_an_environment_without_modes_ranks_every_search_its_own_way(synth_indexed: tuple[Path, Path]) -> None:
    root, path = synth_indexed
    answer, _ = solve("rag-hybrid", NoModeEnv(root, Store(path)), [json.dumps({"keywords": ["lease"]}), scores(), "x"])
    assert tool_steps(answer) == [("search", {"query": QUESTION, "k": 100}), ("search", {"query": "lease", "k": 100})]
    assert "its own ranking stands in for 'vector'" in notes(answer) and "stands in for 'fts'" in notes(answer)


def test_budget_and_model_failures_end_an_episode_with_its_trace(modal: ModalEnv) -> None:
    answer, _ = solve("rag-ircot", modal, ["The rent is in the lease."] * 5, Budget(max_steps=2))
    assert answer.stop == "max_steps" and len(tool_steps(answer)) == 3 and answer.text == ""  # the third call stops
    answer, _ = solve("rag-corrective", modal, [scores(), ModelError("server gone")])
    assert answer.stop == "error" and "server gone" in (answer.error or "") and len(tool_steps(answer)) == 1
    answer, _ = solve("rag-vector", modal, ["unused"], Budget(max_evidence_chars=100))
    assert answer.stop == "max_evidence" and answer.usage.calls == 0


def test_the_cli_names_the_pipelines(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from hippocamp.cli import main

    result = CliRunner().invoke(main, ["run", "--suite", str(tmp_path), "--agent", "rag-nope", "--model", "mock",
                                       "--out", str(tmp_path / "run")])  # fmt: skip
    assert result.exit_code != 0
    assert all(name in result.output for name in PIPELINES)  # the known agents, listed by `hippocamp run`


# -- a real model (SmolLM2 is tiny: finishing the episode is what is checked) ----------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", PIPELINES)
def test_pipeline_episode_against_a_real_server(name: str, server_url: str, synth_indexed: tuple[Path, Path]) -> None:
    root, path = synth_indexed
    small = FilesEnv(root, Store(path), max_chars=800)  # SmolLM2's server has a 2,048-token context
    model = get_model(f"openai-compatible:smollm2@{server_url}")
    agent = registry.get("agent", name)()
    budget = Budget(max_steps=14, max_tokens=40_000, max_seconds=60)  # CI: eleven of these, on 2 shared cores
    answer = asyncio.run(agent.solve(Task(id="t1", question=QUESTION), small, model, budget))
    assert isinstance(answer, Answer) and answer.trace
    assert answer.stop in ("answered", "max_steps", "max_tokens", "timeout", "max_evidence", "error")
    if answer.stop == "error":  # a recorded model failure (e.g. a prompt over the context), never a crash
        assert answer.error and any(s.kind == "note" and "model error" in (s.thought or "") for s in answer.trace)
    else:
        assert answer.usage.calls >= 1
    assert all(e.file_path in answer.files for e in answer.evidence)
    Answer.model_validate_json(answer.model_dump_json())
