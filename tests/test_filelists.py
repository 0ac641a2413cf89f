"""The three file lists of an episode (cited, touched, retrieved): the HippoCamp release's rule on hand-made
commands, the structured tools' paths, and whole episodes of the agents scripted through the mock model."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any, ClassVar

from hippocamp import registry
from hippocamp.agents import Answer, Budget, Task
from hippocamp.agents.external import given_file_lists
from hippocamp.agents.filelists import (
    FILE_EXTENSIONS,
    files_in_command,
    looks_like_file,
    paper_file_list,
    release_agent_file_list,
    retrieved_files,
    returned_files,
    tool_paths,
    touched_files,
)
from hippocamp.envs.base import Observation
from hippocamp.envs.files import FilesEnv
from hippocamp.models import get_model
from hippocamp.models.types import ChatRequest
from hippocamp.runs.episodes import read_episodes
from hippocamp.schema.run import Episode, Step
from hippocamp.schema.segment import Segment

LEASE = "Documents/Housing/Lease Agreement 2024.pdf"
QUESTION = "How much is my monthly rent?"


def terminal_trace(*commands: str) -> list[Step]:
    """A terminal episode's trace: a model turn, then a ``terminal`` tool step, per command."""
    trace: list[Step] = []
    for c in commands:
        trace.append(Step(index=len(trace), kind="model", thought="look"))
        trace.append(Step(index=len(trace), kind="tool", tool="terminal", arguments={"command": c}, observation="."))
    return trace


# -- the release's rule ------------------------------------------------------------------------------
def test_the_release_rule_on_a_four_command_trace() -> None:
    commands = [
        "list_files Documents/",
        'return_txt "Documents/Legal/Guide.pdf"',
        "cat Mail/Inbox/a.eml | grep -i rent",
        "ls -la Pictures/*.jpg",
    ]
    assert [files_in_command(c) for c in commands] == [
        ["Documents/"],
        ["Documents/Legal/Guide.pdf"],
        ["Mail/Inbox/a.eml"],
        ["Pictures/*.jpg"],
    ]
    # the return_* files first (sorted), then every command's files in order, each once
    expected = ["Documents/Legal/Guide.pdf", "Documents/", "Mail/Inbox/a.eml", "Pictures/*.jpg"]
    assert touched_files(terminal_trace(*commands)) == expected
    steps = {f"step_{i}": {"command": c} for i, c in enumerate(commands)}
    assert release_agent_file_list(["Documents/Legal/Guide.pdf"], steps) == expected
    assert release_agent_file_list(["Documents/Legal/Guide.pdf"], list(steps.values())) == expected


def test_returned_files_come_first_sorted() -> None:
    commands = ["cat notes.txt", "return_txt b/z.pdf", "return_img a/y.png --page 2", "return_txt b/z.pdf"]
    assert [returned_files(c) for c in commands] == [[], ["b/z.pdf"], ["a/y.png"], ["b/z.pdf"]]
    # return_img contributes its first argument only (not "--page" or "2")
    assert touched_files(terminal_trace(*commands)) == ["a/y.png", "b/z.pdf", "notes.txt"]
    # the release's own files_touched is used as logged (it logs it sorted)
    assert release_agent_file_list(["b/z.pdf", "a/y.png"], [{"command": c} for c in commands]) == [
        "b/z.pdf", "a/y.png", "notes.txt"]  # fmt: skip


def test_commands_that_do_not_split_name_nothing() -> None:
    assert files_in_command('cat "Documents/unclosed.pdf') == []
    assert files_in_command("return_txt 'Mail/a.eml") == [] and returned_files("return_txt 'Mail/a.eml") == []
    assert files_in_command("cat a.txt \\") == []
    assert files_in_command("") == [] and files_in_command("   ") == []
    assert returned_files("return_txt") == [] and files_in_command("return_txt") == []
    trace = terminal_trace('return_txt "x/a.pdf', "cat b/c.txt")
    assert touched_files(trace) == ["b/c.txt"]


def test_urls_flags_redirects_and_extensions() -> None:
    assert files_in_command("curl https://example.com/a.pdf http://x.org/b.txt") == []
    assert files_in_command("grep -r --include=*.pdf -i rent .") == []
    assert files_in_command("grep rent notes.txt > out.txt") == ["notes.txt", "out.txt"]
    assert files_in_command("sort < in.csv >> all.csv 2> err.log") == ["in.csv", "all.csv", "err.log"]
    # written as one word a redirection is a token with a "/", as the release splits it
    assert files_in_command("find Documents 2>/dev/null") == ["2>/dev/null"]
    assert files_in_command("head -n 3 REPORT.PDF Notes.Md photo.JPEG readme") == ["REPORT.PDF", "Notes.Md",
                                                                                    "photo.JPEG"]  # fmt: skip
    assert files_in_command("wc -l 'Documents/My Files/a b.docx' x.ppt") == ["Documents/My Files/a b.docx"]
    assert files_in_command("a|b c/d") == ["c/d"]  # the head is "a|b": only what follows it counts
    for ext in (".pt", ".sqlite", ".mkv", ".ics", ".ipynb"):
        assert ext in FILE_EXTENSIONS and looks_like_file(f"x{ext.upper()}")
    assert not any(looks_like_file(t) for t in ("", "-", "--page", "|", ">", ">>", "<", "2>", "2>>", "rent"))
    assert looks_like_file("Mail/**") and looks_like_file("*.pdf") and not looks_like_file("*rent*")


