"""The built-in validation rules: HippoCamp's four (appendix B), the label rule, groundedness,
and the bookkeeping a benchmark maintainer wants checked before anyone runs an agent.

=================  ========================================================================  ========
rule               checks                                                                    severity
=================  ========================================================================  ========
fields             question and answer present, ``QA_type`` known, evidence ids present      error
evidence-refs      (rule 1) every rationale ``evidence_id`` resolves; evidence ids unique    error
file-paths         (rule 2) every top-level and evidence ``file_path`` is a file of the       error
                   profile, inside its root
locators           (rule 3) locators well formed and inside their file: pages within the     error
                   page count, time ranges within the duration, sheets and slides exist
answer-support     (rule 4) numbers, dates, times and names of the answer appear in the      warning
                   linked evidence text
labels             ``basic`` excludes every other reasoning label; labels known              error
groundedness       only planning (the first step) may cite no evidence                        warning
support-set        ``file_number`` = len(``file_path``); ``file_modality``/``file_type``     error /
                   agree with the files; evidence files are in the minimal set                warning
=================  ========================================================================  ========

Every rule is registered under kind ``rule``; a third-party package can add its own through the
``hippocamp.plugins`` entry point and it runs with the built-ins.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator

from hippocamp.dataset.profile import normalize_path
from hippocamp.registry import register
from hippocamp.schema.filetypes import MODALITIES, allowed_modalities, extension, modality_of
from hippocamp.schema.locators import (
    CellRange,
    InvalidLocator,
    LineLocator,
    Locator,
    PageLocator,
    RegionLocator,
    SlideLocator,
    TimeRange,
    UnknownLocator,
    format_timestamp,
)
from hippocamp.schema.problems import Problem, short_repr
from hippocamp.schema.record import QA_TYPES, REASONING_LABELS, HippoCampRecord
from hippocamp.text.facts import DateFact, NameFact, NumberFact, TimeFact, unsupported_facts
from hippocamp.validate.context import CheckContext
from hippocamp.validate.media import MediaInfo

__all__: list[str] = []


@register("rule", "fields")
def check_fields(ctx: CheckContext, rec: HippoCampRecord, i: int) -> Iterator[Problem]:
    """Question and answer are present, the task family is known, evidence items have ids."""
    for name in ("question", "answer"):
        if not getattr(rec, name).strip():
            yield ctx.problem("error", "fields", rec, i, name, f"{name} is empty", expected=f"a non-empty {name}")
    if rec.qa_type is None:
        yield ctx.problem("warning", "fields", rec, i, "QA_type", "task family missing", expected=" or ".join(QA_TYPES))
    elif rec.qa_type not in QA_TYPES:
        yield ctx.problem(
            "error",
            "fields",
            rec,
            i,
            "QA_type",
            "unknown task family",
            expected=" or ".join(QA_TYPES),
            found=rec.qa_type,
        )
    elif rec.qa_type == "profiling" and not (rec.profiling_type or "").strip():
        yield ctx.problem("warning", "fields", rec, i, "profiling_type", "profiling question without a profiling_type")
    for j, ev in enumerate(rec.evidence):
        if not ev.key:
            yield ctx.problem("error", "fields", rec, i, f"evidence[{j}].evidence_id", "evidence item has no id")
        if not (ev.evidence_text or "").strip():
            yield ctx.problem("warning", "fields", rec, i, f"evidence[{j}].evidence_text", "evidence item has no text")
        if ev.modality_type is not None and ev.modality_type not in MODALITIES:
            yield ctx.problem(
                "warning",
                "fields",
                rec,
                i,
                f"evidence[{j}].modality_type",
                "unknown modality",
                expected=", ".join(MODALITIES),
                found=ev.modality_type,
            )


@register("rule", "evidence-refs")
def check_evidence_refs(ctx: CheckContext, rec: HippoCampRecord, i: int) -> Iterator[Problem]:
    """Rule 1: every rationale evidence_id resolves to an evidence item of the same record; ids unique."""
    counts = Counter(ev.key for ev in rec.evidence if ev.key)
    for key, n in counts.items():
        if n > 1:
            yield ctx.problem(
                "error",
                "evidence-refs",
                rec,
                i,
                "evidence",
                f"evidence_id {key!r} used by {n} items",
                expected="evidence ids unique within the record",
            )
    known = set(counts)
    for s, step in enumerate(rec.rationale):
        for ref in step.evidence_keys:
            if ref not in known:
                yield ctx.problem(
                    "error",
                    "evidence-refs",
                    rec,
                    i,
                    f"rationale[{s}].evidence_id",
                    f"cites evidence {ref!r}, which the record does not define",
                    expected="one of " + (", ".join(sorted(known)) or "(no evidence items)"),
                    found=ref,
                )


def _path_problems(ctx: CheckContext, rec: HippoCampRecord, i: int, field: str, path: str) -> Iterator[Problem]:
    if not path.strip():
        yield ctx.problem("error", "file-paths", rec, i, field, "empty file path", expected="a profile-relative path")
        return
    rel = normalize_path(path)
    if os.path.isabs(path.strip()) or path.strip().startswith("~") or rel == ".." or rel.startswith("../"):
        yield ctx.problem(
            "error",
            "file-paths",
            rec,
            i,
            field,
            "path leaves the profile root",
            expected="a path relative to the profile root",
            found=path,
        )
        return
    if ctx.root is None:
        return
    if ctx.resolve(rel) is None:
        target = ctx.root / rel
        if target.is_dir():
            message = "names a folder, not a file"
        elif target.exists():
            message = "resolves outside the profile root (symlink)"
        else:
            message = "no such file in the profile"
        hint = ctx.suggest(rel)
        yield ctx.problem(
            "error",
            "file-paths",
            rec,
            i,
            field,
            message + (f"; did you mean {hint}?" if hint else ""),
            expected=f"a file under {ctx.root}",
            found=path,
        )


@register("rule", "file-paths")
def check_file_paths(ctx: CheckContext, rec: HippoCampRecord, i: int) -> Iterator[Problem]:
    """Rule 2: every top-level and evidence-level file_path is a file of the profile."""
    if not rec.file_path:
        yield ctx.problem("error", "file-paths", rec, i, "file_path", "no supporting files", expected="at least one")
    for j, path in enumerate(rec.file_path):
        yield from _path_problems(ctx, rec, i, f"file_path[{j}]", path)
    for j, ev in enumerate(rec.evidence):
        if not ev.file_path.strip():
            yield ctx.problem("error", "file-paths", rec, i, f"evidence[{j}].file_path", "evidence item names no file")
        elif normalize_path(ev.file_path) not in {normalize_path(p) for p in rec.file_path}:
            yield from _path_problems(ctx, rec, i, f"evidence[{j}].file_path", ev.file_path)


# -- rule 3 ----------------------------------------------------------------------------------------
_PAGED = {"pdf", "docx", "doc", "odt", "pptx", "ppt", "odp", "key", "pages", "epub"}
_SHEETS = {"xlsx", "xlsm", "xls", "ods", "csv", "tsv", "numbers"}
_SLIDES = {"pptx", "ppt", "odp", "key"}


def _fits_unit(loc: Locator, path: str) -> str | None:
    """Why a locator's kind does not fit the file's type, or None when it fits (or cannot be told)."""
    ext, modality = extension(path), modality_of(path)
    if modality is None:
        return None
    if isinstance(loc, TimeRange) and modality not in ("audio", "video"):
        return f"a time range on a {ext or 'extension-less'} file ({modality})"
    if isinstance(loc, PageLocator) and (modality in ("audio", "video", "image") or ext in _SHEETS):
        return f"a page locator on a {ext} file ({modality})"
    if isinstance(loc, SlideLocator) and ext not in _SLIDES and ext != "pdf":
        return f"a slide locator on a {ext} file"
    if isinstance(loc, CellRange) and ext not in _SHEETS:
        return f"a cell locator on a {ext} file"
    if isinstance(loc, RegionLocator) and modality in ("audio",):
        return f"a region locator on an {ext} file ({modality})"
    return None


def _check_pages(info: MediaInfo, loc: PageLocator, ext: str) -> list[tuple[str, str, str | None, str | None]]:
    """(severity, message, expected, found) for a page locator measured against its document."""
    out: list[tuple[str, str, str | None, str | None]] = []
    count = info.pages
    if count is None:
        if ext in _PAGED and loc.system_page is not None:
            note = info.error or "; ".join(info.notes) or "page count unknown"
            out.append(("info", f"page {loc.system_page} not checked: {note}", None, None))
        return out
    last = max(loc.pages(), default=None)
    if last is not None and last > count:
        severity = "warning" if info.pages_approximate else "error"
        where = "the page count the document records" if info.pages_approximate else "the document"
        out.append((severity, f"page {last} is past the end of {where}", f"1..{count}", str(last)))
    if loc.printed_page is not None:
        labels = info.page_labels
        if labels is not None:
            if loc.printed_page not in labels:
                out.append(
                    (
                        "error",
                        f"printed page {loc.printed_page!r} is not a page label of the PDF",
                        "one of its page labels",
                        loc.printed_page,
                    )
                )
            elif (
                loc.system_page is not None
                and loc.system_page <= len(labels)
                and labels[loc.system_page - 1] != loc.printed_page
            ):
                out.append(
                    (
                        "warning",
                        f"system page {loc.system_page} is labelled {labels[loc.system_page - 1]!r}, "
                        f"not {loc.printed_page!r}",
                        labels[loc.system_page - 1],
                        loc.printed_page,
                    )
                )
        elif loc.system_page is not None and loc.system_page <= count and ext == "pdf":
            text = info.page_text(loc.system_page)
            if text is not None and text.strip() and loc.printed_page not in text.split():
                out.append(
                    (
                        "warning",
                        f"printed page {loc.printed_page!r} does not appear on system page {loc.system_page}",
                        None,
                        None,
                    )
                )
    return out


def _check_time(info: MediaInfo, loc: TimeRange, slack: float) -> list[tuple[str, str, str | None, str | None]]:
    out: list[tuple[str, str, str | None, str | None]] = []
    if loc.end is not None and loc.end < loc.start:
        out.append(
            (
                "error",
                "time range ends before it starts",
                "start <= end",
                f"{format_timestamp(loc.start)}-{format_timestamp(loc.end)}",
            )
        )
    if info.duration is None:
        out.append(("info", f"time range not checked: {info.error or 'duration unknown'}", None, None))
    elif loc.stop > info.duration + slack:
        out.append(
            (
                "error",
                "time range runs past the end of the media",
                f"<= {format_timestamp(info.duration)} ({info.duration:.2f} s)",
                format_timestamp(loc.stop),
            )
        )
    return out


def _check_region(info: MediaInfo, loc: RegionLocator, ext: str) -> list[tuple[str, str, str | None, str | None]]:
    out: list[tuple[str, str, str | None, str | None]] = []
    if loc.page is not None and info.pages is not None and loc.page > info.pages:
        out.append(
            ("error", f"region on page {loc.page}, past the end of the document", f"1..{info.pages}", str(loc.page))
        )
    if loc.box is None:
        return out
    _, _, x1, y1 = loc.box
    if loc.box_units == "norm":
        if x1 > 1 or y1 > 1:
            out.append(("error", "normalized box outside 0..1", "coordinates in 0..1", str(list(loc.box))))
        return out
    if info.size_px is not None:
        w, h = info.size_px
        if x1 > w or y1 > h:
            out.append(("error", "box outside the image", f"within {w}x{h} px", str(list(loc.box))))
    elif info.page_sizes is not None and loc.page is not None and loc.page <= len(info.page_sizes):
        w, h = info.page_sizes[loc.page - 1]
        if loc.box_units in (None, "pt") and (x1 > w + 1 or y1 > h + 1):
            out.append(("error", f"box outside page {loc.page}", f"within {w:.0f}x{h:.0f} pt", str(list(loc.box))))
    return out


def _check_cells(info: MediaInfo, loc: CellRange, path: str) -> list[tuple[str, str, str | None, str | None]]:
    out: list[tuple[str, str, str | None, str | None]] = []
    if info.sheets is None:
        return out
    names = list(info.sheets)
    sheet = loc.sheet
    if sheet is None:
        if len(names) != 1:
            out.append(
                ("warning", "cell range names no sheet in a workbook of several", "one of " + ", ".join(names), None)
            )
            return out
        sheet = names[0]
    if sheet not in info.sheets:
        if extension(path) in ("csv", "tsv"):
            sheet = names[0]
        else:
            out.append(("error", f"no sheet named {sheet!r}", "one of " + ", ".join(names), sheet))
            return out
    max_col, max_row = info.sheets[sheet]
    _, _, c1, r1 = loc.bounds()
    if (max_row and r1 > max_row) or (max_col and c1 > max_col):
        out.append(
            (
                "warning",
                f"cells {loc.ref} lie outside the used range of {sheet!r}",
                f"within {max_col} columns x {max_row} rows",
                loc.ref,
            )
        )
    return out


def _check_slide(info: MediaInfo, loc: SlideLocator) -> list[tuple[str, str, str | None, str | None]]:
    count = info.slides if info.slides is not None else info.pages
    last = loc.slide_end or loc.slide
    if count is not None and last > count:
        return [("error", f"slide {last} is past the end of the presentation", f"1..{count}", str(last))]
    return []


def _check_line(info: MediaInfo, loc: LineLocator) -> list[tuple[str, str, str | None, str | None]]:
    last = loc.line_end or loc.line
    if last is not None and info.lines is not None and last > info.lines:
        return [("error", f"line {last} is past the end of the file", f"1..{info.lines}", str(last))]
    return []


@register("rule", "locators")
def check_locators(ctx: CheckContext, rec: HippoCampRecord, i: int) -> Iterator[Problem]:
    """Rule 3: locators well formed, of a unit that fits the file, and within the file's pages or duration."""
    for j, ev in enumerate(rec.evidence):
        info = ctx.media(ev.file_path) if ev.file_path and ctx.root is not None else None
        ext = extension(ev.file_path)
        if info is not None and info.error and ev.locators:
            yield ctx.problem(
                "warning", "locators", rec, i, f"evidence[{j}].file_path", f"file could not be measured: {info.error}"
            )
        for k, loc in enumerate(ev.locators):
            field = f"evidence[{j}].evidence_locator[{k}]"
            if isinstance(loc, InvalidLocator):
                yield ctx.problem(
                    "error",
                    "locators",
                    rec,
                    i,
                    field,
                    f"malformed {loc.unit!r} locator: {loc.error}",
                    found=short_repr(loc.raw),
                )
                continue
            if isinstance(loc, UnknownLocator):
                yield ctx.problem(
                    "warning",
                    "locators",
                    rec,
                    i,
                    field,
                    f"unknown locator unit {loc.unit!r}: kept verbatim, not checked",
                    found=short_repr(loc.raw),
                )
                continue
            mismatch = _fits_unit(loc, ev.file_path)
            if mismatch:
                yield ctx.problem("error", "locators", rec, i, field, f"locator does not fit the file: {mismatch}")
                continue
            if info is None:
                continue
            findings: list[tuple[str, str, str | None, str | None]] = []
            if isinstance(loc, PageLocator):
                findings = _check_pages(info, loc, ext)
            elif isinstance(loc, TimeRange):
                findings = _check_time(info, loc, ctx.options.time_slack)
            elif isinstance(loc, RegionLocator):
                findings = _check_region(info, loc, ext)
            elif isinstance(loc, CellRange):
                findings = _check_cells(info, loc, ev.file_path)
            elif isinstance(loc, SlideLocator):
                findings = _check_slide(info, loc)
            elif isinstance(loc, LineLocator):
                findings = _check_line(info, loc)
            for severity, message, expected, found in findings:
                yield ctx.problem(severity, "locators", rec, i, field, message, expected=expected, found=found)  # type: ignore[arg-type]


