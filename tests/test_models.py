"""The model client driven by the mock provider: structured output, tools, retries, cache, cost."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from hippocamp.models import (
    ChatRequest,
    Generation,
    ModelError,
    ModelNotAvailableError,
    ModelOutputError,
    ModelSettings,
    RetryPolicy,
    TransientModelError,
    Usage,
    get_model,
    parse_model_string,
)
from hippocamp.models.cache import RequestCache
from hippocamp.models.providers.mock import MockBackend, minimal_instance
from hippocamp.models.structured import OutputFormat, extract_json

USER = [{"role": "user", "content": "Is the answer correct?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the profile.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        },
    }
]


class Verdict(BaseModel):
    verdict: str
    score: int


class FakeSleep:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def run(coro):
    return asyncio.run(coro)


def test_model_strings():
    assert parse_model_string("openai:gpt-4o") == ("openai", "gpt-4o")
    assert parse_model_string("openai-compatible:qwen@http://h:1/v1") == ("openai-compatible", "qwen@http://h:1/v1")
    assert parse_model_string("mock") == ("mock", "")
    with pytest.raises(ModelNotAvailableError, match="unknown model provider 'nope'"):
        get_model("nope:x")
    with pytest.raises(ValueError, match="openai-compatible:NAME@"):
        get_model("openai-compatible:no-url")


def test_openai_needs_a_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelNotAvailableError, match="OPENAI_API_KEY"):
        get_model("openai:gpt-4o-mini")


def test_structured_output_from_a_pydantic_model():
    model = get_model("mock", outputs=['Sure! ```json\n{"verdict": "yes", "score": 4}\n```'])
    gen = run(model.generate(USER, response_format=Verdict))
    assert gen.parsed == Verdict(verdict="yes", score=4)
    sent = model.backend.requests[0]
    assert sent.json_schema == Verdict.model_json_schema()  # constrained decoding where the backend has it


def test_structured_output_by_instruction_and_one_repair():
    backend = MockBackend(['{"verdict": "yes"}', '{"verdict": "yes", "score": 5}'], supports_json_schema=False)
    model = get_model("mock")
    model.backend = backend
    gen = run(model.generate(USER, response_format=Verdict))
    assert gen.parsed.score == 5
    first, repair = backend.requests
    assert first.json_schema is None and "JSON schema" in first.messages[0]["content"]
    assert repair.messages[-2] == {"role": "assistant", "content": '{"verdict": "yes"}'}
    assert "score: Field required" in repair.messages[-1]["content"]
    assert gen.usage.calls == 2 and model.usage.calls == 2


def test_structured_output_failure_is_a_clear_error_with_the_raw_text():
    model = get_model("mock", outputs=["no json here", "still none"])
    with pytest.raises(ModelOutputError) as err:
        run(model.generate(USER, response_format=Verdict))
    assert err.value.raw == "still none"
    assert "after one repair retry" in str(err.value)


def test_json_schema_dicts_are_checked():
    fmt = OutputFormat({"type": "object", "required": ["label"], "properties": {"label": {"enum": ["a", "b"]}}})
    assert fmt.parse('{"label": "a"}') == {"label": "a"}
    with pytest.raises(ValueError, match="missing required key 'label'"):
        fmt.parse("{}")
    with pytest.raises(ValueError, match="is not one of"):
        fmt.parse('{"label": "c"}')
    assert extract_json('reply: {"a": {"b": "}"}} trailing') == {"a": {"b": "}"}}


def test_default_mock_answers_any_schema():
    model = get_model("mock")
    gen = run(model.generate(USER, response_format=Verdict))
    assert gen.parsed == Verdict(verdict="", score=0)
    schema = {"type": "object", "required": ["kind", "items"], "properties": {
        "kind": {"enum": ["x", "y"]}, "items": {"type": "array"}}}  # fmt: skip
    assert minimal_instance(schema, schema) == {"kind": "x", "items": []}


def test_native_tool_calls():
    model = get_model("mock", outputs=[{"tool_calls": [{"name": "search", "arguments": {"query": "rent"}}]}])
    gen = run(model.generate(USER, tools=TOOLS))
    assert [(c.name, c.arguments) for c in gen.tool_calls] == [("search", {"query": "rent"})]
    assert model.backend.requests[0].tools == TOOLS


def test_json_action_fallback_for_models_without_tools():
    backend = MockBackend(['{"tool": "search", "arguments": {"query": "lease"}}', "The rent is EUR 1,450."],
                          supports_tools=False)  # fmt: skip
    model = get_model("mock")
    model.backend = backend
    gen = run(model.generate(USER, tools=TOOLS))
    assert gen.text == "" and gen.tool_calls[0].arguments == {"query": "lease"}
    history = [
        *USER,
        {"role": "assistant", "content": None, "tool_calls": [gen.tool_calls[0].to_message()]},
        {"role": "tool", "tool_call_id": gen.tool_calls[0].id, "name": "search", "content": "lease.pdf p.2: EUR 1,450"},
    ]
    final = run(model.generate(history, tools=TOOLS))
    assert final.text == "The rent is EUR 1,450." and final.tool_calls == []
    first, second = backend.requests
    assert first.tools is None and "search" in first.messages[0]["content"]
    roles = [m["role"] for m in second.messages]
    assert roles == ["system", "user", "assistant", "user"]  # tool turns rendered as text
    assert '"tool": "search"' in second.messages[2]["content"]
    assert "Result of search" in second.messages[3]["content"]


def test_retries_with_backoff_then_success():
    sleep = FakeSleep()
    outputs = [TransientModelError("connection reset"), TransientModelError("HTTP 503"), "finally"]
    model = get_model("mock", outputs=outputs, settings=None)
    model._sleep = sleep
    gen = run(model.generate(USER))
    assert gen.text == "finally" and gen.attempts == 3
    assert len(sleep.waits) == 2
    assert 0.5 <= sleep.waits[0] <= 0.75 and 1.0 <= sleep.waits[1] <= 1.5  # exponential, with jitter


def test_retries_give_up_with_the_cause():
    model = get_model(
        "mock",
        outputs=[TransientModelError("HTTP 429")] * 3,
        settings=ModelSettings(retry=RetryPolicy(attempts=3)),
    )
    model._sleep = FakeSleep()
    with pytest.raises(ModelError, match="failed after 3 attempts; last error: HTTP 429"):
        run(model.generate(USER))


def test_permanent_errors_are_not_retried():
    model = get_model("mock", outputs=[ModelError("bad request"), "unused"])
    model._sleep = FakeSleep()
    with pytest.raises(ModelError, match="bad request"):
        run(model.generate(USER))
    assert len(model.backend.requests) == 1


def test_timeouts_are_retried():
    class Slow(MockBackend):
        async def complete(self, request: ChatRequest) -> Generation:
            self.requests.append(request)
            if len(self.requests) == 1:
                await asyncio.sleep(5)
            return Generation(model=self.id, text="fast now")

    model = get_model("mock", settings=ModelSettings(timeout=0.05))
    model.backend = Slow()
    model._sleep = FakeSleep()
    assert run(model.generate(USER)).text == "fast now"


class Counting(MockBackend):
    """A backend that records how many calls ran at once."""

    def __init__(self, **kw):  # type: ignore[no-untyped-def]
        super().__init__(**kw)
        self.active = self.peak = 0

    async def complete(self, request: ChatRequest) -> Generation:
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(0.01)
        self.active -= 1
        return Generation(model=self.id, text="ok")


def test_concurrency_limit():
    model = get_model("mock", settings=ModelSettings(max_concurrency=3))
    model.backend = Counting()

    async def many():
        return await asyncio.gather(*(model.generate([{"role": "user", "content": str(i)}]) for i in range(12)))

    assert len(run(many())) == 12
    assert model.backend.peak == 3


def test_cache_hits_skip_the_backend_and_cost_nothing(tmp_path: Path):
    settings = ModelSettings(cache_path=tmp_path / "c.sqlite")
    model = get_model("mock", outputs=["first", "second"], settings=settings)
    a = run(model.generate(USER, cache=True))
    b = run(model.generate(USER, cache=True))
    assert (a.text, a.cached) == ("first", False)
    assert (b.text, b.cached) == ("first", True)
    assert len(model.backend.requests) == 1
    assert model.usage.calls == 2 and model.usage.cached_calls == 1
    c = run(model.generate(USER, cache=True, temperature=0.7))  # a different request: not a hit
    assert c.text == "second"
    stats = RequestCache.open(tmp_path / "c.sqlite").stats()
    assert stats.entries == 2 and stats.by_model == {"mock": 2}
    assert RequestCache.open(tmp_path / "c.sqlite").clear() == 2


def test_cache_key_ignores_retries_and_timeouts():
    a = ChatRequest(model="m", messages=USER, temperature=0)
    b = ChatRequest(model="m", messages=[dict(USER[0])], temperature=0.0)
    assert a.cache_key() == b.cache_key()
    assert a.cache_key() != ChatRequest(model="m", messages=USER, seed=1).cache_key()
    assert a.cache_key() != ChatRequest(model="other", messages=USER).cache_key()


def test_cost_accounting_with_a_user_price_table(tmp_path: Path, monkeypatch):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"judge-*": {"input": 1.0, "output": 2.0}}))
    monkeypatch.setenv("HIPPOCAMP_PRICES", str(prices))
    from hippocamp.models.pricing import cost_usd

    assert cost_usd("openai", "judge-large", 1_000_000, 500_000) == pytest.approx(2.0)
    assert cost_usd("openai", "unpriced-model", 10, 10) is None  # unknown, never 0
    assert cost_usd("local", "smollm2", 10, 10) == 0.0
    assert cost_usd("openai", "gpt-4o-mini", 1_000_000, 0) == pytest.approx(0.15)
    usage = Usage(input_tokens=3, output_tokens=4, calls=1, cost_usd=0.5) + Usage(calls=1, cost_usd=None)
    assert usage.cost_usd is None and usage.calls == 2


def test_mock_scripts_by_prompt_and_callable():
    model = get_model("mock", outputs={"ping": "pong", "*": "default"})
    assert run(model.generate([{"role": "user", "content": "ping"}])).text == "pong"
    assert run(model.generate([{"role": "user", "content": "other"}])).text == "default"
    echo = get_model("mock", outputs=lambda req: req.messages[-1]["content"].upper())
    assert run(echo.generate([{"role": "user", "content": "loud"}])).text == "LOUD"
    empty = get_model("mock", outputs=[])
    with pytest.raises(ModelError, match="script exhausted"):
        run(empty.generate(USER))


def test_concurrency_limit_is_shared_by_models_of_one_id():
    backend = Counting(name="shared")
    models = []
    for _ in range(2):
        m = get_model("mock:shared", settings=ModelSettings(max_concurrency=2))
        m.backend = backend
        models.append(m)

    async def many():
        calls = [m.generate([{"role": "user", "content": str(i)}]) for i in range(6) for m in models]
        return await asyncio.gather(*calls)

    assert len(run(many())) == 12
    assert backend.peak == 2


def test_no_cache_environment_variable(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("HIPPOCAMP_NO_CACHE", "1")
    assert ModelSettings().cache is False
    monkeypatch.delenv("HIPPOCAMP_NO_CACHE")
    assert ModelSettings().cache is None
