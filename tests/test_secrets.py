"""Secrets never written: a key planted in every place a user can put one (a model URL's user-info and
query, the judge's URL, OPENAI_API_KEY and HIPPOCAMP_API_KEY, model options and headers) is looked for,
byte for byte, in every file a run, a score and a report write and in everything the commands print.
The errors that carry the keys are real: a local HTTP server that echoes the request's Authorization
header and path back in its 401, and a judge pointed at a closed port."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from conftest import free_port
from hippocamp import registry
from hippocamp.agents.base import Answer, Budget, Task
from hippocamp.cli import main
from hippocamp.models.errors import ModelError
from hippocamp.models.types import ChatRequest, Generation
from hippocamp.redact import REDACTED, RedactingFilter, forget_all, redact, redact_text

pytestmark = pytest.mark.hostile

URL_PASSWORD = "plantedUSERINFOzq81"
URL_QUERY = "plantedQUERYzq82"
ENV_OPENAI = "plantedENVOPENAIzq83"
ENV_HIPPOCAMP = "plantedENVHIPPOzq84"
JUDGE_PASSWORD = "plantedJUDGEPWzq85"
JUDGE_QUERY = "plantedJUDGEQzq86"
HEADER = "sk-planted-XYZ123HEADERzq87"
OPTION = "plantedOPTIONzq88"
PLANTED = [URL_PASSWORD, URL_QUERY, ENV_OPENAI, ENV_HIPPOCAMP, JUDGE_PASSWORD, JUDGE_QUERY, HEADER, OPTION]


@pytest.fixture(autouse=True)
def _planted_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_OPENAI)
    monkeypatch.setenv("HIPPOCAMP_API_KEY", ENV_HIPPOCAMP)
    monkeypatch.setattr("hippocamp.models.client.RetryPolicy.delay", lambda self, retry, rng: 0.0)
    forget_all()  # each test proves its own redaction, not one remembered from an earlier test
    yield
    forget_all()


@pytest.fixture
def echo_server() -> Iterator[str]:
    """An OpenAI-style server that refuses every request with 401, echoing its Authorization header and
    path (as some gateways do): the error every client then raises carries the key."""

    class Echo(BaseHTTPRequestHandler):
        def _refuse(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            message = f"invalid credentials {self.headers.get('Authorization')} for {self.path}"
            body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_GET = _refuse

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@registry.register("agent", "t-leaky")
class LeakyAgent:
    """A careless third-party agent: logs, raises and answers with the raw model URL and the keys."""

    name = "t-leaky"

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        raw = model.backend.id  # the URL as the user typed it, credentials included
        keys = f"{os.environ['OPENAI_API_KEY']} / {os.environ['HIPPOCAMP_API_KEY']}"
        logging.getLogger("hippocamp.test").warning("leaky agent calling %s with %s", raw, keys)
        if task.id.endswith("1"):
            headers = {"Authorization": f"Bearer {os.environ['HIPPOCAMP_API_KEY']}"}
            raise RuntimeError(f"{raw} refused {keys}; headers={headers}")
        return Answer(text=f"the keys are {keys}, the model {raw}", stop="answered")


def example() -> str:
    from hippocamp.examples import example_profile

    return str(example_profile())


def cli(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def written(root: Path) -> dict[Path, bytes]:
    """Every file under ``root`` (runs, scores, reports, stores, caches)."""
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def assert_no_secret(texts: dict[Any, bytes | str]) -> None:
    leaks = []
    for where, data in texts.items():
        blob = data if isinstance(data, bytes) else data.encode()
        leaks += [f"{where}: {key}" for key in PLANTED if key.encode() in blob]
    assert not leaks, "secrets written:\n" + "\n".join(leaks)


# -- the redaction itself -----------------------------------------------------------------------------
@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (f"openai-compatible:m@http://user:{URL_PASSWORD}@127.0.0.1:9/v1?api_key={URL_QUERY}&x=1",
         "openai-compatible:m@http://user:[redacted]@127.0.0.1:9/v1?api_key=[redacted]&x=1"),
        (f"GET https://{URL_PASSWORD}xyzTOKEN@git.example.org/repo", "GET https://[redacted]@git.example.org/repo"),
        (f"POST /v1/chat?token={URL_QUERY}#frag", "POST /v1/chat?token=[redacted]#frag"),
        (f"headers={{'Authorization': 'Bearer {OPTION}'}}", "headers={'Authorization': 'Bearer [redacted]'}"),
        (f"x-api-key: {OPTION}", "x-api-key: [redacted]"),
        (f'{{"api_key": "{OPTION}", "max_tokens": 5}}', '{"api_key": "[redacted]", "max_tokens": 5}'),
        (f"password={OPTION}, &amp;access_token={URL_QUERY}", "password=[redacted], &amp;access_token=[redacted]"),
        (f"the key {HEADER} and hf_{'a' * 20}", "the key [redacted] and [redacted]"),
        (f"env {ENV_OPENAI}, {ENV_HIPPOCAMP}", "env [redacted], [redacted]"),
        ("Authorization: Basic dXNlcjpwbGFudGVk", "Authorization: Basic [redacted]"),
        ("credentials Basic dXNlcjpwbGFudGVkVVNFUklORk96cTgx for", "credentials Basic [redacted] for"),
        ("max_tokens=7, tokens: 5, ssh://git@github.com/x, http://host:8080/v1?page=2, Basic reasoning", None),
    ],
)  # fmt: skip
def test_redact_text_blanks_every_shape_of_secret(text: str, kept: str | None) -> None:
    assert redact_text(text) == (text if kept is None else kept)


@pytest.mark.timeout(30)
def test_redacted_json_and_html_stay_valid() -> None:
    value = {
        "error": f'headers={{"Authorization": "Bearer {OPTION}"}} at http://u:{URL_PASSWORD}@h/v1?key={URL_QUERY}',
        "env": f'{ENV_OPENAI}\\"quoted\\"',
        "answer": f"api_key='{OPTION}'",
    }
    line = json.dumps(value, ensure_ascii=False)
    clean = json.loads(redact_text(line))
    assert_no_secret({"json": json.dumps(clean)})
    assert clean["answer"] == "api_key='[redacted]'" and "[redacted]" in clean["error"]
    import html

    page = f"<p>{html.escape(value['error'])}</p><img src='data:image/png;base64,{'QUlaYQ' * 40}'>"
    out = redact_text(page)
    assert_no_secret({"html": out})
    assert out.endswith(f"<img src='data:image/png;base64,{'QUlaYQ' * 40}'>")  # figures untouched


@pytest.mark.timeout(30)
def test_redact_by_key_and_the_manifest_reexports() -> None:
    from hippocamp.runs.manifest import REDACTED as MANIFEST_REDACTED
    from hippocamp.runs.manifest import redact as manifest_redact
    from hippocamp.runs.manifest import scrub as manifest_scrub

    assert manifest_redact is redact and MANIFEST_REDACTED == REDACTED and callable(manifest_scrub)
    found: list[str] = []
    out = redact({"api_key": OPTION, "headers": {"Authorization": f"Bearer {HEADER}"}, "threads": 2}, found)
    assert out == {"api_key": REDACTED, "headers": {"Authorization": REDACTED}, "threads": 2}
    assert OPTION in found
    # by_key=False keeps data such as a P-ContextBench "session" id, still blanking secrets by pattern
    assert redact({"session": "S3", "note": HEADER}, by_key=False) == {"session": "S3", "note": REDACTED}


@pytest.mark.timeout(30)
def test_log_records_are_redacted() -> None:
    record = logging.LogRecord("hippocamp.x", logging.WARNING, __file__, 1, "calling %s", (f"http://u:{OPTION}@h",),
                               None)  # fmt: skip
    RedactingFilter().filter(record)
    assert record.getMessage() == "calling http://u:[redacted]@h"


# -- end to end: run, score, report, ask ----------------------------------------------------------------
@pytest.mark.timeout(240)
def test_keys_planted_everywhere_never_reach_a_file_or_the_terminal(echo_server: str, tmp_path: Path) -> None:
    model = f"openai-compatible:m@http://user:{URL_PASSWORD}@{echo_server}/v1?api_key={URL_QUERY}"
    judge = f"openai-compatible:j@http://juser:{JUDGE_PASSWORD}@127.0.0.1:{free_port()}/v1?api_key={JUDGE_QUERY}"
    store = tmp_path / "s.sqlite"
    fast = ["--store", str(store), "--no-ocr", "--no-asr", "--no-embed", "--limit", "2"]
    printed: dict[str, str] = {}
    runs = {"rag": tmp_path / "run-rag", "t-leaky": tmp_path / "run-leaky"}
    for agent, out in runs.items():
        result = cli("run", "--suite", example(), "--agent", agent, "--model", model, "--out", str(out), *fast)
        assert result.exit_code == 0, result.output
        printed[f"run {agent}"] = result.output
        scored = cli("score", str(out), "--judge", judge, "--judge-mode", "simple")
        assert scored.exit_code == 0, scored.output
        printed[f"score {agent}"] = scored.output
    report = cli("report", *map(str, runs.values()), "--out", str(tmp_path / "report"))
    assert report.exit_code == 0, report.output
    printed["report"] = report.output
    keyless_url = f"openai-compatible:m@http://{echo_server}/v1?api_key={URL_QUERY}"  # the env key goes as Bearer
    asked = cli("ask", example(), "When does my lease start?", "--agent", "rag", "--model", keyless_url, "--store",
                str(store), "--no-ocr", "--no-asr", "--no-embed")  # fmt: skip
    printed["ask"] = asked.output
    as_json = cli("ask", example(), "When does my lease start?", "--agent", "t-leaky", "--model", model, "--store",
                  str(store), "--no-ocr", "--no-asr", "--no-embed", "--json")  # fmt: skip
    printed["ask --json"] = as_json.output

    files = written(tmp_path)
    assert_no_secret({**files, **printed})
    # the errors really carried the keys (now blanked): the server's echo, the judge's URL, the agent's leak
    episodes = (runs["rag"] / "episodes.jsonl").read_text()
    assert "authentication failed (invalid credentials Basic [redacted]" in episodes  # base64(user:password)
    assert "http://user:[redacted]@" in episodes and "api_key=[redacted]" in episodes
    leaky = [json.loads(x) for x in (runs["t-leaky"] / "episodes.jsonl").read_text().splitlines()]
    assert {e["answer"]["stop"] for e in leaky} == {"error", "answered"}
    assert all("[redacted]" in (e["answer"]["error"] or e["answer"]["text"]) for e in leaky)
    scores = [json.loads(x) for x in (runs["t-leaky"] / "scores.jsonl").read_text().splitlines()]
    assert all(s["judge"].startswith("openai-compatible:j@http://juser:[redacted]@") for s in scores)
    judged = [s for s in scores if s["stop"] == "answered"]  # an empty answer is wrong without a judge call
    assert judged and all(s["status"] == "unscored" and "juser:[redacted]@" in s["error"] for s in judged)
    assert "warning: leaky agent calling openai-compatible:m@http://user:[redacted]@" in printed["run t-leaky"]
    assert (tmp_path / "report" / "report.html").is_file() and (tmp_path / "report" / "report.md").is_file()
    assert "stopped: error" in printed["ask"] and "invalid credentials Bearer [redacted]" in printed["ask"]

    # a re-score with the same judge replaces its (redacted) unscored lines: the keys compare equal
    rescore = cli("score", str(runs["t-leaky"]), "--judge", judge, "--judge-mode", "simple", "--json")
    assert rescore.exit_code == 0
    assert len((runs["t-leaky"] / "scores.jsonl").read_text().splitlines()) == 2
    assert_no_secret({**written(tmp_path), "rescore": rescore.output})


@registry.register("provider", "t-leaky-provider")
def leaky_provider(name: str, api_key: str = "", headers: dict[str, str] | None = None, **_: Any) -> Any:
    """A provider that takes a key and headers as options and echoes them in its errors."""

    class Backend:
        id = f"t-leaky-provider:{name}"
        supports_tools = False
        supports_json_schema = False
        max_concurrency = 2

        async def complete(self, request: ChatRequest) -> Generation:
            raise ModelError(f"rejected api_key={api_key!r} headers={headers!r}", self.id)

        async def aclose(self) -> None:
            pass

    return Backend()


@pytest.mark.timeout(120)
def test_model_options_and_headers_never_reach_the_run_directory(tmp_path: Path) -> None:
    import asyncio

    from hippocamp.runs import SuiteOptions, load_suite, run

    suite = load_suite(example(), SuiteOptions(ocr=False, asr=False, embed=False, store=tmp_path / "s.sqlite"))
    try:
        options = {"api_key": OPTION, "headers": {"Authorization": f"Bearer {HEADER}"}, "max_concurrency": 2}
        summary = asyncio.run(run(suite, "rag", "t-leaky-provider:m", out=tmp_path / "r", limit=2,
                                  model_options=options))  # fmt: skip
    finally:
        suite.close()
    assert summary.by_stop == {"error": 2}
    assert_no_secret(written(tmp_path))
    episodes = (tmp_path / "r" / "episodes.jsonl").read_text()
    assert "rejected api_key='[redacted]' headers={'Authorization': '[redacted]'}" in episodes  # blanked
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["model"]["options"]["api_key"] == REDACTED and manifest["model"]["options"]["max_concurrency"] == 2


@pytest.mark.timeout(60)
def test_printed_errors_and_tracebacks_are_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad_url = f"openai-compatible:m@ftp://user:{URL_PASSWORD}@host/v1?api_key={URL_QUERY}"
    refused = cli("run", "--suite", example(), "--agent", "rag", "--model", bad_url, "--out", str(tmp_path / "r"))
    assert refused.exit_code == 2 and "ftp://user:[redacted]@host" in refused.output
    closed = f"openai-compatible:m@http://user:{URL_PASSWORD}@127.0.0.1:{free_port()}/v1?api_key={URL_QUERY}"
    check = cli("models", "check", closed)
    assert check.exit_code == 1 and "the call failed" in check.output and "user:[redacted]@" in check.output

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"cannot reach {closed} with {os.environ['OPENAI_API_KEY']}")

    monkeypatch.setattr("hippocamp.scoring.hippocamp_io.score_release", boom)
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps([{"query_id": "q", "question": "?", "answer": "a", "ground_truth": "a",
                                 "ground_file_list": [], "agent_file_list": []}]))  # fmt: skip
    crashed = cli("score", "--hippocamp-io", str(rows), "--judge-mode", "facts")
    assert crashed.exit_code == 1 and "Traceback" not in crashed.output
    assert crashed.output.startswith("error: hippocamp score failed: RuntimeError: cannot reach")
    assert "HIPPOCAMP_DEBUG=1" in crashed.output and len(crashed.output.strip().splitlines()) == 1
    debug = cli("score", "--hippocamp-io", str(rows), "--judge-mode", "facts", env={"HIPPOCAMP_DEBUG": "1"})
    assert debug.exit_code == 1 and "Traceback (most recent call last)" in debug.output
    assert_no_secret({"refused": refused.output, "check": check.output, "crashed": crashed.output,
                      "debug": debug.output, **written(tmp_path)})  # fmt: skip