# -- rule 4 ----------------------------------------------------------------------------------------
def _kind(fact: NumberFact | DateFact | TimeFact | NameFact) -> str:
    return {NumberFact: "number", DateFact: "date", TimeFact: "time", NameFact: "name"}[type(fact)]


@register("rule", "answer-support")
def check_answer_support(ctx: CheckContext, rec: HippoCampRecord, i: int) -> Iterator[Problem]:
    """Rule 4 (script-level): numbers, dates, times and names of the answer appear in the evidence text."""
    if not ctx.options.answer_support or not rec.answer.strip():
        return
    texts = [ev.evidence_text or "" for ev in rec.evidence]
    texts += [rec.evidence_text_joined or ""]
    texts += rec.gold_text if isinstance(rec.gold_text, list) else [rec.gold_text or ""]
    evidence = "\n".join(t for t in texts if isinstance(t, str) and t.strip())
    if not evidence:
        yield ctx.problem("warning", "answer-support", rec, i, "evidence", "no evidence text to support the answer")
        return
    computed = bool(rec.agent_cap and {"computation", "summarization"} & set(rec.agent_cap.reasoning))
    for fact in unsupported_facts(rec.answer, evidence):
        kind = _kind(fact)
        note = (
            " (the record's reasoning includes computation or summarization: it may be derived)"
            if computed and kind == "number"
            else ""
        )
        yield ctx.problem(
            "warning",
            "answer-support",
            rec,
            i,
            "answer",
            f"{kind} {fact.text!r} of the answer does not appear in the linked evidence text{note}",
            expected="every number, date and name of the answer in the evidence",
            found=fact.text,
        )


