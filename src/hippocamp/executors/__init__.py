"""Executors: where the per-item work of ``index``, ``run``, ``score`` and ``synth personas`` runs.

One seam, two implementations. A command builds a `Job` (an async function of one item, plus what the
executor needs to know about it) and hands it with its items to an executor's ``map``; it gets back an
`Outcome` per item, in the order they finish, and writes them itself: the executor never writes the
command's files (``episodes.jsonl``, ``scores.jsonl``, the store), so there is always one writer.
Consume ``map`` inside ``contextlib.aclosing``: leaving the loop early (the writer failed, an
interrupt) then stops the items still running.

- `LocalExecutor` (``--executor local``, the default): the job runs in this process under asyncio, at
  most ``concurrency`` items at a time (readers still run in their walled worker processes).
- `hippocamp.executors.ray_cluster.RayExecutor` (``--executor ray``, ``ray:auto``, ``ray:HOST:PORT``,
  ``ray://HOST:PORT``): each item is a Ray task. The job is pickled once into Ray's object store and
  kept by each worker process, which runs it on its own event loop; a task whose worker dies is run
  again by Ray (``max_retries``), and only a finished task's result reaches the driver, so an item is
  written once or not at all.

`open_executor(spec)` parses the command line's spec; a Ray spec without Ray installed raises
`ExecutorError` saying how to install it.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

__all__ = [
    "SHIP_MODES",
    "Executor",
    "ExecutorError",
    "Job",
    "LocalExecutor",
    "Outcome",
    "open_executor",
    "parse_executor",
    "run_coroutine",
    "stream",
]

I = TypeVar("I")  # noqa: E741
R = TypeVar("R")

#: how a cluster's workers reach profiles and stores: by the same path on shared storage, through Ray's
#: object store (small profiles), or whichever works (``auto``: the path when every node sees it)
SHIP_MODES = ("auto", "path", "objects")

INSTALL_HINT = "pip install 'hippocamp[ray]' (or: pip install 'ray[client]==2.60.0')"


class ExecutorError(Exception):
    """An executor that cannot be used: a bad spec, Ray missing, a cluster that cannot be reached, a
    worker that cannot see a path. The message says what to do."""


@dataclass
class Job(Generic[I, R]):
    """The work done for each item.

    ``fn(item)`` returns the item's result (awaitable or not). On a cluster ``fn`` is pickled (cloudpickle)
    and rebuilt on the workers, so it must not hold open sockets or files: hippocamp's `Model` and `Store`
    pickle as the recipe to open them again (a model string; a store's path)."""

    name: str
    fn: Callable[[I], Awaitable[R] | R]
    #: a cluster cancels an item still running after this many seconds (its worker is killed) and
    #: records ``on_timeout(item, seconds)``; None: no hard limit (the job enforces its own)
    timeout: float | None = None
    on_timeout: Callable[[I, float], R] | None = None
    #: CPUs a cluster reserves for one item
    cpus: float = 1.0
    #: folders and files every worker must see (checked on each node before the first item)
    paths: tuple[Path, ...] = ()
    #: a copy of the job for workers that see the paths only through Ray's object store: ``relocate``
    #: maps each path of ``paths`` to where the worker unpacked it and returns the job to run there
    relocate: Callable[[dict[str, str]], Any] | None = None


@dataclass
class Outcome(Generic[I, R]):
    """One item's end: its ``result``, or ``lost`` with why (the cluster gave up on it: its worker or
    node died more often than the retries allow). A lost item is not a result: write nothing for it,
    and the next run does it again."""

    item: I
    result: R | None = None
    lost: str | None = None


class Executor(Protocol):
    name: str
    #: what each worker can be shipped: False for the local executor (nothing leaves this process)
    remote: bool

    def map(self, job: Job[I, R], items: Sequence[I], concurrency: int) -> AsyncGenerator[Outcome[I, R], None]: ...

    def describe(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


async def _call(fn: Callable[[Any], Any], item: Any) -> Any:
    value = fn(item)
    if inspect.isawaitable(value):
        value = await value
    return value


async def stream(
    items: Sequence[I], outcome_of: Callable[[I], Awaitable[Outcome[I, R]]], concurrency: int
) -> AsyncGenerator[Outcome[I, R], None]:
    """The outcome of every item in the order they finish, at most ``concurrency`` worked out at once
    (each by ``outcome_of``, an asyncio task). An exception raised working one out is raised here, and
    leaving early (an exception, ``aclose``) cancels the items still running: every executor's ``map``."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    queue: asyncio.Queue[tuple[Outcome[I, R] | None, BaseException | None]] = asyncio.Queue()
    slots = asyncio.Semaphore(concurrency)

    async def one(item: I) -> None:
        try:
            async with slots:
                out = await outcome_of(item)
        except asyncio.CancelledError as exc:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # we are being cancelled (the consumer stopped): nothing to hand over
            queue.put_nowait((None, exc))  # the work itself raised it: the consumer raises it
            return
        except BaseException as exc:  # handed to the consumer, which raises it
            queue.put_nowait((None, exc))
            return
        queue.put_nowait((out, None))

    tasks = [asyncio.create_task(one(item)) for item in items]
    try:
        for _ in range(len(tasks)):
            out, error = await queue.get()
            if error is not None:
                raise error
            assert out is not None
            yield out
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@dataclass
class LocalExecutor:
    """Items run in this process: asyncio tasks, at most ``concurrency`` at once (today's behaviour)."""

    name: str = "local"
    remote: bool = False

    def map(self, job: Job[I, R], items: Sequence[I], concurrency: int) -> AsyncGenerator[Outcome[I, R], None]:
        async def outcome_of(item: I) -> Outcome[I, R]:
            return Outcome(item, await _call(job.fn, item))

        return stream(items, outcome_of, concurrency)

    def describe(self) -> dict[str, Any]:
        return {"executor": "local"}

    def close(self) -> None:
        pass


def run_coroutine(coro: Awaitable[R]) -> R:
    """Run ``coro`` to its end from synchronous code, also when this thread already runs an event loop
    (then on a thread of its own)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)  # type: ignore[arg-type]
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()  # type: ignore[arg-type]


def parse_executor(spec: str | None) -> tuple[str, str | None]:
    """``(kind, address)``: ``local`` -> ("local", None); ``ray`` -> ("ray", None) (a Ray started for this
    command); ``ray:auto`` -> ("ray", "auto"); ``ray:HOST:PORT`` -> ("ray", "HOST:PORT") (a cluster's GCS);
    ``ray://HOST:PORT`` -> ("ray", "ray://HOST:PORT") (Ray Client)."""
    text = (spec or "local").strip()
    if text == "local":
        return "local", None
    if text == "ray":
        return "ray", None
    if text.startswith("ray://"):
        if not text[len("ray://") :]:
            raise ExecutorError(f"executor {text!r}: give the head's address, e.g. ray://10.0.0.5:10001")
        return "ray", text
    if text.startswith("ray:"):
        address = text[len("ray:") :]
        if not address:
            raise ExecutorError(f"executor {text!r}: give an address (ray:auto, ray:HOST:PORT)")
        return "ray", address
    raise ExecutorError(
        f"executor {text!r}: use local, ray (a Ray started for this command), ray:auto (the cluster this "
        "machine belongs to), ray:HOST:PORT (a cluster's head) or ray://HOST:PORT (Ray Client)"
    )


def open_executor(spec: str | None = None, ship: str = "auto", **options: Any) -> Executor:
    """The executor a command line names (see `parse_executor`); ``ship`` is one of `SHIP_MODES`.
    A Ray executor connects (or starts its Ray) here: close it when done."""
    kind, address = parse_executor(spec)
    if ship not in SHIP_MODES:
        raise ExecutorError(f"ship {ship!r}: use one of {', '.join(SHIP_MODES)}")
    if kind == "local":
        return LocalExecutor()
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ExecutorError(f"executor {spec!r} needs Ray, which is not installed: {INSTALL_HINT}") from None
    from hippocamp.executors.ray_cluster import RayExecutor

    executor = RayExecutor(address=address, ship=ship, **options)
    executor.connect()
    return executor
