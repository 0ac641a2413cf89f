"""How far two annotators' drafts of one item agree, field by field, and over a whole workspace.

`compare` sets two drafts of one record side by side and gives one `FieldAgreement` per field:

================================  ========================================================  ===============
field                             score                                                     agree when
================================  ========================================================  ===============
``answer``                        1 or 0: the SQuAD-normalised texts are equal              score 1
                                  (`hippocamp.scoring.lexical.normalize_answer`), or the
                                  numbers (`hippocamp.text.facts`) pair up within
                                  ``number_tolerance`` (1 %) and the words around them are
                                  equal
``file_path``                     Jaccard of the two (normalised) file sets                 >= ``file_jaccard``
``QA_type``, ``profiling_type``   1 or 0: equal                                             score 1
``agent_cap.{search,perception,   Jaccard of the two label sets                             >= ``label_jaccard``
reasoning}``
``evidence_locator`` (per file)   locator IoU of two matched evidence items (below)         >= ``locator_iou``
``evidence`` (per file)           0: an evidence item one draft has and the other lacks     never
================================  ========================================================  ===============

**Matching evidence.** Evidence items are grouped by file; within a file the pairs with the highest
IoU are matched first, and items left over are reported as ``evidence`` (one side only).

**Locator IoU** (`locator_iou`): page regions: the boxes' IoU when both are on the same page (or
both on no page, an image) in the same box units; time spans: interval IoU in seconds; cells: IoU
of the two cell sets on the same sheet (whole rows or columns included); pages, slides, lines: IoU of
the page, slide or line numbers; a message or an item: 1 when it is the same one. Locators of
different kinds (a page and a region, lines and paragraphs) score 0. An evidence item's score
(`evidence_iou`) pairs its locators the same way and divides the summed IoU by the larger count;
two items that both give no locator (the whole file) score 1.

`cohen_kappa` is Cohen's kappa over any categorical labels; `label_kappas` computes it over a
workspace for ``QA_type``, ``profiling_type`` and the presence of each capability label.
`disagreements` lists every disagreeing field of every item awaiting adjudication: the
adjudication queue. Drafts are read, never changed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from hippocamp.dataset.profile import normalize_path
from hippocamp.schema.locators import (
    CellRange,
    ItemLocator,
    LineLocator,
    Locator,
    PageLocator,
    RegionLocator,
    SlideLocator,
    TimeRange,
    cell_bounds,
    overlaps,
)
from hippocamp.schema.record import HippoCampRecord
from hippocamp.scoring.evidence import box_iou
from hippocamp.scoring.lexical import normalize_answer
from hippocamp.text.facts import NumberFact, extract_facts

if TYPE_CHECKING:
    from hippocamp.studio.workspace import Workspace

__all__ = [
    "CAPABILITY_KEYS",
    "Disagreement",
    "FieldAgreement",
    "Thresholds",
    "answers_agree",
    "cohen_kappa",
    "compare",
    "disagreements",
    "evidence_iou",
    "interval_iou",
    "jaccard",
    "label_kappas",
    "label_values",
    "locator_iou",
]

CAPABILITY_KEYS = ("search", "perception", "reasoning")


@dataclass(frozen=True)
class Thresholds:
    """Where agreement ends: a field scoring below its threshold is a disagreement."""

    #: matched evidence items whose locator IoU is below this disagree
    locator_iou: float = 0.5
    #: file sets whose Jaccard is below this disagree (1.0: any difference)
    file_jaccard: float = 1.0
    #: capability label sets whose Jaccard is below this disagree (1.0: any difference)
    label_jaccard: float = 1.0
    #: relative difference within which two numbers of the answers are equal
    number_tolerance: float = 0.01


@dataclass(frozen=True)
class FieldAgreement:
    """One field of two drafts: both values as written, a score in 0..1 (None: not scored) and the verdict."""

    field: str
    agree: bool
    score: float | None
    a: Any
    b: Any
    #: the file an evidence comparison is about
    file: str | None = None
    note: str = ""


@dataclass(frozen=True)
class Disagreement:
    """A field two annotators disagree on: what the adjudicator has to settle."""

    item: str
    annotators: tuple[str, str]
    field: str
    a: Any
    b: Any
    score: float | None
    file: str | None = None
    note: str = ""


# -- answers -----------------------------------------------------------------------------------------
def _numbers_pair(a: Sequence[NumberFact], b: Sequence[NumberFact], tolerance: float) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(sorted(a, key=lambda n: n.magnitude), sorted(b, key=lambda n: n.magnitude), strict=True):
        if x.percent != y.percent or (x.currency and y.currency and x.currency.upper() != y.currency.upper()):
            return False
        if abs(x.magnitude - y.magnitude) > tolerance * max(abs(x.magnitude), abs(y.magnitude)):
            return False
    return True


def _without(text: str, numbers: Sequence[NumberFact]) -> str:
    for n in numbers:
        text = text.replace(n.text, " ", 1)
    return normalize_answer(text)


def answers_agree(a: str, b: str, tolerance: float = 0.01) -> tuple[bool, str]:
    """Whether two answers say the same, and how it was decided: equal normalised text, or the same
    numbers within ``tolerance`` (relative) with the same words around them."""
    if normalize_answer(a) == normalize_answer(b):
        return True, "same text"
    na, nb = extract_facts(a).numbers, extract_facts(b).numbers
    if not na or not nb:
        return False, "different text"
    if not _numbers_pair(na, nb, tolerance):
        return False, f"numbers differ by more than {tolerance:.0%}"
    if _without(a, na) != _without(b, nb):
        return False, "same numbers, different words"
    return True, f"same numbers within {tolerance:.0%}"


# -- sets and intervals -------------------------------------------------------------------------------
def jaccard(a: Iterable[Hashable], b: Iterable[Hashable]) -> float:
    """|A ∩ B| / |A ∪ B|; two empty sets agree (1.0)."""
    sa, sb = set(a), set(b)
    union = sa | sb
    return 1.0 if not union else len(sa & sb) / len(union)


def interval_iou(a: tuple[float, float], b: tuple[float, float], discrete: bool = False) -> float:
    """IoU of two closed intervals. ``discrete``: of the integers they hold (pages 3-4 and 4-5: 1/3);
    otherwise of their lengths, two equal instants scoring 1."""
    lo_a, hi_a = min(a), max(a)
    lo_b, hi_b = min(b), max(b)
    pad = 1.0 if discrete else 0.0
    inter = max(0.0, min(hi_a, hi_b) - max(lo_a, lo_b) + pad)
    union = (hi_a - lo_a + pad) + (hi_b - lo_b + pad) - inter
    if union <= 0:
        return 1.0 if (lo_a, hi_a) == (lo_b, hi_b) else 0.0
    return inter / union


# -- locators -----------------------------------------------------------------------------------------
def _region_iou(a: RegionLocator, b: RegionLocator) -> float:
    if a.page != b.page:
        return 0.0
    if a.box is not None and b.box is not None:
        same_units = a.box_units is None or b.box_units is None or a.box_units == b.box_units
        return box_iou(a.box, b.box) if same_units else 0.0
    if a.box is None and b.box is None:
        return 1.0 if (a.label or "").strip().casefold() == (b.label or "").strip().casefold() else 0.0
    return 0.0


def _page_iou(a: PageLocator, b: PageLocator) -> float:
    if a.system_page is not None and b.system_page is not None:
        return interval_iou(
            (a.system_page, a.system_page_end or a.system_page),
            (b.system_page, b.system_page_end or b.system_page),
            discrete=True,
        )
    same_label = a.printed_page is not None and a.printed_page.strip() == (b.printed_page or "").strip()
    return 1.0 if same_label else 0.0


def _axis(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int, int] | None:
    """(overlap, count in a, count in b) of two 1-based cell ranges along one axis; None when both are
    whole (0: every row, or every column); (0, 1, 1) when only one is whole (they cannot be compared)."""
    whole_a, whole_b = a[0] == 0, b[0] == 0
    if whole_a and whole_b:
        return None
    if whole_a or whole_b:
        return (0, 1, 1)
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]) + 1)
    return inter, a[1] - a[0] + 1, b[1] - b[0] + 1


def _cells_iou(a: CellRange, b: CellRange) -> float:
    if a.sheet and b.sheet and a.sheet.strip().casefold() != b.sheet.strip().casefold():
        return 0.0
    try:
        ac0, ar0, ac1, ar1 = cell_bounds(a.ref)
        bc0, br0, bc1, br1 = cell_bounds(b.ref)
    except ValueError:
        return 0.0
    cols = _axis((ac0, ac1), (bc0, bc1))
    rows = _axis((ar0, ar1), (br0, br1))
    if cols is None or rows is None:  # whole rows (or columns) on both sides: compare the other axis
        other = rows if cols is None else cols
        if other is None:
            return 1.0
        inter, na, nb = other
        return inter / (na + nb - inter)
    inter = cols[0] * rows[0]
    union = cols[1] * rows[1] + cols[2] * rows[2] - inter
    return inter / union if union else 0.0


def _line_family(loc: LineLocator) -> str:
    return "paragraph" if (loc.unit or "line").strip().lower().startswith("paragraph") else "line"


def _line_iou(a: LineLocator, b: LineLocator) -> float:
    if a.message_id is not None or b.message_id is not None:
        return 1.0 if a.message_id == b.message_id else 0.0
    if a.line is None or b.line is None or _line_family(a) != _line_family(b):
        return 0.0
    return interval_iou((a.line, a.line_end or a.line), (b.line, b.line_end or b.line), discrete=True)


def locator_iou(a: Locator, b: Locator) -> float:
    """IoU of two locators of one file (rules in the module docstring); 0 for different kinds."""
    if isinstance(a, RegionLocator) and isinstance(b, RegionLocator):
        return _region_iou(a, b)
    if isinstance(a, PageLocator) and isinstance(b, PageLocator):
        return _page_iou(a, b)
    if isinstance(a, TimeRange) and isinstance(b, TimeRange):
        return interval_iou((a.start, a.stop), (b.start, b.stop))
    if isinstance(a, CellRange) and isinstance(b, CellRange):
        return _cells_iou(a, b)
    if isinstance(a, LineLocator) and isinstance(b, LineLocator):
        return _line_iou(a, b)
    if isinstance(a, SlideLocator) and isinstance(b, SlideLocator):
        return interval_iou((a.slide, a.slide_end or a.slide), (b.slide, b.slide_end or b.slide), discrete=True)
    if isinstance(a, ItemLocator) and isinstance(b, ItemLocator):
        return 1.0 if overlaps(a, b) else 0.0
    if type(a) is type(b):  # unknown or malformed units: the same only when written the same
        return 1.0 if _canonical(a.dump()) == _canonical(b.dump()) else 0.0
    return 0.0


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _greedy_pairs(scores: list[list[float]]) -> list[tuple[int, int, float]]:
    """Pairs (i, j, score), the highest scores first, each row and column used once."""
    cells = sorted(
        ((s, i, j) for i, row in enumerate(scores) for j, s in enumerate(row)), key=lambda t: (-t[0], t[1], t[2])
    )
    used_i: set[int] = set()
    used_j: set[int] = set()
    out = []
    for s, i, j in cells:
        if i not in used_i and j not in used_j:
            used_i.add(i)
            used_j.add(j)
            out.append((i, j, s))
    return out


def evidence_iou(a: Sequence[Locator], b: Sequence[Locator]) -> float:
    """IoU of two evidence items' locators: best pairs summed, divided by the larger count; two items
    without locators (both the whole file) score 1, one without and one with score 0."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    pairs = _greedy_pairs([[locator_iou(x, y) for y in b] for x in a])
    return sum(s for _, _, s in pairs) / max(len(a), len(b))