@register("rule", "labels")
def check_labels(ctx: CheckContext, rec: HippoCampRecord, i: int) -> Iterator[Problem]:
    """Capability labels: ``basic`` excludes every other reasoning label; reasoning labels are known."""
    cap = rec.agent_cap
    if cap is None:
        yield ctx.problem("warning", "labels", rec, i, "agent_cap", "no capability labels")
        return
    reasoning = cap.reasoning
    if not reasoning:
        yield ctx.problem(
            "warning",
            "labels",
            rec,
            i,
            "agent_cap.reasoning",
            "no reasoning label",
            expected="basic, or any of computation, verification, summarization",
        )
    if "basic" in reasoning and len(set(reasoning)) > 1:
        others = sorted(set(reasoning) - {"basic"})
        yield ctx.problem(
            "error",
            "labels",
            rec,
            i,
            "agent_cap.reasoning",
            "'basic' excludes every other reasoning label",
            expected="basic alone, or higher-order labels without basic",
            found=", ".join(["basic", *others]),
        )
    for label in reasoning:
        if label not in REASONING_LABELS:
            yield ctx.problem(
                "warning",
                "labels",
                rec,
                i,
                "agent_cap.reasoning",
                f"unknown reasoning label {label!r}",
                expected=", ".join(REASONING_LABELS),
                found=label,
            )
    for name, labels in (("search", cap.search), ("perception", cap.perception)):
        if not labels:
            yield ctx.problem("info", "labels", rec, i, f"agent_cap.{name}", f"no {name} label")


