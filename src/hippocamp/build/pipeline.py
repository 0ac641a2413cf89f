"""`hippocamp build`: a person's files in, a released benchmark profile out, one reviewable stage at a time.

Stages (each writes a versioned JSON artifact and a Markdown report into the work folder; the source is
only ever read):

    inventory -> filter -> extract -> screen -> dedup -> anonymize -> cohere -> review
    ... the contributor reads review.html ... approve -> release

- **inventory** lists and hashes the source's files (a file whose size and time did not change keeps its
  hash from the last run);
- **filter** drops system-generated artifacts by the versioned rule set of `build.artifacts`;
- **extract** reads every remaining file's strings and dates and finds identifiers in them, behind
  perception's wall (`work.extract_one`; cached by content hash, so re-running resumes);
- **screen** checks C1-C3 (`build.screen`); a failed screen stops the build unless ``force``;
- **dedup** groups exact and near duplicates (`build.dedup`) and drops all but one by the keep policy;
- **anonymize** learns every name and identifier, freezes the pseudonyms (private state), rewrites each
  file in its own format under its new name (`work.rewrite_one`, walled, resumable per file), rewrites the
  questions (if given) with the same mapping and paths, and scans every output for residual originals;
- **cohere** checks times, identities and references (`build.cohere`);
- **review** writes ``review.html`` for the contributor; `approve` records who approved which review
  (its hash); `release` refuses an unapproved or changed review and writes the HippoCamp layout.

The work folder holds private material (the extraction cache, the mapping and its secret, the review with
originals in context): it is the contributor's, never released. `release` copies only the anonymized tree,
the rewritten questions and a metadata spreadsheet.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import secrets
import shutil
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hippocamp.build import artifacts, dedup, screen
from hippocamp.build.anonymize import Anonymizer
from hippocamp.build.inventory import SourceFile, inventory
from hippocamp.build.pseudonyms import Pseudonyms
from hippocamp.build.work import Extracted, Rewritten, extract_one, rewrite_one
from hippocamp.perceive.wall import ReaderPool, ReadLimits
from hippocamp.schema.filetypes import extension

__all__ = ["BUILD_VERSION", "BuildConfig", "BuildError", "BuildStopped", "approve", "release", "run_build"]

BUILD_VERSION = "1"
_HASHABLE_IMAGES = {"jpg", "jpeg", "png", "gif", "bmp", "tif", "tiff", "webp"}


class BuildError(Exception):
    """A build that cannot go on (a bad source, questions file or work folder); the message says why."""


class BuildStopped(BuildError):
    """The build stopped on purpose (a failed screen without ``force``, an unapproved release)."""


@dataclass(frozen=True)
class BuildConfig:
    name: str = "Profile"
    questions: Path | None = None
    keep_policy: str = "latest"
    screen: screen.ScreenConfig = field(default_factory=screen.ScreenConfig)
    force: bool = False
    workers: int = 1
    secret: bytes | None = None  # None: a random secret, kept in the work folder's private state
    #: read the text in images and videos (OCR) and the speech in recordings (ASR) to find identifiers the
    #: build cannot rewrite; the review lists them
    perceive_media: bool = True
    limits: ReadLimits = field(default_factory=lambda: ReadLimits(seconds=60.0, memory_mb=1536))

    def public(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k not in ("secret", "limits")}
        out["questions"] = str(self.questions) if self.questions else None
        return out


@dataclass
class BuildState:
    work: Path
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: list[dict[str, str]] = field(default_factory=list)


Progress = Callable[[str, int, int], None]


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _artifact(work: Path, n: int, stage: str, result: dict[str, Any], report: str) -> dict[str, Any]:
    data = {"format": f"hippocamp-build/{BUILD_VERSION}", "stage": stage, "written": _now(), **result}
    _write_json(work / f"{n:02d}-{stage}.json", data)
    (work / f"{n:02d}-{stage}.md").write_text(report, encoding="utf-8")
    return data


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _sha_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- the stages -------------------------------------------------------------------------------------


def _inventory(source: Path, work: Path) -> tuple[list[SourceFile], list[tuple[str, str]]]:
    files, skipped = inventory(source)
    _write_json(work / "00-inventory.json", {"format": f"hippocamp-build/{BUILD_VERSION}", "stage": "inventory",
                                             "source": str(source), "files": [f.to_json() for f in files],
                                             "skipped": skipped})  # fmt: skip
    return files, skipped


def _walled(
    source: Path, tasks: list[tuple[str, int]], fn: Callable[..., Any], config: BuildConfig,
    progress: Progress | None, stage: str,
) -> dict[str, Any]:  # fmt: skip
    results: dict[str, Any] = {}
    if not tasks:
        return results
    with ReaderPool(source, limits=config.limits, workers=config.workers, read=fn) as pool:
        for i, result in enumerate(pool.read([[t] for t in tasks]), 1):
            results[result.path] = result
            if progress:
                progress(stage, i, len(tasks))
    return results


def _per_file(fn: Callable[..., Any], per: dict[str, dict[str, Any]]) -> Callable[..., Any]:
    """A reader-shaped function that looks up its keyword arguments by the file's path."""
    return functools.partial(_dispatch, fn, per)


