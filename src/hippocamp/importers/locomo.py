"""LoCoMo (snap-research/LoCoMo) conversations as app-log personas (``pcontext:`` suites).

Each conversation becomes a persona folder ``<out>/<sample_id>/``: every session's turns are messenger
messages (``session_N``) from one speaker to the other, timestamped from ``session_N_date_time`` (turn i
of a session at the session's time + i minutes, which keeps their order; LoCoMo gives no per-turn time),
the ``dia_id`` kept as the message id; a shared image is its BLIP caption in brackets. Questions become
cases: category 4 single-hop → T1, 1 multi-hop → T2, 2 temporal → T3, 3 open-domain inference → T4,
5 adversarial → an ``abstain`` case whose correct behaviour is to say the logs do not tell (its
``adversarial_answer`` is kept as the answer that must not be given). Evidence ``dia_id``s become the
cases' supporting fragment ids. ``calendar.jsonl`` is empty; ``source.json`` names the speakers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hippocamp.importers._common import ImporterError
from hippocamp.registry import register
from hippocamp.schema.pcontext import Case, Message

__all__ = ["CATEGORY_TYPES", "LocomoImport", "import_locomo", "parse_locomo_time"]

#: LoCoMo category -> case type
CATEGORY_TYPES = {4: "T1", 1: "T2", 2: "T3", 3: "T4", 5: "abstain"}
#: the answer key of an abstention case
NO_ANSWER = "The conversation does not say."


@dataclass
class LocomoImport:
    out: Path
    personas: list[str] = field(default_factory=list)
    messages: int = 0
    cases_by_type: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


def parse_locomo_time(text: str) -> datetime:
    """``1:56 pm on 8 May, 2023`` (also without the comma, or with an abbreviated month)."""
    t = re.sub(r"\s+", " ", str(text).strip().replace(",", ""))
    for fmt in ("%I:%M %p on %d %B %Y", "%I:%M %p on %d %b %Y", "%H:%M on %d %B %Y"):
        try:
            return datetime.strptime(t, fmt)
        except ValueError:
            continue
    raise ValueError(f"unreadable LoCoMo date {text!r}")


def _evidence(raw: Any) -> list[str]:
    ids: list[str] = []
    for item in raw or []:
        ids.extend(x for x in re.split(r"[;,\s]+", str(item)) if x)
    return ids


def _sessions(conv: dict[str, Any]) -> list[tuple[int, str]]:
    keys = [(int(m.group(1)), k) for k in conv if (m := re.fullmatch(r"session_(\d+)", k))]
    return sorted(keys)


_LIST_SPLIT = re.compile(r"\s*,\s*(?:and\s+|or\s+)?")
_CLAUSE = re.compile(r"^(?:but|though|although|since|because|so|yet|which|who)\b", re.I)


def answer_labels(answer: str) -> list[str]:
    """The labels an answer must cover: the items of a list answer ("pottery, camping, painting, and
    swimming" -> four labels, so that naming two of them is partial), else the answer itself. An answer
    with a figure or date, a yes/no with its reasons ("Likely no; since ...") or a long clause is one label."""
    text = answer.strip().rstrip(".")
    if (
        "," not in text
        or ";" in text
        or any(ch.isdigit() for ch in text)
        or re.match(r"^\W*(likely|yes|no)\b", text, re.I)
    ):
        return [answer]
    parts = [p.strip(" \"'“”") for p in _LIST_SPLIT.split(text)]
    if len(parts) < 2 or any(not p or len(p.split()) > 6 or _CLAUSE.match(p) for p in parts):
        return [answer]
    return parts


def _convert(sample: dict[str, Any], n: int, out: Path, result: LocomoImport) -> None:
    conv = sample.get("conversation")
    if not isinstance(conv, dict):
        raise ImporterError(f"conversation {n}: no 'conversation' object")
    pid = str(sample.get("sample_id") or f"conv-{n}")
    a, b = str(conv.get("speaker_a", "A")), str(conv.get("speaker_b", "B"))
    qa = sample.get("qa") or []
    cited = {i for q in qa for i in _evidence(q.get("evidence"))}
    messages = []
    for num, key in _sessions(conv):
        stamp = conv.get(f"{key}_date_time")
        try:
            start = parse_locomo_time(stamp) if stamp else None
        except ValueError as exc:
            raise ImporterError(f"{pid} {key}: {exc}") from exc
        if start is None:
            raise ImporterError(f"{pid} {key}: no {key}_date_time")
        for i, turn in enumerate(conv[key] or []):
            speaker = str(turn.get("speaker", ""))
            text = str(turn.get("text", ""))
            if turn.get("blip_caption"):
                text = f"{text} [shares a photo: {turn['blip_caption']}]".strip()
            mid = str(turn.get("dia_id") or f"D{num}:{i + 1}")
            messages.append(Message(
                id=mid, session_id=key, sender=speaker, recipients=[b if speaker == a else a],
                timestamp=start + timedelta(minutes=i), text=text, kind="evidence" if mid in cited else "filler",
                fragment_id=mid if mid in cited else None,
            ))  # fmt: skip
    ids = {m.id for m in messages}
    cases = []
    for qn, q in enumerate(qa, 1):
        ctype = CATEGORY_TYPES.get(q.get("category"))  # type: ignore[arg-type]
        if ctype is None:
            result.skipped.append(f"{pid} question {qn}: unknown category {q.get('category')!r}")
            continue
        evidence = _evidence(q.get("evidence"))
        missing = [e for e in evidence if e not in ids]
        if missing:
            result.skipped.append(f"{pid} question {qn}: evidence {', '.join(missing)} not in the conversation (kept)")
        answer = q.get("answer")
        category = q.get("category")
        try:
            case = Case(
                id=f"{pid}-q{qn:03d}", persona_id=pid, type=ctype, question=str(q.get("question", "")), fact_ids=[],
                supporting_fragments=evidence,
                labels=[] if ctype == "abstain" or answer is None else answer_labels(str(answer)),
                answer=NO_ANSWER if ctype == "abstain" else ("" if answer is None else str(answer)),
                locomo_category=category if isinstance(category, int) else None,
                adversarial_answer=str(q.get("adversarial_answer") or "") if ctype == "abstain" else None,
            )  # fmt: skip
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err.get("loc", ()))
            raise ImporterError(f"{pid} question {qn}: field {field!r}: {err.get('msg')}") from None
        cases.append(case)
        result.cases_by_type[ctype] = result.cases_by_type.get(ctype, 0) + 1
    d = out / pid
    d.mkdir(parents=True, exist_ok=True)
    (d / "messenger.jsonl").write_text("".join(m.model_dump_json() + "\n" for m in messages), "utf-8")
    (d / "calendar.jsonl").write_text("", encoding="utf-8")
    (d / "cases.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in cases), "utf-8")
    source = {"source": "locomo", "sample_id": pid, "name": a, "speakers": [a, b], "sessions": len(_sessions(conv))}
    (d / "source.json").write_text(json.dumps(source, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    result.personas.append(pid)
    result.messages += len(messages)


@register("importer", "locomo")
def import_locomo(path: Path, out: Path) -> LocomoImport:
    """Convert a LoCoMo JSON file (a list of conversations, or one) into persona folders under ``out``."""
    from hippocamp.schema.io import JsonInputError, read_json

    try:
        data = read_json(path, "LoCoMo JSON file")
    except JsonInputError as exc:
        raise ImporterError(f"not a readable LoCoMo JSON file: {exc}") from None
    samples = data if isinstance(data, list) else [data]
    result = LocomoImport(out=Path(out))
    for n, sample in enumerate(samples, 1):
        if not isinstance(sample, dict):
            raise ImporterError(f"{path}: conversation {n} is not an object")
        _convert(sample, n, Path(out), result)
    return result