@register("rule", "groundedness")
def check_groundedness(ctx: CheckContext, rec: HippoCampRecord, i: int) -> Iterator[Problem]:
    """Only planning steps may cite no evidence: a non-first step without evidence is flagged."""
    if not rec.rationale:
        yield ctx.problem("warning", "groundedness", rec, i, "rationale", "no rationale steps")
        return
    for s, step in enumerate(rec.rationale):
        if s > 0 and not step.evidence_keys:
            yield ctx.problem(
                "warning",
                "groundedness",
                rec,
                i,
                f"rationale[{s}].evidence_id",
                "a step after planning cites no evidence",
                expected="evidence ids for reading, integration and answer steps",
            )
        if not step.rationale_text.strip():
            yield ctx.problem("warning", "groundedness", rec, i, f"rationale[{s}].rationale_text", "empty step")
    cited = {ref for step in rec.rationale for ref in step.evidence_keys}
    for j, ev in enumerate(rec.evidence):
        if ev.key and ev.key not in cited:
            yield ctx.problem(
                "info", "groundedness", rec, i, f"evidence[{j}]", f"evidence {ev.key!r} is cited by no step"
            )


@register("rule", "support-set")
def check_support_set(ctx: CheckContext, rec: HippoCampRecord, i: int) -> Iterator[Problem]:
    """file_number counts file_path; file_modality and file_type agree with the files; evidence files are in the set."""
    paths = [normalize_path(p) for p in rec.file_path if p.strip()]
    if rec.file_number is not None and rec.file_number != len(rec.file_path):
        yield ctx.problem(
            "error",
            "support-set",
            rec,
            i,
            "file_number",
            "file_number is not the size of file_path",
            expected=str(len(rec.file_path)),
            found=str(rec.file_number),
        )
    dupes = [p for p, n in Counter(paths).items() if n > 1]
    if dupes:
        yield ctx.problem(
            "warning", "support-set", rec, i, "file_path", "file listed more than once", found=", ".join(dupes)
        )
    if rec.file_type:
        declared = {t.lower().lstrip(".") for t in rec.file_type}
        actual = {extension(p) for p in paths if extension(p)}
        if actual and declared != actual:
            yield ctx.problem(
                "warning",
                "support-set",
                rec,
                i,
                "file_type",
                "file types differ from the files' extensions",
                expected=", ".join(sorted(actual)),
                found=", ".join(sorted(declared)),
            )
    if rec.file_modality:
        declared_mod = set(rec.file_modality)
        for m in sorted(declared_mod - set(MODALITIES)):
            yield ctx.problem(
                "warning",
                "support-set",
                rec,
                i,
                "file_modality",
                f"unknown modality {m!r}",
                expected=", ".join(MODALITIES),
                found=m,
            )
        for p in paths:
            allowed = allowed_modalities(p)
            if allowed and not allowed & declared_mod:
                yield ctx.problem(
                    "warning",
                    "support-set",
                    rec,
                    i,
                    "file_modality",
                    f"no declared modality fits {p}",
                    expected=" or ".join(sorted(allowed)),
                    found=", ".join(sorted(declared_mod)),
                )
    top = set(paths)
    for j, ev in enumerate(rec.evidence):
        if ev.file_path.strip() and normalize_path(ev.file_path) not in top:
            yield ctx.problem(
                "warning",
                "support-set",
                rec,
                i,
                f"evidence[{j}].file_path",
                "evidence file is not in the record's minimal file set (file_path)",
                found=ev.file_path,
            )
    cited = {normalize_path(ev.file_path) for ev in rec.evidence}
    if rec.evidence:
        for p in paths:
            if p not in cited:
                yield ctx.problem("info", "support-set", rec, i, "file_path", f"{p} has no evidence item")
