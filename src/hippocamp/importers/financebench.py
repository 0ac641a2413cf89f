"""FinanceBench as a HippoCamp profile: an analyst's computer holding the filings, and the questions
as release-spelled records.

Input (the FinanceBench repository's layout): a questions file (``questions.jsonl`` or
``financebench_open_source.jsonl``), the filings ``pdfs/<doc_name>.pdf`` and optionally the document
table (``documents.jsonl`` or ``financebench_document_information.jsonl``).

Output, in the release layout under ``OUT``: the tree ``<Name>/Work/Filings/<Company>/<Year>/<file>.pdf``
(every filing of ``pdfs/``, hard-linked, else copied), the records ``<Name>.json``, the metadata
``<Name>_files.xlsx``, the import report ``<Name>.import.json`` (what was skipped and why) and the
validation report ``<Name>.validation.json``.

Records: ``id`` = ``financebench_id``; ``file_path`` = the cited filings; one evidence item per
FinanceBench evidence with its ``evidence_text`` and a page locator (FinanceBench pages are 0-based:
``system_page`` = page + 1, plus ``printed_page`` when the PDF defines page labels); ``agent_cap`` =
search ``semantic``, perception ``document_understanding``, reasoning from ``question_reasoning`` by
`REASONING_TABLE`; rationale = a planning step, one reading step per evidence item and, when
FinanceBench gives a justification, an integration step with it. A question whose filing is missing
or unreadable, or whose page is past the end of its filing, is skipped and reported.

Times in ``_files.xlsx``: the end of the document's period when the document table gives one (the date
in an 8-K's name, the quarter's last day for ``2023Q2``, else 31 December of ``doc_period``), else the
source file's modification time.
"""

from __future__ import annotations

import calendar
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from hippocamp.importers._common import ImporterError, validation_summary, write_json
from hippocamp.registry import register
from hippocamp.schema.io import JsonInputError, loads_json
from hippocamp.schema.record import REASONING_LABELS

__all__ = ["REASONING_TABLE", "FinanceBenchImport", "Skipped", "import_financebench", "reasoning_labels"]

IMPORT_FORMAT = "hippocamp-import/1"
QUESTION_FILES = ("questions.jsonl", "financebench_open_source.jsonl")
DOCUMENT_FILES = ("documents.jsonl", "financebench_document_information.jsonl")

#: FinanceBench ``question_reasoning`` phrase (lower case) -> HippoCamp reasoning labels. A value naming
#: several phrases joined by "OR" takes the union; ``basic`` is dropped when a higher-order label is
#: present (it excludes the others); no phrase, or none known, gives ``basic``.
REASONING_TABLE: dict[str, tuple[str, ...]] = {
    "information extraction": ("basic",),
    "numerical reasoning": ("computation",),
    "logical reasoning": ("verification",),
    "logical reasoning (based on numerical reasoning)": ("computation", "verification"),
}

SEARCH_LABELS = ["semantic"]
PERCEPTION_LABELS = ["document_understanding"]
_DOC_TYPES = {"10k": "10-K", "10q": "10-Q", "8k": "8-K", "earnings": "earnings release"}


def reasoning_labels(text: str | None) -> tuple[list[str], list[str]]:
    """(labels, unknown phrases) for a ``question_reasoning`` value, by `REASONING_TABLE`."""
    phrases = [p.strip().lower() for p in re.split(r"\bor\b", text or "", flags=re.IGNORECASE)]
    labels: set[str] = set()
    unknown: list[str] = []
    for phrase in (p for p in phrases if p):
        if phrase in REASONING_TABLE:
            labels.update(REASONING_TABLE[phrase])
        else:
            unknown.append(phrase)
    if len(labels) > 1:
        labels.discard("basic")
    return [lab for lab in REASONING_LABELS if lab in labels] or ["basic"], unknown


@dataclass(frozen=True)
class Skipped:
    """A question not imported: its line in the questions file, its id and why."""

    line: int
    id: str | None
    reason: str