# -- records ------------------------------------------------------------------------------------------
def _parse(record: Mapping[str, Any]) -> HippoCampRecord | str:
    data = dict(record)
    if data.get("id") in (None, ""):
        data["id"] = "(draft)"
    try:
        return HippoCampRecord.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        return f"{where}: {str(first.get('msg', '')).removeprefix('Value error, ')}"
    except (ValueError, TypeError, RecursionError) as exc:
        return f"{type(exc).__name__}: {str(exc)[:200]}"


def _label(value: str | None) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _equal_field(name: str, a: str | None, b: str | None) -> FieldAgreement:
    same = a == b
    return FieldAgreement(name, same, 1.0 if same else 0.0, a, b)


def _evidence(a: HippoCampRecord, b: HippoCampRecord, t: Thresholds) -> list[FieldAgreement]:
    by_file_a: dict[str, list[int]] = {}
    by_file_b: dict[str, list[int]] = {}
    for i, ev in enumerate(a.evidence):
        by_file_a.setdefault(normalize_path(ev.file_path), []).append(i)
    for j, ev in enumerate(b.evidence):
        by_file_b.setdefault(normalize_path(ev.file_path), []).append(j)
    out: list[FieldAgreement] = []
    for file in dict.fromkeys([*by_file_a, *by_file_b]):
        ia, ib = by_file_a.get(file, []), by_file_b.get(file, [])
        scores = [[evidence_iou(a.evidence[i].locators, b.evidence[j].locators) for j in ib] for i in ia]
        pairs = _greedy_pairs(scores)
        for x, y, score in pairs:
            locs_a = [loc.dump() for loc in a.evidence[ia[x]].locators]
            locs_b = [loc.dump() for loc in b.evidence[ib[y]].locators]
            agree = score >= t.locator_iou
            note = "" if agree else f"locator IoU {score:.2f} < {t.locator_iou:g}"
            out.append(FieldAgreement("evidence_locator", agree, score, locs_a, locs_b, file or None, note))
        for x in sorted(set(range(len(ia))) - {p[0] for p in pairs}):
            ev = a.evidence[ia[x]]
            out.append(
                FieldAgreement(
                    "evidence", False, 0.0, ev.dump(), None, file or None, "evidence only in the first draft"
                )
            )
        for y in sorted(set(range(len(ib))) - {p[1] for p in pairs}):
            ev = b.evidence[ib[y]]
            out.append(
                FieldAgreement(
                    "evidence", False, 0.0, None, ev.dump(), file or None, "evidence only in the second draft"
                )
            )
    return out


