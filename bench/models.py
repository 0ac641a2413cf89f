"""Model-layer benchmarks (medians; ratios against a baseline measured in the same run).

    .venv/bin/python bench/models.py [--threads 1,2] [--models smollm2,qwen2.5-coder-1.5b] [--skip-server]

* ``cache``: overhead of a cached call through `Model.generate` (goal: <= 1 ms), against the same
  call with the cache off on the mock backend (the client's own overhead).
* ``local``: prompt and generation tokens per second of each installed embedded model, per thread
  count (llama.cpp threads are a setting: HIPPOCAMP_LLAMA_THREADS).
* ``server``: throughput of 1 vs 8 concurrent requests against a llama.cpp server on 127.0.0.1
  serving SmolLM2 (requests per second and the ratio).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from hippocamp.models import ModelSettings, get_model

PROMPT = (
    "Here is a note: 'Gym on Tuesdays and Thursdays at 7:00 am at FitHub Blaak; membership EUR 39 per month, "
    "paid on the 5th.' Question: on which days does the person go to the gym, and what does it cost? "
    "Answer in two sentences."
)


def bench_cache(n: int = 2000) -> dict[str, float]:
    async def run() -> dict[str, float]:
        with tempfile.TemporaryDirectory() as tmp:
            model = get_model(
                "mock", outputs=lambda req: "ok", settings=ModelSettings(cache_path=Path(tmp) / "c.sqlite")
            )
            messages = [{"role": "user", "content": PROMPT}]
            await model.generate(messages, cache=True)  # fill
            times_hit, times_plain = [], []
            for _ in range(n):
                t = time.perf_counter()
                await model.generate(messages, cache=True)
                times_hit.append(time.perf_counter() - t)
                t = time.perf_counter()
                await model.generate(messages, cache=False)
                times_plain.append(time.perf_counter() - t)
        hit, plain = statistics.median(times_hit), statistics.median(times_plain)
        return {"cached_call_ms": hit * 1000, "uncached_mock_call_ms": plain * 1000, "ratio": hit / plain}

    return asyncio.run(run())


def bench_local(name: str, threads: int, repeat: int = 3) -> dict[str, float]:
    from llama_cpp import Llama

    from hippocamp.models.local_models import find_model

    path = find_model(name)[0]
    t = time.perf_counter()
    llm = Llama(model_path=str(path), n_ctx=2048, n_threads=threads, n_threads_batch=threads, verbose=False)
    load_s = time.perf_counter() - t
    prompt_tps, gen_tps = [], []
    for i in range(repeat):
        text = f"[{i}] " + PROMPT  # a different prefix each time: no prompt reuse
        llm.reset()
        tokens = llm.tokenize(text.encode())
        t = time.perf_counter()
        llm.eval(tokens)
        prompt_rate = len(tokens) / (time.perf_counter() - t)
        prompt_tps.append(prompt_rate)
        llm.reset()
        t = time.perf_counter()
        out = llm.create_chat_completion([{"role": "user", "content": text}], max_tokens=64, temperature=0.0)
        elapsed = time.perf_counter() - t
        usage = out["usage"]
        generating = max(elapsed - usage["prompt_tokens"] / prompt_rate, 1e-6)
        gen_tps.append(usage["completion_tokens"] / generating)
    return {
        "load_s": load_s,
        "prompt_tok_s": statistics.median(prompt_tps),
        "gen_tok_s": statistics.median(gen_tps),
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_server(requests: int = 16) -> dict[str, float]:
    from hippocamp.models.local_models import find_model

    port = _free_port()
    url = f"http://127.0.0.1:{port}/v1"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(find_model("smollm2")[0]), "--host",
           "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "2"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{url}/models", timeout=1)
                break
            except OSError:
                time.sleep(0.2)

        async def run(concurrency: int) -> float:
            model = get_model(f"openai-compatible:smollm2@{url}", max_concurrency=concurrency)
            prompts = [[{"role": "user", "content": f"Say the number {i}."}] for i in range(requests)]
            t = time.perf_counter()
            await asyncio.gather(*(model.generate(p, max_tokens=12, cache=False) for p in prompts))
            await model.aclose()
            return requests / (time.perf_counter() - t)

        serial = asyncio.run(run(1))
        concurrent = asyncio.run(run(8))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return {"serial_req_s": serial, "concurrent8_req_s": concurrent, "ratio": concurrent / serial}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--models", default="smollm2,qwen2.5-coder-1.5b")
    parser.add_argument("--skip-server", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results: dict[str, object] = {"cache": bench_cache()}
    print("cache:", json.dumps(results["cache"]))
    from hippocamp.models.local_models import is_installed

    local = {}
    for name in args.models.split(","):
        if not is_installed(name):
            print(f"local {name}: not installed, skipped")
            continue
        for threads in map(int, args.threads.split(",")):
            local[f"{name}/threads={threads}"] = r = bench_local(name, threads)
            print(f"local {name} threads={threads}:", json.dumps({k: round(v, 2) for k, v in r.items()}))
    results["local"] = local
    if not args.skip_server:
        results["server"] = bench_server()
        print("server:", json.dumps(results["server"]))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    cache_ok = results["cache"]["cached_call_ms"] <= 1.0  # type: ignore[index]
    return 0 if cache_ok else 1


if __name__ == "__main__":
    sys.exit(main())
