"""The Ray executor against the local one (issue 24): the same work on the local executor and on a Ray started
here with 1 and with 2 CPUs; Ray time / local time for each, the per-task overhead of Ray, the driver's
one-writer ceiling, and what they imply past one machine.

    .venv/bin/python bench/ray_executor.py [--repeat 3] [--scale medium] [--episodes 60] [--json PATH]

Everything is written under a temporary folder (``HOME`` and ``XDG_CACHE_HOME`` too). A configuration is
connected once and reused for all its work, then closed: ``local`` (`LocalExecutor`), ``ray1`` and ``ray2``
(``RayExecutor(address=None, num_cpus=1 or 2)``: ``ray.init(address="local")``, a Ray of this process's own;
no ``ray stop``, no other cluster touched). Each measure is the median of ``--repeat`` runs:

* ``noop``: ``Job("noop", abs)`` over 500 ints, one at a time (round trip) and with 64 asked in flight (pipelined;
  Ray caps the items in flight at its CPUs, one CPU per task): seconds per item; the driver's own CPU per item
  (``getrusage``: the driver process, Ray's threads included).
* ``index``: ``index_profile`` of the generated profile (``professional``, seed 7) into a fresh store, no
  OCR or speech, with embeddings when the embedder is installed; local with ``IndexOptions(workers=2)``.
  The first Ray store of each configuration is compared with the local one (``store_differences``).
* ``run``: ``--episodes`` episodes of agent ``rag`` with model ``mock`` and ``delay`` (0.2 s per call: a model
  server's latency), ``concurrency=4`` everywhere. Answers compared with the local run's. Locally, the
  process's CPU seconds per episode give the episodes' CPU share (CPU / (CPU + model wait)).
* ``score``: the local run's episodes scored with ``make_judge("robust", get_model("mock"))`` (a fresh copy of
  the run each time); ``scores.jsonl`` compared with the local one.
* ``personas``: ``run_set(SetConfig(n=6, seed=11, facts=40))`` (template engine); every file compared byte
  for byte with the local set.
* ``writer``: lines/s that ``DurableLog.append`` (one write, flush, fsync) sustains for the run's episode
  lines (``--writer-lines`` each time) and for score lines, and ``EpisodeLog.append`` (serialising the
  `Episode` too); and the score summary's answer metrics, computed on the driver: the driver's ceiling.

Then the scaling note: per-item overhead against per-item work, and ``min(N * C / t_episode, 1 / s_driver)``
episodes/s for N machines of C CPUs (beside the cap of a model's cluster-wide gate, ``max_concurrency`` 8 by
default), from the figures measured here (one machine only).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CONFIGS = {"local": None, "ray1": 1, "ray2": 2}
NOOP_ITEMS = 500
DELAY = 0.2
PERSONAS = 6


def _cpu() -> float:
    """CPU seconds of this process so far (every thread; not its children)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _measure(fn: Callable[[int], Any], repeat: int) -> dict[str, Any]:
    """``fn(i)`` ``repeat`` times: every wall and driver-CPU time, their medians, and the last result."""
    walls, cpus, result = [], [], None
    for i in range(repeat):
        c0, t0 = _cpu(), time.perf_counter()
        result = fn(i)
        walls.append(time.perf_counter() - t0)
        cpus.append(_cpu() - c0)
    return {"seconds": statistics.median(walls), "driver_cpu": statistics.median(cpus),
            "all": [round(w, 3) for w in walls], "result": result}  # fmt: skip


async def _drain(executor: Any, job: Any, items: list[Any], concurrency: int) -> int:
    async with contextlib.aclosing(executor.map(job, items, concurrency)) as outcomes:
        return sum([1 async for _ in outcomes])


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _answers(out: Path) -> dict[tuple[str, int], tuple[Any, ...]]:
    """What each episode answered, by (task, epoch): equal across executors (times are not)."""
    rows = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    return {(r["task_id"], r["epoch"]): (r["answer"]["text"], r["answer"]["stop"], r["answer"].get("files"),
                                         r["answer"].get("retrieved")) for r in rows}  # fmt: skip


