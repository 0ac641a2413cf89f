"""How far to trust a P-ContextBench grader: agreement with labels people gave.

A labels file is JSON Lines of self-contained rows (the format of the shared ``pcontext-judge`` dev set):
``id``, ``type`` (T1–T5 or ``abstain``), ``question``, ``answer_key``, ``evidence`` [{id, speaker, time,
text}], ``candidate`` {answer, cited}, ``label`` (correct / partial / incorrect; T5: VERIFIED / FLAGGED /
FAILED) and optionally ``trap``, ``why``, ``must_not_say`` (abstention), ``constraints`` and
``boundary`` (T5). `agreement` reports accuracy, Cohen's kappa over the labels, false accepts (rows
labelled incorrect or FAILED that the grader calls correct or VERIFIED), and confusion by type and by
trap; rows a judge could not score are counted, never guessed.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocamp.schema.io import RecordsFileError, json_objects
from hippocamp.scoring.pcontext.guard import Cited
from hippocamp.scoring.pcontext.rubric import Grade

__all__ = [
    "LABELS",
    "LabelledRow",
    "PContextAgreement",
    "agreement",
    "case_of",
    "grade_rows",
    "load_labels",
    "model_rows",
]

LABELS = {"T1": ("correct", "partial", "incorrect"), "T5": ("VERIFIED", "FLAGGED", "FAILED")}
_TYPES = ("T1", "T2", "T3", "T4", "T5", "abstain")


def _labels_of(ctype: str) -> tuple[str, ...]:
    return LABELS["T5"] if ctype == "T5" else LABELS["T1"]


@dataclass(frozen=True)
class LabelledRow:
    id: str
    type: str
    question: str
    answer: str
    cited: tuple[str, ...]
    label: str
    trap: str
    row: dict[str, Any] = field(repr=False, hash=False, compare=False)


def load_labels(path: str | Path) -> list[LabelledRow]:
    """The rows of a labels file; a bad row is an error naming the file, the line and the field."""
    path = Path(path)
    try:
        items = list(json_objects(path))
    except RecordsFileError as exc:
        raise ValueError(str(exc)) from None
    rows: list[LabelledRow] = []
    seen: set[str] = set()
    for n, d in items:
        where = f"{path}:{n}"
        for name in ("id", "type", "question", "answer_key", "candidate", "label"):
            if name not in d:
                raise ValueError(f"{where}: field {name!r} is missing")
        ctype = str(d["type"])
        if ctype not in _TYPES:
            raise ValueError(f"{where}: field 'type' is {ctype!r}; expected one of {', '.join(_TYPES)}")
        if d["label"] not in _labels_of(ctype):
            raise ValueError(f"{where}: field 'label' is {d['label']!r}; a {ctype} row takes "
                             f"{' / '.join(_labels_of(ctype))}")  # fmt: skip
        cand = d["candidate"]
        if not isinstance(cand, dict) or not isinstance(cand.get("answer"), str):
            raise ValueError(f"{where}: field 'candidate.answer' must be a string")
        cited = cand.get("cited") or []
        if not isinstance(cited, list) or not all(isinstance(x, str) for x in cited):
            raise ValueError(f"{where}: field 'candidate.cited' must be a list of ids")
        evidence = d.get("evidence") or []
        if not isinstance(evidence, list) or not all(isinstance(e, dict) and "id" in e for e in evidence):
            raise ValueError(f"{where}: field 'evidence' must be a list of objects with an 'id'")
        if ctype == "T5" and d.get("boundary") is None:
            raise ValueError(f"{where}: field 'boundary' is missing (a T5 row needs the expected boundary)")
        if str(d["id"]) in seen:
            raise ValueError(f"{where}: field 'id' {d['id']!r} appears twice")
        seen.add(str(d["id"]))
        rows.append(LabelledRow(str(d["id"]), ctype, str(d["question"]), cand["answer"], tuple(cited),
                                str(d["label"]), str(d.get("trap") or ""), d))  # fmt: skip
    return rows


def case_of(row: LabelledRow) -> dict[str, Any]:
    """The row as a case the guard reads: the key, the gold ids as supporting units."""
    d = row.row
    ids = list(dict.fromkeys(str(e["id"]) for e in d.get("evidence") or []))
    case: dict[str, Any] = {"id": row.id, "type": row.type, "question": row.question,
                            "answer_key": str(d["answer_key"]), "supporting_fragments": ids}  # fmt: skip
    if row.type == "abstain":
        case["adversarial_answer"] = d.get("must_not_say")
    if row.type == "T5":
        case["constraints"] = [str(x) for x in d.get("constraints") or []] or [str(d["answer_key"])]
        case["boundary"] = str(d["boundary"])
        case.pop("answer_key")
        case["labels"] = case["constraints"]
    return case


def evidence_text(row: LabelledRow) -> list[dict[str, str]]:
    return [{"id": str(e.get("id")), "speaker": str(e.get("speaker") or ""), "time": str(e.get("time") or ""),
             "text": str(e.get("text") or "")} for e in row.row.get("evidence") or []]  # fmt: skip


async def grade_rows(rows: list[LabelledRow], judge: Any = None, concurrency: int = 2) -> list[Grade | None]:
    """Each row graded by the guard alone (``judge`` None) or by guard + ``judge`` (a
    `hippocamp.scoring.pcontext.judge.Pass2Judge`); None where the judge could not score."""
    from hippocamp.scoring.pcontext.guard import grade

    sem = asyncio.Semaphore(concurrency)

    async def one(r: LabelledRow) -> Grade | None:
        case = case_of(r)
        cited = Cited.of(r.cited, None, len(case.get("supporting_fragments") or []))
        if judge is None:
            g = grade(case, r.answer, cited, evidence=tuple(e["text"] for e in evidence_text(r)))
            g.decided_by = "guard"
            return g
        async with sem:
            return await judge.grade(case, r.answer, cited, evidence_text(r))

    return list(await asyncio.gather(*(one(r) for r in rows)))


async def model_rows(rows: list[LabelledRow], judge: Any, concurrency: int = 2) -> list[Grade | None]:
    """Each row graded by ``judge``'s model alone (`Pass2Judge.model_only`; abstention rows, which
    have no model prompt, and outages are None)."""
    sem = asyncio.Semaphore(concurrency)

    async def one(r: LabelledRow) -> Grade | None:
        case = case_of(r)
        cited = Cited.of(r.cited, None, len(case.get("supporting_fragments") or []))
        async with sem:
            return await judge.model_only(case, r.answer, cited, evidence_text(r))

    return list(await asyncio.gather(*(one(r) for r in rows)))


@dataclass
class PContextAgreement:
    n: int
    scored: int
    accuracy: float | None
    kappa: float | None
    #: rows labelled incorrect / FAILED that the grader called correct / VERIFIED, and how many such rows
    false_accepts: int
    wrong_rows: int
    by_type: dict[str, dict[str, Any]]
    by_trap: dict[str, dict[str, Any]]
    confusion: dict[str, dict[str, int]]
    disagreements: list[dict[str, str]] = field(default_factory=list)

    @property
    def false_accept_rate(self) -> float | None:
        return self.false_accepts / self.wrong_rows if self.wrong_rows else None

    def as_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["false_accept_rate"] = self.false_accept_rate
        return out


def kappa(pairs: list[tuple[str, str]]) -> float | None:
    """Cohen's kappa of (grader, person) labels over any number of classes."""
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    ca, cb = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / (n * n)
    if expected >= 1.0:
        return 1.0 if observed == 1.0 else None
    return (observed - expected) / (1 - expected)