def compare(a: Mapping[str, Any], b: Mapping[str, Any], thresholds: Thresholds | None = None) -> list[FieldAgreement]:
    """Field-by-field agreement of two drafts of one record (table in the module docstring). A draft
    that cannot be read as a record gives one disagreeing field ``record`` saying why."""
    t = thresholds or Thresholds()
    ra, rb = _parse(a), _parse(b)
    if isinstance(ra, str) or isinstance(rb, str):
        why = "; ".join(
            f"{side} draft cannot be read ({r})" for side, r in (("first", ra), ("second", rb)) if isinstance(r, str)
        )
        return [FieldAgreement("record", False, None, dict(a), dict(b), note=why)]
    same, how = answers_agree(ra.answer, rb.answer, t.number_tolerance)
    out = [FieldAgreement("answer", same, 1.0 if same else 0.0, ra.answer, rb.answer, note=how)]
    files_a = sorted({normalize_path(p) for p in ra.file_path if p.strip()})
    files_b = sorted({normalize_path(p) for p in rb.file_path if p.strip()})
    score = jaccard(files_a, files_b)
    out.append(FieldAgreement("file_path", score >= t.file_jaccard, score, files_a, files_b))
    out.append(_equal_field("QA_type", _label(ra.qa_type), _label(rb.qa_type)))
    pa, pb = _label(ra.profiling_type), _label(rb.profiling_type)
    if pa is not None or pb is not None:
        out.append(_equal_field("profiling_type", pa, pb))
    caps_a = ra.agent_cap.labels() if ra.agent_cap else {k: [] for k in CAPABILITY_KEYS}
    caps_b = rb.agent_cap.labels() if rb.agent_cap else {k: [] for k in CAPABILITY_KEYS}
    for key in CAPABILITY_KEYS:
        la, lb = sorted(set(caps_a[key])), sorted(set(caps_b[key]))
        score = jaccard(la, lb)
        out.append(FieldAgreement(f"agent_cap.{key}", score >= t.label_jaccard, score, la, lb))
    return out + _evidence(ra, rb, t)