def _dispatch(fn: Callable[..., Any], per: dict[str, dict[str, Any]], root: Path, rel: str, options: Any) -> Any:
    return fn(root, rel, options, **per[rel])


def _failure(stage: str, rel: str, reason: str) -> dict[str, str]:
    return {"stage": stage, "file": rel, "reason": reason}


def _questions(config: BuildConfig) -> list[dict[str, Any]] | None:
    if config.questions is None:
        return None
    try:
        data = json.loads(Path(config.questions).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BuildError(f"{config.questions}: the questions file could not be read: {exc}") from exc
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise BuildError(f"{config.questions}: expected a JSON list of HippoCamp records")
    return data


def run_build(
    source: Path, work: Path, config: BuildConfig | None = None, progress: Progress | None = None
) -> BuildState:
    """Run every stage up to the review (resuming what a previous run left); see the module's docstring."""
    config = config or BuildConfig()
    source, work = Path(source).resolve(), Path(work).resolve()
    if not source.is_dir():
        raise BuildError(f"{source}: the source must be a folder")
    if work == source or source in work.parents:
        raise BuildError(f"{work}: the work folder must be outside the source (the source is never written)")
    if config.keep_policy not in dedup.KEEP_POLICIES:
        raise BuildError(f"keep policy {config.keep_policy!r}: expected one of {', '.join(dedup.KEEP_POLICIES)}")
    questions = _questions(config)
    for sub in ("extract", "private"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(work / "private", 0o700)
    state = BuildState(work)
    began = time.perf_counter()
    timings: dict[str, float] = {}

    def timed(stage: str, t0: float) -> None:
        timings[stage] = round(time.perf_counter() - t0, 3)

    # inventory + filter
    t0 = time.perf_counter()
    files, skipped = _inventory(source, work)
    timed("inventory", t0)
    t0 = time.perf_counter()
    kept_rels, excluded = artifacts.filter_tree((f.rel, f.size, f.head) for f in files)
    by_rel = {f.rel: f for f in files}
    excluded_rows = [{"file": rel, "rule": v.rule.id, "why": v.rule.description, "matched": v.matched}
                     for rel, v in excluded]  # fmt: skip
    state.stages["filter"] = _artifact(work, 2, "filter", {
        "ruleset": artifacts.RULESET_VERSION, "kept": len(kept_rels), "excluded": excluded_rows,
        "skipped": [{"file": r, "why": w} for r, w in skipped]},
        _filter_report(kept_rels, excluded_rows, skipped))  # fmt: skip
    timed("filter", t0)

    # extract (walled, cached)
    t0 = time.perf_counter()
    per = {rel: {"cache": str(work / "extract"), "sha256": by_rel[rel].sha256, "media": config.perceive_media}
           for rel in kept_rels}  # fmt: skip
    extracted_raw = _walled(source, [(r, by_rel[r].size) for r in kept_rels], _per_file(extract_one, per),
                            config, progress, "extract")  # fmt: skip
    extracted: dict[str, Extracted] = {}
    for rel in kept_rels:
        r = extracted_raw.get(rel)
        if isinstance(r, Extracted) and r.status == "ok":
            extracted[rel] = r
        else:
            reason = getattr(r, "reason", None) or "no result"
            state.failures.append(_failure("extract", rel, reason))
    timed("extract", t0)

    # screen
    t0 = time.perf_counter()
    entities: dict[str, set[str]] = defaultdict(set)
    for rel, r in extracted.items():
        for kind, text, _ in r.findings:
            if kind in ("PERSON", "EMAIL", "ORG") and len(text) > 3:
                entities[f"{kind}:{text.lower()}"].add(rel)
    criteria = screen.screen([(rel, by_rel[rel].mtime) for rel in extracted],
                             {rel: r.dates for rel, r in extracted.items()}, entities, config.screen)  # fmt: skip
    passed = all(c.passed for c in criteria)
    state.stages["screen"] = _artifact(work, 1, "screen", {
        "passed": passed, "forced": config.force and not passed, "criteria": screen.criteria_json(criteria)},
        _screen_report(criteria, config.force))  # fmt: skip
    timed("screen", t0)
    if not passed and not config.force:
        why = "; ".join(f"{c.id}: {c.why}" for c in criteria if not c.passed)
        raise BuildStopped(f"{source}: the source fails screening ({why}); see {work / '01-screen.md'}, "
                           "or pass force to build anyway")  # fmt: skip

    # dedup
    t0 = time.perf_counter()
    candidates = [
        dedup.Candidate(rel, by_rel[rel].size, by_rel[rel].mtime, by_rel[rel].sha256,
                        text=r.content or None,
                        image=(source / rel) if extension(rel) in _HASHABLE_IMAGES else None)
        for rel, r in extracted.items()
    ]  # fmt: skip
    found = _protect_cited(dedup.find_duplicates(candidates, policy=config.keep_policy), questions)
    dropped = found.dropped()
    state.stages["dedup"] = _artifact(work, 3, "dedup", {
        "policy": config.keep_policy, "groups": [asdict(g) for g in found.groups],
        "versions": [asdict(v) for v in found.versions], "dropped": sorted(dropped),
        "not_compared": [{"file": f, "why": w} for f, w in found.skipped]},
        _dedup_report(found))  # fmt: skip
    timed("dedup", t0)
    keep = [rel for rel in extracted if rel not in dropped]

    # anonymize: learn, freeze, rename, rewrite
    t0 = time.perf_counter()
    state_path = work / "private" / "anonymizer.json"
    if state_path.exists():
        old = json.loads(state_path.read_text(encoding="utf-8"))
        secret = bytes.fromhex(old["secret"])
        table = old["table"]
    else:
        secret, table = config.secret or secrets.token_bytes(32), {}
    anonymizer = Anonymizer(Pseudonyms(secret, table))
    for rel in keep:
        for kind, text, how in extracted[rel].findings:
            anonymizer.learn_found(kind, text, how)
    for record in questions or []:
        for text in _record_texts(record):
            anonymizer.learn(text)
    anonymizer.freeze()
    anonymizer.save(state_path)
    renames = _renames(keep, anonymizer)
    out_tree = work / "04-anonymize" / "files"
    out_tree.mkdir(parents=True, exist_ok=True)
    log_path = work / "04-anonymize" / "files.jsonl"
    state_digest = _sha_file(state_path)
    done = _done_rewrites(log_path, state_digest, by_rel)
    todo = [rel for rel in keep if rel not in done]
    per_rw = {rel: {"out": str(out_tree), "state": str(state_path), "new_path": renames[rel]} for rel in todo}
    rewritten_raw = _walled(source, [(r, by_rel[r].size) for r in todo], _per_file(rewrite_one, per_rw),
                            config, progress, "anonymize")  # fmt: skip
    with log_path.open("a", encoding="utf-8") as log:
        for rel in todo:
            r = rewritten_raw.get(rel)
            if not isinstance(r, Rewritten):
                r = Rewritten(rel, reason=getattr(r, "reason", None) or "no result", status="failed")
                (out_tree / renames[rel]).unlink(missing_ok=True)
            row = {**asdict(r), "sha256": by_rel[rel].sha256, "state": state_digest}
            log.write(json.dumps(row, ensure_ascii=False) + "\n")
            done[rel] = row
    rows = [done[rel] for rel in keep]
    for row in rows:
        if row["status"] != "ok":
            state.failures.append(_failure("anonymize", row["path"], row["reason"] or "failed"))
    released = {row["path"]: row["new_path"] for row in rows if row["status"] == "ok"}
    _prune(out_tree, set(released.values()))
    new_questions = _rewrite_questions(questions, anonymizer, released, config.name) if questions is not None else None
    if new_questions is not None:
        _write_json(work / "04-anonymize" / "questions.json", new_questions)
    residual = [{"file": row["new_path"], "where": w, "original": o} for row in rows for w, o in row["residual"]]
    for rel in sorted(released):
        residual += [{"file": released[rel], "where": f"{kind} in {where} (pixels or speech: not rewritten)",
                      "original": text} for where, kind, text in extracted[rel].media]  # fmt: skip
    state.stages["anonymize"] = _artifact(work, 4, "anonymize", {
        "files": len(released), "failed": sum(1 for r in rows if r["status"] != "ok"),
        "renamed": sum(1 for a, b in released.items() if a != b), "edits": sum(r["edits"] for r in rows),
        "residual": residual, "questions": len(new_questions) if new_questions is not None else None,
        "kinds_seen": dict(anonymizer._learned.seen)},
        _anonymize_report(rows, residual))  # fmt: skip
    timed("anonymize", t0)

    # cohere
    t0 = time.perf_counter()
    from hippocamp.build import cohere

    violations = cohere.check(
        out_tree, released, {rel: extracted[rel].dates for rel in released},
        {rel: by_rel[rel].mtime for rel in released},
        anonymizer, new_questions, removed={**{r["file"]: r["rule"] for r in excluded_rows},
                                            **{d: "duplicate" for d in dropped},
                                            **{f["file"]: f["reason"] for f in state.failures}},
        mentions={row["new_path"]: row.get("mentions") or [] for row in rows if row["status"] == "ok"},
        media={rel: [text for _, _, text in extracted[rel].media] for rel in released},
        original_questions=questions,
    )  # fmt: skip
    state.stages["cohere"] = _artifact(work, 5, "cohere", {"violations": [asdict(v) for v in violations]},
                                       cohere.report(violations))  # fmt: skip
    timed("cohere", t0)

    # review
    t0 = time.perf_counter()
    from hippocamp.build import review

    _write_json(work / "failures.json", state.failures)
    summary = {"source": str(source), "name": config.name, "config": config.public(), "timings": timings,
               "files_in": len(files), "files_out": len(released),
               "seconds": round(time.perf_counter() - began, 3)}  # fmt: skip
    tree = [(f.rel, released.get(f.rel, "")) for f in files] + [(r, "") for r, _ in skipped]
    page = review.write(work, summary, state.stages, state.failures, rows, sorted(tree))
    state.stages["review"] = {"page": str(page), "sha256": _sha_file(work / "06-review.json")}
    timed("review", t0)
    return state


def _protect_cited(found: dedup.DedupResult, questions: list[dict[str, Any]] | None) -> dedup.DedupResult:
    """A file a question cites is never dropped as a duplicate (the question's evidence must stay)."""
    cited: set[str] = set()
    for r in questions or []:
        cited.update(p for p in r.get("file_path") or [] if isinstance(p, str))
        cited.update(e["file_path"] for e in r.get("evidence") or [] if isinstance(e, dict) and e.get("file_path"))
    groups = []
    for g in found.groups:
        drop = tuple(d for d in g.drop if d not in cited)
        if drop:
            groups.append(dataclasses.replace(g, drop=drop))
    return dataclasses.replace(found, groups=tuple(groups))


# --- helpers of the anonymize stage -------------------------------------------------------------------


def _renames(keep: list[str], anonymizer: Anonymizer) -> dict[str, str]:
    out: dict[str, str] = {}
    taken: set[str] = set()
    for rel in sorted(keep):
        new = anonymizer.rename(rel)
        base, dot, ext = new.rpartition(".") if "." in new.rsplit("/", 1)[-1] else (new, "", "")
        n = 2
        while new.lower() in taken:
            new = f"{base} ({n}){dot}{ext}"
            n += 1
        taken.add(new.lower())
        out[rel] = new
    return out


def _done_rewrites(log: Path, state_digest: str, by_rel: dict[str, SourceFile]) -> dict[str, dict[str, Any]]:
    done: dict[str, dict[str, Any]] = {}
    if not log.exists():
        return done
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a line cut by a crash: that file is rewritten again
        src = by_rel.get(row.get("path", ""))
        if src is not None and row.get("sha256") == src.sha256 and row.get("state") == state_digest:
            if row.get("status") == "ok" and not (log.parent / "files" / row["new_path"]).exists():
                continue
            done[row["path"]] = row
    return done


def _prune(tree: Path, wanted: set[str]) -> None:
    """Remove outputs of earlier runs that this run does not release (a file now filtered or renamed)."""
    for path in sorted(tree.rglob("*"), reverse=True):
        rel = path.relative_to(tree).as_posix()
        if path.is_file() and rel not in wanted:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


_TEXT_FIELDS = ("question", "answer")


def _record_texts(record: dict[str, Any]) -> list[str]:
    out = [str(record.get(k) or "") for k in _TEXT_FIELDS]
    out += [str(e.get("evidence_text") or "") for e in record.get("evidence") or [] if isinstance(e, dict)]
    out += [str(r.get("rationale_text") or "") for r in record.get("rationale") or [] if isinstance(r, dict)]
    return [t for t in out if t]


def _rewrite_questions(records: list[dict[str, Any]], anonymizer: Anonymizer, released: dict[str, str],
                       name: str) -> list[dict[str, Any]]:  # fmt: skip
    """The questions with the same mapping as the files: texts through the anonymizer, paths renamed; a
    question citing a file that is not released is kept and reported by the coherence check."""
    out = []
    for record in records:
        new = json.loads(json.dumps(record))
        for key in _TEXT_FIELDS:
            if isinstance(new.get(key), str):
                new[key] = anonymizer.apply(new[key])
        new["data_source"] = name
        new["file_path"] = [released.get(p, p) for p in new.get("file_path") or []]
        for ev in new.get("evidence") or []:
            if isinstance(ev, dict):
                ev["file_path"] = released.get(ev.get("file_path", ""), ev.get("file_path", ""))
                if isinstance(ev.get("evidence_text"), str):
                    ev["evidence_text"] = anonymizer.apply(ev["evidence_text"])
        for step in new.get("rationale") or []:
            if isinstance(step, dict) and isinstance(step.get("rationale_text"), str):
                step["rationale_text"] = anonymizer.apply(step["rationale_text"])
        out.append(new)
    return out


# --- approval and release -----------------------------------------------------------------------------


def approve(work: Path, by: str, note: str = "") -> dict[str, Any]:
    """Record that ``by`` approved the current review (bound to its hash)."""
    work = Path(work)
    review_json = work / "06-review.json"
    if not review_json.exists():
        raise BuildError(f"{work}: no review to approve (run the build first)")
    if not by.strip():
        raise BuildError("approval needs the reviewer's name")
    data = {"by": by.strip(), "note": note, "at": _now(), "review_sha256": _sha_file(review_json)}
    _write_json(work / "approval.json", data)
    return data


def release(work: Path, out: Path) -> Path:
    """Write the approved profile in the HippoCamp layout: ``out/<Name>/`` (files), ``out/<Name>.json``
    (questions, when given) and ``out/<Name>_files.xlsx``. Refuses an unapproved or changed review."""
    work, out = Path(work), Path(out)
    review_json = work / "06-review.json"
    approval = work / "approval.json"
    if not approval.exists() or not review_json.exists():
        raise BuildStopped(f"{work}: the profile has not been approved (hippocamp build approve)")
    if json.loads(approval.read_text(encoding="utf-8"))["review_sha256"] != _sha_file(review_json):
        raise BuildStopped(f"{work}: the review changed after it was approved; review and approve again")
    summary = json.loads(review_json.read_text(encoding="utf-8"))["summary"]
    name = summary["name"]
    if out.exists() and any(out.iterdir()):
        raise BuildError(f"{out}: the release folder must be new or empty")
    tree = work / "04-anonymize" / "files"
    shutil.copytree(tree, out / name)
    questions = work / "04-anonymize" / "questions.json"
    if questions.exists():
        shutil.copyfile(questions, out / f"{name}.json")
    _files_sheet(out / f"{name}_files.xlsx", out / name)
    return out


def _files_sheet(path: Path, root: Path) -> None:
    import xlsxwriter  # type: ignore[import-untyped]

    wb = xlsxwriter.Workbook(str(path), {"default_date_format": "yyyy-mm-dd hh:mm:ss"})
    ws = wb.add_worksheet("files")
    ws.write_row(0, 0, ["FilePath", "FileType", "creation_date", "modification_date", "location"])
    files = sorted(p for p in root.rglob("*") if p.is_file())
    for row, p in enumerate(files, 1):
        rel = p.relative_to(root).as_posix()
        stamp = datetime.fromtimestamp(p.stat().st_mtime, UTC).replace(tzinfo=None)
        ws.write_string(row, 0, rel)
        ws.write_string(row, 1, extension(rel))
        ws.write_datetime(row, 2, stamp)
        ws.write_datetime(row, 3, stamp)
    wb.close()


# --- reports ------------------------------------------------------------------------------------------


def _filter_report(kept: list[str], excluded: list[dict[str, str]], skipped: list[tuple[str, str]]) -> str:
    lines = [f"# Filter (rule set {artifacts.RULESET_VERSION})", "", f"{len(kept)} files kept, "
             f"{len(excluded)} excluded as system-generated, {len(skipped)} not regular files.", ""]  # fmt: skip
    lines += [f"- `{r['file']}`: {r['rule']} ({r['why']})" for r in excluded]
    lines += [f"- `{r}`: {w}" for r, w in skipped]
    return "\n".join(lines) + "\n"


def _screen_report(criteria: list[screen.Criterion], force: bool) -> str:
    lines = ["# Screening (HippoCamp appendix A.1)", ""]
    for c in criteria:
        lines.append(f"- **{c.id}** {c.name}: {'pass' if c.passed else 'FAIL'}" + (f" ({c.why})" if c.why else ""))
        lines += [f"  - {k}: {v}" for k, v in c.figures.items()]
    if force and not all(c.passed for c in criteria):
        lines.append("\nThe build went on because it was forced.")
    return "\n".join(lines) + "\n"


def _dedup_report(found: dedup.DedupResult) -> str:
    lines = ["# Duplicates", ""]
    for g in found.groups:
        lines.append(f"- {g.kind} ({g.similarity:.2f}): keep `{g.keep}`, drop " + ", ".join(f"`{d}`" for d in g.drop))
    lines += ["", "## Versions (kept)", ""]
    lines += [f"- {v.stem}: " + ", ".join(f"`{m}`" for m in v.members) for v in found.versions]
    return "\n".join(lines) + "\n"


def _anonymize_report(rows: list[dict[str, Any]], residual: list[dict[str, str]]) -> str:
    ok = [r for r in rows if r["status"] == "ok"]
    lines = ["# Anonymization", "", f"{len(ok)} files rewritten, {len(rows) - len(ok)} failed, "
             f"{sum(r['edits'] for r in ok)} edits, {len(residual)} residual identifiers.", ""]  # fmt: skip
    lines += [f"- residual in `{r['file']}` ({r['where']})" for r in residual[:200]]
    lines += [f"- failed `{r['path']}`: {r['reason']}" for r in rows if r["status"] != "ok"]
    return "\n".join(lines) + "\n"


def rewritten_paths(work: Path) -> dict[str, str]:
    """Source path -> released path of every file the last build rewrote."""
    out = {}
    log = Path(work) / "04-anonymize" / "files.jsonl"
    for line in log.read_text(encoding="utf-8").splitlines() if log.exists() else []:
        row = json.loads(line)
        if row.get("status") == "ok":
            out[row["path"]] = row["new_path"]
    return out