_ACCEPT = {"correct", "VERIFIED"}
_WRONG = {"incorrect", "FAILED"}


def agreement(rows: list[LabelledRow], grades: list[Grade | None]) -> PContextAgreement:
    pairs: list[tuple[str, str]] = []
    by_type: dict[str, list[tuple[str, str]]] = defaultdict(list)
    by_trap: dict[str, list[tuple[str, str]]] = defaultdict(list)
    confusion: dict[str, Counter[str]] = defaultdict(Counter)
    disagreements = []
    for r, g in zip(rows, grades, strict=True):
        if g is None:
            continue
        pair = (g.verdict, r.label)
        pairs.append(pair)
        by_type[r.type].append(pair)
        by_trap[r.trap or "-"].append(pair)
        confusion[r.label][g.verdict] += 1
        if g.verdict != r.label:
            disagreements.append({"id": r.id, "type": r.type, "trap": r.trap, "label": r.label, "graded": g.verdict,
                                  "failures": ",".join(g.failures)})  # fmt: skip

    def figures(ps: list[tuple[str, str]]) -> dict[str, Any]:
        return {"n": len(ps), "agree": sum(a == b for a, b in ps),
                "accuracy": sum(a == b for a, b in ps) / len(ps) if ps else None,
                "false_accepts": sum(a in _ACCEPT and b in _WRONG for a, b in ps)}  # fmt: skip

    scored = len(pairs)
    return PContextAgreement(
        n=len(rows), scored=scored, accuracy=sum(a == b for a, b in pairs) / scored if scored else None,
        kappa=kappa(pairs), false_accepts=sum(a in _ACCEPT and b in _WRONG for a, b in pairs),
        wrong_rows=sum(b in _WRONG for _, b in pairs),
        by_type={t: figures(v) for t, v in sorted(by_type.items())},
        by_trap={t: figures(v) for t, v in sorted(by_trap.items())},
        confusion={k: dict(v) for k, v in sorted(confusion.items())}, disagreements=disagreements,
    )  # fmt: skip
