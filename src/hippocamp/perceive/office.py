"""Office files: Word (DOCX), spreadsheets (XLSX/XLSM, XLS, CSV/TSV) and presentations (PPTX).

One module an idea, re-exported here under the names they always had: the checks every zip-based
Office file passes first (`hippocamp.perceive.ooxml`), Word documents (`hippocamp.perceive.wordproc`),
spreadsheet grids as cell ranges (`hippocamp.perceive.grid`) for workbooks (`hippocamp.perceive.xlsx`:
XLSX and XLS) and CSV/TSV (`hippocamp.perceive.delimited`), and presentations
(`hippocamp.perceive.slides`). Each module says how its segments are located.
"""

from __future__ import annotations

from hippocamp.perceive.delimited import CsvReader, sniff_delimiter
from hippocamp.perceive.grid import MAX_COLUMNS, MAX_GRID_CHARS, MAX_ROWS, cell_text, column_letter
from hippocamp.perceive.ooxml import check_unpacked
from hippocamp.perceive.slides import PptxReader
from hippocamp.perceive.wordproc import DocxReader
from hippocamp.perceive.xlsx import XlsReader, XlsxReader

__all__ = [
    "MAX_COLUMNS",
    "MAX_GRID_CHARS",
    "MAX_ROWS",
    "CsvReader",
    "DocxReader",
    "PptxReader",
    "XlsReader",
    "XlsxReader",
    "cell_text",
    "check_unpacked",
    "column_letter",
    "sniff_delimiter",
]
