"""Evidence scores: file-level precision/recall/F1 and atomic-unit (AU) matching.

**Files.** Paths are normalized (`normalize_path`): POSIX separators, repeated ``/`` collapsed,
leading ``./`` and ``/`` stripped, trailing ``/`` stripped; duplicates count once. Comparison is
case-sensitive unless ``casefold=True``. Two conventions for empty sets:

==============  ==============================  ==============================  ======================
convention      gold and prediction non-empty   prediction empty                gold empty
==============  ==============================  ==============================  ======================
``hippocamp``   P = tp/|pred|, R = tp/|gold|    P = R = F1 = 0                  P = R = F1 = 0
``set``         the same                        P = 1 (no false positive),      P = 0, R = 1, F1 = 0;
                                                R = 0, F1 = 0; both empty:      both empty: 1, 1, 1
                                                1, 1, 1
==============  ==============================  ==============================  ======================

``hippocamp`` is the release evaluator's (``calculate_file_list_metrics``); F1 = 2PR/(P+R), 0 when
P + R = 0.

**Atomic units.** Each locator maps to units (`atomic_units`): a page or page range → one page AU per
page; a region/table/figure with a page → a region AU on that page; an image region (a box, no page)
→ a box AU; a time range → a temporal span AU; a cell range → a cell AU; slides → one slide AU per
slide; lines, paragraphs or a message → a line AU; a mail/calendar/record item → an item AU. An
evidence item without a readable locator (none given, or only unknown/invalid ones) is one
**whole-file AU**. Identical units count once. Two units match (`units_match`) only within the same
(normalized) file, and then when:

* either is whole-file (a whole file contains every unit of it);
* pages: the same page (ranges longer than `MAX_EXPAND` stay one AU and match by overlap); when a
  side has no page number, the printed labels (``printed_page``, e.g. ``iii``) compare as text;
* page ↔ region: the region lies on that page (the page contains it);
* region/box ↔ region/box: not on different pages, and IoU ≥ ``iou`` when both have boxes in the
  same units; otherwise the same page when both give one, otherwise equal labels;
* time spans: they overlap once the gold span is widened by ``slack`` seconds on each side (a
  point in time is a zero-length span);
* cells: the ranges overlap on the same sheet (a missing sheet matches any);
* slides: the same slide; lines: overlapping line ranges of the same numbering (lines vs
  paragraphs) or the same message id; items: the same id (and occurrence) or index.

A gold AU is recalled when some predicted AU matches it; a predicted AU is precise when it matches
some gold AU. Precision = precise/|pred|, recall = recalled/|gold|, with the same conventions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from hippocamp.schema.locators import (
    CellRange,
    InvalidLocator,
    ItemLocator,
    LineLocator,
    Locator,
    PageLocator,
    RegionLocator,
    SlideLocator,
    TimeRange,
    UnknownLocator,
    overlaps,
    parse_locator,
)

__all__ = [
    "CONVENTIONS",
    "MAX_EXPAND",
    "PRF",
    "AtomicUnit",
    "Convention",
    "atomic_units",
    "au_scores",
    "box_iou",
    "file_scores",
    "normalize_path",
    "normalize_paths",
    "prf",
    "units_match",
]

Convention = Literal["hippocamp", "set"]
CONVENTIONS: tuple[Convention, ...] = ("hippocamp", "set")
#: page and slide ranges up to this length become one AU per page/slide; longer ones stay one AU
MAX_EXPAND = 1000


@dataclass(frozen=True)
class PRF:
    """Precision, recall and F1 with their counts.

    ``tp`` is the recall numerator (gold items found); ``tp_pred`` the precision numerator
    (predicted items that are right). They are equal for file sets and may differ for AUs.
    """

    precision: float
    recall: float
    f1: float
    tp: int
    n_pred: int
    n_gold: int
    convention: Convention
    tp_pred: int | None = None

    def __post_init__(self) -> None:
        if self.tp_pred is None:
            object.__setattr__(self, "tp_pred", self.tp)

    def as_dict(self) -> dict[str, Any]:
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "tp": self.tp,
            "tp_pred": self.tp_pred,
            "n_pred": self.n_pred,
            "n_gold": self.n_gold,
            "convention": self.convention,
        }


def prf(tp_gold: int, tp_pred: int, n_pred: int, n_gold: int, convention: Convention = "hippocamp") -> PRF:
    """P/R/F1 from counts under a convention (see the module docstring)."""
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r}; use one of {CONVENTIONS}")
    if not 0 <= tp_gold <= n_gold or not 0 <= tp_pred <= n_pred:
        raise ValueError(f"counts out of range: tp={tp_gold}/{n_gold}, tp_pred={tp_pred}/{n_pred}")
    if n_pred == 0 or n_gold == 0:
        if convention == "hippocamp":
            p = r = 0.0
        elif n_pred == 0 and n_gold == 0:
            return PRF(1.0, 1.0, 1.0, 0, 0, 0, convention, 0)
        elif n_pred == 0:
            p, r = 1.0, 0.0
        else:
            p, r = 0.0, 1.0
        return PRF(p, r, 0.0, tp_gold, n_pred, n_gold, convention, tp_pred)
    p, r = tp_pred / n_pred, tp_gold / n_gold
    f1 = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return PRF(p, r, f1, tp_gold, n_pred, n_gold, convention, tp_pred)


# -- files ---------------------------------------------------------------------------------------
_SLASHES = re.compile(r"/{2,}")
#: the profile's mount in the release's Docker image and in hippocamp's jail, without the first "/"
_MOUNT = "hippocamp/data/"


def normalize_path(path: str, casefold: bool = False) -> str:
    """``.\\\\a\\\\b.pdf`` → ``a/b.pdf``: POSIX separators, no leading ``./`` or ``/``, no doubled or
    trailing ``/``, no leading ``/hippocamp/data/`` (where the release's image and hippocamp's jail
    mount the profile); ``casefold`` also folds case. ``..`` is kept as written."""
    text = _SLASHES.sub("/", path.strip().replace("\\", "/"))
    while True:
        if text.startswith("./"):
            text = text[2:]
        elif text.startswith("/"):
            text = text[1:]
        else:
            break
    if text.startswith(_MOUNT):
        text = text[len(_MOUNT) :]
    text = text.rstrip("/")
    if text == ".":
        text = ""
    return text.casefold() if casefold else text


def normalize_paths(paths: Iterable[str | None], casefold: bool = False) -> list[str]:
    """Normalized paths in first-seen order, without repeats or empties."""
    seen: dict[str, None] = {}
    for path in paths:
        if isinstance(path, str):
            norm = normalize_path(path, casefold)
            if norm:
                seen.setdefault(norm, None)
    return list(seen)


def file_scores(
    pred: Iterable[str | None] | None,
    gold: Iterable[str | None] | None,
    *,
    convention: Convention = "hippocamp",
    casefold: bool = False,
) -> PRF:
    """File-level P/R/F1 of predicted vs gold paths (``None`` counts as no paths)."""
    p = set(normalize_paths(pred or [], casefold))
    g = set(normalize_paths(gold or [], casefold))
    tp = len(p & g)
    return prf(tp, tp, len(p), len(g), convention)


# -- atomic units --------------------------------------------------------------------------------
@dataclass(frozen=True)
class AtomicUnit:
    """One unit of evidence: a file and where in it (``kind`` ``file`` is the whole file).

    ``span`` is the unit's interval for pages and slides (first, last), time spans (seconds) and
    lines; ``key`` tells units of the same kind apart (identical units are one)."""

    file: str
    kind: str
    key: str = ""
    span: tuple[float, float] | None = None
    locator: Locator | None = field(default=None, compare=False, repr=False)


def _key(loc: Locator) -> str:
    return json.dumps(loc.position(), sort_keys=True, default=str)


def _line_family(loc: LineLocator) -> str:
    unit = (loc.unit or "line").strip().lower()
    return "paragraph" if unit.startswith("paragraph") else "line"


def _units_of(file: str, loc: Locator) -> list[AtomicUnit]:
    if isinstance(loc, PageLocator):
        if loc.system_page is None:
            return [AtomicUnit(file, "page", f"label:{loc.printed_page}", None, loc)]
        first, last = loc.system_page, loc.system_page_end or loc.system_page
        if last - first + 1 > MAX_EXPAND:
            return [AtomicUnit(file, "page", f"{first}-{last}", (first, last), loc)]
        return [AtomicUnit(file, "page", str(p), (p, p), loc) for p in range(first, last + 1)]
    if isinstance(loc, SlideLocator):
        first, last = loc.slide, loc.slide_end or loc.slide
        if last - first + 1 > MAX_EXPAND:
            return [AtomicUnit(file, "slide", f"{first}-{last}", (first, last), loc)]
        return [AtomicUnit(file, "slide", str(s), (s, s), loc) for s in range(first, last + 1)]
    if isinstance(loc, RegionLocator):
        kind = "box" if loc.page is None and loc.box is not None else "region"
        return [AtomicUnit(file, kind, _key(loc), None, loc)]
    if isinstance(loc, TimeRange):
        return [AtomicUnit(file, "time", _key(loc), (loc.start, loc.stop), loc)]
    if isinstance(loc, CellRange):
        return [AtomicUnit(file, "cells", _key(loc), None, loc)]
    if isinstance(loc, LineLocator):
        span = None if loc.line is None else (loc.line, loc.line_end or loc.line)
        return [AtomicUnit(file, "line", f"{_line_family(loc)}:{_key(loc)}", span, loc)]
    if isinstance(loc, ItemLocator):
        return [AtomicUnit(file, "item", _key(loc), None, loc)]
    return []


def _item_parts(item: Any) -> tuple[str, list[Any]]:
    """(file path, raw locators) of an evidence item in any of the shapes we meet."""
    if isinstance(item, str):
        return item, []
    if isinstance(item, Mapping):
        path = item.get("file_path") or item.get("path") or ""
        raw = next((item[k] for k in ("locators", "evidence_locator", "locator") if k in item), None)
    else:
        path = getattr(item, "file_path", "") or ""
        raw = getattr(item, "locators", None)
        if raw is None:
            raw = getattr(item, "locator", None)
    if isinstance(path, list):
        path = path[0] if len(path) == 1 else ""
    if raw is None:
        locs: list[Any] = []
    elif isinstance(raw, list | tuple):
        locs = list(raw)
    else:
        locs = [raw]
    return str(path), locs


def atomic_units(evidence: Iterable[Any], *, casefold: bool = False) -> list[AtomicUnit]:
    """The distinct AUs of evidence items, in order.

    An item is a schema ``Evidence`` (``locators``), an agent's ``EvidenceItem`` (``locator`` dict),
    a mapping with ``file_path`` and ``locator``/``locators``/``evidence_locator``, or a bare path.
    Unreadable locators are ignored; an item left with none is a whole-file AU. Items without a
    path are skipped."""
    out: dict[AtomicUnit, None] = {}
    for item in evidence:
        path, raw_locs = _item_parts(item)
        file = normalize_path(path, casefold)
        if not file:
            continue
        units: list[AtomicUnit] = []
        for raw in raw_locs:
            if raw is None:
                continue
            loc = raw if isinstance(raw, Locator) else parse_locator(raw)
            if isinstance(loc, UnknownLocator | InvalidLocator):
                continue
            units.extend(_units_of(file, loc))
        if not units:
            units = [AtomicUnit(file, "file")]
        for unit in units:
            out.setdefault(unit, None)
    return list(out)


def box_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two ``[x0, y0, x1, y1]`` boxes."""
    iw = min(a[2], b[2]) - max(a[0], b[0])
    ih = min(a[3], b[3]) - max(a[1], b[1])
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _spans_meet(a: tuple[float, float], b: tuple[float, float], pad: float = 0.0) -> bool:
    return a[0] - pad <= b[1] and b[0] <= a[1] + pad


