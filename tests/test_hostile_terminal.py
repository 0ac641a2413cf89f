"""The terminal against hostile commands and hostile profiles: nothing hangs it, walks it out of the
profile, blows up its memory or shows a host path; an agent episode fed all of it ends on time."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hippocamp.agents.base import Budget
from hippocamp.envs import Observation, Terminal
from hippocamp.envs.bounded import TerminalLimits
from hippocamp.models import get_model
from hippocamp.runs import SuiteOptions, load_suite, read_episodes, run

pytestmark = pytest.mark.hostile

DEPTH = 1100


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    root = tmp_path / "Mira"
    (root / "Docs").mkdir(parents=True)
    (root / "notes.txt").write_text("hello world\nDeposit: EUR 2,900\n", encoding="utf-8")
    (root / "Docs/a.txt").write_text("alpha\n", encoding="utf-8")
    return root


def timed(t: Terminal, line: str, seconds: float = 2.0) -> Observation:
    """Run a line; it must answer within ``seconds``, with valid UTF-8 and no host path."""
    began = time.monotonic()
    obs = t.run(line)
    assert time.monotonic() - began < seconds, line
    obs.text.encode("utf-8")
    (obs.error or "").encode("utf-8")
    host = str(t.sandbox.root.parent)
    assert host not in obs.text and host not in (obs.error or ""), (line, obs)
    return obs


# -- special files ------------------------------------------------------------------------------------
@pytest.mark.timeout(10)
def test_fifo_and_socket_are_refused_without_being_opened(profile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.mkfifo(profile / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    with contextlib.suppress(OSError):  # a path too long for a socket here: the FIFO still covers it
        sock.bind(str(profile / "sock"))
    opened: list[str] = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda path, *a, **k: opened.append(os.fspath(path)) or real_open(path, *a, **k))
    t = Terminal(profile)
    for line in ["cat pipe", "head -n 1 pipe", "tail pipe", "grep x pipe", "wc -l pipe", "sort pipe", "uniq pipe",
                 "cat -n notes.txt pipe"]:  # fmt: skip
        obs = timed(t, line)
        assert not obs.ok and "pipe: refused: a fifo (named pipe), not a regular file" in obs.text, line
    assert "not a regular file" in json.loads(timed(t, "return_txt pipe").text)["error"]
    if (profile / "sock").exists():
        assert "refused: a socket" in timed(t, "cat sock").text
    assert timed(t, "grep -r hello .").text == "./notes.txt:hello world"  # walked past, not read
    assert timed(t, "file pipe").text == "pipe: fifo (named pipe)"
    assert "Type: fifo (named pipe)" in timed(t, "stat pipe").text
    assert timed(t, "find . -type p").text == "./pipe"
    assert "pipe" not in json.loads(timed(t, "list_files").text)["data"]
    assert not [p for p in opened if p.endswith(("pipe", "sock"))]
    sock.close()


# -- patterns ------------------------------------------------------------------------------------------
@pytest.mark.timeout(10)
def test_catastrophic_regexes_run_in_linear_time(profile: Path) -> None:
    (profile / "evil.txt").write_text("a" * 100_000 + "b\n" + "x" * 50_000 + "\n", encoding="utf-8")
    t = Terminal(profile)
    for line in [
        "grep -E '(a+)+$' evil.txt",
        "grep -E '(a|aa)+$' evil.txt",
        "grep '\\(a*\\)*c' evil.txt",
        "grep -E '(x+x+)+y' evil.txt",
        "grep -cE '(a+)+$' evil.txt",
        "grep -vE '(a+)+$' evil.txt | wc -l",
        "grep -owE '(a+)+c' evil.txt",
        "grep -xiE '(a+)+' evil.txt",
        "grep -rE '(a+)+$' .",
        "cat evil.txt | grep -E '(a+)+$'",
    ]:
        obs = timed(t, line)
        assert obs.error is None or "invalid" not in obs.error, line
    assert timed(t, "grep -cE '(a+)+b$' evil.txt").text == "1"
    back = timed(t, "grep '\\(a\\)\\1' evil.txt")
    assert not back.ok and "backreferences" in back.text and "not supported" in back.text
    look = timed(t, "grep -E '(?<=a)b' evil.txt")
    assert not look.ok and "look-around" in look.text


@pytest.mark.timeout(10)
def test_backtracking_globs_run_in_linear_time(profile: Path) -> None:
    (profile / ("a" * 200)).write_text("x\n", encoding="utf-8")
    pattern = "*a" * 30 + "*c"
    t = Terminal(profile)
    assert timed(t, f"ls {pattern}").error == f"ls: {pattern}: No such file or directory"
    assert json.loads(timed(t, f"list_files '{pattern}'").text)["count"] == 0
    assert json.loads(timed(t, f"list_files '**/{pattern}'").text)["count"] == 0
    assert timed(t, f"find . -name '{pattern}'").text == ""
    assert timed(t, f"grep -rl --include='{pattern}' x .").text == ""
    assert timed(t, "ls " + "*a" * 30).text == "a" * 200  # and a matching one still matches


@pytest.mark.timeout(10)
def test_symlink_loops_do_not_explode_globs_or_walks(profile: Path) -> None:
    for name in ("l1", "l2", "l3"):
        (profile / name).symlink_to(".")
    (profile / "Docs/up").symlink_to("..")
    t = Terminal(profile)
    obs = timed(t, "echo */*/*/*/*/*/*/*/*")
    assert obs.ok and len(obs.text) < 200  # links are never descended into: nothing 9 deep
    assert timed(t, "echo */*").text == "Docs/a.txt Docs/up"
    assert timed(t, "echo Docs/up/*").text == "Docs/up/*"  # not followed back into the tree
    assert timed(t, "find . | wc -l").text == "8"
    assert len(timed(t, "ls -R").text) < 500
    assert timed(t, "grep -rc alpha .").text.split("\n") == ["./Docs/a.txt:1", "./notes.txt:0"]


@pytest.mark.timeout(10)
def test_globs_above_the_root_never_touch_the_host(profile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = Terminal(profile)
    root = str(t.sandbox.root)
    touched: list[str] = []
    fds = Path("/proc/self/fd")
    proc = fds.is_dir()  # looked at before os is spied on

    def where(path: Any, dir_fd: int | None) -> str:
        """The absolute path a call looks at (a descriptor through /proc, as glob's root_dir uses them)."""
        if isinstance(path, int):
            return os.readlink(fds / str(path)) if proc else root
        path = os.fsdecode(os.fspath(path))
        if dir_fd is not None and not os.path.isabs(path) and proc:
            path = os.path.join(os.readlink(fds / str(dir_fd)), path)
        return os.path.normpath(os.path.abspath(path))

    for name in ("scandir", "listdir", "lstat", "stat", "open"):
        real = getattr(os, name)

        def spy(path: Any = ".", *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            touched.append(where(path, kwargs.get("dir_fd")))
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(os, name, spy)
    for line in ["ls /../../*/*", "cat /../../*/*", "grep -r root /../../*/*", "find /../../*", "head ../*/passwd"]:
        obs = timed(t, line, 1.0)
        assert not obs.ok and obs.escaped and "refused: '..' goes above the profile root" in obs.text, line
    assert timed(t, "echo /../../*/*").text == "/../../*/*"  # kept literally, never expanded
    outside = [p for p in touched if p != root and not p.startswith(root + os.sep)]
    monkeypatch.undo()
    assert outside == []


@pytest.mark.timeout(10)
def test_invalid_ranges_are_messages_not_exceptions(profile: Path) -> None:
    t = Terminal(profile)
    listed = json.loads(timed(t, "list_files '[z-a]'").text)
    assert listed["success"] is False and "invalid character class range" in listed["error"]
    assert timed(t, "ls [z-a]").error == "ls: [z-a]: No such file or directory"  # like bash: no match
    assert timed(t, "find . -name '[z-a]'").text == ""
    assert "invalid regular expression" in (timed(t, "grep '[z-a]' notes.txt").error or "")
    assert "invalid character class range" in (timed(t, "grep -r --include='[z-a]' x .").error or "")


# -- depth and size ---------------------------------------------------------------------------------------
@pytest.fixture
def deep(profile: Path) -> Iterator[Path]:
    """``d/d/.../d/deep.txt``, 1,100 folders deep (built and removed without recursion)."""
    here = profile
    for _ in range(DEPTH):
        here = here / "d"
        here.mkdir()
    (here / "deep.txt").write_text("bottom\n", encoding="utf-8")
    yield profile
    (here / "deep.txt").unlink()
    for _ in range(DEPTH):
        here.rmdir()
        here = here.parent


@pytest.mark.timeout(30)
def test_a_1100_level_tree_for_every_recursive_command(deep: Path) -> None:
    t = Terminal(deep, budget_chars=10_000_000)
    bottom = "d/" * DEPTH + "deep.txt"
    assert timed(t, "find . -name deep.txt", 5).text == "./" + bottom
    assert timed(t, "find . -type d | wc -l", 5).text == str(DEPTH + 2)  # ., Docs and the d's
    assert timed(t, "find / -maxdepth 3 -type d | wc -l", 5).text == "5"
    assert timed(t, "ls -R | tail -n 1", 5).text == "deep.txt"
    assert timed(t, "grep -r bottom .", 5).text == f"./{bottom}:bottom"
    assert timed(t, "grep -rl bottom d", 5).text == bottom
    assert json.loads(timed(t, "list_files '**/deep.txt'", 5).text)["data"] == [bottom]
    assert timed(t, f"cd {'d/' * DEPTH} && cat deep.txt && pwd | wc -c", 5).text == f"bottom\n{2 * DEPTH + 1}"
    assert timed(t, "cd / && cat " + "*/" * DEPTH + "deep.txt", 5).text == "bottom"  # a glob 1,100 levels deep
    assert timed(t, f"file {bottom}; stat {bottom} | head -n 1", 5).text.startswith(f"{bottom}: ASCII text")


@pytest.mark.timeout(60)
def test_a_70_mb_file_is_read_in_part_with_bounded_memory(profile: Path) -> None:
    line = b"x" * 99 + b"\n"
    with (profile / "big.txt").open("wb") as fh:
        for _ in range(70):
            fh.write(line * 10_000)  # 70 MB in all
    t = Terminal(profile)
    tracemalloc.start()
    try:
        began = time.monotonic()
        for _ in range(3):
            obs = t.run("cat big.txt")
            assert obs.truncated and "only the first 8.0MB of 67MB were read" in obs.text  # 70e6 bytes
        assert t.run("tail -n 1 big.txt").text.endswith("\n" + "x" * 99)
        assert t.run("head -n 1 big.txt").text == "x" * 99
        counted = t.run("cat big.txt | wc -l").text.split("\n")[-1]
        assert int(counted) == 8 * 1024 * 1024 // 100  # what was read, and the note says it was in part
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 120 * 1024 * 1024, f"peak {peak / 1e6:.0f} MB"
    assert time.monotonic() - began < 30


@pytest.mark.timeout(10)
def test_a_command_stops_at_its_deadline(profile: Path) -> None:
    (profile / "many.txt").write_bytes(b"x\n" * 2_000_000)
    t = Terminal(profile, limits=TerminalLimits(timeout=0.05))
    obs = timed(t, "cat -n many.txt | sort -r; echo after")
    assert not obs.ok and "cat: timed out after 0.05 s" in obs.text and "after" not in obs.text.split("\n")
    t = Terminal(profile)
    t.deadline = time.monotonic() - 1  # the episode is over
    assert "timed out after 0 s (the time left in the episode)" in timed(t, "grep -c x many.txt").text
    obs = Terminal(profile).run("cat -n many.txt | tail -n 1", timeout=0.01)
    assert "timed out after 0.01 s (the time left for it)" in obs.text


# -- links, names, redirections ---------------------------------------------------------------------------------
@pytest.mark.timeout(10)
def test_hard_link_to_a_file_outside_is_refused(profile: Path, tmp_path: Path) -> None:
    outside = tmp_path / "etc"
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
    try:
        os.link(outside / "passwd", profile / "passwd")
        os.link(profile / "notes.txt", profile / "Docs/notes-again.txt")  # both links inside: fine
    except OSError:
        pytest.skip("no hard links on this filesystem")
    t = Terminal(profile)
    lines = ["cat passwd", "head passwd", "grep root passwd", "wc passwd", "file passwd", "stat passwd",
             "return_txt passwd", "return_ori passwd", "cat Docs/../passwd"]  # fmt: skip
    for line in lines:
        obs = timed(t, line)
        assert not obs.ok and obs.escaped and "hard link to a file outside the profile" in obs.text, line
        assert "root:" not in obs.text
    assert t.sandbox.escapes == len(lines)
    assert "root:" not in timed(t, "grep -r root . ; cat *").text
    assert timed(t, "cat Docs/notes-again.txt | head -n 1").text == "hello world"
    assert Terminal(profile, hard_links="any").run("cat passwd").text.startswith("root:")


@pytest.mark.timeout(10)
def test_over_long_names_never_show_the_host_path(profile: Path) -> None:
    long = "a" * 300
    t = Terminal(profile)
    for line in [f"cat {long}", f"ls {long}", f"cd {long}", f"find {long}", f"stat {long}", f"file {long}",
                 f"grep x {long}", f"head Docs/{long}/x", f"wc -l {long}", f"return_txt {long}",
                 f"return_metadata Docs/{long}", f"ls Docs/{long}*", f"cat {long}/*"]:  # fmt: skip
        obs = timed(t, line)
        assert not obs.ok and "File name too long" in (obs.error or ""), line
    assert timed(t, f"echo {long} | wc -c").text == "301"


@pytest.mark.timeout(10)
def test_stderr_to_stdout_works_as_documented(profile: Path) -> None:
    t = Terminal(profile)
    assert timed(t, "ls 2>&1").text == timed(t, "ls").text == "Docs\nnotes.txt"
    assert timed(t, "ls 2>&1").ok
    assert timed(t, "ls nope 2>&1 | grep -c 'No such'").text == "1"  # stderr goes down the pipe
    assert timed(t, "ls nope 2>&1").text == "ls: nope: No such file or directory"
    assert "redirection" in (timed(t, "ls 2>&2").error or "")


@pytest.mark.timeout(10)
def test_undecodable_file_names_are_shown_escaped(profile: Path) -> None:
    try:
        (profile / os.fsdecode(b"bad\xff\xfe.txt")).write_text("found me\n", encoding="utf-8")
    except OSError:
        pytest.skip("this filesystem refuses names that are not UTF-8")
    t = Terminal(profile)
    assert "bad\\xff\\xfe.txt" in timed(t, "ls").text.split("\n")
    assert "./bad\\xff\\xfe.txt" in timed(t, "find .").text.split("\n")
    assert timed(t, "grep -rl found .").text == "./bad\\xff\\xfe.txt"
    listed = json.loads(timed(t, "list_files").text)  # valid JSON, valid UTF-8
    assert "bad\\xff\\xfe.txt" in listed["data"]
    assert timed(t, "cat bad*").text == "found me"
    assert timed(t, "cat 'bad\\xff\\xfe.txt'").text == "found me"  # the shown name is accepted back
    meta = json.loads(timed(t, "return_metadata 'bad\\xff\\xfe.txt'").text)["metadata"]
    assert meta["file_path"] == "bad\\xff\\xfe.txt"
    assert timed(t, "ls -l | grep bad").text.endswith("bad\\xff\\xfe.txt")
    assert timed(t, "echo '\udcff\ud800'").text == "\\xff\\ud800"  # a lone surrogate typed by the model
    assert "nope\\xff" in (timed(t, "cat nope\udcff").error or "")


# -- an episode ---------------------------------------------------------------------------------------------
HOSTILE = [
    "cat pipe",
    "grep -E '(a+)+$' evil.txt",
    "echo */*/*/*/*/*/*/*/*",
    "ls /../../*/*",
    "list_files '[z-a]'",
    "cat big.txt",
    "cat passwd",
    "cat " + "a" * 300,
    "ls 2>&1",
    "cat -n many.txt | sort -r | uniq -c",  # seconds of work: longer than the episode has left
]


def _tool(command: str) -> str:
    return f'<think>try</think><tool>{{"name": "terminal", "arguments": {{"command": {json.dumps(command)}}}}}</tool>'


@pytest.mark.timeout(60)
def test_a_terminal_episode_fed_hostile_commands_ends_on_time(profile_dir: Path, tmp_path: Path) -> None:
    options = SuiteOptions(ocr=False, asr=False, embed=False, store=tmp_path / "store.sqlite", workers=1,
                           terminal="emulated")  # fmt: skip
    suite = load_suite(profile_dir, options)
    root = suite.root
    os.mkfifo(root / "pipe")
    (root / "evil.txt").write_text("a" * 100_000 + "b\n", encoding="utf-8")
    for name in ("l1", "l2", "l3"):
        (root / name).symlink_to(".")
    with (root / "big.txt").open("wb") as fh:
        fh.truncate(70 * 1024 * 1024)  # sparse
    (root / "many.txt").write_bytes(b"x\n" * 3_000_000)
    (tmp_path / "passwd").write_text("root:x:0:0\n", encoding="utf-8")
    with contextlib.suppress(OSError):
        os.link(tmp_path / "passwd", root / "passwd")
    turns = iter(range(10_000))
    model = get_model("mock", outputs=lambda request: _tool(HOSTILE[next(turns) % len(HOSTILE)]))
    budget = Budget(max_steps=100, max_seconds=3.0)
    out = tmp_path / "run"
    began = time.monotonic()
    try:
        summary = asyncio.run(run(suite, "terminal", model, out=out, limit=1, budget=budget, concurrency=1))
    finally:
        suite.close()
    assert time.monotonic() - began < budget.max_seconds + 5
    episodes = read_episodes(out / "episodes.jsonl").episodes
    assert summary.done == 1 and len(episodes) == 1
    answer = episodes[0].answer
    assert answer.stop == "timeout" and "wall clock" in (answer.error or "")
    observations = [s.observation or "" for s in answer.trace if s.kind == "tool"]
    assert len(observations) >= len(HOSTILE) - 1
    assert "refused: a fifo" in observations[0]
    assert all(str(tmp_path) not in o for o in observations)
    assert any("timed out after" in o for o in observations)  # the long command stopped at the budget
