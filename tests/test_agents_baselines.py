"""The paper's baselines (rag, self-rag, search-r1, react) over an indexed synthetic profile, with
whole trajectories scripted through the mock model; and, when a real server is given, one smoke
episode per agent family."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from hippocamp import registry
from hippocamp.agents import Answer, Budget, Task
from hippocamp.agents._cite import Passages, cited_numbers, containing, mentioned_files
from hippocamp.agents.retrieval import parse_action
from hippocamp.envs.files import FilesEnv
from hippocamp.models import get_model
from hippocamp.models.errors import ModelError
from hippocamp.models.types import ChatRequest
from hippocamp.store.db import Store

LEASE = "Documents/Housing/Lease Agreement 2024.pdf"
QUESTION = "How much is my monthly rent?"


def solve(name: str, env: FilesEnv, model: Any, budget: Budget | None = None, question: str = QUESTION) -> Answer:
    agent = registry.get("agent", name)()
    return asyncio.run(agent.solve(Task(id="t1", question=question), env, model, budget or Budget(k=3)))


def tool_steps(answer: Answer) -> list[tuple[str | None, dict[str, Any] | None]]:
    return [(s.tool, s.arguments) for s in answer.trace if s.kind == "tool"]


def page(item: Any) -> int:
    return item.locator["position"]["system_page"]


# -- shared helpers --------------------------------------------------------------------------------
def test_citation_parsing() -> None:
    assert cited_numbers("Rent is EUR 1,800 [2], due on the 1st [1, 3] [9] (Doc 4)", highest=5) == [2, 1, 3, 4]
    assert cited_numbers("see [2-4]; in 2024 [2024]", highest=5) == [2, 3, 4]
    assert cited_numbers("no citations here", highest=5) == []
    paths = [LEASE, "Desktop/todo 1.txt", "Desktop/todo 11.txt", "Pictures/Camera/IMG_1090 (copy 1).jpg"]
    assert mentioned_files("It is in lease agreement 2024.pdf and todo 11.txt", paths) == [LEASE, paths[2]]
    assert mentioned_files("Pictures/Camera/IMG_1090.jpg", paths) == []
    hits = [{"path": LEASE, "locator": {"unit": "page", "position": 2}, "text": "Monthly rent: EUR 1,800.00"}]
    passages = Passages()
    first = passages.add(hits)
    assert passages.add(hits) == first and first[0].number == 1
    assert containing("EUR 1,800.00", passages.items) == first and containing("EUR 900", passages.items) == []


def test_search_r1_actions() -> None:
    assert parse_action("<think>x</think><search> rent </search><information>junk") == (
        "search", "rent", "<think>x</think><search> rent</search>")  # fmt: skip
    assert parse_action("<answer>EUR 1,800") == ("answer", "EUR 1,800", "<answer>EUR 1,800</answer>")
    assert parse_action("<search> </search>") is None and parse_action("plain text") is None


def test_all_baselines_registered() -> None:
    names = registry.names("agent")
    for name in ("rag", "self-rag", "search-r1", "react"):
        assert name in names and registry.get("agent", name).name == name


# -- rag -------------------------------------------------------------------------------------------
def test_rag_answers_from_numbered_passages_and_cites_them(env: FilesEnv) -> None:
    expected = env.call("search", {"query": QUESTION, "k": 3})

    def reply(request: ChatRequest) -> str:
        prompt = request.messages[-1]["content"]
        assert expected.text in prompt and QUESTION in prompt and request.tools is None
        number = next(i for i, d in enumerate(expected.data, 1) if d["path"] == LEASE and "Monthly rent" in d["text"])
        return f"The monthly rent is EUR 1,800.00 [{number}]."

    model = get_model("mock", outputs=reply)
    answer = solve("rag", env, model)
    assert answer.stop == "answered" and "1,800.00" in answer.text
    assert tool_steps(answer) == [("search", {"query": QUESTION, "k": 3})]
    assert next(s for s in answer.trace if s.kind == "tool").observation == expected.text
    assert answer.files == [LEASE]
    assert len(answer.evidence) == 1 and page(answer.evidence[0]) == 2 and "Monthly rent" in answer.evidence[0].text
    assert answer.usage.calls == 1 and [s.kind for s in answer.trace] == ["tool", "model", "answer"]


def test_rag_without_citations_cites_everything_retrieved(env: FilesEnv) -> None:
    expected = env.call("search", {"query": QUESTION, "k": 3})
    answer = solve("rag", env, get_model("mock", outputs=["EUR 1,800.00 a month."]))
    assert [(e.file_path, e.locator) for e in answer.evidence] == [(d["path"], d["locator"]) for d in expected.data]
    assert set(answer.files) == {d["path"] for d in expected.data}


def test_rag_model_error_and_evidence_budget(env: FilesEnv) -> None:
    failed = solve("rag", env, get_model("mock", outputs=[ModelError("server gone")]))
    assert failed.stop == "error" and "server gone" in (failed.error or "")
    assert tool_steps(failed) == [("search", {"query": QUESTION, "k": 3})] and failed.text == ""
    tight = solve("rag", env, get_model("mock", outputs=["unused"]), Budget(k=3, max_evidence_chars=50))
    assert tight.stop == "max_evidence" and tight.usage.calls == 0


# -- self-rag --------------------------------------------------------------------------------------
def test_self_rag_critiques_retrieves_again_and_revises(env: FilesEnv) -> None:
    first = env.call("search", {"query": QUESTION, "k": 3})
    lease_at = next(i for i, d in enumerate(first.data, 1) if d["path"] == LEASE and "Monthly rent" in d["text"])
    follow_up = "lease deposit amount"
    second = env.call("search", {"query": follow_up, "k": 3})
    outputs = [
        json.dumps({"retrieve": "yes"}),
        json.dumps({"relevant": [lease_at]}),
        f"The monthly rent is EUR 1,800.00 [{lease_at}].",
        json.dumps({"supported": "partial", "follow_up_query": follow_up}),
        json.dumps({"relevant": [1]}),
        "The monthly rent is EUR 1,800.00; the deposit is on the next page.",  # no citation: all relevant cited
    ]
    model = get_model("mock", outputs=outputs)
    answer = solve("self-rag", env, model)
    assert answer.stop == "answered" and answer.text == outputs[-1]
    assert tool_steps(answer) == [("search", {"query": QUESTION, "k": 3}), ("search", {"query": follow_up, "k": 3})]
    observations = [s.observation for s in answer.trace if s.kind == "tool"]
    assert observations == [first.text, second.text]
    requests = model.backend.requests
    assert [r.json_schema is not None for r in requests] == [True, True, False, True, True, False]
    assert first.text in requests[1].messages[-1]["content"] and second.text in requests[4].messages[-1]["content"]
    draft_prompt = requests[2].messages[-1]["content"]
    assert f"[{lease_at}] {LEASE}" in draft_prompt and draft_prompt.count(" › ") == 1  # only the relevant one
    revise_prompt = requests[5].messages[-1]["content"]
    assert outputs[2] in revise_prompt and second.data[0]["text"][:60] in revise_prompt
    assert answer.evidence[0].file_path == LEASE and page(answer.evidence[0]) == 2
    assert (answer.evidence[1].file_path, answer.evidence[1].locator) == (
        second.data[0]["path"],
        second.data[0]["locator"],
    )
    assert answer.usage.calls == 6


def test_self_rag_supported_stops_and_no_retrieval(env: FilesEnv) -> None:
    supported = [json.dumps({"retrieve": "yes"}), json.dumps({"relevant": []}), "Not in the passages.",
                 json.dumps({"supported": "yes"})]  # fmt: skip
    answer = solve("self-rag", env, get_model("mock", outputs=supported))
    assert answer.stop == "answered" and len(tool_steps(answer)) == 1 and answer.evidence == []
    direct = solve("self-rag", env, get_model("mock", outputs=[json.dumps({"retrieve": "no"}), "Paris."]))
    assert direct.text == "Paris." and tool_steps(direct) == [] and direct.files == []


def test_self_rag_model_error_keeps_the_trace(env: FilesEnv) -> None:
    model = get_model("mock", outputs=[json.dumps({"retrieve": "yes"}), ModelError("boom")])
    answer = solve("self-rag", env, model)
    assert answer.stop == "error" and "boom" in (answer.error or "")
    assert [s.kind for s in answer.trace] == ["model", "tool", "note"]


# -- search-r1 -------------------------------------------------------------------------------------
def test_search_r1_protocol(env: FilesEnv) -> None:
    expected = env.call("search", {"query": "monthly rent", "k": 3})

    def reply(request: ChatRequest) -> str:
        assert request.stop == ["</search>", "</answer>"]
        if not request.messages[-1]["content"].startswith("<information>"):
            # a model ignoring the stop sequence: what follows the search is dropped
            return "<think>The lease says.</think>\n<search> monthly rent </search><information>made up"
        assert request.messages[-1]["content"] == f"<information>{expected.text}</information>"
        assert request.messages[-2]["content"] == "<think>The lease says.</think>\n<search> monthly rent</search>"
        return "<think>Page 2 of the lease.</think> <answer>EUR 1,800.00"  # stopped before </answer>

    answer = solve("search-r1", env, get_model("mock", outputs=reply))
    assert answer.stop == "answered" and answer.text == "EUR 1,800.00"
    assert tool_steps(answer) == [("search", {"query": "monthly rent", "k": 3})]
    assert next(s for s in answer.trace if s.kind == "tool").observation == expected.text
    # cited: the retrieved passages that contain the answer, the lease's page 2 among them
    assert LEASE in answer.files and all("1,800.00" in e.text for e in answer.evidence)
    assert any(e.file_path == LEASE and page(e) == 2 for e in answer.evidence)


def test_search_r1_corrects_a_malformed_turn_once(env: FilesEnv) -> None:
    model = get_model("mock", outputs=["It is probably 1800.", "<answer>EUR 1,800.00</answer>"])
    answer = solve("search-r1", env, model)
    assert answer.stop == "answered" and answer.text == "EUR 1,800.00" and tool_steps(answer) == []
    fix = model.backend.requests[1].messages
    assert fix[-2] == {"role": "assistant", "content": "It is probably 1800."}
    assert fix[-1]["role"] == "user" and "My previous action is invalid" in fix[-1]["content"]
    twice = solve("search-r1", env, get_model("mock", outputs=["no idea", "<think>still no idea</think>"]))
    assert twice.stop == "no_answer" and twice.text == "still no idea"


def test_search_r1_step_budget(env: FilesEnv) -> None:
    model = get_model("mock", outputs=lambda request: "<search>rent</search>")
    answer = solve("search-r1", env, model, Budget(max_steps=2, k=2))
    assert answer.stop == "max_steps" and answer.text == "" and len(model.backend.requests) == 2
    assert tool_steps(answer) == [("search", {"query": "rent", "k": 2})] * 2


# -- react -----------------------------------------------------------------------------------------
def _react_script(answer_text: str) -> Any:
    """Search for the rent, read the page of the lease it points to, then answer."""

    def reply(request: ChatRequest) -> dict[str, Any]:
        assert request.tools is not None and [t["function"]["name"] for t in request.tools][:2] == [
            "list_files",
            "search",
        ]
        results = [m for m in request.messages if m.get("role") == "tool"]
        if not results:
            return {"text": "I should search for the rent.", "tool_calls": [
                {"name": "search", "arguments": {"query": "monthly rent", "k": 3}}]}  # fmt: skip
        if len(results) == 1:
            assert "Monthly rent" in results[0]["content"]
            return {"text": "The lease has it; read page 2.", "tool_calls": [
                {"name": "read", "arguments": {"path": LEASE, "locator": "page 2"}}]}  # fmt: skip
        return {"text": answer_text}

    return reply


def test_react_searches_reads_and_cites(env: FilesEnv) -> None:
    searched = env.call("search", {"query": "monthly rent", "k": 3})
    read = env.call("read", {"path": LEASE, "locator": "page 2"})
    text = f"The monthly rent is EUR 1,800.00 ({LEASE}, page 2)."
    model = get_model("mock", outputs=_react_script(text))
    answer = solve("react", env, model)
    assert answer.stop == "answered" and answer.text == text
    assert tool_steps(answer) == [("search", {"query": "monthly rent", "k": 3}),
                                  ("read", {"path": LEASE, "locator": "page 2"})]  # fmt: skip
    assert [s.observation for s in answer.trace if s.kind == "tool"] == [searched.text, read.text]
    assert [s.kind for s in answer.trace] == ["model", "tool", "model", "tool", "model", "answer"]
    assert answer.trace[0].thought == "I should search for the rent."
    assert answer.files == [LEASE]
    assert len(answer.evidence) == 1 and page(answer.evidence[0]) == 2 and "Monthly rent" in answer.evidence[0].text
    last = model.backend.requests[-1].messages
    assert last[-1] == {"role": "tool", "tool_call_id": "call_0", "name": "read", "content": read.text}
    assert last[-2]["tool_calls"][0]["function"]["name"] == "read"


def test_react_without_file_names_cites_what_it_read(env: FilesEnv) -> None:
    answer = solve("react", env, get_model("mock", outputs=_react_script("EUR 1,800.00 per month.")))
    assert answer.files == [LEASE] and page(answer.evidence[0]) == 2


def test_react_through_the_json_action_protocol(env: FilesEnv) -> None:
    outputs = [json.dumps({"tool": "search", "arguments": {"query": "monthly rent", "k": 2}}),
               "EUR 1,800.00, says Lease Agreement 2024.pdf."]  # fmt: skip
    model = get_model("mock", outputs=outputs, supports_tools=False)
    answer = solve("react", env, model)
    assert answer.stop == "answered" and tool_steps(answer) == [("search", {"query": "monthly rent", "k": 2})]
    assert answer.files == [LEASE] and all(e.file_path == LEASE for e in answer.evidence)
    assert model.backend.requests[0].tools is None and "list_files" in model.backend.requests[0].messages[0]["content"]


def test_react_step_budget_and_bad_arguments(env: FilesEnv) -> None:
    calls = {"tool_calls": [{"name": "search", "arguments": {"query": "rent", "k": "ten"}}]}
    model = get_model("mock", outputs=lambda request: calls)
    answer = solve("react", env, model, Budget(max_steps=2))
    assert answer.stop == "max_steps" and answer.text == "" and answer.files == []
    steps = [s for s in answer.trace if s.kind == "tool"]
    assert len(steps) == 2 and steps[0].observation.startswith("error: bad arguments for search")
    assert len(model.backend.requests) == 2


def test_react_model_error_mid_episode(env: FilesEnv) -> None:
    outputs = [{"tool_calls": [{"name": "list_files", "arguments": {"glob": "*.pdf"}}]}, ModelError("out of memory")]
    answer = solve("react", env, get_model("mock", outputs=outputs))
    assert answer.stop == "error" and "out of memory" in (answer.error or "")
    assert [s.kind for s in answer.trace] == ["model", "tool", "note"]
    assert answer.trace[1].observation == env.call("list_files", {"glob": "*.pdf"}).text


def test_react_empty_reply_gets_one_nudge(env: FilesEnv) -> None:
    model = get_model("mock", outputs=["", "EUR 1,800.00"])
    answer = solve("react", env, model)
    assert answer.stop == "answered" and answer.text == "EUR 1,800.00" and answer.files == []
    assert "Your reply was empty" in model.backend.requests[1].messages[-1]["content"]
    assert solve("react", env, get_model("mock", outputs=["", " "])).stop == "no_answer"


# -- a real model (SmolLM2 is tiny: completing an episode is all that is checked) -------------------
@pytest.fixture
def server() -> str:
    url = os.environ.get("HIPPOCAMP_TEST_SERVER")
    if not url:
        pytest.skip("needs HIPPOCAMP_TEST_SERVER (an OpenAI-compatible llama.cpp server with SmolLM2)")
    return url


@pytest.mark.slow
@pytest.mark.parametrize("name", ["rag", "rag-expand", "self-rag", "search-r1", "react"])
def test_real_server_episode(name: str, server: str, synth_indexed: tuple[Path, Path]) -> None:
    root, path = synth_indexed
    small = FilesEnv(root, Store(path), max_chars=800)  # SmolLM2's server has a 2,048-token context
    model = get_model(f"openai-compatible:smollm2@{server}")
    answer = solve(name, small, model, Budget(max_steps=3, k=2, max_tokens=20_000, max_seconds=240))
    assert isinstance(answer, Answer) and answer.stop in ("answered", "no_answer", "max_steps", "max_tokens")
    assert answer.trace and answer.usage.calls >= 1
    assert all(e.file_path in answer.files for e in answer.evidence)
    Answer.model_validate_json(answer.model_dump_json())


# -- rag-expand ------------------------------------------------------------------------------------
def test_expansions_are_parsed_from_a_models_lines() -> None:
    from hippocamp.agents.expand import parse_expansions

    reply = '1. Anna tennis match\n- "Anna yoga class"\nQuestion: What sports?\n\nanna TENNIS match\n' + "w " * 20
    assert parse_expansions(reply, "What sports does Anna like?") == ["Anna tennis match", "Anna yoga class"]
    assert parse_expansions("What sports does Anna like?\nx\ny\nz\nv\nw", "What sports does Anna like?") == [
        "x", "y", "z", "v"]  # fmt: skip


def test_rag_expand_ranks_the_models_expansions_with_the_question(env: FilesEnv) -> None:
    question = "What do I pay to live here each month?"  # few of the lease's words
    expansions = "lease monthly rent EUR\nrent due on the first"
    plain = env.call("search", {"query": question, "k": 3})
    widened = env.call(
        "search", {"query": question, "k": 3, "also": ["lease monthly rent EUR", "rent due on the first"]}
    )
    assert any(d["path"] == LEASE for d in widened.data)
    assert [d["path"] for d in widened.data] != [d["path"] for d in plain.data] or LEASE in plain.text
    seen: list[str] = []

    def reply(request: ChatRequest) -> str:
        prompt = request.messages[-1]["content"]
        seen.append(prompt)
        if len(seen) == 1:
            assert question in prompt and "search queries" in prompt
            return expansions
        number = next(i for i, d in enumerate(widened.data, 1) if d["path"] == LEASE)
        return f"EUR 1,800.00 [{number}]"

    answer = solve("rag-expand", env, get_model("mock", outputs=reply), question=question)
    assert answer.stop == "answered" and answer.usage.calls == 2
    also = ["lease monthly rent EUR", "rent due on the first"]
    assert tool_steps(answer) == [("search", {"query": question, "k": 3, "also": also})]
    assert answer.files == [LEASE]
    # a model that proposes nothing usable: the question alone, as rag does
    answer = solve("rag-expand", env, get_model("mock", outputs=["Question: x", "EUR 1,800.00"]), question=question)
    assert tool_steps(answer) == [("search", {"query": question, "k": 3})]