def _regions_match(a: RegionLocator, b: RegionLocator, iou: float) -> bool:
    if a.page is not None and b.page is not None and a.page != b.page:
        return False
    if (
        a.box is not None
        and b.box is not None
        and (a.box_units is None or b.box_units is None or a.box_units == b.box_units)
    ):
        return box_iou(a.box, b.box) >= iou
    if a.page is not None and b.page is not None:
        return True
    if a.label is not None and b.label is not None:
        return a.label.strip().casefold() == b.label.strip().casefold()
    return False


def _page_label(unit: AtomicUnit) -> str | None:
    """The printed label of a single page (a label names one page, not a range)."""
    loc = unit.locator
    if isinstance(loc, PageLocator) and loc.system_page_end is None and loc.printed_page:
        return loc.printed_page.strip().casefold()
    return None


def _page_holds(page: AtomicUnit, region: AtomicUnit) -> bool:
    loc = region.locator
    return (
        page.span is not None
        and isinstance(loc, RegionLocator)
        and loc.page is not None
        and page.span[0] <= loc.page <= page.span[1]
    )


def units_match(pred: AtomicUnit, gold: AtomicUnit, *, slack: float = 2.0, iou: float = 0.5) -> bool:
    """Whether a predicted AU matches a gold AU (rules in the module docstring)."""
    if pred.file != gold.file:
        return False
    if pred.kind == "file" or gold.kind == "file":
        return True
    kinds = {pred.kind, gold.kind}
    if kinds == {"page"} or kinds == {"slide"}:
        if pred.span is not None and gold.span is not None:
            return _spans_meet(pred.span, gold.span)
        label = _page_label(pred)
        return label is not None and label == _page_label(gold)
    if kinds == {"page", "region"}:
        return _page_holds(pred, gold) if pred.kind == "page" else _page_holds(gold, pred)
    a, b = pred.locator, gold.locator
    if kinds <= {"region", "box"}:
        return isinstance(a, RegionLocator) and isinstance(b, RegionLocator) and _regions_match(a, b, iou)
    if kinds == {"time"}:
        return pred.span is not None and gold.span is not None and _spans_meet(gold.span, pred.span, slack)
    if kinds == {"line"}:
        if not (isinstance(a, LineLocator) and isinstance(b, LineLocator)):
            return False
        if a.message_id is not None or b.message_id is not None:
            return a.message_id == b.message_id
        return (
            _line_family(a) == _line_family(b)
            and pred.span is not None
            and gold.span is not None
            and _spans_meet(pred.span, gold.span)
        )
    if kinds == {"cells"} or kinds == {"item"}:
        return a is not None and b is not None and overlaps(a, b)
    return False


def au_scores(
    pred_evidence: Iterable[Any],
    gold_evidence: Iterable[Any],
    slack: float = 2.0,
    iou: float = 0.5,
    *,
    convention: Convention = "hippocamp",
    casefold: bool = False,
) -> PRF:
    """AU-level P/R/F1: ``tp`` gold AUs recalled, ``tp_pred`` predicted AUs that match a gold AU."""
    pred = atomic_units(pred_evidence, casefold=casefold)
    gold = atomic_units(gold_evidence, casefold=casefold)
    recalled = sum(1 for g in gold if any(units_match(p, g, slack=slack, iou=iou) for p in pred))
    precise = sum(1 for p in pred if any(units_match(p, g, slack=slack, iou=iou) for g in gold))
    return prf(recalled, precise, len(pred), len(gold), convention)