# -- over a workspace ---------------------------------------------------------------------------------
def cohen_kappa(a: Sequence[Hashable | None], b: Sequence[Hashable | None]) -> float | None:
    """Cohen's kappa of two raters' categorical labels over the items both labelled (None: not
    labelled). None when no item is left, or when chance agreement is total and they differ."""
    if len(a) != len(b):
        raise ValueError(f"two raters label the same items: {len(a)} labels against {len(b)}")
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(x == y for x, y in pairs) / n
    count_a = Counter(x for x, _ in pairs)
    count_b = Counter(y for _, y in pairs)
    expected = sum(count_a[k] * count_b.get(k, 0) for k in count_a) / (n * n)
    if expected == 1.0:
        return 1.0 if observed == 1.0 else None
    return (observed - expected) / (1 - expected)


def label_values(record: Mapping[str, Any], labels: Iterable[str] = ()) -> dict[str, Hashable | None]:
    """The categorical labels of one draft: ``QA_type``, ``profiling_type`` and, for each capability
    label in ``labels`` (``agent_cap.reasoning:computation``), whether the draft has it (None when the
    draft gives no capabilities or cannot be read)."""
    rec = _parse(record)
    if isinstance(rec, str):
        return {"QA_type": None, "profiling_type": None, **dict.fromkeys(labels)}
    out: dict[str, Hashable | None] = {"QA_type": _label(rec.qa_type), "profiling_type": _label(rec.profiling_type)}
    caps = rec.agent_cap.labels() if rec.agent_cap else None
    for name in labels:
        key, _, label = name.removeprefix("agent_cap.").partition(":")
        out[name] = None if caps is None else label in caps.get(key, [])
    return out


