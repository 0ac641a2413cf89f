"""What a set of questions covers, and which of them say the same thing (HippoCamp appendix B: coverage
balancing, candidate de-duplication).

`coverage(records)` counts records by family (QA type), capability label, modality and file type, and
crosses family with capability; `targets` (share per value, e.g. ``{"family": {"profiling": 0.3}}``) turn
the counts into gaps. `near_duplicates(questions, embedder)` groups questions whose embeddings are at least
``threshold`` cosine-similar (connected components), so a person can merge or drop them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hippocamp.schema.filetypes import extension, modality_of

__all__ = ["HIPPOCAMP_TARGETS", "Coverage", "coverage", "near_duplicates"]

#: the HippoCamp release's mix of question families (521 factual retention, 60 profiling of 581)
HIPPOCAMP_TARGETS: dict[str, dict[str, float]] = {"family": {"factual_retention": 521 / 581, "profiling": 60 / 581}}


@dataclass
class Coverage:
    total: int
    axes: dict[str, Counter[str]] = field(default_factory=dict)
    cross: dict[tuple[str, str], int] = field(default_factory=dict)
    gaps: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)


def _caps(record: Mapping[str, Any]) -> list[str]:
    cap = record.get("agent_cap") or {}
    if isinstance(cap, str):
        try:
            cap = json.loads(cap)
        except ValueError:
            cap = {}
    if not isinstance(cap, dict):
        return []
    out = []
    for axis in ("search", "evidence_perception", "perception", "reasoning"):
        out += [f"{axis.replace('evidence_', '')}:{v}" for v in cap.get(axis) or [] if isinstance(v, str)]
    return sorted(set(out))


def coverage(
    records: Sequence[Mapping[str, Any]], targets: Mapping[str, Mapping[str, float]] | None = None
) -> Coverage:
    out = Coverage(total=len(records))
    axes = {"family": Counter[str](), "capability": Counter[str](), "modality": Counter[str](),
            "file type": Counter[str]()}  # fmt: skip
    for record in records:
        family = str(record.get("QA_type") or record.get("qa_type") or "unlabelled")
        axes["family"][family] += 1
        caps = _caps(record) or ["unlabelled"]
        axes["capability"].update(caps)
        files = [p for p in record.get("file_path") or [] if isinstance(p, str)]
        axes["modality"].update({modality_of(p) or "other" for p in files})
        axes["file type"].update({extension(p) or "none" for p in files})
        for cap in caps:
            out.cross[(family, cap)] = out.cross.get((family, cap), 0) + 1
    out.axes = axes
    for axis, shares in (targets or {}).items():
        counts = axes.get(axis, Counter())
        out.gaps[axis] = {
            value: {"target": share, "share": counts.get(value, 0) / max(1, len(records)),
                    "missing": max(0.0, share * len(records) - counts.get(value, 0))}
            for value, share in shares.items()
        }  # fmt: skip
    return out


def near_duplicates(questions: Mapping[str, str], embedder: Any, threshold: float = 0.85) -> list[list[str]]:
    """Groups (two or more ids) of questions at least ``threshold`` cosine-similar, largest group first."""
    import numpy as np

    ids = [i for i, q in questions.items() if q.strip()]
    if len(ids) < 2:
        return []
    vectors = np.asarray(embedder.embed([questions[i] for i in ids], side="query"), dtype=np.float32)
    similar = vectors @ vectors.T
    parent = list(range(len(ids)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a in range(len(ids)):
        for b in range(a + 1, len(ids)):
            if similar[a, b] >= threshold:
                parent[find(a)] = find(b)
    groups: dict[int, list[str]] = {}
    for i, item in enumerate(ids):
        groups.setdefault(find(i), []).append(item)
    return sorted((sorted(g) for g in groups.values() if len(g) > 1), key=lambda g: (-len(g), g))