class Bench:
    def __init__(self, tmp: Path, args: argparse.Namespace) -> None:
        self.tmp = tmp
        self.args = args
        self.results: dict[str, Any] = {}
        self.kept: dict[str, dict[str, Any]] = {}  # the first output of each configuration, for comparisons

    # -- the work ----------------------------------------------------------------------------------------
    def prepare(self) -> None:
        from hippocamp.models.embedding import get_embedder
        from hippocamp.models.errors import ModelNotAvailableError
        from hippocamp.runs import SuiteOptions, load_suite
        from hippocamp.synth.build import generate

        try:
            get_embedder()
            self.embed = True
        except ModelNotAvailableError:
            self.embed = False
        t0 = time.perf_counter()
        made = generate(self.tmp / "synth", persona="professional", seed=7, scale=self.args.scale, jobs=2)
        self.root = next(p for p in (self.tmp / "synth").iterdir() if p.is_dir())
        self.spec = str(self.tmp / "synth")
        self.run_store = self.tmp / "run-store.sqlite"
        suite = load_suite(self.spec, SuiteOptions(ocr=False, asr=False, embed=self.embed, store=self.run_store))
        tasks = len(suite.tasks)
        suite.close()
        self.epochs = math.ceil(self.args.episodes / tasks)
        self.limit = self.args.episodes // self.epochs
        self.episodes = self.limit * self.epochs
        self.results["setup"] = {"scale": self.args.scale, "files": made.files, "tasks": tasks, "epochs": self.epochs,
                                 "limit": self.limit, "episodes": self.episodes, "embeddings": self.embed,
                                 "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip
        print(f"profile: {made.files} files, {tasks} questions; {self.episodes} episodes ({self.limit} x {self.epochs} "
              f"epochs); embeddings {'on' if self.embed else 'off (no embedder)'}", flush=True)  # fmt: skip

    def noop(self, executor: Any) -> dict[str, Any]:
        from hippocamp.executors import Job

        job = Job("noop", abs)
        t0 = time.perf_counter()
        asyncio.run(_drain(executor, job, list(range(8)), 8))  # the workers' first task (Ray starts them)
        out: dict[str, Any] = {"first_map_seconds": round(time.perf_counter() - t0, 3)}
        for label, concurrency in (("round trip", 1), ("pipelined", 64)):

            def once(_: int, concurrency: int = concurrency) -> int:
                return asyncio.run(_drain(executor, job, list(range(NOOP_ITEMS)), concurrency))

            m = _measure(once, self.args.repeat)
            in_flight = getattr(executor, "stats", {}).get("in_flight", concurrency)
            out[label] = {"concurrency": concurrency, "in_flight": in_flight, "per_item": m["seconds"] / NOOP_ITEMS,
                          "driver_cpu_per_item": m["driver_cpu"] / NOOP_ITEMS, "all": m["all"]}  # fmt: skip
        return out

    def index(self, name: str, executor: Any) -> dict[str, Any]:
        from hippocamp.perceive.base import PerceiveOptions
        from hippocamp.store import IndexOptions, Store, index_profile

        options = IndexOptions(perceive=PerceiveOptions(ocr=False, asr=False), workers=2, embed=self.embed)

        def once(i: int) -> dict[str, Any]:
            path = self.tmp / "index" / f"{name}-{i}.sqlite"
            path.parent.mkdir(exist_ok=True)
            store = Store(path, root=self.root)
            report = index_profile(self.root, store, options, executor=executor)
            counts = store.counts()
            store.close()
            return {"counts": counts, "failed": len(report.failed), "embedded": report.embedded}

        m = _measure(once, self.args.repeat)
        self.kept.setdefault(name, {})["store"] = self.tmp / "index" / f"{name}-0.sqlite"
        stats = dict(getattr(executor, "stats", {}) or {})
        return {"seconds": m["seconds"], "driver_cpu": m["driver_cpu"], "all": m["all"], **m["result"],
                "tasks": stats.get("items"), "reach": stats.get("reach")}  # fmt: skip

    def run(self, name: str, executor: Any) -> dict[str, Any]:
        from hippocamp.runs import SuiteOptions, load_suite, run

        def once(i: int) -> dict[str, Any]:
            out = self.tmp / "runs" / f"{name}-{i}"
            suite = load_suite(self.spec, SuiteOptions(ocr=False, asr=False, embed=self.embed, store=self.run_store))
            try:  # only run() is timed: _measure's clock also holds the suite's opening, so time it here
                c0, t0 = _cpu(), time.perf_counter()
                work = run(suite, "rag", "mock", out=out, epochs=self.epochs, limit=self.limit, concurrency=4,
                           model_options={"delay": DELAY}, executor=executor)  # fmt: skip
                summary = asyncio.run(work)
                wall, cpu = time.perf_counter() - t0, _cpu() - c0
            finally:
                suite.close()
            assert summary.done == self.episodes and not summary.lost, (summary.done, summary.lost)
            return {"wall": wall, "cpu": cpu, "out": out}

        results = [once(i) for i in range(self.args.repeat)]
        walls = [r["wall"] for r in results]
        cpus = [r["cpu"] for r in results]
        first = results[0]["out"]
        self.kept.setdefault(name, {})["run"] = first
        lines = (first / "episodes.jsonl").read_bytes().splitlines()
        rows = [json.loads(line) for line in lines]
        calls = statistics.mean(r["answer"]["usage"]["calls"] for r in rows)
        return {"seconds": statistics.median(walls), "driver_cpu": statistics.median(cpus),
                "all": [round(w, 3) for w in walls], "episodes": len(rows), "calls_per_episode": calls,
                "episode_wall_s_median": statistics.median(r["wall_s"] for r in rows),
                "episode_model_s_median": statistics.median(r["model_s"] for r in rows),
                "line_bytes_mean": round(statistics.mean(len(line) + 1 for line in lines))}  # fmt: skip

    def score(self, name: str, executor: Any) -> dict[str, Any]:
        from hippocamp.models import get_model
        from hippocamp.scoring.judge import make_judge
        from hippocamp.scoring.run_scores import score_run

        source = self.kept["local"]["run"]

        def once(i: int) -> int:
            target = self.tmp / "scores" / f"{name}-{i}"
            shutil.copytree(source, target)
            for stale in ("scores.jsonl", "scores.summary.json"):
                (target / stale).unlink(missing_ok=True)
            report = asyncio.run(score_run(target, make_judge("robust", get_model("mock")), executor=executor))
            return int(report.scored)

        m = _measure(once, self.args.repeat)
        self.kept.setdefault(name, {})["score"] = self.tmp / "scores" / f"{name}-0"
        return {"seconds": m["seconds"], "driver_cpu": m["driver_cpu"], "all": m["all"], "scored": m["result"]}

    def personas(self, name: str, executor: Any) -> dict[str, Any]:
        from hippocamp.synth.personas.config import SetConfig
        from hippocamp.synth.personas.pipeline import run_set

        def once(i: int) -> int:
            out = self.tmp / "personas" / f"{name}-{i}"
            run_set(SetConfig(out=out, n=PERSONAS, seed=11, facts=40), executor=executor)
            return len(_files(out))

        m = _measure(once, self.args.repeat)
        self.kept.setdefault(name, {})["personas"] = self.tmp / "personas" / f"{name}-0"
        return {"seconds": m["seconds"], "driver_cpu": m["driver_cpu"], "all": m["all"], "files": m["result"]}

    def configuration(self, name: str, cpus: int | None) -> None:
        from hippocamp.executors import LocalExecutor
        from hippocamp.executors.ray_cluster import RayExecutor

        t0 = time.perf_counter()
        if cpus is None:
            executor: Any = LocalExecutor()
        else:
            executor = RayExecutor(address=None, num_cpus=cpus)
            executor.connect()
        started = time.perf_counter() - t0
        try:
            res: dict[str, Any] = {"describe": executor.describe(), "start_seconds": round(started, 2)}
            for stage in ("noop", "index", "run", "score", "personas"):
                t = time.perf_counter()
                res[stage] = self.noop(executor) if stage == "noop" else getattr(self, stage)(name, executor)
                if stage != "noop":
                    res[stage]["in_flight"] = getattr(executor, "stats", {}).get("in_flight")
                print(f"  {name} {stage}: {time.perf_counter() - t:.1f} s", flush=True)
        finally:
            executor.close()
        self.results[name] = res

    # -- checks and the writer -----------------------------------------------------------------------------
    def compare(self) -> None:
        from hippocamp.store import Store
        from hippocamp.store.compare import store_differences

        base = self.kept["local"]
        checks: dict[str, Any] = {}
        for name in ("ray1", "ray2"):
            mine = self.kept[name]
            a, b = Store(base["store"]), Store(mine["store"])
            diffs = store_differences(a, b)
            a.close()
            b.close()
            scores = {n: sorted((p / "scores.jsonl").read_text().splitlines()) for n, p in
                      (("a", base["score"]), ("b", mine["score"]))}  # fmt: skip
            fa, fb = _files(base["personas"]), _files(mine["personas"])
            checks[name] = {
                "store_differences": diffs[:5],
                "store_equal": diffs == [],
                "episodes_equal": _answers(base["run"]) == _answers(mine["run"]),
                "scores_equal": scores["a"] == scores["b"],
                "personas_files": len(fa),
                "personas_identical": fa.keys() == fb.keys() and all(fa[k] == fb[k] for k in fa),
            }
        self.results["checks"] = checks

    def writer(self) -> None:
        """The driver's serial work per item: appending a line (write, flush, fsync), alternating the kinds of
        line ``--repeat`` times; and the score summary's answer metrics, computed on the driver over every
        episode after the items are scored."""
        from hippocamp.durable import DurableLog
        from hippocamp.runs.episodes import EpisodeLog, read_episodes
        from hippocamp.runs.rundir import RunDir
        from hippocamp.scoring.hippocamp import answer_metric_means, gold_records

        run = self.kept["local"]["run"]
        scored = self.kept["local"]["score"] / "scores.jsonl"
        episode_lines = [x + b"\n" for x in (run / "episodes.jsonl").read_bytes().splitlines()]
        kinds: dict[str, tuple[Callable[[Path], Any], list[Any]]] = {
            "episode lines (DurableLog)": (DurableLog, episode_lines),
            "episodes (EpisodeLog: serialise + append)": (EpisodeLog, read_episodes(run / "episodes.jsonl").episodes),
            "score lines (DurableLog)": (DurableLog, [x + b"\n" for x in scored.read_bytes().splitlines()]),
        }  # fmt: skip
        n = self.args.writer_lines
        times: dict[str, list[float]] = {label: [] for label in kinds}
        for i in range(self.args.repeat):
            for label, (make, items) in kinds.items():
                log = make(self.tmp / "writer" / f"{len(times[label])}-{i}-{label.split()[0]}.jsonl")
                log.open()
                t0 = time.perf_counter()
                for k in range(n):
                    log.append(items[k % len(items)])
                times[label].append(time.perf_counter() - t0)
                log.close()
        out: dict[str, Any] = {}
        for label, (_, items) in kinds.items():
            seconds = statistics.median(times[label])
            size = round(statistics.mean(len(x) for x in items)) if isinstance(items[0], bytes) else None
            out[label] = {"lines_per_s": n / seconds, "seconds_per_line": seconds / n, "lines": n, "line_bytes": size,
                          "all": [round(t, 3) for t in times[label]]}  # fmt: skip
        rundir = RunDir.open(run)
        episodes, gold = rundir.episodes().episodes, gold_records(rundir)
        m = _measure(lambda _: answer_metric_means(episodes, gold), self.args.repeat)
        per = m["seconds"] / len(episodes)
        summary = {"seconds_per_line": per, "lines_per_s": 1 / per, "lines": len(episodes), "line_bytes": None}
        out["score summary: answer metrics (driver)"] = {**summary, "all": m["all"]}
        self.results["writer"] = out

    # -- the note --------------------------------------------------------------------------------------------
    def scaling(self) -> dict[str, Any]:
        """Per-item overhead against per-item work, and ``min(N * C / t_episode, 1 / s_driver, gate)``."""
        r, n, cores = self.results, self.episodes, 2
        local_run, ray2_run = r["local"]["run"], r["ray2"]["run"]
        overhead = r["ray2"]["noop"]["pipelined"]["per_item"]
        round_trip = r["ray2"]["noop"]["round trip"]["per_item"]
        items = {"index": r["ray2"]["index"]["tasks"] or 1, "run": n, "score": n, "personas": PERSONAS}
        per_item = {}
        for stage, count in items.items():
            slot = r["ray2"][stage]["seconds"] * cores / count  # what one item holds a Ray CPU for, at most
            per_item[stage] = {"items": count, "slot_seconds": slot, "overhead_share": round_trip / slot}
        calls = local_run["calls_per_episode"]
        cpu_per_episode = local_run["driver_cpu"] / n  # all of an episode's CPU here (its line written too)
        t_episode = cpu_per_episode + DELAY * calls
        append = r["writer"]["episode lines (DurableLog)"]["seconds_per_line"]
        driver_ray = ray2_run["driver_cpu"] / n  # the driver's CPU per episode on Ray (results in, lines out)
        serial = driver_ray + append  # an upper bound: the fsync's wait is not CPU, the CPU holds the write's
        ceiling = 1 / serial
        score_serial = (
            r["ray2"]["score"]["driver_cpu"] / n + r["writer"]["score lines (DurableLog)"]["seconds_per_line"]
        )
        gate = 8  # the default max_concurrency of mock and OpenAI-compatible models: one gate for the cluster
        table = []
        for latency in (DELAY, 5.0, 30.0):
            t = cpu_per_episode + latency * calls + round_trip
            rates = {m: min(m * cores / t, ceiling) for m in (1, 2, 4, 8, 16, 64, 256)}
            saturate, cap = ceiling * t / cores, gate / (latency * calls)
            table.append({"model_latency_s": latency, "t_episode": t, "rates": rates,
                          "machines_to_saturate": saturate, "gate_cap": cap})  # fmt: skip
        return {
            "per_item": per_item,
            "cpu_per_episode": cpu_per_episode,
            "cpu_share": cpu_per_episode / t_episode,
            "t_episode": t_episode,
            "ray_overhead_per_item": overhead,
            "ray_round_trip": round_trip,
            "driver_cpu_per_episode_ray": driver_ray,
            "append_per_episode_line": append,
            "serial_per_episode": serial,
            "driver_ceiling_episodes_per_s": ceiling,
            "score_serial_per_episode": score_serial,
            "driver_ceiling_scores_per_s": 1 / score_serial,
            "machine_rate_model": cores / t_episode,  # each episode task holds one CPU (Job.cpus = 1)
            "machine_rate_measured": n / ray2_run["seconds"],
            "gate": gate,
            "table": table,
        }


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def report(results: dict[str, Any]) -> None:
    s = results["setup"]
    print(f"\n## Ray executor: {s['scale']} profile ({s['files']} files), {s['episodes']} episodes, "
          f"medians of {results['repeat']}\n")  # fmt: skip
    print("| work | local | Ray 1 CPU | Ray 2 CPUs | Ray 1 / local | Ray 2 / local |")
    print("|---|---|---|---|---|---|")
    for label in ("round trip", "pipelined"):
        v = [results[c]["noop"][label]["per_item"] for c in CONFIGS]
        conc = results["local"]["noop"][label]["concurrency"]
        ray = "/".join(str(results[c]["noop"][label]["in_flight"]) for c in ("ray1", "ray2"))
        print(f"| noop, {NOOP_ITEMS} items, {conc} asked in flight (Ray: {ray}) (ms/item) | {v[0] * 1e3:.3f} | "
              f"{v[1] * 1e3:.2f} | {v[2] * 1e3:.2f} | {_ratio(v[1], v[0])} | {_ratio(v[2], v[0])} |")  # fmt: skip
    rows = (("index", f"index {s['files']} files (s)"), ("run", f"run {s['episodes']} episodes (s)"),
            ("score", f"score {s['episodes']} episodes (s)"), ("personas", f"{PERSONAS} personas (s)"))  # fmt: skip
    for key, label in rows:
        v = [results[c][key]["seconds"] for c in CONFIGS]
        print(f"| {label} | {v[0]:.2f} | {v[1]:.2f} | {v[2]:.2f} | {_ratio(v[1], v[0])} | {_ratio(v[2], v[0])} |")
    print("\ndriver CPU per item (ms): " + "; ".join(
        f"{c}: noop {results[c]['noop']['pipelined']['driver_cpu_per_item'] * 1e3:.2f}, "
        f"episode {results[c]['run']['driver_cpu'] / s['episodes'] * 1e3:.1f}, "
        f"score {results[c]['score']['driver_cpu'] / s['episodes'] * 1e3:.1f}" for c in CONFIGS))  # fmt: skip
    print(
        "Ray start (s): "
        + ", ".join(
            f"{c} {results[c]['start_seconds']} (first map {results[c]['noop']['first_map_seconds']})"
            for c in CONFIGS
            if c != "local"
        )
    )
    for name, check in results["checks"].items():
        print(f"{name} equals local: store {check['store_equal']}, episodes {check['episodes_equal']}, scores "
              f"{check['scores_equal']}, personas byte-identical {check['personas_identical']} "
              f"({check['personas_files']} files)")  # fmt: skip
    print("\n| one writer | lines/s | ms/line | bytes/line |")
    print("|---|---|---|---|")
    for label, w in results["writer"].items():
        print(f"| {label} | {w['lines_per_s']:.0f} | {w['seconds_per_line'] * 1e3:.2f} | {w['line_bytes'] or '-'} |")
    sc = results["scaling"]
    print(f"\nepisode: {sc['cpu_per_episode'] * 1e3:.0f} ms CPU + {DELAY:g} s model wait per call "
          f"-> CPU share {sc['cpu_share']:.0%}; Ray overhead {sc['ray_overhead_per_item'] * 1e3:.2f} ms/item "
          f"pipelined, {sc['ray_round_trip'] * 1e3:.2f} ms round trip")  # fmt: skip
    print(f"driver serial cost per episode on Ray: {sc['driver_cpu_per_episode_ray'] * 1e3:.1f} ms CPU + "
          f"{sc['append_per_episode_line'] * 1e3:.2f} ms append = {sc['serial_per_episode'] * 1e3:.1f} ms "
          f"-> ceiling {sc['driver_ceiling_episodes_per_s']:.0f} episodes/s")  # fmt: skip
    print(f"scores on Ray: {sc['score_serial_per_episode'] * 1e3:.1f} ms serial per episode "
          f"-> ceiling {sc['driver_ceiling_scores_per_s']:.0f} scores/s")  # fmt: skip
    print(f"this machine on Ray (2 CPUs): {sc['machine_rate_measured']:.1f} episodes/s measured, "
          f"{sc['machine_rate_model']:.1f} by the model")  # fmt: skip
    print("per item on Ray 2 (slot = seconds x 2 CPUs / items; share = round trip / slot): " + "; ".join(
        f"{k} {v['items']} items, {v['slot_seconds'] * 1e3:.0f} ms, {v['overhead_share']:.1%}"
        for k, v in sc["per_item"].items()))  # fmt: skip
    print("\n| model latency | t_episode | " + " | ".join(f"{m} machines" for m in sc["table"][0]["rates"])
          + " | machines to saturate the driver | gate cap (max_concurrency 8) |")  # fmt: skip
    print("|---|---|" + "---|" * len(sc["table"][0]["rates"]) + "---|---|")
    for row in sc["table"]:
        print(f"| {row['model_latency_s']:g} s | {row['t_episode']:.2f} s | "
              + " | ".join(f"{v:.1f}" for v in row["rates"].values())
              + f" | {row['machines_to_saturate']:.0f} | {row['gate_cap']:.1f} |")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measure (the median is reported)")
    parser.add_argument("--scale", default="medium", choices=("small", "medium"), help="the generated profile")
    parser.add_argument("--episodes", type=int, default=60, help="episodes per run")
    parser.add_argument("--writer-lines", type=int, default=300, help="lines appended per writer measure")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()

    tmp_dir = tempfile.mkdtemp(prefix="hc-ray-bench-")
    tmp = Path(tmp_dir)
    os.environ["HOME"] = str(tmp / "home")
    os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    began = time.perf_counter()
    try:
        bench = Bench(tmp, args)
        bench.prepare()
        for name, cpus in CONFIGS.items():
            print(f"{name}:", flush=True)
            bench.configuration(name, cpus)
        bench.compare()
        bench.writer()
        results = bench.results
        results["repeat"] = args.repeat
        results["scaling"] = bench.scaling()
        results["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
        results["total_seconds"] = round(time.perf_counter() - began, 1)
        report(results)
        print(f"\ntotal {results['total_seconds']:.0f} s")
        if args.json:
            args.json.write_text(json.dumps(results, indent=2, default=str))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
