"""Real models: the ``openai-compatible`` provider against a real llama.cpp server on 127.0.0.1, and the
``local`` provider in-process. Both use SmolLM2 (the ``local`` extra). These tests need the extra; they
skip without it on a developer's machine, but CI sets HIPPOCAMP_REQUIRE_MODELS=1 and then they fail
instead of skipping."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from conftest import free_port, llama_server, smollm2_path
from hippocamp.models import ModelSettings, RetryPolicy, get_model

pytestmark = pytest.mark.slow


class Capital(BaseModel):
    capital: str


def test_chat_against_a_real_server(server_url):
    model = get_model(f"openai-compatible:smollm2@{server_url}")
    gen = asyncio.run(model.generate([{"role": "user", "content": "Say hello."}], max_tokens=16, cache=False))
    assert gen.text.strip()
    assert gen.usage.input_tokens > 0 and gen.usage.output_tokens > 0
    assert gen.usage.cost_usd is None  # a server we know no price for: unknown, not 0
    assert gen.latency_s > 0


def test_json_mode_against_a_real_server(server_url):
    model = get_model(f"openai-compatible:smollm2@{server_url}")
    gen = asyncio.run(
        model.generate(
            [{"role": "user", "content": "What is the capital of France? Reply in JSON."}],
            response_format=Capital,
            max_tokens=48,
            cache=False,
        )
    )
    assert isinstance(gen.parsed, Capital)
    # the server refuses {"type": "json_schema"}; the backend fell back to a mode it accepts
    assert model.backend.json_mode in ("json_schema", "json_object", "instruct")


def test_twenty_concurrent_requests(server_url):
    model = get_model(f"openai-compatible:smollm2@{server_url}", max_concurrency=20)

    async def many():
        prompts = [[{"role": "user", "content": f"Count to {i}."}] for i in range(20)]
        return await asyncio.gather(*(model.generate(p, max_tokens=8, cache=False) for p in prompts))

    results = asyncio.run(many())
    assert len(results) == 20 and all(r.usage.output_tokens > 0 for r in results)


def test_server_restart_mid_run_is_recovered_by_retries():
    model_path = smollm2_path()
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    settings = ModelSettings(retry=RetryPolicy(attempts=10, base_delay=0.3, max_delay=2.0), timeout=60)
    model = get_model(f"openai-compatible:smollm2@{url}", settings=settings)
    with llama_server(model_path, port) as first:

        async def run():
            async def ask(i: int):
                await asyncio.sleep(0.15 * i)
                return await model.generate([{"role": "user", "content": f"Number {i}?"}], max_tokens=4, cache=False)

            tasks = [asyncio.create_task(ask(i)) for i in range(6)]
            await asyncio.sleep(0.2)
            first.kill()  # the server dies mid-run
            first.wait()
            with llama_server(model_path, port):  # and comes back on the same port
                return await asyncio.gather(*tasks)

        results = asyncio.run(run())
    assert len(results) == 6 and all(r.text is not None for r in results)
    assert max(r.attempts for r in results) > 1  # some requests needed retries


def test_local_provider_in_process_json_constrained():
    smollm2_path()
    model = get_model("local:smollm2", threads=1)
    gen = asyncio.run(
        model.generate(
            [{"role": "user", "content": "Name the capital of France as JSON."}],
            response_format=Capital,
            max_tokens=48,
            seed=0,
        )
    )
    assert isinstance(gen.parsed, Capital)
    assert gen.usage.cost_usd == 0.0
    again = asyncio.run(
        model.generate(
            [{"role": "user", "content": "Name the capital of France as JSON."}],
            response_format=Capital,
            max_tokens=48,
            seed=0,
        )
    )
    assert again.cached and again.parsed == gen.parsed  # temperature 0: cached by default


def test_a_prompt_over_the_context_window_keeps_the_json_mode(server_url):
    """The server refuses a prompt longer than its context (n_ctx 2048 in CI): a clear error, and the JSON
    mode the backend found is kept for the next request."""
    from hippocamp.models.errors import ModelError

    model = get_model(f"openai-compatible:smollm2@{server_url}")
    ok = [{"role": "user", "content": "What is the capital of France? Reply in JSON."}]
    huge = [{"role": "user", "content": "word " * 6000 + "\nWhat is the capital of France? Reply in JSON."}]

    async def both() -> tuple[str, str, str]:
        await model.generate(ok, response_format=Capital, max_tokens=48, cache=False)
        mode = model.backend.json_mode
        try:
            await model.generate(huge, response_format=Capital, max_tokens=16, cache=False)
        except ModelError as exc:
            return mode, model.backend.json_mode, str(exc)
        raise AssertionError("a prompt over the context window was accepted")

    before, after, error = asyncio.run(both())
    assert before == after != "instruct", error
    assert "context" in error.lower(), error
