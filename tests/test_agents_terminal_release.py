"""``terminal-release``: the HippoCamp release's terminal-agent loop, scripted through the mock model over a
small fake terminal (what the loop decides) and over the emulated terminal (end to end)."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hippocamp.agents import make_agent
from hippocamp.agents.base import Budget, Task
from hippocamp.agents.filelists import paper_file_list, touched_files
from hippocamp.agents.terminal_release import (
    CONFIGS,
    FormatError,
    ReleaseSettings,
    TerminalReleaseAgent,
    cap_output,
    command_policy,
    image_parts,
    normalize_command,
    parse_response,
    scrub_base64,
    system_prompt,
)
from hippocamp.envs.base import Observation
from hippocamp.envs.sandbox import Sandbox, SandboxError
from hippocamp.models import get_model
from hippocamp.models.errors import ModelError

PREFIX = "This is output of terminal: "
#: a 1x1 PNG and its base64
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
PNG_B64 = base64.b64encode(PNG).decode()


def tool(command: str, thought: str = "look") -> str:
    call = json.dumps({"name": "terminal", "arguments": {"command": command}})
    return f"<think>{thought}</think>\n<tool>\n{call}\n</tool>"


def final(text: str) -> str:
    return f"<think>that is it</think>\n<answer>{text}</answer>"


class FakeTerminal:
    """What the agent needs of a terminal: ``run``, ``sandbox``, ``deadline``, ``close``."""

    def __init__(self, root: Path, answer: Callable[[str], str | Observation]):
        self.sandbox = Sandbox(root)
        self.deadline: float | None = None
        self.answer = answer
        self.ran: list[str] = []
        self.threads: list[int] = []
        self.closed = False

    def run(self, command: str, *, timeout: float | None = None) -> Observation:
        self.ran.append(command)
        self.threads.append(threading.get_ident())
        out = self.answer(command)
        return out if isinstance(out, Observation) else Observation(out)

    def close(self) -> None:
        self.closed = True


class FakeEnv:
    def __init__(self, terminal: FakeTerminal):
        self.term = terminal
        self.options: dict[str, Any] = {}

    def terminal(self, **options: Any) -> FakeTerminal:
        self.options = options
        return self.term


LISTING = json.dumps({"success": True, "count": 2, "data": ["Notes/rent.txt", "Pictures/cat.png"], "error": None})
RENT = json.dumps(
    {
        "success": True,
        "data": {"file_info": {}, "summary": "", "segments": [{"content": "Rent: EUR 900"}]},
        "error": None,
    }
)


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    (tmp_path / "Notes").mkdir()
    (tmp_path / "Notes" / "rent.txt").write_text("Rent: EUR 900\n")
    (tmp_path / "Pictures").mkdir()
    (tmp_path / "Pictures" / "cat.png").write_bytes(PNG)
    return tmp_path


def fake(profile: Path, outputs: dict[str, str] | None = None) -> FakeEnv:
    table = {"list_files": LISTING, "return_txt Notes/rent.txt": RENT, **(outputs or {})}
    return FakeEnv(FakeTerminal(profile, lambda command: table.get(command, "")))


def solve(env: Any, outputs: Any, agent: Any = "terminal-release", budget: Budget | None = None) -> tuple[Any, Any]:
    agent = make_agent(agent) if isinstance(agent, str) else agent
    model = get_model("mock", outputs=outputs)
    answer = asyncio.run(agent.solve(Task("t1", "How much is my rent?"), env, model, budget or Budget()))
    return answer, model.backend.requests


def last_user(request: Any) -> Any:
    return request.messages[-1]["content"]


# -- replies, commands and outputs -------------------------------------------------------------------------
def test_parse_response() -> None:
    assert parse_response(tool("ls Notes")).value == "ls Notes"
    assert parse_response(final("EUR 900")) == parse_response("<answer>\nEUR 900\n</answer>")
    assert parse_response("<think>x</think><answer>EUR 900").value == "EUR 900"  # unclosed: to the end
    # both blocks: the one opened first wins
    assert parse_response(tool("pwd") + "<answer>no</answer>").kind == "terminal"
    assert parse_response("<answer>yes</answer>" + tool("pwd")).kind == "answer"
    # the release's leniencies: a top-level command, "args", a Python literal, a bare JSON object
    assert parse_response('<tool>{"command": "pwd"}</tool>').value == "pwd"
    assert parse_response('<tool>{"name": "terminal", "args": {"command": "pwd"}}</tool>').value == "pwd"
    assert parse_response("<tool>{'name': 'terminal', 'arguments': {'command': 'pwd'}}</tool>").value == "pwd"
    assert parse_response('I will run {"command": "ls"} now').value == "ls"
    # braces inside JSON strings do not end the object
    assert parse_response(tool("grep -E 'a{2}|}' Notes/rent.txt")).value == "grep -E 'a{2}|}' Notes/rent.txt"
    for bad in (
        "I think the rent is high.",
        "ls Notes",  # a loose command line is not read (the release's fallback never takes effect)
        "<answer>  </answer>",
        '<tool>{"name": "bash", "arguments": {"command": "ls"}}</tool>',
        '<tool>{"name": "terminal", "arguments": {"command": ""}}</tool>',
        "<tool>not json</tool>",
    ):
        with pytest.raises(FormatError):
            parse_response(bad)


def test_normalize_command_quotes_paths_with_spaces() -> None:
    assert normalize_command("  return_txt Documents/My Lease.pdf ") == 'return_txt "Documents/My Lease.pdf"'
    assert normalize_command("return_metadata Bills/A&B.pdf") == 'return_metadata "Bills/A&B.pdf"'
    assert normalize_command("return_img Docs/My Lease.pdf --page 2") == 'return_img "Docs/My Lease.pdf" --page 2'
    # as in the release, an unquoted --page after return_txt's path is taken into the path
    assert normalize_command("return_txt a.pdf --page 2") == 'return_txt "a.pdf --page 2"'
    # quoted, composed or plain commands are left alone
    for same in ("return_txt 'My Lease.pdf'", "return_txt a b | grep x", "ls Notes", "return_txt Notes/rent.txt"):
        assert normalize_command(same) == same


def test_command_policy() -> None:
    assert command_policy("list_files | head -5")  # raw JSON piped on
    assert command_policy("list_files '*.pdf' | grep 2024")
    assert not command_policy("list_files | python3 -c 'import json,sys; print(json.load(sys.stdin))'")
    assert not command_policy("list_files | jq -r '.data[]'")
    assert command_policy("grep -i rent Documents/lease.pdf")
    assert command_policy("grep -ri rent *.pdf")
    assert not command_policy("return_txt Documents/lease.pdf | grep -i rent")
    assert command_policy("return_txt Documents/lease.pdf --page 2")
    assert command_policy("return_txt a.pdf b.pdf") and command_policy("return_metadata")
    assert "quot" in command_policy("grep 'unbalanced Notes/rent.txt")
    assert command_policy("echo '" + '"segments": ' + "x" * 1300 + "' | grep rent")  # pasted output grepped
    assert not command_policy("ls Notes") and not command_policy("return_txt Notes/rent.txt")


def test_cap_output_keeps_the_head() -> None:
    assert cap_output("x" * 12_000, 12_000) == "x" * 12_000
    cut = cap_output("a" * 12_000 + "b" * 5_000, 12_000)
    assert cut.startswith("a" * 12_000) and "b" not in cut and cut.endswith("[truncated]")


def test_scrub_base64() -> None:
    text = json.dumps({"success": True, "image_b64": "QUJD" * 3000, "image_b64_list": ["QUJD" * 3000, "RA=="]})
    scrubbed = scrub_base64(text)
    assert "QUJD" not in scrubbed and "<image 12 KB>" in scrubbed
    assert scrub_base64('{"file_b64":"' + "QUJD" * 500) == '{"file_b64":"<file 2 KB>'  # cut mid-value
    assert scrub_base64(LISTING) == LISTING


# -- configurations ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_each_configuration_lists_its_tools(config: str) -> None:
    txt, img = CONFIGS[config]
    prompt = system_prompt(config)
    for always in ("return_metadata", "return_ori", "list_files", "hhelp", "This is output of terminal:"):
        assert always in prompt
    assert ("Command: return_txt" in prompt) == txt and ("Command: return_img" in prompt) == img
    number = config[-1]
    assert make_agent(f"terminal-release:{number}").config == config
    assert make_agent(f"terminal-release:{config}").config == config


def test_the_default_configuration_and_bad_arguments() -> None:
    assert make_agent("terminal-release").config == "config0" and not make_agent("terminal-release").vision
    assert make_agent("terminal-release:2:vision").vision and TerminalReleaseAgent(vision=True).vision
    with pytest.raises(ValueError):
        make_agent("terminal-release:config7")
    with pytest.raises(ValueError):
        make_agent("terminal-release:1:2")


@pytest.mark.parametrize(("config", "command"), [("config1", "return_txt Notes/rent.txt"),
                                                 ("config3", "return_img Pictures/cat.png"),
                                                 ("config1", "img Pictures/cat.png")])  # fmt: skip
def test_a_disabled_tool_is_corrected_without_running(profile: Path, config: str, command: str) -> None:
    env = fake(profile)
    answer, requests = solve(env, [tool(command), final("unknown")], f"terminal-release:{config}")
    txt, img = CONFIGS[config]
    assert env.term.ran == [f"set_flags {int(txt)} {int(img)}"]  # the configuration's flags, then nothing
    disabled = "return_txt" if "txt" in command else "return_img"
    correction = last_user(requests[1])
    assert disabled in correction and "configuration" in correction and PREFIX not in correction
    step = next(s for s in answer.trace if s.kind == "tool")
    assert step.arguments["blocked"] == f"{disabled}_disabled" and answer.stop == "answered"


# -- whole episodes ----------------------------------------------------------------------------------------
def test_a_whole_episode(profile: Path) -> None:
    env = fake(profile)
    outputs = [tool("list_files"), tool("return_txt Notes/rent.txt", "read it"), final("EUR 900 a month")]
    answer, requests = solve(env, outputs)
    assert answer.stop == "answered" and answer.text == "EUR 900 a month"
    assert env.term.ran == ["set_flags 1 1", "list_files", "return_txt Notes/rent.txt"] and env.term.closed
    assert env.options["budget_chars"] > 12_000  # the agent cuts the output itself
    system = requests[0].messages[0]
    assert system["role"] == "system" and "Command: return_txt" in system["content"]
    assert last_user(requests[0]) == "Question: How much is my rent?"
    assert last_user(requests[1]) == PREFIX + LISTING and last_user(requests[2]) == PREFIX + RENT
    assert [m["role"] for m in requests[2].messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert all(r.max_tokens == 1024 and r.temperature == 0 for r in requests)
    tools = [s for s in answer.trace if s.kind == "tool"]
    assert [s.arguments["command"] for s in tools] == ["list_files", "return_txt Notes/rent.txt"]
    assert tools[1].observation == RENT
    assert answer.touched == ["Notes/rent.txt"] and answer.files == ["Notes/rent.txt"]
    assert answer.escapes == 0


def test_a_format_violation_corrected_within_the_retries(profile: Path) -> None:
    env = fake(profile)
    outputs = ["The rent is probably in a note.", "still no tags", tool("return_txt Notes/rent.txt"), final("EUR 900")]
    answer, requests = solve(env, outputs, budget=Budget(max_steps=2))  # retries are not steps
    assert answer.stop == "answered" and answer.text == "EUR 900"
    assert env.term.ran == ["set_flags 1 1", "return_txt Notes/rent.txt"]
    retry = last_user(requests[1])
    assert "FORMAT" in retry and '"name":"terminal"' in retry and last_user(requests[2]) == retry
    # the history keeps the refused replies and the corrections
    assert requests[2].messages[2]["content"] == "The rent is probably in a note."
    assert last_user(requests[3]) == PREFIX + RENT
    assert [s.tool for s in answer.trace if s.kind == "tool"] == ["protocol", "protocol", "terminal"]


def test_exhausted_format_retries_end_the_step_not_the_episode(profile: Path) -> None:
    env = fake(profile)
    outputs = ["no tags", "no tags", "no tags", final("EUR 900")]
    answer, requests = solve(env, outputs)
    assert len(requests) == 4 and env.term.ran == ["set_flags 1 1"]
    retry, final_correction = last_user(requests[1]), last_user(requests[3])
    assert last_user(requests[2]) == retry and final_correction != retry
    assert "<answer>" in final_correction and "<tool>" in final_correction  # both shapes spelled out
    assert answer.stop == "answered" and answer.text == "EUR 900"
    # a reply that never follows the format uses up the steps, three model calls each
    answer, requests = solve(fake(profile), lambda request: "no tags", budget=Budget(max_steps=2))
    assert answer.stop == "max_steps" and len(requests) == 6


def test_the_output_is_cut_at_12000_characters(profile: Path) -> None:
    long = "a" * 12_000 + "b" * 18_000
    env = fake(profile, {"cat Notes/rent.txt": long})
    answer, requests = solve(env, [tool("cat Notes/rent.txt"), final("done")])
    seen = last_user(requests[1])
    assert seen.startswith(PREFIX + long[:12_000]) and "b" not in seen  # the head only
    assert len(seen) < len(PREFIX) + 12_100 and seen.endswith("[truncated]")
    assert next(s for s in answer.trace if s.kind == "tool").observation == seen[len(PREFIX) :]


def test_list_files_pipe_and_other_policies_are_corrected_without_running(profile: Path) -> None:
    env = fake(profile, {"list_files | jq -r '.data[]'": "Notes/rent.txt"})
    outputs = [
        tool("list_files | head -3"),
        tool("set_flags 1 1"),
        tool("grep -i rent Documents/lease.pdf"),
        tool("list_files | jq -r '.data[]'"),
        final("EUR 900"),
    ]
    answer, requests = solve(env, outputs)
    assert env.term.ran == ["set_flags 1 1", "list_files | jq -r '.data[]'"]  # the first is the agent's own
    assert "list_files" in last_user(requests[1]) and ".data" in last_user(requests[1])
    assert "set_flags" in last_user(requests[2])
    assert "PDF" in last_user(requests[3]) and "return_txt" in last_user(requests[3])
    assert last_user(requests[4]) == PREFIX + "Notes/rent.txt"
    blocked = [s.arguments.get("blocked") for s in answer.trace if s.kind == "tool"]
    assert blocked == ["command_policy_blocked", "set_flags_not_allowed", "command_policy_blocked", None]


def test_touched_files_follow_the_release_rule(profile: Path) -> None:
    env = fake(profile)
    outputs = [
        tool("return_txt Notes/rent.txt"),
        tool("cat Pictures/cat.png Notes/x.md"),
        tool("return_metadata Pictures/cat.png"),
        tool('return_txt "Documents/lease.pdf" --page 2'),  # refused: its file counts, as the release logs it
        tool("return_metadata Notes/My Rent.txt"),  # normalised: the quoted path is one file
        final("EUR 900"),
    ]
    answer, _ = solve(env, outputs)
    # the return_* files that ran, sorted; then every command's files in order, each once
    assert answer.touched == [
        "Notes/My Rent.txt",
        "Notes/rent.txt",
        "Pictures/cat.png",
        "Notes/x.md",
        "Documents/lease.pdf",
    ]
    assert set(answer.touched) == set(touched_files(answer.trace))
    assert answer.files == ["Notes/rent.txt", "Pictures/cat.png"]  # those that ran and exist
    assert paper_file_list("terminal-release:2") == "touched"


def test_repeated_empty_greps_get_a_notice(profile: Path) -> None:
    env = fake(profile)  # every grep finds nothing
    outputs = [tool("grep -ri zebra Notes")] * 4 + [tool("grep -ri lion Notes"), final("none")]
    _, requests = solve(env, outputs)
    seen = [last_user(r) for r in requests[1:]]
    assert all(s.startswith(PREFIX + "(no matches)") for s in seen)
    assert [len(s) > len(PREFIX + "(no matches)") for s in seen] == [False, False, False, True, False]


def test_images_are_attached_for_a_vision_model_only(profile: Path) -> None:
    payload = json.dumps({
        "success": True, "image_path": "/hippocamp/output/a.jpg", "image_paths": ["/hippocamp/output/a.jpg",
        "/hippocamp/output/b.png", "/hippocamp/output/c.png"], "image_b64": PNG_B64,
        "image_b64_list": [PNG_B64, PNG_B64, PNG_B64], "page_count": 3, "error": None,
    })  # fmt: skip
    command = "return_img Pictures/cat.png"
    outputs = [tool(command), final("a cat")]
    answer, requests = solve(fake(profile, {command: payload}), outputs, TerminalReleaseAgent(vision=True))
    content = last_user(requests[1])
    assert isinstance(content, list) and content[0] == {"type": "text", "text": PREFIX + payload}
    urls = [part["image_url"]["url"] for part in content[1:]]
    assert urls == [f"data:image/jpeg;base64,{PNG_B64}", f"data:image/png;base64,{PNG_B64}"]  # two at most
    # the images stay in the history; the episode's record never holds the payload
    assert isinstance(requests[1].messages[-1]["content"], list)
    record = answer.model_dump_json()
    assert PNG_B64 not in record and "<image" in record
    # a text model gets the text alone
    answer, requests = solve(fake(profile, {command: payload}), outputs, "terminal-release")
    assert last_user(requests[1]) == PREFIX + payload and PNG_B64 not in answer.model_dump_json()


def test_images_of_an_answer_the_terminal_cut_come_from_its_data() -> None:
    carried = [{"image_b64": PNG_B64, "mime": "image/png", "image_path": "/hippocamp/output/a.png"}]
    cut = '{"success":true,"image_b64":"' + PNG_B64[:10]
    parts, markers = image_parts("return_img a.pdf", cut, PREFIX + cut, ReleaseSettings(), carried)
    assert [p["type"] for p in parts] == ["text", "image_url"] and markers == ["<image 1 KB>"]
    assert image_parts("ls", cut, cut, ReleaseSettings(), carried) == ([], [])  # only for return_img
    failed = json.dumps({"success": False, "image_b64": PNG_B64, "error": "no such file"})
    assert image_parts("return_img a.pdf", failed, failed, ReleaseSettings()) == ([], [])


def test_return_ori_of_an_image_is_attached_too(profile: Path) -> None:
    payload = json.dumps({"success": True, "file_path": "Pictures/cat.png", "file_b64": PNG_B64, "error": None})
    outputs = [tool("return_ori Pictures/cat.png"), final("a cat")]
    _, requests = solve(fake(profile, {"return_ori Pictures/cat.png": payload}), outputs, "terminal-release:vision")
    content = last_user(requests[1])
    assert content[1]["image_url"]["url"] == f"data:image/png;base64,{PNG_B64}"


# -- budgets and failures ----------------------------------------------------------------------------------
def test_a_model_failure_keeps_the_trace(profile: Path) -> None:
    answer, _ = solve(fake(profile), [tool("list_files"), ModelError("server went away")])
    assert answer.stop == "error" and "server went away" in answer.error
    assert [s.kind for s in answer.trace if s.kind != "note"] == ["model", "tool"]


def test_steps_and_commands_run_off_the_loop_under_the_episode_clock(profile: Path) -> None:
    env = fake(profile)
    answer, _ = solve(env, lambda request: tool("list_files"), budget=Budget(max_steps=3, max_seconds=30))
    assert answer.stop == "max_steps" and env.term.ran == ["set_flags 1 1"] + ["list_files"] * 3
    assert all(thread != threading.get_ident() for thread in env.term.threads)
    assert env.term.deadline is not None and env.term.closed


def test_escape_attempts_are_counted(profile: Path) -> None:
    env = fake(profile)

    def escaping(command: str) -> Observation:
        try:
            env.term.sandbox.resolve(command.split()[-1])  # the sandbox refuses and counts a path out
        except SandboxError as exc:
            return Observation(f"cat: {exc}", ok=False, error=str(exc), escaped=True)
        return Observation("")

    env.term.answer = escaping
    answer, _ = solve(env, [tool("cat ../../etc/passwd"), tool("cat Notes/rent.txt"), final("no")])
    assert answer.escapes == 1 and answer.stop == "answered"


# -- end to end, over the emulated terminal --------------------------------------------------------------------
def _first(env: Any, pattern: str) -> str:
    listing = json.loads(env.terminal().run(f"list_files '{pattern}'").text)
    assert listing["success"] and listing["data"], pattern
    return str(listing["data"][0])


def test_end_to_end_over_the_emulated_terminal(env: Any) -> None:
    note = _first(env, "*.txt")
    outputs = [tool("list_files '*.txt'"), tool(f'return_txt "{note}"'), tool("cat ../../../etc/passwd"), final("x")]
    answer, requests = solve(env, outputs)
    assert answer.stop == "answered" and answer.escapes >= 1
    listing = last_user(requests[1])
    assert listing.startswith(PREFIX) and note in listing
    text = json.loads(last_user(requests[2])[len(PREFIX) :])
    assert text["success"] and {"file_info", "summary", "segments"} <= set(text["data"])
    assert "root:" not in last_user(requests[3])
    assert answer.touched[0] == note and answer.files == [note]


def test_end_to_end_flags_and_images(env: Any) -> None:
    pdf = _first(env, "*.pdf")
    # config1: the agent refuses return_txt itself, and the terminal's flags refuse it inside a chain
    outputs = [tool(f'return_txt "{pdf}"'), tool(f'pwd; return_txt "{pdf}"'), final("x")]
    answer, requests = solve(env, outputs, "terminal-release:1")
    assert "return_txt" in last_user(requests[1]) and PREFIX not in last_user(requests[1])
    chained = last_user(requests[2])
    assert chained.startswith(PREFIX) and "disabled" in chained and '"segments"' not in chained
    # a vision model sees the rendered page; the episode's record holds a marker, not the image
    outputs = [tool(f'return_img "{pdf}" --page 1'), final("a page")]
    answer, requests = solve(env, outputs, "terminal-release:vision")
    content = last_user(requests[1])
    assert isinstance(content, list) and content[0]["text"].startswith(PREFIX)
    url = content[1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    payload = url.split(",", 1)[1]
    assert base64.b64decode(payload).startswith(b"\x89PNG")
    assert len(content[0]["text"]) <= len(PREFIX) + 12_000 + len("\n...[truncated]")
    assert payload[:200] not in answer.model_dump_json() and "<image" in answer.model_dump_json()


# -- a real model --------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_an_episode_against_a_real_server(server_url: str, profile: Path) -> None:
    """SmolLM2 over llama.cpp's server: the loop sends the release's prompt and ends cleanly. The prompt
    (about 2,500 tokens) does not fit a 2,048-token context (CI's server): then the server's refusal ends
    the episode as a model error, with its trace and the reason."""
    model = get_model(f"openai-compatible:smollm2@{server_url}")
    budget = Budget(max_steps=2, max_seconds=240)
    env = fake(profile)
    answer = asyncio.run(make_agent("terminal-release:1").solve(Task("t1", "How much is my rent?"), env, model, budget))
    assert env.term.ran[0] == "set_flags 0 0" and env.term.closed
    if answer.stop == "error":
        assert "context" in (answer.error or "").lower(), answer.error
    else:
        assert answer.stop in ("answered", "max_steps", "max_tokens", "timeout", "max_evidence"), answer.error
        models = [s for s in answer.trace if s.kind == "model"]
        assert models and all(s.output_tokens > 0 for s in models)