@dataclass
class FinanceBenchImport:
    """What `import_financebench` wrote and found."""

    name: str
    out: Path
    records_path: Path
    files_xlsx: Path
    root: Path
    report_path: Path
    validation_path: Path
    questions: int = 0
    imported: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    files: int = 0
    linked: int = 0
    copied: int = 0
    pages: int = 0
    unknown_reasoning: list[str] = field(default_factory=list)
    validation: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass(frozen=True)
class _Filing:
    doc_name: str
    source: Path
    rel: str
    company: str
    doc_type: str | None
    period: int | None
    when: datetime


@dataclass
class _Pdf:
    pages: int = 0
    labels: list[str] | None = None
    error: str | None = None


# -- reading the input -----------------------------------------------------------------------------
def _first(folder: Path, names: tuple[str, ...]) -> Path | None:
    return next((folder / n for n in names if (folder / n).is_file()), None)


def _read_jsonl(path: Path) -> list[tuple[int, dict[str, Any] | None, str | None]]:
    """(line number, object or None, error) per non-blank line."""
    out: list[tuple[int, dict[str, Any] | None, str | None]] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ImporterError(f"{path}: cannot read: {exc}") from None
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = loads_json(line, path, n)
        except JsonInputError as exc:
            out.append((n, None, str(exc).removeprefix(f"{path}:{n}:").strip()))
            continue
        if not isinstance(obj, dict):
            out.append((n, None, f"expected a JSON object, found {type(obj).__name__}"))
            continue
        out.append((n, obj, None))
    return out


def _clean_part(text: str) -> str:
    """A folder name from a company name: no path separators, no surrounding blanks or dots."""
    return re.sub(r"[/\\]+", "-", text).strip().strip(".") or "Unknown"


def _period_end(doc_name: str, period: int) -> datetime:
    """The end of a document's period: an 8-K's date in its name, a quarter's last day, else 31 December."""
    dated = re.search(r"dated[-_](\d{4})-(\d{2})-(\d{2})", doc_name)
    if dated:
        try:
            return datetime(int(dated[1]), int(dated[2]), int(dated[3]))
        except ValueError:
            pass
    quarter = re.search(r"(\d{4})Q([1-4])", doc_name)
    if quarter and int(quarter[1]) == period:
        month = 3 * int(quarter[2])
        return datetime(period, month, calendar.monthrange(period, month)[1])
    return datetime(period, 12, 31)


def _plan_filings(pdf_dir: Path, documents: dict[str, dict[str, Any]], companies: dict[str, str]) -> list[_Filing]:
    """Where each filing of ``pdf_dir`` goes: ``Work/Filings/<Company>/<Year>/<file name>``."""
    by_prefix: dict[str, str] = {}
    for doc, company in sorted({**{d: str(r.get("company") or "") for d, r in documents.items()}, **companies}.items()):
        if company:
            by_prefix.setdefault(doc.split("_")[0].upper(), company)
    filings = []
    for source in sorted(p for p in pdf_dir.iterdir() if p.is_file() and p.suffix.lower() == ".pdf"):
        doc = source.stem
        info = documents.get(doc, {})
        prefix = doc.split("_")[0]
        company = str(info.get("company") or companies.get(doc) or by_prefix.get(prefix.upper()) or prefix.title())
        period: int | None = None
        raw_period = info.get("doc_period")
        if isinstance(raw_period, int) or (isinstance(raw_period, str) and raw_period.strip().isdigit()):
            period = int(raw_period)
        year = str(period) if period is not None else (m[1] if (m := re.search(r"_(\d{4})", doc)) else None)
        parts = ["Work", "Filings", _clean_part(company), *([year] if year else []), source.name]
        if period is not None:
            when = _period_end(doc, period)
        else:
            when = datetime.fromtimestamp(source.stat().st_mtime, tz=UTC).replace(tzinfo=None, microsecond=0)
        doc_type = str(info["doc_type"]) if info.get("doc_type") else None
        filings.append(_Filing(doc, source, "/".join(parts), company, doc_type, period, when))
    return filings


