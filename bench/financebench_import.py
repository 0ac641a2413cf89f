"""The FinanceBench importer on the real dev slice (``../shared/data/financebench-dev``) when present.

    .venv/bin/python bench/financebench_import.py [--data DIR] [--out DIR] [--index]

Prints questions imported and skipped (with reasons), filings and their pages, cited pages, how many
evidence items are found on their cited page (read back with PDFium: checks the 0-based to 1-based
conversion; verbatim, and by words against the pages beside it), the validation summary and the time
taken. ``--index`` also indexes the imported profile (BM25 only) and reports pages per second. Without
the data it prints why and exits 0.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

from hippocamp.importers import import_financebench

FINANCEBENCH = Path(__file__).resolve().parents[2] / "shared" / "data" / "financebench-dev"


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _coverage(evidence: str, page: str) -> float:
    """The share of the evidence's words that occur on the page."""
    words = _norm(evidence).split()
    present = set(_norm(page).split())
    return sum(w in present for w in words) / len(words) if words else 0.0


def _evidence_found(records_path: Path, root: Path) -> tuple[int, int, int, int]:
    """(evidence items whose text starts verbatim on the cited page, items whose words are on it (>= 80%)
    more than on the pages beside it, items checked, pages of all filings)."""
    import pypdfium2 as pdfium

    verbatim = best = checked = 0
    docs: dict[str, pdfium.PdfDocument] = {}

    def text(doc: pdfium.PdfDocument, index: int) -> str:
        return doc[index].get_textpage().get_text_range() if 0 <= index < len(doc) else ""

    try:
        for record in json.loads(records_path.read_text(encoding="utf-8")):
            for ev in record["evidence"]:
                if not ev["evidence_locator"]:
                    continue
                page = ev["evidence_locator"][0]["position"]["system_page"]
                path = ev["file_path"]
                doc = docs.get(path) or docs.setdefault(path, pdfium.PdfDocument(str(root / path)))
                here = text(doc, page - 1)
                checked += 1
                verbatim += _norm(ev["evidence_text"])[:200] in _norm(here)
                cover = _coverage(ev["evidence_text"], here)
                beside = max(_coverage(ev["evidence_text"], text(doc, i)) for i in (page - 2, page))
                best += cover >= 0.8 and cover > beside
        pages = 0
        for pdf in sorted(root.rglob("*.pdf")):
            doc = pdfium.PdfDocument(str(pdf))
            pages += len(doc)
            doc.close()
    finally:
        for doc in docs.values():
            doc.close()
    return verbatim, best, checked, pages


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=FINANCEBENCH, help="The FinanceBench folder.")
    parser.add_argument("--out", type=Path, help="Where to write the profile (default: a temporary folder).")
    parser.add_argument("--index", action="store_true", help="Also index the imported profile (BM25 only).")
    args = parser.parse_args()
    if not (args.data / "pdfs").is_dir():
        print(f"skipped: no FinanceBench data at {args.data} (give --data)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        began = time.perf_counter()
        result = import_financebench(args.data, out)
        seconds = time.perf_counter() - began
        verbatim, best, checked, pages = _evidence_found(result.records_path, result.root)
        v = result.validation
        print(f"questions: {result.questions}, imported {result.imported}, skipped {len(result.skipped)}")
        for s in result.skipped:
            print(f"  skipped line {s.line} ({s.id}): {s.reason}")
        print(f"filings: {result.files} ({result.linked} hard-linked, {result.copied} copied), {pages} pages")
        print(
            f"cited pages: {result.pages}; evidence on its cited page: {verbatim}/{checked} verbatim, "
            f"{best}/{checked} by words (>= 80% of them, more than on the pages beside it)"
        )
        print(
            f"validation: {v['records_read']}/{v['records']} records, {v['errors']} errors, "
            f"{v['warnings']} warnings ({', '.join(f'{r}: {c}' for r, c in v['by_rule'].items())})"
        )
        print(f"import + validation: {seconds:.2f} s")
        if args.index:
            from hippocamp.store import IndexOptions, Store, index_profile

            store = Store(out / "Finance.sqlite", root=result.root)
            began = time.perf_counter()
            report = index_profile(result.root, store, IndexOptions(embed=False))
            took = time.perf_counter() - began
            store.close()
            rate = pages / took if took else 0.0
            print(f"index: {report.scanned} files, {report.segments} segments in {took:.1f} s ({rate:.0f} pages/s)")
        return 1 if v["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
