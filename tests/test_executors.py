"""Executors: the seam (`hippocamp.executors`), the local executor, what travels to a cluster's workers
(models as model strings, stores as paths), and the Ray executor on a real cluster (a head and a worker
node on 127.0.0.1): indexing, a run of 50 episodes with a worker killed mid-run, a driver killed and the
run resumed, scoring, the cluster-wide model gate, objects shipped through Ray's object store, and five
personas; every output compared with the local executor's."""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import free_port, require
from hippocamp.executors import ExecutorError, Job, LocalExecutor, open_executor, parse_executor


# -- the seam, here ------------------------------------------------------------------------------------
def test_parse_executor() -> None:
    assert parse_executor(None) == ("local", None)
    assert parse_executor("local") == ("local", None)
    assert parse_executor("ray") == ("ray", None)
    assert parse_executor("ray:auto") == ("ray", "auto")
    assert parse_executor("ray:10.0.0.5:6379") == ("ray", "10.0.0.5:6379")
    assert parse_executor("ray://10.0.0.5:10001") == ("ray", "ray://10.0.0.5:10001")
    for bad in ("dask", "ray:", "ray://", "spark:x"):
        with pytest.raises(ExecutorError):
            parse_executor(bad)


def test_ray_without_ray_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(ExecutorError, match=r"pip install 'hippocamp\[ray\]'"):
        open_executor("ray")
    from hippocamp.cli import main

    result = CliRunner().invoke(main, ["index", ".", "--executor", "ray"])
    assert result.exit_code == 2 and "hippocamp[ray]" in result.output


def test_bad_executor_on_the_command_line() -> None:
    from hippocamp.cli import main

    for command in (["index", "."], ["run", "--suite", "x", "--agent", "rag", "--model", "mock", "--out", "o"],
                    ["score", "."], ["synth", "personas", "--n", "1", "--out", "o"]):  # fmt: skip
        result = CliRunner().invoke(main, [*command, "--executor", "dask"])
        assert result.exit_code == 2, (command, result.output)
        assert "--executor" in result.output and "ray:auto" in result.output


def test_local_executor_streams_in_finishing_order_within_the_limit() -> None:
    running, most = 0, 0

    async def work(n: int) -> int:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.01 * (5 - n))
        running -= 1
        return n * n

    async def main() -> list[tuple[int, int]]:
        job: Job[int, int] = Job("sq", work)
        return [(o.item, o.result) async for o in LocalExecutor().map(job, [1, 2, 3, 4], 2)]  # type: ignore[misc]

    out = asyncio.run(main())
    assert sorted(out) == [(1, 1), (2, 4), (3, 9), (4, 16)]
    assert most == 2
    assert out[0][0] == 2  # 1 and 2 start together; 2 sleeps less and finishes first


def test_local_executor_raises_a_jobs_error_and_cancels_the_rest() -> None:
    cancelled = []

    async def work(n: int) -> int:
        if n == 0:
            raise RuntimeError("boom")
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(n)
            raise
        return n

    async def main() -> None:
        async for _ in LocalExecutor().map(Job("x", work), [1, 0, 2], 3):
            pass

    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(main())
    assert sorted(cancelled) == [1, 2]


def test_local_executor_never_hangs_on_a_jobs_own_cancellation() -> None:
    async def work(n: int) -> int:
        raise asyncio.CancelledError  # raised by the job itself, not by anyone cancelling it

    async def main() -> None:
        async for _ in LocalExecutor().map(Job("x", work), [1], 1):
            pass

    async def bounded() -> None:
        await asyncio.wait_for(main(), 10)

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(bounded())


def test_leaving_the_loop_stops_the_items_still_running() -> None:
    import contextlib

    stopped = []

    async def work(n: int) -> int:
        try:
            await asyncio.sleep(0 if n == 0 else 5)
        except asyncio.CancelledError:
            stopped.append(n)
            raise
        return n

    async def main() -> None:
        async with contextlib.aclosing(LocalExecutor().map(Job("x", work), [0, 1, 2], 3)) as outcomes:
            async for _ in outcomes:
                raise OSError("the writer failed")

    with pytest.raises(OSError, match="writer failed"):
        asyncio.run(main())
    assert sorted(stopped) == [1, 2]


# -- what travels to workers ------------------------------------------------------------------------------
def test_a_model_pickles_as_its_model_string() -> None:
    from hippocamp.models import Model, get_model
    from hippocamp.models.providers.mock import MockBackend

    model = get_model("mock:x", max_concurrency=3, delay=0.0)
    again = pickle.loads(pickle.dumps(model))
    assert again.id == model.id == "mock:x" and again.max_concurrency == 3
    assert again is not model and again.recipe == ("mock:x", {"max_concurrency": 3, "delay": 0.0})
    built = Model(MockBackend(), provider="mock", name="")
    with pytest.raises(TypeError, match="built in code"):
        pickle.dumps(built)


