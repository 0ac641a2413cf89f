"""The external agent: a command (stdin/stdout JSON) or an HTTP endpoint."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from hippocamp.agents import Budget, Task, make_agent
from hippocamp.envs.files import FilesEnv
from hippocamp.registry import UnknownPluginError

AGENT = """
import json, sys
req = json.load(sys.stdin)
root = req["profile_root"]
print(json.dumps({
    "answer": "asked: " + req["task"]["question"],
    "files": ["Notes/gym routine.md", root + "/Notes/gym routine.md", "../../etc/passwd", "/etc/passwd"],
    "evidence": [{"file_path": "Notes/gym routine.md", "locator": {"unit": "line", "position": 3}, "text": "Gym"}],
    "usage": {"input_tokens": 12, "output_tokens": 3, "cost_usd": None},
}))
"""


def solve(spec: str, env: FilesEnv, budget: Budget | None = None) -> Any:
    return asyncio.run(make_agent(spec).solve(Task("t", "What is my routine?"), env, None, budget or Budget()))


def test_command_agent(env: FilesEnv, tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    answer = solve(f"external:cmd:{sys.executable} {script}", env)
    assert answer.stop == "answered" and answer.text == "asked: What is my routine?"
    assert answer.files == ["Notes/gym routine.md"] and answer.escapes == 2
    assert answer.evidence[0].locator == {"unit": "line", "position": 3}
    assert answer.usage.input_tokens == 12 and answer.usage.cost_usd is None


def test_command_failures(env: FilesEnv, tmp_path: Path) -> None:
    crash = tmp_path / "crash.py"
    crash.write_text("import sys; sys.stderr.write('boom happened'); sys.exit(3)")
    answer = solve(f"external:cmd:{sys.executable} {crash}", env)
    assert answer.stop == "error" and "exited with 3" in answer.error and "boom happened" in answer.error
    chatty = tmp_path / "chatty.py"
    chatty.write_text("print('the answer is 42')")
    answer = solve(f"external:cmd:{sys.executable} {chatty}", env)
    assert answer.stop == "error" and "not JSON" in answer.error
    slow = tmp_path / "slow.py"
    slow.write_text("import time; time.sleep(30)")
    answer = solve(f"external:cmd:{sys.executable} {slow}", env, Budget(max_seconds=0.5))
    assert answer.stop == "timeout"
    answer = solve("external:cmd:/no/such/program", env)
    assert answer.stop == "error" and "cannot start" in answer.error
    with pytest.raises(ValueError, match="needs a target"):
        make_agent("external")
    with pytest.raises(UnknownPluginError):
        make_agent("no-such-agent")


def test_http_agent(env: FilesEnv) -> None:
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            status = 500 if body["task"]["question"] == "fail" else 200
            out = json.dumps({"answer": "ok", "files": ["Notes/gym routine.md"]}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/solve"
        answer = solve(f"external:{url}", env)
        assert answer.stop == "answered" and answer.files == ["Notes/gym routine.md"]
        assert seen[0]["task"]["question"] == "What is my routine?" and seen[0]["budget"]["max_steps"] == 20
        agent = make_agent(f"external:{url}")
        failed = asyncio.run(agent.solve(Task("t", "fail"), env, None, Budget()))
        assert failed.stop == "error" and "HTTP 500" in failed.error
    finally:
        server.shutdown()