def test_release_list_of_odd_logs() -> None:
    """What the release skips: a files_touched that is not a list, steps that are not dicts, empty or
    missing commands, empty names; duplicates keep their first place."""
    steps: dict[str, Any] = {
        "step_1": {"command": "cat a/b.txt"},
        "step_2": "not a step",
        "step_3": {"agent_response": "no command"},
        "step_4": {"command": None},
        "step_final": {"command": 'cat "" a/b.txt c.json'},
    }
    assert release_agent_file_list("a/b.txt", steps) == ["a/b.txt", "c.json"]
    assert release_agent_file_list(["", "z.pdf", None, "a/b.txt"], steps) == ["z.pdf", "a/b.txt", "c.json"]
    assert release_agent_file_list(None, None) == [] and release_agent_file_list([], "steps") == []


# -- structured tools and retrieval ------------------------------------------------------------------
def test_structured_tools_name_their_paths() -> None:
    assert tool_paths({"path": LEASE, "locator": "page 2"}) == [LEASE]
    assert tool_paths({"glob": "Mail/**"}) == ["Mail/**"] and tool_paths({"glob": "*rent*"}) == []
    assert tool_paths({"query": "rent", "k": 3, "path_glob": "*.pdf"}) == ["*.pdf"]
    assert tool_paths({"paths": ["a.pdf", 3, "", "b/c"], "dir": "Mail"}) == ["a.pdf", "b/c", "Mail"]
    assert tool_paths(None) == [] and tool_paths({"path": ""}) == [] and tool_paths({"path": 7}) == []
    trace = [
        Step(index=0, kind="tool", tool="list_files", arguments={"glob": "Documents/Housing/*"}),
        Step(index=1, kind="tool", tool="search", arguments={"query": "rent"}, files=["b.pdf", LEASE]),
        Step(index=2, kind="tool", tool="read", arguments={"path": LEASE, "locator": "page 2"}),
        Step(index=3, kind="tool", tool="metadata", arguments={"path": "Pictures/x.jpg"}),
        Step(index=4, kind="tool", tool="read", arguments={"path": LEASE}),
        Step(index=5, kind="tool", tool="protocol", arguments=None, observation="error"),
        Step(index=6, kind="tool", tool="search", arguments={"query": "lease"}, files=[LEASE, "c.eml"]),
        Step(index=7, kind="tool", tool="read", arguments={"path": "c.eml"}, files=["c.eml"]),
    ]
    assert touched_files(trace) == ["Documents/Housing/*", LEASE, "Pictures/x.jpg", "c.eml"]
    # only retrieval steps' files are retrieved (a read's returned file is not)
    assert retrieved_files(trace) == ["b.pdf", LEASE, "c.eml"]
    assert retrieved_files(terminal_trace("cat a.txt")) == []


def test_paper_file_list_per_agent() -> None:
    expected = {"rag": "retrieved", "self-rag": "retrieved", "search-r1": "retrieved", "full-context": "retrieved",
                "terminal": "touched", "react": "touched", "evidence": "touched", "external": "cited"}  # fmt: skip
    for name, kind in expected.items():
        assert paper_file_list(name) == kind and registry.get("agent", name).file_list == kind
    assert paper_file_list("rag:12") == "retrieved" and paper_file_list("external:cmd:./a.sh") == "cited"
    assert paper_file_list("no-such-agent") == "cited"
    assert set(expected) <= set(registry.names("agent"))


def test_external_answers_keep_the_lists_they_carry() -> None:
    assert given_file_lists({"answer": "x"}) == ([], [])
    assert given_file_lists({"answer": "x", "touched": ["a.pdf", "a.pdf", 3, "/abs/b"], "retrieved": ["r.txt"]}) == (
        ["a.pdf", "/abs/b"], ["r.txt"])  # fmt: skip
    assert given_file_lists({"answer": "x", "agent_file_list": ["z/a.pdf"]}) == (["z/a.pdf"], [])
    release_log = {"answer": "x", "files_touched": ["b/c.pdf"], "steps": {"step_1": {"command": "ls -la Mail/"}}}
    assert given_file_lists(release_log) == (["b/c.pdf", "Mail/"], [])