def test_a_model_rebuilt_on_a_worker_takes_its_gate() -> None:
    from contextlib import asynccontextmanager

    from hippocamp.models import client, get_model

    entered: list[str] = []

    @asynccontextmanager
    async def gate() -> Any:
        entered.append("in")
        yield

    client.set_gate_provider(lambda model: gate)
    try:
        model = pickle.loads(pickle.dumps(get_model("mock")))
    finally:
        client.set_gate_provider(None)
    asyncio.run(model.generate([{"role": "user", "content": "hi"}]))
    assert entered == ["in"]


def test_a_store_pickles_as_a_read_only_view(tmp_path: Path, synth_indexed: tuple[Path, Path]) -> None:
    from hippocamp.store import Store, StoreError

    _, path = synth_indexed
    copy = tmp_path / "store.sqlite"
    shutil.copy(path, copy)
    store = Store(copy)
    store.set_meta("marker", "committed")  # in the write-ahead log until the pickle folds it in
    view = pickle.loads(pickle.dumps(store))
    assert view.get_meta("marker") == "committed"
    assert view.counts() == store.counts()
    with pytest.raises(Exception, match=r"readonly|read-only"):
        view.set_meta("x", "y")
    missing = pickle.loads(pickle.dumps(Store(tmp_path / "gone.sqlite")))
    (tmp_path / "gone.sqlite").unlink()
    with pytest.raises(StoreError, match=r"gone\.sqlite: no such store on .*--ship objects"):
        missing.counts()


def test_a_suite_pickles_and_moves(tmp_path: Path, synth_small: Path) -> None:
    from hippocamp.runs import SuiteOptions, load_suite

    suite = load_suite(str(synth_small), SuiteOptions(ocr=False, asr=False, embed=False, executor=LocalExecutor()))
    again = pickle.loads(pickle.dumps(suite))
    assert again.options.executor is None and [t.id for t in again.tasks] == [t.id for t in suite.tasks]
    assert again.env(again.tasks[0]).list_files("")  # the store reopened read-only, the files by path
    moved_root = tmp_path / "moved" / suite.root.name
    shutil.copytree(suite.root, moved_root)
    moved_store = tmp_path / "moved.sqlite"
    shutil.copy(suite.store.path, moved_store)
    moved = again.relocated({str(suite.root): str(moved_root), str(suite.store.path): str(moved_store)})
    assert moved.root == moved_root and moved.store.path == moved_store
    assert moved.parts[next(iter(moved.parts))].root == moved_root
    suite.close()


# -- on a real Ray cluster ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ray_executor(ray_address: str) -> Iterator[Any]:
    executor = open_executor(f"ray:{ray_address}")
    try:
        yield executor
    finally:
        executor.close()