def _capability_labels(records: Iterable[Mapping[str, Any]]) -> list[str]:
    found: set[str] = set()
    for record in records:
        rec = _parse(record)
        if not isinstance(rec, str) and rec.agent_cap is not None:
            for key, values in rec.agent_cap.labels().items():
                found.update(f"agent_cap.{key}:{v}" for v in values)
    return sorted(found)


def label_kappas(ws: Workspace) -> dict[str, float | None]:
    """Cohen's kappa per categorical label over the items with two drafts: ``QA_type``,
    ``profiling_type`` (over the items both drafts give one) and each capability label seen
    (``agent_cap.reasoning:computation``: present or absent). The first rater is the annotator whose
    name sorts first on each item: Cohen's kappa proper when the same two annotators did every item,
    as the protocol intends."""
    pairs = [(ds[0].record, ds[1].record) for s in ws.items() if len(ds := ws.drafts(s.id)) >= 2]
    caps = _capability_labels(r for pair in pairs for r in pair)
    names = ["QA_type", "profiling_type", *caps]
    first = [label_values(a, caps) for a, _ in pairs]
    second = [label_values(b, caps) for _, b in pairs]
    return {name: cohen_kappa([v[name] for v in first], [v[name] for v in second]) for name in names}


def disagreements(
    ws: Workspace, thresholds: Thresholds | None = None, include_adjudicated: bool = False
) -> list[Disagreement]:
    """The adjudication queue: every disagreeing field of every item with two drafts that has no
    current adjudication (none yet, or a draft saved since), in item order. ``include_adjudicated``
    lists adjudicated items too."""
    out: list[Disagreement] = []
    for summary in ws.items(thresholds):
        if summary.adjudicated and not summary.outdated and not include_adjudicated:
            continue
        drafts = ws.drafts(summary.id)
        if len(drafts) < 2:
            continue
        a, b = drafts[0], drafts[1]
        for f in compare(a.record, b.record, thresholds):
            if not f.agree:
                out.append(Disagreement(summary.id, (a.author, b.author), f.field, f.a, f.b, f.score, f.file, f.note))
    return out
