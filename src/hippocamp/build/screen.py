"""Screening a source against HippoCamp's criteria C1-C3 (appendix A.1), with the figures behind each verdict.

- **C1** richness: at least 500 user files, at least 4 of the 5 modalities, at least 10 extensions.
- **C2** longitudinal depth: creation or modification activity spanning at least 3 months. The span is
  measured between the 1st and 99th percentiles of the files' times (file times and dates inside files:
  mail, calendar, photo capture, document properties), so one stray 1980 zip date does not pass a source.
- **C3** evidence completeness, as far as files show it: (i) timestamped records (mail, calendar entries,
  dated photos, dated documents) present; (ii) an organised tree, not a flat dump (enough folders, some
  depth, no single folder holding most files); (iii) recurring entities corroborated by at least two files
  (a person, e-mail address or organisation found in two or more files).

Thresholds are `ScreenConfig` fields; every criterion reports pass/fail with its figures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from hippocamp.schema.filetypes import MODALITIES, extension, modality_of

__all__ = ["Criterion", "ScreenConfig", "screen"]


@dataclass(frozen=True)
class ScreenConfig:
    min_files: int = 500
    min_modalities: int = 4
    min_extensions: int = 10
    min_days: float = 90.0
    min_timestamped: int = 10
    min_folders: int = 5
    min_depth: int = 2
    max_share_one_folder: float = 0.8
    min_corroborated: int = 5


@dataclass(frozen=True)
class Criterion:
    id: str
    name: str
    passed: bool
    figures: dict[str, Any] = field(default_factory=dict)
    why: str = ""


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    k = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[k]


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).date().isoformat() if ts else ""


def screen(
    files: Iterable[tuple[str, float]],
    inner_dates: Mapping[str, list[float]],
    entities: Mapping[str, set[str]],
    config: ScreenConfig | None = None,
) -> list[Criterion]:
    """C1-C3 over the user files ``(relpath, mtime)``, the dates found inside them (epoch seconds, by
    relpath) and the entities found in them (normalised entity -> relpaths)."""
    cfg = config or ScreenConfig()
    files = list(files)
    rels = [r for r, _ in files]
    modalities = Counter(m for m in (modality_of(r) for r in rels) if m)
    extensions = Counter(extension(r) for r in rels if extension(r))
    c1_checks = (len(rels) >= cfg.min_files, len(modalities) >= cfg.min_modalities,
                 len(extensions) >= cfg.min_extensions)  # fmt: skip
    c1 = Criterion(
        "C1", "file-system richness and modality coverage", all(c1_checks),
        {"user_files": len(rels), "modalities": {m: modalities.get(m, 0) for m in MODALITIES},
         "modalities_present": len(modalities), "extensions": len(extensions),
         "top_extensions": dict(extensions.most_common(12))},
        "; ".join(w for ok, w in zip(c1_checks, (
            f"{len(rels)} user files < {cfg.min_files}",
            f"{len(modalities)} modalities < {cfg.min_modalities}",
            f"{len(extensions)} extensions < {cfg.min_extensions}"), strict=True) if not ok),
    )  # fmt: skip

    times = [t for _, t in files if t > 0] + [t for ds in inner_dates.values() for t in ds if t > 0]
    lo, hi = _percentile(times, 0.01), _percentile(times, 0.99)
    days = (hi - lo) / 86400 if times else 0.0
    months = sorted({_iso(t)[:7] for t in times if t})
    c2 = Criterion(
        "C2", "longitudinal depth", days >= cfg.min_days,
        {"span_days": round(days, 1), "from": _iso(lo), "to": _iso(hi), "active_months": len(months),
         "raw_from": _iso(min(times)) if times else "", "raw_to": _iso(max(times)) if times else ""},
        "" if days >= cfg.min_days else f"activity spans {days:.0f} days < {cfg.min_days:.0f}",
    )  # fmt: skip

    timestamped = sum(1 for r in rels if inner_dates.get(r))
    folders = Counter(r.rsplit("/", 1)[0] if "/" in r else "." for r in rels)
    depth = max((r.count("/") for r in rels), default=0)
    top_share = max(folders.values()) / len(rels) if rels else 1.0
    corroborated = sorted(e for e, where in entities.items() if len(where) >= 2)
    c3_checks = (
        timestamped >= cfg.min_timestamped,
        len(folders) >= cfg.min_folders and depth >= cfg.min_depth and top_share <= cfg.max_share_one_folder,
        len(corroborated) >= cfg.min_corroborated,
    )
    c3 = Criterion(
        "C3", "evidence completeness and auditability", all(c3_checks),
        {"timestamped_files": timestamped, "folders": len(folders), "depth": depth,
         "largest_folder_share": round(top_share, 3), "corroborated_entities": len(corroborated)},
        "; ".join(w for ok, w in zip(c3_checks, (
            f"{timestamped} files with dated records < {cfg.min_timestamped}",
            f"a flat tree ({len(folders)} folders, depth {depth}, {top_share:.0%} in one folder)",
            f"{len(corroborated)} entities seen in two or more files < {cfg.min_corroborated}"), strict=True)
            if not ok),
    )  # fmt: skip
    return [c1, c2, c3]


def criteria_json(criteria: list[Criterion]) -> list[dict[str, Any]]:
    return [asdict(c) for c in criteria]