@pytest.fixture(scope="module")
def indexed(synth_small: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """(suite spec, store) of the small profile, indexed once for the run tests (BM25)."""
    from hippocamp.runs import SuiteOptions, load_suite

    store = tmp_path_factory.mktemp("ray-store") / "store.sqlite"
    load_suite(str(synth_small), SuiteOptions(ocr=False, asr=False, embed=False, store=store)).close()
    return str(synth_small), store


def _suite(indexed: tuple[str, Path]) -> Any:
    from hippocamp.runs import SuiteOptions, load_suite

    spec, store = indexed
    return load_suite(spec, SuiteOptions(ocr=False, asr=False, embed=False, store=store))


def _episodes(out: Path) -> dict[tuple[str, int], tuple[Any, ...]]:
    """What an episode answered, by (task, epoch): equal across executors (times are not)."""
    rows = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    keys = [(r["task_id"], r["epoch"]) for r in rows]
    assert len(keys) == len(set(keys)), "an episode written twice"
    return {(r["task_id"], r["epoch"]): (r["answer"]["text"], r["answer"]["stop"], r["answer"].get("files"),
                                         r["answer"].get("retrieved")) for r in rows}  # fmt: skip


def _run(indexed: tuple[str, Path], out: Path, executor: Any, **kw: Any) -> Any:
    from hippocamp.runs import run

    suite = _suite(indexed)
    try:
        options = {"delay": kw.pop("delay", 0.0), **kw.pop("model_options", {})}
        return asyncio.run(run(suite, "rag", kw.pop("model", "mock"), out=out, model_options=options,
                               executor=executor, **kw))  # fmt: skip
    finally:
        suite.close()


def _episode_workers(address: str) -> list[int]:
    """Worker processes of the cluster at ``address`` running an episode right now: their title is the
    task's name, and their parent is a raylet of that cluster (not of another Ray on this machine)."""
    port = address.rsplit(":", 1)[-1]
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if not Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::hippocamp:episode"):
                    continue
                parent = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
                raylet = Path(f"/proc/{parent}/cmdline").read_bytes().split(b"\0")
            except (OSError, IndexError):
                continue
            if any(arg.startswith(b"--gcs-address=") and arg.endswith(f":{port}".encode()) for arg in raylet):
                found.append(int(pid))
    return found


def _lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


@pytest.mark.slow
def test_ray_index_equals_local(ray_executor: Any, synth_small: Path, tmp_path: Path) -> None:
    from hippocamp.models.embedding import get_embedder
    from hippocamp.models.errors import ModelNotAvailableError
    from hippocamp.perceive.base import PerceiveOptions
    from hippocamp.store import IndexOptions, Store, index_profile
    from hippocamp.store.compare import store_differences

    try:
        get_embedder()
    except ModelNotAvailableError as exc:
        require(f"needs the embed extra: {exc}")
    root = next(p for p in synth_small.iterdir() if p.is_dir())
    options = IndexOptions(perceive=PerceiveOptions(ocr=False, asr=False), workers=2, chunker="recursive:400:50")
    stores = {}
    for name, executor, ship in (("local", None, None), ("ray", ray_executor, "path"),
                                 ("objects", ray_executor, "objects")):  # fmt: skip
        if executor is not None:
            executor.ship = ship
        store = Store(tmp_path / f"{name}.sqlite", root=root)
        report = index_profile(root, store, options, executor=executor)
        assert not report.failed, report.failed[:3]
        assert store.counts()["segments"] > 50 and store.counts()["vectors"] == store.counts()["segments"]
        stores[name] = store
        if executor is not None:
            assert executor.stats["reach"] == ship and executor.stats["job"] == "read"
    ray_executor.ship = "auto"
    assert ray_executor.stats["shipped_bytes"] > 0
    assert store_differences(stores["local"], stores["ray"]) == []
    assert store_differences(stores["local"], stores["objects"]) == []
    # a second pass on the cluster reads nothing: every file is unchanged
    again = index_profile(root, stores["ray"], options, executor=ray_executor)
    assert again.unchanged == again.scanned and again.added == again.updated == 0


@pytest.mark.slow
def test_ray_run_survives_a_killed_worker_and_equals_local(
    ray_executor: Any, ray_address: str, indexed: tuple[str, Path], tmp_path: Path
) -> None:
    local = _run(indexed, tmp_path / "local", None, limit=10, epochs=5)
    assert local.done == 50
    out = tmp_path / "ray"
    killed: list[int] = []

    def kill_one() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            if _lines(out / "episodes.jsonl") >= 10:
                for pid in _episode_workers(ray_address):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    break
            time.sleep(0.02)

    killer = threading.Thread(target=kill_one)
    killer.start()
    summary = _run(indexed, out, ray_executor, limit=10, epochs=5, delay=0.3, concurrency=4)
    killer.join()
    assert killed, "no worker was running an episode to kill"
    assert summary.done == 50 and summary.lost == [] and summary.failed == 0
    assert _episodes(out) == _episodes(tmp_path / "local")
    assert _lines(out / "episodes.jsonl") == 50
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sessions"][-1]["executor"]["executor"] == "ray"
    assert manifest["sessions"][-1]["executor"]["nodes"] >= 2


DRIVER = """
import asyncio, sys
from pathlib import Path

def main():
    from hippocamp.executors import open_executor
    from hippocamp.runs import SuiteOptions, load_suite, run

    spec, store, out, address = sys.argv[1:5]
    suite = load_suite(spec, SuiteOptions(ocr=False, asr=False, embed=False, store=Path(store)))
    executor = open_executor("ray:" + address)
    summary = asyncio.run(run(suite, "rag", "mock", out=Path(out), limit=10, epochs=5, concurrency=2,
                              model_options={"delay": 0.3}, executor=executor))
    print("done", summary.done, summary.skipped)
    executor.close()

if __name__ == "__main__":
    main()
"""


@pytest.mark.slow
def test_ray_run_resumes_after_the_driver_is_killed(ray_address: str, indexed: tuple[str, Path],
                                                    tmp_path: Path) -> None:  # fmt: skip
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    out = tmp_path / "run"
    args = [sys.executable, str(script), indexed[0], str(indexed[1]), str(out), ray_address]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while _lines(out / "episodes.jsonl") < 8 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    first = _lines(out / "episodes.jsonl")
    assert 8 <= first < 50
    again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    done, skipped = map(int, again.stdout.split("done")[-1].split())
    assert skipped == first and done == 50 - first
    local = _run(indexed, tmp_path / "local", None, limit=10, epochs=5)
    assert local.done == 50
    assert _episodes(out) == _episodes(tmp_path / "local")  # no episode twice (checked inside), none missing


@pytest.mark.slow
def test_ray_scores_equal_local(ray_executor: Any, indexed: tuple[str, Path], tmp_path: Path) -> None:
    from hippocamp.models import get_model
    from hippocamp.scoring.judge import make_judge
    from hippocamp.scoring.run_scores import score_run

    _run(indexed, tmp_path / "a", None, limit=10, epochs=2)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    reports = {}
    for name, executor in (("a", None), ("b", ray_executor)):
        judge = make_judge("robust", get_model("mock"))
        reports[name] = asyncio.run(score_run(tmp_path / name, judge, executor=executor))
    assert reports["a"].scored == reports["b"].scored == 20
    assert ray_executor.stats["job"] == "score" and ray_executor.stats["items"] == 20
    lines = {n: sorted((tmp_path / n / "scores.jsonl").read_text().splitlines()) for n in "ab"}
    assert lines["a"] == lines["b"]
    assert reports["a"].summary == reports["b"].summary


@pytest.mark.slow
def test_ray_model_gate_holds_the_limit_across_workers(ray_executor: Any, indexed: tuple[str, Path],
                                                       tmp_path: Path) -> None:  # fmt: skip
    import ray

    from hippocamp.executors.ray_cluster import NAMESPACE, gate_name

    name = f"mock:gate-{uuid.uuid4().hex[:8]}"
    summary = _run(indexed, tmp_path / "gate", ray_executor, model=name, limit=8, delay=0.25, concurrency=4,
                   model_options={"max_concurrency": 1})  # fmt: skip
    assert summary.done == 8
    gate = ray.get_actor(gate_name(name, 1), namespace=NAMESPACE)
    stats = ray.get(gate.stats.remote())
    ray.kill(gate)
    assert stats["limit"] == 1 and stats["most"] == 1 and stats["acquired"] >= 8 and stats["held"] == 0


@pytest.mark.slow
def test_ray_run_with_the_profile_shipped_as_objects(ray_executor: Any, indexed: tuple[str, Path],
                                                     tmp_path: Path) -> None:  # fmt: skip
    _run(indexed, tmp_path / "local", None, limit=6)
    ray_executor.ship = "objects"
    try:
        _run(indexed, tmp_path / "ray", ray_executor, limit=6)
    finally:
        ray_executor.ship = "auto"
    assert ray_executor.stats["reach"] == "objects" and ray_executor.stats["shipped_bytes"] > 100_000
    assert _episodes(tmp_path / "ray") == _episodes(tmp_path / "local")


async def _drain(executor: Any, job: Job[Any, Any]) -> None:
    async for _ in executor.map(job, [1], 1):
        pass


def test_an_address_where_no_cluster_answers_is_a_clear_error_at_once(tmp_path: Path) -> None:
    try:
        import ray  # noqa: F401
    except ImportError as exc:
        require(f"needs the ray extra: {exc}")
    from hippocamp.cli import main

    started = time.monotonic()
    for spec in (f"ray:127.0.0.1:{free_port()}", f"ray://127.0.0.1:{free_port()}"):
        with pytest.raises(ExecutorError, match=r"nothing answers at 127\.0\.0\.1"):
            open_executor(spec)
    result = CliRunner().invoke(main, ["synth", "personas", "--n", "1", "--out", str(tmp_path / "o"),
                                       "--executor", f"ray:127.0.0.1:{free_port()}"])  # fmt: skip
    assert result.exit_code == 2 and "cannot reach the Ray cluster" in result.output
    assert time.monotonic() - started < 60


@pytest.mark.slow
def test_ray_refuses_a_path_it_cannot_ship(ray_executor: Any, tmp_path: Path) -> None:
    with pytest.raises(ExecutorError, match="nowhere: does not exist on this machine"):
        asyncio.run(_drain(ray_executor, Job("x", abs, paths=(tmp_path / "nowhere",))))
    big = tmp_path / "big"
    big.mkdir()
    (big / "blob.bin").write_bytes(b"x" * 2_000_000)
    ray_executor.ship, ray_executor.max_ship_mb = "objects", 1.0
    try:
        with pytest.raises(ExecutorError, match="more than 1 MB to ship"):
            asyncio.run(_drain(ray_executor, Job("x", abs, paths=(big,), relocate=lambda mapping: None)))
        with pytest.raises(ExecutorError, match="cannot ship its files"):
            asyncio.run(_drain(ray_executor, Job("x", abs, paths=(big,))))
    finally:
        ray_executor.ship, ray_executor.max_ship_mb = "auto", 512.0


@pytest.mark.slow
def test_ray_personas_are_byte_identical(ray_address: str, tmp_path: Path) -> None:
    from hippocamp.cli import main

    outs = {}
    for name, executor in (("local", "local"), ("ray", f"ray:{ray_address}")):
        out = tmp_path / name
        result = CliRunner().invoke(main, ["synth", "personas", "--n", "5", "--seed", "11", "--facts", "40",
                                           "--out", str(out), "--executor", executor])  # fmt: skip
        assert "wrote 5 personas" in result.output, result.output
        outs[name] = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert len(outs["local"]) > 5 * 5
    assert outs["local"].keys() == outs["ray"].keys()
    differing = [k for k in outs["local"] if outs["local"][k] != outs["ray"][k]]
    assert differing == []


@pytest.mark.slow
def test_ray_client_address(ray_address: str, indexed: tuple[str, Path], tmp_path: Path) -> None:
    client = os.environ.get("HIPPOCAMP_RAY_CLIENT")
    if not client:
        pytest.skip("HIPPOCAMP_RAY_CLIENT not set (.ci/run starts the head with a Ray Client server)")
    spec, store = indexed
    base = [sys.executable, "-m", "hippocamp", "run", "--suite", spec, "--agent", "rag", "--model", "mock",
            "--limit", "4", "--store", str(store), "--no-ocr", "--no-asr", "--no-embed"]  # fmt: skip
    for name, executor in (("local", "local"), ("client", client)):  # a process of its own: a new connection
        done = subprocess.run([*base, "--out", str(tmp_path / name), "--executor", executor], capture_output=True,
                              text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    assert _episodes(tmp_path / "client") == _episodes(tmp_path / "local")
    manifest = json.loads((tmp_path / "client" / "manifest.json").read_text())
    assert manifest["sessions"][-1]["executor"]["address"] == client


@pytest.mark.slow
def test_ray_kills_an_item_past_its_hard_limit(ray_executor: Any) -> None:
    """A worker stuck in C code (time.sleep here) is killed at the job's limit and the item recorded
    as the job says; the next item runs."""
    job: Job[float, float] = Job("hang", time.sleep, timeout=3.0, on_timeout=lambda item, seconds: -seconds)

    async def main() -> list[tuple[float, Any]]:
        return [(o.item, o.result) async for o in ray_executor.map(job, [60.0, 0.0], 2)]

    started = time.monotonic()
    out = dict(asyncio.run(main()))
    assert out == {60.0: -3.0, 0.0: None}
    assert time.monotonic() - started < 30
    assert ray_executor.stats["timeouts"] == 1


@pytest.mark.slow
def test_ray_gives_up_on_an_item_whose_worker_always_dies(ray_executor: Any) -> None:
    """Retried once, then lost: an outcome with why, no result, and the other items done."""
    job: Job[int, Any] = Job("die", os._exit)
    ray_executor.retries = 1
    try:

        async def main() -> list[Any]:
            return [o async for o in ray_executor.map(job, [1], 1)]

        (outcome,) = asyncio.run(main())
    finally:
        ray_executor.retries = 3
    assert outcome.result is None and outcome.lost
    assert "died" in outcome.lost.lower() or "crash" in outcome.lost.lower(), outcome.lost
    assert ray_executor.stats["lost"] == 1


@pytest.mark.slow
def test_executor_ray_starts_a_ray_for_the_command(tmp_path: Path) -> None:
    """``--executor ray``: a Ray started for this one command (in its own process) and gone after it."""
    try:
        import ray  # noqa: F401
    except ImportError as exc:
        require(f"needs the ray extra: {exc}")
    outs = {}
    for name, executor in (("local", "local"), ("ray", "ray")):
        done = subprocess.run([sys.executable, "-m", "hippocamp", "synth", "personas", "--n", "2", "--seed", "5",
                               "--facts", "30", "--out", str(tmp_path / name), "--executor", executor],
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "RAY_ADDRESS": ""})  # fmt: skip
        assert "wrote 2 personas" in done.stderr + done.stdout, done.stderr[-2000:]
        outs[name] = {p.relative_to(tmp_path / name): p.read_bytes() for p in (tmp_path / name).rglob("*.json*")}
    assert outs["local"] == outs["ray"]
