"""P-ContextBench suites: personas' app logs, indexed, with one task per case.

``pcontext:DIR`` (or a persona folder, or a folder of them) reads each persona (`hippocamp.perceive.applog`)
and writes one segment per message and per event into a store, under virtual paths rendered as real
files in a view folder outside the persona folder (so a terminal agent sees the logs and never the
answer keys). A task is ``<persona>/<case id>``: the case's question, and instructions (the framing,
the request to cite ids) shown to the model but never searched for. ``env(task)`` confines the episode
to its persona (`hippocamp.envs.applog.AppLogEnv`).
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocamp.envs.applog import AppLogEnv
from hippocamp.paths import cache_dir
from hippocamp.perceive.applog import AppLogError, PersonaLogs, persona_dirs, persona_segments, read_persona
from hippocamp.perceive.run import FileResult, file_info
from hippocamp.runs.suite import Suite, SuiteError, SuiteOptions
from hippocamp.schema.run import Task
from hippocamp.store import Store

__all__ = ["APPLOG_VERSION", "PCONTEXT_PREFIX", "PContextSuite", "claims", "load_pcontext_suite"]

PCONTEXT_PREFIX = "pcontext:"
#: bump when segments are rendered differently: the store is rebuilt
APPLOG_VERSION = "1"


def _digest(dirs: list[Path]) -> str:
    h = hashlib.sha256(APPLOG_VERSION.encode())
    for d in dirs:
        for name in ("messenger.jsonl", "calendar.jsonl", "cases.jsonl"):
            f = d / name
            h.update(f"{d.name}/{name}\0".encode())
            h.update(f.read_bytes() if f.is_file() else b"-")
    return h.hexdigest()


def ingest(personas: list[PersonaLogs], view: Path, store: Store, digest: str) -> int:
    """Write the view files and the store's segments unless the store already holds this digest;
    returns how many segments were written (0 when up to date)."""
    if store.get_meta("applog_digest") == digest and store.files():
        return 0
    shutil.rmtree(view, ignore_errors=True)
    view.mkdir(parents=True, exist_ok=True)
    store.remove_files(list(store.files()))
    items: list[tuple[Any, int | None, int | None, str | None]] = []
    total = 0
    for p in personas:
        for rel, segs in persona_segments(p).items():
            path = view / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            data = ("\n".join(s.text for s in segs) + "\n").encode()
            path.write_bytes(data)
            for i, s in enumerate(segs):
                s.ordinal = i
            result = FileResult(rel, file_info(path), "text", "ok", reader="applog", segments=segs)
            result.sha256 = hashlib.sha256(data).hexdigest()
            items.append((result, path.stat().st_mtime_ns, len(data), f"applog-{APPLOG_VERSION}"))
            total += len(segs)
    store.put_files(items)
    store.set_meta("applog_digest", digest)
    return total


@dataclass
class PContextSuite(Suite):
    """A suite of persona cases: ``gold[task_id]`` is the case (answer key) as a dict; ``personas`` the logs."""

    benchmark: str = "pcontext"
    personas: dict[str, PersonaLogs] = field(default_factory=dict)
    source: Path | None = None

    def env(self, task: Task | None = None) -> AppLogEnv:
        """The environment of one episode; given the task, restricted to its persona (a suite of one
        persona is restricted without it)."""
        persona = task.meta.get("persona") if task is not None else None
        if persona is None and len(self.personas) == 1:
            persona = next(iter(self.personas))
        owner = self.personas[persona].name if persona in self.personas else None
        return AppLogEnv(self.root, self.store, self.searcher, persona=persona, owner=owner)

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out.update({"pcontext_dir": str(self.source), "personas": sorted(self.personas)})
        return out


def _asking(p: PersonaLogs, case: dict[str, Any]) -> tuple[str, str]:
    """(question, instructions) of a case's task: agents search for the question alone, so the framing
    and the request for ids stay out of the query (BM25 on the whole prompt matched 'message', 'event'
    and 'answer' in every log line)."""
    if case["type"] == "T5":
        return case["question"], (
            f"This is {p.name}'s own request to you, the assistant acting for them. Check {p.name}'s messages "
            "and calendar for anything that bears on it, then say what you would do (comply, warn, clarify, "
            "suggest an alternative, require confirmation or refuse) and why, citing the message/event ids "
            "you rely on."
        )
    # the answer first: asked only to "cite the ids", a small model answers with citations alone
    return case["question"], "Answer in a sentence or two, then name the message or event ids your answer rests on."


def load_pcontext_suite(spec: str, options: SuiteOptions | None = None, progress: Any = None) -> PContextSuite:
    options = options or SuiteOptions()
    source = Path(spec.removeprefix(PCONTEXT_PREFIX)).expanduser()
    if not source.is_dir():
        raise SuiteError(f"suite {spec!r}: {source} is not a folder")
    dirs = persona_dirs(source)
    if not dirs:
        raise SuiteError(f"suite {spec!r}: no persona folder (with cases.jsonl) in {source}")
    personas: dict[str, PersonaLogs] = {}
    for d in dirs:
        try:
            p = read_persona(d)
        except AppLogError as exc:
            raise SuiteError(str(exc)) from None
        if p.id in personas:
            raise SuiteError(f"suite {spec!r}: persona id {p.id!r} appears twice")
        personas[p.id] = p
    tasks: list[Task] = []
    gold: dict[str, Any] = {}
    for p in personas.values():
        for case in p.cases:
            tid = f"{p.id}/{case['id']}"
            if tid in gold:
                raise SuiteError(f"{p.dir / 'cases.jsonl'}: case id {case['id']!r} appears twice")
            gold[tid] = case
            question, instructions = _asking(p, case)
            tasks.append(Task(id=tid, question=question, instructions=instructions, profile=p.id,
                              meta={"qa_type": case["type"], "persona": p.id}))  # fmt: skip
    digest = _digest(dirs)
    key = hashlib.sha1(str(source.resolve()).encode()).hexdigest()[:10]
    view = cache_dir() / "pcontext" / f"{source.resolve().name}-{key}"
    view.mkdir(parents=True, exist_ok=True)
    try:
        store = Store(options.store, root=view) if options.store else Store.for_root(view)
    except Exception as exc:
        raise SuiteError(f"suite {spec!r}: {exc}") from exc
    ingest(list(personas.values()), view, store, digest)
    if options.embed:
        from hippocamp.models.errors import ModelNotAvailableError
        from hippocamp.store.indexer import embed_missing

        try:
            embed_missing(store, options.embedder, progress or (lambda *_: None))
        except ModelNotAvailableError:
            if options.embedder is not None:
                raise
    return PContextSuite(name=source.resolve().name, spec=spec, tasks=tasks, gold=gold, root=view, store=store,
                         options=options, dataset_sha256=digest, personas=personas,
                         source=source.resolve())  # fmt: skip


def claims(spec: str) -> bool:
    """A persona folder (with ``cases.jsonl``) or a folder of them."""
    path = Path(spec).expanduser()
    return path.is_dir() and bool(persona_dirs(path))
