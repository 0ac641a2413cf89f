"""The Ray executor: a command's items as Ray tasks on a cluster, results streamed back to its one writer.

Connecting: ``RayExecutor(address=None)`` starts a Ray for this command on this machine (gone when it
ends); ``"auto"`` joins the cluster this machine is part of; ``"HOST:PORT"`` a head's GCS address;
``"ray://HOST:PORT"`` goes through Ray Client (the driver may then sit outside the cluster's network).

Running a `Job`: before the first item, a probe task pinned to every node with CPUs checks that the node
runs the same hippocamp and sees each of the job's paths as this machine does (same size for a file,
same names at the top of a folder). With ``ship="path"`` a node that does not is an error naming the
node and the path; with ``"objects"`` (or ``"auto"`` when the paths add up to at most ``max_ship_mb``)
the files travel once through Ray's object store and each worker unpacks them under its temp folder.
The job is put into the object store once; each worker process keeps the jobs it has rebuilt, and runs
them on an event loop of its own (a model's client stays open across items). Items are tasks named
``hippocamp:<job>`` with ``max_retries``: when a worker process or node dies mid-item, Ray runs the item
again elsewhere, and since only a finished task's result reaches the driver nothing is written twice.

Model calls go through one gate per model (a named, detached Ray actor holding ``max_concurrency``
leases): the limit holds across every worker and every run on the cluster. An embedded model
(``local:``) is loaded by each worker that uses it and keeps its own per-process limit. A lease whose holder dies is
freed when its time runs out (the model's call timeout plus a minute).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path
from typing import Any

from hippocamp.executors import ExecutorError, Job, Outcome, _call, stream

__all__ = ["RayExecutor"]

log = logging.getLogger("hippocamp.executors")
NAMESPACE = "hippocamp"


# -- the driver ----------------------------------------------------------------------------------------
class RayExecutor:
    """See the module docstring. ``num_cpus``: CPUs of a Ray started here (None: all of them)."""

    name = "ray"
    remote = True

    def __init__(
        self,
        address: str | None = None,
        ship: str = "auto",
        max_ship_mb: float = 512.0,
        retries: int = 3,
        num_cpus: int | None = None,
    ) -> None:
        self.address = address
        self.ship = ship
        self.max_ship_mb = max_ship_mb
        self.retries = retries
        self.num_cpus = num_cpus
        self._ray: Any = None
        self._owned = False
        #: what the last ``map`` did: items, lost, timeouts, shipped bytes, how paths reached the workers
        self.stats: dict[str, Any] = {}

    # connection ----------------------------------------------------------------------------------------
    def connect(self) -> None:
        import ray

        self._ray = ray
        if self.address is not None:
            self._check_reachable()
        if ray.is_initialized():  # a caller (a test, a notebook) already connected this process
            return
        quiet = {"logging_level": logging.WARNING, "log_to_driver": False, "namespace": NAMESPACE}
        try:
            if self.address is None:
                ray.init(address="local", num_cpus=self.num_cpus, include_dashboard=False, **quiet)  # type: ignore[arg-type]
            else:
                ray.init(address=self.address, **quiet)  # type: ignore[arg-type]
        except Exception as exc:  # ConnectionError, a version mismatch, a bad address
            where = "start a local Ray" if self.address is None else f"reach the Ray cluster at {self.address}"
            raise ExecutorError(f"cannot {where}: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}") from None
        self._owned = True

    def _check_reachable(self, seconds: float = 10.0) -> None:
        """Something answers at the cluster's address (``ray.init`` waits for minutes on end for a head
        that is not there)."""
        import socket

        target: str | None = self.address
        if target == "auto":
            try:
                from ray._private.services import canonicalize_bootstrap_address

                target = canonicalize_bootstrap_address("auto")
            except Exception:  # no cluster recorded on this machine: ray.init says so at once
                return
        host, _, port = (target or "").removeprefix("ray://").rpartition(":")
        if not port.isdigit():
            return
        try:
            socket.create_connection((host or "127.0.0.1", int(port)), timeout=seconds).close()
        except OSError as exc:
            raise ExecutorError(
                f"cannot reach the Ray cluster at {self.address}: nothing answers at {host}:{port} "
                f"({exc.strerror or type(exc).__name__}); is its head running (ray start --head)?"
            ) from None

    def close(self) -> None:
        if self._owned and self._ray is not None and self._ray.is_initialized():
            self._ray.shutdown()
        self._owned = False

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def nodes(self) -> list[dict[str, Any]]:
        """The alive nodes that can run tasks (some CPU)."""
        return [n for n in self._ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]

    def describe(self) -> dict[str, Any]:
        nodes = self.nodes()
        return {
            "executor": "ray",
            "address": self.address or "started for this command",
            "ray": self._ray.__version__,
            "nodes": len(nodes),
            "cpus": sum(n["Resources"].get("CPU", 0) for n in nodes),
            "ship": self.ship,
        }

    # running a job -------------------------------------------------------------------------------------
    def _reach(self, job: Job[Any, Any]) -> Any:
        """How the job's paths reach the workers: None (by path) or an object ref of the packed files."""
        paths = [Path(p) for p in job.paths]
        self.stats.update({"paths": [str(p) for p in paths], "shipped_bytes": 0, "reach": "path"})
        if not paths:  # nothing to reach: the job carries all it needs
            return None
        blind = [] if self.ship == "objects" else self._blind_nodes(paths)
        if self.ship == "path" or (self.ship == "auto" and not blind):
            if blind:
                node, path = blind[0]
                raise ExecutorError(
                    f"Ray node {node} cannot see {path} as this machine does: put it on storage every node "
                    "mounts at the same path, or pass --ship objects (profiles up to "
                    f"{self.max_ship_mb:g} MB travel through Ray's object store)"
                )
            return None
        if job.relocate is None:
            node, path = blind[0] if blind else ("-", paths[0] if paths else "-")
            raise ExecutorError(f"job {job.name!r} cannot ship its files; Ray node {node} cannot see {path}")
        bundle, size = _pack(paths, self.max_ship_mb)
        self.stats.update({"shipped_bytes": size, "reach": "objects"})
        return self._ray.put(bundle)

    def _probe(self, paths: list[str]) -> list[dict[str, Any]]:
        """What every node with CPUs answers: its host, hippocamp version and how it sees ``paths``; a
        node running another hippocamp version is an error."""
        from ray.exceptions import GetTimeoutError, RayError
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from hippocamp import __version__

        probe = self._ray.remote(num_cpus=0, max_retries=1)(_probe)
        refs = []
        for node in self.nodes():
            strategy = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
            refs.append(probe.options(scheduling_strategy=strategy, name="hippocamp:probe").remote(paths))
        try:
            answers: list[dict[str, Any]] = self._ray.get(refs, timeout=120)
        except GetTimeoutError:
            raise ExecutorError("a Ray node did not answer hippocamp's probe within 120 s (overloaded?)") from None
        except RayError as exc:  # hippocamp missing on a node, a node lost
            first = str(exc).strip().splitlines()[-1][:300]
            raise ExecutorError(f"a Ray node cannot run hippocamp ({first}): install it on every node") from None
        for answer in answers:
            if answer["version"] != __version__:
                raise ExecutorError(
                    f"Ray node {answer['host']} ({answer['node'][:12]}) runs hippocamp {answer['version']}, this "
                    f"machine {__version__}: install the same version on every node"
                )
        return answers

    def _check_versions(self) -> None:
        """Once per connection: every node runs this hippocamp (outputs depend on it)."""
        if not getattr(self, "_versions_checked", False):
            self._probe([])
            self._versions_checked = True

    def _blind_nodes(self, paths: list[Path]) -> list[tuple[str, str]]:
        """(node, path) for every node that does not see a path as this machine does."""
        want = {str(p): _fingerprint(str(p)) for p in paths}
        for p, print_ in want.items():
            if print_ is None:
                raise ExecutorError(f"{p}: does not exist on this machine")
        blind: list[tuple[str, str]] = []
        for answer in self._probe(list(want)):
            where = f"{answer['host']} ({answer['node'][:12]})"
            blind += [(where, p) for p, print_ in want.items() if answer["seen"].get(p) != print_]
        return blind

    async def map(
        self, job: Job[Any, Any], items: Sequence[Any], concurrency: int
    ) -> AsyncGenerator[Outcome[Any, Any], None]:
        ray = self._ray
        from ray.exceptions import RayError, RayTaskError

        self.stats = {"job": job.name, "items": len(items), "lost": 0, "timeouts": 0}
        self._check_versions()
        job_ref = ray.put(job)  # first: pickling a store folds its write-ahead log into the file
        box = [job_ref, self._reach(job)]  # in a list: the worker gets the refs, fetches only what it lacks
        remote = ray.remote(_run_item).options(
            num_cpus=job.cpus, max_retries=self.retries, retry_exceptions=False, name=f"hippocamp:{job.name}"
        )
        # no more in flight than the cluster can start at once: an item's hard limit is counted from its
        # submission, so it must not wait in Ray's queue
        cpus = sum(n["Resources"].get("CPU", 0) for n in self.nodes())
        if job.cpus > 0 and concurrency >= 1:
            concurrency = max(1, min(concurrency, int(cpus // job.cpus) or 1))
        self.stats["in_flight"] = concurrency

        async def wait(ref: Any) -> Any:
            return await ref

        async def outcome_of(item: Any) -> Outcome[Any, Any]:
            ref = remote.remote(box, item)
            try:
                result = await (wait(ref) if job.timeout is None else asyncio.wait_for(wait(ref), job.timeout))
            except TimeoutError:
                ray.cancel(ref, force=True)
                self.stats["timeouts"] += 1
                if job.on_timeout is not None:
                    return Outcome(item, job.on_timeout(item, job.timeout or 0.0))
                return Outcome(item, lost=f"still running after {job.timeout:g} s: cancelled")
            except asyncio.CancelledError:
                ray.cancel(ref, force=True)  # the consumer stopped: so does the task
                raise
            except RayTaskError as exc:  # the job itself raised: the command's error, as it is
                raise exc.as_instanceof_cause() from None
            except RayError as exc:  # its worker or node died more often than the retries allow
                self.stats["lost"] += 1
                return Outcome(item, lost=f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
            return Outcome(item, result)

        started = time.perf_counter()
        try:
            async with contextlib.aclosing(stream(items, outcome_of, concurrency)) as outcomes:
                async for out in outcomes:
                    yield out
        finally:
            self.stats["seconds"] = round(time.perf_counter() - started, 3)


def _fingerprint(path: str) -> str | None:
    """What a node must see at ``path``: a file's size, or the sorted names at the top of a folder."""
    try:
        if os.path.isdir(path):
            names = sorted(os.listdir(path))[:2000]
            return "dir:" + hashlib.sha256("\0".join(names).encode("utf-8", "surrogateescape")).hexdigest()[:16]
        if os.path.isfile(path):
            return f"file:{os.path.getsize(path)}"
    except OSError:
        return None
    return None


def _probe(paths: list[str]) -> dict[str, Any]:
    import socket

    import ray

    from hippocamp import __version__

    return {
        "node": ray.get_runtime_context().get_node_id(),
        "host": socket.gethostname(),
        "version": __version__,
        "seen": {p: _fingerprint(p) for p in paths},
    }


def _pack(paths: list[Path], max_mb: float) -> tuple[dict[str, Any], int]:
    """Every file under ``paths`` as bytes (symbolic links are not followed), refusing more than ``max_mb``;
    ``bundle["digest"]`` is a hash of it all (where workers unpack it: the same files, the same folder)."""
    bundle: dict[str, Any] = {}
    total = 0
    limit = int(max_mb * 1024 * 1024)
    digest = hashlib.sha256()

    def add(data: bytes, name: str) -> bytes:
        nonlocal total
        digest.update(name.encode("utf-8", "surrogateescape") + b"\0" + hashlib.sha256(data).digest())
        total += len(data)
        if total > limit:
            raise ExecutorError(
                f"{', '.join(map(str, paths))}: more than {max_mb:g} MB to ship through Ray's object store; put "
                "them on storage every node mounts at the same path (--ship path)"
            )
        return data

    for path in paths:
        if path.is_file():
            bundle[str(path)] = ("file", add(path.read_bytes(), str(path)))
            continue
        files: dict[str, bytes] = {}
        for folder, dirs, names in os.walk(path):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
            for name in names:
                full = os.path.join(folder, name)
                if os.path.islink(full) or not os.path.isfile(full):
                    continue
                files[os.path.relpath(full, path)] = add(Path(full).read_bytes(), full)
        bundle[str(path)] = ("dir", files)
    return {"digest": digest.hexdigest()[:24], "paths": bundle}, total


# -- the workers ---------------------------------------------------------------------------------------
_JOBS: OrderedDict[str, Any] = OrderedDict()
_KEEP_JOBS = 4
_LOOP: asyncio.AbstractEventLoop | None = None
_LOOP_LOCK = threading.Lock()


def _worker_loop() -> asyncio.AbstractEventLoop:
    """This worker process's event loop, on a thread of its own (clients opened by a job live on it)."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="hippocamp-jobs", daemon=True).start()
            _LOOP = loop
    return _LOOP


#: unpacked bundles not used for this long are removed when another is unpacked
KEEP_UNPACKED_S = 24 * 3600


def _unpack(bundle: dict[str, Any]) -> dict[str, str]:
    """Write a shipped bundle under this node's temp folder, once per content (a later command shipping
    the same files reuses it); the map of driver paths to where they now are."""
    home = Path(tempfile.gettempdir()) / "hippocamp-ray"
    base = home / bundle["digest"]
    if not (base / ".complete").exists():
        tmp = home / f"{bundle['digest']}.{uuid.uuid4().hex[:8]}"
        for n, (path, (kind, data)) in enumerate(bundle["paths"].items()):
            target = tmp / str(n) / Path(path).name
            if kind == "file":
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            else:
                for rel, content in data.items():
                    dest = target / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(content)
                target.mkdir(parents=True, exist_ok=True)
        (tmp / ".complete").write_text("ok")
        try:
            tmp.rename(base)
        except OSError:  # another worker of this node unpacked it first
            shutil.rmtree(tmp, ignore_errors=True)
        now = time.time()
        for old in home.iterdir():
            with contextlib.suppress(OSError):
                if old != base and now - old.stat().st_mtime > KEEP_UNPACKED_S:
                    shutil.rmtree(old, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.utime(base)  # in use
    return {path: str(base / str(n) / Path(path).name) for n, path in enumerate(bundle["paths"])}


def _job_for(box: list[Any]) -> Any:
    import ray

    job_ref, bundle_ref = box
    key = job_ref.hex() + (bundle_ref.hex() if bundle_ref is not None else "")
    job = _JOBS.get(key)
    if job is None:
        _install_gates()
        job = ray.get(job_ref)
        if bundle_ref is not None:
            job = job.relocate(_unpack(ray.get(bundle_ref)))
        prepare = getattr(job.fn, "prepare", None)
        if prepare is not None:
            prepare()  # e.g. open the stores now: a node that cannot is the command's error, not an item's
        _JOBS[key] = job
        while len(_JOBS) > _KEEP_JOBS:
            _, old = _JOBS.popitem(last=False)
            with contextlib.suppress(Exception):
                getattr(old.fn, "close", lambda: None)()  # e.g. a reader job's walled reader process
    return job


def _run_item(box: list[Any], item: Any) -> Any:
    """One item on a worker: the job (rebuilt once per worker process), run on the worker's loop."""
    job = _job_for(box)
    future = asyncio.run_coroutine_threadsafe(_call(job.fn, item), _worker_loop())
    return future.result()


# -- the cluster-wide model gate -----------------------------------------------------------------------
class _Gate:
    """Leases of one model's concurrency (a Ray actor, async): at most ``limit`` held at a time."""

    def __init__(self, limit: int, lease_s: float) -> None:
        self.limit = max(1, limit)
        self.lease_s = lease_s
        self.held: dict[str, float] = {}
        self.acquired = 0
        self.most = 0
        self.expired = 0
        self.changed: asyncio.Condition | None = None

    def _purge(self) -> None:
        now = time.monotonic()
        for token, until in list(self.held.items()):
            if until < now:  # its holder died or hung: the lease ran out
                del self.held[token]
                self.expired += 1

    async def acquire(self) -> str:
        if self.changed is None:
            self.changed = asyncio.Condition()
        async with self.changed:
            while True:
                self._purge()
                if len(self.held) < self.limit:
                    token = uuid.uuid4().hex
                    self.held[token] = time.monotonic() + self.lease_s
                    self.acquired += 1
                    self.most = max(self.most, len(self.held))
                    return token
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), 1.0)

    async def release(self, token: str) -> None:
        self.held.pop(token, None)
        if self.changed is not None:
            async with self.changed:
                self.changed.notify(1)

    async def stats(self) -> dict[str, Any]:
        return {"limit": self.limit, "held": len(self.held), "most": self.most, "acquired": self.acquired,
                "expired": self.expired}  # fmt: skip


_GATE_CLASS: Any = None


def gate_name(model_id: str, limit: int) -> str:
    digest = hashlib.sha256(model_id.encode()).hexdigest()[:12]
    return f"gate:{digest}:{limit}"


def gate_for(model_id: str, limit: int, lease_s: float) -> Any:
    """The gate actor of a model (created on first use; detached: it outlives the run that made it)."""
    global _GATE_CLASS
    import ray

    if _GATE_CLASS is None:
        _GATE_CLASS = ray.remote(num_cpus=0, max_concurrency=10_000, max_restarts=-1, max_task_retries=-1)(_Gate)
    return _GATE_CLASS.options(
        name=gate_name(model_id, limit), namespace=NAMESPACE, get_if_exists=True, lifetime="detached"
    ).remote(limit, lease_s)


class _Lease:
    """One model call's lease of its gate. A call cancelled while it waits gives back the lease it is
    granted later; the release is sent, not awaited (a cancelled call still sends it)."""

    def __init__(self, gate: Any) -> None:
        self.gate = gate
        self.token: str | None = None

    async def __aenter__(self) -> None:
        ref = self.gate.acquire.remote()
        try:
            self.token = await ref
        except asyncio.CancelledError:
            asyncio.get_running_loop().create_task(self._give_back(ref))
            raise

    async def _give_back(self, ref: Any) -> None:
        with contextlib.suppress(Exception):
            self.gate.release.remote(await ref)

    async def __aexit__(self, *exc: object) -> None:
        if self.token is not None:
            with contextlib.suppress(Exception):
                self.gate.release.remote(self.token)
            self.token = None


def _install_gates() -> None:
    """From now on, every `Model` rebuilt in this worker takes its concurrency from the model's gate."""
    from hippocamp.models import client

    def provider(model: Any) -> Any:
        if model.provider == "local":  # an embedded model: each worker runs its own copy, limited there
            return None
        timeout = model.settings.timeout or 300.0
        gate = gate_for(model.id, model.max_concurrency, timeout + 60.0)
        return lambda: _Lease(gate)

    client.set_gate_provider(provider)
