"""A hard wall around every reader: files are read in worker processes under limits.

Readers are libraries parsing untrusted bytes (PDFs, spreadsheets, calendars, media), and a crafted
file can make one loop for good, allocate gigabytes or crash the interpreter. `ReaderPool` reads
each file in a worker process that

- runs under a memory limit (``RLIMIT_DATA``: heap and anonymous mappings, so a blow-up raises
  ``MemoryError`` inside the reader and the file is recorded as out of memory), without core dumps,
  as the leader of its own process group (programs it starts, tesseract or ffmpeg, die with it);
- gets a wall-clock deadline per file (`ReadLimits.seconds_for`: a base plus an allowance per MB,
  capped); a worker still on one file at its deadline, or whose resident memory passes the limit
  anyway, is killed with its whole group and replaced, and the file is recorded as failed with the
  limit it hit;
- sends one result per file, so a worker that dies (a native crash, the kernel's OOM killer) costs
  only the file it was reading: the rest of its task goes to a fresh worker.

Nothing raises out of `ReaderPool.read` for a bad file: every file it is given comes back as exactly
one `FileResult`. The indexer records failures with their size and time, so a rerun does not read a
file that hit a limit again unless asked (``index --retry-failed``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from hippocamp.perceive.base import PerceiveOptions
from hippocamp.perceive.run import FileResult, perceive_file
from hippocamp.schema.filetypes import modality_of

__all__ = ["ReadLimits", "ReaderPool", "shippable_readers"]

#: what a worker runs for one file: ``read(root, rel, options) -> FileResult`` (a module-level function)
ReadFn = Callable[[Path, str, PerceiveOptions], FileResult]


@dataclass(frozen=True)
class ReadLimits:
    """Limits of one file's read. The defaults let a real file of a personal computer through (an
    hour of speech, a 500-page filing) and stop a crafted one in well under a minute on 2 cores."""

    #: wall-clock seconds every file gets
    seconds: float = 45.0
    #: and this many more per MB of file (transcribing an hour of speech takes minutes)
    seconds_per_mb: float = 10.0
    #: never more than this per file
    max_seconds: float = 1800.0
    #: heap of a worker process (MB); above it allocations fail, and a worker whose resident
    #: memory passes it by a tenth anyway is killed
    memory_mb: int = 1536

    def seconds_for(self, size: int | None) -> float:
        return min(self.max_seconds, self.seconds + self.seconds_per_mb * max(0, size or 0) / 1e6)

    def __post_init__(self) -> None:
        for name in ("seconds", "seconds_per_mb", "max_seconds"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"ReadLimits.{name} must be >= 0, not {getattr(self, name)!r}")
        if self.memory_mb < 64:
            raise ValueError(f"ReadLimits.memory_mb must be at least 64, not {self.memory_mb!r}")


def _failed(rel: str, reason: str) -> FileResult:
    return FileResult(rel, None, modality_of(rel) or "other", "failed", reason=reason)


# -- the worker process --------------------------------------------------------------------------


def _confine(memory_mb: int) -> None:
    """Limits of a worker, set once at its start."""
    import resource

    with contextlib.suppress(OSError):
        os.setpgrp()  # its own group: killing the group ends the programs it started too
    limit = memory_mb * 1024 * 1024
    for kind, value in ((resource.RLIMIT_DATA, limit), (resource.RLIMIT_CORE, 0)):
        with contextlib.suppress(ValueError, OSError):
            _, hard = resource.getrlimit(kind)
            cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(kind, (cap, cap))
    with contextlib.suppress(Exception):  # Linux: die with the parent instead of reading on alone
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def shippable_readers() -> tuple[list[tuple[str, bytes]], set[str]]:
    """The registered readers a worker must be told of (those not built in, pickled by reference),
    and the names of those that cannot be sent (a class defined inside a function): their files are
    read in the calling process."""
    import pickle

    from hippocamp import registry

    builtin = set(registry.BUILTINS["reader"])
    ship: list[tuple[str, bytes]] = []
    local: set[str] = set()
    for name, cls in registry.items("reader"):
        if getattr(cls, "__module__", None) in builtin:
            continue
        try:
            ship.append((name, pickle.dumps(cls)))
        except Exception:
            local.add(name)
    return ship, local


def _adopt(readers: list[tuple[str, bytes]]) -> None:
    """Register in a worker the readers its parent registered at run time."""
    import pickle

    from hippocamp import registry
    from hippocamp.perceive import run

    for name, data in readers:
        try:
            registry.register("reader", name)(pickle.loads(data))
        except Exception:  # its module cannot be imported here: its files are metadata only
            continue
    run._by_ext = None


def _worker_main(
    conn: Connection,
    root: str,
    options: PerceiveOptions,
    memory_mb: int,
    read: ReadFn,
    readers: list[tuple[str, bytes]],
    environ: dict[str, str],
) -> None:
    import gc
    import warnings

    gc.freeze()  # what the fork server imported is never scanned by the collector (no copy-on-write of it)
    # libraries would warn on the user's terminal (PIL's decompression bomb): what a reader could not
    # do is in its file's notes
    warnings.simplefilter("ignore")
    _confine(memory_mb)
    os.environ.clear()  # the caller's environment now (a fork server keeps the one it started with)
    os.environ.update(environ)
    if readers:
        _adopt(readers)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; Ctrl-C reaches it, not us
    base = Path(root)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        for rel in task:
            try:
                result = read(base, rel, options)
            except MemoryError:
                result = _failed(rel, f"out of memory while reading (limit {memory_mb} MB)")
            except BaseException as exc:  # perceive_file never raises; a plug-in read function might
                result = _failed(rel, f"reader failed: {type(exc).__name__}: {exc}")
            if result.reason == "out of memory while reading":
                result.reason = f"out of memory while reading (limit {memory_mb} MB)"
            try:
                conn.send(result)
            except (EOFError, OSError):
                return
            except Exception as exc:  # a result that cannot be pickled: the file fails, the worker goes on
                conn.send(_failed(rel, f"reader result could not be sent: {type(exc).__name__}: {exc}"))


# -- the parent side -----------------------------------------------------------------------------


@dataclass
class _Task:
    rels: list[str]
    sizes: list[int | None]


class _Worker:
    def __init__(
        self,
        ctx: Any,
        root: Path,
        options: PerceiveOptions,
        limits: ReadLimits,
        read: ReadFn,
        readers: list[tuple[str, bytes]],
    ) -> None:
        parent, child = ctx.Pipe(duplex=True)
        args = (child, str(root), options, limits.memory_mb, read, readers, dict(os.environ))
        self.proc = ctx.Process(target=_worker_main, args=args, daemon=True)
        self.proc.start()
        child.close()
        self.conn: Connection = parent
        #: tasks sent and not yet answered in full, in order (the first is being read)
        self.tasks: deque[_Task] = deque()
        self.done = 0  # files of the first task answered
        self.began = 0.0  # when the file in progress began (monotonic)

    @property
    def busy(self) -> bool:
        return bool(self.tasks)

    @property
    def current(self) -> str:
        return self.tasks[0].rels[self.done]

    @property
    def current_size(self) -> int | None:
        return self.tasks[0].sizes[self.done]

    def give(self, task: _Task) -> None:
        if not self.tasks:
            self.done, self.began = 0, time.monotonic()
        self.tasks.append(task)
        self.conn.send(task.rels)

    def answered(self) -> None:
        """The file in progress was answered: the next one begins."""
        self.done += 1
        self.began = time.monotonic()
        if self.done >= len(self.tasks[0].rels):
            self.tasks.popleft()
            self.done = 0

    def remaining(self) -> list[_Task]:
        """The files after the one in progress, for another worker."""
        first = self.tasks[0]
        rest = [_Task(first.rels[self.done + 1 :], first.sizes[self.done + 1 :]), *list(self.tasks)[1:]]
        return [task for task in rest if task.rels]

    def rss_mb(self) -> float:
        try:
            with open(f"/proc/{self.proc.pid}/statm", "rb") as fh:
                return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        except (OSError, ValueError, IndexError):
            return 0.0

    def kill(self) -> None:
        pid = self.proc.pid
        if pid is not None:
            try:
                if os.getpgid(pid) == pid:
                    os.killpg(pid, signal.SIGKILL)
                else:
                    os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.proc.join(5)
        self.conn.close()

    def stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(None)
        self.proc.join(2)
        if self.proc.is_alive():
            self.kill()
        else:
            self.conn.close()


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"killed by {name}"
    return f"exit code {exitcode}"


class ReaderPool:
    """Worker processes that read files of one profile behind the wall (see the module's docstring).

    Use as a context manager; `read` yields one `FileResult` per file given, in the order they finish.
    """

    #: how often deadlines and memory are checked (seconds)
    TICK = 0.2
    #: tasks sent to a worker ahead of its answers
    IN_FLIGHT = 2

    def __init__(
        self,
        root: Path,
        options: PerceiveOptions | None = None,
        limits: ReadLimits | None = None,
        workers: int = 1,
        read: ReadFn = perceive_file,
    ) -> None:
        from hippocamp.paths import process_context

        self.root = Path(root)
        self.options = options or PerceiveOptions()
        self.limits = limits or ReadLimits()
        self.workers = max(1, workers)
        self._read = read
        self._ctx = process_context()
        self._pool: list[_Worker] = []
        self._readers, _ = shippable_readers()
        #: files recorded as failed by the wall (time, memory, a dead worker), for reports and tests
        self.walled: list[tuple[str, str]] = []

    def __enter__(self) -> ReaderPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for worker in self._pool:
            if worker.busy:
                worker.kill()  # interrupted mid-task: nothing it says now is wanted
            else:
                worker.stop()
        self._pool.clear()

    def _spawn(self) -> _Worker:
        worker = _Worker(self._ctx, self.root, self.options, self.limits, self._read, self._readers)
        self._pool.append(worker)
        return worker

    def _replace(self, worker: _Worker) -> None:
        worker.kill()
        self._pool.remove(worker)

    def read(self, tasks: Iterable[list[tuple[str, int | None]]]) -> Iterator[FileResult]:
        """Read tasks of ``(rel, size)`` files (a task goes to one worker at a time); yields a result
        for every file."""
        queue: deque[_Task] = deque(
            _Task([rel for rel, _ in task], [size for _, size in task]) for task in tasks if task
        )
        last_memory_check = 0.0
        while queue or any(w.busy for w in self._pool):
            while queue and len(self._pool) < self.workers:
                self._spawn().give(queue.popleft())
            for worker in self._pool:  # a second task waits in each worker's pipe: no idle round trip
                while queue and len(worker.tasks) < self.IN_FLIGHT:
                    worker.give(queue.popleft())
            busy = [w for w in self._pool if w.busy]
            ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=self.TICK)
            now = time.monotonic()
            for worker in busy:
                if worker.conn in ready or (worker.proc.sentinel in ready and worker.conn.poll()):
                    yield from self._receive(worker, queue)
                elif worker.proc.sentinel in ready:  # died without a word about the file in progress
                    worker.proc.join(1)
                    why = f"reader process died ({_death(worker.proc.exitcode)})"
                    yield from self._give_up(worker, queue, why)
            now = time.monotonic()
            check_memory = now - last_memory_check >= 0.5
            if check_memory:
                last_memory_check = now
            for worker in [w for w in self._pool if w.busy]:
                allowed = self.limits.seconds_for(worker.current_size)
                if now - worker.began > allowed:
                    yield from self._give_up(worker, queue, f"time limit: still reading after {allowed:.0f} s")
                elif check_memory and worker.rss_mb() > self.limits.memory_mb * 1.1:
                    why = f"memory limit: the reader used more than {self.limits.memory_mb} MB"
                    yield from self._give_up(worker, queue, why)

    def _receive(self, worker: _Worker, queue: deque[_Task]) -> Iterator[FileResult]:
        while worker.busy and worker.conn.poll():
            try:
                result = worker.conn.recv()
            except (EOFError, OSError):  # it died mid-message
                worker.proc.join(1)
                yield from self._give_up(worker, queue, f"reader process died ({_death(worker.proc.exitcode)})")
                return
            except Exception as exc:  # a result that cannot be unpickled
                result = _failed(worker.current, f"reader result could not be read: {type(exc).__name__}: {exc}")
            worker.answered()
            yield result

    def _give_up(self, worker: _Worker, queue: deque[_Task], why: str) -> Iterator[FileResult]:
        """Kill ``worker``, record the file it was on as failed with ``why``, requeue the rest."""
        rel = worker.current
        rest = worker.remaining()
        self._replace(worker)
        queue.extendleft(reversed(rest))
        self.walled.append((rel, why))
        yield _failed(rel, why)