def _measure(path: Path) -> _Pdf:
    import pypdfium2 as pdfium

    from hippocamp.perceive.pdf import page_labels

    try:
        doc = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        return _Pdf(error=f"not a readable PDF: {exc}")
    try:
        return _Pdf(pages=len(doc), labels=page_labels(doc))
    finally:
        doc.close()


# -- writing the profile ---------------------------------------------------------------------------
def _place(source: Path, target: Path) -> bool:
    """Hard-link ``source`` at ``target`` (True), else copy it with its times (False)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
        return True
    except OSError:
        shutil.copy2(source, target)
        return False


def _files_xlsx(path: Path, filings: list[_Filing]) -> None:
    """The metadata workbook, byte-for-byte deterministic (fixed workbook date, normalized zip)."""
    import xlsxwriter

    from hippocamp.schema.filetypes import extension
    from hippocamp.synth.render.docs import normalize_zip

    wb = xlsxwriter.Workbook(str(path), {"default_date_format": "yyyy-mm-dd hh:mm:ss"})
    wb.set_properties({"created": datetime(2000, 1, 1, tzinfo=UTC)})
    ws = wb.add_worksheet("files")
    ws.write_row(0, 0, ["FilePath", "FileType", "creation_date", "modification_date", "location"])
    folders: set[str] = set()
    for f in filings:
        parent = PurePosixPath(f.rel).parent
        while str(parent) != ".":
            folders.add(str(parent))
            parent = parent.parent
    row = 1
    for folder in sorted(folders):
        ws.write_row(row, 0, [folder, "folder"])
        row += 1
    for f in sorted(filings, key=lambda f: f.rel):
        ws.write_string(row, 0, f.rel)
        ws.write_string(row, 1, extension(f.rel))
        ws.write_datetime(row, 2, f.when)
        ws.write_datetime(row, 3, f.when)
        row += 1
    ws.set_column(0, 0, 70)
    ws.set_column(2, 3, 20)
    wb.close()
    normalize_zip(path)


def _describe(filing: _Filing) -> str:
    kind = _DOC_TYPES.get((filing.doc_type or "").lower(), filing.doc_type or "")
    if kind and filing.period is not None:
        return f"{filing.period} {kind} ({PurePosixPath(filing.rel).name})"
    return PurePosixPath(filing.rel).name


def _record(
    name: str, row: dict[str, Any], qid: str, cited: list[tuple[dict[str, Any], _Filing, _Pdf]], reasoning: list[str]
) -> tuple[dict[str, Any], int]:
    """A release-spelled record, and the number of pages it cites."""
    evidence = []
    steps: list[dict[str, Any]] = []
    for i, (ev, filing, pdf) in enumerate(cited, start=1):
        locators: list[dict[str, Any]] = []
        page = ev.get("evidence_page_num")
        where = ""
        if isinstance(page, int):
            position: dict[str, Any] = {"system_page": page + 1}
            label = pdf.labels[page] if pdf.labels and page < len(pdf.labels) else None
            if label:
                position["printed_page"] = label
            locators.append({"unit": "page", "position": position})
            where = f"page {label} (PDF page {page + 1})" if label and label != str(page + 1) else f"page {page + 1}"
        text = str(ev.get("evidence_text") or "").strip() or str(ev.get("evidence_text_full_page") or "").strip()
        evidence.append(
            {
                "evidence_id": i,
                "file_path": filing.rel,
                "modality_type": "document",
                "evidence_text": text,
                "evidence_locator": locators,
            }
        )
        file_name = PurePosixPath(filing.rel).name
        steps.append(
            {"rationale_text": f"Read {where + ' of ' if where else ''}{file_name}.".strip(), "evidence_id": [i]}
        )
    paths = list(dict.fromkeys(f.rel for _, f, _ in cited))
    filings = list({f.rel: f for _, f, _ in cited}.values())
    company = str(row.get("company") or filings[0].company)
    plan = f"Find {company}'s {' and '.join(_describe(f) for f in filings)} among the filings in Work/Filings."
    ids = [e["evidence_id"] for e in evidence]
    justification = str(row.get("justification") or "").strip()
    if justification:
        steps.append({"rationale_text": justification, "evidence_id": ids})
    elif "computation" in reasoning:
        steps.append({"rationale_text": "Compute the answer from the figures read.", "evidence_id": ids})
    elif "verification" in reasoning:
        steps.append({"rationale_text": "Check the conclusion against what the filing states.", "evidence_id": ids})
    cap = {"search": SEARCH_LABELS, "evidence_perception": PERCEPTION_LABELS, "reasoning": reasoning}
    record = {
        "id": qid,
        "question": str(row.get("question") or "").strip(),
        "answer": str(row.get("answer")).strip(),
        "QA_type": "factual_retention",
        "profiling_type": "",
        "data_source": name,
        "file_path": paths,
        "file_number": len(paths),
        "file_modality": ["document"],
        "file_type": ["pdf"],
        "agent_cap": json.dumps(cap),
        "evidence": evidence,
        "rationale": [{"rationale_text": plan, "evidence_id": []}, *steps],
    }
    return record, sum(1 for e in evidence if e["evidence_locator"])


def _check_row(row: dict[str, Any], n: int, qid: str | None) -> str | None:
    if not qid:
        return "no financebench_id"
    if not str(row.get("question") or "").strip():
        return "empty question"
    if row.get("answer") is None or not str(row["answer"]).strip():
        return "empty answer"
    if not isinstance(row.get("evidence"), list) or not row["evidence"]:
        return "no evidence"
    return None


def _out_is_ours(out: Path, name: str) -> None:
    """Refuse to overwrite a ``<Name>/`` tree this importer did not write."""
    tree = out / name
    if tree.exists() and not (out / f"{name}.import.json").is_file():
        raise ImporterError(f"{tree}: exists and was not written by this importer (no {name}.import.json); refusing")


@register("importer", "financebench")
def import_financebench(source: str | Path, out: str | Path, name: str = "Finance") -> FinanceBenchImport:
    """Import the FinanceBench folder ``source`` as the profile ``name`` under ``out`` (see the module
    docstring); validate it and return counts. Raises `ImporterError` only when the input is unusable."""
    began = time.perf_counter()
    source, out = Path(source), Path(out)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9 _.-]*", name):
        raise ImporterError(f"profile name {name!r}: use letters, digits, space, '_', '.', '-'")
    if not source.is_dir():
        raise ImporterError(f"{source}: not a folder")
    questions_path = _first(source, QUESTION_FILES)
    if questions_path is None:
        raise ImporterError(f"{source}: no questions file (expected one of {', '.join(QUESTION_FILES)})")
    pdf_dir = source / "pdfs"
    if not pdf_dir.is_dir():
        raise ImporterError(f"{source}: no pdfs/ folder with the filings")
    documents: dict[str, dict[str, Any]] = {}
    documents_path = _first(source, DOCUMENT_FILES)
    if documents_path is not None:
        for _, obj, _ in _read_jsonl(documents_path):
            if obj and obj.get("doc_name"):
                documents[str(obj["doc_name"])] = obj
    rows = _read_jsonl(questions_path)
    companies = {
        str(r["doc_name"]): str(r["company"]) for _, r, _ in rows if r and r.get("doc_name") and r.get("company")
    }

    out.mkdir(parents=True, exist_ok=True)
    _out_is_ours(out, name)
    root = out / name
    if root.exists():
        shutil.rmtree(root)
    filings = _plan_filings(pdf_dir, documents, companies)
    by_doc = {f.doc_name: f for f in filings}
    by_doc_folded = {f.doc_name.casefold(): f for f in filings}
    result = FinanceBenchImport(
        name=name,
        out=out,
        records_path=out / f"{name}.json",
        files_xlsx=out / f"{name}_files.xlsx",
        root=root,
        report_path=out / f"{name}.import.json",
        validation_path=out / f"{name}.validation.json",
        questions=len(rows),
        files=len(filings),
    )
    # the marker goes first, so that a run interrupted while placing files can be run again
    write_json(result.report_path, {"format": IMPORT_FORMAT, "importer": "financebench", "complete": False})
    root.mkdir(parents=True)
    for f in filings:
        if _place(f.source, root / f.rel):
            result.linked += 1
        else:
            result.copied += 1

    pdfs: dict[str, _Pdf] = {}
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    unknown: set[str] = set()
    for n, row, error in rows:
        qid = str(row.get("financebench_id") or "").strip() if row else None
        if row is None:
            result.skipped.append(Skipped(n, None, error or "unreadable line"))
            continue
        problem = _check_row(row, n, qid)
        if problem is None and qid in seen:
            problem = f"id {qid!r} appears twice; the first is kept"
        if problem is not None:
            result.skipped.append(Skipped(n, qid or None, problem))
            continue
        assert qid is not None
        cited: list[tuple[dict[str, Any], _Filing, _Pdf]] = []
        for j, ev in enumerate(row["evidence"]):
            if not isinstance(ev, dict):
                problem = f"evidence[{j}] is not an object"
                break
            doc = str(ev.get("doc_name") or row.get("doc_name") or "")
            filing = by_doc.get(doc) or by_doc_folded.get(doc.casefold())
            if filing is None:
                problem = f"filing {doc or '(unnamed)'}.pdf is missing from {pdf_dir}"
                break
            pdf = pdfs.get(filing.doc_name) or pdfs.setdefault(filing.doc_name, _measure(filing.source))
            if pdf.error:
                problem = f"{filing.source.name}: {pdf.error}"
                break
            page = ev.get("evidence_page_num")
            if page is not None and (not isinstance(page, int) or isinstance(page, bool) or page < 0):
                problem = f"evidence[{j}].evidence_page_num {page!r} is not a 0-based page number"
                break
            if isinstance(page, int) and page >= pdf.pages:
                problem = (
                    f"evidence[{j}]: page {page} (0-based) is past the end of {filing.source.name} ({pdf.pages} pages)"
                )
                break
            if not str(ev.get("evidence_text") or ev.get("evidence_text_full_page") or "").strip():
                problem = f"evidence[{j}] has no evidence_text"
                break
            cited.append((ev, filing, pdf))
        if problem is not None:
            result.skipped.append(Skipped(n, qid, problem))
            continue
        labels, unknown_phrases = reasoning_labels(row.get("question_reasoning"))
        unknown.update(unknown_phrases)
        record, pages = _record(name, row, qid, cited, labels)
        records.append(record)
        seen.add(qid)
        result.pages += pages
    result.imported = len(records)
    result.unknown_reasoning = sorted(unknown)

    result.records_path.write_text(json.dumps(records, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    _files_xlsx(result.files_xlsx, filings)
    result.validation = _validate(result)
    result.seconds = time.perf_counter() - began
    write_json(
        result.report_path,
        {
            "format": IMPORT_FORMAT,
            "importer": "financebench",
            "complete": True,
            "source": str(source.resolve()),
            "name": name,
            "questions": result.questions,
            "imported": result.imported,
            "skipped": [s.__dict__ for s in result.skipped],
            "files": result.files,
            "linked": result.linked,
            "copied": result.copied,
            "pages_cited": result.pages,
            "reasoning_table": {k: list(v) for k, v in REASONING_TABLE.items()},
            "unknown_reasoning": result.unknown_reasoning,
            "validation": result.validation,
        },
    )
    return result


def _validate(result: FinanceBenchImport) -> dict[str, Any]:
    from hippocamp.dataset.profile import load_profile
    from hippocamp.validate import validate_profile

    report = validate_profile(load_profile(result.records_path))
    result.validation_path.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return validation_summary(report)