def test_external_episode_keeps_the_lists_it_is_given(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(
        "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'answer': 'x', 'files': ['a.pdf'], "
        "'files_touched': ['a.pdf'], 'steps': {'step_1': {'command': 'grep -r x Mail/'}}, 'retrieved': ['r.eml']}))"
    )
    env = type("Env", (), {"root": str(tmp_path)})()
    agent = registry.get("agent", "external")(f"cmd:{sys.executable} {script}")
    answer = asyncio.run(agent.solve(Task(id="t1", question="?"), env, None, Budget()))
    assert answer.stop == "answered" and answer.files == ["a.pdf"]
    assert answer.touched == ["a.pdf", "Mail/"] and answer.retrieved == ["r.eml"]


# -- episodes ----------------------------------------------------------------------------------------
def solve(name: str, env: Any, model: Any, budget: Budget | None = None, question: str = QUESTION) -> Answer:
    agent = registry.get("agent", name)()
    return asyncio.run(agent.solve(Task(id="t1", question=question), env, model, budget or Budget(k=3)))


def hit_paths(obs: Observation) -> list[str]:
    return list(dict.fromkeys(d["path"] for d in obs.data))


def test_rag_episode_records_what_it_retrieved(env: FilesEnv) -> None:
    expected = env.call("search", {"query": QUESTION, "k": 3})
    assert LEASE in hit_paths(expected)
    answer = solve("rag", env, get_model("mock", outputs=["EUR 1,800.00 a month."]))
    assert answer.stop == "answered"
    search = next(s for s in answer.trace if s.kind == "tool")
    assert search.tool == "search" and search.files == hit_paths(expected)
    assert answer.retrieved == hit_paths(expected) and answer.touched == []
    assert set(answer.files) <= set(answer.retrieved)
    # the lists survive the episode line
    line = Episode(task_id="t1", agent="rag", model="mock", epoch=0, question=QUESTION, answer=answer, wall_s=0.1,
                   model_s=0.0, harness_s=0.1, started="", finished="").line()  # fmt: skip
    again = Episode.model_validate_json(line)
    assert again.answer.retrieved == answer.retrieved and again.answer.trace[0].files == search.files


def tool(command: str) -> str:
    return f'<think>look</think>\n<tool>{{"name": "terminal", "arguments": {{"command": {json.dumps(command)}}}}}'


def test_terminal_episode_records_what_it_touched(env: FilesEnv) -> None:
    outputs = [
        tool("list_files 'Documents/Housing/*'"),
        tool(f'return_txt "{LEASE}"'),
        tool(f"cat '{LEASE}' | grep -i rent"),
        tool("ls -la Pictures/*.jpg"),
        tool("grep -ri 'monthly rent' Mail/ 2>/dev/null"),
        tool('return_txt "Documents/never there.pdf'),  # does not split: names nothing
        f"<think>page 2</think><answer>EUR 1,800.00 per month</answer><files>{LEASE}</files>",
    ]
    answer = solve("terminal", env, get_model("mock", outputs=outputs), Budget())
    assert answer.stop == "answered" and answer.files == [LEASE]
    assert answer.touched == [LEASE, "Documents/Housing/*", "Pictures/*.jpg", "Mail/", "2>/dev/null"]
    assert answer.retrieved == []
    assert all(s.files == [] for s in answer.trace)


def test_terminal_episode_stopped_by_its_budget_keeps_its_lists(env: FilesEnv) -> None:
    outputs = [tool(f'return_txt "{LEASE}"'), tool("cat Mail/a.eml"), tool("ls")]
    answer = solve("terminal", env, get_model("mock", outputs=outputs), Budget(max_steps=2))
    assert answer.stop == "max_steps" and answer.touched == [LEASE, "Mail/a.eml"]


def test_react_episode_touches_what_it_reads_and_retrieves_what_it_searched(env: FilesEnv) -> None:
    searched = env.call("search", {"query": "monthly rent", "k": 3})

    def reply(request: ChatRequest) -> dict[str, Any]:
        results = [m for m in request.messages if m.get("role") == "tool"]
        if not results:
            return {"text": "search", "tool_calls": [{"name": "search", "arguments": {"query": "monthly rent",
                                                                                   "k": 3}}]}  # fmt: skip
        if len(results) == 1:
            return {"text": "list", "tool_calls": [{"name": "list_files", "arguments": {"glob": "Documents/**"}},
                                                   {"name": "metadata", "arguments": {"path": LEASE}}]}  # fmt: skip
        if len(results) == 3:
            return {"text": "read", "tool_calls": [{"name": "read", "arguments": {"path": LEASE, "locator": "page 2"}}]}
        return {"text": "EUR 1,800.00 per month."}

    answer = solve("react", env, get_model("mock", outputs=reply))
    assert answer.stop == "answered" and answer.files == [LEASE]
    assert answer.touched == ["Documents/**", LEASE]
    assert answer.retrieved == hit_paths(searched)
    assert [s.files for s in answer.trace if s.kind == "tool"] == [hit_paths(searched), [], [], []]


def test_evidence_episode_touches_the_passages_it_examined(env: FilesEnv) -> None:
    prompts: list[str] = []

    def reply(request: ChatRequest) -> str:
        prompt = request.messages[-1]["content"]
        if "Plan the search" in request.messages[0]["content"]:
            return json.dumps({"subject": "the user", "looking_for": "monthly rent", "queries": ["lease agreement"]})
        if "List the ids of the passages" in prompt:
            prompts.append(prompt)
            return json.dumps({"relevant": [1], "about_someone_else": []})
        return json.dumps({"answer": "EUR 1,800.00", "used": [1]})

    answer = solve("evidence", env, get_model("mock", outputs=reply))
    assert answer.stop == "answered" and len(prompts) == 1
    searches = [s for s in answer.trace if s.kind == "tool"]
    assert [s.arguments["query"] for s in searches if s.arguments] == [QUESTION, "lease agreement"]
    assert answer.retrieved == list(dict.fromkeys(f for s in searches for f in s.files)) and answer.retrieved
    # touched: the files of the passages shown for selection (the fused top ones), in that order
    assert answer.touched and set(answer.touched) <= set(answer.retrieved)
    assert all(f in prompts[0] for f in answer.touched)
    assert set(answer.files) <= set(answer.touched)


class LogsEnv:
    """An app-log environment with three messages in two files."""

    corpus = corpus_long = "Dana's messages and calendar"
    owner = "Dana"
    tools: ClassVar[list[dict[str, Any]]] = []
    calls = 0

    def __init__(self) -> None:
        self.segments = [
            Segment(path="p1/chat.jsonl", modality="text", text="m1 · Dana: the inhaler", meta={"message_id": "m1"}),
            Segment(path="p1/calendar.jsonl", modality="text", text="e1 · pulmonology", meta={"event_id": "e1"}),
            Segment(path="p1/chat.jsonl", modality="text", text="m2 · Eli: done", meta={"message_id": "m2"}),
        ]

    def logs(self) -> list[Segment]:
        return self.segments

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Observation:
        raise AssertionError("full-context calls no tool")

    def search(self, query: str, k: int = 8, **filters: Any) -> Observation:
        raise AssertionError("full-context does not search")

    def terminal(self, **options: Any) -> Any:
        raise AssertionError("no terminal")


def test_full_context_retrieves_every_log_it_put_in_the_prompt() -> None:
    answer = solve("full-context", LogsEnv(), get_model("mock", outputs=["The inhaler (m1)."]), Budget())
    assert answer.stop == "answered" and answer.files == ["p1/chat.jsonl"]
    assert answer.retrieved == ["p1/chat.jsonl", "p1/calendar.jsonl"] and answer.touched == []
    assert [(s.kind, s.tool) for s in answer.trace] == [("tool", "logs"), ("model", None), ("answer", None)]
    too_long = asyncio.run(registry.get("agent", "full-context")(10).solve(
        Task(id="t1", question="?"), LogsEnv(), get_model("mock", outputs=["x"]), Budget()))  # fmt: skip
    assert too_long.stop == "no_answer" and too_long.retrieved == []


def test_old_episodes_without_the_lists_still_read(tmp_path: Path) -> None:
    old = {
        "format": "hippocamp-episode/1", "task_id": "t1", "agent": "terminal", "model": "mock", "epoch": 0,
        "question": QUESTION,
        "answer": {"text": "EUR 1,800.00", "files": [LEASE], "evidence": [{"file_path": LEASE}],
                   "trace": [{"index": 0, "kind": "tool", "tool": "terminal",
                              "arguments": {"command": f"return_txt '{LEASE}'"}, "observation": "..."}],
                   "usage": {"input_tokens": 1}, "stop": "answered"},
        "wall_s": 1.0, "model_s": 0.5, "harness_s": 0.5, "started": "2026-01-01T00:00:00Z",
        "finished": "2026-01-01T00:00:01Z",
    }  # fmt: skip
    path = tmp_path / "episodes.jsonl"
    path.write_text(json.dumps(old) + "\n", encoding="utf-8")
    [episode] = read_episodes(path).episodes
    assert episode.answer.files == [LEASE] and episode.answer.touched == [] and episode.answer.retrieved == []
    assert episode.answer.trace[0].files == []
    # a scorer can still derive the touched list of an old terminal trace
    assert touched_files(episode.answer.trace) == [LEASE]
